package fecexp

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
)

func TestFECResidualConfigRefuses(t *testing.T) {
	bedtest.RefusesAll(t, []FECResidualConfig{
		{Target: 2}, {Frames: 10}, {Copies: 99}, {MeanBurst: 0.5}, {MinLen: 10}, {Loss: []float64{0}}, {Loss: []float64{1.5}},
	}...)
}

// A small run: every scheme appears, the loss equals the oracle, the JSON
// encodes (no infinities) and the table names the bursty penalty.
func TestFECResidualSimSmall(t *testing.T) {
	cfg := FECResidualConfig{Loss: []float64{1e-2, 5e-2}, Frames: 20000, Copies: 3, MeanBurst: 4, MaxLen: 200}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	res, err := FECResidualSim(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 1e-2: fec(4) and replicate; 5e-2: replicate only; both models.
	if len(res.Points) != 6 {
		t.Fatalf("%d points, want 6", len(res.Points))
	}
	if !res.Summary.LostIsOracle || res.Summary.Corrupt != 0 || !res.Summary.OverheadWithin10 {
		t.Errorf("summary %+v", res.Summary)
	}
	if res.Summary.BurstyWorst < 2 {
		t.Errorf("bursty worst ratio %.2f: bursts should defeat parity", res.Summary.BurstyWorst)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if txt := res.Text(); !strings.Contains(txt, "fec(4)") || !strings.Contains(txt, "replicate×3") {
		t.Errorf("table:\n%s", txt)
	}
}

func TestFECVethConfigRefuses(t *testing.T) {
	bedtest.RefusesAll(t, []FECVethConfig{
		{Target: 2}, {Frames: 10}, {Copies: 1}, {MeanBurst: 0.5}, {Rate: 10}, {Payload: 16}, {Arms: []string{"fec", "bogus"}}, {Loss: []float64{0}},
	}...)
	var c FECVethConfig
	if err := c.Normalize(); err != nil || c.Frames != 100_000 || len(c.Arms) != 4 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

// TestFECRunFramesFigure: each run refuses too few frames naming its own
// default, what the figures use.
func TestFECRunFramesFigure(t *testing.T) {
	bedtest.Refuses(t, bedtest.Refusal[FECVethConfig]{Cfg: FECVethConfig{Frames: 10}, Want: "(10^5 for the figures"})
	bedtest.Refuses(t, bedtest.Refusal[FECResidualConfig]{Cfg: FECResidualConfig{Frames: 10}, Want: "(10^6 for the figures"})
}

// The predicted residual follows the scheme mode fec ran, and the summary's
// check (fec at p 3e-3, target 1e-3) fails on a residual or overhead above
// the check's bounds.
func TestFECVethSummary(t *testing.T) {
	if fecPredicted(FECArmForward, 0, 1, 0.01) != 0.01 || fecPredicted(FECArmLG, 0, 1, 0.01) != -1 {
		t.Fatal("forward predicts p, lg nothing")
	}
	if got, want := fecPredicted(FECArmFEC, 9, 1, 3e-3), 3e-3*(1-math.Pow(1-3e-3, 9)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("fec(9) at 3e-3: %g, want %g", got, want)
	}
	if got := fecPredicted(FECArmReplicate, 0, 3, 0.05); math.Abs(got-1.25e-4) > 1e-12 {
		t.Fatalf("replicate×3 at 0.05: %g, want 1.25e-4", got)
	}
	if fecScheme(0, 1) != "none" || fecScheme(9, 1) != "fec(9)" || fecScheme(0, 3) != "replicate×3" {
		t.Fatal("fecScheme")
	}
	for _, c := range []struct {
		residual, overhead float64
		pass               bool
	}{{1e-4, 1.11, true}, {3e-3, 1.11, false}, {1e-4, 1.2, false}} {
		r := &FECVethResult{Config: FECVethConfig{Target: 1e-3, Frames: 100_000}}
		for run := 1; run <= 3; run++ {
			r.Points = append(r.Points,
				FECVethPoint{Arm: FECArmForward, Loss: 3e-3, Model: "bernoulli", Run: run, Residual: 3e-3, Predicted: 3e-3, Overhead: 1.0},
				FECVethPoint{Arm: FECArmFEC, Loss: 3e-3, Model: "bernoulli", Run: run, Residual: c.residual, Predicted: 1e-4, Overhead: c.overhead, Scheme: "fec(9)", N: 9})
		}
		r.summarize()
		if r.Summary["pass"] != c.pass || r.Summary["fec_check_residual"] != c.residual {
			t.Errorf("residual %g overhead %g: summary %v, want pass %v", c.residual, c.overhead, r.Summary, c.pass)
		}
		// 10 losses expected in 10^5: compared with the formula.
		if within := c.residual <= 2e-4; r.Summary["fec_within_2x"] != within {
			t.Errorf("residual %g against 1e-4 predicted: within 2x %v, want %v", c.residual, r.Summary["fec_within_2x"], within)
		}
		if txt := r.Text(); !strings.Contains(txt, "fec(9)") || !strings.Contains(txt, "forward") {
			t.Errorf("table:\n%s", txt)
		}
	}
}

// On veth, at a small size: every arm delivers, fec runs parity and lg
// repairs, the table and JSON come out. Figures are the command's to
// report, not asserted beyond sanity.
func TestFECResidualVethSmall(t *testing.T) {
	netns.RequireRoot(t)
	ctx := bedtest.Context(t, 4*time.Minute)
	e := bedtest.Env(t, "lfr")
	res := bedtest.Run(t, ctx, FECResidualVeth, e, FECVethConfig{Loss: []float64{1e-2}, Frames: 5000, Warmup: 12000, Rate: 50e6, Arms: []string{FECArmForward, FECArmFECGiven, FECArmLG}})
	if len(res.Points) != 3 {
		t.Fatalf("%d points, want 3", len(res.Points))
	}
	for _, p := range res.Points {
		if p.Sent != 5000 || p.Received < 4800 || p.LinkLoss <= 0 || p.Overhead < 1 || p.P50Us <= 0 {
			t.Errorf("%s: %s", p.Arm, p.line())
		}
	}
	if fg := res.Points[1]; fg.N == 0 || fg.Overhead < 1.05 {
		t.Errorf("fec-given at 1e-2 ran %s with overhead %.3f: want parity", fg.Scheme, fg.Overhead)
	}
	if lg := res.Points[2]; lg.Residual > 1e-3 {
		t.Errorf("lg left %g of 1e-2", lg.Residual)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}
