package cellsim

import (
	"math"
	"time"

	"github.com/linkfabric/linkfabric/internal/scenario"
)

var nan = math.NaN()

// begin starts the result of scenario name; done records its wall time
// and returns it.
func begin(name string, seed uint64) (r *scenario.Result, done func() *scenario.Result) {
	r = &scenario.Result{Scenario: name, Seed: seed}
	start := time.Now()
	return r, func() *scenario.Result {
		r.Wall = time.Since(start)
		return r
	}
}

// account adds s's simulated time and events to r.
func account(r *scenario.Result, s *Sim) {
	r.SimNs += s.Now
	r.Events += s.Events
}

// Scenarios lists every scenario, in the order of the design study.
func Scenarios() []scenario.Scenario {
	return []scenario.Scenario{
		{Name: "packing", Brief: "random frame sizes 60–9000 B through a bundle at cell sizes from 64 B: every frame once, in order", Run: Packing},
		{Name: "balance", Brief: "bytes per link of a 4-link bundle: max/mean per spray mode", Run: Balance},
		{Name: "elephants", Brief: "4 elephants hashed on a 4-link bundle: links used over seeds (4·(1−(3/4)^4) ≈ 2.73)", Run: Elephants},
		{Name: "incast", Brief: "3→1 with credits: no fabric or egress drop, port busy, fair shares; without: egress overflow", Run: Incast},
		{Name: "loopjump", Brief: "3→1 with credits, the credit loop's delay 10× mid run: port busy, egress queue within bound, nothing lost", Run: LoopJump},
		{Name: "heldcells", Brief: "a fabric node kept from running 20 ms: the reassembly's cells count against the credit window, the port's buffer holds what arrives at once", Run: HeldCells},
		{Name: "lossylinks", Brief: "5 % of the cells lost on the fabric links: the holes skipped give their credit back, the port stays as busy", Run: LossyLinks},
		{Name: "stalledsource", Brief: "one of 3 sources kept from running 20 ms: the others get its credit, the port stays busy", Run: StalledSource},
		{Name: "stalls", Brief: "2→1 into a 100 Mbit/s port, each source, the destination and a fabric node kept from running 23-29 ms in turn: nothing lost, the port busy and shared fairly between stalls", Run: Stalls},
		{Name: "udpstalls", Brief: "cells incast's UDP arm at its rates, one source kept from running 30 ms three times: no VOQ drop, room for a stall left, the port busy and shared fairly", Run: UDPStalls},
		{Name: "pushpull", Brief: "Stardust §5.2 on fabric3: port B's share in push and in pull", Run: PushPull},
		{Name: "creditloss", Brief: "10 % of credit requests and grants lost: no deadlock, throughput vs loss-free", Run: CreditLoss},
		{Name: "linkdeath", Brief: "a link dies mid-flow: loss bounded by what it held; with LinkGuardian none", Run: LinkDeath},
		{Name: "exclusion", Brief: "a lossy link leaves the tables and returns, with hysteresis", Run: Exclusion},
		{Name: "reasm", Brief: "a lost cell: the reassembly timeout discards exactly the records it touched", Run: ReasmTimeout},
		{Name: "fci", Brief: "a fabric bottleneck: FCI lowers the credit rate and the fabric drops", Run: FCI},
		{Name: "ctrlloss", Brief: "every grant, request or REACH lost for a while, 10 % of REACH, the grant reopening a stopped port lost: time, no stall", Run: CtrlLoss},
		{Name: "restart", Brief: "an edge (seqs in each half of the space), a destination, a fabric node restart mid-flow: nothing stale, no wedge", Run: Restart},
		{Name: "ctrlcost", Brief: "control frames per data cell: one flow, small frames, 3→1 incast", Run: CtrlCost},
		{Name: "scale", Brief: "64 edges × 8 uplinks, 2 tiers: queue tail vs load, permutation perm vs hash", Slow: true, Run: Scale},
	}
}

// Find returns the scenario of that name.
func Find(name string) (scenario.Scenario, bool) { return scenario.Find(Scenarios(), name) }

// Common rates of the small scenarios: hosts at 1 Gbit/s, fabric links at
// 500 Mbit/s (the design's fabric3), 1 µs of propagation.
const (
	hostRate  = 1e9
	linkRate  = 500e6
	linkDelay = 1000
	ms        = int64(1_000_000)
	us        = int64(1000)
)

// window measures a set of flows between two times.
type window struct {
	from, to  int64
	recv0     []uint64 // bytes received by each flow at from
	recvN0    []uint64
	recv      []uint64
	recvN     []uint64
	sent0     []uint64
	sent      []uint64
	busy0     []int64 // egress busy of the hosts at from
	busyN     []int64
	hosts     []*Host
	flows     []*Flow
	overheadB int
}

// measure schedules snapshots of flows and hosts at from and to.
func measure(s *Sim, from, to int64, flows []*Flow, hosts []*Host) *window {
	w := &window{from: from, to: to, flows: flows, hosts: hosts, overheadB: s.cfg.Overhead}
	snap := func(bytes, frames *[]uint64, busy *[]int64, sent *[]uint64) {
		for _, f := range flows {
			*bytes = append(*bytes, f.Stats.RecvBytes)
			*frames = append(*frames, f.Stats.Recv)
			*sent = append(*sent, f.Stats.OutBytes+uint64(w.overheadB)*f.Stats.Out)
		}
		for _, h := range hosts {
			*busy = append(*busy, h.Stats.EgressBusyNs)
		}
	}
	s.At(from, func() { snap(&w.recv0, &w.recvN0, &w.busy0, &w.sent0) })
	s.At(to, func() { snap(&w.recv, &w.recvN, &w.busyN, &w.sent) })
	return w
}

// rate returns flow i's received rate in the window, counting wire bytes
// (frame + overhead), in bits/s.
func (w *window) rate(i int) float64 {
	b := float64(w.recv[i]-w.recv0[i]) + float64(w.overheadB)*float64(w.recvN[i]-w.recvN0[i])
	return b * 8e9 / float64(w.to-w.from)
}

// offered returns the rate at which flow i's host handed its frames to
// the edge in the window (wire bytes), bits/s.
func (w *window) offered(i int) float64 {
	return float64(w.sent[i]-w.sent0[i]) * 8e9 / float64(w.to-w.from)
}

// busy returns host i's egress busy share in the window.
func (w *window) busy(i int) float64 {
	return float64(w.busyN[i]-w.busy0[i]) / float64(w.to-w.from)
}

// fabricCellDrops sums the cells lost in the fabric: full queues and the
// loss models (LinkGuardian losses are sent again and not counted).
func fabricCellDrops(s *Sim) uint64 {
	var cells uint64
	for _, d := range s.dirs {
		cells += d.Stats.TailCells
		if !d.lg {
			cells += d.Stats.LostCells
		}
	}
	return cells
}
