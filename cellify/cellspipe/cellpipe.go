package cellspipe

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/xdp"
)

// cellPipeline is mode cells: a cellify.Node on the node's ports, its
// frames in the UMEM. Host frames go to Node.HostRxBatch, link frames (after the
// worker's integrity check) to Node.LinkRx; after each batch and each Poll
// the node's output is placed: per link its control frames (credits, REACH)
// on the priority lane when the port has one, its cells on the data lane;
// deliveries on their host port; the rest released. The node holds no frame
// between calls, so every frame is sent or released in the iteration that
// gave it.
//
// The node's clock runs only while the worker does: a gap between two
// calls that ends more than cellMaxStep after the later of the first call
// and the deadline Poll asked for (the worker sleeping until its next
// timer is not a stall) counts only up to there. A worker kept from
// running finds, when it runs again, cells in its RX rings that arrived in
// time; on the wall clock its reassembly would skip their holes before
// reading them (measured on fabric3: holes skipped whose cells all came,
// "late"), its links would miss REACH windows it did not look at, and its
// schedulers would grant the time they slept at once.
//
// What the node is told about the ports: each link's TX backlog (its
// shaper's queued bytes and its TX ring's frames at the largest cell size,
// plus what this iteration listed) before every batch and Poll, for p2c
// spraying and FCI; each host port's egress queue (shaper bytes and TX
// ring frames at the mean delivered size) at every Poll, which stops the
// credits above the scheduler's threshold; a link port's interface going
// down or up (the worker's down state) as link state.
type cellPipeline struct {
	w  *dataplane.Worker
	tx *dataplane. // the worker's
		Tx
	node *cellify.Node
	ps   dataplane.Ports
	st   *Stats

	prio []int  // per link: the lane of its control frames
	up   []bool // per link: up as last reported to the node
	// settingsSaid is the node's SettingsDiffer count last logged.
	settingsSaid uint64
	// links run a link layer and its session under the cells (celllink.go,
	// cellfec.go; nil with --cells-link-mode none); copyFails counts cells handed back by a
	// link that found no UMEM frame to be copied into.
	links     []linkpipe.Layer
	copyFails uint64
	// usable and excluded, per link under a link layer: in the node's
	// usable set as last seen; left it, its cells not handed back yet.
	usable, excluded []bool
	// hostQ holds deliveries that found their host port's TX ring (or
	// its egress queue's frames or bytes) full (a reassembly hole filled
	// releases a burst), per host port.
	hostQ []hostQueue
	// exclusions and exclAt: per link, the exclusions last seen and the
	// wall time (Unix ns) the last one was seen at.
	exclusions []uint64
	exclAt     []int64
	pend       []int // per port: bytes listed on its TX lists this iteration
	avgLen8    []int // per host port: 8 × the mean delivered frame length (EWMA, gain 1/8)
	egress     []int // per host port: egress queue bytes last reported
	// winCap, per host port without a rate limit, bounds its credit
	// window in bytes (0: rate-limited, the port's buffer bounds it);
	// within it the window stays within what the port's frames hold at
	// the mean delivered length (hostWindow).
	winCap []int

	frames []link.Frame // a host batch handed to the node

	cellFrame int // the largest cell frame
	maxAlloc  int // the largest frame Alloc gives (room for the trailer)
	ring      int // TX ring size

	// got counts frames handed to the node, allocs frames it allocated,
	// released frames sent or freed: got + allocs - released is what the
	// pipeline holds (0 after every call).
	got, allocs, released int64
	publishAt             int64
	// The node's clock: worker time less stalled, the time beyond
	// cellMaxStep of each gap between calls (measured from the deadline
	// the last Poll asked for, wake, when that is later); last is the last
	// call's worker time, maxGap the longest such lateness.
	last, stalled, maxGap int64
	wake                  int64
	voqs                  int
	countVOQ              func(cellify.VOQInfo)

	// fast is a fabric node's kernel path (cellfast.go; nil when off), or
	// the links' side of an edge's (celledge.go) with kedge its host side.
	fast  *cellFast
	kedge *edgeKernel
	// rx is an edge's egress kernel path (cellrx.go; nil when off).
	rx *cellRx
}

// PublishInterval is how often the node's counters are copied to Stats.
const PublishInterval = int64(20 * time.Millisecond)

// cellMaxStep is the most the node's clock advances between two calls
// beyond the deadline the worker slept until (a busy worker calls every few
// hundred µs, an idle one at the node's next deadline).
const cellMaxStep = int64(2 * time.Millisecond)

// Credits and VOQs on a software fabric. Measured on the bundle under
// iperf3 with workers kept from running for 10-50 ms: with 16 KiB credits,
// bursts of 2 and 256 KiB VOQs the ingress VOQ overflowed (13k TCP
// retransmits in 3 s); with these, none.
const (
	cellCredit   = 64 << 10
	cellVOQBytes = 2 << 20
)

// cellMaxInFlight bounds the egress queue plus the credit in flight of a
// host port without a rate limit (whose queue is its TX ring and the
// deliveries waiting for it: hostQRings more rings).
const cellMaxInFlight = 2 << 20

// cellBurstTime bounds in time the credit a scheduler catches up on after
// a late Poll: the grants go into the fabric at once. On fabric3 with
// 20 Mbit/s ports (cells pushpull) 8 credits are 200 ms of the port's
// rate. Without this bound, in one run of three the links into e3 queued
// up to 107 KB (75 ms at 11 Mbit/s, beyond the reassembly timeout) and B
// lost 22 % of its datagrams; with it, B lost at most 0.5 % in 4 runs. The
// credit window keeps the port busy through a stall meanwhile.
const cellBurstTime = 10 * time.Millisecond

func newCellPipeline(w *dataplane.Worker, fwd *bpf.CellFwd) (dataplane.Pipeline, error) {
	return newCellPipelineEdge(w, fwd, nil)
}

// newCellPipelineEdge is newCellPipeline with an edge's kernel path, e
// (nil: none).
func newCellPipelineEdge(w *dataplane.Worker, fwd *bpf.CellFwd, e *cellEdgePrep) (dataplane.Pipeline, error) {
	d, cfg := w.Node(), w.Config()
	cc := *ConfigOf(cfg)
	ps := d.Ports()
	edge := len(ps.Hosts) > 0
	spray, err := cellify.ParseSprayMode(cc.Spray)
	if err != nil {
		return nil, err
	}
	pl := &cellPipeline{
		w:         w,
		tx:        w.Tx(),
		ps:        ps,
		st:        StatsOf(d),
		prio:      make([]int, len(ps.Links)),
		up:        make([]bool, len(ps.Links)),
		pend:      make([]int, ps.N()),
		avgLen8:   make([]int, len(ps.Hosts)),
		egress:    make([]int, len(ps.Hosts)),
		cellFrame: cellify.CellFrameLen(cc.CellSize),
		maxAlloc:  w.FrameLen() - linkcrc.TrailerLen,
		ring:      int(cfg.RingSize),
		frames:    make([]link.Frame, 0, w.Batch()),
	}
	pl.countVOQ = func(cellify.VOQInfo) { pl.voqs++ }
	w.KickDeliveriesFirst()
	tier := cellify.TierEdge
	if !edge {
		tier = 1
	}
	seed := cc.Seed
	if seed == 0 {
		seed = uint64(cc.NodeID)
	}
	rng := rand.New(rand.NewPCG(seed, 0x63656c6c73)) // "cells"
	nc := cellify.DefaultNodeConfig(cellify.EdgeID(cc.NodeID), tier, len(ps.Hosts), len(ps.Links), float64(cc.HostRate), pl, rng)
	// Credits of 64 KiB, up to 8 at once after a late Poll but no more
	// than cellBurstTime of the port's rate (at least one). The credit
	// window: the egress queue plus the credit in flight stay within the
	// loop's measured round trip at the credit rate plus 4 credits (a
	// quarter of a rate-limited port's buffer), and never exceed
	// cellMaxInFlight or a rate-limited port's buffer: however the
	// credit in flight arrives, the queue never overflows. Nor do they
	// exceed three quarters of what this edge's rate-limited link ports
	// buffer together: a source kept from running sends all its credit
	// at once over its links (the fabric's edges alike), and on fabric3
	// with a 2 MiB host port a source's 2 MiB burst overflowed its four
	// 256 KiB uplinks (327 cells dropped in one 8 s run).
	nc.Sched.CreditSize, nc.Sched.MaxBurst, nc.Sched.MaxBurstTime = cellCredit, 8, int64(cellBurstTime)
	nc.Sched.StopAbove = 4 * cellCredit
	nc.Sched.MaxInFlight = cellMaxInFlight
	links := 0
	for _, port := range ps.Links {
		if s, ok := cfg.Shape[d.Port(port).Name]; ok && s.Rate > 0 {
			links += s.Buffer
		}
	}
	if links > 0 {
		nc.Sched.MaxInFlight = min(nc.Sched.MaxInFlight, max(links*3/4, cellCredit))
	}
	nc.Client.Quantum = cellCredit
	nc.Client.Lead = uint64(max(cc.PreCredit, 0))
	nc.Client.Ahead = uint64(max(cc.CreditAhead, 0))
	limited := make([]bool, len(ps.Hosts))
	for k, port := range ps.Hosts {
		pl.avgLen8[k] = 8 * 1514
		if s, ok := cfg.Shape[d.Port(port).Name]; ok && s.Rate > 0 {
			limited[k] = true
			nc.HostRate[k] = float64(s.Rate)
			nc.Sched.StopAbove = min(nc.Sched.StopAbove, s.Buffer/4)
			nc.Sched.MaxInFlight = min(nc.Sched.MaxInFlight, max(s.Buffer, cellCredit))
		}
	}
	pl.winCap = make([]int, len(ps.Hosts))
	for k := range pl.winCap {
		if !limited[k] {
			pl.winCap[k] = nc.Sched.MaxInFlight
		}
	}
	nc.Epoch = cellEpoch()
	nc.RingBytes = cellVOQBytes
	if cc.voqBytes > 0 {
		nc.RingBytes = cc.voqBytes
	}
	nc.Spray = spray
	nc.CellPayload = cc.CellSize
	nc.Packing = !cc.NoPacking
	nc.Credits = !cc.NoCredits
	nc.Reach.MaxEdges = CellMaxEdges
	nc.Reach.Interval = int64(cc.ReachInterval)
	nc.Reach.Th, nc.Reach.ThUp = cc.ReachTh, cc.ReachUp
	if ls := linkpipe.FindLayer(cc.LinkMode); ls != nil && ls.LossFaulty != nil {
		if lim := ls.LossFaulty(cfg); lim > 0 {
			nc.Reach.LossFaulty, nc.Reach.LossClear = lim, lim/10
		}
	}
	// Loss classes exclude a link above the loosest class's bound.
	nc.Reach.SetClasses(cc.classes)
	nc.Reasm.Timeout = int64(cc.ReasmTimeout)
	nc.Reasm.Window = defaultReasmWindow
	if cc.reasmWindow > 0 {
		nc.Reasm.Window = cc.reasmWindow
	}
	if linkpipe.FindLayer(cc.LinkMode) != nil {
		nc.LinkRoom = pl.linkRoom
	}
	nc.LinkMACs = make([][12]byte, len(ps.Links))
	for l, port := range ps.Links {
		m := &nc.LinkMACs[l]
		copy(m[:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) // the peer's MAC is not known
		mac := d.Port(port).MAC()
		copy(m[6:], mac[:])
		if d.Port(port).Lanes() > 1 {
			pl.prio[l] = dataplane.LanePrio
		}
	}
	if pl.node, err = cellify.NewNode(nc); err != nil {
		return nil, err
	}
	for l := range pl.up {
		pl.up[l] = true // a new node takes its links for up
	}
	pl.exclusions, pl.exclAt = make([]uint64, len(ps.Links)), make([]int64, len(ps.Links))
	pl.hostQ = make([]hostQueue, len(ps.Hosts))
	for k := range pl.hostQ {
		pl.hostQ[k].Ring = link.NewRing(hostQRings * pl.ring)
	}
	if ls := linkpipe.FindLayer(cc.LinkMode); ls != nil {
		pl.links = make([]linkpipe.Layer, len(ps.Links))
		pl.usable, pl.excluded = make([]bool, len(ps.Links)), make([]bool, len(ps.Links))
		for l, port := range ps.Links {
			if pl.links[l], err = ls.New(linkpipe.LayerEnv{W: w, Cells: pl, L: l, Port: port, Mode: cc.LinkMode,
				GiveUp: int64(cc.ReachInterval) * int64(cc.ReachTh), LossClasses: cc.classes.On()}); err != nil {
				return nil, err
			}
		}
	}
	if fwd != nil {
		ncfg := pl.node.Config()
		pl.fast = openCellFast(pl, fwd, &ncfg)
	}
	if e != nil {
		ncfg := pl.node.Config()
		if !openCellEdge(pl, e, &ncfg) {
			e.tx.SetOn(false)
			if pl.fast != nil {
				pl.fast.close()
				pl.fast = nil
			}
		}
	}
	return pl, nil
}

// cellEpoch is a new nonzero epoch per start of the node (from the
// runtime's randomly seeded source, unlike the spraying's seeded one): the
// other edges reset the streams and credit totals of the boot before.
func cellEpoch() uint16 {
	for {
		if e := uint16(rand.Uint32()); e != 0 {
			return e
		}
	}
}

// Alloc implements link.Memory for the node and the layers under it (lg's
// control frames, fec's parity): a free UMEM frame, counted.
func (pl *cellPipeline) Alloc(n int) (link.Handle, bool) {
	if n > pl.maxAlloc {
		return 0, false
	}
	a, ok := pl.tx.Alloc()
	if !ok {
		return 0, false
	}
	pl.allocs++
	return link.Handle(a), true
}

// Bytes implements link.Memory.
func (pl *cellPipeline) Bytes(h link.Handle, n int) []byte { return pl.w.Bytes(uint64(h), n) }

// Room implements Pipeline: the node takes every frame (what it cannot
// place it counts and drops).
func (pl *cellPipeline) Room(int) int { return math.MaxInt }

// Receive implements Pipeline.
func (pl *cellPipeline) Receive(wnow int64, port, _ int, descs []xdp.Desc, tx *dataplane.Tx) {
	now := pl.clock(wnow)
	if pl.rx != nil {
		pl.rx.loop(pl, wnow, now)
	}
	pl.got += int64(len(descs))
	pl.backlogs()
	if k, ok := pl.ps.HostIndex(port); ok {
		fs := pl.frames[:0]
		for _, d := range descs {
			fs = append(fs, link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)})
		}
		pl.frames = fs
		pl.node.HostRxBatch(now, k, fs)
		if pl.kedge != nil {
			pl.kedge.takenIn(now)
		}
	} else if l, _ := pl.ps.Link(port); pl.links != nil {
		c := pl.links[l]
		for _, d := range descs {
			c.Receive(now, link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)}, tx)
		}
		c.DeliverUp(now)
	} else {
		for _, d := range descs {
			pl.node.LinkRx(now, l, link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)})
		}
	}
	pl.drain(now, tx)
}

// Poll implements Pipeline: statistics, link state, backlogs and egress
// queues, then the node's timers and its output.
func (pl *cellPipeline) Poll(wnow int64, tx *dataplane.Tx) int64 {
	now := pl.clock(wnow)
	if pl.rx != nil {
		pl.rx.loop(pl, wnow, now)
	}
	if now >= pl.publishAt {
		pl.publishAt = now + PublishInterval
		pl.publish()
	}
	next := int64(math.MaxInt64)
	for _, c := range pl.links {
		next = min(next, c.Poll(now, tx))
	}
	for l, port := range pl.ps.Links {
		up := pl.w.Port(port).DownSince() == 0 && (pl.links == nil || pl.links[l].Up())
		if up != pl.up[l] {
			pl.up[l] = up
			pl.node.SetLinkUp(now, l, up)
		}
	}
	pl.backlogs()
	for k, port := range pl.ps.Hosts {
		if pl.winCap[k] > 0 {
			if sc := pl.node.Scheduler(k); sc != nil {
				sc.SetMaxInFlight(pl.hostWindow(k))
			}
		}
		q := pl.queued(port, pl.meanLen(k))
		pl.egress[k] = q
		pl.node.SetEgressQueue(now, k, q)
	}
	if pl.kedge != nil {
		pl.kedge.takenIn(now)
		pl.kedge.e.lg.DrainWake()
	}
	next = min(next, pl.node.Poll(now))
	pl.stampExclusions(wnow)
	pl.failovers(now)
	pl.drain(now, tx)
	clear(pl.pend) // the worker places the lists now
	for k := range pl.hostQ {
		if pl.hostQ[k].Len() > 0 {
			next = min(next, now+int64(hostQRetry)) // room comes with completions
		}
	}
	if next == math.MaxInt64 {
		pl.wake = wnow + int64(pl.w.Config().PollTimeout)
		return next
	}
	pl.wake = next + pl.stalled
	return pl.wake // worker time
}

// sayCreditSettings logs, once per finding, an edge whose credit frames
// carry other credit settings than this edge's, naming each that differs.
func (pl *cellPipeline) sayCreditSettings() {
	found, peer, theirs, ours := pl.node.SettingsDiffer()
	if found == pl.settingsSaid {
		return
	}
	pl.settingsSaid = found
	var d []string
	if theirs.Lead != ours.Lead {
		d = append(d, fmt.Sprintf("--cells-pre-credit %d there, %d here", theirs.Lead, ours.Lead))
	}
	if theirs.Ahead != ours.Ahead {
		d = append(d, fmt.Sprintf("--cells-credit-ahead %d there, %d here", theirs.Ahead, ours.Ahead))
	}
	pl.w.Log().Warn("cells: edge "+strconv.Itoa(int(peer))+" runs other credit settings than this edge ("+strings.Join(d, "; ")+
		"): the credit loop between them counts wrong (grants held back as late, or the egress window overrun by the difference); run every edge with the same values",
		"peer_edge", peer)
}

// clock returns the node's time at worker time now.
func (pl *cellPipeline) clock(now int64) int64 {
	if pl.last != 0 {
		if late := now - max(pl.last, pl.wake); late > cellMaxStep {
			pl.stalled += late - cellMaxStep
			pl.maxGap = max(pl.maxGap, late)
		}
	}
	pl.last = now
	return now - pl.stalled
}

// Stop implements Pipeline.
func (pl *cellPipeline) Stop() {
	if pl.kedge != nil {
		pl.node.KernelClose()
	}
	if pl.fast != nil {
		pl.fast.close()
	}
	if pl.rx != nil {
		pl.rx.close()
	}
	pl.publish()
}

// stampExclusions records when each link's latest exclusion was seen
// (wall time: an experiment compares it with when it cut the link).
func (pl *cellPipeline) stampExclusions(wnow int64) {
	r := pl.node.Reach()
	for l := range pl.exclusions {
		if n := r.Exclusions(l); n != pl.exclusions[l] {
			pl.exclusions[l] = n
			pl.exclAt[l] = pl.w.Wall(wnow).UnixNano()
		}
	}
}

// failovers hands the cells of every link that left the node's usable
// set back to the sprayer (celllink.go), once another link is usable: with
// none (every link out at once, as when the peer is kept from running and
// misses its REACHes) they stay where they are, and if the link comes back
// first its link layer delivers them itself.
func (pl *cellPipeline) failovers(now int64) {
	if pl.links == nil {
		return
	}
	r := pl.node.Reach()
	usable := r.Usable()
	for l, c := range pl.links {
		u := r.Link(l).Usable
		switch {
		case u:
			pl.excluded[l] = false
		case pl.usable[l]:
			pl.excluded[l] = true
		}
		pl.usable[l] = u
		if pl.excluded[l] && usable&^(1<<l) != 0 {
			pl.excluded[l] = false
			c.Failover(now)
		}
	}
}

// backlogs tells the node every link's TX backlog.
func (pl *cellPipeline) backlogs() {
	for l, port := range pl.ps.Links {
		pl.node.SetLinkBacklog(l, pl.linkQueued(l, port))
	}
}

// linkQueued is queued(port, pl.cellFrame) for link l, port number port:
// called for every link at every worker iteration, it skips looking up
// which kind of port it is.
func (pl *cellPipeline) linkQueued(l, port int) int {
	b := pl.txQueued(port, pl.cellFrame)
	if pl.links != nil {
		b += pl.links[l].QueuedBytes()
	}
	return b
}

// hostWindow bounds the credit window of host port k, which has no rate
// limit: its queue is its TX ring and hostQRings more rings of
// deliveries, frames whatever their length, so at the mean delivered
// length it holds that many frames' bytes (with 60-byte frames a sixth of
// cellMaxInFlight; the credit in flight is records, a little longer than
// their frames).
func (pl *cellPipeline) hostWindow(k int) int {
	return min(pl.winCap[k], (hostQRings+1)*pl.ring*pl.meanLen(k))
}

// meanLen is host port k's mean delivered frame length. The mean is kept
// in eighths of a byte: an integer mean moved by an eighth of each
// difference stops up to 7 bytes away from the frames' length (67 for
// 60-byte frames: 12 % more frames than the window counts on).
func (pl *cellPipeline) meanLen(k int) int { return pl.avgLen8[k] / 8 }

// queued is what waits to leave port, in bytes: what this iteration listed,
// its link layer's credit queue, its shaper's queue, and its kicked TX
// rings' frames counted at frameLen bytes each.
func (pl *cellPipeline) queued(port, frameLen int) int {
	b := pl.txQueued(port, frameLen)
	if l, ok := pl.ps.Link(port); ok && pl.links != nil {
		b += pl.links[l].QueuedBytes()
	}
	if k, ok := pl.ps.HostIndex(port); ok {
		b += pl.hostQ[k].Bytes()
	}
	return b
}

// txQueued is what port holds on the way out whatever its kind: frames
// pending for its rings, its shaper's queue and its TX rings' frames
// (counted at frameLen each).
func (pl *cellPipeline) txQueued(port, frameLen int) int {
	b := pl.pend[port] + pl.w.ShapedBytes(port)
	p := pl.w.Port(port)
	socks := p.Sockets()
	for lane := 0; lane < min(p.Lanes(), len(socks), 2); lane++ {
		b += (pl.ring - socks[lane].TxFree()) * frameLen
	}
	return b
}

// drain places the node's output: link frames on their lanes (or, under
// a link layer, control frames on the control lane and cells into its
// queue), deliveries on their host ports, every frame released once (a
// frame on a TX ring is freed after its completion); then a fabric node's
// kernel path takes the routes and held links as they now are.
func (pl *cellPipeline) drain(now int64, tx *dataplane.Tx) {
	o := &pl.node.Out
	if pl.fast != nil {
		pl.fast.mono = 0
	}
	for m := o.Active; m != 0; m &= m - 1 {
		l := bits.TrailingZeros64(m)
		lo := &o.Link[l]
		port := pl.ps.Links[l]
		if pl.links != nil {
			pl.links[l].ToLink(now, lo, tx)
			continue
		}
		for _, f := range lo.Ctrl {
			pl.SendRelease(tx, port, pl.prio[l], f)
		}
		for _, f := range lo.Data {
			pl.SendRelease(tx, port, dataplane.LaneData, f)
		}
		pl.pend[port] += lo.Bytes
		if pl.fast != nil {
			pl.fast.charge(l, len(lo.Ctrl)+len(lo.Data), lo.Bytes)
		}
	}
	for k, list := range o.Deliver {
		port := pl.ps.Hosts[k]
		hq := &pl.hostQ[k]
		// The port's room in frames and, rate-limited, in bytes: its
		// egress queue drops what exceeds either, so what does not fit
		// waits here for the queue to drain.
		space, room := tx.Space(port, dataplane.LaneData), tx.ByteSpace(port)
		for hq.Len() > 0 && space > 0 && hq.Head().Len <= room {
			f := hq.Pop()
			pl.SendRelease(tx, port, dataplane.LaneData, f)
			pl.pend[port] += f.Len
			space--
			room -= f.Len
		}
		for _, f := range list {
			pl.avgLen8[k] += f.Len - pl.avgLen8[k]/8
			if hq.Len() > 0 || space <= 0 || f.Len > room {
				if !hq.Push(f) {
					hq.drops++
					pl.Release(tx, f)
				}
				continue
			}
			pl.SendRelease(tx, port, dataplane.LaneData, f)
			pl.pend[port] += f.Len
			space--
			room -= f.Len
		}
	}
	for _, f := range o.Free {
		tx.Release(uint64(f.H))
	}
	pl.released += int64(len(o.Free))
	o.Reset()
	for _, c := range pl.links {
		c.Pump(now, tx)
	}
	if pl.fast != nil {
		pl.fast.sync(pl) // the kernel path follows the node's routes and held links
	}
}

func (pl *cellPipeline) SendRelease(tx *dataplane.Tx, port, lane int, f link.Frame) {
	tx.Send(port, lane, uint64(f.H), f.Len)
	tx.Release(uint64(f.H))
	pl.released++
}

// publish copies the node's counters to Stats.
func (pl *cellPipeline) publish() {
	n := pl.node
	pl.sayCreditSettings()
	ns, rs := &n.Stats, n.ReasmStats()
	ct := n.Credits()
	pl.voqs = 0
	n.VOQs(pl.countVOQ)
	r := n.Reach()
	s := pl.st
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.snap
	c.Exclusions = 0
	for l := range c.Links {
		ls, lr := n.LinkStats(l), r.Link(l)
		cl := &c.Links[l]
		cl.Up, cl.Usable, cl.Peer, cl.Exclusions = lr.Up, lr.Usable, uint16(lr.Peer), lr.Exclusions
		cl.LastReason = ""
		if lr.Exclusions > 0 {
			cl.LastReason = lr.LastReason.String()
		}
		cl.TxFrames, cl.TxBytes, cl.TxCells, cl.TxCtrl = ls.TxFrames, ls.TxBytes, ls.TxCells, ls.TxCtrl
		cl.RxFrames, cl.RxBytes, cl.RxCells, cl.RxCtrl = ls.RxFrames, ls.RxBytes, ls.RxCells, ls.RxCtrl
		c.Exclusions += lr.Exclusions
		cl.LastExclusionAt = pl.exclAt[l]
		if ConfigOf(pl.w.Config()).classes.On() {
			cl.Class, cl.MeasuredClass, cl.PeerClass = uint8(r.EffClass(l)), uint8(lr.Class), uint8(lr.PeerClass)
			cl.TxClassBytes = append(cl.TxClassBytes[:0], ls.TxClassBytes[:ConfigOf(pl.w.Config()).classes.N()]...)
		}
	}
	for k := range c.Hosts {
		hs := n.HostStats(k)
		ch := &c.Hosts[k]
		ch.RxFrames, ch.RxBytes, ch.TxFrames, ch.TxBytes = hs.RxFrames, hs.RxBytes, hs.TxFrames, hs.TxBytes
		ch.EgressQueue = pl.egress[k]
		if sc := n.Scheduler(k); sc != nil {
			l := sc.Loop()
			ch.CreditRTT, ch.CreditRTTVar, ch.CreditFlight, ch.CreditWindow = l.RTT, l.RTTVar, l.InFlight, l.Window
			ch.WindowFull, ch.CreditExpired = sc.Stats.WindowFull, sc.Stats.ExpiredBytes
			ch.ShareFull, ch.Stopped, ch.Credits = sc.Stats.ShareFull, sc.Stats.Stopped, sc.Stats.Credits
			ch.LateFull, ch.Late, ch.CaughtUp = sc.Stats.LateFull, sc.Stats.Late, sc.Stats.CaughtUp
			ch.WaitedFor = sc.Stats.WaitedFor
		}
	}
	c.VOQs, c.VOQBacklog = pl.voqs, ct.Backlog
	c.CreditRequested, c.CreditGranted, c.CreditSent = ct.Requested, ct.Granted, ct.Sent
	c.ReasmDelivered, c.ReasmDiscards, c.ReasmTimeouts = rs.Delivered, rs.DiscardedRecords, rs.Timeouts
	c.UsableLinks = bits.OnesCount64(r.Usable())
	c.FCIMarks, c.FCISeen, c.HopDrops = ns.FCIMarks, ns.FCISeen, ns.HopDrops
	c.Malformed = ns.BadCell + ns.BadCredit + ns.BadReach + ns.BadType
	c.UmemFree = pl.w.FreeFrames()
	c.FramesHeld = pl.got + pl.allocs - pl.released
	for l, cl := range pl.links {
		c.FramesHeld -= int64(cl.Held())
		if c.Links[l].LG == nil {
			c.Links[l].LG = new(linkpipe.CellLinkLG)
		}
		cl.Snapshot(c.Links[l].LG)
	}
	c.CopyFails = pl.copyFails
	for k := range pl.hostQ {
		c.FramesHeld -= int64(pl.hostQ[k].Len())
		c.Hosts[k].Queued, c.Hosts[k].QueueDrops = pl.hostQ[k].Len(), pl.hostQ[k].drops
	}
	c.MaxPollGap, c.Stalled = pl.maxGap, pl.stalled
	c.Node, c.Reasm = *ns, rs
	if pl.fast != nil {
		pl.fast.fold(c)
	}
	if pl.kedge != nil {
		pl.foldEdge(c)
	}
	if pl.rx != nil {
		pl.rx.fold(c)
	}
}

// hostQRings is the host queue's size in TX rings: a reassembly hole of
// 1400 cells (measured after a link cut under load) released about 4000
// frames at once.
const hostQRings = 2

// hostQRetry is how soon Poll runs again while deliveries wait for a host
// port's TX ring.
const hostQRetry = 20 * time.Microsecond

// hostQueue is a ring of deliveries waiting for room on a host port's TX
// ring or, rate-limited, in its egress queue.
type hostQueue struct {
	link.Ring
	drops uint64
}

// Release ends the pipeline's hold on f.
func (pl *cellPipeline) Release(tx *dataplane.Tx, f link.Frame) {
	tx.Release(uint64(f.H))
	pl.released++
}

// CopyFrame returns a copy of f in a new UMEM frame (the original stays
// in its link's TX buffer, and a new link stamps its own numbering into
// the copy). Without a free frame it returns a zero Frame (counted).
func (pl *cellPipeline) CopyFrame(f link.Frame) link.Frame {
	h, ok := pl.Alloc(f.Len)
	if !ok {
		pl.copyFails++
		return link.Frame{}
	}
	copy(pl.w.Bytes(uint64(h), f.Len), pl.w.Bytes(uint64(f.H), f.Len))
	return link.Frame{H: h, Len: f.Len}
}

// AckedSince reports whether a link other than l had an ACK after t.
func (pl *cellPipeline) AckedSince(l int, t int64) bool {
	for k, c := range pl.links {
		if k != l && c.AckedAfter(t) {
			return true
		}
	}
	return false
}

// Pending counts n bytes listed on port's TX lists this iteration.
func (pl *cellPipeline) Pending(port, n int) { pl.pend[port] += n }

// Tx is the worker's.
func (pl *cellPipeline) Tx() *dataplane.Tx { return pl.tx }

// LinkRx hands the node a frame link l's layer delivered.
func (pl *cellPipeline) LinkRx(now int64, l int, f link.Frame) { pl.node.LinkRx(now, l, f) }

// Respray gives the node's sprayer the cells link l handed back.
func (pl *cellPipeline) Respray(now int64, l int, frames []link.Frame) {
	pl.node.Respray(now, l, frames)
}

// CellsLost tells the node link l lost n cells for good.
func (pl *cellPipeline) CellsLost(now int64, l, n int) { pl.node.CellsLost(now, l, n) }

// SetLoss reports link l's measured loss to the node.
func (pl *cellPipeline) SetLoss(now int64, l int, loss float64) { pl.node.SetLoss(now, l, loss) }

// ClassRoute is the node's: cell f of link l has another link of its class.
func (pl *cellPipeline) ClassRoute(l int, f link.Frame) bool { return pl.node.ClassRoute(l, f) }

// Usable is the node's usable links.
func (pl *cellPipeline) Usable() uint64 { return pl.node.Reach().Usable() }

// ReachCounts is link l's REACHes received and missed.
func (pl *cellPipeline) ReachCounts(l int) (rx, lost uint64) {
	lr := pl.node.Reach().Link(l)
	return lr.ReachRx, lr.ReachLost
}

// linkRoom is how many more cells link l's layer takes now.
func (pl *cellPipeline) linkRoom(l int) int { return pl.links[l].Room() }

// CellFrame is the largest cell frame.
func (pl *cellPipeline) CellFrame() int { return pl.cellFrame }

// MaxAlloc is the largest frame Alloc gives.
func (pl *cellPipeline) MaxAlloc() int { return pl.maxAlloc }

// PrioLane is the lane of link l's control frames.
func (pl *cellPipeline) PrioLane(l int) int { return pl.prio[l] }

// NodeID is the node's id.
func (pl *cellPipeline) NodeID() uint16 { return ConfigOf(pl.w.Config()).NodeID }
