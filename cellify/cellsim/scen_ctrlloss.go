package cellsim

import (
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// ctrlLossOut is what a control-loss run measured.
type ctrlLossOut struct {
	late        float64 // delivered into the destination in the late window, bits/s
	backlogLeft uint64  // bytes in VOQs at the end
	unsent      uint64  // bytes requested and never sent
	exclusions  uint64
	stopped     uint64 // the destination scheduler's Polls held back by its egress queue
}

// ctrlLossRun runs 2 sources at half the host rate each into one host of a
// one-tier fabric (3 edges, 4 uplinks each over 2 fabric nodes) for 40 ms;
// fault scripts losses on every link through tl from t0 (the flows' start).
// The late window is from 25 ms to 40 ms.
func ctrlLossRun(r *scenario.Result, seed uint64, fault func(s *Sim, t *Topo, tl *TypeLoss, t0 int64)) (*ctrlLossOut, error) {
	s := New(Config{Seed: seed})
	tl := &TypeLoss{}
	t := Clos(s, ClosConfig{Edges: 3, Uplinks: 4, Tier1: 2, Link: LinkConfig{Rate: linkRate, Delay: linkDelay, Loss: tl}, Host: HostConfig{Rate: hostRate}})
	if err := s.Start(); err != nil {
		return nil, err
	}
	t0 := s.Now
	dst := t.Hosts[2]
	var flows []*Flow
	for i := range 2 {
		flows = append(flows, s.AddFlow(FlowConfig{Src: t.Hosts[i], Dst: dst, Size: 1500, Rate: 0.45 * hostRate, Stop: t0 + 40*ms}))
	}
	if fault != nil {
		fault(s, t, tl, t0)
	}
	w := measure(s, t0+25*ms, t0+40*ms, flows, []*Host{dst})
	s.RunFor(60 * ms)
	account(r, s)
	o := &ctrlLossOut{}
	for i := range flows {
		o.late += w.rate(i)
	}
	o.backlogLeft, o.unsent = t.creditsLeft()
	for _, e := range t.Edges {
		for l := range e.Ports() {
			o.exclusions += e.Reach().Link(l).Exclusions
		}
	}
	o.stopped = t.Edges[2].Scheduler(0).Stats.Stopped
	return o, s.Leaked("ctrlloss")
}

// CtrlLoss: lost control frames cost time, never a stall. Two sources at
// 0.45 of the host rate each into one host, with credits; on every link,
// every frame of one kind is lost for a while (grants for 5 ms, requests
// for 5 ms, REACH for 2 ms: links excluded and back), 10 % of REACH
// frames throughout, and every grant for 1.5 ms around the moment the
// destination's egress queue falls below the stop threshold (its port ran
// at 0.3 of its rate for 3 ms): the grant that reopens the VOQs is lost.
// Each run must carry, 10 ms after its losses end, at least 0.95 of the
// loss-free run, and leave no backlog and no byte requested and unsent.
func CtrlLoss(seed uint64) (*scenario.Result, error) {
	r, done := begin("ctrlloss", seed)
	base, err := ctrlLossRun(r, seed, nil)
	if err != nil {
		return nil, err
	}
	const (
		req   = 10
		grant = 11
		reach = 12
	)
	window := func(typ int, p float64, from, to int64) func(*Sim, *Topo, *TypeLoss, int64) {
		return func(s *Sim, _ *Topo, tl *TypeLoss, t0 int64) {
			s.At(t0+from, func() { tl.P[typ] = p })
			s.At(t0+to, func() { tl.P[typ] = 0 })
		}
	}
	for _, c := range []struct {
		name  string
		fault func(*Sim, *Topo, *TypeLoss, int64)
		excl  bool // links are excluded (and must come back)
	}{
		{"grants_5ms", window(grant, 1, 10*ms, 15*ms), false},
		{"requests_5ms", window(req, 1, 10*ms, 15*ms), false},
		{"reach_2ms", window(reach, 1, 10*ms, 12*ms), true},
		{"reach_10pct", window(reach, 0.1, 0, 40*ms), false},
		{"reopen_grant", func(s *Sim, t *Topo, tl *TypeLoss, t0 int64) {
			dst := t.Hosts[2]
			s.At(t0+8*ms, func() { dst.cfg.Rate = 0.3 * hostRate })
			s.At(t0+11*ms, func() { dst.cfg.Rate = hostRate })
			window(grant, 1, 10*ms+500*us, 12*ms)(s, t, tl, t0)
		}, false},
	} {
		o, err := ctrlLossRun(r, seed, c.fault)
		if err != nil {
			return nil, err
		}
		p := c.name + "_"
		r.Add(p+"late_ratio", o.late/base.late, 0.95, nan, "throughput 10 ms after the losses end, over the loss-free run's")
		r.Add(p+"backlog_left", float64(o.backlogLeft), 0, 0, "every VOQ drained: no stall")
		r.Add(p+"unsent_bytes", float64(o.unsent), 0, 0, "every byte requested was granted and sent")
		if c.name == "reopen_grant" {
			r.Add(p+"stopped", float64(o.stopped), 1, nan, "the destination's grants stopped above the egress threshold")
		}
		if c.excl {
			r.Add(p+"exclusions", float64(o.exclusions), 1, nan, "the links left the tables (and came back)")
		} else {
			r.Report(p+"exclusions", float64(o.exclusions), "links excluded")
		}
	}
	return done(), nil
}
