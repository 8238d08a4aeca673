package experiment

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// TDMACtlLossConfig sizes `linkfabric tdma ctlloss`: the shuffle under
// lost grants (dropped by each agent with probability Loss, seeded), in
// each gate mode.
type TDMACtlLossConfig struct {
	Shuffle TDMAShuffleConfig `json:"shuffle"`
	Losses  []float64         `json:"losses"`
	Modes   []string          `json:"modes"` // paper, lease, freerun
}

// CtlLossRun is one (loss, mode, run).
type CtlLossRun struct {
	Loss float64 `json:"loss"`
	Mode string  `json:"mode"`
	ShuffleArm
}

// TDMACtlLossResult is the experiment's outcome.
type TDMACtlLossResult struct {
	Config TDMACtlLossConfig `json:"config"`
	Runs   []CtlLossRun      `json:"runs"`
	Precheck
}

// TDMACtlLoss runs the shuffle at every loss in every mode, Runs times.
func (e *Env) TDMACtlLoss(ctx context.Context, cfg TDMACtlLossConfig) (*TDMACtlLossResult, error) {
	pre, err := e.precheck(cfg.Shuffle.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMACtlLossResult{Config: cfg, Precheck: pre}
	for run := 1; run <= cfg.Shuffle.Runs; run++ {
		for _, p := range cfg.Losses {
			for _, m := range cfg.Modes {
				sc := cfg.Shuffle
				sc.Star.Mode = m
				e.progress("tdma ctlloss: run %d/%d, control loss %g, mode %s (load average %.1f)", run, sc.Runs, p, m, LoadAvg())
				a, err := e.shuffleOnce(ctx, sc, "tdma", run, []string{"--drop-control", strconv.FormatFloat(p, 'g', -1, 64), "--seed", strconv.Itoa(run)})
				if err != nil {
					return res, fmt.Errorf("loss %g, mode %s: %w", p, m, err)
				}
				e.progress("  overrun %d B, collisions %d, switch drops %d, lost frames %d, grants lost %d, lease expiries %d, ÷ ideal %.3f",
					a.OverrunBytes, a.Collisions, a.Switch.Drops, a.LostFrames, a.CtlLost, a.LeaseExpiries, a.OverIdeal)
				res.Runs = append(res.Runs, CtlLossRun{Loss: p, Mode: m, ShuffleArm: a})
			}
		}
	}
	return res, nil
}

// PrintTDMACtlLoss prints one line per run.
func PrintTDMACtlLoss(w io.Writer, r *TDMACtlLossResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "loss\tmode\trun\toverrun B\tcollisions\tswitch drops\tbacklog p99\tlost frames\tincomplete\tgrants lost\tlease expiries\tfree-run opens\t÷ ideal\tCPU %\tload")
	for _, a := range r.Runs {
		fmt.Fprintf(tw, "%g\t%s\t%d\t%d\t%d\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%.1f\n", a.Loss, a.Mode, a.Run, a.OverrunBytes, a.Collisions, a.Switch.Drops,
			a.Switch.P99BacklogPkts, a.LostFrames, a.Incomplete, a.CtlLost, a.LeaseExpiries, a.FreeRunOpens, a.OverIdeal, a.CPUBusyPct, a.LoadAvg)
	}
	tw.Flush()
	r.Precheck.print(w)
}
