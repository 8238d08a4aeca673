package fecexp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
)

// Arms of `linkfabric fec fct` (RAIL's Figure 17 in shape, on the bundle).
const (
	FECFCTNone       = "none"        // bare cells sprayed over every link: no protection
	FECFCTClasses    = "classes"     // loss classes: short flows on the clean class, long ones on every link
	FECFCTClassesXOR = "classes-xor" // the same with XOR parity under the cells (--cells-link-mode fec)
	FECFCTLG         = "lg"          // LinkGuardian alone on one gray link (mode lg, no cells)
	FECFCTCellsLG    = "cells-lg"    // cells over LinkGuardian on every link
)

// FECFCTArms are the arms in their canonical order.
var FECFCTArms = []string{FECFCTNone, FECFCTClasses, FECFCTClassesXOR, FECFCTLG, FECFCTCellsLG}

var fecFCTWhat = map[string]string{
	FECFCTNone:       "bare cells sprayed over every link (no protection)",
	FECFCTClasses:    "loss classes over monitor links: flows up to --short on class 1 (the clean link), longer ones on class 3 (every link)",
	FECFCTClassesXOR: "loss classes over --cells-link-mode fec (XOR parity with n from --fec-target on every link)",
	FECFCTLG:         "LinkGuardian (mode lg) on one gray link, no cells",
	FECFCTCellsLG:    "cells over LinkGuardian (--cells-link-mode lg) on every link",
}

// FECFCTConfig sizes `linkfabric fec fct`.
type FECFCTConfig struct {
	Arms  []string `json:"arms"`
	Runs  int      `json:"runs"`
	Sizes []int64  `json:"sizes"`
	Flows []int    `json:"flows"` // one count for every size, or one per size
	// Warmup flows per size, discarded.
	Warmup int     `json:"warmup"`
	Loss   float64 `json:"loss"`  // on each gray link, sw1→sw2
	Burst  float64 `json:"burst"` // mean loss burst (1: Bernoulli)
	Gray   []int   `json:"gray_links"`
	// Short: flows up to this size get DSCP EF (class 1 in the classes
	// arms); longer ones DSCP 0.
	Short     int64         `json:"short"`
	FECTarget float64       `json:"fec_target"`
	CC        string        `json:"cc"`
	Timeout   time.Duration `json:"flow_timeout"`
	Seed      uint64        `json:"seed"`
	Settle    time.Duration `json:"settle"`
	RunArgs   []string      `json:"run_args,omitempty"`
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *FECFCTConfig) Normalize() error {
	if err := bed.NormalizeArms("fec fct", &c.Arms, FECFCTArms, FECFCTArms); err != nil {
		return err
	}
	c.Runs = bed.Positive(c.Runs, 3)
	if len(c.Sizes) == 0 {
		c.Sizes = []int64{10_000, 100_000, 1_000_000, 10_000_000}
	}
	if len(c.Flows) == 0 {
		c.Flows = []int{200, 100, 30, 8}
		if len(c.Sizes) != 4 {
			c.Flows = []int{50}
		}
	}
	if err := c.mix().Check(); err != nil {
		return fmt.Errorf("fec fct: %w", err)
	}
	for i, s := range c.Sizes {
		if s < fct.HeaderSize || c.FlowsFor(i) < 1 {
			return fmt.Errorf("fec fct: size %d with %d flows: want sizes of at least %d B and a flow or more", s, c.FlowsFor(i), fct.HeaderSize)
		}
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	if err := bed.NormalizeGray("fec fct", &c.Loss, &c.Burst, &c.Gray); err != nil {
		return err
	}
	c.Short = cmp.Or(c.Short, 100_000)
	c.FECTarget = cmp.Or(c.FECTarget, 1e-3)
	c.Timeout = bed.Positive(c.Timeout, 30*time.Second)
	c.Seed = cmp.Or(c.Seed, 1)
	c.Settle = cmp.Or(c.Settle, 20*time.Second)
	return nil
}

// FlowsFor is the flow count of size index i.
func (c *FECFCTConfig) FlowsFor(i int) int { return c.mix().For(i) }

func (c *FECFCTConfig) mix() fct.Mix { return fct.Mix{Sizes: c.Sizes, Flows: c.Flows} }

// dscp is the DSCP of flows of size (EF up to Short).
func (c *FECFCTConfig) dscp(size int64) int {
	if size <= c.Short {
		return bed.ClassesDSCP
	}
	return 0
}

// bedRun is what arm runs on the bundle's switches.
func (c *FECFCTConfig) bedRun(arm string) bed.BedRun {
	classes := []string{"--cells-loss-classes", "default", "--cells-class-map", bed.ClassesMap}
	r := bed.BedRun{Mode: bed.ModeCells}
	switch arm {
	case FECFCTNone:
		r.Args = []string{"--cells-link-mode", "none"}
	case FECFCTClasses:
		r.Args = append([]string{"--cells-link-mode", "monitor"}, classes...)
	case FECFCTClassesXOR:
		r.Args = append([]string{"--cells-link-mode", "fec", "--fec-target", strconv.FormatFloat(c.FECTarget, 'g', -1, 64)}, classes...)
	case FECFCTLG:
		gray := bed.BundleLinks[c.Gray[0]]
		r.Mode = "lg"
		r.SwitchArgs = map[string][]string{"sw1": {"--link-port", gray}, "sw2": {"--link-port", gray}}
	case FECFCTCellsLG:
		r.Args = []string{"--cells-link-mode", "lg"}
	}
	r.Args = append(r.Args, c.RunArgs...)
	return r
}

// FECFCTRun is one arm's flows in one run, clean or lossy.
type FECFCTRun struct {
	Arm       string        `json:"arm"`
	Run       int           `json:"run"`
	Lossy     bool          `json:"lossy"`
	Summaries []fct.Summary `json:"summaries"`
	// Dropped: frames the impairment dropped on the gray links.
	Dropped uint64 `json:"link_dropped"`
	Error   string `json:"error,omitempty"`
}

// FECFCTResult is `linkfabric fec fct`'s report. Flows go to CSV.
type FECFCTResult struct {
	Config FECFCTConfig `json:"config"`
	report.RunInfo
	CC      string      `json:"congestion_control"`
	Seconds float64     `json:"seconds"`
	Runs    []FECFCTRun `json:"runs"`
	// MeanRatio[arm][size index] (P99Ratio): the median over runs of each
	// run's lossy mean (p99) FCT over its clean one, the same arm and run
	// (0: no run had both).
	MeanRatio map[string][]float64 `json:"mean_ratio"`
	P99Ratio  map[string][]float64 `json:"p99_ratio"`
	// CleanMeanUs[arm][size index]: the median clean mean FCT (µs), to
	// compare arms without loss.
	CleanMeanUs map[string][]float64 `json:"clean_mean_us"`
	// Summary: check_<arm> (classes-xor, lg: every size bin's mean ratio
	// ≤ 1.1), none_worst_mean_ratio.
	Summary map[string]any `json:"summary"`
	Flows   []fct.Flow     `json:"-"`
}

// FECFCT runs `linkfabric fec fct` on a bundle testbed: per run and arm,
// fresh dataplanes twice (clean, then with the gray links lossy), each
// time TCP flows of every size from h1 to h2, one connection each.
func FECFCT(ctx context.Context, e *bed.Env, cfg FECFCTConfig) (*FECFCTResult, error) {
	start := time.Now()
	cc, err := bed.PrepareCC(e, &cfg, &cfg.CC)
	if err != nil {
		return nil, err
	}
	res := &FECFCTResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc}
	e.Printf("fec fct: bundle testbed %q, links %v gray (loss %g, mean burst %g, sw1→sw2), link0 clean; arms %s × %d runs × {clean, lossy}; flows %s (up to %s with DSCP EF: class 1 in the classes arms); %s",
		e.Prefix, cfg.Gray, cfg.Loss, cfg.Burst, strings.Join(cfg.Arms, ","), cfg.Runs, cfg.mix(), fct.FormatSize(cfg.Short), cc)
	b, err := e.BedUp("bundle", 0)
	if err != nil {
		return nil, err
	}
	defer b.Down()
	if _, err := bed.PaperTCP(e, cc); err != nil {
		return nil, err
	}
	if err := bed.Steps(ctx, cfg.Runs, cfg.Arms, bed.CleanThenLossy, func(s bed.Step[bool]) error {
		e.Printf("fec fct: [%d/%d] %s %s run %d: %s", s.N, s.Total, s.Arm, report.LossyWord(s.Variant), s.Run, fecFCTWhat[s.Arm])
		r, fl := fecFCTOnce(ctx, e, b, s.Arm, s.Run, s.Variant, &cfg, cc)
		res.Runs = append(res.Runs, r)
		res.Flows = append(res.Flows, fl...)
		if r.Error != "" {
			e.Printf("fec fct:   error: %s", r.Error)
		}
		for _, s := range r.Summaries {
			e.Printf("fec fct:   %s: %d flows (%d failed), mean %s p99 %s µs", fct.FormatSize(s.Size), s.Count, s.Failed, report.Micros(s.Mean), report.Micros(s.P99))
		}
		return nil
	}); err != nil {
		return res, err
	}
	b.Stop()
	res.summarize()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func fecFCTOnce(ctx context.Context, e *bed.Env, b *bed.Bed, arm string, run int, lossy bool, cfg *FECFCTConfig, cc string) (r FECFCTRun, flows []fct.Flow) {
	r = FECFCTRun{Arm: arm, Run: run, Lossy: lossy}
	fail := func(err error) (FECFCTRun, []fct.Flow) {
		r.Error = err.Error()
		return r, nil
	}
	if err := b.Start(ctx, cfg.bedRun(arm)); err != nil {
		return fail(err)
	}
	defer b.Stop()
	gray := map[string]bool{}
	for k, l := range cfg.Gray {
		if lossy {
			gray[bed.BundleLinks[l]] = true
		}
		imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Seed: cfg.Seed}
		if lossy {
			imp = bpf.Loss(cfg.Loss, cfg.Burst, cfg.Seed+uint64(100*run+k))
		}
		if err := bed.ImpairDev(e, "sw2", bed.BundleLinks[l], func(im *bpf.Impairer) error {
			if err := im.SetImpair(imp); err != nil {
				return err
			}
			return im.ResetImpairStats()
		}); err != nil && (arm != FECFCTLG || l == cfg.Gray[0]) {
			return fail(err)
		}
	}
	if arm == FECFCTClasses || arm == FECFCTClassesXOR {
		if _, err := bed.WaitClasses(ctx, e, true, gray, cfg.Settle); err != nil {
			return fail(err)
		}
	}
	h1, h2 := b.Hosts[0], b.Hosts[1]
	label := fmt.Sprintf("%s/%s/r%d", arm, report.LossyWord(lossy), run)
	for i, size := range cfg.Sizes {
		fl, err := fct.RunBuiltin(ctx, fct.BuiltinConfig{
			Arm: label, ServerNS: b.TB.NS(h2.Name), ClientNS: b.TB.NS(h1.Name), ServerAddr: h2.Addr + ":0",
			Sizes: []int64{size}, FlowsPerSize: cfg.FlowsFor(i), Warmup: cfg.Warmup, DSCP: cfg.dscp(size),
			CongestionControl: cc, Timeout: cfg.Timeout,
			Progress: bed.FlowProgress(e.Progress, fmt.Sprintf("%-22s %7s", label, fct.FormatSize(size)), time.Now),
		})
		if err != nil {
			return fail(err)
		}
		flows = append(flows, fl...)
	}
	if err := b.Dataplanes().Alive(); err != nil {
		return fail(err)
	}
	r.Dropped = bed.BundleDropped(e, "sw2", cfg.Gray)
	r.Summaries = fct.Summarize(flows)
	return r, flows
}

func (res *FECFCTResult) summarize() {
	c := &res.Config
	res.MeanRatio, res.P99Ratio, res.CleanMeanUs = map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	s := map[string]any{}
	find := func(arm string, run int, lossy bool, size int64) (fct.Summary, bool) {
		for _, r := range res.Runs {
			if r.Arm == arm && r.Run == run && r.Lossy == lossy && r.Error == "" {
				for _, x := range r.Summaries {
					if x.Size == size && x.Count > 0 && x.Failed == 0 {
						return x, true
					}
				}
			}
		}
		return fct.Summary{}, false
	}
	for _, arm := range c.Arms {
		means, p99s, cleans := make([]float64, len(c.Sizes)), make([]float64, len(c.Sizes)), make([]float64, len(c.Sizes))
		worst, ok := 0.0, true
		for i, size := range c.Sizes {
			var m, p, cl []float64
			for run := 1; run <= c.Runs; run++ {
				clean, ok1 := find(arm, run, false, size)
				lossy, ok2 := find(arm, run, true, size)
				if ok1 {
					cl = append(cl, float64(clean.Mean)/1e3)
				}
				if ok1 && ok2 {
					m = append(m, float64(lossy.Mean)/float64(clean.Mean))
					p = append(p, float64(lossy.P99)/float64(clean.P99))
				}
			}
			if len(cl) > 0 {
				cleans[i] = report.Median(cl)
			}
			if len(m) == 0 {
				ok = false
				continue
			}
			means[i], p99s[i] = report.Median(m), report.Median(p)
			worst = max(worst, means[i])
			ok = ok && len(m) == c.Runs && means[i] <= 1.1
			s[fmt.Sprintf("%s_%s_mean_ratio", strings.ReplaceAll(arm, "-", "_"), fct.FormatSize(size))] = means[i]
		}
		res.MeanRatio[arm], res.P99Ratio[arm], res.CleanMeanUs[arm] = means, p99s, cleans
		k := strings.ReplaceAll(arm, "-", "_")
		s[k+"_worst_mean_ratio"] = worst
		if arm == FECFCTClassesXOR || arm == FECFCTLG {
			s["check_"+k] = ok
		}
	}
	res.Summary = s
}

// Text is the table.
func (res *FECFCTResult) Text() string {
	var b strings.Builder
	c := &res.Config
	fmt.Fprintf(&b, "fec fct: bundle, links %v gray (loss %g, mean burst %g, sw1→sw2), link0 clean; %s; %d runs; each cell: median over runs of (lossy FCT / clean FCT, same arm and run)\n\n",
		c.Gray, c.Loss, c.Burst, res.CC, c.Runs)
	for _, what := range []struct {
		name string
		m    map[string][]float64
		f    string
	}{{"mean FCT, lossy / clean", res.MeanRatio, "%.3f"}, {"p99 FCT, lossy / clean", res.P99Ratio, "%.3f"}, {"clean mean FCT (µs)", res.CleanMeanUs, "%.0f"}} {
		fmt.Fprintf(&b, "%s:\n", what.name)
		w := report.NewTable(&b)
		fmt.Fprint(w, "arm\t")
		for _, s := range c.Sizes {
			fmt.Fprintf(w, "%s\t", fct.FormatSize(s))
		}
		fmt.Fprintln(w)
		for _, arm := range c.Arms {
			fmt.Fprintf(w, "%s\t", arm)
			for _, v := range what.m[arm] {
				if v == 0 {
					fmt.Fprint(w, "-\t")
				} else {
					fmt.Fprintf(w, what.f+"\t", v)
				}
			}
			fmt.Fprintln(w)
		}
		w.Flush()
		fmt.Fprintln(&b)
	}
	for _, arm := range []string{FECFCTClassesXOR, FECFCTLG} {
		k := strings.ReplaceAll(arm, "-", "_")
		if v, ok := res.Summary["check_"+k].(bool); ok {
			fmt.Fprintf(&b, "check %s (median over runs of lossy/clean mean FCT ≤ 1.1 in every size bin, every run measured): %s\n", arm, map[bool]string{true: "met", false: "MISSED"}[v])
		}
	}
	if v, ok := res.Summary["none_worst_mean_ratio"].(float64); ok {
		fmt.Fprintf(&b, "none (no protection): worst mean ratio %.3f\n", v)
	}
	for _, r := range res.Runs {
		if r.Error != "" {
			fmt.Fprintf(&b, "error: %s %s run %d: %s\n", r.Arm, report.LossyWord(r.Lossy), r.Run, r.Error)
		}
	}
	return b.String()
}

// WriteFiles writes fec-fct.json, flows.csv, and fec-fct-mean.png and
// fec-fct-p99.png (the normalised FCT per size bin and arm) into dir.
func (res *FECFCTResult) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	j := filepath.Join(dir, "fec-fct.json")
	if err := report.WriteJSON(j, res); err != nil {
		return nil, err
	}
	paths = append(paths, j)
	csvPath := filepath.Join(dir, "flows.csv")
	if err := report.WriteFile(csvPath, func(w io.Writer) error { return fct.WriteCSV(w, res.Flows) }); err != nil {
		return paths, err
	}
	paths = append(paths, csvPath)
	var groups []string
	for _, s := range res.Config.Sizes {
		groups = append(groups, fct.FormatSize(s))
	}
	for _, p := range []struct {
		file, what string
		m          map[string][]float64
	}{{"fec-fct-mean.png", "mean", res.MeanRatio}, {"fec-fct-p99.png", "p99", res.P99Ratio}} {
		var series []report.BarSeries
		for _, arm := range res.Config.Arms {
			series = append(series, report.BarSeries{Name: arm, Values: p.m[arm]})
		}
		path := filepath.Join(dir, p.file)
		title := fmt.Sprintf("%s FCT at loss %g on %d of 4 links, normalised to no loss", p.what, res.Config.Loss, len(res.Config.Gray))
		if err := report.PlotBars(path, title, p.what+" FCT / no-loss "+p.what+" FCT", groups, series, 1); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
