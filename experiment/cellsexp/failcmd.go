package cellsexp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func cellsFailoverCmd() *cobra.Command {
	var (
		cfg  CellsFailoverConfig
		arms string
		fl   edgeFlags
	)
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Cut a bundle link under UDP load: packets lost, out of order, time to exclusion; cells over lg vs bare",
		Long: `failover builds the bundle testbed (h1 - sw1 =4 links= sw2 - h2) and, for each arm
and run, starts fresh cell edges on sw1 and sw2 with that --cells-link-mode under the
cells, sends UDP from h1 to h2 at --rate (iperf3, 1200-byte datagrams) for
--duration and cuts one link at sw2's end at --cut-at:

  --cut down   ip link set down (both ends see it: sw2 at once, sw1 by REACH)
  --cut drop   sw2's XDP program drops every frame the link brings (a one-way
               failure: sw1 still hears sw2's REACHes; under lg it sees its cells
               go un-ACKed while the other links' are ACKed)

It reports the datagrams iperf3 found lost and out of order, how long after the
cut sw1 took the link out of its routes (goal: 3 REACH intervals + 1 ms), the
cells sw1's lg sender handed back to the sprayer and the copies sw2's reassembly
dropped. Arms: lg (LinkGuardian under the cells: a link failure loses no packet)
and none (bare cells: the loss is bounded by what was on the link). The table
shows medians over --runs; JSON (with a summary object) goes to --out.`,
		Example: `  linkfabric cells failover
  linkfabric cells failover --cut drop --runs 5 --rate 300e6`,
	}
	edgeExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		cfg.Arms = cli.SplitList(arms)
		return nil
	}, CellsFailover)
	f := cmd.Flags()
	f.StringVar(&arms, "arms", strings.Join(CellsLinkModes, ","), "link modes under the cells, comma-separated (lg, lgnb, monitor, none)")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per arm (the table shows medians)")
	f.DurationVar(&cfg.Duration, "duration", 0, "UDP run per arm and run, whole seconds (default 4s)")
	f.DurationVar(&cfg.CutAt, "cut-at", 0, "when the link is cut, into the run (default half of --duration)")
	f.StringVar(&cfg.Cut, "cut", "down", "how: down (ip link set down at sw2) or drop (sw2's XDP program drops the link's frames)")
	f.IntVar(&cfg.Link, "link", 2, "which bundle link to cut (0-3)")
	cli.BitRateVar(f, &cfg.Rate, "rate", 0, "UDP load, bit/s (default 200M)")
	fl.add(cmd, &cfg.CellsEdgeConfig, "lfl", "out/cells-failover.json")
	return cmd
}

func cellsGrayCmd() *cobra.Command {
	var (
		cfg         CellsGrayConfig
		arms, lossy string
		fl          edgeFlags
	)
	cmd := &cobra.Command{
		Use:   "gray",
		Short: "Bursty loss on some bundle links: UDP loss and order, TCP goodput vs the same without loss",
		Long: `gray builds the bundle testbed and, for each arm (--cells-link-mode under the cells) and
run, starts fresh cell edges twice: once clean, once with --loss in bursts of
--burst frames on the --lossy links (sw1→sw2, the impairment stage of sw2's XDP
program). Each time it runs iperf3 UDP at --rate, then one iperf3 TCP flow, from h1
to h2 for --duration each. It reports UDP datagrams lost and out of order with the
loss, and TCP goodput with the loss against without (target ≥ 0.9×). The table
shows medians over --runs; JSON (with a summary object) goes to --out.`,
		Example: `  linkfabric cells gray
  linkfabric cells gray --arms lg,none --loss 1e-2 --burst 3 --lossy 1,3`,
	}
	edgeExp(cmd, &fl, &cfg, &cfg.RunArgs, func() error {
		cfg.Arms = cli.SplitList(arms)
		for _, p := range cli.SplitList(lossy) {
			v, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("--lossy: %q is not a link number (0-3)", p)
			}
			cfg.Lossy = append(cfg.Lossy, v)
		}
		return nil
	}, CellsGray)
	f := cmd.Flags()
	f.StringVar(&arms, "arms", "lg", "link modes under the cells, comma-separated (lg, lgnb, monitor, none, fec)")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per arm (the table shows medians)")
	f.DurationVar(&cfg.Duration, "duration", 0, "each UDP and TCP run, whole seconds (default 4s)")
	f.Float64Var(&cfg.Loss, "loss", 1e-2, "loss rate on each lossy link")
	f.Float64Var(&cfg.Burst, "burst", 3, "mean loss burst, frames (Gilbert-Elliott)")
	f.StringVar(&lossy, "lossy", "1,3", "the lossy bundle links, comma-separated (0-3)")
	cli.BitRateVar(f, &cfg.Rate, "rate", 0, "UDP load, bit/s (default 200M)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	fl.add(cmd, &cfg.CellsEdgeConfig, "lfl", "out/cells-gray.json")
	return cmd
}

// edgeFlags are the flags the cells experiments on the bundle's two edges
// share: the REACH and reassembly settings, more run arguments, the
// testbed prefix and the result's output.
type edgeFlags struct {
	runArgs, prefix string
	out             report.OutFlags
}

func (e *edgeFlags) add(cmd *cobra.Command, c *CellsEdgeConfig, prefix, out string) {
	f := cmd.Flags()
	f.DurationVar(&c.ReachInterval, "reach-interval", 0, "REACH period (default 5ms: 1ms × 3 excludes links whenever a peer is kept from running a few ms)")
	f.IntVar(&c.ReachTh, "reach-th", 0, "REACH intervals missed that take a link out (default 3)")
	f.DurationVar(&c.ReasmTimeout, "reasm-timeout", 0, "reassembly timeout (default 100ms: above the exclusion time and this machine's scheduling stalls)")
	f.StringVar(&e.runArgs, "run-args", "", "extra `linkfabric run` arguments for both edges")
	f.StringVar(&e.prefix, "prefix", prefix, "testbed prefix")
	e.out.Add(f, out)
}

func (e *edgeFlags) env() *bed.Env { return bed.CmdEnv(e.prefix) }

// edgeExp makes cmd run a cells experiment on the bundle's edges: it
// needs root; parse reads the command's own flags into cfg, then exp runs
// with --run-args and its result is printed (and written to --out).
func edgeExp[C any, PC interface {
	*C
	Normalize() error
}, R interface{ Text() string }](cmd *cobra.Command, fl *edgeFlags, cfg PC, runArgs *[]string, parse func() error, exp func(context.Context, *bed.Env, C) (R, error)) {
	cmd.PreRunE = cli.NeedsRoot("cells " + cmd.Use)
	cmd.RunE = expRunE(cfg, runArgs, &fl.runArgs, fl.env, parse, exp, func(res R, err error) error { return fl.out.Report(res, err) })
}
