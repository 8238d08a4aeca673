package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
)

// CellsLatencyArms are the arms of `linkfabric cells latency`, and what
// each runs on both switches of the bundle.
var CellsLatencyArms = []string{"forward", "cells", "cells-nopre", "cells-push", "forward-afxdp"}

// On the bundle, forward's default fast path is XDP only where the target
// veth takes redirected frames: host0 → link0 in each switch (the peer
// link0 runs the other dataplane's program), while link0 → host0 goes
// through the Go worker (the hosts' ends have neither GRO nor XDP). So each
// direction crosses one kernel hop and one AF_XDP hop. forward-afxdp puts
// every frame through the worker, as cells does: the like-for-like
// reference for what cells add.
var cellsLatencyWhat = map[string]string{
	"forward":       "linkfabric forward over link0 (the reference; host0 → link0 in XDP, link0 → host0 through the worker)",
	"cells":         "cells with credits and the standing pre-credit (--cells-pre-credit, default 4096)",
	"cells-nopre":   "cells with credits, no pre-credit (--cells-pre-credit 0): every packet waits for a grant",
	"cells-push":    "cells without credits (--cells-credits=false)",
	"forward-afxdp": "linkfabric forward --fastpath afxdp over link0: every frame through the worker, as in cells",
}

// CellsLatencyConfig sizes `linkfabric cells latency`.
type CellsLatencyConfig struct {
	Arms    []string      `json:"arms"`
	Size    int64         `json:"size"`  // flow size, bytes
	Flows   int           `json:"flows"` // per arm
	Warmup  int           `json:"warmup"`
	Timeout time.Duration `json:"flow_timeout"`
	// PreCredit is the cells arm's --cells-pre-credit (0: the dataplane's default).
	PreCredit int      `json:"pre_credit"`
	CC        string   `json:"cc"` // "" or auto: dctcp if the kernel has it, else cubic
	RunArgs   []string `json:"run_args,omitempty"`
}

// Normalize fills defaults and checks the configuration.
func (c *CellsLatencyConfig) Normalize() error {
	if err := bed.NormalizeArms("cells latency", &c.Arms, []string{"forward", "forward-afxdp", "cells", "cells-nopre"}, CellsLatencyArms); err != nil {
		return err
	}
	c.Size = cmp.Or(c.Size, 143)
	if c.Size < fct.HeaderSize {
		return fmt.Errorf("cells latency: size %d B is below the builtin tool's %d B minimum", c.Size, fct.HeaderSize)
	}
	c.Flows = cmp.Or(c.Flows, 2000)
	if c.Flows < 1 || c.Warmup < 0 || c.PreCredit < 0 {
		return fmt.Errorf("cells latency: --flows %d, --warmup %d, --pre-credit %d: want a flow or more, the others ≥ 0", c.Flows, c.Warmup, c.PreCredit)
	}
	c.Timeout = bed.Positive(c.Timeout, 10*time.Second)
	return nil
}

// CellsLatencyResult is what `linkfabric cells latency` reports.
type CellsLatencyResult struct {
	Config CellsLatencyConfig `json:"config"`
	report.RunInfo
	CC      string      `json:"congestion_control"`
	Seconds float64     `json:"seconds"`
	FCT     fct.Results `json:"fct"` // summaries and ratios to forward
	// Summary: <arm>_p50_us, <arm>_p99_us, <arm>_p50_ratio (to forward,
	// arm names with _ for -), the target of cells_p50_ratio and verdict.
	Summary map[string]any `json:"summary"`
	Flows   []fct.Flow     `json:"-"`
}

// CellsLatency runs `linkfabric cells latency` on a bundle testbed: short
// TCP flows from h1 to h2, one connection each, through each arm.
func CellsLatency(ctx context.Context, e *bed.Env, cfg CellsLatencyConfig) (*CellsLatencyResult, error) {
	start := time.Now()
	cc, err := bed.PrepareCC(e, &cfg, &cfg.CC)
	if err != nil {
		return nil, err
	}
	res := &CellsLatencyResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc}
	e.Printf("cells latency: bundle testbed %q; arms %s; %d flows of %s per arm (builtin tool, %s)",
		e.Prefix, strings.Join(cfg.Arms, ","), cfg.Flows, fct.FormatSize(cfg.Size), cc)
	b, err := e.BedUp("bundle", 0)
	if err != nil {
		return nil, err
	}
	defer b.Down()
	reports, err := bed.PaperTCP(e, cc)
	if err != nil {
		return nil, err
	}
	h1, h2 := b.Hosts[0], b.Hosts[1]
	for i, arm := range cfg.Arms {
		e.Printf("cells latency: [%d/%d] %s: %s", i+1, len(cfg.Arms), arm, cellsLatencyWhat[arm])
		if err := b.Start(ctx, cfg.bedRun(arm)); err != nil {
			return nil, fmt.Errorf("cells latency %s: %w", arm, err)
		}
		fl, err := fct.RunBuiltin(ctx, fct.BuiltinConfig{
			Arm: arm, ServerNS: b.TB.NS(h2.Name), ClientNS: b.TB.NS(h1.Name), ServerAddr: h2.Addr + ":0",
			Sizes: []int64{cfg.Size}, FlowsPerSize: cfg.Flows, Warmup: cfg.Warmup, CongestionControl: cc, Timeout: cfg.Timeout,
			Progress: bed.FlowProgress(e.Progress, fmt.Sprintf("%-13s %7s", arm, fct.FormatSize(cfg.Size)), time.Now),
		})
		if err != nil {
			return nil, fmt.Errorf("cells latency %s: %w", arm, err)
		}
		if err := b.Dataplanes().Alive(); err != nil {
			return nil, err
		}
		res.Flows = append(res.Flows, fl...)
		for _, s := range fct.Summarize(fl) {
			e.Printf("cells latency:   %s: %d flows (%d failed), p50 %s p99 %s µs", arm, s.Count, s.Failed, report.Micros(s.P50), report.Micros(s.P99))
		}
	}
	b.Stop()
	ref := "forward"
	if !slices.Contains(cfg.Arms, ref) {
		ref = cfg.Arms[0]
	}
	res.FCT = fct.NewResults(res.Flows, ref)
	res.FCT.Settings = reports
	res.Summary = latencySummary(res, ref)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// bedRun is what arm runs on the switches.
func (c *CellsLatencyConfig) bedRun(arm string) bed.BedRun {
	r := bed.BedRun{Mode: bed.ModeCells}
	switch arm {
	case "forward":
		r.Mode = "forward"
	case "forward-afxdp":
		r.Mode, r.Args = "forward", []string{"--fastpath", "afxdp"}
	case "cells":
		if c.PreCredit > 0 {
			r.Args = []string{"--cells-pre-credit", strconv.Itoa(c.PreCredit)}
		}
	case "cells-nopre":
		r.Args = []string{"--cells-pre-credit", "0"}
	case "cells-push":
		r.Args = []string{"--cells-credits=false"}
	}
	if r.Mode == bed.ModeCells {
		r.Args = append(r.Args, c.RunArgs...)
	}
	return r
}

func latencySummary(r *CellsLatencyResult, ref string) map[string]any {
	s := map[string]any{"reference": ref, "cells_p50_ratio_target": 1.2}
	for _, x := range r.FCT.Summaries {
		k := strings.ReplaceAll(x.Arm, "-", "_")
		s[k+"_p50_us"] = float64(x.P50) / 1e3
		s[k+"_p99_us"] = float64(x.P99) / 1e3
		s[k+"_failed"] = x.Failed
	}
	for _, q := range r.FCT.Ratios {
		k := strings.ReplaceAll(q.Arm, "-", "_")
		s[k+"_p50_ratio"] = q.P50
		s[k+"_p99_ratio"] = q.P99
	}
	if v, ok := s["cells_p50_ratio"].(float64); ok && ref == "forward" {
		s["cells_ok"] = v <= 1.2
	}
	// The like-for-like ratio: cells against forward through the worker.
	if a, ok := s["forward_afxdp_p50_us"].(float64); ok && a > 0 {
		for _, arm := range []string{"cells", "cells_nopre", "cells_push"} {
			if v, ok := s[arm+"_p50_us"].(float64); ok {
				s[arm+"_p50_ratio_afxdp"] = v / a
			}
		}
	}
	return s
}

// Text renders the result.
func (r *CellsLatencyResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "linkfabric cells latency: %d flows of %s per arm h1 → h2 over the bundle, one TCP connection each (builtin tool: connect to the last byte read), %s; kernel %s, %d CPUs; %.0fs\n",
		c.Flows, fct.FormatSize(c.Size), r.CC, r.Kernel, r.CPUs, r.Seconds)
	for _, a := range c.Arms {
		fmt.Fprintf(&b, "  %-13s %s\n", a, cellsLatencyWhat[a])
	}
	b.WriteString("\n")
	fct.WriteTable(&b, r.FCT)
	if v, ok := r.Summary["cells_p50_ratio"].(float64); ok && r.FCT.Reference == "forward" {
		fmt.Fprintf(&b, "\ncells (pre-credit) p50 %.2f× forward's (target ≤ 1.2: %s)", v, report.MetWord(v <= 1.2))
		if w, ok := r.Summary["cells_nopre_p50_ratio"].(float64); ok {
			fmt.Fprintf(&b, "; without pre-credit %.2f×", w)
		}
		b.WriteString("\n")
	}
	if v, ok := r.Summary["cells_p50_ratio_afxdp"].(float64); ok {
		fmt.Fprintf(&b, "cells (pre-credit) p50 %.2f× forward-afxdp's (%.0f µs; both through the Go worker)\n", v, r.Summary["forward_afxdp_p50_us"])
	}
	return b.String()
}

// WriteFiles writes latency.json, flows.csv and a tail-CDF PNG into dir.
func (r *CellsLatencyResult) WriteFiles(dir string) ([]string, error) {
	return bed.WriteFlows(dir, "latency", r, r.Flows, r.Config.Arms)
}
