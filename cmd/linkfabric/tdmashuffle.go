package main

import (
	"io"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
)

func tdmaShuffleCmd() *cobra.Command {
	var (
		sf   tdmaStarFlags
		size string
	)
	cmd := &cobra.Command{
		Use:   "shuffle",
		Short: "All-to-all shuffle on the star: TDMA (raw agents) against kernel TCP (§6.1, Fig. 7)",
		Long: `shuffle brings up a star of --hosts hosts and a fabric manager on one Linux
bridge (TBF at --rate on every host NIC and switch port, --limit of switch
buffer), and every host sends --size to every other host:

  tdma  the FM and raw host agents (linkfabric tdma fm / host): each pair sends
        only in its slots
  tcp   kernel TCP, one connection per pair, all at once

Per arm and run: completion (last flow finished, from the first byte sent)
over ideal (the line-rate time for (hosts−1)·size per host, with the arm's
header overhead), finish spread (last − first flow), switch drops and the
p99 of the switch ports' backlog sampled every ms over netlink, collisions
(TDMA frames received after their window's end plus the guard), TCP
retransmissions, control overhead (grant bytes per host ÷ rate), the FM's
slot-boundary lateness, CPU use and load average. The paper: TCP 1.22×,
TDMA 1.054× ideal (24 hosts, 10 Gbit/s, 300 µs slots).

It refuses to start when the CPUs are over 85 % busy (--force runs anyway
and the report says so). Writes shuffle.json (with a summary of medians) and
flows.csv into --out, and each TDMA run's agent logs and statistics.`,
		Example: `  sudo linkfabric tdma shuffle --hosts 4 --size 4MiB --runs 3
  sudo linkfabric tdma shuffle --hosts 6 --rate 100M --slot 5ms --guard 300us --rt 50 --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var c experiment.TDMAShuffleConfig
			var err error
			if c.Star, err = sf.star(); err != nil {
				return err
			}
			var sz netns.ByteSize
			if err := cellsSizeFlag("size", size, &sz); err != nil {
				return err
			}
			c.Size = int64(sz)
			if c.Arms, err = sf.armList([]string{"tdma", "tcp"}); err != nil {
				return err
			}
			c.Runs, c.Force, c.Dir = sf.runs, sf.force, sf.out
			env := &experiment.Env{Prefix: sf.prefix}
			r, err := env.TDMAShuffle(cmd.Context(), c)
			if r != nil && len(r.Runs) > 0 {
				reportTDMA(func(w io.Writer) { experiment.PrintTDMAShuffle(w, r) }, func() ([]string, error) { return experiment.WriteTDMAShuffle(sf.out, r) })
			}
			return err
		},
	}
	sf.register(cmd.Flags(), tdmaStarDefaults{hosts: 4, limitName: "limit", arms: []string{"tdma", "tcp"}, armsValue: "tdma,tcp",
		prefix: "lftx", out: "out/tdma-shuffle"})
	cmd.Flags().StringVar(&size, "size", "4MiB", "bytes each host sends to each other host")
	return cmd
}
