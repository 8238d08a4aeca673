package lgexp

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/fct"
)

func TestFCTConfigNormalize(t *testing.T) {
	var c FCTConfig
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if len(c.Sizes) != 1 || c.Sizes[0] != 143 || c.FlowsFor(0) != 10000 || c.Tool != "builtin" ||
		strings.Join(c.Arms, ",") != "noloss,loss,lg,lgnb" || c.Timeout != 10*time.Second || c.Seed != 1 {
		t.Fatalf("defaults: %+v", c)
	}
	c = FCTConfig{Sizes: []int64{143, 24387}, Flows: []int{10000, 2000}}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if c.FlowsFor(0) != 10000 || c.FlowsFor(1) != 2000 {
		t.Fatalf("per-size flows: %v", c.Flows)
	}
	bedtest.RefusesAll(t, []FCTConfig{
		{Sizes: []int64{143, 24387, 2e6}, Flows: []int{1, 2}},
		{Flows: []int{0}},
		{Arms: []string{"noloss", "bogus"}},
		{Arms: []string{"lg", "lg"}},
		{Tool: "netperf"},
		{Sizes: []int64{8}},
		{Tool: "iperf", Sizes: []int64{60}},
		{Loss: 1},
		{Loss: 1e-3, Burst: 0.5},
	}...)
	if d := DemoConfig(); d.Normalize() != nil || d.FlowsFor(0) != 10000 || d.FlowsFor(1) != 2000 || d.Loss != 1e-3 || d.RunArgs != nil || d.LinkQueues != 0 {
		t.Fatalf("demo config: %+v", d)
	}
}

func TestFCTTable(t *testing.T) {
	var flows []fct.Flow
	add := func(arm string, us ...int) {
		for i, u := range us {
			flows = append(flows, fct.Flow{Arm: arm, Tool: "builtin", ID: i, Size: 143, FCT: time.Duration(u) * time.Microsecond, Retransmitted: u > 1000})
		}
	}
	add("noloss", 100, 100, 200)
	add("loss", 100, 100, 5000)
	add("lg", 100, 100, 250)
	r := &FCTResult{
		Config: FCTConfig{Sizes: []int64{143}, Flows: []int{3}, Tool: "builtin", Arms: []string{"noloss", "loss", "lg"}},
		CC:     "cubic", Impairment: "bernoulli loss=0.001",
		Arms: []*FCTArm{{Name: "noloss", linkImpair: linkImpair{FramesSeen: 10}}, {Name: "loss", linkImpair: linkImpair{FramesSeen: 10, FramesDropped: 1, ActualLoss: 0.1}},
			{Name: "lg", linkImpair: linkImpair{FramesSeen: 20, FramesDropped: 2, ActualLoss: 0.1}, LostDetected: 2, Recovered: 2, Copies: 2}},
		FCT:   fct.NewResults(flows, ""),
		Flows: flows,
	}
	out := r.Text()
	for _, want := range []string{"3 × 143B flows per arm", "ratio to noloss", "lost detected", "143B: lg/noloss 1.25x, loss/lg 20.0x, loss/noloss 25.0x"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestGoodputConfigNormalize(t *testing.T) {
	var c GoodputConfig
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if c.Duration != 5*time.Second || len(c.Losses) != 5 || strings.Join(c.Arms, ",") != "loss,lg,lgnb" {
		t.Fatalf("defaults: %+v", c)
	}
	bedtest.RefusesAll(t, []GoodputConfig{{Losses: []float64{2}}, {Arms: []string{"kernel"}}, {Duration: time.Millisecond}}...)
}

func TestFCTControlAndCost(t *testing.T) {
	var before, after [2]bed.DPStats
	// sw1 and sw2 run lg; before the flows sw2 had published nothing yet.
	for i := range after {
		after[i].Dataplane.Polls, after[i].Dataplane.Loops = 300, 900
		after[i].Dataplane.Link.TX.Frames = 5000
		after[i].LinkGuardian = new(bed.LGDoc)
		after[i].LinkGuardian.Core.Sender = &bed.LGSenderDoc{DataSent: 100, DummiesSent: 30}
		after[i].LinkGuardian.Core.Receiver = &bed.LGReceiverDoc{ExplicitAcksSent: 20}
	}
	before[0].Dataplane.Polls, before[0].Dataplane.Loops = 100, 100
	before[0].LinkGuardian = new(bed.LGDoc)
	before[0].LinkGuardian.Core.Sender = &bed.LGSenderDoc{DataSent: 50, DummiesSent: 10}
	before[0].LinkGuardian.Core.Receiver = &bed.LGReceiverDoc{ExplicitAcksSent: 10}
	c := controlDelta(&before, &after)
	want := FCTControl{DataFrames: 150, ExplicitAcks: 30, Dummies: 50, Wakeups: 500, Loops: 1700}
	want.ControlPerData, want.WakeupsPerData = 80.0/150, 500.0/150
	if c != want {
		t.Fatalf("lg: got %+v, want %+v", c, want)
	}
	// forward: data frames are the link ports' TX frames.
	for i := range after {
		after[i].LinkGuardian = nil
	}
	before[0].LinkGuardian = nil
	before[0].Dataplane.Link.TX.Frames = 1000
	if c := controlDelta(&before, &after); c.DataFrames != 9000 || c.ExplicitAcks+c.Dummies != 0 || c.Wakeups != 500 {
		t.Fatalf("forward: %+v", c)
	}

	var flows []fct.Flow
	add := func(arm string, us ...int) {
		for i, u := range us {
			flows = append(flows, fct.Flow{Arm: arm, Tool: "builtin", ID: i, Size: 143, FCT: time.Duration(u) * time.Microsecond})
		}
	}
	add("noloss", 100, 100, 200)
	add("noloss-afxdp", 200, 200, 300)
	add("lg-noloss", 300, 300, 400)
	add("lg", 300, 300, 600)
	arms := []string{"noloss", "noloss-afxdp", "lg-noloss", "lg"}
	r := &FCTResult{
		Config: FCTConfig{Sizes: []int64{143}, Flows: []int{3}, Tool: "builtin", Arms: arms},
		Arms: []*FCTArm{{Name: "noloss"}, {Name: "noloss-afxdp"}, {Name: "lg-noloss", Control: c},
			{Name: "lg", Control: FCTControl{DataFrames: 10, ExplicitAcks: 5, Dummies: 5, ControlPerData: 1}}},
		FCT: fct.NewResults(flows, ""),
	}
	if err := r.Config.Normalize(); err != nil {
		t.Fatal(err)
	}
	out := r.Text()
	for _, want := range []string{"143B: p50 lg-noloss/noloss 3.00x, p50 lg-noloss/noloss-afxdp 1.50x, p99.9 lg/lg-noloss 1.50x", "control/data", "1.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestGoodputTextKernelShare: the per-run table shows, for lg arms, the
// kernel's share of what sw1 sent and sw2 delivered (a run whose sending
// stayed with the worker reads as a low "kernel sent"), and dashes for the
// unprotected arm; beside the TCP retransmissions, the frames h1's veth
// dropped.
func TestGoodputTextKernelShare(t *testing.T) {
	r := &GoodputResult{Config: GoodputConfig{Duration: time.Second, Runs: 1, Arms: []string{"loss", "lg"}}, Samples: []*GoodputSample{
		{Arm: "loss", Bps: 5.5e9},
		{Arm: "lg", Bps: 2.4e9, Retransmits: 37, HostVethDrops: 36, KernelSent: 0.612, KernelDelivered: 0.997},
	}}
	r.Table = fct.NewGoodputTable([]fct.GoodputCell{{Arm: "loss", Bps: 5.5e9}, {Arm: "lg", Bps: 2.4e9}}, "loss")
	txt := r.Text()
	if !strings.Contains(txt, "kernel sent") || !strings.Contains(txt, "kernel delivered") {
		t.Fatalf("per-run table has no kernel share columns:\n%s", txt)
	}
	var lg, loss string
	for _, l := range strings.Split(txt, "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 0 && f[0] == "lg" && len(f) >= 14:
			lg = l
		case len(f) > 0 && f[0] == "loss" && len(f) >= 14:
			loss = l
		}
	}
	if f := strings.Fields(lg); len(f) != 15 || f[4] != "37" || f[5] != "36" || f[13] != "61%" || f[14] != "100%" {
		t.Errorf("lg row %q: want 37 TCP retransmissions, 36 h1 veth drops, kernel sent 61%%, delivered 100%%", lg)
	}
	if f := strings.Fields(loss); len(f) != 15 || f[13] != "-" || f[14] != "-" {
		t.Errorf("loss row %q: want dashes for the kernel shares", loss)
	}
}

// TestFCTRounds: --rounds splits each size's flows as evenly as they go,
// advances the loss seed, reverses the arms every other round, folds an
// arm's rounds into one row, and gives LinkGuardian's ratios per round with
// their median.
func TestFCTRounds(t *testing.T) {
	c := FCTConfig{Sizes: []int64{143, 24387}, Flows: []int{10, 3}, Rounds: 3, Seed: 7}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	var got [][]int
	for r := range c.Rounds {
		rc := c.round(r)
		if rc.Seed != 7+uint64(r) || rc.Rounds != 1 {
			t.Fatalf("round %d: seed %d rounds %d", r, rc.Seed, rc.Rounds)
		}
		got = append(got, []int{rc.FlowsFor(0), rc.FlowsFor(1)})
	}
	if want := [][]int{{4, 1}, {3, 1}, {3, 1}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("flows per round: %v, want %v", got, want)
	}
	if bad := (FCTConfig{Flows: []int{2}, Rounds: 3}); bad.Normalize() == nil {
		t.Fatal("2 flows in 3 rounds: no error")
	}
	arms := []string{"noloss", "lg-noloss", "lg"}
	if o := roundOrder(arms, 1); strings.Join(o, ",") != "lg,lg-noloss,noloss" || strings.Join(roundOrder(arms, 2), ",") != "noloss,lg-noloss,lg" {
		t.Fatalf("orders: %v", o)
	}

	a := &FCTArm{Name: "lg", Seconds: 1, linkImpair: linkImpair{FramesSeen: 100, FramesDropped: 1}, LostDetected: 1, Recovered: 1, Copies: 2, RetxDelayP99us: 300,
		Control: FCTControl{DataFrames: 10, Dummies: 2, Wakeups: 5}, sent: 10, fastSent: 10, delivered: 10, fastDelivered: 5}
	a.add(&FCTArm{Name: "lg", Seconds: 2, linkImpair: linkImpair{FramesSeen: 300, FramesDropped: 3}, LostDetected: 3, Recovered: 2, Copies: 2, RetxDelayP99us: 200,
		Control: FCTControl{DataFrames: 30, ExplicitAcks: 2, Wakeups: 15}, sent: 30, fastSent: 20, delivered: 30, fastDelivered: 25})
	if a.Seconds != 3 || a.FramesSeen != 400 || a.ActualLoss != 0.01 || a.LostDetected != 4 || a.Recovered != 3 || a.RetxDelayP99us != 300 ||
		a.Control.DataFrames != 40 || a.Control.ControlPerData != 0.1 || a.Control.WakeupsPerData != 0.5 || a.KernelSent != 0.75 || a.KernelDelivered != 0.75 {
		t.Fatalf("folded arm: %+v", a)
	}

	round := func(nl, l0, l int) []fct.Summary {
		var fl []fct.Flow
		for arm, us := range map[string]int{"noloss": nl, "lg-noloss-afxdp": l0, "lg-afxdp": l} {
			fl = append(fl, fct.Flow{Arm: arm, Size: 143, FCT: time.Duration(us) * time.Microsecond})
		}
		return fct.Summarize(fl)
	}
	r := &FCTResult{Config: FCTConfig{Sizes: []int64{143}, Flows: []int{3}, Rounds: 3, Arms: []string{"noloss", "lg-noloss-afxdp", "lg-afxdp"}},
		Rounds: [][]fct.Summary{round(100, 110, 220), round(100, 130, 130), round(200, 240, 480)}}
	r.RoundRatios = r.roundRatios()
	if len(r.RoundRatios) != 3 {
		t.Fatalf("round ratios: %+v", r.RoundRatios)
	}
	if p50 := r.RoundRatios[0]; p50.Arm != "lg-noloss-afxdp" || p50.Ref != "noloss" || p50.Median != 1.2 || !slices.Equal(p50.Rounds, []float64{1.1, 1.3, 1.2}) {
		t.Fatalf("p50 per round: %+v", p50)
	}
	if p999 := r.RoundRatios[1]; p999.Stat != "p99.9" || p999.Ref != "lg-noloss-afxdp" || p999.Median != 2 {
		t.Fatalf("p99.9 per round: %+v", p999)
	}
	if p999 := r.RoundRatios[2]; p999.Ref != "noloss" || p999.Median != 2.2 {
		t.Fatalf("p99.9 against forward per round: %+v", p999)
	}
	out := r.Text()
	for _, want := range []string{"in 3 interleaved rounds", "round by round (3 rounds", "143B p50 lg-noloss-afxdp/noloss: 1.10, 1.30, 1.20 (median 1.20x)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestGoodputRunRatios: within each run, lg at loss 0 over forward at loss
// 0 and each arm at a loss over itself at loss 0; a run missing a cell
// drops out of that ratio only.
func TestGoodputRunRatios(t *testing.T) {
	cfg := GoodputConfig{Runs: 3, Losses: []float64{0, 1e-3}, Arms: []string{"loss", "lg"}}
	var samples []*GoodputSample
	add := func(arm string, loss float64, gbps ...float64) {
		for i, g := range gbps {
			samples = append(samples, &GoodputSample{Arm: arm, Loss: loss, Run: i + 1, Bps: g * 1e9})
		}
	}
	add("loss", 0, 6, 5, 4)
	add("loss", 1e-3, 3, 2.5, 2)
	add("lg", 0, 4.5, 4.5)
	add("lg", 1e-3, 4.5, 3.6, 4)
	got := goodputRunRatios(samples, cfg)
	var lines []string
	for _, q := range got {
		lines = append(lines, q.String())
	}
	want := []string{
		"loss at 10^-3 ÷ loss at 0: 0.50, 0.50, 0.50 (median 0.50)",
		"lg at 0 ÷ loss at 0: 0.75, 0.90 (median 0.82)",
		"lg at 10^-3 ÷ lg at 0: 1.00, 0.80 (median 0.90)",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if goodputRunRatios(samples, GoodputConfig{Runs: 1, Losses: cfg.Losses, Arms: cfg.Arms}) != nil {
		t.Fatal("one run: ratios")
	}
}
