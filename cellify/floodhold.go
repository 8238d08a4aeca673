package cellify

// An edge whose table reaches no other edge (a fresh node before its links
// are usable, or one that lost every link) holds the host frames it floods
// instead of losing them: a host's first ARP request would otherwise go
// nowhere, and the host waits out its ARP retry (a second) before it asks
// again. Held frames are flooded once the table reaches an edge, if they
// are younger than Th + ThUp REACH intervals (a fresh link is usable after
// ThUp good intervals; Th is the stall a link rides out); older ones, and
// those that find the hold full, are dropped and counted
// (NodeStats.FloodHeldDrop).

const (
	floodHoldBytes  = MaxRecordFrame // the held frames' bytes together
	floodHoldFrames = 16
)

type heldFlood struct {
	at    int64 // when held
	off   int   // in floodHold.buf
	n     int   // bytes
	port  uint8 // the host port it came from
	class Class
}

// floodHold is an edge's held floods, oldest first.
type floodHold struct {
	buf   []byte
	list  [floodHoldFrames]heldFlood
	count int
	used  int
}

// holdFor is how long a flood is held: Th + ThUp REACH intervals.
func (n *Node) holdFor() int64 {
	return n.cfg.Reach.Interval * int64(n.cfg.Reach.Th+n.reach.thUp())
}

// holdFlood keeps a copy of host frame b (from port p) that found no edge
// to flood to.
func (n *Node) holdFlood(p int, class Class, b []byte) {
	h := &n.hold
	if h.count > 0 && n.now-h.list[0].at > n.holdFor() {
		n.Stats.FloodHeldDrop += uint64(h.count)
		h.count, h.used = 0, 0
	}
	if h.count == len(h.list) || h.used+len(b) > len(h.buf) {
		n.Stats.FloodHeldDrop++
		return
	}
	h.list[h.count] = heldFlood{at: n.now, off: h.used, n: len(b), port: uint8(p), class: class}
	h.count++
	h.used += copy(h.buf[h.used:], b)
	n.Stats.FloodHeld++
}

// releaseHeld floods the held frames if the table reaches an edge now:
// those younger than holdFor to every such edge, the others are dropped.
func (n *Node) releaseHeld() {
	h := &n.hold
	if h.count == 0 || len(n.floodTargets()) == 0 {
		return
	}
	for _, f := range h.list[:h.count] {
		if n.now-f.at > n.holdFor() {
			n.Stats.FloodHeldDrop++
			continue
		}
		n.floodOut(int(f.port), f.class, h.buf[f.off:f.off+f.n])
	}
	h.count, h.used = 0, 0
	n.serveHeld()
}
