package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/netns"
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

  sim        the simulated fabric (package simfab): the design study's scenarios
             on a virtual clock, deterministic for a seed, no root needed
  pack       packing on the bundle: link frames and bytes per packet, packets/s,
             CPU per frame of cells against forward (trafgen frames)
  balance    bytes per link of the bundle, perm against p2c and hash
  elephants  4 TCP flows over 4 rate-limited links: spraying against hashing
  latency    143-byte flows' completion times through cells (pre-credit on,
             off) against forward

The experiments on the bundle (h1 — sw1 ═4 links═ sw2 — h2) build their own testbed
under --prefix, start 'linkfabric run' on both switches for each arm, and remove it
all at the end (also on Ctrl-C). They need root.`,
		Example: `  linkfabric cells sim --scenario incast
  sudo linkfabric cells pack
  sudo linkfabric cells elephants --link-rate 200M`,
	}
	cmd.AddCommand(cellsSimCmd(), cellsPackCmd(), cellsBalanceCmd(), cellsElephantsCmd(), cellsLatencyCmd())
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

// cellsBundleFlags are the flags every cells experiment on the bundle
// takes.
type cellsBundleFlags struct {
	prefix, out, runArgs string
	asJSON               bool
}

func (f *cellsBundleFlags) add(cmd *cobra.Command, prefix, out string) {
	fl := cmd.Flags()
	fl.StringVar(&f.prefix, "prefix", prefix, "testbed prefix (namespaces PREFIXh1, PREFIXsw1, ...)")
	fl.StringVar(&f.out, "out", out, "write JSON and CSV here ('' to skip)")
	fl.StringVar(&f.runArgs, "run-args", "", `more 'linkfabric run' arguments for the cells arms, e.g. "--reach-th 200"`)
	fl.BoolVar(&f.asJSON, "json", false, "print JSON instead of the table")
}

// cellsResult is what a cells experiment returns.
type cellsResult interface {
	Text() string
	WriteFiles(dir string) ([]string, error)
}

// finish writes the files and prints the result.
func (f *cellsBundleFlags) finish(res cellsResult) error {
	var files []string
	if f.out != "" {
		var err error
		if files, err = res.WriteFiles(f.out); err != nil {
			return err
		}
	}
	if f.asJSON {
		return printJSON(res)
	}
	fmt.Print(res.Text())
	if len(files) > 0 {
		fmt.Printf("\nwritten: %s\n", strings.Join(files, " "))
	}
	return nil
}

func (f *cellsBundleFlags) env() *experiment.Env {
	return &experiment.Env{Prefix: f.prefix, Log: log}
}

func cellsPackCmd() *cobra.Command {
	var (
		cfg              experiment.CellsPackConfig
		sizes, cellSizes string
		fl               cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "pack",
		Short: "Packing on the bundle: link frames and bytes per packet, packets/s, CPU per frame against forward",
		Long: `pack builds the bundle testbed (h1 — sw1 ═4 links═ sw2 — h2) and measures what
packing small packets into cells buys (Stardust Fig. 8 in software terms).

For each arm (forward over link0; cells packed and unpacked at each --cell-sizes)
and each packet size, trafgen (netsniff-ng, outside the project, one CPU) sends
frames from h1 to h2 as fast as it can for --duration. The table gives per packet
delivered to h2 the frames and bytes sw1's link ports sent (the interfaces' own
counters; frames without preamble and FCS), beside what the header sizes say they
should be, and the packets/s offered (h1) and delivered (h2). Packet sizes are
Ethernet frames with FCS (64 = the minimum frame): trafgen sends each 4 bytes
shorter, since veth has no FCS.

Then the CPU comparison: 60-byte frames at trafgen -b --cpu-rate (trafgen delivers
about half of it here), a rate both arms carry, for --cpu-duration through forward
and through cells (packing, MTU cells): the CPU time both switches' dataplanes used
(utime + stime from /proc/PID/stat) per frame h2 received. Target: cells ≤ 0.6× of
forward. And at saturation (the smallest packet size), cells should carry at least
forward's packets/s.

Writes pack.json (figures in "summary") and pack.csv to --out. Needs trafgen:
scripts/deps.sh installs it (Debian package netsniff-ng).`,
		Example: `  sudo linkfabric cells pack
  sudo linkfabric cells pack --sizes 64,1500 --cell-sizes 0 --duration 1s
  sudo linkfabric cells pack --cpu-rate 400000 --cpu-duration 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells pack"); err != nil {
				return err
			}
			var err error
			if cfg.PacketSizes, err = parseInts(sizes); err != nil {
				return fmt.Errorf("--sizes: %w", err)
			}
			if cfg.CellSizes, err = parseCellSizes(cellSizes); err != nil {
				return err
			}
			cfg.RunArgs = strings.Fields(fl.runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			res, err := fl.env().CellsPack(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return fl.finish(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "64,128,256,512,1024,1500", "packet sizes, Ethernet frames with FCS, comma-separated")
	f.StringVar(&cellSizes, "cell-sizes", "256,512,mtu", "cell payload sizes, comma-separated; mtu: the largest the link MTU takes")
	f.DurationVar(&cfg.Duration, "duration", 2*time.Second, "how long each packet size is offered at saturation")
	f.IntVar(&cfg.CPURate, "cpu-rate", 200_000, "trafgen -b setting (frames/s) for the CPU comparison: a rate both arms carry")
	f.DurationVar(&cfg.CPUDuration, "cpu-duration", 5*time.Second, "how long each arm of the CPU comparison runs")
	fl.add(cmd, "lfcpack", "out/cells-pack")
	return cmd
}

// parseCellSizes parses --cell-sizes: numbers, or mtu (0).
func parseCellSizes(s string) ([]int, error) {
	var out []int
	for _, p := range splitList(s) {
		if strings.EqualFold(p, "mtu") {
			out = append(out, 0)
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--cell-sizes: %q: want a positive number of bytes or mtu", p)
		}
		out = append(out, n)
	}
	return out, nil
}

func cellsBalanceCmd() *cobra.Command {
	var (
		cfg    experiment.CellsBalanceConfig
		sprays string
		fl     cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "balance",
		Short: "Bytes per link of the bundle under TCP, per spraying mode (perm, p2c, hash)",
		Long: `balance builds the bundle testbed and, for each spraying mode (--spray of
'linkfabric run'), runs iperf3 with --flows TCP streams from h1 to h2 and counts the
bytes each of sw1's four link ports sent over --duration, from the interfaces' own
counters. It reports bytes per link and their largest over their mean (Stardust
§5.3: perm, a random permutation reshuffled every few rounds, should be within
1.02; hash puts each flow on one link).

Writes balance.json (figures in "summary") and balance.csv to --out.`,
		Example: `  sudo linkfabric cells balance
  sudo linkfabric cells balance --sprays perm --duration 10s --flows 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells balance"); err != nil {
				return err
			}
			cfg.Sprays = splitList(sprays)
			cfg.RunArgs = strings.Fields(fl.runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			res, err := fl.env().CellsBalance(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return fl.finish(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sprays, "sprays", "perm,p2c,hash", "spraying modes, comma-separated: perm, p2c, hash")
	f.IntVar(&cfg.Flows, "flows", 8, "TCP streams (iperf3 -P)")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "counted window per spraying mode (iperf3 runs 1.5 s longer)")
	f.StringVar(&cfg.CC, "cc", "cubic", "TCP congestion control")
	fl.add(cmd, "lfcbal", "out/cells-balance")
	return cmd
}

func cellsElephantsCmd() *cobra.Command {
	var (
		cfg              experiment.CellsElephantsConfig
		sprays, linkRate string
		fl               cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "elephants",
		Short: "4 TCP flows over 4 rate-limited links: spraying (perm) against flow hashing",
		Long: `elephants builds the bundle testbed with every link port of both switches at
--link-rate (the dataplane's port rate: veth has no speed), so the links are the
bottleneck, and for each spraying mode runs --trials iperf3 runs of --flows TCP
streams from h1 to h2 (new source ports each run). It reports what each link
carried as a share of its rate (sw1's interface counters, each frame counted with
24 bytes of preamble, FCS and gap, as the port rate counts it), their aggregate
over the sum of the link rates, iperf3's goodput over the same, and the links the
flows used. Targets: perm ≥ 0.9 of the sum of the link rates; hash near the
expected links·(1−(1−1/links)^flows) links used (2.73 of 4 for 4 flows).

Writes elephants.json (figures in "summary") and elephants.csv to --out.`,
		Example: `  sudo linkfabric cells elephants
  sudo linkfabric cells elephants --link-rate 100M --trials 10 --sprays hash`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells elephants"); err != nil {
				return err
			}
			r, err := netns.ParseBitRate(linkRate)
			if err != nil || r == 0 {
				return fmt.Errorf("--link-rate %q: want a rate such as 200M or 1G (bit/s)", linkRate)
			}
			cfg.LinkRate = r
			cfg.Sprays = splitList(sprays)
			cfg.RunArgs = strings.Fields(fl.runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			res, err := fl.env().CellsElephants(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return fl.finish(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sprays, "sprays", "perm,hash", "spraying modes, comma-separated: perm, p2c, hash")
	f.StringVar(&linkRate, "link-rate", "200M", "line rate of every link port (bit/s)")
	f.IntVar(&cfg.Flows, "flows", 4, "TCP streams (iperf3 -P)")
	f.IntVar(&cfg.Trials, "trials", 6, "iperf3 runs per spraying mode")
	f.DurationVar(&cfg.Duration, "duration", 4*time.Second, "counted window per trial (iperf3 runs 1.5 s longer)")
	f.StringVar(&cfg.CC, "cc", "cubic", "TCP congestion control")
	fl.add(cmd, "lfcele", "out/cells-elephants")
	return cmd
}

func cellsLatencyCmd() *cobra.Command {
	var (
		cfg  experiment.CellsLatencyConfig
		arms string
		fl   cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "143-byte flows' completion times through cells (pre-credit on, off) against forward",
		Long: `latency builds the bundle testbed and, for each arm in turn, runs --flows short TCP
flows of --size bytes from h1 to h2, one connection each, back to back (the fct
command's builtin tool and TCP settings), and reports their completion times:

  forward      linkfabric forward over link0 (the reference)
  cells        cells with credits and the standing pre-credit (--pre-credit)
  cells-nopre  cells with credits and no pre-credit: every packet waits for a grant
  cells-push   cells without credits (optional)

Target: cells' p50 ≤ 1.2× forward's. Writes latency.json (figures in "summary"),
flows.csv and a tail-CDF PNG to --out.`,
		Example: `  sudo linkfabric cells latency
  sudo linkfabric cells latency --flows 500 --arms forward,cells,cells-nopre,cells-push`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("cells latency"); err != nil {
				return err
			}
			cfg.Arms = splitList(arms)
			cfg.RunArgs = strings.Fields(fl.runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			res, err := fl.env().CellsLatency(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return fl.finish(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&arms, "arms", "forward,cells,cells-nopre", "arms, in order: "+strings.Join(experiment.CellsLatencyArms, ","))
	f.Int64Var(&cfg.Size, "size", 143, "flow size, bytes")
	f.IntVar(&cfg.Flows, "flows", 2000, "flows per arm")
	f.IntVar(&cfg.Warmup, "warmup", 20, "discarded warm-up flows per arm")
	f.IntVar(&cfg.PreCredit, "pre-credit", 0, "the cells arm's --pre-credit in bytes (0: the dataplane's default)")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control (auto: dctcp if the kernel has it, else cubic)")
	fl.add(cmd, "lfclat", "out/cells-latency")
	return cmd
}
