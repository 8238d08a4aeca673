package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
)

// CellsLatencyArms are the arms of `linkfabric cells latency`, and what
// each runs on both switches of the bundle.
var CellsLatencyArms = []string{"forward", "cells", "cells-nopre", "cells-push", "forward-afxdp"}

// On the bundle, forward's default fast path is XDP both ways, as on pair:
// the bundle turns the hosts' GRO on for forward (netns gro_modes), so their
// veth ends take the frames redirected into host0. Cells cut and deliver
// single-record cells in the edges' XDP programs where they can (the
// workers the rest, and every packed cell); forward-afxdp takes every frame
// through the Go workers.
var cellsLatencyWhat = map[string]string{
	"forward":       "linkfabric forward over link0 (the reference; both directions in XDP, the hosts' ends with GRO)",
	"cells":         "cells with credits and the standing pre-credit (--cells-pre-credit, default 4096)",
	"cells-nopre":   "cells with credits, no pre-credit (--cells-pre-credit 0): every packet waits for a grant",
	"cells-push":    "cells without credits (--cells-credits=false)",
	"forward-afxdp": "linkfabric forward --fastpath afxdp over link0: every frame through the workers",
}

// CellsLatencyConfig sizes `linkfabric cells latency`.
type CellsLatencyConfig struct {
	Arms  []string `json:"arms"`
	Size  int64    `json:"size"`  // flow size, bytes
	Flows int      `json:"flows"` // per arm
	// Rounds splits each arm's flows into this many blocks, the arms
	// taking turns (their order reversed every other round), so that the
	// load of a shared machine, which moves an arm's p50 1.5-3× between
	// runs of a few seconds, weighs on every arm alike; each round gives
	// its own ratios. 1: every arm once, one after the other.
	Rounds int `json:"rounds"`
	// Warmup flows are discarded at the start of every block (the
	// dataplanes start anew for each).
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
	c.Rounds = cmp.Or(c.Rounds, DefaultLatencyRounds)
	if c.Flows < 1 || c.Rounds < 1 || c.Warmup < 0 || c.PreCredit < 0 {
		return fmt.Errorf("cells latency: --flows %d, --rounds %d, --warmup %d, --pre-credit %d: want a flow and a round or more, the others ≥ 0", c.Flows, c.Rounds, c.Warmup, c.PreCredit)
	}
	if c.Flows < c.Rounds {
		return fmt.Errorf("cells latency: %d flows cannot be split into %d rounds: give more flows or fewer rounds", c.Flows, c.Rounds)
	}
	c.Timeout = bed.Positive(c.Timeout, 10*time.Second)
	return nil
}

// DefaultLatencyRounds is how many rounds `cells latency` interleaves its
// arms in by default.
const DefaultLatencyRounds = 5

// CellsLatencyResult is what `linkfabric cells latency` reports.
type CellsLatencyResult struct {
	Config CellsLatencyConfig `json:"config"`
	report.RunInfo
	CC      string      `json:"congestion_control"`
	Seconds float64     `json:"seconds"`
	FCT     fct.Results `json:"fct"` // every round's flows pooled: summaries and ratios to forward
	// Rounds are the blocks of flows round by round (with more than one).
	Rounds []LatencyRound `json:"rounds,omitempty"`
	// Load is the load average (1 min) at the start of every round.
	Load []float64 `json:"load"`
	// Summary: <arm>_p50_us, <arm>_p99_us, <arm>_p50_ratio (to forward,
	// arm names with _ for -) of the pooled flows; with rounds, every arm's
	// round p50s' <arm>_p50_us_min and _max and, but for the reference,
	// the median, min and max of its round ratios (<arm>_p50_ratio_median,
	// _min, _max); the cells arms' p50 over forward-afxdp's, pooled
	// (<arm>_p50_ratio_afxdp) and the rounds' median (..._afxdp_median);
	// the target of cells_p50_ratio and the verdict, cells_ok, taken on the
	// rounds' median when there are rounds.
	Summary map[string]any `json:"summary"`
	// DP is each arm's LatencyDP over all its blocks.
	DP    map[string]LatencyDP `json:"dataplanes"`
	Flows []fct.Flow           `json:"-"`
}

// LatencyRound is one round of `cells latency`: the order its arms ran in,
// each arm's p50 over its block and the ratio of each to the reference's.
type LatencyRound struct {
	Order []string           `json:"order"`
	P50us map[string]float64 `json:"p50_us"`
	Ratio map[string]float64 `json:"p50_ratio"`
	// DP is what the arm's dataplanes cost the machine while its flows
	// ran (see LatencyDP).
	DP map[string]LatencyDP `json:"dataplanes,omitempty"`
}

// LatencyDP is what the scheduler counted of an arm's dataplanes (every
// thread of both) over a block of flows, per flow (warm-up flows
// included): their time on a CPU, their time runnable but waiting for
// one, and how often they were put on one (a worker runs once per wakeup).
// With a core kept busy the flows' own path (both hosts and every
// kernel stage of it) shares the other core with these: a flow that
// crosses no worker still waits for the workers' runs that land on its
// CPU while it is in flight.
type LatencyDP struct {
	CPUus  float64 `json:"cpu_us_per_flow"`
	WaitUs float64 `json:"wait_us_per_flow"`
	Runs   float64 `json:"runs_per_flow"`
}

func latencyDP(t bed.SchedTotals, flows int) LatencyDP {
	n := float64(max(flows, 1))
	return LatencyDP{CPUus: float64(t.Run) / 1e3 / n, WaitUs: float64(t.Wait) / 1e3 / n, Runs: float64(t.Runs) / n}
}

// CellsLatency runs `linkfabric cells latency` on a bundle testbed: short
// TCP flows from h1 to h2, one connection each, through each arm, the arms
// taking turns in blocks of flows (Rounds).
func CellsLatency(ctx context.Context, e *bed.Env, cfg CellsLatencyConfig) (*CellsLatencyResult, error) {
	start := time.Now()
	cc, err := bed.PrepareCC(e, &cfg, &cfg.CC)
	if err != nil {
		return nil, err
	}
	res := &CellsLatencyResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc, DP: map[string]LatencyDP{}}
	dpSum, dpFlows := map[string]bed.SchedTotals{}, map[string]int{}
	e.Printf("cells latency: bundle testbed %q; arms %s; %d flows of %s per arm in %d round(s) (builtin tool, %s)",
		e.Prefix, strings.Join(cfg.Arms, ","), cfg.Flows, fct.FormatSize(cfg.Size), cfg.Rounds, cc)
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
	ref := "forward"
	if !slices.Contains(cfg.Arms, ref) {
		ref = cfg.Arms[0]
	}
	step, steps := 0, cfg.Rounds*len(cfg.Arms)
	for r := range cfg.Rounds {
		res.Load = append(res.Load, bed.LoadAvg())
		n := cfg.Flows / cfg.Rounds
		if r < cfg.Flows%cfg.Rounds {
			n++
		}
		round := LatencyRound{P50us: map[string]float64{}, Ratio: map[string]float64{}, DP: map[string]LatencyDP{}}
		var roundFlows []fct.Flow
		for _, arm := range roundOrder(cfg.Arms, r) {
			step++
			e.Printf("cells latency: [%d/%d] round %d/%d (load %.1f), %s: %s", step, steps, r+1, cfg.Rounds, res.Load[r], arm, cellsLatencyWhat[arm])
			fl, dp, err := latencyBlock(ctx, e, b, &cfg, arm, n, cc, h1, h2)
			if err != nil {
				return nil, fmt.Errorf("cells latency %s: %w", arm, err)
			}
			round.DP[arm] = latencyDP(dp, n+cfg.Warmup)
			dpSum[arm] = dpSum[arm].Add(dp)
			dpFlows[arm] += n + cfg.Warmup
			round.Order = append(round.Order, arm)
			roundFlows = append(roundFlows, fl...)
			for _, s := range fct.Summarize(fl) {
				e.Printf("cells latency:   %s: %d flows (%d failed), p50 %s p99 %s µs; dataplanes %.1f µs on a CPU a flow (%.2f runs)", arm, s.Count, s.Failed, report.Micros(s.P50), report.Micros(s.P99), round.DP[arm].CPUus, round.DP[arm].Runs)
				if s.Count > 0 {
					round.P50us[arm] = float64(s.P50) / 1e3
				}
			}
		}
		if v := round.P50us[ref]; v > 0 {
			for arm, p := range round.P50us {
				round.Ratio[arm] = p / v
			}
		}
		if cfg.Rounds > 1 {
			res.Rounds = append(res.Rounds, round)
		}
		res.Flows = append(res.Flows, roundFlows...)
	}
	b.Stop()
	for arm, t := range dpSum {
		res.DP[arm] = latencyDP(t, dpFlows[arm])
	}
	// Each block numbered its flows from 0: number them across the rounds.
	next := map[string]int{}
	for k := range res.Flows {
		res.Flows[k].ID = next[res.Flows[k].Arm]
		next[res.Flows[k].Arm]++
	}
	res.FCT = fct.NewResults(res.Flows, ref)
	res.FCT.Settings = reports
	res.Summary = latencySummary(res, ref)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// latencyBlock starts arm's dataplanes and runs n flows (after the
// warm-up) through them; it returns the flows and what the scheduler
// counted of the dataplanes meanwhile.
func latencyBlock(ctx context.Context, e *bed.Env, b *bed.Bed, cfg *CellsLatencyConfig, arm string, n int, cc string, h1, h2 bed.BedHost) ([]fct.Flow, bed.SchedTotals, error) {
	if err := b.Start(ctx, cfg.bedRun(arm)); err != nil {
		return nil, bed.SchedTotals{}, err
	}
	s0, err := b.Dataplanes().Sched()
	if err != nil {
		return nil, bed.SchedTotals{}, err
	}
	fl, err := fct.RunBuiltin(ctx, fct.BuiltinConfig{
		Arm: arm, ServerNS: b.TB.NS(h2.Name), ClientNS: b.TB.NS(h1.Name), ServerAddr: h2.Addr + ":0",
		Sizes: []int64{cfg.Size}, FlowsPerSize: n, Warmup: cfg.Warmup, CongestionControl: cc, Timeout: cfg.Timeout,
		Progress: bed.FlowProgress(e.Progress, fmt.Sprintf("%-13s %7s", arm, fct.FormatSize(cfg.Size)), time.Now),
	})
	if err != nil {
		return nil, bed.SchedTotals{}, err
	}
	s1, err := b.Dataplanes().Sched()
	if err != nil {
		return nil, bed.SchedTotals{}, err
	}
	return fl, s1.Sub(s0), b.Dataplanes().Alive()
}

// roundOrder is the order of the arms in round r: as given in even rounds,
// reversed in odd ones.
func roundOrder(arms []string, r int) []string {
	if r%2 == 0 {
		return arms
	}
	rev := slices.Clone(arms)
	slices.Reverse(rev)
	return rev
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
	for _, arm := range r.Config.Arms {
		k := strings.ReplaceAll(arm, "-", "_")
		if v := r.roundValues(arm, LatencyRound.p50); len(v) > 0 {
			s[k+"_p50_us_min"], s[k+"_p50_us_max"] = slices.Min(v), slices.Max(v)
		}
		if v := r.roundValues(arm, LatencyRound.ratio); len(v) > 0 && arm != ref {
			s[k+"_p50_ratio_median"] = report.Median(slices.Clone(v))
			s[k+"_p50_ratio_min"], s[k+"_p50_ratio_max"] = slices.Min(v), slices.Max(v)
		}
	}
	if v, ok := r.cellsRatio(s); ok && ref == "forward" {
		s["cells_ok"] = v <= 1.2
	}
	// The like-for-like ratio: cells against forward through the worker,
	// pooled and round by round.
	if a, ok := s["forward_afxdp_p50_us"].(float64); ok && a > 0 {
		for _, arm := range []string{"cells", "cells-nopre", "cells-push"} {
			k := strings.ReplaceAll(arm, "-", "_")
			if v, ok := s[k+"_p50_us"].(float64); ok {
				s[k+"_p50_ratio_afxdp"] = v / a
			}
			var v []float64
			for _, l := range r.Rounds {
				if c, a := l.P50us[arm], l.P50us["forward-afxdp"]; c > 0 && a > 0 {
					v = append(v, c/a)
				}
			}
			if len(v) > 0 {
				s[k+"_p50_ratio_afxdp_median"] = report.Median(v)
			}
		}
	}
	return s
}

func (l LatencyRound) p50(arm string) (float64, bool) {
	v, ok := l.P50us[arm]
	return v, ok
}

func (l LatencyRound) ratio(arm string) (float64, bool) {
	v, ok := l.Ratio[arm]
	return v, ok
}

// roundValues is arm's value of every round that has one.
func (r *CellsLatencyResult) roundValues(arm string, get func(LatencyRound, string) (float64, bool)) []float64 {
	var out []float64
	for _, l := range r.Rounds {
		if v, ok := get(l, arm); ok {
			out = append(out, v)
		}
	}
	return out
}

// cellsRatio is the cells arm's p50 over the reference's the verdict is
// taken on: the median of the rounds' ratios, or without rounds the
// pooled flows'.
func (r *CellsLatencyResult) cellsRatio(s map[string]any) (float64, bool) {
	if v, ok := s["cells_p50_ratio_median"].(float64); ok {
		return v, true
	}
	v, ok := s["cells_p50_ratio"].(float64)
	return v, ok
}

// Text renders the result.
func (r *CellsLatencyResult) Text() string {
	var b strings.Builder
	c := r.Config
	per := fmt.Sprintf("%d flows of %s per arm", c.Flows, fct.FormatSize(c.Size))
	if len(r.Rounds) > 0 {
		per += fmt.Sprintf(" in %d interleaved rounds", len(r.Rounds))
	}
	fmt.Fprintf(&b, "linkfabric cells latency: %s h1 → h2 over the bundle, one TCP connection each (builtin tool: connect to the last byte read), %s; kernel %s, %d CPUs, load %s; %.0fs\n",
		per, r.CC, r.Kernel, r.CPUs, loadRange(r.Load), r.Seconds)
	for _, a := range c.Arms {
		fmt.Fprintf(&b, "  %-13s %s\n", a, cellsLatencyWhat[a])
	}
	b.WriteString("\n")
	fct.WriteTable(&b, r.FCT)
	ref := r.FCT.Reference
	if len(r.Rounds) > 0 {
		fmt.Fprintf(&b, "\nround by round (the arms take turns; p50 in µs, then over %s's p50 in the same round):\n", ref)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "round\tload\t")
		for _, a := range c.Arms {
			fmt.Fprintf(tw, "%s\t", a)
		}
		fmt.Fprintln(tw, "\t")
		for i, l := range r.Rounds {
			fmt.Fprintf(tw, "%d\t%.1f\t", i+1, r.Load[i])
			for _, a := range c.Arms {
				v, ok := l.P50us[a]
				switch {
				case !ok:
					fmt.Fprint(tw, "-\t")
				case a == ref:
					fmt.Fprintf(tw, "%.1f\t", v)
				default:
					fmt.Fprintf(tw, "%.1f %.2fx\t", v, l.Ratio[a])
				}
			}
			fmt.Fprintln(tw, "\t")
		}
		tw.Flush()
		for _, a := range c.Arms {
			k := strings.ReplaceAll(a, "-", "_")
			if m, ok := r.Summary[k+"_p50_ratio_median"].(float64); ok {
				fmt.Fprintf(&b, "  %s p50 over %s's: median %.2f× of %d rounds (%.2f-%.2f); p50 %.1f-%.1f µs\n", a, ref, m, len(r.Rounds),
					r.Summary[k+"_p50_ratio_min"], r.Summary[k+"_p50_ratio_max"], r.Summary[k+"_p50_us_min"], r.Summary[k+"_p50_us_max"])
			}
		}
	}
	if len(r.DP) > 0 {
		b.WriteString("\nthe dataplanes while the flows ran, per flow: time on a CPU, waiting for one, runs (with a core kept busy the flows share the other with them):\n")
		for _, a := range c.Arms {
			if d, ok := r.DP[a]; ok {
				fmt.Fprintf(&b, "  %-13s %6.1f µs  %6.1f µs  %5.2f\n", a, d.CPUus, d.WaitUs, d.Runs)
			}
		}
	}
	if v, ok := r.cellsRatio(r.Summary); ok && ref == "forward" {
		how := "of the pooled flows"
		if len(r.Rounds) > 0 {
			how = "median of the rounds"
		}
		fmt.Fprintf(&b, "\ncells (pre-credit) p50 %.2f× forward's, %s (target ≤ 1.2: %s)", v, how, report.MetWord(v <= 1.2))
		if w, ok := r.Summary["cells_nopre_p50_ratio_median"].(float64); ok {
			fmt.Fprintf(&b, "; without pre-credit %.2f×", w)
		} else if w, ok := r.Summary["cells_nopre_p50_ratio"].(float64); ok {
			fmt.Fprintf(&b, "; without pre-credit %.2f×", w)
		}
		b.WriteString("\n")
	}
	if v, ok := r.Summary["cells_p50_ratio_afxdp_median"].(float64); ok {
		fmt.Fprintf(&b, "cells (pre-credit) p50 %.2f× forward-afxdp's (every frame through the Go workers), median of the rounds\n", v)
	} else if v, ok := r.Summary["cells_p50_ratio_afxdp"].(float64); ok {
		fmt.Fprintf(&b, "cells (pre-credit) p50 %.2f× forward-afxdp's (%.0f µs; every frame through the Go workers)\n", v, r.Summary["forward_afxdp_p50_us"])
	}
	return b.String()
}

// loadRange is the lowest and highest of the load averages.
func loadRange(v []float64) string {
	if len(v) == 0 {
		return "?"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return fmt.Sprintf("%.1f", lo)
	}
	return fmt.Sprintf("%.1f-%.1f", lo, hi)
}

// WriteFiles writes latency.json, flows.csv and a tail-CDF PNG into dir.
func (r *CellsLatencyResult) WriteFiles(dir string) ([]string, error) {
	return bed.WriteFlows(dir, "latency", r, r.Flows, r.Config.Arms)
}
