package cellsim

import (
	"errors"
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// stallCredit is the dataplane's credit on a software fabric.
const stallCredit = 64 << 10

// stallCfg sets a node up as the dataplane does on a software fabric:
// 64 KiB credits, up to 8 at once after a late Poll but no more than
// 10 ms of the port's rate, the queue in hand a quarter of the port's
// buffer, the window bounded by the buffer; REACH every 5 ms with 20
// missed to exclude (the caller sets the interval); a hole waits 30 ms.
func stallCfg(buf int) func(*Node, *cellify.NodeConfig) {
	return func(_ *Node, c *cellify.NodeConfig) {
		c.Sched.CreditSize, c.Sched.MaxBurst, c.Sched.MaxBurstTime = stallCredit, 8, 10*ms
		c.Sched.StopAbove = min(4*stallCredit, buf/4)
		c.Sched.MaxInFlight = max(buf, stallCredit)
		c.Client.Quantum = stallCredit
		c.Client.Lead, c.Client.Ahead = 4096, 4096
		c.RingBytes = 2 << 20
		c.Reach.Th, c.Reach.ThUp = 20, 3
		c.Reasm.Timeout = 30 * ms
	}
}

// stallSpan is one node's stall in the stalls scenario.
type stallSpan struct {
	node     func(t *Topo) *Node
	name     string
	at, long int64
}

// Stalls is `cells incast` on a slow machine: two sources at 1 Gbit/s
// into a 100 Mbit/s port with a 2 MiB buffer (fabric3's e1, e2 → e3),
// the dataplane's credit settings, and each node in turn kept from
// running 23-29 ms (a source, the other source, the destination edge, a
// fabric node), as the nodes of a loaded 2-core machine are. Constant-rate
// (UDP-like) sources, and window sources (256 KiB unacknowledged at most:
// TCP's clock without its congestion control). Across every stall nothing
// is lost in the fabric or at the port; the port stays busy through a
// source's stall (the other source alone can fill it) and the fabric
// node's (mostly: by its phase against the grants); a stalled source gets at most one credit meanwhile (credit it
// cannot use idles the port for its time, 5 ms a credit here, and arrives
// after the stall on top of its turns); and in each spell between stalls
// the port stays busy and the two sources share it fairly.
func Stalls(seed uint64) (*scenario.Result, error) {
	r, done := begin("stalls", seed)
	spans := []stallSpan{
		{func(t *Topo) *Node { return t.Edges[0] }, "e1", 300 * ms, 29 * ms},
		{func(t *Topo) *Node { return t.Edges[1] }, "e2", 650 * ms, 25 * ms},
		{func(t *Topo) *Node { return t.Edges[2] }, "e3", 1000 * ms, 23 * ms},
		{func(t *Topo) *Node { return t.Fabric[0] }, "f1", 1350 * ms, 25 * ms},
	}
	const offer = 1700 * ms
	for _, win := range []bool{false, true} {
		p := "rate_"
		if win {
			p = "window_"
		}
		o, err := stallRun(seed, spans, offer, win)
		if err != nil {
			return nil, err
		}
		account(r, o.s)
		r.Add(p+"fabric_drops", float64(o.fabric), 0, 0, "no cell lost in the fabric")
		r.Add(p+"egress_drops", float64(o.egress), 0, 0, "no frame lost at the port")
		r.Report(p+"reasm_discards", float64(o.discards), "records the reassembly gave up")
		for i, w := range o.spells {
			if o.names[i] == "during_"+spans[3].name {
				// Phase decides it: by when the stall falls against the
				// grants, 0.85-1.00 with or without catching up.
				r.Add(p+"busy_"+o.names[i], w.busy(0), 0.85, nan, "the port stays mostly busy: the fabric node's cells leave holes that hold the other's in the reassembly")
				continue
			}
			r.Add(p+"busy_"+o.names[i], w.busy(0), 0.95, nan, "the port stays busy")
			if !o.short[i] {
				r.Add(p+"share_dev_"+o.names[i], shareDev(w), 0, 0.05, "each source within 5 % of its fair share")
			}
		}
		for i, g := range o.granted {
			r.Add(p+"credit_to_stalled_"+o.slept[i], float64(g[1]-g[0]), 0, stallCredit,
				"a stalled source gets at most the credit of the turn that found it with nothing in flight")
		}
		r.Report(p+"busy_during_"+spans[2].name, o.dstStall.busy(0), "the destination's port during its stall (its worker drives it)")
		r.Report(p+"rtt_us", float64(o.loop.RTT)/1e3, "the credit loop's measured round trip at the end")
		r.Report(p+"max_egress_bytes", float64(o.maxEgress), "")
		r.Add(p+"backlog_left", float64(o.backlog), 0, 0, "every VOQ drained after the offer")
	}
	return done(), nil
}

// shareDev is the largest |share·n − 1| of a window's flows.
func shareDev(w *window) float64 {
	var total, dev float64
	for i := range w.flows {
		total += w.rate(i)
	}
	for i := range w.flows {
		dev = math.Max(dev, math.Abs(w.rate(i)/total*float64(len(w.flows))-1))
	}
	return dev
}

type stallOut struct {
	s        *Sim
	spells   []*window
	names    []string
	short    []bool // a stall: too short a spell to weigh shares in 64 KiB credits
	dstStall *window
	// per source stall: the source's name and the credit it was granted
	// during the stall (scheduler totals at its start and end)
	slept                    []string
	granted                  [][2]uint64
	fabric, egress, discards uint64
	backlog                  uint64
	maxEgress                int
	loop                     cellify.LoopStats
}

// stallRun runs the stalls scenario's incast once. The spells measured:
// from a stall's length plus 30 ms after its end (the source stalled
// catches up on the turns it passed, and what the stall held drains) to the
// next stall, a source's stall from 5 ms after it began (the other
// source alone), the fabric node's stall whole (too short to weigh
// shares in 64 KiB credits).
func stallRun(seed uint64, spans []stallSpan, offer int64, win bool) (*stallOut, error) {
	const buf = 2 << 20
	s := New(Config{Seed: seed, ReachInterval: 5 * ms, Node: stallCfg(buf)})
	lc := LinkConfig{Rate: linkRate, Delay: 20 * us, Buffer: 256 << 10}
	t := Clos(s, ClosConfig{Edges: 3, Uplinks: 4, Tier1: 2, Link: lc, Host: HostConfig{Rate: hostRate}})
	dst := t.Hosts[2]
	dst.cfg.Rate, dst.cfg.Buffer = 100e6, buf
	if err := s.Start(); err != nil {
		return nil, err
	}
	var flows []*Flow
	for i := range 2 {
		fc := FlowConfig{Src: t.Hosts[i], Dst: dst, Size: 1500, Rate: hostRate, Stop: s.Now + offer}
		if win {
			fc.Rate, fc.Window, fc.RTO = 0, 256<<10, 200*ms
		}
		flows = append(flows, s.AddFlow(fc))
	}
	o := &stallOut{s: s}
	spell := func(name string, from, to int64, short bool) {
		o.spells = append(o.spells, measure(s, from, to, flows, []*Host{dst}))
		o.names, o.short = append(o.names, name), append(o.short, short)
	}
	t0 := s.Now
	from := t0 + 20*ms
	for _, sp := range spans {
		n := sp.node(t)
		at := t0 + sp.at
		s.At(at, func() { n.Stall(s.Now + sp.long) })
		spell("before_"+sp.name, from, at, false)
		switch {
		case n == dst.Edge:
			o.dstStall = measure(s, at, at+sp.long, flows, []*Host{dst})
		case n.Tier == cellify.TierEdge: // from a loop after it began
			spell("during_"+sp.name, at+5*ms, at+sp.long, true)
			k := len(o.granted)
			o.slept, o.granted = append(o.slept, sp.name), append(o.granted, [2]uint64{})
			sched := dst.Edge.Scheduler(dst.Port)
			s.At(at, func() { _, o.granted[k][0], _ = sched.Totals(n.ID, 0) })
			s.At(at+sp.long, func() { _, o.granted[k][1], _ = sched.Totals(n.ID, 0) })
		default:
			spell("during_"+sp.name, at, at+sp.long, true)
		}
		from = at + 2*sp.long + 30*ms
	}
	spell("end", from, t0+offer, false)
	sched := dst.Edge.Scheduler(dst.Port)
	s.At(t0+offer-ms, func() { o.loop = sched.Loop() })
	s.RunFor(offer + 600*ms) // 4 MiB of VOQs drain at 100 Mbit/s
	o.fabric = fabricCellDrops(s)
	o.egress = dst.Stats.EgressDrops
	o.discards = dst.Edge.ReasmStats().DiscardedRecords
	o.maxEgress = dst.Stats.MaxEgress
	for _, e := range t.Edges {
		o.backlog += e.Credits().Backlog
	}
	return o, s.Leaked("stalls")
}

// UDPStalls is `cells incast`'s UDP arm at its rates: two sources each
// send a burst of 3 MiB at 100 Mbit/s (1400-byte datagrams) into a
// 100 Mbit/s port with a 2 MiB buffer, the dataplane's credit settings,
// and one source is kept from running 30 ms three times during its burst
// (as a loaded machine keeps the nodes' workers). Half of each burst must wait in its source's VOQ (2
// MiB): its room beyond that is what the stalls may take. Each turn a
// stalled source passes goes to the other and is owed back to it once it
// runs again (SchedConfig.CatchUp): nothing is dropped, each VOQ keeps a
// stall's worth of room, and the port is busy and shared fairly over the
// delivery as the experiment measures it (less a tenth at each end).
// Without the catching up each stall left the stalled source's VOQ a
// part of the port fuller for good: its VOQ reached 1.89 MB and the
// shares deviated 12.5 % from fair.
func UDPStalls(seed uint64) (*scenario.Result, error) {
	r, done := begin("udpstalls", seed)
	const (
		buf   = 2 << 20
		rate  = 100e6
		frame = 1400 + 28 + 14 // a datagram's payload, IP and UDP, Ethernet
		burst = 3 << 20
		stall = 30 * ms
	)
	s := New(Config{Seed: seed, ReachInterval: 5 * ms, Node: stallCfg(buf)})
	lc := LinkConfig{Rate: linkRate, Delay: 20 * us, Buffer: 256 << 10}
	t := Clos(s, ClosConfig{Edges: 3, Uplinks: 4, Tier1: 2, Link: lc, Host: HostConfig{Rate: hostRate}})
	dst := t.Hosts[2]
	dst.cfg.Rate, dst.cfg.Buffer = rate, buf
	if err := s.Start(); err != nil {
		return nil, err
	}
	// The sources pace datagrams at the port's rate on the wire.
	span := int64(float64(burst/1400*(frame+s.cfg.Overhead)) * 8e9 / rate)
	t0 := s.Now
	var flows []*Flow
	for i := range 2 {
		flows = append(flows, s.AddFlow(FlowConfig{Src: t.Hosts[i], Dst: dst, Size: frame, Rate: rate * frame / float64(frame+s.cfg.Overhead), Stop: t0 + span}))
	}
	for _, at := range []int64{50 * ms, 120 * ms, 190 * ms} {
		s.At(t0+at, func() { t.Edges[0].Stall(s.Now + stall) })
	}
	// Each flow's bytes received every ms, and each source's VOQ at its
	// fullest.
	const step = ms
	var recv [][2]uint64
	var most [2]uint64
	end := span + 600*ms // the port drains both bursts in about twice the span
	for at := int64(0); at <= end; at += step {
		s.At(t0+at, func() {
			recv = append(recv, [2]uint64{flows[0].Stats.RecvBytes, flows[1].Stats.RecvBytes})
			for i := range most {
				most[i] = max(most[i], t.Edges[i].Credits().Backlog)
			}
		})
	}
	s.RunFor(end + ms)
	account(r, s)
	// The delivery: from the first ms with bytes received to the last.
	first, last := -1, 0
	for i := 1; i < len(recv); i++ {
		if recv[i][0]+recv[i][1] > recv[i-1][0]+recv[i-1][1] {
			if first < 0 {
				first = i - 1
			}
			last = i
		}
	}
	if first < 0 {
		return nil, errors.New("udpstalls: nothing delivered")
	}
	a, b := first+(last-first)/10, last-(last-first)/10
	got := [2]float64{float64(recv[b][0] - recv[a][0]), float64(recv[b][1] - recv[a][1])}
	secs := float64(int64(b-a)*step) / 1e9
	wire := float64(frame+s.cfg.Overhead) / frame
	r.Add("voq_drops", float64(t.Edges[0].Stats.VOQDrops+t.Edges[1].Stats.VOQDrops), 0, 0, "no datagram refused by a source's VOQ")
	r.Add("fabric_drops", float64(fabricCellDrops(s)), 0, 0, "no cell lost in the fabric")
	r.Add("egress_drops", float64(dst.Stats.EgressDrops), 0, 0, "no frame lost at the port")
	r.Add("busy", (got[0]+got[1])*wire*8/rate/secs, 0.95, nan, "the port busy over the delivery less a tenth at each end")
	w := &window{from: 0, to: 1, recv0: []uint64{0, 0}, recvN0: []uint64{0, 0}, recvN: []uint64{0, 0}, recv: []uint64{uint64(got[0]), uint64(got[1])}, flows: flows}
	r.Add("share_dev", shareDev(w), 0, 0.05, "each source within 5 % of its fair share over the same period")
	room := float64(buf) - float64(stall)*rate/8e9
	for i, m := range most {
		r.Add(fmt.Sprintf("voq_max_e%d", i+1), float64(m), 0, room, "each VOQ keeps room for another stall at its source's rate")
	}
	r.Report("caught_up_bytes", float64(dst.Edge.Scheduler(dst.Port).Stats.CaughtUp), "credit granted back to the stalled sources")
	return done(), s.Leaked("udpstalls")
}
