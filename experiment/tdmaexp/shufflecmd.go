package tdmaexp

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
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
(TDMA frames received after their slot's end plus the guard on the FM's
timeline, or released before its start plus the guard), each attributed to
its cause in a table after the runs (sent after the lease, closed late,
opened early, grant late, kernel queue, switch queue) with the worst ones'
host, slot and lateness, the exit gate's figures (frames returned to their
agents because they would have left their host outside their slot, the
collisions it prevented, named by cause in a second table with their count
per sender, and frames that entered the switch outside their slot: none), TCP
retransmissions, control overhead (grant bytes per host ÷ rate), the FM's
slot-boundary lateness, CPU use (with the share the hypervisor stole: on a
virtual machine a stolen vCPU stalls the switch's softirqs too) and load
average. The paper: TCP 1.22×, TDMA 1.054× ideal (24 hosts, 10 Gbit/s,
300 µs slots).

It refuses to start when the CPUs are over 85 % busy (--force runs anyway
and the report says so). Writes into --out: shuffle.json (with a summary of
medians), flows.csv (every flow's finish), progress.csv (every host's bytes
received, sampled every 10 ms) and shuffle-progress.png, the paper's Figure 7
in shape: per arm (TCP above, TDMA below, one time axis) each host's bytes
received over time in the arm's median run, with the ideal dashed. Under TCP
the lines fan out (some hosts finish early at the others' expense); under
TDMA they rise together and end together, near the ideal. Each TDMA run's
agent logs and statistics go in a directory of their own.`,
		Example: `  sudo linkfabric tdma shuffle --hosts 4 --size 4MiB --runs 3
  sudo linkfabric tdma shuffle --hosts 6 --rate 100M --slot 5ms --guard 300us --rt 50 --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := TDMAShuffleConfig{Star: sf.parsed, Arms: sf.parsedArms, Runs: sf.runs, Force: sf.force, Dir: sf.out}
			var sz netns.ByteSize
			if err := cli.SizeFlag("size", size, &sz); err != nil {
				return err
			}
			c.Size = int64(sz)
			_, err := runStar(cmd, sf.prefix, sf.out, c, TDMAShuffle, WriteTDMAShuffle)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 4, limitName: "limit", arms: ShuffleArms, armsValue: "tdma,tcp", prefix: "lftx", out: "out/tdma-shuffle"})
	cmd.Flags().StringVar(&size, "size", "4MiB", "bytes each host sends to each other host")
	return cmd
}

// starResult is the result of an experiment on the star: its text, and
// whether it measured anything (false for a nil result) to print and write.
type starResult interface {
	Text() string
	measured() bool
}

// runStar runs exp with c on a testbed named prefix; if it measured
// anything, prints its text, writes its files into dir (write) and lists
// them on stderr. It returns the result and the experiment's error, or the
// writing's if the experiment had none.
func runStar[C any, R starResult](cmd *cobra.Command, prefix, dir string, c C, exp func(context.Context, *bed.Env, C) (R, error), write func(string, R) ([]string, error)) (R, error) {
	r, err := exp(cmd.Context(), &bed.Env{Prefix: prefix}, c)
	if !r.measured() {
		return r, err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		if jerr := report.PrintJSON(r); err == nil {
			err = jerr
		}
	} else {
		fmt.Print(r.Text())
	}
	paths, werr := write(dir, r)
	if len(paths) > 0 {
		fmt.Fprintln(os.Stderr, "wrote", strings.Join(paths, ", "))
	}
	if err == nil {
		err = werr
	}
	return r, err
}
