package fecexp

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
)

func TestFECFCTConfig(t *testing.T) {
	bedtest.Refuses(t,
		[]bedtest.Refusal[FECFCTConfig]{
			{Cfg: FECFCTConfig{Arms: []string{"xor"}}, Want: "unknown arm"},
			{Cfg: FECFCTConfig{Gray: []int{0}}, Want: "--gray 0"},
			{Cfg: FECFCTConfig{Loss: 1e-4}, Want: "class 3"},
			{Cfg: FECFCTConfig{Sizes: []int64{1000, 2000}, Flows: []int{1, 2, 3}}, Want: "3 flow counts for 2 sizes"},
			{Cfg: FECFCTConfig{Sizes: []int64{10}}, Want: "at least 16 B"},
		}...)
	var c FECFCTConfig
	if err := c.Normalize(); err != nil || len(c.Arms) != 5 || len(c.Sizes) != 4 || c.FlowsFor(3) != 8 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if c.dscp(10_000) != bed.ClassesDSCP || c.dscp(1_000_000) != 0 {
		t.Fatal("DSCP by size")
	}
	if r := c.bedRun(FECFCTClassesXOR); r.Mode != bed.ModeCells || !strings.Contains(strings.Join(r.Args, " "), "--cells-link-mode fec --fec-target 0.001 --cells-loss-classes default --cells-class-map 5=1") {
		t.Fatalf("classes-xor: %+v", r)
	}
	if r := c.bedRun(FECFCTLG); r.Mode != "lg" || r.SwitchArgs["sw1"][1] != "link1" {
		t.Fatalf("lg: %+v", r)
	}
}

// The ratios are lossy over clean of the same arm and run, medians over
// runs; the check fails on a bin above 1.1 or a run missing.
func TestFECFCTSummary(t *testing.T) {
	sum := func(size int64, mean, p99 time.Duration) fct.Summary {
		return fct.Summary{Size: size, Count: 10, Mean: mean, P99: p99}
	}
	res := &FECFCTResult{Config: FECFCTConfig{Arms: []string{FECFCTNone, FECFCTLG}, Runs: 2, Sizes: []int64{1000, 2000}}}
	for run := 1; run <= 2; run++ {
		res.Runs = append(res.Runs,
			FECFCTRun{Arm: FECFCTLG, Run: run, Summaries: []fct.Summary{sum(1000, 100, 200), sum(2000, 1000, 2000)}},
			FECFCTRun{Arm: FECFCTLG, Run: run, Lossy: true, Summaries: []fct.Summary{sum(1000, 105, 300), sum(2000, 1000+time.Duration(run)*50, 2000)}},
			FECFCTRun{Arm: FECFCTNone, Run: run, Summaries: []fct.Summary{sum(1000, 100, 200), sum(2000, 1000, 2000)}},
			FECFCTRun{Arm: FECFCTNone, Run: run, Lossy: true, Summaries: []fct.Summary{sum(1000, 500, 900), sum(2000, 3000, 9000)}})
	}
	res.summarize()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if m := res.MeanRatio[FECFCTLG]; !near(m[0], 1.05) || !near(m[1], 1.075) || !near(res.P99Ratio[FECFCTLG][0], 1.5) {
		t.Fatalf("lg ratios %v %v", m, res.P99Ratio[FECFCTLG])
	}
	if res.Summary["check_lg"] != true || res.Summary["none_worst_mean_ratio"] != 5.0 {
		t.Fatalf("summary %v", res.Summary)
	}
	res.Runs[1].Summaries[1].Mean = 1200 // run 1's 2000 B bin at 1.2
	res.summarize()
	if res.Summary["check_lg"] != false {
		t.Fatal("a bin above 1.1 passed the check")
	}
	res.Runs = res.Runs[4:] // run 1 gone
	res.Runs[1].Summaries[1].Mean = 1000
	res.summarize()
	if res.Summary["check_lg"] != false {
		t.Fatal("a missing run passed the check")
	}
	if !strings.Contains(res.Text(), "MISSED") {
		t.Fatal(res.Text())
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

// A small veth run: two arms, one run, two sizes; the files are written.
func TestFECFCTVethSmall(t *testing.T) {
	netns.RequireRoot(t)
	ctx := bedtest.Context(t, 4*time.Minute)
	e := bedtest.Env(t, "lfs")
	res := bedtest.Run(t, ctx, FECFCT, e, FECFCTConfig{Arms: []string{FECFCTNone, FECFCTClasses}, Runs: 1, Sizes: []int64{10_000, 1_000_000}, Flows: []int{20, 4}})
	for _, r := range res.Runs {
		if r.Error != "" || len(r.Summaries) != 2 {
			t.Fatalf("%s %v: %q, %d summaries", r.Arm, r.Lossy, r.Error, len(r.Summaries))
		}
		if r.Lossy && r.Dropped == 0 {
			t.Errorf("%s: the gray links dropped nothing", r.Arm)
		}
	}
	// How much less class 1's short flows suffer from the gray links than
	// unprotected cells is a figure of `fec fct` (20 flows on a shared
	// machine decide nothing: lossy ran faster than clean in one run), not
	// an assertion; both arms' ratios must exist.
	if c, n := res.MeanRatio[FECFCTClasses][0], res.MeanRatio[FECFCTNone][0]; c == 0 || n == 0 {
		t.Errorf("10KB mean ratio: classes %.3f, none %.3f: want both measured", c, n)
	}
	dir := t.TempDir()
	paths, err := res.WriteFiles(dir)
	if err != nil || len(paths) != 4 {
		t.Fatalf("%v %v", paths, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "fec-fct-mean.png")); err != nil || st.Size() == 0 {
		t.Fatal(err)
	}
}
