package lgexp

import (
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func benchCmd() *cobra.Command {
	var (
		cfg    BenchConfig
		prefix string
		out    report.OutFlags
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the dataplane against the Linux bridge, side by side in one run",
		Long: `bench builds the pair testbed and measures, for each arm in turn and --runs times
(interleaved, so drift hits every arm alike):

  bridge              a Linux bridge in sw1 and sw2 (the kernel baseline)
  forward-xdp         linkfabric run --mode forward --fastpath xdp in sw1 and sw2:
                      frames go port to port in the kernel (XDP devmap redirect);
                      checked on both switches before measuring, and the share of
                      frames the fast path carried is recorded
  forward-afxdp       the same with --fastpath afxdp: through AF_XDP and the Go
                      worker, poll() mode (the fallback path), sockets bound
                      with XDP_USE_NEED_WAKEUP (run's default)
  forward-afxdp-busy  the AF_XDP path with --busy-poll (with --busy-poll)
  forward-afxdp-nowakeup
                      the AF_XDP path with --need-wakeup=false (with
                      --no-wakeup-arm); the summary then also gives
                      forward-afxdp ÷ this arm (need_wakeup on ÷ off)

and reports medians and each arm's ratio to the bridge for iperf3 TCP
throughput, 60-byte frames per second, and sockperf UDP latency p50/p99.
All arms run on the same testbed with the same offloads (TX checksum off on
the veth ends, GSO on, GRO on at h1's and h2's ends, which lets the switches
redirect frames into their host ports). Takes about 15 s per arm per run.

--mtu sets the hosts' MTU (the switches' link ports get 16 bytes more) for
every arm alike: --mtu 9000 compares jumbo frames through the bridge and
forward mode. The fast path redirects them in the kernel as multi-buffer XDP
frames; the AF_XDP path gets them as chains of 4 KiB buffers that the worker
copies together (UMEM frames of 16 KiB), so its ratio at 9000 shows what
that copy costs. TCP then uses 8948-byte segments; the frame rate is still
measured with 60-byte frames.`,
		Example: `  linkfabric bench
  linkfabric bench --runs 5 --duration 10s --json > bench.json
  linkfabric bench --mtu 3000 --busy-poll=false
  linkfabric bench --no-wakeup-arm --busy-poll=false   # need_wakeup on and off side by side
  linkfabric bench --mtu 9000 --runs 3                # jumbo frames, both paths beside the bridge`,
		PreRunE: cli.NeedsRoot("bench"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return out.Report(Bench(cmd.Context(), bed.CmdEnv(prefix), cfg))
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Runs, "runs", 3, "runs per arm (medians are reported)")
	f.DurationVar(&cfg.Duration, "duration", 0, "duration of the TCP measurement (default 5s; frames and latency take min(this, 3s))")
	f.IntVar(&cfg.MTU, "mtu", 0, "host MTU (default 1500)")
	f.BoolVar(&cfg.BusyPoll, "busy-poll", true, "also measure the dataplane with busy polling")
	f.BoolVar(&cfg.NoWakeupArm, "no-wakeup-arm", false, "also measure the AF_XDP path with --need-wakeup=false (arm forward-afxdp-nowakeup), beside forward-afxdp (need_wakeup on)")
	f.StringVar(&prefix, "prefix", "lfbench", "testbed prefix")
	out.Add(f, "out/bench.json")
	return cmd
}
