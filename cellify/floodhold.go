package cellify

// A converging edge keeps the host frames it floods and floods them again
// to the edges its table comes to reach: a host's first ARP request, sent
// before a fresh edge's links are usable (or while its table reaches some
// edges but not yet the one the answer is behind), would otherwise go to
// no edge or the wrong ones, and the host waits out its ARP retry (a
// second) before it asks again. The edge converges while its table reaches
// no other edge, and for holdFor after the table last changed; a kept
// frame goes to each edge once, to those reached when it came at once,
// and to those reached later at the rebuild that reaches them, while it is
// younger than holdFor. A frame kept that reached no edge in that time, or
// that found the hold full while the table reached none, is dropped and
// counted (NodeStats.FloodHeldDrop).

const (
	floodHoldBytes  = MaxRecordFrame // the kept frames' bytes together
	floodHoldFrames = 16
)

type heldFlood struct {
	at    int64 // when kept
	off   int   // in floodHold.buf
	n     int   // bytes
	port  uint8 // the host port it came from
	class Class
	sent  []uint64 // the edges it went to (bitmap of edge ids)
}

// floodHold is an edge's kept floods, oldest first.
type floodHold struct {
	buf     []byte
	list    [floodHoldFrames]heldFlood
	count   int
	used    int
	changed int64 // when the table last changed
}

func (h *floodHold) init(maxEdges int) {
	h.buf = make([]byte, floodHoldBytes)
	words := (maxEdges + 63) / 64
	back := make([]uint64, floodHoldFrames*words)
	for i := range h.list {
		h.list[i].sent = back[i*words : (i+1)*words : (i+1)*words]
	}
	h.changed = -1 << 62
}

// holdFor is how long a flood is kept, and how long an edge converges
// after its table changed: Th + ThUp REACH intervals (a fresh link is
// usable after ThUp good intervals; Th is the stall a link rides out).
func (n *Node) holdFor() int64 {
	return n.cfg.Reach.Interval * int64(n.cfg.Reach.Th+n.reach.thUp())
}

// expireHeld drops the kept frames older than holdFor, counting those
// that reached no edge.
func (n *Node) expireHeld() {
	h := &n.hold
	k := 0
	for k < h.count && n.now-h.list[k].at > n.holdFor() {
		if none(h.list[k].sent) {
			n.Stats.FloodHeldDrop++
		}
		k++
	}
	if k == 0 {
		return
	}
	if k == h.count {
		h.count, h.used = 0, 0
		return
	}
	// Move the younger ones to the front (rare: a flood while converging
	// that outlives an older one).
	base := h.list[k].off
	h.used = copy(h.buf, h.buf[base:h.used])
	for i := k; i < h.count; i++ {
		f := h.list[i]
		f.off -= base
		h.list[i-k], h.list[i] = f, h.list[i-k]
	}
	h.count -= k
}

func none(m []uint64) bool {
	for _, w := range m {
		if w != 0 {
			return false
		}
	}
	return true
}

// floodHeld floods host frame b (from port p) to the edges the table
// reaches and, while the edge converges, keeps it for the edges it comes
// to reach.
func (n *Node) floodHeld(p int, class Class, b []byte) {
	to := n.floodTargets()
	h := &n.hold
	if len(to) > 0 && n.now-h.changed > n.holdFor() {
		n.floodOut(to, p, class, b, nil)
		return
	}
	n.expireHeld()
	if h.count == len(h.list) || h.used+len(b) > len(h.buf) {
		if len(to) == 0 {
			n.Stats.FloodHeldDrop++
		}
		n.floodOut(to, p, class, b, nil)
		return
	}
	f := &h.list[h.count]
	f.at, f.off, f.n, f.port, f.class = n.now, h.used, len(b), uint8(p), class
	clear(f.sent)
	h.count++
	h.used += copy(h.buf[h.used:], b)
	n.Stats.FloodHeld++
	n.floodOut(to, p, class, b, f.sent)
}

// tableChanged floods the kept frames to the edges the table reaches now
// that they have not gone to.
func (n *Node) tableChanged() {
	h := &n.hold
	h.changed = n.now
	if h.count == 0 {
		return
	}
	n.expireHeld()
	to := n.floodTargets()
	if len(to) == 0 {
		return
	}
	for i := range h.list[:h.count] {
		f := &h.list[i]
		n.Stats.FloodLate += uint64(n.floodOut(to, int(f.port), f.class, h.buf[f.off:f.off+f.n], f.sent))
	}
	n.serveHeld()
}

// floodOut queues host frame b (from port p) as unscheduled cells, within
// FloodRate, to the edges to (floodTargets); with sent, only to those not
// in it, which it adds them to. It returns the edges it went to.
func (n *Node) floodOut(to []EdgeID, p int, class Class, b []byte, sent []uint64) (copies int) {
	n.tag[0] = byte(p)
	for _, e := range to {
		if sent != nil {
			w, bit := int(e)/64, uint64(1)<<(uint(e)%64)
			if sent[w]&bit != 0 {
				continue
			}
			sent[w] |= bit
		}
		copies++
		if !n.flood.Take(n.now, RecordHeaderLen+1+len(b)) {
			n.Stats.FloodDrop++
			continue
		}
		q := n.voq(VOQKey{Dst: e, Port: FloodPort, Class: class}, true)
		if q == nil || !q.v.EnqueueParts(n.tag[:], b) {
			n.Stats.VOQDrops++
			continue
		}
		n.enqueued(q, b)
	}
	return copies
}
