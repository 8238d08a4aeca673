package tdmaexp

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
)

// TDMARRConfig sizes `linkfabric tdma rr` (§6.3, Figure 11): every host
// sends blocks to the other hosts in turn, under TDMA (raw agents) and
// kernel TCP, for each block size.
type TDMARRConfig struct {
	Star   TDMAStar  `json:"star"`
	Blocks []float64 `json:"blocks_capacities"` // block sizes in slot capacities
	Arms   []string  `json:"arms"`              // tdma, tcp
	Runs   int       `json:"runs"`
	// Warm: the workload runs this long before the measured Duration.
	Warm     time.Duration `json:"warm_ns"`
	Duration time.Duration `json:"duration_ns"`
	Force    bool          `json:"force"`
	Dir      string        `json:"-"`
}

// RRArms are the arms of tdma rr.
var RRArms = []string{"tdma", "tcp"}

const rrPort = 5304

// SlotCapacity is what a slot carries at the line rate, in bytes:
// rate × (slot − guard) / 8 (the FM's slot capacity).
func (c TDMAStar) SlotCapacity() int64 {
	return int64(float64(c.Rate) * (c.Slot - c.Guard).Seconds() / 8)
}

// RRRun is one (block, arm, run).
type RRRun struct {
	Block      float64 `json:"block_capacities"`
	BlockBytes int64   `json:"block_bytes"`
	Arm        string  `json:"arm"`
	Run        int     `json:"run"`
	// Per host, the bits it received per second over the measured
	// Duration (what its neighbours delivered to it), and the mean and
	// least of them ÷ the port rate.
	PerHostBps  []float64 `json:"per_host_bps"`
	MeanOverR   float64   `json:"mean_over_rate"`
	MinOverR    float64   `json:"min_over_rate"`
	Blocks      uint64    `json:"rr_blocks,omitempty"` // tdma: blocks handed to the wire whole, all hosts
	Retransmits uint64    `json:"tcp_retransmits,omitempty"`
	ArmMeasures
	TDMACounters
}

// RRPoint is an arm's medians at one block size.
type RRPoint struct {
	Block       float64 `json:"block_capacities"`
	MeanOverR   float64 `json:"mean_over_rate"`
	MinOverR    float64 `json:"min_over_rate"`
	SwitchDrops float64 `json:"switch_drops"`
	CtlOverhead float64 `json:"control_overhead_pct,omitempty"`
}

// RRSummary is the medians per arm and block, and the checks.
type RRSummary struct {
	Arms   map[string][]RRPoint `json:"arms"`
	Checks []Check              `json:"checks"`
	Paper  string               `json:"paper"`
}

// TDMARRResult is the experiment's outcome.
type TDMARRResult struct {
	Config       TDMARRConfig `json:"config"`
	SlotCapacity int64        `json:"slot_capacity_bytes"`
	// TDMACeiling is the most TDMA can carry ÷ the rate: the open part of
	// every slot times the raw frames' payload share.
	TDMACeiling float64   `json:"tdma_ceiling_over_rate"`
	Runs        []RRRun   `json:"runs"`
	Summary     RRSummary `json:"summary"`
	Precheck
}

const rrPaper = "paper (§6.3, Fig. 11): TCP reaches at best ~0.45 of the link; TDMA is higher, and falls when a block is smaller than a slot's capacity (375 KB: 300 µs at 10 Gbit/s)"

// TDMARR runs every block size and arm Runs times, interleaved.
func TDMARR(ctx context.Context, e *bed.Env, cfg TDMARRConfig) (*TDMARRResult, error) {
	if len(cfg.Blocks) == 0 || cfg.Duration <= 0 || cfg.Runs < 1 || cfg.Star.SlotCapacity() <= 0 {
		return nil, fmt.Errorf("tdma rr: want a block size, a duration, a run and a slot longer than its guard (have %d blocks, %v, %d runs, slot %v, guard %v)",
			len(cfg.Blocks), cfg.Duration, cfg.Runs, cfg.Star.Slot, cfg.Star.Guard)
	}
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	C := cfg.Star.SlotCapacity()
	st := cfg.Star
	res := &TDMARRResult{Config: cfg, SlotCapacity: C, Precheck: pre,
		TDMACeiling: float64(st.Slot-st.Guard-st.Margin) / float64(st.Slot) * rawPayload / wireFrame}
	for run := 1; run <= cfg.Runs; run++ {
		for _, b := range cfg.Blocks {
			for _, arm := range cfg.Arms {
				bb := int64(math.Round(b * float64(C)))
				e.Printf("tdma rr: run %d/%d, block %g slot capacities (%d B), arm %s (load average %.1f)", run, cfg.Runs, b, bb, arm, bed.LoadAvg())
				r, err := rrOnce(ctx, e, cfg, b, bb, arm, run)
				if err != nil {
					res.Summary = summarizeRR(cfg.Arms, cfg.Blocks, res.Runs) // of the runs done
					return res, fmt.Errorf("run %d, block %g, arm %s: %w", run, b, arm, err)
				}
				e.Printf("  per host %.3f × rate (least %.3f), switch drops %d, lost frames %d, CPU %.0f %%", r.MeanOverR, r.MinOverR, r.Switch.Drops, r.LostFrames, r.CPUBusyPct)
				res.Runs = append(res.Runs, r)
			}
		}
	}
	res.Summary = summarizeRR(cfg.Arms, cfg.Blocks, res.Runs)
	return res, nil
}

// summarizeRR takes the medians per arm and block and checks them.
func summarizeRR(arms []string, blocks []float64, runs []RRRun) RRSummary {
	s := RRSummary{Arms: map[string][]RRPoint{}, Paper: rrPaper}
	for _, arm := range arms {
		for _, b := range blocks {
			var mean, least, drops, ctl []float64
			for _, r := range runs {
				if r.Arm == arm && r.Block == b {
					mean, least = append(mean, r.MeanOverR), append(least, r.MinOverR)
					drops, ctl = append(drops, float64(r.Switch.Drops)), append(ctl, r.CtlOverheadPct)
				}
			}
			if len(mean) > 0 {
				s.Arms[arm] = append(s.Arms[arm], RRPoint{Block: b, MeanOverR: report.Median(mean), MinOverR: report.Median(least), SwitchDrops: report.Median(drops), CtlOverhead: report.Median(ctl)})
			}
		}
	}
	s.Checks = rrChecks(s.Arms)
	return s
}

// rrChecks are the design's targets (§4 item 6) on the medians: TDMA's
// per-host throughput ≥ 0.85 × the port rate at every block of 2 slot
// capacities or more, and above TCP's at every block of 1 or more.
func rrChecks(arms map[string][]RRPoint) []Check {
	var cs []Check
	tcp := map[float64]float64{}
	for _, p := range arms["tcp"] {
		tcp[p.Block] = p.MeanOverR
	}
	for _, p := range arms["tdma"] {
		if p.Block >= 2 {
			cs = append(cs, atLeast(fmt.Sprintf("tdma per-host throughput ÷ rate at %g capacities", p.Block), "≥", p.MeanOverR, 0.85))
		}
		if t, ok := tcp[p.Block]; ok && p.Block >= 1 {
			c := above(fmt.Sprintf("tdma ÷ tcp per-host throughput at %g capacities", p.Block), ">", report.RatioNaN(p.MeanOverR, t), 1)
			c.Note = fmt.Sprintf("tdma %.3f, tcp %.3f × rate", p.MeanOverR, t)
			cs = append(cs, c)
		}
	}
	return cs
}

// rrOnce runs one arm at one block size on a fresh star.
func rrOnce(ctx context.Context, e *bed.Env, cfg TDMARRConfig, b float64, bb int64, arm string, run int) (RRRun, error) {
	out := RRRun{Block: b, BlockBytes: bb, Arm: arm, Run: run}
	err := onStar(e, cfg.Star, &out.ArmMeasures, func(tb *netns.Testbed) error {
		switch arm {
		case "tdma":
			return rrTDMA(ctx, e, cfg, tb, &out)
		case "tcp":
			return rrTCP(ctx, cfg, tb, &out)
		}
		return fmt.Errorf("arm %q: want %s", arm, strings.Join(RRArms, " or "))
	})
	if err == nil {
		out.MeanOverR, out.MinOverR = rrOverRate(out.PerHostBps, cfg.Star.Rate)
	}
	return out, err
}

// rrOverRate is the mean and least of per-host bit/s ÷ rate.
func rrOverRate(bps []float64, rate netns.BitRate) (mean, least float64) {
	if len(bps) == 0 {
		return 0, 0
	}
	least = math.Inf(1)
	for _, v := range bps {
		mean += v
		least = min(least, v)
	}
	R := float64(rate)
	return mean / float64(len(bps)) / R, least / R
}

// rrTDMA runs raw agents with the rr workload; each host's throughput is
// its received bytes per second over Duration, from Warm after the last
// host's first send.
func rrTDMA(ctx context.Context, e *bed.Env, cfg TDMARRConfig, tb *netns.Testbed, out *RRRun) error {
	c := cfg.Star
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("tdma-block%g-run%d", out.Block, out.Run))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dur := cfg.Warm + cfg.Duration + time.Second
	r, err := runTDMA(ctx, e, tb, c, dir, dur+20*time.Second, func(int) []string {
		return append(agentDuration(dur), "--workload", "rr", "--size", strconv.FormatInt(out.BlockBytes, 10))
	})
	if err != nil {
		return err
	}
	out.TDMACounters = r.counters(c)
	var start int64
	for i, h := range r.Hosts {
		if h.FirstSend == 0 {
			return fmt.Errorf("h%d sent nothing (see %s)", i+1, dir)
		}
		start = max(start, h.FirstSend)
		out.Blocks += h.RRBlocks
	}
	from, to := start+int64(cfg.Warm), start+int64(cfg.Warm+cfg.Duration)
	for i, h := range r.Hosts {
		v := progressRate(h.Progress, from, to)
		if v == 0 {
			return fmt.Errorf("h%d's progress does not cover the measured %v (see %s)", i+1, cfg.Duration, dir)
		}
		out.PerHostBps = append(out.PerHostBps, v*8)
	}
	return nil
}

// rrTCP runs tcpRR; each host's throughput is its received bytes per
// second over Duration, after Warm.
func rrTCP(ctx context.Context, cfg TDMARRConfig, tb *netns.Testbed, out *RRRun) error {
	n := cfg.Star.Hosts
	r0 := tcpRetrans(tb, n)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recv, wait, err := tcpRR(rctx, tb, n, out.BlockBytes, rrPort)
	if err != nil {
		return err
	}
	defer func() { cancel(); wait(); out.Retransmits = tcpRetrans(tb, n) - r0 }()
	snap := func() ([]int64, int64) {
		v := make([]int64, n)
		for i, c := range recv {
			v[i] = c.Load()
		}
		return v, clock.Now()
	}
	if !sleepUntil(ctx, time.Now().Add(cfg.Warm)) {
		return ctx.Err()
	}
	a, t0 := snap()
	if !sleepUntil(ctx, time.Now().Add(cfg.Duration)) {
		return ctx.Err()
	}
	b, t1 := snap()
	for i := range a {
		out.PerHostBps = append(out.PerHostBps, float64(b[i]-a[i])*8/(float64(t1-t0)/1e9))
	}
	return nil
}

// WriteTDMARR writes rr.json, rr.csv and rr-throughput.png (Fig. 11) into
// dir; it returns the paths written.
func WriteTDMARR(dir string, r *TDMARRResult) ([]string, error) {
	rows := [][]string{{"arm", "run", "block_capacities", "block_bytes", "host", "bps", "over_rate", "switch_drops", "lost_frames", "tcp_retransmits", "cpu_busy_pct"}}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, x := range r.Runs {
		for i, v := range x.PerHostBps {
			rows = append(rows, []string{x.Arm, strconv.Itoa(x.Run), f(x.Block), strconv.FormatInt(x.BlockBytes, 10), "h" + strconv.Itoa(i+1), f(v),
				f(v / float64(r.Config.Star.Rate)), strconv.FormatUint(x.Switch.Drops, 10), strconv.FormatUint(x.LostFrames, 10),
				strconv.FormatUint(x.Retransmits, 10), f(x.CPUBusyPct)})
		}
	}
	var series []report.XYSeries
	for _, arm := range r.Config.Arms {
		var x, y []float64
		for _, p := range r.Summary.Arms[arm] {
			x, y = append(x, p.Block), append(y, p.MeanOverR)
		}
		series = append(series, report.XYSeries{Name: arm, X: x, Y: y})
	}
	return report.WriteTablePlot(dir, "rr", r, rows[0], rows[1:], "rr-throughput.png", func(png string) error {
		return report.PlotLines(png, report.LinesOptions{Title: fmt.Sprintf("Round-robin blocks, %d hosts at %s (Fig. 11)", r.Config.Star.Hosts, r.Config.Star.Rate),
			XLabel: fmt.Sprintf("block (slot capacities of %d B)", r.SlotCapacity), YLabel: "per-host throughput ÷ port rate",
			LogX: true, Ref: 0.85, RefLabel: "0.85 (target for TDMA at ≥ 2 capacities)", YFrom0: true}, series...)
	})
}

// Text renders the runs, the medians and the checks.
func (r *TDMARRResult) Text() string { return report.Sprint(r.write) }

func (r *TDMARRResult) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "block (cap.)\tbytes\tarm\trun\tper host ÷ rate\tleast\tper host Mb/s\tblocks\tswitch drops\tcollisions\tlost frames\tretrans\tctl %\tCPU %\tload")
	for _, x := range r.Runs {
		ph := make([]string, len(x.PerHostBps))
		for i, v := range x.PerHostBps {
			ph[i] = strconv.FormatFloat(v/1e6, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%g\t%d\t%s\t%d\t%.3f\t%.3f\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%.1f\n", x.Block, x.BlockBytes, x.Arm, x.Run, x.MeanOverR, x.MinOverR,
			strings.Join(ph, " "), x.Blocks, x.Switch.Drops, x.Collisions, x.LostFrames, x.Retransmits, x.CtlOverheadPct, x.CPUBusyPct, x.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nmedians (slot capacity %d B = rate × (slot − guard) / 8; TDMA's ceiling %.3f × rate):\n", r.SlotCapacity, r.TDMACeiling)
	for _, arm := range r.Config.Arms {
		var parts []string
		for _, p := range r.Summary.Arms[arm] {
			parts = append(parts, fmt.Sprintf("%g: %.3f", p.Block, p.MeanOverR))
		}
		line := strings.Join(parts, ", ")
		if arm == "tdma" {
			var ctl []float64
			for _, p := range r.Summary.Arms[arm] {
				ctl = append(ctl, p.CtlOverhead)
			}
			line += fmt.Sprintf("; control overhead %.3f %% of the port rate", slices.Max(append(ctl, 0)))
		}
		fmt.Fprintf(w, "  %-4s per-host throughput ÷ rate by block: %s\n", arm, line)
	}
	fmt.Fprintln(w, "  "+r.Summary.Paper)
	printChecks(w, r.Summary.Checks)
	r.Precheck.print(w)
}

func (r *TDMARRResult) measured() bool { return r != nil && len(r.Runs) > 0 }
