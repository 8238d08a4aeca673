package tdmaexp

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
)

func TestQuantilesOf(t *testing.T) {
	var d []time.Duration
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Microsecond)
	}
	q := quantilesOf(d)
	if q.N != 1000 || q.P50 != 500 || q.P99 != 990 || q.P999 != 999 || q.Max != 1000 {
		t.Errorf("quantilesOf(1..1000 µs) = %+v", q)
	}
	if q := quantilesOf(nil); q != (Quantiles{}) {
		t.Errorf("quantilesOf(nil) = %+v", q)
	}
}

func TestRecommendGuard(t *testing.T) {
	// 1514-byte frames at 200 Mbit/s take (1514+24)·8/200e6 = 61.52 µs.
	if g := recommendGuard(47, 1514, 200e6); g != 110 {
		t.Errorf("guard for p99.9 47 µs, 1514 B at 200M = %v µs, want 110", g)
	}
	if g := recommendGuard(0, 9014, 100e6); g != 730 { // 723.0 µs
		t.Errorf("guard for one 9014 B frame at 100M = %v µs, want 730", g)
	}
}

func TestSpreadOf(t *testing.T) {
	sent := []int64{1000, 2000, 3000}
	rx := []int64{
		1010, 1050, 1030, // spread 40
		2020, 0, 2025, // one grant lost: no spread
		3005, 3006, 3100, // spread 95
	}
	spreads, delivery, lost := spreadOf(rx, sent, 3)
	if lost != 1 || len(spreads) != 2 || spreads[0] != 40 || spreads[1] != 95 {
		t.Errorf("spreads %v, lost %d: want [40 95], 1", spreads, lost)
	}
	if len(delivery) != 8 || delivery[0] != 10 || delivery[3] != 20 || delivery[7] != 100 {
		t.Errorf("delivery %v", delivery)
	}
}

func TestReactLags(t *testing.T) {
	ev := []reactEvent{
		{Kind: 'u', Seq: 1, T: 0},
		{Kind: 'p', Seq: 2, T: 1000},
		{Kind: 'u', Seq: 3, T: 2000},
		{Kind: 't', Seq: 4, T: 3000, Req: 400},
		{Kind: 'p', Seq: 5, T: 4000},
		{Kind: 'u', Seq: 6, T: 5000}, // the sender never came back: no sample
	}
	rx := []int64{
		30, 500, 990, // resume 30; stop at 990 − 1000 = −10
		2040, 2900, 3010, 3020, // resume 40; the timed pause stops after 3020
		3450, 3990, 4015, // back 50 after the 400 asked: deviation 50; stop 15
	}
	stop, resume, dev := reactLags(ev, rx)
	if len(stop) != 2 || stop[0] != -10 || stop[1] != 15 {
		t.Errorf("stop %v, want [-10 15]", stop)
	}
	if len(resume) != 2 || resume[0] != 30 || resume[1] != 40 {
		t.Errorf("resume %v, want [30 40]", resume)
	}
	if len(dev) != 1 || dev[0] != 50 {
		t.Errorf("deviation %v, want [50]", dev)
	}
	seen := []reactSeen{{Seq: 2, Rx: 1004, Seen: 1012}, {Seq: 3, Rx: 2003, Seen: 2090}, {Seq: 9, Rx: 1, Seen: 2}, {Seq: 5, Seen: 4020}}
	sstop, delivery := senderLags(ev, seen)
	if len(sstop) != 2 || sstop[0] != 12 || sstop[1] != 20 {
		t.Errorf("sender stop %v, want [12 20]", sstop)
	}
	if len(delivery) != 2 || delivery[0] != 4 || delivery[1] != 3 {
		t.Errorf("delivery %v, want [4 3] (no kernel time stamp: none)", delivery)
	}
}

func TestTimerSummary(t *testing.T) {
	rows := []TimerRow{
		{Method: TimerSleep, PeriodNs: 1e6, Late: Quantiles{P50: 600}},
		{Method: TimerTicker, PeriodNs: 1e6, Late: Quantiles{P50: 450}},
		{Method: TimerHybrid, PeriodNs: 1e6, Sched: "CFS", Late: Quantiles{P50: 1, P99: 200}},
		{Method: TimerHybridRT, PeriodNs: 1e6, Skipped: "not permitted"},
		{Method: TimerSleep, PeriodNs: 3e5, Late: Quantiles{P50: 1}},
	}
	s := timerSummary(rows, 1e6)
	if s.GoP50us != 450 || s.HybridP99us != 200 || s.HybridSched != "CFS" {
		t.Errorf("summary %+v: want Go p50 450, hybrid (CFS, the RT row skipped) p99 200", s)
	}
}

// probeFigures checks that every figure of q is a finite number ≥ 0, and
// its median > 0 (what both probes measure takes time).
func probeFigures(t *testing.T, what string, q Quantiles) {
	t.Helper()
	for _, v := range []float64{q.P50, q.P99, q.P999, q.Max} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%s: %+v: a figure is not a finite number ≥ 0", what, q)
			return
		}
	}
	if q.N == 0 || q.P50 <= 0 || q.Max < q.P50 {
		t.Errorf("%s: %+v: want samples, a median > 0 and max ≥ median", what, q)
	}
}

// TestTDMAProbeSmall (root, a few seconds): probe timers with few samples
// and probe spread with few batches on a 2-host star give sane figures and
// write their files. No thresholds on the figures: the machine is shared.
func TestTDMAProbeSmall(t *testing.T) {
	netns.RequireRoot(t)
	ctx := bedtest.Context(t, 20*time.Second)
	e := &bed.Env{Prefix: netns.TestPrefix(t, "lfpr"), Progress: bedtest.Writer{T: t}}
	tr := bedtest.Run(t, ctx, TDMAProbeTimers, e, TDMAProbeTimersConfig{Periods: []time.Duration{time.Millisecond}, Samples: 50, RT: 50, Force: true})
	for _, r := range tr.Rows {
		if r.Skipped != "" {
			continue
		}
		if r.Late.N != 50 {
			t.Errorf("%s: %d samples, want 50", r.Method, r.Late.N)
		}
		if r.Method == TimerSleep || r.Method == TimerTicker {
			probeFigures(t, r.Method, r.Late) // a Go timer never wakes on the nanosecond
		}
	}
	sr := bedtest.Run(t, ctx, TDMAProbeSpread, e, TDMAProbeSpreadConfig{Hosts: 2, Rate: 100e6, Burst: 16 << 10, Limit: 64 << 10,
		Loads: []netns.BitRate{0, 50e6}, Frames: []int{1500}, Batches: 100, Interval: time.Millisecond, RT: 60, Force: true})
	if len(sr.Arms) != 2 {
		t.Fatalf("%d arms, want idle and 50M 1500B", len(sr.Arms))
	}
	for _, a := range sr.Arms {
		if a.Complete+a.LostGrants == 0 || a.Complete > a.Batches {
			t.Errorf("%s: %d complete batches of %d, %d grants lost", a.Arm, a.Complete, a.Batches, a.LostGrants)
		}
		probeFigures(t, a.Arm+" spread", a.Spread)
		probeFigures(t, a.Arm+" delivery", a.Delivery)
		if a.GuardUs <= a.Spread.P999 || math.IsInf(a.GuardUs, 0) {
			t.Errorf("%s: guard %v µs for a spread p99.9 of %v µs", a.Arm, a.GuardUs, a.Spread.P999)
		}
	}
	if sr.Arms[1].LoadRate <= 0 {
		t.Errorf("the load arm carried no load: %+v", sr.Arms[1])
	}
	dir := t.TempDir()
	for _, w := range []probeResultFiles{tr, sr} {
		files, err := w.WriteFiles(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("%s: %v, empty or missing", f, err)
			}
		}
	}
}

type probeResultFiles interface {
	WriteFiles(string) ([]string, error)
}
