package cellify

import (
	"math"
	"math/bits"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Node is one cell node: an edge (host ports and link ports: VOQs, credit
// client and egress schedulers, packer, sprayer, reassembly, MAC learning)
// or a fabric node (link ports only: it sprays cells again). It composes
// the package's parts on the caller's clock and memory, like the
// LinkGuardian core: no I/O, no goroutines, no clock reads, no allocation
// per frame in steady state.
//
// Worker loop, with now read once per iteration:
//
//  1. For each batch of frames from a host port: HostRxBatch (or HostRx
//     per frame); for each frame from a link port: LinkRx.
//     Report link and port events (SetLinkUp, SetLoss, SetLinkBacklog,
//     SetEgressQueue) as they happen, and Respray the frames a dead link's
//     LinkGuardian sender still held.
//  2. Poll(now): timers (REACH, reassembly timeouts, the schedulers' credit
//     pacing and refresh, credit request refresh). Call it after every
//     batch and again no later than the deadline it returns.
//  3. Transmit per link Out.Link[l].Ctrl, then Out.Link[l].Data; hand
//     Out.Deliver[p] to host port p; release Out.Free; Out.Reset().
//
// Records in cells are [length 2][source host port 1][host frame]: the
// port byte lets the egress edge learn where a source MAC lives.
type Node struct {
	cfg   NodeConfig
	mem   link.Memory
	edge  bool
	reach *Reachability
	gen   uint64     // reach.Stats.Rebuilds last seen
	spray []*Sprayer // per destination edge id, made on first use
	links []LinkStats
	back  []int // SetLinkBacklog

	reachBits []byte
	reachSeq  []uint32 // per link: the REACH counter (its gaps are REACHes lost)
	ctrlRR    uint32
	entry     [1]CreditEntry
	tag       [1]byte
	now       int64

	// Edge.
	hosts     []HostStats
	voqs      *VOQSet
	nv        map[VOQKey]*nodeVOQ
	lastVOQ   *nodeVOQ // the VOQ voq last returned: a batch's frames mostly go to one
	touched   byte     // touchFrames' sink, so that its loads are kept
	list      []*nodeVOQ
	held      []*nodeVOQ // VOQs records joined in the host batch being taken (HostRxBatch)
	sched     []*Scheduler
	schedDue  []int64
	egressQ   []int  // per host port: as last reported (SetEgressQueue) plus what was delivered to it since
	egressRep []bool // per host port: its queue was reported (deliveries count in it from then on)
	reasm     *Reassembler
	reasmDue  int64
	macs      *MACTable
	flood     TokenBucket
	floodTo   []EdgeID
	floodOK   bool // floodTo matches the table
	hold      floodHold
	ccDue     int64
	epoch     uint16
	srcEp     []peerEpoch // per edge id: other edges as sources
	dstEp     []peerEpoch // ... as destinations of this edge's VOQs (session nonces)
	sess      []uint16    // per edge id: the schedulers' session nonce with it as a source
	settings  nodeSettings
	noRoute   bool // a VOQ waits for a route
	allocWait bool // a VOQ waits for a buffer
	linkWait  bool // a VOQ waits for room on its links (retried at every Poll: room comes with the link's events)

	// The kernel path of the ingress edge (kerntx.go; nil: off).
	kern     EdgeKernel
	kdests   map[[6]byte]kdest
	kclaimed []*nodeVOQ // VOQs with a slot Go holds, to hand back when empty
	kst      KernelStats
	polls    uint64 // Polls so far (kerntx.go: when a VOQ's cells have left)
	khold    int64  // a VOQ a host frame joined through Go less than this ago stays Go's
	kdue     int64  // when such a VOQ may go back (math.MaxInt64: none)

	Out   Output
	Stats NodeStats
}

// allocRetry is how soon Poll retries a VOQ that found no buffer.
const allocRetry = 10_000

// NewNode returns a node; Poll starts its timers.
func NewNode(cfg NodeConfig) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	rc := cfg.Reach
	rc.Self, rc.Tier, rc.Links = cfg.Self, cfg.Tier, cfg.Links
	if rc.MaxEdges == 0 {
		rc.MaxEdges = 256
	}
	if rc.MaxEdges > MaxReachEdges {
		rc.MaxEdges = MaxReachEdges
	}
	reach, err := NewReachability(rc)
	if err != nil {
		return nil, err
	}
	cfg.Reach = reach.Config()
	n := &Node{
		cfg:       cfg,
		mem:       cfg.Mem,
		edge:      cfg.Tier == TierEdge,
		reach:     reach,
		spray:     make([]*Sprayer, int(rc.Classes.N())*rc.MaxEdges),
		links:     make([]LinkStats, cfg.Links),
		reachSeq:  make([]uint32, cfg.Links),
		back:      make([]int, cfg.Links),
		reachBits: make([]byte, reach.AdvertLen()),
		Out:       newNodeOutput(cfg.Links, cfg.HostPorts),
		reasmDue:  math.MaxInt64,
		ccDue:     math.MaxInt64,
		kdue:      math.MaxInt64,
	}
	if !n.edge {
		return n, nil
	}
	n.hosts = make([]HostStats, cfg.HostPorts)
	n.epoch = cfg.Epoch
	if n.epoch == 0 {
		n.epoch = n.draw()
	}
	n.cfg.Epoch = n.epoch
	n.srcEp = make([]peerEpoch, rc.MaxEdges)
	n.dstEp = make([]peerEpoch, rc.MaxEdges)
	n.sess = make([]uint16, rc.MaxEdges)
	if n.voqs, err = NewVOQSet(VOQConfig{Src: cfg.Self, MaxVOQs: cfg.MaxVOQs, RingBytes: cfg.RingBytes, Hops: cfg.Hops, Packing: cfg.Packing,
		Epoch: n.epoch, FirstSeq: cfg.FirstSeq}); err != nil {
		return nil, err
	}
	n.nv = make(map[VOQKey]*nodeVOQ)
	rcfg := cfg.Reasm
	rcfg.Self = cfg.Self
	rcfg.MaxPayload = max(rcfg.MaxPayload, cfg.CellPayload)
	if n.reasm, err = NewReassembler(rcfg, n.deliver); err != nil {
		return nil, err
	}
	n.cfg.Reasm = n.reasm.Config()
	if n.cfg.EpochHold == 0 {
		n.cfg.EpochHold = n.cfg.Reasm.EpochHold
	}
	n.macs = NewMACTable(cfg.MACTableSize, cfg.MACAge)
	n.flood.Reset(0, cfg.FloodRate, cfg.FloodBurst)
	n.floodTo = make([]EdgeID, 0, rc.MaxEdges)
	n.hold.init(rc.MaxEdges)
	if cfg.Credits {
		for p := range cfg.HostPorts {
			sc := cfg.Sched
			sc.Port, sc.Rate = uint8(p), cfg.HostRate[p]
			sc.Lead, sc.Ahead = cfg.Client.Lead, cfg.Client.Ahead
			s, err := NewScheduler(sc)
			if err != nil {
				return nil, err
			}
			n.sched = append(n.sched, s)
		}
		n.schedDue = make([]int64, cfg.HostPorts)
		n.egressQ, n.egressRep = make([]int, cfg.HostPorts), make([]bool, cfg.HostPorts)
		n.reasm.SetSkipped(n.skipped)
		n.cfg.Client.PreCredit = cfg.Sched.PreCredit
		n.settings.init(n.cfg.Client, rc.MaxEdges)
	}
	return n, nil
}

// Config returns the configuration in use.
func (n *Node) Config() NodeConfig { return n.cfg }

// Reach returns the node's reachability (read it; report link events
// through the node).
func (n *Node) Reach() *Reachability { return n.reach }

// LinkStats returns link port l's counters.
func (n *Node) LinkStats(l int) LinkStats {
	if l < 0 || l >= len(n.links) {
		return LinkStats{}
	}
	return n.links[l]
}

// HostStats returns host port p's counters.
func (n *Node) HostStats(p int) HostStats {
	if p < 0 || p >= len(n.hosts) {
		return HostStats{}
	}
	return n.hosts[p]
}

// onLink starts a call about link port l at now: false, counted as
// BadLink, if there is no such port.
func (n *Node) onLink(now int64, l int) bool {
	n.now = now
	if l < 0 || l >= len(n.links) {
		n.Stats.BadLink++
		return false
	}
	return true
}

// LinkRx takes a frame received on link port l.
func (n *Node) LinkRx(now int64, l int, f link.Frame) {
	if !n.onLink(now, l) {
		n.free(f)
		return
	}
	ls := &n.links[l]
	b := n.rxBytes(f, &ls.RxFrames, &ls.RxBytes)
	t, ok := seqhdr.FrameType(b)
	switch {
	case ok && t == seqhdr.TypeCell:
		ls.RxCells++
		n.rxCell(f, b)
	case ok && (t == seqhdr.TypeCreditReq || t == seqhdr.TypeCreditGrant):
		ls.RxCtrl++
		n.rxCredit(f, b)
	case ok && t == seqhdr.TypeReach:
		ls.RxCtrl++
		n.rxReach(l, b)
		n.free(f)
	default:
		n.drop(f, &n.Stats.BadType)
	}
}

// drop frees f, counting it in ctr (one of NodeStats' drop counters).
func (n *Node) drop(f link.Frame, ctr *uint64) {
	*ctr++
	n.free(f)
}

// rxBytes counts frame f received in a port's frames and bytes and
// returns its bytes.
func (n *Node) rxBytes(f link.Frame, frames, bytes *uint64) []byte {
	*frames++
	*bytes += uint64(f.Len)
	return n.mem.Bytes(f.H, f.Len)
}

func (n *Node) rxCell(f link.Frame, b []byte) {
	h, err := ParseCell(b)
	if err != nil {
		n.drop(f, &n.Stats.BadCell)
		return
	}
	if n.edge {
		n.rxCellEdge(&h, b)
		n.free(f)
		return
	}
	if !DecHops(b) {
		n.drop(f, &n.Stats.HopDrops)
		return
	}
	if n.sprayCell(f, b, &h, 0) {
		n.Stats.Forwarded++
	}
}

// sprayCell sends a cell frame toward its edge over a usable link of its
// loss class not in exclude (with none, of the next looser class that has
// one); it frees the frame and returns false if there is none.
func (n *Node) sprayCell(f link.Frame, b []byte, h *CellHeader, exclude uint64) bool {
	own := n.cfg.Reach.Classes.For(h.Class)
	lc := own
	mask := n.reach.RoutesIn(lc, h.Dst) &^ exclude
	if mask == 0 {
		// The cell is in the fabric already: with no usable link of its
		// class left (a peer kept from running past REACH's threshold
		// takes the only clean link out), a looser class that reaches
		// its edge carries it, as a link of that class would lose it only
		// at that class's bound, where dropping loses it surely. Its VOQ's
		// cells not cut yet still wait for a route in their class. (An
		// edge's link layers keep the cells they hand back that have no
		// other link of their class, ClassRoute: here come only those
		// their queue had no room for.)
		for k := lc + 1; mask == 0 && k <= MaxLossClasses; k++ {
			if mask = n.reach.RoutesIn(k, h.Dst) &^ exclude; mask != 0 {
				lc = k
				n.Stats.ClassFallback++
			}
		}
	}
	if mask == 0 {
		n.drop(f, &n.Stats.NoRoute)
		return false
	}
	l := n.sprayer(h.Dst, lc).Pick(mask, n.fabricFlow(h.Entropy))
	if n.cfg.FCIThreshold > 0 && !n.edge && n.Backlog(l) > n.cfg.FCIThreshold {
		SetFCI(b)
		n.Stats.FCIMarks++
	}
	n.sendCell(l, own, f, b) // counted in its own class, whatever the link's
	return true
}

// fabricFlow is the flow a cell is hashed by where only its entropy is
// known, decorrelated per node.
func (n *Node) fabricFlow(entropy uint8) uint64 {
	if n.cfg.Spray != SprayHash {
		return 0
	}
	return uint64(entropy) ^ n.cfg.FlowSeed<<8
}

func (n *Node) rxCredit(f link.Frame, b []byte) {
	c, err := ParseCredit(b)
	if err != nil {
		n.drop(f, &n.Stats.BadCredit)
		return
	}
	if n.edge {
		n.rxCreditEdge(&c)
		n.free(f)
		return
	}
	to := c.Dst
	if c.Grant {
		to = c.Src
	}
	if n.sendCtrlTo(to, f, b, 0) {
		n.Stats.CtrlFwd++
	}
}

// sendCtrlTo sends a credit frame toward edge to over a usable link not in
// exclude, round-robin; it frees the frame and returns false if none.
func (n *Node) sendCtrlTo(to EdgeID, f link.Frame, b []byte, exclude uint64) bool {
	mask := n.reach.Routes(to) &^ exclude
	if mask == 0 {
		n.drop(f, &n.Stats.NoRoute)
		return false
	}
	k := int(n.ctrlRR % uint32(bits.OnesCount64(mask)))
	n.ctrlRR++
	n.sendCtrl(sprayKth(mask, k), f, b)
	return true
}

func (n *Node) rxReach(l int, b []byte) {
	r, err := ParseReach(b)
	if err != nil {
		n.Stats.BadReach++
		return
	}
	n.Stats.ReachRx++
	m := PeerReach{From: r.Node, Tier: r.Role.Tier(), Faulty: r.Faulty, Class: r.Class, Classes: r.Classes, Seq: r.Seq, Bitmap: r.Bitmap}
	n.reach.Receive(n.now, l, &m)
}

// Respray takes back the frames link l's LinkGuardian sender still held
// un-ACKed when the link died and sends them over the other usable links:
// cells and credit frames by their destination edge (the reassembly drops
// the copies that had arrived), anything else to Free.
func (n *Node) Respray(now int64, l int, frames []link.Frame) {
	n.now = now
	var exclude uint64
	if l >= 0 && l < 64 {
		exclude = 1 << l
	}
	for _, f := range frames {
		b := n.mem.Bytes(f.H, f.Len)
		t, ok := seqhdr.FrameType(b)
		switch {
		case ok && t == seqhdr.TypeCell:
			h, err := ParseCell(b)
			if err != nil {
				n.drop(f, &n.Stats.BadCell)
				continue
			}
			if !n.sprayCell(f, b, &h, exclude) {
				n.Stats.RespraysDrop++
				continue
			}
		case ok && (t == seqhdr.TypeCreditReq || t == seqhdr.TypeCreditGrant):
			c, err := ParseCredit(b)
			if err != nil {
				n.drop(f, &n.Stats.BadCredit)
				continue
			}
			to := c.Dst
			if c.Grant {
				to = c.Src
			}
			if !n.sendCtrlTo(to, f, b, exclude) {
				n.Stats.RespraysDrop++
				continue
			}
		default:
			n.drop(f, &n.Stats.RespraysDrop)
			continue
		}
		n.Stats.Resprayed++
	}
}

// SetLinkUp reports link port l's interface state: down leaves the tables
// at once, up returns after Th good REACH intervals.
func (n *Node) SetLinkUp(now int64, l int, up bool) {
	if !n.onLink(now, l) {
		return
	}
	n.reach.SetUp(now, l, up)
}

// SetLoss reports link port l's measured loss rate (exclusion above
// ReachConfig.LossFaulty, return at or below LossClear).
func (n *Node) SetLoss(now int64, l int, loss float64) {
	if !n.onLink(now, l) {
		return
	}
	n.reach.SetLoss(now, l, loss)
}

// CellsLost reports count cells lost for good on link port l's receiving
// direction (its link layer numbers the cells and found them missing, not
// to be recovered). At an edge the reassembly then skips as many holes
// without waiting for its timeout (ReasmConfig.LostWait); a fabric node
// ignores it.
func (n *Node) CellsLost(now int64, l int, count int) {
	if !n.onLink(now, l) {
		return
	}
	if n.edge && count > 0 {
		n.reasm.Lost(now, count)
		n.reasmDue = now
	}
}

// SetLinkBacklog reports link port l's transmit backlog in bytes (used
// when NodeConfig.LinkBacklog is nil).
func (n *Node) SetLinkBacklog(l, bytes int) {
	if l < 0 || l >= len(n.back) {
		n.Stats.BadLink++
		return
	}
	n.back[l] = bytes
}

// Backlog returns link port l's transmit backlog: what the caller reports
// plus what the node has listed in Out for it.
func (n *Node) Backlog(l int) int {
	b := n.back[l]
	if n.cfg.LinkBacklog != nil {
		b = n.cfg.LinkBacklog(l)
	}
	return b + n.Out.Link[l].Bytes
}

// Poll runs the timers due by now and returns the next deadline.
func (n *Node) Poll(now int64) int64 {
	n.now = now
	next := n.reach.Poll(now)
	for m := n.reach.Due; m != 0; m &= m - 1 {
		n.sendReach(bits.TrailingZeros64(m))
	}
	n.reach.Due = 0
	if g := n.reach.Stats.Rebuilds; g != n.gen {
		n.gen, n.floodOK = g, false
		if n.noRoute {
			n.noRoute = false
			n.serveAll()
		}
		if n.edge {
			n.tableChanged()
		}
	}
	if !n.edge {
		return next
	}
	n.kernPoll()
	if n.allocWait || n.linkWait {
		n.allocWait, n.linkWait = false, false
		n.serveAll()
		if n.allocWait {
			next = min(next, now+allocRetry)
		}
	}
	if now >= n.reasmDue {
		n.reasmDue = n.reasm.Poll(now)
	}
	next = min(next, n.reasmDue)
	for p := range n.sched {
		if now >= n.schedDue[p] {
			n.pollSched(p)
		}
		next = min(next, n.schedDue[p])
	}
	if now >= n.ccDue {
		n.ccDue = math.MaxInt64
		for _, q := range n.list {
			if q.cc == nil {
				continue
			}
			if now >= q.due {
				n.request(q)
			} else {
				n.ccDue = min(n.ccDue, q.due)
			}
		}
	}
	return min(next, n.ccDue, n.kdue)
}

func (n *Node) sendReach(l int) {
	classes := n.cfg.Reach.Classes.On()
	size := ReachFrameLen(n.reach.Config().MaxEdges, classes)
	h, ok := n.mem.Alloc(size)
	if !ok {
		n.Stats.AllocFail++
		return
	}
	b := n.mem.Bytes(h, size)
	clear(b[:12])
	faulty, class := n.reach.Advert(l, n.reachBits)
	n.reachSeq[l]++
	r := Reach{Node: n.cfg.Self, Role: RoleOf(n.cfg.Tier), Faulty: faulty, Class: class, Classes: classes,
		Seq: n.reachSeq[l], Edges: n.reach.Config().MaxEdges, Bitmap: n.reachBits}
	fl, err := PutReach(b, &r)
	if err != nil { // cannot happen: the advert follows the table's bounds
		n.free(link.Frame{H: h, Len: size})
		return
	}
	n.Stats.ReachTx++
	n.sendCtrl(l, link.Frame{H: h, Len: fl}, b)
}

// sprayer returns the sprayer of cells toward dst in loss class lc: one
// per destination and class, as each has its own usable set.
func (n *Node) sprayer(dst EdgeID, lc LossClass) *Sprayer {
	i := int(dst)
	if lc > 1 {
		i += (int(lc) - 1) * n.cfg.Reach.MaxEdges
	}
	s := n.spray[i]
	if s == nil {
		s, _ = NewSprayer(n.cfg.Spray, n.cfg.SprayRounds, n.cfg.Rng, n.Backlog)
		n.spray[i] = s
	}
	return s
}

// setMACs writes link l's MACs if configured (frames the node makes start
// with zeros there).
func (n *Node) setMACs(b []byte, l int) {
	if n.cfg.LinkMACs != nil {
		copy(b[:12], n.cfg.LinkMACs[l][:])
	}
}

func (n *Node) sendCell(l int, lc LossClass, f link.Frame, b []byte) {
	n.links[l].TxCells++
	n.links[l].TxClassBytes[lc-1] += uint64(f.Len)
	n.transmit(l, f, b, &n.Out.Link[l].Data)
}

func (n *Node) sendCtrl(l int, f link.Frame, b []byte) {
	n.links[l].TxCtrl++
	n.transmit(l, f, b, &n.Out.Link[l].Ctrl)
}

// transmit appends f to one of link l's transmit lists and counts it.
func (n *Node) transmit(l int, f link.Frame, b []byte, list *[]link.Frame) {
	n.setMACs(b, l)
	*list = append(*list, f)
	n.Out.Link[l].Bytes += f.Len
	n.Out.Active |= 1 << l
	s := &n.links[l]
	s.TxFrames++
	s.TxBytes += uint64(f.Len)
}

func (n *Node) free(f link.Frame) { n.Out.Free = append(n.Out.Free, f) }
