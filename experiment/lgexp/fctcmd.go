package lgexp

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func fctCmd() *cobra.Command {
	var (
		cfg                         FCTConfig
		sizes, flows, arms, runArgs string
		prefix, outDir              string
		asJSON                      bool
	)
	cmd := &cobra.Command{
		Use:   "fct",
		Short: "Flow completion times of short TCP flows with and without LinkGuardian (paper §4.3)",
		Long: `fct builds the pair testbed and, for each arm in turn, runs many short TCP flows
from h1 to h2 (one connection each, back to back) across the sw1→sw2 link, whose
receiving end drops frames at --loss, and measures each flow's completion time:

  noloss        linkfabric forward (kernel fast path where possible), impairment
                stage at loss 0 (the reference)
  noloss-afxdp  linkfabric forward --fastpath afxdp (every frame through the Go
                worker, as lg's are), loss 0 (optional)
  loss          linkfabric forward with the lossy link (unprotected)
  lg-noloss     linkfabric lg at loss 0: LinkGuardian's own cost (optional)
  lg            linkfabric lg (LinkGuardian, in order) with the lossy link
  lg-noloss-afxdp, lg-afxdp
                the same with --fastpath afxdp: LinkGuardian in the Go worker,
                both directions (optional)
  lgnb          linkfabric lgnb (LinkGuardianNB, no reordering) with the lossy link

lg and lgnb run their default path: the kernel sends and delivers the frames
that need no decision (both halves of LinkGuardian's fast path on the pair's
one-queue link; with --link-queues 2 the send half stays in the worker), the
table's "kernel sent" and "kernel delivered" say how much it carried.
  kernel        Linux bridges in sw1 and sw2, no impairment (optional)

TCP in h1 and h2 is set up as in the paper: SACK, RACK, TLP (tcp_early_retrans=3),
no metrics save, timestamps off, rto_min 1 ms on the route; every knob is read back
and printed. lg and lgnb get --lg-link-loss LOSS (N copies by Equation 2).

With --rounds R each arm's flows are split into R rounds and the arms take
turns (their order reversed every other round, the loss seed advanced each
round), so a machine whose speed drifts weighs on every arm alike; LinkGuardian's
ratios are then also given round by round, with their median. Use it when the
ratios are what you want (R ≥ 3): arms run one after the other can differ by
20 % on a shared machine from drift alone.

It prints per arm and size the completed and failed flows, the flows with a TCP
retransmission, p50 p90 p99 p99.9 p99.99 max and mean FCT, each one's ratio to
noloss, the loss the link really applied and LinkGuardian's recovery counters,
the explicit ACKs, dummies and worker wakeups per data frame on both switches,
and writes fct.json, flows.csv and a tail-CDF PNG per size into --out.

Tools: builtin (in-process sockets; FCT = connect() to the receiver reading the
last byte) or iperf (iperf 2 per flow, FCT from a capture at h1: SYN to the ACK
of the last byte; slower and larger, see the fct package documentation).`,
		Example: `  linkfabric fct --flows 10000 --size 143
  linkfabric fct --size 143,24387 --flows 10000,2000 --arms noloss,loss,lg,lgnb,kernel
  linkfabric fct --size 2MB --flows 200 --loss 1e-2 --burst 3 --cc bbr
  linkfabric fct --arms noloss,noloss-afxdp,lg-noloss,lg --flows 2000   # LinkGuardian's cost
  linkfabric fct --arms noloss,lg-noloss,lg-noloss-afxdp,lg,lg-afxdp --loss 1e-3   # the default path vs the worker
  linkfabric fct --arms noloss,lg-noloss,lg --rounds 5   # LinkGuardian's ratios, medians of 5 rounds
  linkfabric fct --arms noloss,lg-noloss,lg --link-queues 2   # a priority lane, the send half in the worker
  linkfabric fct --tool iperf --flows 200`,
		PreRunE: cli.NeedsRoot("fct"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if cfg.Sizes, err = fct.ParseSizes(sizes); err != nil {
				return err
			}
			if cfg.Flows, err = cli.ParseInts(flows); err != nil {
				return fmt.Errorf("--flows: %w", err)
			}
			cfg.Arms = cli.SplitList(arms)
			cfg.RunArgs = strings.Fields(runArgs)
			if err := cfg.Normalize(); err != nil {
				return err
			}
			env := &bed.Env{Prefix: prefix, Log: slog.Default(), LinkQueues: cfg.LinkQueues}
			res, err := FCT(cmd.Context(), env, cfg)
			if err != nil {
				return err
			}
			return report.PrintFiles(res, outDir, asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "size", "143", "flow sizes, comma-separated (e.g. 143,24387,2MB)")
	f.StringVar(&flows, "flows", "10000", "flows per arm: one count for every size, or one per size (e.g. 10000,2000)")
	f.Float64Var(&cfg.Loss, "loss", 1e-3, "loss rate on sw1→sw2 for the loss, lg and lgnb arms")
	f.Float64Var(&cfg.Burst, "burst", 0, "mean loss burst length (Gilbert-Elliott); 0 = Bernoulli")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control: cubic, bbr, dctcp, ... (auto: dctcp if the kernel has it, else cubic)")
	f.StringVar(&arms, "arms", strings.Join(DefaultFCTArms, ","), "arms, in order: "+strings.Join(FCTArms, ","))
	f.StringVar(&cfg.Tool, "tool", "builtin", "builtin or iperf")
	f.IntVar(&cfg.Warmup, "warmup", 10, "discarded warm-up flows per size and arm (builtin)")
	f.DurationVar(&cfg.Timeout, "flow-timeout", 0, "a flow not complete after this counts as failed (default 10s)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed (round r uses seed+r)")
	f.IntVar(&cfg.Rounds, "rounds", 1, "split each arm's flows into this many rounds, the arms taking turns (ratios per round and their median)")
	f.StringVar(&runArgs, "run-args", "", "extra `linkfabric run` arguments for the lg/lgnb arms, e.g. \"--lg-copies 2\"")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	f.StringVar(&prefix, "prefix", "lffct", "testbed prefix")
	cli.LinkQueuesFlag(f, &cfg.LinkQueues)
	f.StringVar(&outDir, "out", "out/fct", "write fct.json, flows.csv and fct-<size>.png here ('' to skip)")
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}

func demoCmd() *cobra.Command {
	var prefix string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The LinkGuardian FCT experiment at the paper's main setting, scaled to about a minute",
		Long: `demo runs 'linkfabric fct' with 10,000 flows of 143 B and 2,000 flows of 24,387 B per
arm at loss 1e-3 on the sw1→sw2 link, arms noloss, loss, lg-noloss, lg and lgnb taking turns
in three rounds (so that a machine's drift over minutes falls on every arm alike), each
dataplane on its default path (no flags: lg and lgnb in the kernel where they can), the
builtin tool, prints the table and writes JSON, CSV and tail-CDF plots to ` + DemoOutDir + `.`,
		Example: `  sudo linkfabric demo      # or: make demo
  linkfabric fct --size 143,24387 --flows 10000,2000 --loss 1e-3 --rounds 3   # the same, with every knob`,
		PreRunE: cli.NeedsRoot("demo"),
		RunE: func(cmd *cobra.Command, args []string) error {
			env := bed.CmdEnv(prefix)
			return Demo(cmd.Context(), env, os.Stdout, asJSON)
		},
	}
	cmd.Flags().StringVar(&prefix, "prefix", "lfdemo", "testbed prefix")
	cmd.Flags().BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}
