package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdmaagent/gate"
	"github.com/spf13/cobra"
)

func tdmaCtlLossCmd() *cobra.Command {
	var (
		hosts, runs, rt    int
		size, rate, losses string
		modes, prefix, out string
		slot, guard        time.Duration
		force              bool
	)
	cmd := &cobra.Command{
		Use:   "ctlloss",
		Short: "The shuffle under lost grants: paper vs lease vs free-run",
		Long: `ctlloss runs the TDMA shuffle on the star while every host agent drops each
grant it receives with probability --loss (seeded: --drop-control), in each
gate mode:

  paper    the paper's reactive pause/unpause: a lost pause leaves the host
           sending into the next slot
  lease    each grant is a lease closed by the host's own timer
  freerun  lease, and the host opens by its own timer from the schedule for
           a bounded number of slots after the last frame heard

Per run: overrun bytes (sent after the window's end plus guard), collisions
(frames received after their window's end plus guard), switch drops and
backlog p99, lost frames, flows left incomplete (raw mode does not
retransmit), grants lost, lease expiries, free-run opens, completion over
ideal, CPU and load. Not done yet: the kill -STOP freeze of the FM.`,
		Example: `  sudo linkfabric tdma ctlloss --loss 0.001,0.01,0.05 --modes paper,lease,freerun --runs 3`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var c experiment.TDMACtlLossConfig
			s := &c.Shuffle
			s.Star = experiment.TDMAStar{Hosts: hosts, Slot: slot, Guard: guard, RT: rt, Sched: "rotor", Margin: 50 * time.Microsecond,
				Burst: 16 << 10, Limit: 64 << 10}
			if hosts < 2 || hosts > 8 {
				return fmt.Errorf("--hosts %d: want 2 to 8", hosts)
			}
			var sz netns.ByteSize
			if err := cellsSizeFlag("size", size, &sz); err != nil {
				return err
			}
			s.Size = int64(sz)
			if err := cellsRateFlag("rate", rate, &s.Star.Rate); err != nil {
				return err
			}
			for _, f := range strings.Split(losses, ",") {
				p, err := strconv.ParseFloat(f, 64)
				if err != nil || p < 0 || p >= 1 {
					return fmt.Errorf("--loss %q: want fractions in [0, 1) like 0.001,0.01,0.05", f)
				}
				c.Losses = append(c.Losses, p)
			}
			for _, m := range strings.Split(modes, ",") {
				if _, err := gate.ParseMode(m); err != nil {
					return fmt.Errorf("--modes: %w", err)
				}
				c.Modes = append(c.Modes, m)
			}
			if runs < 1 {
				return fmt.Errorf("--runs %d: want at least 1", runs)
			}
			s.Runs, s.Force, s.Dir, s.Arms = runs, force, out, []string{"tdma"}
			env := &experiment.Env{Prefix: prefix}
			r, err := env.TDMACtlLoss(cmd.Context(), c)
			if r != nil && len(r.Runs) > 0 {
				experiment.PrintTDMACtlLoss(os.Stdout, r)
				p := filepath.Join(out, "ctlloss.json")
				if werr := os.MkdirAll(out, 0o755); werr == nil && writeJSONFile(p, r) == nil {
					fmt.Fprintln(os.Stderr, "wrote", p)
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&hosts, "hosts", 4, "hosts on the star (2..8)")
	f.StringVar(&size, "size", "2MiB", "bytes each host sends to each other host")
	f.StringVar(&rate, "rate", "100M", "line rate of every host NIC and switch port (TBF)")
	f.DurationVar(&slot, "slot", 5*time.Millisecond, "TDMA slot length")
	f.DurationVar(&guard, "guard", 300*time.Microsecond, "TDMA guard time")
	f.StringVar(&losses, "loss", "0.001,0.01,0.05", "control-frame loss rates")
	f.StringVar(&modes, "modes", "paper,lease,freerun", "gate modes")
	f.IntVar(&rt, "rt", 60, "SCHED_FIFO priority of the FM's clock thread (0: none)")
	f.IntVar(&runs, "runs", 1, "runs of every (loss, mode)")
	f.BoolVar(&force, "force", false, "run even if the machine is saturated (the report says so)")
	f.StringVar(&prefix, "prefix", "lftc", "testbed namespace prefix")
	f.StringVar(&out, "out", "out/tdma-ctlloss", "directory for ctlloss.json and the agents' logs")
	return cmd
}
