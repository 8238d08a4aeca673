package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/simfab"
	"github.com/spf13/cobra"
)

func cellsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cells",
		Short: "Cells with credits (Stardust, Aquila GNet): experiments",
		Long: `cells groups the experiments on cells with credits (package cellify): a
fabric of edge and fabric nodes that packs host frames into cells, sprays them
over every usable link and schedules them with credits from the egress port.

  sim       the simulated fabric (package simfab): the design study's scenarios
            on a virtual clock, deterministic for a seed, no root needed
  failover  a bundle link cut under UDP load, cells over lg vs bare (veth, root)
  gray      bursty loss on bundle links: UDP loss and TCP goodput over lg (veth, root)`,
		Example: `  linkfabric cells sim --scenario incast`,
	}
	cmd.AddCommand(cellsSimCmd(), cellsFailoverCmd(), cellsGrayCmd())
	return cmd
}

// cellsFigure is a figure in the JSON report; Min and Max are absent when
// that side of the range is open.
type cellsFigure struct {
	Name  string   `json:"name"`
	Value float64  `json:"value"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	OK    bool     `json:"ok"`
	Why   string   `json:"why,omitempty"`
}

type cellsScenario struct {
	Name    string        `json:"name"`
	Brief   string        `json:"brief"`
	Pass    bool          `json:"pass"`
	WallMs  float64       `json:"wall_ms"`
	SimMs   float64       `json:"sim_ms"`
	Events  uint64        `json:"events"`
	Figures []cellsFigure `json:"figures"`
}

type cellsSimReport struct {
	Seed      uint64          `json:"seed"`
	Scenarios []cellsScenario `json:"scenarios"`
	// Summary: pass, scenarios, failed, and every figure as
	// <scenario>_<figure>.
	Summary map[string]any `json:"summary"`
}

func cellsSimCmd() *cobra.Command {
	var (
		scenario string
		seed     uint64
		asJSON   bool
		out      string
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated cell fabric's scenarios and check their figures",
		Long: `sim runs scenarios of the simulated cell fabric (package simfab): nodes running
the real cellify logic over links with rate, delay, bounded queues and loss, on
a virtual clock. Each scenario measures figures and checks each against the
range the design study gives (see the why column); the command fails if any
figure is out of range.

Scenarios:
` + cellsScenarioList() + `
A run is deterministic for its seed. scale takes 15–30 s; the others under 2 s each.`,
		Example: `  linkfabric cells sim
  linkfabric cells sim --scenario pushpull --seed 7
  linkfabric cells sim --scenario all --json --out out/cells-sim.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []simfab.Scenario
			if scenario == "all" || scenario == "" {
				list = simfab.Scenarios()
			} else {
				for _, name := range strings.Split(scenario, ",") {
					sc, ok := simfab.Find(strings.TrimSpace(name))
					if !ok {
						return fmt.Errorf("--scenario: no scenario %q (have: %s, all)", name, strings.Join(cellsScenarioNames(), ", "))
					}
					list = append(list, sc)
				}
			}
			rep := cellsSimReport{Seed: seed, Summary: map[string]any{}}
			var failed []string
			for _, sc := range list {
				res, err := cellsRunOne(sc, seed)
				if err != nil {
					return fmt.Errorf("scenario %s: %w", sc.Name, err)
				}
				cs := cellsScenario{Name: sc.Name, Brief: sc.Brief, Pass: res.Pass(),
					WallMs: float64(res.Wall.Microseconds()) / 1e3, SimMs: float64(res.SimNs) / 1e6, Events: res.Events}
				for _, f := range res.Figures {
					cf := cellsFigure{Name: f.Name, Value: f.Value, OK: f.OK(), Why: f.Why}
					if !math.IsNaN(f.Min) {
						cf.Min = &f.Min
					}
					if !math.IsNaN(f.Max) {
						cf.Max = &f.Max
					}
					if math.IsNaN(cf.Value) || math.IsInf(cf.Value, 0) {
						cf.Value = 0
						cf.OK = false
					}
					cs.Figures = append(cs.Figures, cf)
					rep.Summary[sc.Name+"_"+f.Name] = cf.Value
				}
				if !cs.Pass {
					failed = append(failed, sc.Name)
				}
				rep.Scenarios = append(rep.Scenarios, cs)
			}
			rep.Summary["scenarios"] = len(list)
			rep.Summary["passed"] = len(list) - len(failed)
			rep.Summary["failed"] = failed
			rep.Summary["pass"] = len(failed) == 0
			if err := report(rep, cellsSimText(&rep), out, asJSON); err != nil {
				return err
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d scenarios out of range: %s", len(failed), len(list), strings.Join(failed, ", "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "scenario name, a comma-separated list, or all")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed (a run is deterministic for it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&out, "out", "", "also write the JSON report to this file (e.g. out/cells-sim.json)")
	return cmd
}

// cellsRunOne runs a scenario, printing progress to stderr while it takes
// more than a second.
func cellsRunOne(sc simfab.Scenario, seed uint64) (*simfab.Result, error) {
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTimer(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "cells sim: %s running, %.0f s\n", sc.Name, time.Since(start).Seconds())
				t.Reset(5 * time.Second)
			}
		}
	}()
	res, err := sc.Run(seed)
	close(done)
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(os.Stderr, "cells sim: %s done in %.1f s\n", sc.Name, d.Seconds())
	}
	return res, err
}

func cellsSimText(rep *cellsSimReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cells sim, seed %d\n", rep.Seed)
	for _, sc := range rep.Scenarios {
		verdict := "pass"
		if !sc.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "\n%s: %s  (%s; %.1f ms simulated, %d events, %.2f s)\n", sc.Name, sc.Brief, verdict, sc.SimMs, sc.Events, sc.WallMs/1e3)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  figure\tvalue\trange\t\twhy")
		for _, f := range sc.Figures {
			mark := ""
			if !f.OK {
				mark = "OUT"
			}
			fmt.Fprintf(tw, "  %s\t%.4g\t%s\t%s\t%s\n", f.Name, f.Value, cellsRange(f.Min, f.Max), mark, f.Why)
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\n%d of %d scenarios within range\n", rep.Summary["passed"], rep.Summary["scenarios"])
	return b.String()
}

func cellsRange(lo, hi *float64) string {
	switch {
	case lo == nil && hi == nil:
		return "-"
	case lo == nil:
		return fmt.Sprintf("≤ %.4g", *hi)
	case hi == nil:
		return fmt.Sprintf("≥ %.4g", *lo)
	case *lo == *hi:
		return fmt.Sprintf("= %.4g", *lo)
	}
	return fmt.Sprintf("[%.4g, %.4g]", *lo, *hi)
}

func cellsScenarioNames() []string {
	var n []string
	for _, sc := range simfab.Scenarios() {
		n = append(n, sc.Name)
	}
	return n
}

func cellsScenarioList() string {
	var b strings.Builder
	for _, sc := range simfab.Scenarios() {
		fmt.Fprintf(&b, "  %-11s %s\n", sc.Name, sc.Brief)
	}
	return b.String()
}
