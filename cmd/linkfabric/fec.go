package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

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
		veth            experiment.FECVethConfig
		sim             bool
		arms, runArgs   string
		prefix          string
		outJSON, outCSV string
		asJSON          bool
	)
	cmd := &cobra.Command{
		Use:   "residual",
		Short: "Residual loss, wire overhead and latency of XOR parity (n from RAIL's rule), replication and lg, against the formulas",
		Long: `residual measures what each protection leaves of a link's loss at every --loss
rate: XOR parity with n from RAIL's rule for --target (the largest n with
1−(1−p)^(n+1)−(n+1)p(1−p)^n < target; no parity where p < target, replication
where even n = 1 misses it), and replication ×--copies. Loss is Bernoulli and,
with --burst B, also Gilbert (bursty) at the same mean rate with mean bursts of
B frames: XOR parity recovers one loss per group, so bursts defeat it.

On veth (the default; root): the pair testbed, UDP from h1 to h2 through
'linkfabric run' on sw1 and sw2, the loss at sw2's link0 (the XDP impairment
stage, sw1 → sw2). Arms, each on fresh dataplanes at every point:

  forward     no protection (the loss itself)
  fec         --mode fec --fec-target T: the link policy picks n (or
              replication) from the loss it measures, as a user would run it
  fec-given   --mode fec --fec-loss p: the policy on the impairment's rate
  replicate   --mode fec --fec-n 0 --fec-copies K
  lg          --mode lg (LinkGuardian retransmission)

Each point sends --warmup datagrams (the loss monitor's window fills and the
policy decides), then --frames measured ones at --rate. It reports the residual
(measured datagrams never delivered) beside the formula at the loss the
impairment realised, the wire overhead (sw1's link0 bytes over its host0
bytes), the one-way latency p50/p99 (send time in the datagram to h2's kernel
receive time) and what reached h2 out of order. The target check: fec at
p = 3·10⁻³ with --target 1e-3 leaves ≤ 2·10⁻³ at ≤ 1.12× the host bytes (exit
1 if missed).

--sim runs package fec on the simulated link instead (fec/fecsim, a virtual
clock; no root): exact and fast, every delivered frame checked byte for byte,
the loss compared with what the realised drops force (the oracle), and the
fraction of groups that failed against RAIL's formula.`,
		Example: `  linkfabric fec residual
  linkfabric fec residual --loss 3e-3 --arms forward,fec --runs 3 --burst 0
  linkfabric fec residual --sim
  linkfabric fec residual --sim --target 1e-4 --copies 2 --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			write := func(res any, text string, writeCSV func(string) error) error {
				if outCSV != "" {
					if err := writeCSV(outCSV); err != nil {
						return err
					}
				}
				return report(res, text, outJSON, asJSON)
			}
			if sim {
				if err := cfg.Normalize(); err != nil {
					return fmt.Errorf("fec residual: %w", err)
				}
				cfg.Progress = os.Stderr
				res, err := experiment.FECResidualSim(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				return write(res, res.Text(), res.WriteCSV)
			}
			if err := requireRoot("fec residual (without --sim)"); err != nil {
				return err
			}
			veth.Loss, veth.Target, veth.Frames, veth.MeanBurst, veth.Seed = cfg.Loss, cfg.Target, cfg.Frames, cfg.MeanBurst, cfg.Seed
			if cfg.Copies > 0 {
				veth.Copies = cfg.Copies
			}
			veth.Arms, veth.RunArgs = splitList(arms), strings.Fields(runArgs)
			if err := veth.Normalize(); err != nil {
				return fmt.Errorf("fec residual: %w", err)
			}
			env := &experiment.Env{Prefix: prefix, Log: log}
			res, err := env.FECResidualVeth(cmd.Context(), veth)
			if err != nil {
				return err
			}
			if err := write(res, res.Text(), res.WriteCSV); err != nil {
				return err
			}
			if res.Summary["pass"] != true {
				return errors.New("fec residual: out of target")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&sim, "sim", false, "run on the simulated link (package fec/fecsim) instead of veth")
	f.Float64SliceVar(&cfg.Loss, "loss", experiment.DefaultFECLoss, "link loss rates")
	f.Float64Var(&cfg.Target, "target", 1e-3, "residual loss target that sets n (RAIL: 1e-3 for TCP)")
	f.IntVar(&cfg.Frames, "frames", 0, "host frames per point (default 10^6 with --sim, 10^5 on veth)")
	f.IntVar(&cfg.Copies, "copies", 3, "replication arm: transmissions per frame (--sim: 0 for no replication arm)")
	f.Float64Var(&cfg.MeanBurst, "burst", 3, "bursty arm: mean burst of the Gilbert loss, frames (0: Bernoulli only)")
	f.IntVar(&cfg.MinLen, "min-len", 60, "--sim: shortest host frame, bytes")
	f.IntVar(&cfg.MaxLen, "max-len", 1514, "--sim: longest host frame, bytes (frame lengths are uniform)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the loss (and --sim's frame lengths)")
	f.StringVar(&arms, "arms", strings.Join(experiment.FECVethArms, ","), "veth: arms, some of forward, fec, fec-given, replicate, lg")
	f.Float64Var(&veth.Rate, "rate", 200e6, "veth: UDP rate on the wire, bit/s")
	f.IntVar(&veth.Payload, "payload", 1000, "veth: UDP payload bytes")
	f.IntVar(&veth.Warmup, "warmup", 20000, "veth: datagrams sent before each measured flow (not counted)")
	f.IntVar(&veth.Runs, "runs", 1, "veth: runs of every point (the table has medians)")
	f.StringVar(&runArgs, "run-args", "", "veth: more arguments for every 'linkfabric run'")
	f.StringVar(&prefix, "prefix", "lffec", "veth: testbed prefix (namespaces PREFIXh1, PREFIXsw1, ...)")
	f.StringVar(&outJSON, "out", "out/fec-residual.json", "write the result as JSON here ('' to skip)")
	f.StringVar(&outCSV, "csv", "out/fec-residual.csv", "write one line per point as CSV here ('' to skip)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of the table")
	return cmd
}
