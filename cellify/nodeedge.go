package cellify

import (
	"encoding/binary"
	"math"

	"github.com/linkfabric/linkfabric/link"
)

// nodeVOQ is an edge's VOQ with its credit client and, in hash mode, the
// flow hashes of its records.
type nodeVOQ struct {
	v     *VOQ
	cc    *CreditClient // nil: push (credits off, or a flood queue)
	flood bool
	due   int64 // cc's next deadline
	fr    *flowRing
	held  bool  // in Node.held: records joined it in a host batch, not served yet
	k     *kvoq // its kernel slot (kerntx.go); nil: none
}

// flowRingLen bounds the records whose flow hash a VOQ remembers; beyond,
// a new record shares the hash of the newest one remembered.
const flowRingLen = 256

// flowRing holds, in stream order, the end offset and flow hash of the
// records waiting in a VOQ: a cell is sprayed by the hash of the record
// its first byte belongs to.
type flowRing struct {
	end, hash  [flowRingLen]uint64
	head, size int
}

func (r *flowRing) push(end, hash uint64) {
	if r.size == flowRingLen {
		r.end[(r.head+r.size-1)%flowRingLen] = end
		return
	}
	i := (r.head + r.size) % flowRingLen
	r.end[i], r.hash[i] = end, hash
	r.size++
}

// at returns the hash of the record holding stream byte off, forgetting
// the records before it.
func (r *flowRing) at(off uint64) uint64 {
	for r.size > 0 && r.end[r.head] <= off {
		r.head = (r.head + 1) % flowRingLen
		r.size--
	}
	if r.size == 0 {
		return 0
	}
	return r.hash[r.head]
}

// HostRx takes a frame from host port p. The frame is copied into a VOQ
// (or switched to another local port, whose Deliver list takes it) and is
// in Free at once; the VOQ is served at once (a record on its own is cut
// into a cell of its own while the grant allows).
func (n *Node) HostRx(now int64, p int, f link.Frame) {
	n.hostRx(now, p, f)
	n.serveHeld()
}

// HostRxBatch is HostRx for frames received together from host port p:
// every record joins its VOQ first, then each VOQ they joined is served
// once, so the records of a batch share cells (packing) instead of each
// taking a cell and a link frame of its own. No record waits longer: the
// cells are cut before the call returns.
func (n *Node) HostRxBatch(now int64, p int, frames []link.Frame) {
	n.touchFrames(frames)
	for _, f := range frames {
		n.hostRx(now, p, f)
	}
	n.serveHeld()
}

// touchFrames reads the first byte of every frame of a batch before any
// is taken. The kernel has just written them (in copy mode on the CPU
// that received them), so hostRx's first read of each frame misses the
// cache: on an edge's worker that read was most of hostRx's own time.
// Loads issued back to back wait for their misses together instead of
// one frame after another.
func (n *Node) touchFrames(frames []link.Frame) {
	var x byte
	for _, f := range frames {
		if f.Len > 0 {
			x ^= n.mem.Bytes(f.H, 1)[0]
		}
	}
	n.touched = x
}

// serveHeld serves the VOQs records joined since the last call.
func (n *Node) serveHeld() {
	for _, q := range n.held {
		q.held = false
		n.serve(q)
	}
	clear(n.held)
	n.held = n.held[:0]
}

func (n *Node) hostRx(now int64, p int, f link.Frame) {
	n.now = now
	if !n.edge || p < 0 || p >= len(n.hosts) {
		n.drop(f, &n.Stats.BadPort)
		return
	}
	hs := &n.hosts[p]
	b := n.rxBytes(f, &hs.RxFrames, &hs.RxBytes)
	if len(b) < MinRecordFrame || len(b) > MaxHostFrame {
		n.drop(f, &n.Stats.HostBad)
		return
	}
	var dst, src [6]byte
	copy(dst[:], b[0:6])
	copy(src[:], b[6:12])
	if !isGroup(&src) {
		n.macs.Learn(now, src, n.cfg.Self, uint8(p))
	}
	d := n.macs.Lookup(now, dst)
	class := frameClass(b)
	switch {
	case d.Flood:
		n.floodFrame(p, class, b)
		n.free(f)
	case d.Edge == n.cfg.Self:
		if int(d.Port) == p || int(d.Port) >= len(n.hosts) {
			n.drop(f, &n.Stats.Hairpin)
			return
		}
		n.Stats.Local++
		n.deliverFrame(int(d.Port), f)
	default:
		q := n.voq(VOQKey{Dst: d.Edge, Port: d.Port, Class: class}, false)
		if q != nil {
			n.claim(q)
			if q.k != nil {
				q.k.rxAt = now
			}
		}
		n.kernHost(p, src, dst, d, class, q)
		n.tag[0] = byte(p)
		if q == nil || !q.v.EnqueueParts(n.tag[:], b) {
			n.Stats.VOQDrops++
		} else {
			n.enqueued(q, b)
		}
		n.free(f)
	}
}

// frameClass is a host frame's traffic class: the 802.1p priority of a
// tagged frame, the DSCP class selector (its top 3 bits) of an untagged
// IPv4 or IPv6 packet, else 0.
func frameClass(b []byte) Class {
	if len(b) < 16 {
		return 0
	}
	switch binary.BigEndian.Uint16(b[12:]) {
	case 0x8100, 0x88A8:
		return Class(b[14] >> 5)
	case 0x0800:
		return Class(b[15] >> 5)
	case 0x86DD:
		return Class(b[14] & 0x0F >> 1)
	}
	return 0
}

// Learn teaches the MAC table that mac is behind (edge, port), e.g. from a
// static configuration.
func (n *Node) Learn(now int64, mac [6]byte, edge EdgeID, port uint8) {
	if n.edge {
		n.macs.Learn(now, mac, edge, port)
	}
}

// MACStats returns the MAC table's counters.
func (n *Node) MACStats() LearnStats {
	if !n.edge {
		return LearnStats{}
	}
	return n.macs.Stats()
}

func (n *Node) voq(k VOQKey, flood bool) *nodeVOQ {
	if q := n.lastVOQ; q != nil && q.v.Key == k {
		return q
	}
	if q := n.nv[k]; q != nil {
		n.lastVOQ = q
		return q
	}
	v := n.voqs.Get(k)
	if v == nil {
		n.voqs.NoVOQ++
		return nil
	}
	q := &nodeVOQ{v: v, flood: flood, due: math.MaxInt64}
	if n.cfg.Credits && !flood {
		cc := NewCreditClient(n.cfg.Client)
		q.cc = &cc
	}
	if n.cfg.Spray == SprayHash {
		q.fr = new(flowRing)
	}
	n.nv[k] = q
	n.lastVOQ = q
	n.list = append(n.list, q)
	n.kernVOQ(q, len(n.list)-1)
	return q
}

// enqueued follows a record of host frame b joining q: q is served by
// serveHeld, after the frame's batch.
func (n *Node) enqueued(q *nodeVOQ, b []byte) {
	if q.fr != nil {
		q.fr.push(q.v.Enqueued(), FlowHash(b, n.cfg.FlowSeed))
	}
	if !q.held {
		q.held = true
		n.held = append(n.held, q)
	}
	if q.cc == nil {
		return
	}
	q.cc.Enqueue(RecordHeaderLen + 1 + len(b))
	// The request is due now and goes at the next Poll: one per VOQ per
	// batch of host frames, not one per frame (the dataplane polls after
	// every batch).
	q.due = min(q.due, n.now)
	n.ccDue = min(n.ccDue, n.now)
}

// serve cuts what q may send (its grant; everything if push) into cells
// and sprays them over the usable links toward its edge: a grant is one
// burst.
func (n *Node) serve(q *nodeVOQ) {
	budget := math.MaxInt32
	if q.cc != nil {
		budget = int(min(q.cc.Allowed(), math.MaxInt32))
	}
	dst := q.v.Key.Dst
	lc := n.cfg.Reach.Classes.For(q.v.Key.Class)
	for budget > 0 && q.v.Backlog() > 0 {
		mask := n.reach.RoutesIn(lc, dst)
		if mask == 0 {
			n.Stats.Stalls++
			n.noRoute = true
			return
		}
		if mask = n.withRoom(mask); mask == 0 {
			n.Stats.Stalls++
			n.Stats.LinkFull++
			n.linkWait = true
			return
		}
		size := CellFrameLen(min(n.cfg.CellPayload, budget, q.v.Backlog()))
		h, ok := n.mem.Alloc(size)
		if !ok {
			n.Stats.AllocFail++
			n.Stats.Stalls++
			n.allocWait = true
			return
		}
		b := n.mem.Bytes(h, size)
		var flow uint64
		if q.fr != nil {
			flow = q.fr.at(q.v.Sent())
		}
		fl, took := q.v.Cut(b, budget, n.cfg.CellPayload)
		if fl == 0 { // cannot happen: the buffer holds a cell
			n.free(link.Frame{H: h, Len: size})
			return
		}
		if q.cc != nil {
			q.cc.OnSent(took)
		}
		budget -= took
		entropy := uint8(flow >> 56)
		if q.fr != nil {
			SetEntropy(b, entropy)
		}
		clear(b[:12])
		n.Stats.CellsCut++
		if q.k != nil {
			q.k.cutAt = n.polls
		}
		n.sendCell(n.sprayer(dst, lc).Pick(mask, flow), lc, link.Frame{H: h, Len: fl}, b)
	}
}

func (n *Node) serveAll() {
	for _, q := range n.list {
		if q.v.Backlog() > 0 {
			n.serve(q)
		}
	}
}

// request sends q's credit request if one is due.
func (n *Node) request(q *nodeVOQ) {
	send, total, next := q.cc.Poll(n.now)
	if send {
		n.sendCredit(false, n.cfg.Self, q.v.Key.Dst, CreditEntry{Port: q.v.Key.Port, Class: q.v.Key.Class, Total: total})
	}
	q.due = next
	n.ccDue = min(n.ccDue, next)
}

// sendCredit makes a one-entry credit frame and sends it toward its edge.
func (n *Node) sendCredit(grant bool, src, dst EdgeID, e CreditEntry) {
	to := dst
	if grant {
		to = src
	}
	size := CreditFrameLen(1)
	h, ok := n.mem.Alloc(size)
	if !ok {
		n.Stats.AllocFail++
		return
	}
	b := n.mem.Bytes(h, size)
	n.entry[0] = e
	fl, err := PutCreditEpochs(b, grant, src, dst, n.creditEpochs(grant, src, dst), n.settings.own, n.entry[:])
	if err != nil { // cannot happen: entries come from valid keys
		n.free(link.Frame{H: h, Len: size})
		return
	}
	clear(b[:12])
	if !n.sendCtrlTo(to, link.Frame{H: h, Len: fl}, b, 0) {
		return
	}
	if grant {
		n.Stats.CreditGrantTx++
	} else {
		n.Stats.CreditReqTx++
	}
}

// tellEgress gives host port p's scheduler its egress queue as last
// reported, plus the frames delivered to the port since (they joined its
// queue, and their cells no longer count as credit in flight) and, with
// the credit window, the cells the reassembly holds for it now. Without
// the deliveries, a request or a reassembly timeout between two reports
// ran the scheduler on a queue short of what had just arrived, and it
// granted that much beyond the window: a port the window sized to its
// buffer overflowed. (A port whose queue is never reported has none:
// deliveries count only once it was.)
func (n *Node) tellEgress(p int) {
	s := n.sched[p]
	q := n.egressQ[p]
	if s.Windowed() {
		q += n.reasm.HeldBytes(uint8(p))
	}
	s.SetEgressQueue(q)
}

// pollSched runs host port p's scheduler and sends the grants it issued.
func (n *Node) pollSched(p int) {
	s := n.sched[p]
	n.tellEgress(p)
	n.schedDue[p] = s.Poll(n.now)
	for _, g := range s.Out {
		n.sendCredit(true, g.Key.Src, n.cfg.Self, CreditEntry{Port: g.Key.Port, Class: g.Key.Class, Total: g.Total})
	}
	s.ResetOut()
}

// SetEgressQueue reports the bytes queued toward host port p (the frames
// delivered to it in Out included, placed or not): grants stop
// while they are above SchedConfig.StopAbove (with the credit window:
// while they, the cells the reassembly holds and the credit in flight are
// at the window) and resume (in this call) when they fall. The cells held
// for the port count against its window: they are its queue once their
// hole fills, and a hole that a late fabric node holds up can keep its
// stream's later cells, a window's worth, until they all go at once.
func (n *Node) SetEgressQueue(now int64, p int, bytes int) {
	n.now = now
	if p < 0 || p >= len(n.sched) {
		if p < 0 || p >= len(n.hosts) {
			n.Stats.BadPort++
		}
		return
	}
	s := n.sched[p]
	was := s.Stopped()
	n.egressQ[p], n.egressRep[p] = bytes, true
	n.tellEgress(p)
	if (was || s.Held()) && !s.Stopped() {
		n.pollSched(p)
	}
}

// Scheduler returns host port p's egress credit scheduler (nil without
// credits).
func (n *Node) Scheduler(p int) *Scheduler {
	if p < 0 || p >= len(n.sched) {
		return nil
	}
	return n.sched[p]
}

// ReasmStats returns the reassembly counters.
func (n *Node) ReasmStats() ReasmStats {
	if !n.edge {
		return ReasmStats{}
	}
	return n.reasm.Stats()
}

// VOQs calls fn with every VOQ's state, in creation order.
func (n *Node) VOQs(fn func(VOQInfo)) {
	for _, q := range n.list {
		i := VOQInfo{Key: q.v.Key, Flood: q.flood, Backlog: q.v.Backlog(), Enqueued: q.v.Enqueued(), Sent: q.v.Sent(),
			Drops: q.v.Drops, DropBytes: q.v.DropBytes}
		if q.cc != nil {
			i.Granted, i.Client = q.cc.Granted(), q.cc.Stats
		}
		fn(i)
	}
}

// Credits sums the credit loop state over the edge's VOQs.
func (n *Node) Credits() CreditTotals {
	var t CreditTotals
	for _, q := range n.list {
		t.Backlog += uint64(q.v.Backlog())
		if q.cc != nil {
			t.Requested += q.cc.Enqueued()
			t.Granted += q.cc.Granted()
			t.Sent += q.cc.Sent()
		}
	}
	return t
}

// rxCellEdge takes a parsed cell at an edge.
func (n *Node) rxCellEdge(h *CellHeader, b []byte) {
	if h.Dst != n.cfg.Self {
		n.Stats.WrongDst++
		return
	}
	if int(h.Port) >= len(n.hosts) && h.Port != FloodPort {
		n.Stats.BadPort++
		return
	}
	if !n.sourceEpoch(h.Src, h.Epoch) {
		return
	}
	if h.FCI {
		n.Stats.FCISeen++
		if int(h.Port) < len(n.sched) {
			n.sched[h.Port].FCI(n.now, h.Src)
			n.schedDue[h.Port] = n.now
		}
	}
	if int(h.Port) < len(n.sched) {
		sc := n.sched[h.Port]
		if sc.Arrived(n.now, h.Src, h.Class, int(h.Len)); sc.Held() {
			n.schedDue[h.Port] = n.now // grants may resume: see at the next Poll
		}
	}
	n.reasm.ReceiveCell(n.now, h, b[CellPayloadOffset:CellPayloadOffset+int(h.Len)])
	if n.reasm.st.Buffered > 0 && n.reasmDue == math.MaxInt64 {
		n.reasmDue = n.now + n.cfg.Reasm.Timeout
	}
}

// skipped tells a host port's scheduler the cells its reassembly gave up
// in a hole (lost in the fabric): at most a full cell's payload each, they
// no longer count as credit in flight.
func (n *Node) skipped(key StreamKey, cells int) {
	if int(key.Port) < len(n.sched) {
		n.sched[key.Port].Lost(key.Src, key.Class, cells*n.cfg.CellPayload)
		n.schedDue[key.Port] = n.now
	}
}

// deliver takes a reassembled record: [source port][host frame].
func (n *Node) deliver(key StreamKey, rec []byte) {
	if len(rec) < 1+MinRecordFrame {
		n.Stats.BadRecord++
		return
	}
	frame := rec[1:]
	var src [6]byte
	copy(src[:], frame[6:12])
	if !isGroup(&src) {
		n.macs.Learn(n.now, src, key.Src, rec[0])
		n.kernLearned(src, key.Src, rec[0])
	}
	if key.Port != FloodPort {
		n.deliverCopy(int(key.Port), frame)
		return
	}
	for p := range n.hosts {
		n.deliverCopy(p, frame)
	}
}

func (n *Node) deliverCopy(p int, frame []byte) {
	h, ok := n.mem.Alloc(len(frame))
	if !ok {
		n.Stats.AllocFail++
		n.Stats.DeliverFail++
		return
	}
	copy(n.mem.Bytes(h, len(frame)), frame)
	n.deliverFrame(p, link.Frame{H: h, Len: len(frame)})
}

func (n *Node) deliverFrame(p int, f link.Frame) {
	n.Out.Deliver[p] = append(n.Out.Deliver[p], f)
	if p < len(n.egressRep) && n.egressRep[p] {
		n.egressQ[p] += f.Len // until the next report, which includes it
	}
	n.Stats.Delivered++
	n.Stats.DeliveredBytes += uint64(f.Len)
	hs := &n.hosts[p]
	hs.TxFrames++
	hs.TxBytes += uint64(f.Len)
}

// floodFrame copies a host frame from port p to the edge's other host
// ports and, as unscheduled cells within FloodRate, to every edge the table
// reaches; a converging edge keeps it for the edges it comes to reach
// (floodHeld).
func (n *Node) floodFrame(p int, class Class, b []byte) {
	n.Stats.Floods++
	for o := range n.hosts {
		if o != p {
			n.deliverCopy(o, b)
		}
	}
	n.floodHeld(p, class, b)
}

// floodTargets returns the edges the table reaches (other than this one).
func (n *Node) floodTargets() []EdgeID {
	if !n.floodOK {
		n.floodTo = n.floodTo[:0]
		for e := 1; e < n.cfg.Reach.MaxEdges; e++ {
			if EdgeID(e) != n.cfg.Self && n.reach.Routes(EdgeID(e)) != 0 {
				n.floodTo = append(n.floodTo, EdgeID(e))
			}
		}
		n.floodOK = true
	}
	return n.floodTo
}

// rxCreditEdge takes a parsed credit frame at an edge: a request for one of
// its host ports' schedulers or a grant for one of its VOQs.
func (n *Node) rxCreditEdge(c *CreditFrame) {
	if !n.cfg.Credits {
		n.Stats.CreditsOff++
		return
	}
	if c.Grant {
		if c.Src != n.cfg.Self {
			n.Stats.WrongDst++
			return
		}
		if e := c.Epochs.Src; e != 0 && e != n.epoch {
			n.Stats.StaleEpoch++ // for an earlier boot of this edge
			return
		}
		if !n.destSession(c.Dst, c.Epochs.Dst) {
			return
		}
		n.Stats.CreditGrantRx++
		n.heardSettings(c.Dst, c.Settings)
		for i := range c.N {
			e := c.Entry(i)
			q := n.nv[VOQKey{Dst: c.Dst, Port: e.Port, Class: e.Class}]
			if q == nil || q.cc == nil {
				n.Stats.UnknownVOQ++
				continue
			}
			if q.k != nil && q.k.given {
				// The kernel keeps the VOQ: the grant raises its room.
				if q.cc.Grant(e.Total) {
					if !n.raise(q) {
						n.claim(q)
						n.serve(q)
					}
					n.request(q)
				}
				continue
			}
			n.claim(q)
			if q.cc.Grant(e.Total) {
				n.serve(q)
				n.request(q)
			}
		}
		return
	}
	if c.Dst != n.cfg.Self {
		n.Stats.WrongDst++
		return
	}
	if !n.sourceEpoch(c.Src, c.Epochs.Src) || !n.requestSession(c) {
		return
	}
	n.Stats.CreditReqRx++
	n.heardSettings(c.Src, c.Settings)
	for i := range c.N {
		e := c.Entry(i)
		if int(e.Port) >= len(n.sched) {
			n.Stats.BadPort++
			continue
		}
		n.sched[e.Port].Request(n.now, c.Src, e.Class, e.Total)
		n.pollSched(int(e.Port))
	}
}

// SetKernelRx gives the edge's reassembly a kernel path (KernelRx; nil:
// none): the records it delivers are counted by KernelDelivered.
func (n *Node) SetKernelRx(k ReasmKernel) {
	if n.edge {
		n.reasm.SetKernel(k)
	}
}

// HandBack gives the kernel path the streams that may go to it
// (Reassembler.HandBack): call it when every delivery so far is on its
// host port's ring.
func (n *Node) HandBack() {
	if n.edge {
		n.reasm.HandBack()
	}
}

// KernelDelivered counts what the kernel path delivered of a stream as
// the worker counts its own deliveries (the node's, the host port's and
// the reassembly's counters), tells the port's scheduler the payload
// arrived, and refreshes the MAC table's entry of the records' source.
func (n *Node) KernelDelivered(now int64, d *KernelDelivery) {
	n.now = now
	if !n.edge || int(d.Key.Port) >= len(n.hosts) {
		return
	}
	rs := &n.reasm.st
	rs.Cells += d.Frames
	rs.Delivered += d.Frames
	rs.DeliveredBytes += d.Bytes
	n.Stats.Delivered += d.Frames
	n.Stats.DeliveredBytes += d.Bytes
	hs := &n.hosts[d.Key.Port]
	hs.TxFrames += d.Frames
	hs.TxBytes += d.Bytes
	if !isGroup(&d.MAC) {
		n.macs.Learn(now, d.MAC, d.Key.Src, d.SrcPort)
	}
	if int(d.Key.Port) < len(n.sched) {
		sc := n.sched[d.Key.Port]
		if sc.Arrived(now, d.Key.Src, d.Key.Class, int(min(d.Payload, math.MaxInt32))); sc.Held() {
			n.schedDue[d.Key.Port] = now
		}
	}
}
