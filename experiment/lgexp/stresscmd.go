package lgexp

import (
	"log/slog"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func stressCmd() *cobra.Command {
	var (
		cfg            StressConfig
		prefix         string
		modes, runArgs string
		out            report.OutFlags
	)
	cmd := &cobra.Command{
		Use:   "stress",
		Short: "LinkGuardian stress test: loss and link speed with none, lgnb and lg (paper §4.1)",
		Long: `stress builds the pair testbed, injects loss on the sw1→sw2 link (at sw2's link
port), and for each arm — forward without loss (the reference), none (forward with
loss: unprotected), lgnb and lg — runs two phases:

  capacity  the highest rate the arm sustains: h1 sends numbered frames at a
            paced rate for 1 s, and a rate passes if at most --tolerance of them
            fail to reach h2 (RFC 2544 throughput); --search-steps bisections of
            [0, --search-max]. Divided by forward's, it is the effective link speed
            (median of --capacity-runs rounds over all arms). Each round then
            floods for 2 s: the frames/s delivered while h1 sends as fast as it
            can, shown as "(flood)"; on a small machine that measures how the
            CPU is shared under overload as much as the pipeline.
            --capacity flood measures only that.
  loss      h1 sends --frames numbered frames at a rate the pipeline sustains
            (default half of forward's capacity); h2 checks every number: missing
            (effective loss), duplicated, out of order

With --both the sw2→sw1 direction is impaired too (the same model, seed+1, at
sw1's link port): ACKs, loss notifications, pauses and session frames are lost
like data, and a lost one must cost time, never a frame.

It also reports the actual loss rate the impairment applied, N (copies per loss),
peak TX and reorder buffer occupancy, and the retransmission delay (loss detected
→ retransmission received) p50/p99/max from the receiving switch.`,
		Example: `  linkfabric stress --loss 1e-2 --frames 1000000
  linkfabric stress --loss 1e-3 --burst 3 --modes lg
  linkfabric stress --loss 1e-2 --run-args "--lg-link-loss 1e-2" --busy-poll
  linkfabric stress --loss 1e-2 --burst 3 --both --modes lg   # both directions impaired`,
		PreRunE: cli.NeedsRoot("stress"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if modes != "" {
				cfg.Modes = strings.Split(modes, ",")
			}
			cfg.RunArgs = strings.Fields(runArgs)
			return out.Report(Stress(cmd.Context(), &bed.Env{Prefix: prefix, Log: slog.Default(), LinkQueues: cfg.LinkQueues}, cfg))
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&cfg.Frames, "frames", 1_000_000, "frames per arm in the loss phase")
	f.IntVar(&cfg.Size, "size", 1000, "frame size in bytes (no FCS)")
	f.Float64Var(&cfg.Loss, "loss", 1e-2, "loss rate on sw1→sw2")
	f.Float64Var(&cfg.Burst, "burst", 0, "mean loss burst length (Gilbert-Elliott); 0 = Bernoulli")
	f.Float64Var(&cfg.Rate, "rate", 0, "frames/s in the loss phase (default: half of forward's capacity)")
	f.StringVar(&cfg.Method, "capacity", "search", "capacity measurement: search (highest sustained rate) or flood (delivered under overload)")
	f.DurationVar(&cfg.Capacity, "capacity-time", 0, "length of each search trial (default 1s) or flood run (default 3s)")
	f.Float64Var(&cfg.Tolerance, "tolerance", 1e-3, "search: fraction of a trial's frames that may go missing (the none arm: beyond the impairment's drops)")
	f.Float64Var(&cfg.SearchMax, "search-max", 400_000, "search: upper end of the rates searched, frames/s")
	f.IntVar(&cfg.SearchSteps, "search-steps", 8, "search: bisection steps (resolution search-max / 2^steps)")
	f.IntVar(&cfg.CapacityRuns, "capacity-runs", 3, "capacity measurements per arm, arms interleaved; the median is reported")
	f.StringVar(&modes, "modes", "none,lgnb,lg", "arms after the forward reference")
	f.StringVar(&runArgs, "run-args", "", "extra arguments for `linkfabric run` in the lg/lgnb arms, e.g. \"--lg-link-loss 1e-2\"")
	f.Float64Var(&cfg.TargetLoss, "target-loss", 0, "target loss for Equation 2 (default: run's 1e-8)")
	f.BoolVar(&cfg.BusyPoll, "busy-poll", false, "run the dataplanes with --busy-poll")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.BoolVar(&cfg.Both, "both", false, "impair sw2→sw1 too (the same model, seed+1): control frames are lost like data")
	f.StringVar(&prefix, "prefix", "lfstress", "testbed prefix")
	cli.LinkQueuesFlag(f, &cfg.LinkQueues)
	out.Add(f, "out/stress.json")
	return cmd
}
