package tdmaexp

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
)

// TDMACtlLossConfig sizes `linkfabric tdma ctlloss`: the shuffle under
// lost grants (dropped by each agent with probability Loss, seeded), in
// each gate mode, and the shuffle with the FM frozen (Freeze).
type TDMACtlLossConfig struct {
	Shuffle TDMAShuffleConfig `json:"shuffle"`
	Losses  []float64         `json:"losses"`
	Modes   []string          `json:"modes"` // paper, lease, freerun
	Freeze  TDMAFreezeConfig  `json:"freeze"`
}

// CtlLossRun is one (loss, mode, run).
type CtlLossRun struct {
	Loss float64 `json:"loss"`
	Mode string  `json:"mode"`
	ShuffleArm
}

// FreezeRun is one run of the shuffle with the FM frozen (no loss).
type FreezeRun struct {
	Mode string `json:"mode"`
	ShuffleArm
	Freeze FreezeResult `json:"freeze"`
}

// CtlLossSumm is the medians over the runs of one (loss, mode).
type CtlLossSumm struct {
	Loss          float64 `json:"loss"`
	Mode          string  `json:"mode"`
	Runs          int     `json:"runs"`
	OverrunBytes  float64 `json:"overrun_bytes_median"`
	Collisions    float64 `json:"collisions_median"`
	Drops         float64 `json:"switch_drops_median"`
	BacklogP99    float64 `json:"backlog_p99_frames_median"`
	LostFrames    float64 `json:"lost_frames_median"`
	Incomplete    float64 `json:"incomplete_flows_median"`
	CtlLost       float64 `json:"control_lost_median"`
	LeaseExpiries float64 `json:"lease_expiries_median"`
	OverIdeal     float64 `json:"completion_over_ideal_median"`
}

// TDMACtlLossResult is the experiment's outcome.
type TDMACtlLossResult struct {
	Config  TDMACtlLossConfig `json:"config"`
	Runs    []CtlLossRun      `json:"runs"`
	Freezes []FreezeRun       `json:"freezes,omitempty"`
	Summary []CtlLossSumm     `json:"summary"`
	// FreezeCheck: met if every freeze run in lease and free-run mode met
	// both checks (paper mode has no lease: reported, not checked).
	FreezeCheck string `json:"freeze_check,omitempty"`
	Precheck
}

// TDMACtlLoss runs the shuffle at every loss in every mode, then with the
// FM frozen in every freeze mode, Runs times.
func TDMACtlLoss(ctx context.Context, e *bed.Env, cfg TDMACtlLossConfig) (*TDMACtlLossResult, error) {
	pre, err := precheck(e, cfg.Shuffle.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMACtlLossResult{Config: cfg, Precheck: pre}
	defer res.summarize()
	for run := 1; run <= cfg.Shuffle.Runs; run++ {
		for _, p := range cfg.Losses {
			for _, m := range cfg.Modes {
				sc := cfg.Shuffle
				sc.Star.Mode = m
				e.Printf("tdma ctlloss: run %d/%d, control loss %g, mode %s (load average %.1f)", run, sc.Runs, p, m, bed.LoadAvg())
				a, err := shuffleOnce(ctx, e, sc, "tdma", run, []string{"--drop-control", strconv.FormatFloat(p, 'g', -1, 64), "--seed", strconv.Itoa(run)})
				if err != nil {
					return res, fmt.Errorf("loss %g, mode %s: %w", p, m, err)
				}
				e.Printf("  overrun %d B, collisions %d, switch drops %d, lost frames %d, grants lost %d, lease expiries %d, ÷ ideal %.3f",
					a.OverrunBytes, a.Collisions, a.Switch.Drops, a.LostFrames, a.CtlLost, a.LeaseExpiries, a.OverIdeal)
				res.Runs = append(res.Runs, CtlLossRun{Loss: p, Mode: m, ShuffleArm: a})
			}
		}
		if cfg.Freeze.Dur <= 0 {
			continue
		}
		for _, m := range cfg.Freeze.Modes {
			sc := cfg.Shuffle
			sc.Star.Mode = m
			e.Printf("tdma ctlloss: run %d/%d, mode %s, FM frozen (SIGSTOP) for %v once %.0f%% of the shuffle has crossed the switch (load average %.1f)",
				run, sc.Runs, m, cfg.Freeze.Dur, 100*cfg.Freeze.At, bed.LoadAvg())
			fr, err := freezeOnce(ctx, e, sc, run, cfg.Freeze)
			if err != nil {
				return res, fmt.Errorf("freeze, mode %s: %w", m, err)
			}
			f := fr.Freeze
			e.Printf("  frozen %.1f ms: silent within the lease (%.0f ms): %s (longest %.1f ms after a control frame); resumed within a round (%.0f ms) of the CONT: %s (latest %.1f ms)%s",
				f.FrozenMs, f.LeaseMs, f.Silent, f.SilentMaxMs, f.RoundMs, f.Resume, f.ResumeMaxMs, noteSuffix(f.Note))
			res.Freezes = append(res.Freezes, fr)
		}
	}
	return res, nil
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return " (" + n + ")"
}

// freezeOnce runs the shuffle in mode sc.Star.Mode with the FM frozen.
func freezeOnce(ctx context.Context, e *bed.Env, sc TDMAShuffleConfig, run int, fz TDMAFreezeConfig) (FreezeRun, error) {
	out := FreezeRun{Mode: sc.Star.Mode}
	n := sc.Star.Hosts
	trigger := uint64(fz.At * float64(int64(n*(n-1))*sc.Size))
	var fr FreezeResult
	a, tr, err := shuffleOnceWith(ctx, e, sc, "tdma", run, shuffleOpts{tag: "-freeze", slow: 1 + float64(fz.Dur)/float64(time.Second),
		during: freezeHook(n, trigger, fz.Dur, &fr)})
	if err != nil {
		return out, err
	}
	out.ShuffleArm = a
	slot := int64(sc.Star.Slot)
	if !fr.Triggered {
		out.Freeze = untriggered(fr.Note)
		return out, nil
	}
	out.Freeze = CheckFreeze(fr.StopNs, fr.ContNs, int64(n)*slot, int64(n)*slot, tr.Hosts)
	out.Freeze.TriggerBytes = fr.TriggerBytes
	if fr.Note != "" {
		out.Freeze.Note = fr.Note
	}
	return out, nil
}

// summarize fills the summary: medians per (loss, mode), and the freeze
// check.
func (r *TDMACtlLossResult) summarize() {
	r.Summary = nil
	for _, p := range r.Config.Losses {
		for _, m := range r.Config.Modes {
			s := CtlLossSumm{Loss: p, Mode: m}
			var ov, co, dr, bl, lf, ic, cl, le, oi []float64
			for _, a := range r.Runs {
				if a.Loss != p || a.Mode != m {
					continue
				}
				s.Runs++
				ov, co, dr, bl = append(ov, float64(a.OverrunBytes)), append(co, float64(a.Collisions)), append(dr, float64(a.Switch.Drops)), append(bl, a.Switch.P99BacklogPkts)
				lf, ic, cl, le = append(lf, float64(a.LostFrames)), append(ic, float64(a.Incomplete)), append(cl, float64(a.CtlLost)), append(le, float64(a.LeaseExpiries))
				oi = append(oi, a.OverIdeal)
			}
			if s.Runs == 0 {
				continue
			}
			s.OverrunBytes, s.Collisions, s.Drops, s.BacklogP99 = report.Median(ov), report.Median(co), report.Median(dr), report.Median(bl)
			s.LostFrames, s.Incomplete, s.CtlLost, s.LeaseExpiries, s.OverIdeal = report.Median(lf), report.Median(ic), report.Median(cl), report.Median(le), report.Median(oi)
			r.Summary = append(r.Summary, s)
		}
	}
	r.FreezeCheck = freezeVerdict(r.Freezes)
}

// freezeVerdict is met when every lease or free-run freeze run met both
// checks, missed if any missed one, not measured otherwise.
func freezeVerdict(fs []FreezeRun) string {
	v := ""
	for _, f := range fs {
		if f.Mode == "paper" {
			continue
		}
		switch checksVerdict(f.Freeze.Silent, f.Freeze.Resume) {
		case Missed:
			return Missed
		case Met:
			v = Met
		}
	}
	if v == "" && len(fs) > 0 {
		return NotMeasured
	}
	return v
}

// Text renders one line per run, the medians and the freezes.
func (r *TDMACtlLossResult) Text() string { return report.Sprint(r.write) }

func (r *TDMACtlLossResult) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "loss\tmode\trun\toverrun B\tcollisions\tswitch drops\tbacklog p99\tlost frames\tincomplete\tgrants lost\tlease expiries\tfree-run opens\t÷ ideal\tCPU %\tsteal %\tload")
	for _, a := range r.Runs {
		fmt.Fprintf(tw, "%g\t%s\t%d\t%d\t%d\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%.2f\t%.1f\n", a.Loss, a.Mode, a.Run, a.OverrunBytes, a.Collisions, a.Switch.Drops,
			a.Switch.P99BacklogPkts, a.LostFrames, a.Incomplete, a.CtlLost, a.LeaseExpiries, a.FreeRunOpens, a.OverIdeal, a.CPUBusyPct, a.StealPct, a.LoadAvg)
	}
	tw.Flush()
	if len(r.Summary) > 0 && r.Config.Shuffle.Runs > 1 {
		fmt.Fprintln(w, "\nmedians over the runs:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "loss\tmode\truns\toverrun B\tcollisions\tswitch drops\tbacklog p99\tlost frames\tincomplete\t÷ ideal")
		for _, s := range r.Summary {
			fmt.Fprintf(tw, "%g\t%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.3f\n", s.Loss, s.Mode, s.Runs, s.OverrunBytes, s.Collisions, s.Drops, s.BacklogP99, s.LostFrames, s.Incomplete, s.OverIdeal)
		}
		tw.Flush()
	}
	var cr []causeRun
	for _, a := range r.Runs {
		cr = append(cr, runCauses(fmt.Sprintf("%g %s %d", a.Loss, a.Mode, a.Run), &a.TDMACounters))
	}
	if len(cr) > 0 {
		printCauses(w, cr)
	}
	for _, f := range r.Freezes {
		z := f.Freeze
		fmt.Fprintf(w, "\nFM frozen, mode %s, run %d: SIGSTOP for %.1f ms after %.1f MiB had crossed the switch; lease %.0f ms, round %.0f ms%s\n",
			f.Mode, f.Run, z.FrozenMs, float64(z.TriggerBytes)/(1<<20), z.LeaseMs, z.RoundMs, noteSuffix(z.Note))
		if !z.Triggered {
			continue
		}
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "host\tstate\tlast heard ms (from STOP)\tsilent from ms (from STOP)\tsilent after heard ms\tlongest since heard ms\twithin lease\tresumed ms (from CONT)")
		for _, h := range z.Hosts {
			res := "-"
			if h.Resumed {
				res = fmt.Sprintf("%.2f", h.ResumeMs)
			}
			if h.State == "silent" {
				fmt.Fprintf(tw, "h%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%v\t%s\n", h.Host, h.State, h.HeardMs, h.SilentFromMs, h.SilentAfterHeardMs, h.SendSinceCtlMaxMs, h.Silent, res)
			} else {
				fmt.Fprintf(tw, "h%d\t%s\t-\t-\t-\t%.2f\t%v\t%s\n", h.Host, h.State, h.SendSinceCtlMaxMs, h.Silent, res)
			}
		}
		tw.Flush()
		check := ""
		if f.Mode == "paper" {
			check = " (paper mode has no lease: not part of the check)"
		}
		fmt.Fprintf(w, "  every host silent within the lease (%.0f ms): %s, longest %.2f ms; traffic resumed within a round (%.0f ms) of the CONT: %s, latest %.2f ms%s\n",
			z.LeaseMs, z.Silent, z.SilentMaxMs, z.RoundMs, z.Resume, z.ResumeMaxMs, check)
	}
	if r.FreezeCheck != "" {
		fmt.Fprintf(w, "\nfreeze check (lease and free-run modes): %s\n", r.FreezeCheck)
	}
	r.Precheck.print(w)
}

// WriteTDMACtlLoss writes ctlloss.json, ctlloss.csv (a row per run, the
// freeze runs with loss "freeze") and the bar charts ctlloss-overrun.png and
// ctlloss-collisions.png (medians per mode and loss) into dir.
func WriteTDMACtlLoss(dir string, r *TDMACtlLossResult) ([]string, error) {
	var rows [][]string
	row := func(loss, mode string, a ShuffleArm) {
		rows = append(rows, []string{loss, mode, strconv.Itoa(a.Run), strconv.FormatUint(a.OverrunBytes, 10), strconv.FormatUint(a.Collisions, 10),
			strconv.FormatUint(a.Switch.Drops, 10), strconv.FormatFloat(a.Switch.P99BacklogPkts, 'f', 1, 64), strconv.FormatUint(a.LostFrames, 10),
			strconv.Itoa(a.Incomplete), strconv.FormatUint(a.CtlLost, 10), strconv.FormatUint(a.LeaseExpiries, 10), strconv.FormatUint(a.FreeRunOpens, 10),
			strconv.FormatFloat(a.OverIdeal, 'f', 4, 64), strconv.FormatFloat(a.CPUBusyPct, 'f', 1, 64), strconv.FormatFloat(a.StealPct, 'f', 2, 64), strconv.FormatFloat(a.LoadAvg, 'f', 2, 64)})
	}
	for _, a := range r.Runs {
		row(strconv.FormatFloat(a.Loss, 'g', -1, 64), a.Mode, a.ShuffleArm)
	}
	for _, a := range r.Freezes {
		row("freeze", a.Mode, a.ShuffleArm)
	}
	paths, err := report.WriteTable(dir, "ctlloss", r, []string{"loss", "mode", "run", "overrun_bytes", "collisions", "switch_drops", "backlog_p99_frames", "lost_frames", "incomplete_flows",
		"control_lost", "lease_expiries", "freerun_opens", "completion_over_ideal", "cpu_busy_pct", "cpu_steal_pct", "load_avg"}, rows)
	if err != nil {
		return paths, err
	}
	if len(r.Summary) == 0 {
		return paths, nil
	}
	var groups []string
	for _, p := range r.Config.Losses {
		groups = append(groups, strconv.FormatFloat(100*p, 'g', -1, 64)+"%")
	}
	for _, c := range []struct {
		file, title, ylabel string
		v                   func(CtlLossSumm) float64
	}{
		{"ctlloss-overrun.png", "Overrun: bytes sent past the window's end plus guard, by control-frame loss", "overrun KiB (median over runs)", func(s CtlLossSumm) float64 { return s.OverrunBytes / 1024 }},
		{"ctlloss-collisions.png", "Collisions: frames received after their window's end plus guard, by control-frame loss", "collisions (median over runs)", func(s CtlLossSumm) float64 { return s.Collisions }},
	} {
		var series []report.BarSeries
		for _, m := range r.Config.Modes {
			bs := report.BarSeries{Name: m, Values: make([]float64, len(groups)), Labels: true}
			for g, p := range r.Config.Losses {
				bs.Values[g] = math.NaN()
				for _, s := range r.Summary {
					if s.Loss == p && s.Mode == m {
						bs.Values[g] = c.v(s)
					}
				}
			}
			series = append(series, bs)
		}
		pp := filepath.Join(dir, c.file)
		if err := report.PlotBars(pp, c.title, c.ylabel, groups, series, 0); err != nil {
			return paths, err
		}
		paths = append(paths, pp)
	}
	return paths, nil
}

func (r *TDMACtlLossResult) measured() bool {
	return r != nil && (len(r.Runs) > 0 || len(r.Freezes) > 0)
}
