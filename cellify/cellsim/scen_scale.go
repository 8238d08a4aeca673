package cellsim

import (
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// ScaleConfig sizes the scale scenario.
type ScaleConfig struct {
	Edges, Uplinks, PodEdges, Spines int
	HostRate                         float64 // bits/s
	Speedup                          float64 // fabric capacity over host rate, cell headers counted
	Warm, Measure                    int64   // ns
	Loads                            []float64
	FlowsPerPair                     int // permutation
}

// DefaultScale is the design's 64 edges × 8 uplinks in two tiers: pods of
// 8 edges under 8 tier-1 nodes each, 8 spines; 10 Gbit/s hosts, fabric
// links carrying 5 % more than the hosts (cell headers counted).
func DefaultScale() ScaleConfig {
	return ScaleConfig{Edges: 64, Uplinks: 8, PodEdges: 8, Spines: 8, HostRate: 10e9, Speedup: 1.05,
		Warm: ms, Measure: 2 * ms, Loads: []float64{0.5, 0.8, 0.95}, FlowsPerPair: 8}
}

type scaleRun struct {
	util, meanQ float64
	tail        []float64 // P(q ≥ k), k = 0..
	recvShare   float64   // mean over destinations of received / host rate
	hopDrops    uint64
	noRoute     uint64
	fabricDrops uint64
}

// scaleOnce runs one traffic pattern: uniform (every host to every other
// at load·rate in all, Poisson) or a permutation (perm: each host to
// one other at the full rate, in FlowsPerPair flows).
func scaleOnce(r *scenario.Result, seed uint64, sc ScaleConfig, mode cellify.SprayMode, load float64, perm bool) (*scaleRun, error) {
	const size = 1400 // a frame fits a cell: at low load a VOQ sends one frame a grant
	hostWire := float64(size + 24)
	// Fabric bytes per host byte: a cell per frame.
	ratio := float64(cellify.CellFrameLen(size+cellify.RecordHeaderLen+1)+24) / hostWire
	lr := sc.Speedup * sc.HostRate / float64(sc.Uplinks) * ratio
	s := New(Config{Seed: seed, Node: func(_ *Node, c *cellify.NodeConfig) {
		c.Spray = mode
		if !perm { // 4032 VOQs and streams, each lightly loaded
			c.RingBytes = 16 << 10
			c.Reasm.Window = 31 // 32 slots a stream
		}
	}})
	t := Clos(s, ClosConfig{Edges: sc.Edges, Uplinks: sc.Uplinks, PodEdges: sc.PodEdges, Spines: sc.Spines,
		Link: LinkConfig{Rate: lr, Delay: linkDelay}, Host: HostConfig{Rate: sc.HostRate}})
	if err := s.Start(); err != nil {
		return nil, err
	}
	stop := s.Now + sc.Warm + sc.Measure
	var flows []*Flow
	n := len(t.Hosts)
	if perm {
		// A random permutation without fixed points (Sattolo's algorithm).
		dst := make([]int, n)
		for i := range dst {
			dst[i] = i
		}
		for i := n - 1; i > 0; i-- {
			j := s.Rng.IntN(i)
			dst[i], dst[j] = dst[j], dst[i]
		}
		for i, h := range t.Hosts {
			for range sc.FlowsPerPair {
				flows = append(flows, s.AddFlow(FlowConfig{Src: h, Dst: t.Hosts[dst[i]], Size: size,
					Rate: sc.HostRate / float64(sc.FlowsPerPair), Poisson: true, Stop: stop}))
			}
		}
	} else {
		for i, h := range t.Hosts {
			for j, g := range t.Hosts {
				if i != j {
					flows = append(flows, s.AddFlow(FlowConfig{Src: h, Dst: g, Size: size,
						Rate: load * sc.HostRate / float64(n-1), Poisson: true, Stop: stop}))
				}
			}
		}
	}
	dirs := t.FabricDirs()
	t0, t1 := s.Now+sc.Warm, stop
	busy0 := make([]int64, len(dirs))
	hist := make([]uint64, 512)
	s.At(t0, func() {
		for i, d := range dirs {
			busy0[i] = d.Stats.BusyNs
			d.QHist = hist
		}
	})
	w := measure(s, t0, t1, flows, nil)
	out := &scaleRun{}
	s.At(t1, func() {
		var u float64
		for i, d := range dirs {
			u += float64(d.Stats.BusyNs-busy0[i]) / float64(t1-t0)
			d.QHist = nil
		}
		out.util = u / float64(len(dirs))
	})
	s.Run(t1)
	account(r, s)
	var cnt, sum float64
	for k, c := range hist {
		cnt += float64(c)
		sum += float64(k) * float64(c)
	}
	out.meanQ = sum / cnt
	acc := cnt
	for _, c := range hist {
		out.tail = append(out.tail, acc/cnt)
		acc -= float64(c)
	}
	perDst := map[*Host]float64{}
	for i, f := range flows {
		perDst[f.cfg.Dst] += w.rate(i)
	}
	for _, v := range perDst {
		out.recvShare += v / sc.HostRate
	}
	out.recvShare /= float64(len(perDst))
	for _, nd := range t.Fabric {
		out.hopDrops += nd.Stats.HopDrops
		out.noRoute += nd.Stats.NoRoute
	}
	out.fabricDrops = fabricCellDrops(s)
	return out, nil
}

// md1 is the mean number in an M/D/1 system at utilisation u.
func md1(u float64) float64 { return u + u*u/(2*(1-u)) }

// Scale runs the design's 64 edges × 8 uplinks in two tiers. Uniform
// traffic at three loads: the mean queue of the fabric links (data frames
// queued or on the wire, seen by arriving cells) grows with the
// utilisation and stays at or below M/D/1's at the same utilisation
// (spraying is no worse than random arrivals; ×1.2 for cell sizes that
// vary). Permutation traffic at the full host rate, 8 flows a pair: the
// mean received share with perm spraying is ≥ 0.9 (Stardust Fig. 10: 94 %)
// and hash's is well below (≤ 0.8 × perm's).
func Scale(seed uint64) (*scenario.Result, error) {
	return ScaleWith(seed, DefaultScale())
}

// ScaleWith runs the scale scenario with the given sizes.
func ScaleWith(seed uint64, sc ScaleConfig) (*scenario.Result, error) {
	r, done := begin("scale", seed)
	prevQ := -1.0
	for _, load := range sc.Loads {
		u, err := scaleOnce(r, seed, sc, cellify.SprayPerm, load, false)
		if err != nil {
			return nil, err
		}
		p := fmt.Sprintf("uniform%02.0f_", load*100)
		r.Report(p+"utilisation", u.util, "mean busy share of the fabric links")
		r.Add(p+"mean_queue", u.meanQ, nan, 1.2*md1(u.util), "≤ M/D/1's at this utilisation (×1.2)")
		r.Report(p+"md1_mean_queue", md1(u.util), "M/D/1 at this utilisation")
		r.Report(p+"p_queue_ge_4", u.tail[4], "share of arrivals finding 4 or more cells")
		r.Report(p+"p_queue_ge_16", u.tail[16], "... 16 or more")
		r.Add(p+"hop_and_route_drops", float64(u.hopDrops+u.noRoute), 0, 0, "tiers keep every cell on a route")
		if prevQ >= 0 {
			r.Add(p+"queue_grows", b2f(u.meanQ > prevQ), 1, 1, "the mean queue grows with the load")
		}
		prevQ = u.meanQ
	}
	var permShare float64
	for _, mode := range []cellify.SprayMode{cellify.SprayPerm, cellify.SprayHash} {
		u, err := scaleOnce(r, seed, sc, mode, 1, true)
		if err != nil {
			return nil, err
		}
		p := "perm_traffic_" + mode.String() + "_"
		if mode == cellify.SprayPerm {
			permShare = u.recvShare
			r.Add(p+"mean_utilisation", u.recvShare, 0.9, nan, "Stardust Fig. 10: 94 %")
		} else {
			r.Add(p+"mean_utilisation", u.recvShare, nan, 0.8*permShare, "well below perm's (≤ 0.8×)")
		}
		r.Report(p+"fabric_drops", float64(u.fabricDrops), "")
		r.Report(p+"link_utilisation", u.util, "mean busy share of the fabric links")
	}
	if math.IsNaN(permShare) {
		return nil, fmt.Errorf("scale: no permutation result")
	}
	return done(), nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
