package tdmaexp

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// rpcArms is a summary where every target is met: TDMA's p95 is 10× below
// TCP's and 1.2× the idle network's; the bulk lost 2.5 % for 2 % of slots.
func rpcArms() map[string]RPCArmSumm {
	return map[string]RPCArmSumm{
		"tcp":  {RTTP95us: 5000},
		"tdma": {RTTP95us: 500, BulkAloneBps: 85e6, BulkPingBps: 82.9e6, HitPct: 2.5, SharePct: 2},
		"idle": {RTTP95us: 420},
	}
}

func verdicts(cs []Check) map[string]bool {
	m := map[string]bool{}
	for _, c := range cs {
		m[c.Name] = c.Met
	}
	return m
}

func TestRPCChecks(t *testing.T) {
	const vsTCP, vsIdle, hit = "tdma RTT p95 ÷ tcp RTT p95", "tdma RTT p95 ÷ idle RTT p95", "tdma bulk hit − ping slot share (percentage points)"
	cs := rpcChecks(rpcArms())
	if len(cs) != 3 {
		t.Fatalf("%d checks, want 3: %+v", len(cs), cs)
	}
	for _, c := range cs {
		if !c.Met {
			t.Errorf("%s missed on a summary that meets it: %+v", c.Name, c)
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]RPCArmSumm)
		missed string
	}{
		{"tdma only 2.5× below tcp", func(m map[string]RPCArmSumm) { m["tcp"] = RPCArmSumm{RTTP95us: 1250} }, vsTCP},
		{"tcp arm without samples", func(m map[string]RPCArmSumm) { m["tcp"] = RPCArmSumm{} }, vsTCP},
		{"tdma 1.6× the idle network", func(m map[string]RPCArmSumm) { m["idle"] = RPCArmSumm{RTTP95us: 312} }, vsIdle},
		{"bulk lost 1.5 points beyond the share", func(m map[string]RPCArmSumm) { a := m["tdma"]; a.HitPct = 3.5; m["tdma"] = a }, hit},
		{"no bulk measured", func(m map[string]RPCArmSumm) { a := m["tdma"]; a.BulkAloneBps, a.HitPct = 0, 0; m["tdma"] = a }, hit},
	} {
		m := rpcArms()
		tc.change(m)
		v := verdicts(rpcChecks(m))
		if met, ok := v[tc.missed]; !ok || met {
			t.Errorf("%s: check %q met=%v present=%v, want missed", tc.name, tc.missed, met, ok)
		}
	}
	m := rpcArms()
	delete(m, "tcp")
	delete(m, "idle")
	if cs := rpcChecks(m); len(cs) != 1 {
		t.Errorf("tdma alone: %d checks, want the bulk hit only", len(cs))
	}
	if cs := rpcChecks(map[string]RPCArmSumm{"tcp": {RTTP95us: 1}}); len(cs) != 0 {
		t.Errorf("no tdma arm: %d checks, want none", len(cs))
	}
}

func TestSummarizeRPCMedians(t *testing.T) {
	var runs []RPCArm
	for i, p95 := range []float64{300, 100, 200} {
		runs = append(runs, RPCArm{Arm: "tdma", Run: i + 1, RTT: LatQuantiles{P95us: p95}, BulkAloneBps: 80e6, BulkPingBps: 79e6, HitPct: 1.25, PingSlotSharePct: 1})
		runs = append(runs, RPCArm{Arm: "tcp", Run: i + 1, RTT: LatQuantiles{P95us: 10 * p95}})
	}
	s := summarizeRPC([]string{"tcp", "tdma"}, runs)
	if got := s.Arms["tdma"].RTTP95us; got != 200 {
		t.Errorf("tdma p95 median %v, want 200", got)
	}
	if s.TDMAOverTCPP95 != 0.1 {
		t.Errorf("tdma ÷ tcp %v, want 0.1", s.TDMAOverTCPP95)
	}
	if v := verdicts(s.Checks); !v["tdma RTT p95 ÷ tcp RTT p95"] || !v["tdma bulk hit − ping slot share (percentage points)"] {
		t.Errorf("checks %+v, want both met", s.Checks)
	}
}

func rrArms() map[string][]RRPoint {
	return map[string][]RRPoint{
		"tdma": {{Block: 0.5, MeanOverR: 0.44}, {Block: 1, MeanOverR: 0.8}, {Block: 2, MeanOverR: 0.86}, {Block: 16, MeanOverR: 0.87}},
		"tcp":  {{Block: 0.5, MeanOverR: 0.7}, {Block: 1, MeanOverR: 0.5}, {Block: 2, MeanOverR: 0.4}, {Block: 16, MeanOverR: 0.45}},
	}
}

func TestRRChecks(t *testing.T) {
	cs := rrChecks(rrArms())
	// ≥ 0.85 at 2 and 16; above TCP at 1, 2 and 16; nothing at 0.5, where
	// TCP may win.
	if len(cs) != 5 {
		t.Fatalf("%d checks, want 5: %+v", len(cs), cs)
	}
	for _, c := range cs {
		if !c.Met {
			t.Errorf("%s missed on a summary that meets it", c.Name)
		}
	}
	a := rrArms()
	a["tdma"][2].MeanOverR = 0.84
	if v := verdicts(rrChecks(a)); v["tdma per-host throughput ÷ rate at 2 capacities"] {
		t.Error("0.84 × rate at 2 capacities passed the 0.85 target")
	}
	a = rrArms()
	a["tcp"][1].MeanOverR = 0.8
	if v := verdicts(rrChecks(a)); v["tdma ÷ tcp per-host throughput at 1 capacities"] {
		t.Error("tdma equal to tcp at 1 capacity passed 'above tcp'")
	}
	a = rrArms()
	delete(a, "tcp")
	if cs := rrChecks(a); len(cs) != 2 {
		t.Errorf("without tcp: %d checks, want the two rate targets", len(cs))
	}
}

func TestSummarizeRRMedians(t *testing.T) {
	var runs []RRRun
	for i, v := range []float64{0.9, 0.8, 0.86} {
		runs = append(runs, RRRun{Arm: "tdma", Block: 2, Run: i + 1, MeanOverR: v, MinOverR: v - 0.01})
	}
	s := summarizeRR([]string{"tdma", "tcp"}, []float64{2, 4}, runs)
	if p := s.Arms["tdma"]; len(p) != 1 || p[0].MeanOverR != 0.86 {
		t.Fatalf("tdma points %+v, want one at block 2 with the median 0.86", p)
	}
	if v := verdicts(s.Checks); !v["tdma per-host throughput ÷ rate at 2 capacities"] {
		t.Errorf("checks %+v", s.Checks)
	}
}

func TestProgressRate(t *testing.T) {
	pts := []host.Point{{T: 0, Bytes: 0}, {T: 1e9, Bytes: 1000}, {T: 2e9, Bytes: 3000}}
	if r := progressRate(pts, 5e8, 15e8); r != 1500 {
		t.Errorf("rate over 0.5–1.5 s = %v B/s, want 1500 (500 + 1000 bytes interpolated)", r)
	}
	if r := progressRate(pts, 5e8, 3e9); r != 0 {
		t.Errorf("rate past the series = %v, want 0 (not covered)", r)
	}
}

func TestPingWindowsAndQuantiles(t *testing.T) {
	slot := 5 * time.Millisecond
	var ss []host.PingSample
	for w := int64(0); w < 3; w++ { // three windows 20 ms apart, three requests each
		for k := int64(0); k < 3; k++ {
			open := w * 20e6
			ss = append(ss, host.PingSample{T: open + k*1e6 + 30e3, OffsetUs: float64(k*1000 + 30), RTTUs: float64(10 * (w*3 + k + 1))})
		}
	}
	if n := pingWindows(ss, slot); n != 3 {
		t.Errorf("%d windows, want 3", n)
	}
	rtt, _ := rttQuantiles(ss)
	if rtt.N != 9 || rtt.P50us != 50 || rtt.Maxus != 90 || rtt.P95us != 90 {
		t.Errorf("quantiles %+v, want n 9, p50 50, p95 90, max 90", rtt)
	}
	if q := latQuantilesOf(nil); q.N != 0 {
		t.Errorf("quantiles of nothing: %+v", q)
	}
}

func TestChecksMissNaN(t *testing.T) {
	if c := atMost("x", "≤", math.NaN(), 1); c.Met {
		t.Error("NaN met ≤ 1")
	}
	if c := above("x", ">", math.Inf(1), 1); c.Met {
		t.Error("+Inf met > 1")
	}
	if c := atLeast("x", "≥", 0.85, 0.85); !c.Met {
		t.Error("0.85 missed ≥ 0.85")
	}
}

// TestTCPBaselines (root, a few seconds): the kernel TCP arms of tdma rpc
// and tdma rr on a small shaped star: bulk into h3 is delivered while the
// ping-pong h4 → h3 → h4 gets answers (RTT samples exist, and the bulk's
// queue shows in them), and round-robin blocks reach every host.
func TestTCPBaselines(t *testing.T) {
	netns.RequireRoot(t)
	if testing.Short() {
		t.Skip("root integration test")
	}
	e := &bed.Env{Prefix: netns.TestPrefix(t, "lfrr")}
	tb, err := upStar(e, TDMAStar{Hosts: 4, Rate: 100e6, Burst: 16 << 10, Limit: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Down()
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	recv, wait, err := tcpBulk(ctx, tb, []int{rpcBulk1, rpcBulk2}, rpcServer, rpcBulkPort)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the queue builds
	ss, err := tcpPingPong(ctx, tb, rpcClient, rpcServer, rpcPingPort, 50*time.Millisecond, []time.Duration{0, time.Millisecond})
	wait()
	if err != nil {
		t.Fatal(err)
	}
	rtt, _ := rttQuantiles(ss)
	t.Logf("bulk into h3: %d bytes; ping: %d answers, RTT p50 %.0f µs, max %.0f µs", recv.Load(), rtt.N, rtt.P50us, rtt.Maxus)
	if rtt.N < 5 || recv.Load() < 1<<20 {
		t.Errorf("%d ping answers and %d bulk bytes in 1.5 s", rtt.N, recv.Load())
	}
	rctx, rcancel := context.WithTimeout(t.Context(), time.Second)
	defer rcancel()
	rr, rwait, err := tcpRR(rctx, tb, 4, 20<<10, rrPort)
	if err != nil {
		t.Fatal(err)
	}
	<-rctx.Done()
	rwait()
	for i, c := range rr {
		t.Logf("rr: h%d received %d bytes", i+1, c.Load())
		if c.Load() < 3*20<<10 {
			t.Errorf("h%d received %d bytes of round-robin blocks in 1 s", i+1, c.Load())
		}
	}
}
