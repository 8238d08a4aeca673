package lgexp

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func goodputCmd() *cobra.Command {
	var (
		cfg                   GoodputConfig
		losses, arms, runArgs string
		prefix                string
		out                   report.OutFlags
	)
	cmd := &cobra.Command{
		Use:   "goodput",
		Short: "Goodput of one long TCP flow over a lossy link with and without LinkGuardian (paper Table 3)",
		Long: `goodput builds the pair testbed and, for each arm and each loss rate on the sw1→sw2
link, starts fresh dataplanes and runs one iperf3 TCP flow from h1 to h2 for --duration:

  loss  linkfabric forward (unprotected; at loss 0 the no-loss reference)
  lg    linkfabric lg (LinkGuardian), --lg-link-loss set to the loss rate
  lgnb  linkfabric lgnb (LinkGuardianNB), --lg-link-loss set to the loss rate

With --runs R the cells take turns, R rounds of every arm at every loss rate (the
order reversed every other round), so that each run's ratios (lg at loss 0 over
forward's, each arm at each loss over its own loss 0) compare runs minutes, not
tens of minutes, apart; those ratios are printed run by run with their medians.

It prints the paper's Table 3 layout (Gbit/s and the ratio to the same arm at loss
0), then per run the TCP retransmissions, the frames h1's own veth dropped (sw1's
host port not polled in time: each costs TCP a retransmission the link did not
cause), the loss the link really applied and LinkGuardian's recovery counters,
and writes JSON to --out. TCP in h1 and h2 is set up as for 'linkfabric fct'.`,
		Example: `  linkfabric goodput
  linkfabric goodput --duration 3s --losses 0,1e-3,1e-2 --arms loss,lg`,
		PreRunE: cli.NeedsRoot("goodput"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range cli.SplitList(losses) {
				v, err := strconv.ParseFloat(p, 64)
				if err != nil {
					return fmt.Errorf("--losses: %q is not a number", p)
				}
				cfg.Losses = append(cfg.Losses, v)
			}
			cfg.Arms = cli.SplitList(arms)
			cfg.RunArgs = strings.Fields(runArgs)
			return out.Report(bed.Exp(cmd.Context(), &bed.Env{Prefix: prefix, Log: slog.Default(), LinkQueues: cfg.LinkQueues}, &cfg, Goodput))
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", 0, "iperf3 duration per arm and loss rate, whole seconds (default 5s)")
	f.IntVar(&cfg.Runs, "runs", 1, "runs per arm and loss rate, the cells taking turns (the table shows medians; with 2 or more, the ratios run by run)")
	f.StringVar(&losses, "losses", "0,1e-5,1e-4,1e-3,1e-2", "loss rates on sw1→sw2, comma-separated")
	f.StringVar(&arms, "arms", strings.Join(GoodputArms, ","), "arms: "+strings.Join(GoodputArms, ","))
	f.Float64Var(&cfg.Burst, "burst", 0, "mean loss burst length (Gilbert-Elliott); 0 = Bernoulli")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control (auto: dctcp if the kernel has it, else cubic)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.StringVar(&runArgs, "run-args", "", "extra `linkfabric run` arguments for the lg/lgnb arms")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	f.StringVar(&prefix, "prefix", "lfgood", "testbed prefix")
	cli.LinkQueuesFlag(f, &cfg.LinkQueues)
	out.Add(f, "out/goodput.json")
	return cmd
}
