package lgexp

import (
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func chaosCmd() *cobra.Command {
	var (
		cfg                     ChaosConfig
		events, runArgs, prefix string
		out                     report.OutFlags
	)
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Faults under load: kill -9 and restart a dataplane, flap a link port, stall a dataplane, hostile frames; does TCP resume, does UDP stay whole",
		Long: `chaos builds the pair testbed, runs --mode (lg by default) on both switches and one
iperf3 TCP connection in both directions (--bidir) from h1 to h2, then applies each
fault of --events in turn:

  kill-sw1, kill-sw2   SIGKILL the switch's dataplane (no cleanup runs), time how long the
                       other switch's link session takes to leave up, start it again
  flap-sw1, flap-sw2   ip link set link0 down on the switch, wait --flap, set it up
  stall-sw2            SIGSTOP the switch's dataplane, wait --stall, SIGCONT (a switch
                       not scheduled for longer than the link session's dead-peer timeout)
  hostile-sw2          send --hostile random link-header frames (every type, half with a
                       valid integrity trailer, the peer's MAC as source) into sw2's link port

For each it reports whether every dataplane still runs, how long after the end of
the fault (the restarted dataplane ready, the port up again, the stalled dataplane
continued) each TCP direction carried a quarter of its rate before the fault again,
sustained for 500 ms (h2's and h1's receive counters sampled every 10 ms), and then
runs UDP from h1 to h2 with --udp-loss and --udp-flip on both directions of the link: through
LinkGuardian it must lose nothing and keep order, and h2 must count no UDP checksum
errors. TCP in h1 and h2 is set up as for 'linkfabric fct' (rto_min 1 ms).`,
		Example: `  linkfabric chaos
  linkfabric chaos --events kill-sw2 --udp-loss 1e-2 --json
  linkfabric chaos --events hostile-sw2 --udp-flip 1e-2
  linkfabric chaos --mode lgnb --events flap-sw1 --flap 5s`,
		PreRunE: cli.NeedsRoot("chaos"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Events = cli.SplitList(events)
			cfg.RunArgs = strings.Fields(runArgs)
			return out.Report(bed.Exp(cmd.Context(), bed.CmdEnv(prefix), &cfg, Chaos))
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Mode, "mode", "lg", "dataplane mode of both switches: lg or lgnb")
	f.StringVar(&events, "events", strings.Join(ChaosEvents, ","), "faults, in order: "+strings.Join(ChaosEvents, ","))
	f.DurationVar(&cfg.Settle, "settle", 0, "TCP time before each fault (default 2s)")
	f.DurationVar(&cfg.Watch, "watch", 0, "time after each fault to watch TCP resume (default 4s)")
	f.DurationVar(&cfg.Flap, "flap", 0, "how long a flapped port stays down (default 2s)")
	f.DurationVar(&cfg.Stall, "stall", 0, "how long a stalled dataplane stays stopped (default 1.5s)")
	f.Float64Var(&cfg.UDPLoss, "udp-loss", 1e-2, "Bernoulli loss on both link directions during the UDP check")
	f.Float64Var(&cfg.UDPFlip, "udp-flip", 0, "probability of one flipped bit in a frame not dropped, both link directions, during the UDP check")
	f.IntVar(&cfg.Hostile, "hostile", 0, "frames the hostile-sw2 event sends (default 120000)")
	cli.BitRateVar(f, &cfg.UDPRate, "udp-rate", 0, "UDP rate of the check, bit/s (default 50M)")
	f.DurationVar(&cfg.UDPTime, "udp-time", 0, "UDP check duration, whole seconds (default 3s)")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control (auto: dctcp if the kernel has it, else cubic)")
	f.StringVar(&runArgs, "run-args", "", "extra `linkfabric run` arguments for both switches")
	f.StringVar(&prefix, "prefix", "lfchaos", "testbed prefix")
	out.Add(f, "out/chaos.json")
	return cmd
}
