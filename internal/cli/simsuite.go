package cli

import (
	"fmt"
	"github.com/spf13/cobra"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/scenario"
)

// SimSuite is a set of simulator scenarios behind a `sim` subcommand
// (cells sim, tdma sim): each scenario measures figures and checks each
// against its range.
type SimSuite struct {
	Title string // "cells sim"
	All   func() []scenario.Scenario
}

// simFigure is a figure in the JSON report; Min and Max are absent when
// that side of the range is open.
type simFigure struct {
	Name  string   `json:"name"`
	Value float64  `json:"value"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	OK    bool     `json:"ok"`
	Why   string   `json:"why,omitempty"`
}

type simScenario struct {
	Name    string      `json:"name"`
	Brief   string      `json:"brief"`
	Pass    bool        `json:"pass"`
	WallMs  float64     `json:"wall_ms"`
	SimMs   float64     `json:"sim_ms"`
	Events  uint64      `json:"events"`
	Figures []simFigure `json:"figures"`
}

type simReport struct {
	Seed      uint64        `json:"seed"`
	Scenarios []simScenario `json:"scenarios"`
	// Summary: pass, scenarios, failed, and every figure as
	// <scenario>_<figure>.
	Summary map[string]any `json:"summary"`
}

// Command completes cmd (its Use, Short, Long and Example set) as the
// suite's sim command: --scenario, --seed, --json and --out, and a run of
// the scenarios picked.
func (s SimSuite) Command(cmd *cobra.Command) *cobra.Command {
	var (
		scenario string
		seed     uint64
		asJSON   bool
		out      string
	)
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(*cobra.Command, []string) error {
		list, err := s.Pick(scenario)
		if err != nil {
			return err
		}
		return s.Run(list, seed, asJSON, out)
	}
	f := cmd.Flags()
	f.StringVar(&scenario, "scenario", "all", "scenario name, a comma-separated list, or all")
	f.Uint64Var(&seed, "seed", 1, "random seed (a run is deterministic for it)")
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	f.StringVar(&out, "out", "", "also write the JSON report to this file (e.g. out/"+strings.ReplaceAll(s.Title, " ", "-")+".json)")
	return cmd
}

// Pick resolves --scenario: a name, a comma-separated list, or all.
func (s SimSuite) Pick(arg string) ([]scenario.Scenario, error) {
	if arg == "all" || arg == "" {
		return s.All(), nil
	}
	var list []scenario.Scenario
	for _, name := range strings.Split(arg, ",") {
		name = strings.TrimSpace(name)
		sc, ok := scenario.Find(s.All(), name)
		if !ok {
			return nil, fmt.Errorf("--scenario: no scenario %q (have: %s, all)", name, strings.Join(s.names(), ", "))
		}
		list = append(list, sc)
	}
	return list, nil
}

// Run runs the scenarios, reports, and fails if a figure is out of range.
func (s SimSuite) Run(list []scenario.Scenario, seed uint64, asJSON bool, out string) error {
	rep := simReport{Seed: seed, Summary: map[string]any{}}
	var failed []string
	for _, sc := range list {
		res, err := s.runOne(sc, seed)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		cs := simScenario{Name: sc.Name, Brief: sc.Brief, Pass: res.Pass(),
			WallMs: float64(res.Wall.Microseconds()) / 1e3, SimMs: float64(res.SimNs) / 1e6, Events: res.Events}
		for _, f := range res.Figures {
			cf := simFigure{Name: f.Name, Value: f.Value, OK: f.OK(), Why: f.Why}
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
	if err := report.Print(rep, s.text(&rep), out, asJSON); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d scenarios out of range: %s", len(failed), len(list), strings.Join(failed, ", "))
	}
	return nil
}

// runOne runs a scenario, printing progress to stderr while it takes
// more than a second.
func (s SimSuite) runOne(sc scenario.Scenario, seed uint64) (*scenario.Result, error) {
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
				fmt.Fprintf(os.Stderr, "%s: %s running, %.0f s\n", s.Title, sc.Name, time.Since(start).Seconds())
				t.Reset(5 * time.Second)
			}
		}
	}()
	res, err := sc.Run(seed)
	close(done)
	if d := time.Since(start); d > time.Second {
		fmt.Fprintf(os.Stderr, "%s: %s done in %.1f s\n", s.Title, sc.Name, d.Seconds())
	}
	return res, err
}

func (s SimSuite) text(rep *simReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, seed %d\n", s.Title, rep.Seed)
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
			fmt.Fprintf(tw, "  %s\t%.4g\t%s\t%s\t%s\n", f.Name, f.Value, simRange(f.Min, f.Max), mark, f.Why)
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\n%d of %d scenarios within range\n", rep.Summary["passed"], rep.Summary["scenarios"])
	return b.String()
}

func simRange(lo, hi *float64) string {
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

func (s SimSuite) names() []string {
	var n []string
	for _, sc := range s.All() {
		n = append(n, sc.Name)
	}
	return n
}

// List is the scenarios with their briefs, for --help.
func (s SimSuite) List() string {
	var b strings.Builder
	for _, sc := range s.All() {
		fmt.Fprintf(&b, "  %-11s %s\n", sc.Name, sc.Brief)
	}
	return b.String()
}
