package cellsexp

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/cellify/cellsim"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Command is the cells command and its experiments.
func Command() *cobra.Command {
	cmd := cli.Group("cells",
		"Cells with credits (Stardust, Aquila GNet): experiments",
		`cells groups the experiments on cells with credits (package cellify): a
fabric of edge and fabric nodes that packs host frames into cells, sprays them
over every usable link and schedules them with credits from the egress port.

  sim        the simulated fabric (package cellsim): the design study's scenarios
             on a virtual clock, deterministic for a seed, no root needed
  pack       packing on the bundle: link frames and bytes per packet, packets/s,
             CPU per frame of cells against forward (trafgen frames)
  balance    bytes per link of the bundle, perm against p2c and hash
  elephants  4 TCP flows over 4 rate-limited links: spraying against hashing
  latency    143-byte flows' completion times through cells (pre-credit on,
             off) against forward
  failover   a bundle link cut under UDP load, cells over lg against bare cells
  gray       bursty loss on bundle links: UDP loss and TCP goodput over lg
  classes    loss classes (RAIL) on the bundle: DSCP EF stays on the clean link
  incast     two sources into one port on fabric3 (Stardust §5.4), credits on
             and off
  pushpull   a congested port beside an uncongested one on fabric3 (Stardust §5.2)

The experiments build their own testbed (bundle: h1 — sw1 ═4 links═ sw2 — h2;
fabric3) under --prefix, start 'linkfabric run' on every switch for each arm, and
remove it all at the end (also on Ctrl-C). They need root.`,
		`  linkfabric cells sim --scenario incast
  sudo linkfabric cells pack
  sudo linkfabric cells elephants --link-rate 200M
  sudo linkfabric cells failover --runs 3
  sudo linkfabric cells incast --runs 3`,
		cellsSimCmd(), cellsPackCmd(), cellsBalanceCmd(), cellsElephantsCmd(), cellsLatencyCmd(),
		cellsFailoverCmd(), cellsGrayCmd(), cellsClassesCmd())
	cellsAddFabricCmds(cmd)
	return cmd
}

var cellsSuite = cli.SimSuite{Title: "cells sim", All: cellsim.Scenarios}

func cellsSimCmd() *cobra.Command {
	return cellsSuite.Command(&cobra.Command{
		Use:   "sim",
		Short: "Run the simulated cell fabric's scenarios and check their figures",
		Long: `sim runs scenarios of the simulated cell fabric (package cellsim): nodes running
the real cellify logic over links with rate, delay, bounded queues and loss, on
a virtual clock. Each scenario measures figures and checks each against the
range the design study gives (see the why column); the command fails if any
figure is out of range.

Scenarios:
` + cellsSuite.List() + `
A run is deterministic for its seed. scale takes 15–30 s; the others under 2 s each.`,
		Example: `  linkfabric cells sim
  linkfabric cells sim --scenario pushpull --seed 7
  linkfabric cells sim --scenario all --json --out out/cells-sim.json`,
	})
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
	f.BoolVar(&o.asJSON, "json", false, report.JSONUsage)
}

// fabricReport is a fabric3 experiment's result as its command reports it.
type fabricReport interface {
	Text() string
	WriteCSV(path string) error
	failed() []string
}

// report prints res, writes its CSV and fails if the summary's checks
// did; or returns err, the experiment's.
func (o *cellsOut) report(res fabricReport, err error) error {
	if err != nil {
		return err
	}
	if err := report.Print(res, res.Text(), o.json, o.asJSON); err != nil {
		return err
	}
	if o.csv != "" {
		if err := res.WriteCSV(o.csv); err != nil {
			return err
		}
		if !o.asJSON {
			fmt.Printf("CSV: %s\n", o.csv)
		}
	}
	if f := res.failed(); len(f) > 0 {
		return report.Missed("out of target: %s", strings.Join(f, "; "))
	}
	return nil
}

func cellsIncastCmd() *cobra.Command {
	var (
		cfg                       CellsIncastConfig
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
scheduler) and push (--cells-credits=false: cells leave as frames arrive). It reports the
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
		PreRunE: cli.NeedsRoot("cells incast"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(cli.RateFlag("port-rate", rate, &cfg.PortRate), cli.SizeFlag("port-buffer", buffer, &cfg.PortBuffer)); err != nil {
				return err
			}
			var b netns.ByteSize
			if err := cli.SizeFlag("burst", burst, &b); err != nil {
				return err
			}
			cfg.Burst = int64(b)
			cfg.Arms, cfg.Transports, cfg.RunArgs = cli.SplitList(arms), cli.SplitList(transports), strings.Fields(runArgs)
			return out.report(bed.Exp(cmd.Context(), bed.CmdEnv(out.prefix), &cfg, CellsIncast))
		},
	}
	f := cmd.Flags()
	cli.BitRateStringVar(f, &rate, "port-rate", "100M", "rate of h3a's port at e3 (host0), the bottleneck; each source sends at it")
	f.StringVar(&buffer, "port-buffer", "2M", "egress queue of h3a's port at e3 (K = 1024; e3's scheduler keeps the queue plus the credit in flight within the credit loop's measured round trip at the port's rate plus a quarter of it, at most 256K, and never above the buffer)")
	f.StringVar(&arms, "arms", strings.Join(CellsArms, ","), "arms: credits (pull), push (--cells-credits=false)")
	f.StringVar(&transports, "transports", strings.Join(CellsTransports, ","), "what the sources send: udp (a paced burst), tcp (iperf3)")
	f.IntVar(&cfg.Runs, "runs", 1, "runs of every arm and transport (the summary has medians)")
	f.StringVar(&burst, "burst", "3M", "udp: payload bytes each source sends")
	f.IntVar(&cfg.Payload, "payload", 1400, "udp: payload bytes per datagram")
	f.DurationVar(&cfg.Duration, "duration", 5*time.Second, "tcp: iperf3 duration, whole seconds")
	f.StringVar(&cfg.CC, "cc", "", "tcp: congestion control (default: the hosts' default)")
	f.StringVar(&runArgs, "run-args", "", "more arguments for every 'linkfabric run', e.g. \"--cells-size 512\"")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	out.flags(f, "incast")
	return cmd
}

func cellsPushPullCmd() *cobra.Command {
	var (
		cfg                        CellsPushPullConfig
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

In a push fabric (arm push, --cells-credits=false) A's oversubscription backs up into the
links into e3, which drop A's and B's cells alike: B keeps about what the links carry
over what is offered (the paper: two thirds) although its own port is not congested.
With credits (arm credits) e3 grants A's rate to A's two sources and B's to B, A's
excess waits (and overflows) in its sources' VOQs, and B gets its whole rate: the
target is ≥ 0.97 of it (exit 1 if the median misses). B's throughput is its wire bits
over its rate between 15 % and 85 % of the run (h3b's kernel receive times).`,
		Example: `  linkfabric cells pushpull
  linkfabric cells pushpull --runs 3 --port-rate 200M`,
		PreRunE: cli.NeedsRoot("cells pushpull"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(cli.RateFlag("port-rate", rate, &cfg.PortRate), cli.RateFlag("fabric-rate", fabric, &cfg.FabricRate),
				cli.SizeFlag("port-buffer", buffer, &cfg.PortBuffer)); err != nil {
				return err
			}
			cfg.Arms, cfg.RunArgs = cli.SplitList(arms), strings.Fields(runArgs)
			return out.report(bed.Exp(cmd.Context(), bed.CmdEnv(out.prefix), &cfg, CellsPushPull))
		},
	}
	f := cmd.Flags()
	cli.BitRateStringVar(f, &rate, "port-rate", "100M", "rate of ports A and B at e3; every flow sends at it")
	cli.BitRateStringVar(f, &fabric, "fabric-rate", "", "rate of each of the four links into e3 (default 0.55 × --port-rate)")
	f.StringVar(&buffer, "port-buffer", "2M", "egress queues of A and B (K = 1024)")
	f.StringVar(&arms, "arms", strings.Join(CellsArms, ","), "arms: credits (pull), push (--cells-credits=false)")
	f.IntVar(&cfg.Runs, "runs", 1, "runs of every arm (the summary has medians)")
	f.DurationVar(&cfg.Duration, "duration", 3*time.Second, "how long the three flows send")
	f.IntVar(&cfg.Payload, "payload", 1400, "payload bytes per datagram")
	f.StringVar(&runArgs, "run-args", "", "more arguments for every 'linkfabric run'")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	out.flags(f, "pushpull")
	return cmd
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
	fl.StringVar(&f.runArgs, "run-args", "", `more 'linkfabric run' arguments for the cells arms, e.g. "--cells-reach-th 200"`)
	fl.BoolVar(&f.asJSON, "json", false, report.JSONUsage)
}

// finish writes an experiment's files and prints its result, or returns
// the experiment's error.
func (f *cellsBundleFlags) finish(res report.FileResult, err error) error {
	if err != nil {
		return err
	}
	return report.PrintFiles(res, f.out, f.asJSON)
}

func (f *cellsBundleFlags) env() *bed.Env {
	return bed.CmdEnv(f.prefix)
}

// bundleExp makes cmd run a cells experiment on the bundle: it takes no
// arguments and needs root; parse reads the command's own flags into
// cfg, then exp runs with --run-args and its files are written.
func bundleExp[C any, PC interface {
	*C
	Normalize() error
}, R report.FileResult](cmd *cobra.Command, fl *cellsBundleFlags, cfg PC, runArgs *[]string, parse func() error, exp func(context.Context, *bed.Env, C) (R, error)) {
	cmd.Args = cobra.NoArgs
	cmd.PreRunE = cli.NeedsRoot("cells " + cmd.Use)
	cmd.RunE = expRunE(cfg, runArgs, &fl.runArgs, fl.env, parse, exp, func(res R, err error) error { return fl.finish(res, err) })
}

// expRunE is the RunE of a cells experiment: parse reads the command's
// own flags into cfg, words (the --run-args) become cfg's runArgs, then
// exp runs on env's testbed and done reports what it returned.
func expRunE[C any, PC interface {
	*C
	Normalize() error
}, R any](cfg PC, runArgs *[]string, words *string, env func() *bed.Env, parse func() error, exp func(context.Context, *bed.Env, C) (R, error), done func(R, error) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := parse(); err != nil {
			return err
		}
		*runArgs = strings.Fields(*words)
		res, err := bed.Exp(cmd.Context(), env(), cfg, exp)
		return done(res, err)
	}
}

func cellsPackCmd() *cobra.Command {
	var (
		cfg              CellsPackConfig
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
about half of it here; each run says where frames were lost, and the CPU per
frame compares like with like only where no arm lost any), for --cpu-duration through forward,
forward --fastpath afxdp and cells (packing, MTU cells; --fastpath afxdp too, so that
the edges' kernel paths take none of it): the CPU time both switches'
dataplanes used (utime + stime from /proc/PID/stat) per frame h2 received. Target:
cells ≤ 0.6× of forward-afxdp (both through the workers; forward's own frames cross
on its kernel fast path, whose CPU no dataplane counts). And at saturation (the smallest packet size), cells should carry at least
forward's packets/s.

Writes pack.json (figures in "summary") and pack.csv to --out. Needs trafgen:
scripts/deps.sh installs it (Debian package netsniff-ng).`,
		Example: `  sudo linkfabric cells pack
  sudo linkfabric cells pack --sizes 64,1500 --cell-sizes 0 --duration 1s
  sudo linkfabric cells pack --cpu-rate 400000 --cpu-duration 10s`,
	}
	bundleExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		var err error
		if cfg.PacketSizes, err = cli.ParseInts(sizes); err != nil {
			return fmt.Errorf("--sizes: %w", err)
		}
		if cfg.CellSizes, err = parseCellSizes(cellSizes); err != nil {
			return err
		}
		return nil
	}, CellsPack)
	f := cmd.Flags()
	f.StringVar(&sizes, "sizes", "64,128,256,512,1024,1500", "packet sizes, Ethernet frames with FCS, comma-separated")
	f.StringVar(&cellSizes, "cell-sizes", "256,512,mtu", "cell payload sizes, comma-separated; mtu: the largest the link MTU takes")
	f.DurationVar(&cfg.Duration, "duration", 2*time.Second, "how long each packet size is offered at saturation")
	f.IntVar(&cfg.CPURate, "cpu-rate", 200_000, "trafgen -b setting (frames/s) for the CPU comparison; pick one both arms carry whole (the run's losses say)")
	f.DurationVar(&cfg.CPUDuration, "cpu-duration", 5*time.Second, "how long each arm of the CPU comparison runs")
	fl.add(cmd, "lfcpack", "out/cells-pack")
	return cmd
}

// parseCellSizes parses --cell-sizes: numbers, or mtu (0).
func parseCellSizes(s string) ([]int, error) {
	var out []int
	for _, p := range cli.SplitList(s) {
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
		cfg    CellsBalanceConfig
		sprays string
		fl     cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "balance",
		Short: "Bytes per link of the bundle under TCP, per spraying mode (perm, p2c, hash)",
		Long: `balance builds the bundle testbed and, for each spraying mode (--cells-spray of
'linkfabric run'), runs iperf3 with --flows TCP streams from h1 to h2 and counts the
bytes each of sw1's four link ports sent over --duration, from the interfaces' own
counters. It reports bytes per link and their largest over their mean (Stardust
§5.3: perm, a random permutation reshuffled every few rounds, should be within
1.02; hash puts each flow on one link).

Writes balance.json (figures in "summary") and balance.csv to --out.`,
		Example: `  sudo linkfabric cells balance
  sudo linkfabric cells balance --sprays perm --duration 10s --flows 16`,
	}
	bundleExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		cfg.Sprays = cli.SplitList(sprays)
		return nil
	}, CellsBalance)
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
		cfg              CellsElephantsConfig
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
	}
	bundleExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		r, err := netns.ParseBitRate(linkRate)
		if err != nil || r == 0 {
			return fmt.Errorf("--link-rate %q: want a rate such as 200M or 1G (bit/s)", linkRate)
		}
		cfg.LinkRate = r
		cfg.Sprays = cli.SplitList(sprays)
		return nil
	}, CellsElephants)
	f := cmd.Flags()
	f.StringVar(&sprays, "sprays", "perm,hash", "spraying modes, comma-separated: perm, p2c, hash")
	cli.BitRateStringVar(f, &linkRate, "link-rate", "200M", "line rate of every link port (bit/s)")
	f.IntVar(&cfg.Flows, "flows", 4, "TCP streams (iperf3 -P)")
	f.IntVar(&cfg.Trials, "trials", 6, "iperf3 runs per spraying mode")
	f.DurationVar(&cfg.Duration, "duration", 4*time.Second, "counted window per trial (iperf3 runs 1.5 s longer)")
	f.StringVar(&cfg.CC, "cc", "cubic", "TCP congestion control")
	fl.add(cmd, "lfcele", "out/cells-elephants")
	return cmd
}

func cellsLatencyCmd() *cobra.Command {
	var (
		cfg  CellsLatencyConfig
		arms string
		fl   cellsBundleFlags
	)
	cmd := &cobra.Command{
		Use:   "latency",
		Short: "143-byte flows' completion times through cells (pre-credit on, off) against forward",
		Long: `latency builds the bundle testbed and runs, for each arm, --flows short TCP flows
of --size bytes from h1 to h2, one connection each, back to back (the fct command's
builtin tool and TCP settings), and reports their completion times. The arms take
turns in --rounds blocks of flows (the order reversed every other round; each block
starts the arm's dataplanes anew and discards --warmup flows first), so that the
load of a shared machine weighs on every arm alike; every round gives its own
ratios, and the verdict is taken on their median. The arms:

  forward        linkfabric forward over link0 (the reference): its kernel fast
                 path both ways (the bundle turns the hosts' GRO on for forward)
  forward-afxdp  forward with every frame through the Go worker: the reference
                 for what cells add beyond a worker hop
  cells          cells with credits and the standing pre-credit (--pre-credit);
                 the edges' kernel paths cut and deliver single-record cells
                 where they can, the workers the rest
  cells-nopre    cells with credits and no pre-credit: every packet waits for a grant
  cells-push     cells without credits (optional)

Target: cells' p50 ≤ 1.2× forward's (the median of the rounds' ratios); the ratio to
forward-afxdp's is printed too. Beside the flows it reports what the scheduler
counted of each arm's dataplanes while the flows ran, per flow: time on a CPU,
time waiting for one, times run (a worker runs once per wakeup). With a core
kept busy a flow's whole path shares the other core with them. Writes
latency.json (figures in "summary", each round's in "rounds", the dataplanes'
in "dataplanes"), flows.csv and a tail-CDF PNG to --out.`,
		Example: `  sudo linkfabric cells latency
  sudo linkfabric cells latency --flows 500 --arms forward,cells,cells-nopre,cells-push`,
	}
	bundleExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		cfg.Arms = cli.SplitList(arms)
		return nil
	}, CellsLatency)
	f := cmd.Flags()
	f.StringVar(&arms, "arms", "forward,forward-afxdp,cells,cells-nopre", "arms, in order: "+strings.Join(CellsLatencyArms, ","))
	f.Int64Var(&cfg.Size, "size", 143, "flow size, bytes")
	f.IntVar(&cfg.Flows, "flows", 2000, "flows per arm")
	f.IntVar(&cfg.Rounds, "rounds", DefaultLatencyRounds, "blocks each arm's flows are split into, the arms taking turns (1: each arm once, one after the other)")
	f.IntVar(&cfg.Warmup, "warmup", 20, "discarded warm-up flows at the start of every block")
	f.IntVar(&cfg.PreCredit, "pre-credit", 0, "the cells arm's run --cells-pre-credit in bytes (0: the dataplane's default)")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control (auto: dctcp if the kernel has it, else cubic)")
	fl.add(cmd, "lfclat", "out/cells-latency")
	return cmd
}
