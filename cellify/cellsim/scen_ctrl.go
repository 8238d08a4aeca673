package cellsim

import (
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// ctrlCount sums the control frames the edges originated and the cells
// they cut.
type ctrlCount struct {
	req, grant, reach, cells uint64
}

func countCtrl(nodes []*Node) ctrlCount {
	var c ctrlCount
	for _, n := range nodes {
		c.req += n.Stats.CreditReqTx
		c.grant += n.Stats.CreditGrantTx
		c.reach += n.Stats.ReachTx
		c.cells += n.Stats.CellsCut
	}
	return c
}

func (c ctrlCount) sub(o ctrlCount) ctrlCount {
	return ctrlCount{c.req - o.req, c.grant - o.grant, c.reach - o.reach, c.cells - o.cells}
}

// ctrlCostRun runs flows from the first n hosts of a fabric to its last
// host, each at rate, for 20 ms, and counts the control frames the edges
// made per cell they cut in the last 15 ms.
func ctrlCostRun(r *scenario.Result, seed uint64, n int, rate float64, size int) (ctrlCount, *Flow, error) {
	s := New(Config{Seed: seed})
	t, flows, err := incast(s, n, LinkConfig{Rate: linkRate, Delay: linkDelay}, size, rate, 20*ms)
	if err != nil {
		return ctrlCount{}, nil, err
	}
	var c0, c1 ctrlCount
	s.At(s.Now+5*ms, func() { c0 = countCtrl(t.Edges) })
	s.At(s.Now+20*ms, func() { c1 = countCtrl(t.Edges) })
	s.RunFor(30 * ms)
	account(r, s)
	if err := s.Leaked("ctrlcost"); err != nil {
		return ctrlCount{}, nil, err
	}
	return c1.sub(c0), flows[0], nil
}

// CtrlCost counts the control frames per data cell the edges make: one
// 0.9 Gbit/s flow of 1500 B frames, one of 200 B frames, and a 3→1 incast
// at the host rate, on a one-tier fabric with credits. Credit requests
// carry cumulative totals, so one per gap (CreditClientConfig.Gap) says as
// much as one per frame. Each simulated frame is a batch of its own; the
// dataplane's batches of frames add no request beyond their first.
func CtrlCost(seed uint64) (*scenario.Result, error) {
	r, done := begin("ctrlcost", seed)
	for _, c := range []struct {
		name       string
		n          int
		rate       float64
		size       int
		maxReqCell float64
	}{
		{"flow1500", 1, 0.9e9, 1500, 0.5},
		{"flow200", 1, 0.9e9, 200, 0.5},
		{"incast3", 3, hostRate, 1500, 0.5},
	} {
		k, f, err := ctrlCostRun(r, seed, c.n, c.rate, c.size)
		if err != nil {
			return nil, err
		}
		cells := float64(max(k.cells, 1))
		r.Add(c.name+"_req_per_cell", float64(k.req)/cells, nan, c.maxReqCell, "credit requests per cell: under one per two cells (one per frame before the request gap)")
		r.Report(c.name+"_grant_per_cell", float64(k.grant)/cells, "credit grants per cell")
		r.Report(c.name+"_reach_per_cell", float64(k.reach)/cells, "REACH frames per cell")
		r.Report(c.name+"_ctrl_per_cell", float64(k.req+k.grant+k.reach)/cells, "control frames per cell")
		if c.n == 1 {
			r.Add(c.name+"_lost", float64(f.Lost()), 0, 0, "no frame lost")
		}
	}
	return done(), nil
}

// incast builds a Clos fabric of n+1 edges over links lc, starts it and
// adds a flow from each of its first n hosts to the last one, of frames
// of size bytes at rate, until offer from now.
func incast(s *Sim, n int, lc LinkConfig, size int, rate float64, offer int64) (*Topo, []*Flow, error) {
	t := Clos(s, ClosConfig{Edges: n + 1, Uplinks: 4, Tier1: 2, Link: lc, Host: HostConfig{Rate: hostRate}})
	if err := s.Start(); err != nil {
		return nil, nil, err
	}
	var flows []*Flow
	for i := range n {
		flows = append(flows, s.AddFlow(FlowConfig{Src: t.Hosts[i], Dst: t.Hosts[n], Size: size, Rate: rate, Stop: s.Now + offer}))
	}
	return t, flows, nil
}
