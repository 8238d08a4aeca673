package cellsim

import (
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// incastRun runs n sources at the host rate into one host of a one-tier
// fabric (n+1 edges, 4 uplinks each over 2 fabric nodes) and measures the
// window from 10 ms to the end of the offer.
type incastOut struct {
	busy                   float64 // destination port busy share
	shares                 []float64
	maxDev                 float64 // max |share·n − 1|
	fabric, egress, voq    uint64
	maxVOQ                 int
	delivered              float64 // bits/s into the destination
	backlogLeft, unsentVOQ uint64
}

func incastRun(r *scenario.Result, seed uint64, n int, credits bool, loss Loss, offer int64) (*incastOut, error) {
	s := New(Config{Seed: seed, Node: func(_ *Node, c *cellify.NodeConfig) { c.Credits = credits }})
	lc := LinkConfig{Rate: linkRate, Delay: linkDelay, Loss: loss}
	t, flows, err := incast(s, n, lc, 1500, hostRate, offer)
	if err != nil {
		return nil, err
	}
	dst := t.Hosts[n]
	w := measure(s, s.Now+10*ms, s.Now+offer, flows, []*Host{dst})
	o := &incastOut{}
	s.At(s.Now+offer, func() {
		for _, e := range t.Edges {
			e.VOQs(func(v cellify.VOQInfo) { o.maxVOQ = max(o.maxVOQ, v.Backlog) })
		}
	})
	// The VOQs drain: 30 ms, and four of a request's longest repeat
	// intervals (a VOQ always behind its grant backs its repeats off to
	// RefreshMax; with control frames lost, a drain of 30 ms alone left
	// one VOQ whose last request and its repeats were lost, by seed).
	s.RunFor(offer + 30*ms + 4*cellify.DefaultRefreshMax)
	account(r, s)
	o.busy = w.busy(0)
	var total float64
	for i := range flows {
		total += w.rate(i)
	}
	o.delivered = total
	for i := range flows {
		sh := w.rate(i) / total
		o.shares = append(o.shares, sh)
		o.maxDev = math.Max(o.maxDev, math.Abs(sh*float64(n)-1))
	}
	o.fabric = fabricCellDrops(s)
	o.egress = dst.Stats.EgressDrops
	for _, e := range t.Edges {
		o.voq += e.Stats.VOQDrops
	}
	o.backlogLeft, o.unsentVOQ = t.creditsLeft()
	return o, s.Leaked("incast")
}

// Incast: 3 sources at the full host rate into one host (and 16 into one),
// with credits and without. With credits nothing is lost in the fabric or
// at the egress port (the sources' VOQs hold and drop the excess), the
// port stays busy (credits run 2 % above its rate) and each source gets its
// fair share within 5 % (served byte for byte). Without credits the
// egress queue overflows.
func Incast(seed uint64) (*scenario.Result, error) {
	r, done := begin("incast", seed)
	for _, n := range []int{3, 16} {
		p := fmt.Sprintf("incast%d_", n)
		// Shares are counted in 16 KiB credits: the window must hold
		// enough of them per source that one more or less stays within
		// the tolerance (3→1: 76 each in 30 ms; 16→1: 52 in 110 ms).
		offer := 40 * ms
		if n > 3 {
			offer = 120 * ms
		}
		on, err := incastRun(r, seed, n, true, nil, offer)
		if err != nil {
			return nil, err
		}
		r.Add(p+"fabric_drops", float64(on.fabric), 0, 0, "credits: no cell lost in the fabric")
		r.Add(p+"egress_drops", float64(on.egress), 0, 0, "credits: no frame lost at the egress port")
		r.Add(p+"port_busy", on.busy, 0.95, nan, "credits: the destination port stays busy")
		r.Add(p+"share_dev", on.maxDev, 0, 0.05, "credits: every source within 5 % of its fair share")
		r.Report(p+"voq_drops", float64(on.voq), "the sources' VOQs drop the excess at ingress")
		r.Report(p+"max_voq_bytes", float64(on.maxVOQ), "the largest VOQ backlog when the offer stops")
		off, err := incastRun(r, seed, n, false, nil, 40*ms)
		if err != nil {
			return nil, err
		}
		if n == 3 {
			r.Add(p+"push_egress_drops", float64(off.egress), 1, nan, "without credits the egress queue overflows")
		} else {
			// 16 Gbit/s into links of 2: the fabric drops 7 cells in 8
			// and few frames survive whole to fill the port.
			r.Report(p+"push_egress_drops", float64(off.egress), "without credits: frames lost at the egress port")
		}
		r.Report(p+"push_fabric_drops", float64(off.fabric), "without credits: cells lost in the fabric")
		r.Report(p+"push_goodput", off.delivered/hostRate, "without credits: the port's goodput share")
	}
	return done(), nil
}

// CreditLoss runs the 3→1 incast with 10 % of the credit requests and
// grants lost on every link: the port's throughput must stay at least 0.9
// of the loss-free run's and, once the offer stops, every VOQ must drain
// (no deadlock: a lost request or grant is repaired by the next refresh).
func CreditLoss(seed uint64) (*scenario.Result, error) {
	r, done := begin("creditloss", seed)
	base, err := incastRun(r, seed, 3, true, nil, 40*ms)
	if err != nil {
		return nil, err
	}
	tl := &TypeLoss{}
	tl.P[10], tl.P[11] = 0.1, 0.1
	lossy, err := incastRun(r, seed, 3, true, tl, 40*ms)
	if err != nil {
		return nil, err
	}
	r.Add("throughput_ratio", lossy.delivered/base.delivered, 0.9, nan, "≥ 0.9 of the loss-free run")
	r.Add("backlog_left", float64(lossy.backlogLeft), 0, 0, "every VOQ drained after the offer: no deadlock")
	r.Add("unsent_bytes", float64(lossy.unsentVOQ), 0, 0, "every byte requested was granted and sent")
	r.Add("fabric_drops", float64(lossy.fabric), 0, 0, "no cell lost")
	r.Add("egress_drops", float64(lossy.egress), 0, 0, "no frame lost at the egress port")
	r.Report("port_busy_lossfree", base.busy, "")
	r.Report("port_busy_lossy", lossy.busy, "")
	return done(), nil
}

// PushPull is Stardust §5.2 on fabric3: e3's ports A and B; e1 sends
// 1 Gbit/s to A and 0.95 Gbit/s to B, e2 1 Gbit/s to A, Poisson. The four
// links into e3 carry 6 % more than A and B can drain (cell headers
// counted): room for the credits' 2 % speed-up and some queueing; the other
// links twice that. In push the links into e3 are oversubscribed about 3:2
// and drop A's and B's cells alike, so B gets about 2/3 of its offer (the
// links' capacity over the offer: predicted, ±0.05 for the drop process);
// in pull A's sources get half A's rate each and B all of its own, so B
// loses nothing.
func PushPull(seed uint64) (*scenario.Result, error) {
	r, done := begin("pushpull", seed)
	const size = 1400 // one cell per frame: a lost cell is a lost frame
	// Wire bytes per frame on a host port and as a cell on a fabric link.
	hostWire := float64(size + 24)
	cellWire := float64(cellify.CellFrameLen(size+cellify.RecordHeaderLen+1) + 24)
	lr := 1.06 * 2 * hostRate / 4 * cellWire / hostWire
	// B offers 95 % of its port: in pull its VOQ then never holds a
	// growing backlog, and B's share of its offer reads 1.
	const bRate = 0.95 * hostRate
	predicted := 4 * lr * hostWire / cellWire / (2*hostRate + bRate)
	for _, credits := range []bool{false, true} {
		s := New(Config{Seed: seed, Node: func(_ *Node, c *cellify.NodeConfig) { c.Credits = credits }})
		t := Fabric3(s, LinkConfig{Rate: lr, Delay: linkDelay}, HostConfig{Rate: hostRate}, [3]int{2, 1, 2})
		// Only the links into e3 are narrow: e1's uplinks at the same rate
		// would run at 97 % and smooth e1's cells, which then fare better
		// than e2's at the tail-drop queues into e3.
		for _, l := range t.Links {
			if l.AB.From.Name != "e3" {
				l.AB.rate, l.BA.rate = 2*lr, 2*lr
			}
		}
		h1a, h1b, h2, hA, hB := t.Hosts[0], t.Hosts[1], t.Hosts[2], t.Hosts[3], t.Hosts[4]
		// The sources' own ports are faster than their 1 Gbit/s Poisson
		// offer, so that it reaches e1 and e2 still Poisson (a port
		// backlogged at 100 % would pace it into lockstep with the
		// fabric links).
		for _, h := range []*Host{h1a, h1b, h2} {
			h.cfg.Rate = 1.25 * hostRate
		}
		if err := s.Start(); err != nil {
			return nil, err
		}
		fa1 := s.AddFlow(FlowConfig{Src: h1a, Dst: hA, Size: size, Rate: hostRate, Poisson: true, Stop: s.Now + 40*ms})
		fb := s.AddFlow(FlowConfig{Src: h1b, Dst: hB, Size: size, Rate: bRate, Poisson: true, Stop: s.Now + 40*ms})
		fa2 := s.AddFlow(FlowConfig{Src: h2, Dst: hA, Size: size, Rate: hostRate, Poisson: true, Stop: s.Now + 40*ms})
		w := measure(s, s.Now+10*ms, s.Now+40*ms, []*Flow{fa1, fb, fa2}, []*Host{hA, hB})
		s.RunFor(60 * ms)
		account(r, s)
		// B's share of what its host handed to e1 in the window (a
		// Poisson source at the full host rate offers a little more or
		// less than the rate).
		b := w.rate(1) / w.offered(1)
		a := (w.rate(0) + w.rate(2)) / hostRate
		if credits {
			r.Add("pull_b_share", b, 0.97, nan, "pull: B gets its whole offer")
			r.Add("pull_a_busy", w.busy(0), 0.95, nan, "pull: port A stays busy")
			r.Add("pull_fabric_drops", float64(fabricCellDrops(s)), 0, 0, "pull: nothing lost in the fabric")
		} else {
			r.Report("push_b_predicted", predicted, "the links' capacity into e3 over the offer")
			r.Add("push_b_share", b, predicted-0.05, predicted+0.05, "push: B loses what the oversubscribed links drop (≈ 2/3)")
			r.Report("push_a_share", a, "push: A's port")
			r.Report("push_fabric_drops", float64(fabricCellDrops(s)), "push: cells lost in the fabric")
		}
	}
	return done(), nil
}

// LoopJump runs the 3→1 incast with every link's delay 50 µs, then 10×
// that from 20 ms on: the credit loop's round trip (grant out, cells back:
// four link crossings) goes from about 0.3 ms to 2 ms. The credit in
// flight must follow the measured round trip so that the port stays busy
// after the jump, while the egress queue stays within the scheduler's
// in-flight bound (which no arrival of every credit outstanding at once
// can exceed) and nothing is lost.
func LoopJump(seed uint64) (*scenario.Result, error) {
	r, done := begin("loopjump", seed)
	const n, d0, jumpAt, offer = 3, 50 * us, 20 * ms, 80 * ms
	s := New(Config{Seed: seed})
	lc := LinkConfig{Rate: linkRate, Delay: d0}
	t, flows, err := incast(s, n, lc, 1500, hostRate, offer)
	if err != nil {
		return nil, err
	}
	dst := t.Hosts[n]
	before := measure(s, s.Now+5*ms, s.Now+jumpAt, flows, []*Host{dst})
	// After the jump: from when the first cells of the longer loop are
	// due (the loop itself, and the standing queue it drains meanwhile).
	after := measure(s, s.Now+jumpAt+5*ms, s.Now+offer, flows, []*Host{dst})
	sched := dst.Edge.Scheduler(dst.Port)
	var rttBefore, rttAfter, flyBefore, flyAfter float64
	s.At(s.Now+jumpAt, func() {
		st := sched.Loop()
		rttBefore, flyBefore = float64(st.RTT), float64(st.InFlight)
		for _, l := range t.Links {
			l.SetDelay(10 * d0)
		}
	})
	maxEgressBefore := 0
	s.At(s.Now+jumpAt+5*ms, func() { maxEgressBefore = dst.Stats.MaxEgress })
	s.At(s.Now+offer-ms, func() {
		st := sched.Loop()
		rttAfter, flyAfter = float64(st.RTT), float64(st.InFlight)
	})
	s.RunFor(offer + 60*ms)
	account(r, s)
	bound := float64(sched.Config().MaxInFlight)
	r.Add("fabric_drops", float64(fabricCellDrops(s)), 0, 0, "no cell lost in the fabric")
	r.Add("egress_drops", float64(dst.Stats.EgressDrops), 0, 0, "no frame lost at the egress port")
	r.Add("port_busy_before", before.busy(0), 0.95, nan, "short loop: the port stays busy")
	r.Add("port_busy_after", after.busy(0), 0.95, nan, "10× the loop: the port stays busy")
	r.Add("max_egress_bytes", float64(dst.Stats.MaxEgress), 0, bound, "the egress queue stays within the in-flight bound")
	r.Report("max_egress_bytes_before", float64(maxEgressBefore), "")
	r.Report("inflight_bound_bytes", bound, "the scheduler's bound on egress queue + credit in flight")
	r.Report("rtt_before_us", rttBefore/1e3, "the credit loop's measured round trip before the jump")
	r.Report("rtt_after_us", rttAfter/1e3, "... after it")
	r.Report("inflight_before_bytes", flyBefore, "credit in flight before the jump")
	r.Report("inflight_after_bytes", flyAfter, "... after it")
	return drained(r, s, t, "loopjump", done)
}

// HeldCells: one source at the host rate into a port whose buffer is the
// scheduler's in-flight bound (256 KiB), over a 1 ms credit loop; for 20 ms
// the cells that one of the two fabric nodes sends to the destination edge
// are held (that node kept from running), and meanwhile the reassembly
// holds the cells that came the other way, waiting for the first hole.
// When the node runs again everything arrives at once: the cells held in
// the reassembly must have counted against the window, so that the
// egress queue stays within its buffer and nothing is lost.
func HeldCells(seed uint64) (*scenario.Result, error) {
	r, done := begin("heldcells", seed)
	const buf, pauseAt, pause, offer = 256 << 10, 20 * ms, 20 * ms, 60 * ms
	s := New(Config{Seed: seed, WarmUp: 20 * ms, Node: func(_ *Node, c *cellify.NodeConfig) {
		c.Sched.MaxInFlight = buf
		c.Reasm.Timeout = 100 * ms // the hole waits for the paused node
	}})
	lc := LinkConfig{Rate: linkRate, Delay: 250 * us}
	t := Clos(s, ClosConfig{Edges: 2, Uplinks: 4, Tier1: 2, Link: lc, Host: HostConfig{Rate: hostRate, Buffer: buf}})
	if err := s.Start(); err != nil {
		return nil, err
	}
	src, dst := t.Hosts[0], t.Hosts[1]
	f := s.AddFlow(FlowConfig{Src: src, Dst: dst, Size: 1500, Rate: hostRate, Stop: s.Now + offer})
	w := measure(s, s.Now+5*ms, s.Now+pauseAt, []*Flow{f}, []*Host{dst})
	s.At(s.Now+pauseAt, func() {
		for _, d := range t.Fabric[0].Ports() {
			if d.To == dst.Edge {
				d.Pause(s.Now + pause)
			}
		}
	})
	var peakHeld uint64
	for at := pauseAt; at < pauseAt+pause; at += ms {
		s.At(s.Now+at, func() { peakHeld = max(peakHeld, dst.Edge.ReasmStats().BufferedBytes) })
	}
	s.RunFor(offer + 200*ms)
	account(r, s)
	r.Add("fabric_drops", float64(fabricCellDrops(s)), 0, 0, "no cell lost in the fabric")
	r.Add("egress_drops", float64(dst.Stats.EgressDrops), 0, 0, "no frame lost at the egress port")
	r.Add("max_egress_bytes", float64(dst.Stats.MaxEgress), 0, buf, "the egress queue stays within its buffer")
	r.Add("reasm_discards", float64(dst.Edge.ReasmStats().DiscardedRecords), 0, 0, "the hole waited for the paused node")
	r.Add("port_busy_before", w.busy(0), 0.95, nan, "the port is busy before the pause")
	r.Report("reasm_held_peak_bytes", float64(peakHeld), "the reassembly's cells during the pause")
	return drained(r, s, t, "heldcells", done)
}

// LossyLinks: one source at the host rate over fabric links that lose 5 %
// of the cells (no LinkGuardian): the reassembly skips the holes, and the
// credit those cells carried must leave the credit in flight with them, or
// the window fills with credit that never arrives and the port starves
// (at 5 % a 512 KiB window is gone in about 90 ms).
func LossyLinks(seed uint64) (*scenario.Result, error) {
	r, done := begin("lossylinks", seed)
	const offer = 200 * ms
	s := New(Config{Seed: seed})
	tl := &TypeLoss{}
	tl.P[9] = 0.05
	lc := LinkConfig{Rate: linkRate, Delay: linkDelay, Loss: tl}
	t := Clos(s, ClosConfig{Edges: 2, Uplinks: 4, Tier1: 2, Link: lc, Host: HostConfig{Rate: hostRate}})
	if err := s.Start(); err != nil {
		return nil, err
	}
	src, dst := t.Hosts[0], t.Hosts[1]
	f := s.AddFlow(FlowConfig{Src: src, Dst: dst, Size: 1500, Rate: hostRate, Stop: s.Now + offer})
	early := measure(s, s.Now+5*ms, s.Now+50*ms, []*Flow{f}, []*Host{dst})
	late := measure(s, s.Now+offer-50*ms, s.Now+offer, []*Flow{f}, []*Host{dst})
	s.RunFor(offer + 300*ms)
	account(r, s)
	sc := dst.Edge.Scheduler(dst.Port)
	r.Add("egress_drops", float64(dst.Stats.EgressDrops), 0, 0, "no frame lost at the egress port")
	r.Report("port_busy_early", early.busy(0), "the first 50 ms")
	r.Add("port_busy_late", late.busy(0), 0.9*early.busy(0), nan, "the last 50 ms: as busy as at the start (the lost cells' credit is not held)")
	r.Report("lost_credit_bytes", float64(sc.Stats.LostBytes), "credit in flight given up with the holes skipped")
	r.Report("expired_credit_bytes", float64(sc.Stats.ExpiredBytes), "credit in flight taken for lost after InFlightExpire")
	r.Add("inflight_left", float64(sc.Loop().InFlight), 0, 0, "nothing in flight once every source went quiet")
	return accounted(s, "lossylinks", done)
}

// StalledSource: the 3→1 incast, and for 20 ms one source's edge is kept
// from running (both directions of its uplinks hold their frames: its
// grants wait, its cells wait). The other two sources can fill the port
// alone: the credit the stalled source cannot use must go to them, so
// that the port stays busy through the stall; when the stalled edge runs
// again its cells and everything else stay within the egress buffer.
func StalledSource(seed uint64) (*scenario.Result, error) {
	r, done := begin("stalledsource", seed)
	const n, stallAt, stall, offer = 3, 20 * ms, 20 * ms, 60 * ms
	s := New(Config{Seed: seed, WarmUp: 10 * ms})
	lc := LinkConfig{Rate: linkRate, Delay: 100 * us}
	t, flows, err := incast(s, n, lc, 1500, hostRate, offer)
	if err != nil {
		return nil, err
	}
	dst := t.Hosts[n]
	before := measure(s, s.Now+5*ms, s.Now+stallAt, flows, []*Host{dst})
	// From one loop after the stall began (what was in flight drains).
	during := measure(s, s.Now+stallAt+ms, s.Now+stallAt+stall, flows, []*Host{dst})
	s.At(s.Now+stallAt, func() {
		for _, d := range t.Edges[0].Ports() {
			d.Pause(s.Now + stall)
			d.Link.BA.Pause(s.Now + stall)
		}
	})
	s.RunFor(offer + 100*ms)
	account(r, s)
	bound := float64(dst.Edge.Scheduler(dst.Port).Config().MaxInFlight)
	r.Add("fabric_drops", float64(fabricCellDrops(s)), 0, 0, "no cell lost in the fabric")
	r.Add("egress_drops", float64(dst.Stats.EgressDrops), 0, 0, "no frame lost at the egress port")
	r.Add("max_egress_bytes", float64(dst.Stats.MaxEgress), 0, bound, "the egress queue stays within the in-flight bound")
	r.Add("port_busy_before", before.busy(0), 0.95, nan, "the port is busy before the stall")
	r.Add("port_busy_during", during.busy(0), 0.95, nan, "the two running sources keep it busy through the stall")
	r.Report("stalled_share_during", during.rate(0)/(during.rate(0)+during.rate(1)+during.rate(2)), "the stalled source's share meanwhile")
	return drained(r, s, t, "stalledsource", done)
}

// drained ends a credit scenario: every VOQ drained after the offer (a
// check), then accounted.
func drained(r *scenario.Result, s *Sim, t *Topo, name string, done func() *scenario.Result) (*scenario.Result, error) {
	backlog, _ := t.creditsLeft()
	r.Add("backlog_left", float64(backlog), 0, 0, "every VOQ drained after the offer")
	return accounted(s, name, done)
}

// accounted ends a credit scenario: no buffer lost track of (an error), and
// the wall time.
func accounted(s *Sim, name string, done func() *scenario.Result) (*scenario.Result, error) {
	if err := s.Leaked(name); err != nil {
		return nil, err
	}
	return done(), nil
}
