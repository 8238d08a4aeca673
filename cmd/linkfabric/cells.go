package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/simfab"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func cellsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cells",
		Short: "Cells with credits (Stardust, Aquila GNet): experiments",
		Long: `cells groups the experiments on cells with credits (package cellify): a
fabric of edge and fabric nodes that packs host frames into cells, sprays them
over every usable link and schedules them with credits from the egress port.

  sim       the simulated fabric (package simfab): the design study's scenarios on a
            virtual clock, deterministic for a seed, no root needed
  incast    two sources into one port on fabric3 (Stardust §5.4), credits on and off
  pushpull  a congested port beside an uncongested one on fabric3 (Stardust §5.2)`,
		Example: `  linkfabric cells sim --scenario incast
  linkfabric cells incast --runs 3
  linkfabric cells pushpull --runs 3`,
	}
	cmd.AddCommand(cellsSimCmd())
	cellsAddFabricCmds(cmd)
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

// cellsAddFabricCmds adds the experiments on a fabric3 testbed.
func cellsAddFabricCmds(cmd *cobra.Command) {
	cmd.AddCommand(cellsIncastCmd(), cellsPushPullCmd())
}

// cellsOut is what a cells experiment on a testbed writes and where.
type cellsOut struct {
	prefix, json, csv string
	asJSON            bool
}

func (o *cellsOut) flags(f *pflag.FlagSet, name string) {
	f.StringVar(&o.prefix, "prefix", "lf"+name, "testbed prefix (namespaces PREFIX+h1, ...)")
	f.StringVar(&o.json, "out", "out/cells-"+name+".json", "write the result as JSON here ('' to skip)")
	f.StringVar(&o.csv, "csv", "out/cells-"+name+".csv", "write each flow's delivered rate in 10 ms bins as CSV here ('' to skip)")
	f.BoolVar(&o.asJSON, "json", false, "print JSON instead of the tables")
}

// write reports res, writes its CSV and fails if the summary's checks did.
func (o *cellsOut) write(res any, text string, summary map[string]any, writeCSV func(string) error) error {
	if err := report(res, text, o.json, o.asJSON); err != nil {
		return err
	}
	if o.csv != "" {
		if err := writeCSV(o.csv); err != nil {
			return err
		}
		if !o.asJSON {
			fmt.Printf("CSV: %s\n", o.csv)
		}
	}
	if f, _ := summary["failed"].([]string); len(f) > 0 {
		return errors.New("out of target: " + strings.Join(f, "; "))
	}
	return nil
}

// cellsRateFlag parses a bit rate flag ("" keeps the default).
func cellsRateFlag(name, v string, dst *netns.BitRate) error {
	if v == "" {
		return nil
	}
	r, err := netns.ParseBitRate(v)
	if err != nil || r == 0 {
		return fmt.Errorf("--%s %q: want a rate like 100M or 1G", name, v)
	}
	*dst = r
	return nil
}

// cellsSizeFlag parses a byte size flag ("" keeps the default).
func cellsSizeFlag(name, v string, dst *netns.ByteSize) error {
	if v == "" {
		return nil
	}
	b, err := netns.ParseByteSize(v)
	if err != nil || b == 0 {
		return fmt.Errorf("--%s %q: want a size like 256K or 2M (K = 1024)", name, v)
	}
	*dst = b
	return nil
}

func cellsIncastCmd() *cobra.Command {
	var (
		cfg                       experiment.CellsIncastConfig
		rate, buffer, burst       string
		arms, transports, runArgs string
		out                       cellsOut
	)
	cmd := &cobra.Command{
		Use:   "incast",
		Short: "Two sources into one port on fabric3, credits on and off: drops, port busy, fair shares (Stardust §5.4)",
		Long: `incast builds the fabric3 testbed (three edges, two fabric nodes; links as in
the preset) with h3a's port at e3 (host0) at --port-rate with a --port-buffer egress
queue: the bottleneck. For each run and arm it starts fresh cells dataplanes on every
switch and sends from h1 (behind e1) and h2 (behind e2) to h3a, each at the port's rate:

  udp   a burst of --burst bytes per source, paced at the port's rate (datagrams of
        --payload bytes); h3a timestamps every datagram (kernel receive time)
  tcp   one iperf3 flow per source for --duration

Arms: credits (cells leave the sources' VOQs within the grants of e3's egress
scheduler) and push (--credits=false: cells leave as frames arrive). It reports the
drops of every switch by place (inside the fabric: link ports' queues and rings,
VOQs, reassembly discards, cells without route or hop; at the egress port; at the
sources' host ports), how busy the port was (its wire bits over its rate, over the
delivery period less 10 % at each end) and each source's share. With credits the
targets are zero drops in the fabric and at the port, the port busy ≥ 95 % and the
shares within 5 % of fair; it exits 1 if the medians miss one. The burst's default
(3 MiB) leaves each source's VOQ (2 MiB) room for the half of it that must wait.
The port's buffer defaults to 2 MiB: what e3 granted is on its way whatever the
port's queue, and a source whose worker was kept from running sends all its grants
at once when it runs again (with 256K the credits arm dropped 15-77 frames per UDP
run at the port on a loaded machine; with 2M none).`,
		Example: `  linkfabric cells incast
  linkfabric cells incast --runs 3 --port-rate 200M --port-buffer 512K
  linkfabric cells incast --arms push --transports udp --burst 1M`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells incast"); err != nil {
				return err
			}
			if err := errors.Join(cellsRateFlag("port-rate", rate, &cfg.PortRate), cellsSizeFlag("port-buffer", buffer, &cfg.PortBuffer)); err != nil {
				return err
			}
			var b netns.ByteSize
			if err := cellsSizeFlag("burst", burst, &b); err != nil {
				return err
			}
			cfg.Burst = int64(b)
			cfg.Arms, cfg.Transports, cfg.RunArgs = splitList(arms), splitList(transports), strings.Fields(runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			env := &experiment.Env{Prefix: out.prefix, Log: log}
			res, err := env.CellsIncast(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return out.write(res, res.Text(), res.Summary, res.WriteCSV)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rate, "port-rate", "100M", "rate of h3a's port at e3 (host0), the bottleneck; each source sends at it")
	f.StringVar(&buffer, "port-buffer", "2M", "egress queue of h3a's port at e3 (K = 1024; e3's scheduler stops granting above a quarter of it, at most 256K)")
	f.StringVar(&arms, "arms", strings.Join(experiment.CellsArms, ","), "arms: credits (pull), push (--credits=false)")
	f.StringVar(&transports, "transports", strings.Join(experiment.CellsTransports, ","), "what the sources send: udp (a paced burst), tcp (iperf3)")
	f.IntVar(&cfg.Runs, "runs", 1, "runs of every arm and transport (the summary has medians)")
	f.StringVar(&burst, "burst", "3M", "udp: payload bytes each source sends")
	f.IntVar(&cfg.Payload, "payload", 1400, "udp: payload bytes per datagram")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "tcp: iperf3 duration, whole seconds")
	f.StringVar(&cfg.CC, "cc", "", "tcp: congestion control (default: the hosts' default)")
	f.StringVar(&runArgs, "run-args", "", "more arguments for every 'linkfabric run', e.g. \"--cell-size 512\"")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	out.flags(f, "incast")
	return cmd
}

func cellsPushPullCmd() *cobra.Command {
	var (
		cfg                        experiment.CellsPushPullConfig
		rate, fabric, buffer, arms string
		runArgs                    string
		out                        cellsOut
	)
	cmd := &cobra.Command{
		Use:   "pushpull",
		Short: "A congested port beside an uncongested one on fabric3, credits on and off (Stardust §5.2)",
		Long: `pushpull reproduces Stardust §5.2 on the fabric3 testbed. e3 has two ports, A (h3a,
host0) and B (h3b, host1), at --port-rate; h1 sends UDP to A and to B, h2 to A, each
at the port rate for --duration. The four links into e3 run at --fabric-rate each
(default 0.55 × the port rate: together A's and B's rates with a margin for the cells'
headers and the credits' speed-up, and less than the three flows offer).

In a push fabric (arm push, --credits=false) A's oversubscription backs up into the
links into e3, which drop A's and B's cells alike: B keeps about what the links carry
over what is offered (the paper: two thirds) although its own port is not congested.
With credits (arm credits) e3 grants A's rate to A's two sources and B's to B, A's
excess waits (and overflows) in its sources' VOQs, and B gets its whole rate: the
target is ≥ 0.97 of it (exit 1 if the median misses). B's throughput is its wire bits
over its rate between 15 % and 85 % of the run (h3b's kernel receive times).`,
		Example: `  linkfabric cells pushpull
  linkfabric cells pushpull --runs 3 --port-rate 200M`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells pushpull"); err != nil {
				return err
			}
			if err := errors.Join(cellsRateFlag("port-rate", rate, &cfg.PortRate), cellsRateFlag("fabric-rate", fabric, &cfg.FabricRate),
				cellsSizeFlag("port-buffer", buffer, &cfg.PortBuffer)); err != nil {
				return err
			}
			cfg.Arms, cfg.RunArgs = splitList(arms), strings.Fields(runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			env := &experiment.Env{Prefix: out.prefix, Log: log}
			res, err := env.CellsPushPull(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return out.write(res, res.Text(), res.Summary, res.WriteCSV)
		},
	}
	f := cmd.Flags()
	f.StringVar(&rate, "port-rate", "100M", "rate of ports A and B at e3; every flow sends at it")
	f.StringVar(&fabric, "fabric-rate", "", "rate of each of the four links into e3 (default 0.55 × --port-rate)")
	f.StringVar(&buffer, "port-buffer", "2M", "egress queues of A and B (K = 1024)")
	f.StringVar(&arms, "arms", strings.Join(experiment.CellsArms, ","), "arms: credits (pull), push (--credits=false)")
	f.IntVar(&cfg.Runs, "runs", 1, "runs of every arm (the summary has medians)")
	f.DurationVar(&cfg.Duration, "duration", 3*time.Second, "how long the three flows send")
	f.IntVar(&cfg.Payload, "payload", 1400, "payload bytes per datagram")
	f.StringVar(&runArgs, "run-args", "", "more arguments for every 'linkfabric run'")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	out.flags(f, "pushpull")
	return cmd
}
