package tdmaexp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// TDMASlotsConfig sizes `linkfabric tdma slots` (design §4 item 8): the
// TDMA shuffle at every slot length, to find the smallest slot that keeps
// the line busy (efficiency ≥ Target) without a switch drop.
type TDMASlotsConfig struct {
	Star  TDMAStar        `json:"star"` // Slot and Guard are set per run
	Slots []time.Duration `json:"slots_ns"`
	// Guard: 0 picks it from a calibration run (see GuardRule).
	Guard     time.Duration `json:"guard_ns"`
	Size      int64         `json:"size"`       // bytes per flow
	CalibSize int64         `json:"calib_size"` // bytes per flow of the calibration run
	Target    float64       `json:"target_efficiency"`
	Runs      int           `json:"runs"`
	Force     bool          `json:"force"`
	Dir       string        `json:"-"`
}

// GuardRule says how --guard auto picks the guard.
const GuardRule = "guard = max over hosts (p99.9 of grant delay − d_est) + max over hosts (d_est − p0.1 of grant delay, if > 0) + one full frame at the line rate, rounded up to 10 µs; " +
	"grant delay = a host's kernel receive time − the FM's send time in the grant (one clock for all namespaces), measured in a calibration shuffle at the largest slot with a guard of a tenth of it. " +
	"A host closes late by its delay − d_est and opens early by d_est − its delay, and the frame in flight needs its time on the receiver's port."

// GuardCalib is the measurement behind an automatic guard.
type GuardCalib struct {
	Slot     time.Duration `json:"slot_ns"` // of the calibration run
	RunGuard time.Duration `json:"run_guard_ns"`
	Hosts    []GuardHost   `json:"hosts"`
	LateUs   float64       `json:"close_late_us"` // max p99.9 − d_est
	EarlyUs  float64       `json:"open_early_us"` // max d_est − p0.1, ≥ 0
	FrameUs  float64       `json:"frame_us"`      // one full frame at the line rate
	Guard    time.Duration `json:"guard_ns"`
	Rule     string        `json:"rule"`
	Run      *ShuffleArm   `json:"run,omitempty"`
}

// GuardHost is one host's grant delays, µs.
type GuardHost struct {
	Host   int     `json:"host"`
	P001us float64 `json:"p001_us"`
	P50us  float64 `json:"p50_us"`
	P999us float64 `json:"p999_us"`
	DEstUs float64 `json:"d_est_us"`
}

// GuardFrom applies GuardRule to the agents' statistics at line rate
// rate (bit/s); ok is false if no host measured a grant.
func GuardFrom(hosts []host.Stats, rate uint64) (GuardCalib, bool) {
	var g GuardCalib
	ok := false
	for i, h := range hosts {
		if h.CtlDelayP50us == 0 {
			continue
		}
		ok = true
		d := float64(h.DelayEst) / 1e3
		if h.DelayEst <= 0 { // no calibration reached the host: its fastest grant stands in
			d = h.CtlDelayP001us
		}
		g.Hosts = append(g.Hosts, GuardHost{Host: i + 1, P001us: h.CtlDelayP001us, P50us: h.CtlDelayP50us, P999us: h.CtlDelayP999us, DEstUs: d})
		g.LateUs = max(g.LateUs, h.CtlDelayP999us-d)
		g.EarlyUs = max(g.EarlyUs, d-h.CtlDelayP001us)
	}
	g.FrameUs = float64(wireFrame) * 8e6 / float64(rate)
	us := math.Ceil((g.LateUs+g.EarlyUs+g.FrameUs)/10) * 10
	g.Guard, g.Rule = time.Duration(us)*time.Microsecond, GuardRule
	return g, ok
}

// SlotRun is one run at one slot length.
type SlotRun struct {
	Slot  time.Duration `json:"slot_ns"`
	Guard time.Duration `json:"guard_ns"`
	// Efficiency: the share of the receivers' line time that carried data
	// frames in the steady part of the shuffle (payload goodput ÷ (R ×
	// payload per wire frame)), the mean over hosts; GoodputOverR is the
	// payload goodput ÷ R, which also pays the raw frames' headers.
	Efficiency   float64 `json:"efficiency"`
	GoodputOverR float64 `json:"goodput_over_rate"`
	Expected     float64 `json:"expected_efficiency"` // (L − g)/L
	// GuardNeededUs: GuardRule applied to this run's own grant delays.
	GuardNeededUs float64 `json:"guard_needed_us"`
	Skipped       string  `json:"skipped,omitempty"`
	ShuffleArm
}

// SlotSumm is one slot length's medians over the runs.
type SlotSumm struct {
	Slot          time.Duration `json:"slot_ns"`
	Guard         time.Duration `json:"guard_ns"`
	Runs          int           `json:"runs"`
	Efficiency    float64       `json:"efficiency_median"`
	GoodputOverR  float64       `json:"goodput_over_rate_median"`
	Expected      float64       `json:"expected_efficiency"`
	Collisions    float64       `json:"collisions_median"`
	Drops         float64       `json:"switch_drops_median"`
	DropsMax      uint64        `json:"switch_drops_max"`
	BacklogP99    float64       `json:"backlog_p99_frames_median"`
	LostFrames    float64       `json:"lost_frames_median"`
	Incomplete    float64       `json:"incomplete_flows_median"`
	OverIdeal     float64       `json:"completion_over_ideal_median"`
	CtlOverhead   float64       `json:"control_overhead_pct_median"`
	GuardNeededUs float64       `json:"guard_needed_us_median"`
	// LostPerSlotUs is the line time lost per slot beyond the guard,
	// (expected − efficiency) × L: the window's late open, the margin, the
	// last frame that did not fit.
	LostPerSlotUs float64 `json:"lost_per_slot_beyond_guard_us"`
	CPUBusyPct    float64 `json:"cpu_busy_pct_median"`
	Meets         bool    `json:"meets"` // efficiency ≥ target and no drop in any run
	Skipped       string  `json:"skipped,omitempty"`
}

// SlotsSummary is the experiment's answer.
type SlotsSummary struct {
	Slots []SlotSumm `json:"slots"`
	// Smallest is the smallest slot that meets (0: none); Answer says it
	// in words.
	Smallest time.Duration `json:"smallest_slot_ns"`
	Answer   string        `json:"answer"`
}

// TDMASlotsResult is the experiment's outcome.
type TDMASlotsResult struct {
	Config  TDMASlotsConfig `json:"config"`
	Calib   *GuardCalib     `json:"guard_calibration,omitempty"`
	Runs    []SlotRun       `json:"runs"`
	Summary SlotsSummary    `json:"summary"`
	Precheck
}

// steadyRate returns a host's receive rate (bytes/s) between the times its
// received bytes crossed lo and hi of their final value (linear between
// samples): the steady part of the transfer, without the start and the
// last round. ok is false if the host received nothing or the crossings
// coincide.
func steadyRate(p HostProgress, lo, hi float64) (float64, bool) {
	n := min(len(p.T), len(p.Bytes))
	if n < 2 || p.Bytes[n-1] <= 0 {
		return 0, false
	}
	final := float64(p.Bytes[n-1])
	cross := func(v float64) float64 {
		for k := 1; k < n; k++ {
			b0, b1 := float64(p.Bytes[k-1]), float64(p.Bytes[k])
			if b1 >= v && b1 > b0 {
				f := max(0, (v-b0)/(b1-b0))
				return p.T[k-1] + f*(p.T[k]-p.T[k-1])
			}
		}
		return math.NaN()
	}
	t0, t1 := cross(lo*final), cross(hi*final)
	if !(t1 > t0) {
		return 0, false
	}
	return (hi - lo) * final / (t1 - t0), true
}

// slotEfficiency computes a run's efficiency and goodput ÷ R from the
// hosts' progress (the mean over hosts with a steady part), at rate bit/s.
func slotEfficiency(prog []HostProgress, rate uint64) (eff, goodput float64, ok bool) {
	var sum float64
	k := 0
	for _, p := range prog {
		if r, ok := steadyRate(p, 0.1, 0.9); ok {
			sum += r * 8 / float64(rate)
			k++
		}
	}
	if k == 0 {
		return 0, 0, false
	}
	goodput = sum / float64(k)
	return goodput * wireFrame / rawPayload, goodput, true
}

// TDMASlots runs the calibration (for an automatic guard), then every slot
// length Runs times, interleaved.
func TDMASlots(ctx context.Context, e *bed.Env, cfg TDMASlotsConfig) (*TDMASlotsResult, error) {
	if len(cfg.Slots) == 0 {
		return nil, fmt.Errorf("tdma slots: no slot length")
	}
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMASlotsResult{Config: cfg, Precheck: pre}
	defer res.summarize()
	guard := cfg.Guard
	if guard == 0 {
		c, err := calibrateGuard(ctx, e, cfg)
		if err != nil {
			return res, err
		}
		res.Calib, guard = c, c.Guard
	}
	margin := cfg.Star.Margin
	for run := 1; run <= cfg.Runs; run++ {
		for _, L := range cfg.Slots {
			sr := SlotRun{Slot: L, Guard: guard, Expected: float64(L-guard) / float64(L)}
			sr.Run, sr.Arm = run, "tdma"
			if guard+margin >= L {
				sr.Expected = 0
				sr.Skipped = fmt.Sprintf("guard %v and margin %v leave nothing of a %v slot", guard, margin, L)
				e.Printf("tdma slots: run %d/%d, slot %v: skipped, %s", run, cfg.Runs, L, sr.Skipped)
				res.Runs = append(res.Runs, sr)
				continue
			}
			sc := TDMAShuffleConfig{Star: cfg.Star, Size: cfg.Size, Arms: []string{"tdma"}, Runs: cfg.Runs, Force: cfg.Force, Dir: cfg.Dir}
			sc.Star.Slot, sc.Star.Guard = L, guard
			e.Printf("tdma slots: run %d/%d, slot %v, guard %v (expected efficiency (L−g)/L = %.3f; %d hosts, %s per flow, load average %.1f)",
				run, cfg.Runs, L, guard, sr.Expected, cfg.Star.Hosts, fct.FormatSize(cfg.Size), bed.LoadAvg())
			a, tr, err := shuffleOnceWith(ctx, e, sc, "tdma", run, shuffleOpts{tag: "-slot" + L.String(), slow: 1 / max(sr.Expected, 0.05)})
			if err != nil {
				return res, fmt.Errorf("slot %v, run %d: %w", L, run, err)
			}
			sr.ShuffleArm = a
			if eff, gp, ok := slotEfficiency(a.Progress, uint64(cfg.Star.Rate)); ok {
				sr.Efficiency, sr.GoodputOverR = eff, gp
			}
			if g, ok := GuardFrom(tr.Hosts, uint64(cfg.Star.Rate)); ok {
				sr.GuardNeededUs = float64(g.Guard) / 1e3
			}
			e.Printf("  efficiency %.3f (goodput ÷ R %.3f), collisions %d, switch drops %d, lost frames %d, incomplete flows %d, ÷ ideal %.3f, guard needed %.0f µs, control %.3f %%, CPU %.0f %%",
				sr.Efficiency, sr.GoodputOverR, a.Collisions, a.Switch.Drops, a.LostFrames, a.Incomplete, a.OverIdeal, sr.GuardNeededUs, a.CtlOverheadPct, a.CPUBusyPct)
			res.Runs = append(res.Runs, sr)
		}
	}
	return res, nil
}

// calibrateGuard runs the calibration shuffle and applies GuardRule.
func calibrateGuard(ctx context.Context, e *bed.Env, cfg TDMASlotsConfig) (*GuardCalib, error) {
	L := slices.Max(cfg.Slots)
	sc := TDMAShuffleConfig{Star: cfg.Star, Size: cfg.CalibSize, Arms: []string{"tdma"}, Runs: 1, Force: cfg.Force, Dir: cfg.Dir}
	sc.Star.Slot, sc.Star.Guard = L, L/10
	e.Printf("tdma slots: calibrating the guard: a shuffle of %s per flow at slot %v, guard %v, measuring every grant's delay (load average %.1f)",
		fct.FormatSize(cfg.CalibSize), L, L/10, bed.LoadAvg())
	a, tr, err := shuffleOnceWith(ctx, e, sc, "tdma", 0, shuffleOpts{tag: "-calibration"})
	if err != nil {
		return nil, fmt.Errorf("guard calibration: %w", err)
	}
	g, ok := GuardFrom(tr.Hosts, uint64(cfg.Star.Rate))
	if !ok {
		return nil, fmt.Errorf("guard calibration: no host measured a grant's delay; give --guard explicitly")
	}
	g.Slot, g.RunGuard, g.Run = L, L/10, &a
	e.Printf("  grant delay: closes late by up to %.0f µs (p99.9 − d_est), opens early by up to %.0f µs (d_est − p0.1), one frame %.0f µs: guard %v",
		g.LateUs, g.EarlyUs, g.FrameUs, g.Guard)
	return &g, nil
}

// summarize fills the summary from the runs.
func (r *TDMASlotsResult) summarize() {
	r.Summary = summarizeSlots(r.Config.Slots, r.Runs, r.Config.Target)
}

// summarizeSlots takes the medians per slot length and finds the smallest
// slot whose median efficiency reaches target with no switch drop in any
// run.
func summarizeSlots(slots []time.Duration, runs []SlotRun, target float64) SlotsSummary {
	var s SlotsSummary
	for _, L := range slots {
		m := SlotSumm{Slot: L}
		var ef, gp, co, dr, bl, lf, ic, oi, ov, gn, cpu []float64
		for _, r := range runs {
			if r.Slot != L {
				continue
			}
			m.Guard, m.Expected = r.Guard, r.Expected
			if r.Skipped != "" {
				m.Skipped = r.Skipped
				continue
			}
			m.Runs++
			ef, gp, co, dr = append(ef, r.Efficiency), append(gp, r.GoodputOverR), append(co, float64(r.Collisions)), append(dr, float64(r.Switch.Drops))
			bl, lf, ic, oi = append(bl, r.Switch.P99BacklogPkts), append(lf, float64(r.LostFrames)), append(ic, float64(r.Incomplete)), append(oi, r.OverIdeal)
			ov, gn, cpu = append(ov, r.CtlOverheadPct), append(gn, r.GuardNeededUs), append(cpu, r.CPUBusyPct)
			m.DropsMax = max(m.DropsMax, r.Switch.Drops)
		}
		if m.Runs > 0 {
			m.Skipped = ""
			m.Efficiency, m.GoodputOverR, m.Collisions, m.Drops = report.Median(ef), report.Median(gp), report.Median(co), report.Median(dr)
			m.BacklogP99, m.LostFrames, m.Incomplete, m.OverIdeal = report.Median(bl), report.Median(lf), report.Median(ic), report.Median(oi)
			m.CtlOverhead, m.GuardNeededUs, m.CPUBusyPct = report.Median(ov), report.Median(gn), report.Median(cpu)
			m.LostPerSlotUs = (m.Expected - m.Efficiency) * float64(L) / 1e3
			m.Meets = m.Efficiency >= target && m.DropsMax == 0
		}
		s.Slots = append(s.Slots, m)
	}
	slices.SortFunc(s.Slots, func(a, b SlotSumm) int { return cmp.Compare(a.Slot, b.Slot) })
	for _, m := range s.Slots {
		if m.Meets {
			s.Smallest = m.Slot
			s.Answer = fmt.Sprintf("the smallest slot with efficiency ≥ %.0f %% and no switch drop is %v (guard %v): efficiency %.3f (median of %d)",
				100*target, m.Slot, m.Guard, m.Efficiency, m.Runs)
			return s
		}
	}
	s.Answer = fmt.Sprintf("no slot reached efficiency ≥ %.0f %% without a switch drop", 100*target)
	if len(s.Slots) > 0 {
		best := slices.MaxFunc(s.Slots, func(a, b SlotSumm) int { return cmp.Compare(a.Efficiency, b.Efficiency) })
		s.Answer += fmt.Sprintf("; the best was %v at %.3f", best.Slot, best.Efficiency)
	}
	return s
}

// Text renders the calibration, one line per run and the medians.
func (r *TDMASlotsResult) Text() string { return report.Sprint(r.write) }

func (r *TDMASlotsResult) write(w io.Writer) {
	if c := r.Calib; c != nil {
		fmt.Fprintf(w, "guard (auto): %v = close late %.0f µs + open early %.0f µs + one frame %.0f µs, from the calibration at slot %v:\n", c.Guard, c.LateUs, c.EarlyUs, c.FrameUs, c.Slot)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  host\tgrant delay p0.1 µs\tp50 µs\tp99.9 µs\td_est µs")
		for _, h := range c.Hosts {
			fmt.Fprintf(tw, "  h%d\t%.0f\t%.0f\t%.0f\t%.1f\n", h.Host, h.P001us, h.P50us, h.P999us, h.DEstUs)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "slot\tguard\trun\tefficiency\tgoodput÷R\texpected\tcollisions\tswitch drops\tbacklog p99\tlost frames\tincomplete\t÷ ideal\tguard needed µs\tctl %\tCPU %\tload")
	for _, a := range r.Runs {
		if a.Skipped != "" {
			fmt.Fprintf(tw, "%v\t%v\t%d\tskipped: %s\n", a.Slot, a.Guard, a.Run, a.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%v\t%v\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\t%.0f\t%d\t%d\t%.3f\t%.0f\t%.3f\t%.0f\t%.1f\n", a.Slot, a.Guard, a.Run, a.Efficiency, a.GoodputOverR, a.Expected,
			a.Collisions, a.Switch.Drops, a.Switch.P99BacklogPkts, a.LostFrames, a.Incomplete, a.OverIdeal, a.GuardNeededUs, a.CtlOverheadPct, a.CPUBusyPct, a.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians over the runs:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "slot\tguard\truns\tefficiency\texpected\tlost per slot beyond the guard µs\tcollisions\tswitch drops (max)\tlost frames\tincomplete\tmeets")
	for _, m := range r.Summary.Slots {
		if m.Runs == 0 {
			fmt.Fprintf(tw, "%v\t%v\t0\tskipped: %s\n", m.Slot, m.Guard, m.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%v\t%v\t%d\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f (%d)\t%.0f\t%.0f\t%v\n", m.Slot, m.Guard, m.Runs, m.Efficiency, m.Expected, m.LostPerSlotUs,
			m.Collisions, m.Drops, m.DropsMax, m.LostFrames, m.Incomplete, m.Meets)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%s (the design expected 2–5 ms; the paper had 300 µs)\n", r.Summary.Answer)
	r.Precheck.print(w)
}

// WriteTDMASlots writes slots.json, slots.csv and slots-efficiency.png
// into dir and returns the paths written.
func WriteTDMASlots(dir string, r *TDMASlotsResult) ([]string, error) {
	ff := func(v float64, p int) string { return strconv.FormatFloat(v, 'f', p, 64) }
	var rows [][]string
	for _, a := range r.Runs {
		rows = append(rows, []string{ff(float64(a.Slot)/1e6, 3), ff(float64(a.Guard)/1e3, 0), strconv.Itoa(a.Run), ff(a.Efficiency, 4), ff(a.GoodputOverR, 4), ff(a.Expected, 4),
			strconv.FormatUint(a.Collisions, 10), strconv.FormatUint(a.Switch.Drops, 10), ff(a.Switch.P99BacklogPkts, 1), strconv.FormatUint(a.LostFrames, 10),
			strconv.Itoa(a.Incomplete), ff(a.OverIdeal, 4), ff(a.GuardNeededUs, 0), ff(a.CtlOverheadPct, 4), ff(a.CPUBusyPct, 1), ff(a.LoadAvg, 2), a.Skipped})
	}
	paths, err := report.WriteTable(dir, "slots", r, []string{"slot_ms", "guard_us", "run", "efficiency", "goodput_over_rate", "expected_efficiency", "collisions", "switch_drops", "backlog_p99_frames",
		"lost_frames", "incomplete_flows", "completion_over_ideal", "guard_needed_us", "control_overhead_pct", "cpu_busy_pct", "load_avg", "skipped"}, rows)
	if err != nil {
		return paths, err
	}
	pp := filepath.Join(dir, "slots-efficiency.png")
	if err := PlotSlots(pp, r); err != nil {
		return paths, err
	}
	return append(paths, pp), nil
}

// PlotSlots draws efficiency against slot length: every run, the medians,
// the expectation (L − g)/L and the target.
func PlotSlots(path string, r *TDMASlotsResult) error {
	var mx, my, ex, ey, rx, ry []float64
	for _, m := range r.Summary.Slots {
		ms := float64(m.Slot) / 1e6
		ex, ey = append(ex, ms), append(ey, m.Expected)
		if m.Runs > 0 {
			mx, my = append(mx, ms), append(my, m.Efficiency)
		}
	}
	for _, a := range r.Runs {
		if a.Skipped == "" {
			rx, ry = append(rx, float64(a.Slot)/1e6), append(ry, a.Efficiency)
		}
	}
	if len(mx) == 0 {
		return fmt.Errorf("tdma slots: no run to plot")
	}
	lo, hi := slices.Min(ex), slices.Max(ex)
	title := fmt.Sprintf("TDMA shuffle, %d hosts at %v bit/s: share of line time used", r.Config.Star.Hosts, r.Config.Star.Rate)
	if len(r.Runs) > 0 {
		title += fmt.Sprintf(", guard %v", r.Runs[0].Guard)
	}
	return report.PlotPanels(path, []report.LinePanel{{Title: title, XLabel: "slot (ms)", YLabel: "efficiency", LogX: true, YMin: 0, YMax: 1.05,
		Series: []report.LineSeries{
			{Name: "median", X: mx, Y: my, Points: true},
			{Name: "runs", X: rx, Y: ry, Scatter: true},
			{Name: "(L − g)/L", X: ex, Y: ey, Ref: true},
			{Name: fmt.Sprintf("target %.2f", r.Config.Target), X: []float64{lo, hi}, Y: []float64{r.Config.Target, r.Config.Target}, Ref: true},
		}}})
}

func (r *TDMASlotsResult) measured() bool { return r != nil && (len(r.Runs) > 0 || r.Calib != nil) }
