package tdmaexp

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/tdma/clock"
)

// TDMAProbeTimersConfig sizes `linkfabric tdma probe timers` (design §2.2):
// how late each way of waking at slot boundaries t0 + k·period is.
type TDMAProbeTimersConfig struct {
	Periods []time.Duration `json:"periods_ns"`
	Samples int             `json:"samples"` // boundaries per method and period
	RT      int             `json:"rt"`      // SCHED_FIFO priority of the hybrid-rt method; 0: skip it
	Force   bool            `json:"force"`
}

// Timer methods, in table order.
const (
	TimerSleep    = "sleep"     // time.Sleep to each deadline
	TimerTicker   = "ticker"    // a time.Ticker of the period
	TimerHybrid   = "hybrid"    // clock.Sleeper on a locked thread, CFS
	TimerHybridRT = "hybrid-rt" // the same under SCHED_FIFO
)

// TimerRow is one method at one period.
type TimerRow struct {
	Method   string    `json:"method"`
	Sched    string    `json:"sched"` // CFS or FIFO <prio>
	PeriodNs int64     `json:"period_ns"`
	Late     Quantiles `json:"late"`
	// Missed: ticks the ticker skipped (it fell more than a period
	// behind); the boundaries they stood for count as late as the tick
	// that came.
	Missed  int    `json:"missed_ticks,omitempty"`
	Skipped string `json:"skipped,omitempty"` // why the row did not run
	samples []time.Duration
}

// TimerSumm is one period's verdict.
type TimerSumm struct {
	GoP50us     float64 `json:"go_timer_p50_us"` // the better of time.Sleep and the ticker
	HybridP50us float64 `json:"hybrid_p50_us"`   // the hybrid sleeper under the best scheduler that ran
	HybridP99us float64 `json:"hybrid_p99_us"`
	HybridP999  float64 `json:"hybrid_p99_9_us"`
	HybridSched string  `json:"hybrid_sched"`
}

// TDMAProbeTimersResult is the probe's outcome.
type TDMAProbeTimersResult struct {
	Config  TDMAProbeTimersConfig `json:"config"`
	Machine ProbeMachine          `json:"machine"`
	Rows    []TimerRow            `json:"rows"`
	Summary map[string]TimerSumm  `json:"summary"` // by period ("1ms")
}

// TDMAProbeTimers measures each method at each period.
func TDMAProbeTimers(ctx context.Context, e *bed.Env, cfg TDMAProbeTimersConfig) (*TDMAProbeTimersResult, error) {
	if cfg.Samples < 1 || len(cfg.Periods) == 0 {
		return nil, fmt.Errorf("tdma probe timers: %d samples, %d periods: want at least one of each", cfg.Samples, len(cfg.Periods))
	}
	m, err := probeStart(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMAProbeTimersResult{Config: cfg, Machine: m, Summary: map[string]TimerSumm{}}
	methods := []string{TimerSleep, TimerTicker, TimerHybrid}
	if cfg.RT > 0 {
		methods = append(methods, TimerHybridRT)
	}
	for _, p := range cfg.Periods {
		if p < 10*time.Microsecond {
			return nil, fmt.Errorf("tdma probe timers: period %v: want at least 10µs", p)
		}
		for _, meth := range methods {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			e.Printf("tdma probe timers: %s at %v, %d boundaries (%.1f s, load average %.1f)", meth, p, cfg.Samples, (p * time.Duration(cfg.Samples)).Seconds(), bed.LoadAvg())
			r := timerRow(meth, p, cfg.Samples, cfg.RT)
			if r.Skipped != "" {
				e.Printf("  skipped: %s", r.Skipped)
			} else {
				e.Printf("  %s: late p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs, max %.1f µs%s", r.Sched, r.Late.P50, r.Late.P99, r.Late.P999, r.Late.Max, missedNote(r.Missed))
			}
			res.Rows = append(res.Rows, r)
		}
		res.Summary[periodName(p)] = timerSummary(res.Rows, int64(p))
	}
	res.Machine.finish()
	return res, nil
}

// periodName is p in ASCII ("300us", "1ms"): summary keys, file names.
func periodName(p time.Duration) string { return strings.ReplaceAll(p.String(), "µ", "u") }

func missedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d ticks skipped", n)
}

// timerRow runs one method for n boundaries of period p.
func timerRow(method string, p time.Duration, n, rt int) TimerRow {
	r := TimerRow{Method: method, Sched: "CFS", PeriodNs: int64(p), samples: make([]time.Duration, n)}
	out, P := r.samples, int64(p)
	switch method {
	case TimerSleep: // an ordinary goroutine, as a Go program would wait
		t0 := clock.Now() + P
		for k := range out {
			d := t0 + int64(k)*P
			time.Sleep(time.Duration(d - clock.Now()))
			out[k] = time.Duration(clock.Now() - d)
		}
	case TimerTicker:
		// A tick carries the boundary it stands for (the time it was due)
		// and tells the program that every boundary since the last tick
		// has passed: each of them is as late as the tick. Ticks the
		// runtime never delivered (it fell a period behind) are counted.
		t := time.NewTicker(p)
		var tv1 time.Time
		next := int64(0) // boundaries counted from the first tick's
		for k := 0; k < n; {
			tv := <-t.C
			now := time.Now()
			if tv1.IsZero() {
				tv1 = tv
			}
			b := max(int64((tv.Sub(tv1)+p/2)/p), next)
			r.Missed += int(b - next)
			for ; next <= b && k < n; next++ {
				out[k] = now.Sub(tv1.Add(time.Duration(next) * p))
				k++
			}
		}
		t.Stop()
	case TimerHybrid, TimerHybridRT:
		prio := 0
		if method == TimerHybridRT {
			prio = rt
		}
		done := make(chan struct{})
		go func() { // a fresh locked thread, ended with the goroutine
			defer close(done)
			sched, err := lockProbeThread(prio)
			r.Sched = sched
			if err != nil {
				r.Skipped = err.Error() + "; the hybrid CFS row is the fallback"
				return
			}
			var s clock.Sleeper
			t0 := clock.Now() + P
			for k := range out {
				d := t0 + int64(k)*P
				out[k] = time.Duration(s.SleepUntil(d) - d)
			}
		}()
		<-done
	}
	if r.Skipped != "" {
		r.samples = nil
		return r
	}
	r.Late = quantilesOf(out)
	return r
}

// timerSummary is period's verdict from the rows measured so far.
func timerSummary(rows []TimerRow, period int64) TimerSumm {
	var s TimerSumm
	first := true
	for _, r := range rows {
		if r.PeriodNs != period || r.Skipped != "" {
			continue
		}
		switch r.Method {
		case TimerSleep, TimerTicker:
			if first || r.Late.P50 < s.GoP50us {
				s.GoP50us = r.Late.P50
			}
			first = false
		case TimerHybrid, TimerHybridRT: // the RT row, when it ran, comes last
			s.HybridP50us, s.HybridP99us, s.HybridP999, s.HybridSched = r.Late.P50, r.Late.P99, r.Late.P999, r.Sched
		}
	}
	return s
}

// Text is the table and the verdict.
func (r *TDMAProbeTimersResult) Text() string {
	var b strings.Builder
	tw := report.NewTable(&b)
	fmt.Fprintln(tw, "period\tmethod\tsched\tn\tp50 µs\tp99 µs\tp99.9 µs\tmax µs\tskipped ticks\t")
	for _, x := range r.Rows {
		if x.Skipped != "" {
			fmt.Fprintf(tw, "%v\t%s\t%s\t-\t-\t-\t-\t-\t-\t\n", time.Duration(x.PeriodNs), x.Method, "not run")
			continue
		}
		fmt.Fprintf(tw, "%v\t%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", time.Duration(x.PeriodNs), x.Method, x.Sched, x.Late.N, x.Late.P50, x.Late.P99, x.Late.P999, x.Late.Max, x.Missed)
	}
	tw.Flush()
	for _, x := range r.Rows {
		if x.Skipped != "" {
			fmt.Fprintf(&b, "\n%s at %v not run: %s\n", x.Method, time.Duration(x.PeriodNs), x.Skipped)
		}
	}
	fmt.Fprintln(&b, "\nwhy Go timers are not used for slot boundaries:")
	for _, p := range r.Config.Periods {
		s := r.Summary[periodName(p)]
		fmt.Fprintf(&b, "  %-6v Go timers wake p50 %.0f µs late (the better of time.Sleep and the ticker); the hybrid sleeper (%s) p50 %.1f, p99 %.1f, p99.9 %.1f µs\n",
			p, s.GoP50us, s.HybridSched, s.HybridP50us, s.HybridP99us, s.HybridP999)
	}
	r.Machine.text(&b)
	return b.String()
}

// WriteFiles writes timers.json, timers.csv (every sample) and one CDF
// PNG per period into dir.
func (r *TDMAProbeTimersResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	for _, x := range r.Rows {
		for i, d := range x.samples {
			rows = append(rows, []string{x.Method, x.Sched, strconv.FormatInt(x.PeriodNs/1000, 10), strconv.Itoa(i), strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64)})
		}
	}
	files, err := report.WriteTable(dir, "timers", r, []string{"method", "sched", "period_us", "boundary", "late_us"}, rows)
	if err != nil {
		return files, err
	}
	for _, p := range r.Config.Periods {
		var names []string
		var samples [][]time.Duration
		for _, x := range r.Rows {
			if x.PeriodNs == int64(p) && len(x.samples) > 0 {
				names = append(names, x.Method+" ("+x.Sched+")")
				samples = append(samples, x.samples)
			}
		}
		png := filepath.Join(dir, "timers-"+periodName(p)+".png")
		if err := plotProbeCDF(png, "slot-boundary lateness, "+p.String()+" period", "wake-up after the deadline (µs)", names, samples); err != nil {
			return files, err
		}
		files = append(files, png)
	}
	return files, nil
}
