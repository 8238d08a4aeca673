package cellsim

import (
	"math"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// Packing sends frames of random sizes 60–9000 B through a 4-link bundle
// whose links have different delays (cells of a stream arrive out of
// order), at cell payloads from 64 B up, packed, with credits: every frame
// must arrive exactly once and in order.
func Packing(seed uint64) (*scenario.Result, error) {
	r, done := begin("packing", seed)
	var sent, lost, dup, reord uint64
	var cellsPerFrame []float64
	for i, cp := range []int{64, 100, 256, 1000, 1460, 4000} {
		s := New(Config{Seed: seed + uint64(i), Node: func(_ *Node, c *cellify.NodeConfig) {
			c.CellPayload = cp
			c.Reasm.Window = 4096
		}})
		t := &Topo{}
		e1, e2 := s.AddEdge("e1"), s.AddEdge("e2")
		for l := range 4 {
			t.Links = append(t.Links, s.Connect(e1, e2, LinkConfig{Rate: linkRate, Delay: int64(1+l*l*3) * us, Buffer: 1 << 20}))
		}
		h1, h2 := s.AddHost(e1, HostConfig{Rate: hostRate}), s.AddHost(e2, HostConfig{Rate: hostRate})
		if err := s.Start(); err != nil {
			return nil, err
		}
		// Cells of 64 B carry 40 B of header: the bundle's 2 Gbit/s carries
		// about 0.5 Gbit/s of frames then. Offer 0.3 Gbit/s.
		f := s.AddFlow(FlowConfig{Src: h1, Dst: h2, Size: 60, SizeMax: 9000, Rate: 0.3e9, Stop: s.Now + 60*ms})
		s.RunFor(80 * ms)
		account(r, s)
		sent += f.Stats.Sent
		lost += f.Lost()
		dup += f.Stats.Dup
		reord += f.Stats.Reordered
		cellsPerFrame = append(cellsPerFrame, float64(e1.Stats.CellsCut)/float64(f.Stats.Sent))
		if err := s.Leaked("packing"); err != nil {
			return nil, err
		}
	}
	r.Add("frames", float64(sent), 2000, nan, "frames sent over all cell sizes")
	r.Add("lost", float64(lost), 0, 0, "every frame arrives")
	r.Add("duplicated", float64(dup), 0, 0, "... once")
	r.Add("out_of_order", float64(reord), 0, 0, "... in order")
	r.Report("cells_per_frame_c64", cellsPerFrame[0], "cells cut per frame at 64 B of payload")
	r.Report("cells_per_frame_c1460", cellsPerFrame[4], "... at 1460 B")
	return done(), nil
}

// Balance runs a 4-link bundle at 0.9 of the host rate for 200 ms with
// frames of random sizes and reports, per spray mode, max/mean of the cell
// bytes per link. perm must be within 2 % (its round-robin differs by at
// most a cell per link per round).
func Balance(seed uint64) (*scenario.Result, error) {
	r, done := begin("balance", seed)
	for _, mode := range []cellify.SprayMode{cellify.SprayPerm, cellify.SprayP2C, cellify.SprayHash} {
		s := New(Config{Seed: seed, Node: func(_ *Node, c *cellify.NodeConfig) { c.Spray = mode }})
		t := Bundle(s, 4, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate})
		if err := s.Start(); err != nil {
			return nil, err
		}
		s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 64, SizeMax: 1500, Rate: 0.9e9, Stop: s.Now + 200*ms})
		s.RunFor(205 * ms)
		account(r, s)
		var sum, top float64
		for _, l := range t.Links {
			b := float64(l.AB.Stats.TxCellBytes)
			sum += b
			top = math.Max(top, b)
		}
		ratio := top / (sum / float64(len(t.Links)))
		switch mode {
		case cellify.SprayPerm:
			r.Add("max_over_mean_perm", ratio, 1, 1.02, "Stardust's permutation spraying: ≤ 1.02")
		default:
			r.Report("max_over_mean_"+mode.String(), ratio, "for comparison")
		}
	}
	return done(), nil
}

// Elephants runs, for each of 200 seeds, 4 window-based elephants from h1
// to h2 over a 4-link bundle in hash mode and counts the links that carry
// at least 10 % of the cell bytes. The mean must be 4·(1−(3/4)^4) = 2.734
// within 3 standard errors (the count's standard deviation for 4 flows on
// 4 links is 0.643; over 200 seeds the standard error is 0.045).
func Elephants(seed uint64) (*scenario.Result, error) {
	r, done := begin("elephants", seed)
	const seeds = 200
	var sum, sumPerm float64
	for k := range seeds {
		for _, mode := range []cellify.SprayMode{cellify.SprayHash, cellify.SprayPerm} {
			if mode == cellify.SprayPerm && k >= 10 {
				continue
			}
			s := New(Config{Seed: seed*1000 + uint64(k), Node: func(_ *Node, c *cellify.NodeConfig) { c.Spray = mode }})
			t := Bundle(s, 4, LinkConfig{Rate: linkRate, Delay: linkDelay}, HostConfig{Rate: hostRate})
			if err := s.Start(); err != nil {
				return nil, err
			}
			for range 4 {
				s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 1500, Window: 64 << 10, Stop: s.Now + 2*ms})
			}
			s.RunFor(4 * ms)
			account(r, s)
			var total float64
			for _, l := range t.Links {
				total += float64(l.AB.Stats.TxCellBytes)
			}
			used := 0
			for _, l := range t.Links {
				if float64(l.AB.Stats.TxCellBytes) >= 0.1*total {
					used++
				}
			}
			if mode == cellify.SprayHash {
				sum += float64(used)
			} else {
				sumPerm += float64(used)
			}
		}
	}
	want := 4 * (1 - math.Pow(0.75, 4))
	se := 0.643 / math.Sqrt(seeds)
	r.Add("links_used_hash", sum/seeds, want-3*se, want+3*se, "4·(1−(3/4)^4) ± 3 standard errors")
	r.Add("links_used_perm", sumPerm/10, 4, 4, "spraying uses every link")
	return done(), nil
}
