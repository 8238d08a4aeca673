package tdmaexp

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/spf13/cobra"
)

func tdmaCtlLossCmd() *cobra.Command {
	var (
		sf                               tdmaStarFlags
		size, losses, modes, freezeModes string
		freeze                           time.Duration
		freezeAt                         float64
	)
	cmd := &cobra.Command{
		Use:   "ctlloss",
		Short: "The shuffle under lost grants and with the FM frozen: paper vs lease vs free-run",
		Long: `ctlloss runs the TDMA shuffle on the star while every host agent drops each
grant it receives with probability --loss (seeded: --drop-control), in each
gate mode:

  paper    the paper's reactive pause/unpause: a lost pause leaves the host
           sending into the next slot
  lease    each grant is a lease closed by the host's own timer
  freerun  lease, and the host opens by its own timer from the schedule for
           a bounded number of slots after the last frame heard

Per run: overrun bytes (sent after the window's end plus guard), collisions
(frames received after their slot's end plus guard on the FM's timeline, or
released before its start plus guard; a table after the runs gives each
one's cause), switch drops and backlog p99, lost frames, flows left
incomplete (raw mode does not retransmit), grants lost, lease expiries,
free-run opens, completion over ideal, CPU and load, and the exit gate's
figures (frames it returned to their agents, by cause in a second table,
and frames that entered the switch outside their slot). Expected: paper mode (whose windows have no close for
the gate to hold) overruns and collides at a loss of 1 % and more; lease and
free-run modes show 0 overrun bytes, 0 collisions and 0 switch drops at
every loss.

The FM freeze (--freeze, on by default; 0 turns it off): in each of
--freeze-modes, one more shuffle without loss, during which the FM process
gets SIGSTOP once --freeze-at of the shuffle's bytes have crossed the switch,
and SIGCONT --freeze later. Measured from the agents' statistics (every
namespace shares one clock):

  silent within the lease  no byte left any host's line later than the lease
                           (hosts × slot) after the last control frame that
                           host heard, over the whole run; for the silence
                           that spans the CONT, when it began after that frame
  resumed within a round   every host with data left released its first frame
                           within one round (hosts × slot) of the CONT

each met or missed, per host: its last frame heard and the start of its
silence (ms from the STOP), the first frame after the CONT (ms from the CONT).
Paper mode (add it to --freeze-modes) has no lease: a host unpaused when the
FM stops sends on until the pause quanta run out; it is shown, not checked.
The command exits non-zero when the freeze check misses in lease or free-run
mode.

Writes into --out: ctlloss.json (every run, the freezes, a summary of medians
per loss and mode, the freeze check), ctlloss.csv (a row per run; freeze runs
have loss "freeze"), ctlloss-overrun.png and ctlloss-collisions.png (bars of
the medians: one group per loss, one bar per mode), and each run's agent logs
and statistics.`,
		Example: `  sudo linkfabric tdma ctlloss --loss 0.001,0.01,0.05 --modes paper,lease,freerun --runs 3
  sudo linkfabric tdma ctlloss --loss 0.01 --modes lease --freeze 100ms --freeze-modes lease,freerun,paper
  sudo linkfabric tdma ctlloss --loss 0,0.05 --freeze 0 --size 1MiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := TDMACtlLossConfig{Shuffle: TDMAShuffleConfig{Star: sf.parsed, Runs: sf.runs, Force: sf.force, Dir: sf.out, Arms: []string{"tdma"}}}
			s := &c.Shuffle
			var err error
			var sz netns.ByteSize
			if err := cli.SizeFlag("size", size, &sz); err != nil {
				return err
			}
			s.Size = int64(sz)
			for _, f := range strings.Split(losses, ",") {
				p, err := strconv.ParseFloat(f, 64)
				if err != nil || p < 0 || p >= 1 {
					return fmt.Errorf("--loss %q: want fractions in [0, 1) like 0.001,0.01,0.05", f)
				}
				c.Losses = append(c.Losses, p)
			}
			if c.Modes, err = parseGateModes("modes", modes); err != nil {
				return err
			}
			if freeze < 0 || freeze > 10*time.Second {
				return fmt.Errorf("--freeze %v: want 0 (none) to 10s", freeze)
			}
			if freezeAt <= 0 || freezeAt >= 1 {
				return fmt.Errorf("--freeze-at %g: want a share of the shuffle in (0, 1), like 0.3", freezeAt)
			}
			c.Freeze = TDMAFreezeConfig{Dur: freeze, At: freezeAt}
			if freeze > 0 {
				if c.Freeze.Modes, err = parseGateModes("freeze-modes", freezeModes); err != nil {
					return err
				}
			}
			r, err := runStar(cmd, sf.prefix, sf.out, c, TDMACtlLoss, WriteTDMACtlLoss)
			if err == nil && r.FreezeCheck == Missed {
				err = report.Missed("the freeze check missed: see the freeze tables above")
			}
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 4, sweepsModes: true, runs: 1, runsUsage: "runs of every (loss, mode) and freeze",
		prefix: "lftc", out: "out/tdma-ctlloss", outUsage: "directory for ctlloss.json, ctlloss.csv, the PNGs and the agents' logs"})
	f := cmd.Flags()
	f.StringVar(&size, "size", "2MiB", "bytes each host sends to each other host")
	f.StringVar(&losses, "loss", "0.001,0.01,0.05", "control-frame loss rates")
	f.StringVar(&modes, "modes", "paper,lease,freerun", "gate modes")
	f.DurationVar(&freeze, "freeze", 100*time.Millisecond, "freeze the FM (SIGSTOP, then SIGCONT) this long in one more shuffle per freeze mode (0: no freeze)")
	f.Float64Var(&freezeAt, "freeze-at", 0.3, "freeze once this share of the shuffle's bytes has crossed the switch")
	f.StringVar(&freezeModes, "freeze-modes", "lease,freerun", "gate modes of the freeze runs (paper is shown, not checked)")
	return cmd
}

// parseGateModes parses a comma list of gate modes (flag --name).
func parseGateModes(name, v string) ([]string, error) {
	var ms []string
	for _, m := range strings.Split(v, ",") {
		if _, err := gate.ParseDiscipline(m); err != nil {
			return nil, fmt.Errorf("--%s: %w", name, err)
		}
		ms = append(ms, m)
	}
	return ms, nil
}
