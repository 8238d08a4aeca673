package cellsexp

import (
	"fmt"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func cellsClassesCmd() *cobra.Command {
	var (
		cfg        CellsClassesConfig
		arms, gray string
		fl         edgeFlags
	)
	cmd := &cobra.Command{
		Use:   "classes",
		Short: "Loss classes (RAIL) on the bundle: class-1 traffic stays off the gray links and loses nothing",
		Long: `classes builds the bundle testbed with one clean link and --gray links that lose
--loss in both directions (the impairment stage of both switches' XDP programs),
and runs cells over --cells-link-mode monitor on both edges, which measures each link's
loss from its cells and REACH messages. Arm classes adds --cells-loss-classes default
(class 1 ≤ 1e-6, class 2 ≤ 1e-3, class 3 ≤ 1e-1) and --cells-class-map 5=1 (DSCP EF, 46,
on class 1); arm none runs bare cells (--cells-link-mode none) sprayed over every link,
RAIL's unprotected baseline. Once sw1 shows the gray links in class 3
and the clean one in class 1, two iperf3 UDP flows run from h1 to h2 at once: one
with --dscp 46, one without. It reports each flow's loss and the cell bytes of each
loss class sent on every link during the flows (sw1's counters), and where
datagrams went that the links did not drop: outside the fabric (host sockets,
VOQs, h2's receive buffer), on sw2's busy sockets of the clean link, without a
route. The check (exit status 1 if missed): with classes, no class-1 byte on a
gray link and no class-1 datagram lost in the fabric, in every run. A class-1
datagram counts as lost in the fabric beyond all the drops of a busy machine
(outside the fabric, or sw2's clean-link sockets), which cover both flows.`,
		Example: `  linkfabric cells classes
  linkfabric cells classes --runs 1 --arms classes --loss 3e-2 --gray 2,3`,
		PreRunE: cli.NeedsRoot("cells classes"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Arms = cli.SplitList(arms)
			var err error
			if cfg.Gray, err = cli.ParseInts(gray); err != nil {
				return fmt.Errorf("--gray: %w", err)
			}
			cfg.RunArgs = strings.Fields(fl.runArgs)
			res, err := bed.Exp(cmd.Context(), fl.env(), &cfg, CellsClasses)
			if err := fl.out.Report(res, err); err != nil {
				return err
			}
			if ok, _ := res.Summary["check"].(bool); !ok && len(res.Runs) > 0 {
				if _, ran := res.Summary["check"]; ran {
					return report.Missed("cells classes: check missed: class-1 traffic crossed a gray link or lost datagrams (see the runs above)")
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&arms, "arms", "classes,none", "arms, comma-separated: classes (loss classes over monitor links), none (bare cells over every link)")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per arm (the table shows medians)")
	f.DurationVar(&cfg.Duration, "duration", 0, "the two UDP flows, whole seconds (default 4s)")
	f.Float64Var(&cfg.Loss, "loss", 1e-2, "loss rate of each gray link, each direction (above 1e-3 and at most 1e-1: class 3)")
	f.Float64Var(&cfg.Burst, "burst", 1, "mean loss burst, frames (1: Bernoulli)")
	f.StringVar(&gray, "gray", "1,2,3", "the gray bundle links, comma-separated (1-3; link0 stays clean)")
	cli.BitRateVar(f, &cfg.Rate, "rate", 0, "each UDP flow, bit/s (default 100M)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.DurationVar(&cfg.Settle, "settle", 0, "how long to wait for the links' classes (default 20s; about 1s on a quiet machine)")
	fl.add(cmd, &cfg.CellsEdgeConfig, "lfcls", "out/cells-classes.json")
	return cmd
}
