package tdmaexp

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func tdmaNFQCmd() *cobra.Command {
	var (
		sf  tdmaStarFlags
		dur time.Duration
		tlp bool
	)
	cmd := &cobra.Command{
		Use:   "nfqueue",
		Short: "Unmodified kernel TCP (iperf3) held in NFQUEUE gates and released only in its slots",
		Long: `nfqueue brings up the star with the FM and every host agent in --gate
nfqueue mode (iptables-legacy NFQUEUE rules with --queue-bypass per
destination; verdicts given only inside the host's windows), and runs one
iperf3 TCP flow from h1 to each other host for --duration, at once. With the
rotor, each of h1's N−1 destinations has one slot in N−1: a 25 % duty per
flow at --hosts 5 (the default).

A held packet stays charged to its socket, so TCP stops sending when the
gate is closed instead of losing packets: the check is 0 TCP retransmissions
and 0 NFQUEUE drops (queue_dropped: the queue was full; user_dropped: the
netlink socket overflowed) in every run.

TCP's tail-loss probe (tcp_early_retrans) is turned off on h1 unless --tlp:
a gate closed for several slots outlasts its 2·srtt timer, and each probe
counts as a retransmission although nothing was lost.

Per run: goodput, iperf3's retransmissions and h1's RetransSegs, packets
released and held at most, h1's windows and the duty per flow (windows ×
(slot − guard) ÷ flows ÷ duration), overrun bytes, collisions, switch drops, control
overhead, CPU and load. Writes nfqueue.json (summary of medians) and runs.csv
into --out with each run's agent logs.`,
		Example: `  sudo linkfabric tdma nfqueue --hosts 5 --duration 10s --runs 3`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dur < time.Second {
				return fmt.Errorf("--duration %v: want at least 1s (iperf3 counts whole seconds)", dur)
			}
			c := TDMANFQConfig{Star: sf.parsed, Runs: sf.runs, Force: sf.force, Dir: sf.out, Duration: dur.Truncate(time.Second), TLP: tlp}
			_, err := runStar(cmd, sf.prefix, sf.out, c, TDMANFQ, WriteTDMANFQ)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 5, runsUsage: "runs; the summary gives medians", prefix: "lftq", out: "out/tdma-nfqueue",
		outUsage: "directory for nfqueue.json, runs.csv and the agents' logs"})
	f := cmd.Flags()
	f.DurationVar(&dur, "duration", 10*time.Second, "length of the iperf3 flow (whole seconds)")
	f.BoolVar(&tlp, "tlp", false, "keep TCP's tail-loss probe on h1 (its probes count as retransmissions)")
	return cmd
}
