package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/spf13/cobra"
)

func fecCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fec",
		Short: "RAIL's XOR parity and replication: residual loss and overhead",
		Long: `fec measures package fec, RAIL's coding module (NSDI'17 §5.3): XOR parity after
every n data frames, n from a residual-loss target, or every frame sent k times.`,
		Example: `  linkfabric fec residual --sim`,
	}
	cmd.AddCommand(fecResidualCmd())
	return cmd
}

func fecResidualCmd() *cobra.Command {
	var (
		cfg             experiment.FECResidualConfig
		sim             bool
		outJSON, outCSV string
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "residual",
		Short: "Residual loss and wire overhead of XOR parity (n from RAIL's rule) and replication, against the formulas",
		Long: `residual sends --frames host frames through package fec for every --loss rate: XOR
parity with n from RAIL's rule for --target (the largest n with
1−(1−p)^(n+1)−(n+1)p(1−p)^n < target; no parity arm where p < target or where
even n = 1 misses it), and replication ×--copies. Loss is Bernoulli and, with
--burst B, also Gilbert (bursty) at the same mean rate with mean bursts of B
frames: XOR parity recovers one loss per group, so bursts defeat it.

For each point it reports the link's measured loss, the residual loss (host
frames never delivered) against p·(1−(1−p)^n) (p^k for replication), the
fraction of groups that failed against RAIL's formula, and the wire overhead
against 1/n plus headers. Every delivered frame is checked byte for byte, and
the loss is compared with what the realised drops force (the oracle).

--sim runs the simulated link (package fec/fecsim, a virtual clock): exact and
fast, no root. The veth run (UDP through --mode fec and the impairer) needs
the dataplane's fec mode, which does not exist yet.`,
		Example: `  linkfabric fec residual --sim
  linkfabric fec residual --sim --loss 3e-3 --frames 100000 --burst 0
  linkfabric fec residual --sim --target 1e-4 --copies 2 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !sim {
				return errors.New("fec residual: only --sim is implemented (the veth run needs --mode fec on the dataplane); run 'linkfabric fec residual --sim'")
			}
			if err := cfg.Normalize(); err != nil {
				return fmt.Errorf("fec residual: %w", err)
			}
			cfg.Progress = os.Stderr
			res, err := experiment.FECResidualSim(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if outCSV != "" {
				if err := res.WriteCSV(outCSV); err != nil {
					return err
				}
			}
			return report(res, res.Text(), outJSON, asJSON)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&sim, "sim", false, "run on the simulated link (required for now)")
	f.Float64SliceVar(&cfg.Loss, "loss", experiment.DefaultFECLoss, "link loss rates")
	f.Float64Var(&cfg.Target, "target", 1e-3, "residual loss target that sets n (RAIL: 1e-3 for TCP)")
	f.IntVar(&cfg.Frames, "frames", 1_000_000, "host frames per point")
	f.IntVar(&cfg.Copies, "copies", 3, "replication arm: transmissions per frame (0: no replication arm)")
	f.Float64Var(&cfg.MeanBurst, "burst", 3, "bursty arm: mean burst of the Gilbert loss, frames (0: Bernoulli only)")
	f.IntVar(&cfg.MinLen, "min-len", 60, "shortest host frame, bytes")
	f.IntVar(&cfg.MaxLen, "max-len", 1514, "longest host frame, bytes (frame lengths are uniform)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the frame lengths and the loss")
	f.StringVar(&outJSON, "out", "out/fec-residual.json", "write the result as JSON here ('' to skip)")
	f.StringVar(&outCSV, "csv", "out/fec-residual.csv", "write one line per point as CSV here ('' to skip)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of the table")
	return cmd
}
