package fecexp

import (
	"fmt"
	"os"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

// Command is the fec command and its experiments.
func Command() *cobra.Command {
	return cli.Group("fec",
		"RAIL's XOR parity and replication: residual loss and overhead",
		`fec measures package fec, RAIL's coding module (NSDI'17 §5.3): XOR parity after
every n data frames, n from a residual-loss target, or every frame sent k times.`,
		`  linkfabric fec residual --sim`,
		fecResidualCmd(), fecFCTCmd(), fecTableCmd())
}

func fecTableCmd() *cobra.Command {
	var (
		cfg     FECTableConfig
		fctSize string
		prefix  string
		from    string
		out     report.OutFlags
	)
	cmd := &cobra.Command{
		Use:   "table",
		Short: "The measured table behind the link policy: per loss rate, the protection with the lowest p99 FCT and the lowest overhead at the target",
		Long: `table runs, on the pair testbed with the loss at sw2's link0 (Bernoulli, and
Gilbert with mean bursts of --burst), every protection at every --loss rate on
fresh dataplanes: none (forward), XOR parity with RAIL's n for the rate and
--target (--mode fec --fec-n n; skipped where no n reaches the target),
replication ×--copies and LinkGuardian (--mode lg). At each point it sends
--frames UDP datagrams (residual loss, wire overhead as in 'fec residual') and then
--fct-flows TCP flows of --fct-size (p99 FCT, the builtin tool). The table shows,
per rate and model, the medians over --runs, which protection meeting the target
has the lowest p99 FCT and which the lowest overhead, and what the link policy
(fec.DefaultLinkTable, which 'run --mode fec' uses) chooses there, and whether
it is one of the two (for a coding it chooses, among the codings: what mode fec
can run). JSON goes to --out; --from rebuilds the table from such a JSON without
measuring (no root).`,
		Example: `  linkfabric fec table
  linkfabric fec table --runs 1 --loss 1e-2,5e-2 --frames 10000 --fct-flows 100`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" {
				res, err := ReadFECTable(from)
				if err != nil {
					return err
				}
				return report.Print(res, res.Text(), "", out.AsJSON)
			}
			if err := cli.RequireRoot("fec table"); err != nil {
				return err
			}
			var err error
			if cfg.FCTSize, err = cli.ParseFlowSize("--fct-size", fctSize); err != nil {
				return err
			}
			return out.Report(bed.Exp(cmd.Context(), bed.CmdEnv(prefix), &cfg, FECTable))
		},
	}
	f := cmd.Flags()
	f.Float64SliceVar(&cfg.Loss, "loss", DefaultFECLoss, "loss rates, comma-separated")
	f.Float64Var(&cfg.Target, "target", 1e-3, "residual loss target")
	f.Float64Var(&cfg.MeanBurst, "burst", 3, "mean burst of the bursty model (frames)")
	f.IntVar(&cfg.Frames, "frames", 30000, "UDP datagrams per point")
	f.IntVar(&cfg.Warmup, "warmup", 2000, "UDP datagrams sent first at every point, not counted")
	f.IntVar(&cfg.Copies, "copies", 3, "replication's transmissions per frame")
	f.IntVar(&cfg.FCTFlows, "fct-flows", 300, "TCP flows per point")
	f.StringVar(&fctSize, "fct-size", "24387", "TCP flow size")
	f.IntVar(&cfg.Runs, "runs", 3, "runs (the table shows medians)")
	cli.BitRateVar(f, &cfg.Rate, "rate", 200e6, "UDP rate on the wire, bit/s")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.StringVar(&prefix, "prefix", "lffec", "testbed prefix")
	f.StringVar(&from, "from", "", "rebuild the table from a saved result (its JSON) instead of measuring")
	out.Add(f, "out/fec-table.json")
	return cmd
}

func fecFCTCmd() *cobra.Command {
	var (
		cfg                                      FECFCTConfig
		arms, sizes, flows, gray, short, runArgs string
		prefix, outDir                           string
		asJSON                                   bool
	)
	cmd := &cobra.Command{
		Use:   "fct",
		Short: "RAIL's Figure 17 on the bundle: FCT per size bin with gray links, normalised to no loss, for no protection, loss classes (± XOR), lg and cells over lg",
		Long: `fct builds the bundle testbed (h1 — sw1 ═4 links═ sw2 — h2) with link0 clean and
the --gray links losing --loss (sw1 → sw2, the XDP impairment stage of sw2), and
for each arm and run starts fresh dataplanes twice, once with the gray links
clean and once lossy, and runs TCP flows of each --size from h1 to h2 (the builtin
FCT tool, one connection per flow, back to back; the paper's TCP settings).
Flows up to --short carry DSCP EF (46) in both directions, longer ones DSCP 0.

  none         bare cells sprayed over every link: no protection
  classes      loss classes (--cells-loss-classes default --cells-class-map 5=1) over
               --cells-link-mode monitor: flows up to --short stay on class 1 (link0),
               longer ones use every link (class 3), unprotected
  classes-xor  the same over --cells-link-mode fec --fec-target: XOR parity on every link
  lg           LinkGuardian alone (--mode lg) on the first gray link, no cells
  cells-lg     cells over --cells-link-mode lg on every link

It reports, per arm and size bin, the median over runs of each run's lossy mean
and p99 FCT over its clean run (same arm, same run: what the loss costs under that
protection) and the clean mean FCT, and checks that classes-xor and lg stay within
1.1× in every bin (exit status 1 if not). --out gets fec-fct.json, flows.csv and
fec-fct-mean.png / fec-fct-p99.png (bars per size bin, like RAIL's Figure 17).`,
		Example: `  linkfabric fec fct
  linkfabric fec fct --runs 1 --arms none,classes,lg --size 10KB,1MB --flows 100,20`,
		PreRunE: cli.NeedsRoot("fec fct"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Arms = cli.SplitList(arms)
			var err error
			if cfg.Sizes, err = fct.ParseSizes(sizes); err != nil {
				return err
			}
			if cfg.Flows, err = cli.ParseInts(flows); err != nil {
				return fmt.Errorf("--flows: %w", err)
			}
			if cfg.Gray, err = cli.ParseInts(gray); err != nil {
				return fmt.Errorf("--gray: %w", err)
			}
			if short != "" {
				if cfg.Short, err = cli.ParseFlowSize("--short", short); err != nil {
					return err
				}
			}
			cfg.RunArgs = strings.Fields(runArgs)
			res, err := bed.Exp(cmd.Context(), bed.CmdEnv(prefix), &cfg, FECFCT)
			if err != nil {
				return err
			}
			if err := report.PrintFiles(res, outDir, asJSON); err != nil {
				return err
			}
			for _, arm := range []string{"classes_xor", "lg"} {
				if ok, found := res.Summary["check_"+arm].(bool); found && !ok {
					return report.Missed("fec fct: check missed for %s (see the table)", arm)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&arms, "arms", strings.Join(FECFCTArms, ","), "arms, comma-separated: "+strings.Join(FECFCTArms, ", "))
	f.IntVar(&cfg.Runs, "runs", 3, "runs (the tables show medians)")
	f.StringVar(&sizes, "size", "10KB,100KB,1MB,10MB", "flow sizes (the bins), comma-separated")
	f.StringVar(&flows, "flows", "", "flows per size: one count, or one per size (default 200,100,30,8 for the default sizes)")
	f.IntVar(&cfg.Warmup, "warmup", 2, "discarded warm-up flows per size")
	f.Float64Var(&cfg.Loss, "loss", 1e-2, "loss rate of each gray link, sw1 → sw2 (above 1e-3 and at most 1e-1: loss class 3)")
	f.Float64Var(&cfg.Burst, "burst", 1, "mean loss burst, frames (1: Bernoulli)")
	f.StringVar(&gray, "gray", "1,2,3", "the gray links (1-3; link0 stays clean)")
	f.StringVar(&short, "short", "100KB", "flows up to this size carry DSCP EF (class 1 in the classes arms)")
	f.Float64Var(&cfg.FECTarget, "fec-target", 1e-3, "classes-xor: the residual loss target that sets n")
	f.StringVar(&cfg.CC, "cc", "auto", "congestion control (auto: dctcp if the kernel has it, else cubic)")
	f.DurationVar(&cfg.Timeout, "flow-timeout", 0, "a flow not complete by then counts as failed (default 30s)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "impairment seed")
	f.StringVar(&runArgs, "run-args", "", "extra `linkfabric run` arguments for both switches")
	f.StringVar(&prefix, "prefix", "lffct17", "testbed prefix")
	f.StringVar(&outDir, "out", "out/fec-fct", "write fec-fct.json, flows.csv and the PNGs here ('' to skip)")
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}

func fecResidualCmd() *cobra.Command {
	var (
		cfg             FECResidualConfig
		veth            FECVethConfig
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
				return report.Print(res, text, outJSON, asJSON)
			}
			if sim {
				if err := cfg.Normalize(); err != nil {
					return fmt.Errorf("fec residual: %w", err)
				}
				cfg.Progress = os.Stderr
				res, err := FECResidualSim(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				return write(res, res.Text(), res.WriteCSV)
			}
			if err := cli.RequireRoot("fec residual (without --sim)"); err != nil {
				return err
			}
			veth.Loss, veth.Target, veth.Frames, veth.MeanBurst, veth.Seed = cfg.Loss, cfg.Target, cfg.Frames, cfg.MeanBurst, cfg.Seed
			if cfg.Copies > 0 {
				veth.Copies = cfg.Copies
			}
			veth.Arms, veth.RunArgs = cli.SplitList(arms), strings.Fields(runArgs)
			if err := veth.Normalize(); err != nil {
				return fmt.Errorf("fec residual: %w", err)
			}
			env := bed.CmdEnv(prefix)
			res, err := FECResidualVeth(cmd.Context(), env, veth)
			if err != nil {
				return err
			}
			if err := write(res, res.Text(), res.WriteCSV); err != nil {
				return err
			}
			if res.Summary["pass"] != true {
				return report.Missed("fec residual: out of target")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&sim, "sim", false, "run on the simulated link (package fec/fecsim) instead of veth")
	f.Float64SliceVar(&cfg.Loss, "loss", DefaultFECLoss, "link loss rates")
	f.Float64Var(&cfg.Target, "target", 1e-3, "residual loss target that sets n (RAIL: 1e-3 for TCP)")
	f.IntVar(&cfg.Frames, "frames", 0, "host frames per point (default 10^6 with --sim, 10^5 on veth)")
	f.IntVar(&cfg.Copies, "copies", 3, "replication arm: transmissions per frame (--sim: 0 for no replication arm)")
	f.Float64Var(&cfg.MeanBurst, "burst", 3, "bursty arm: mean burst of the Gilbert loss, frames (0: Bernoulli only)")
	f.IntVar(&cfg.MinLen, "min-len", 60, "--sim: shortest host frame, bytes")
	f.IntVar(&cfg.MaxLen, "max-len", 1514, "--sim: longest host frame, bytes (frame lengths are uniform)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the loss (and --sim's frame lengths)")
	f.StringVar(&arms, "arms", strings.Join(FECVethArms, ","), "veth: arms, some of forward, fec, fec-given, replicate, lg")
	cli.BitRateVar(f, &veth.Rate, "rate", 200e6, "veth: UDP rate on the wire, bit/s")
	f.IntVar(&veth.Payload, "payload", 1000, "veth: UDP payload bytes")
	f.IntVar(&veth.Warmup, "warmup", 20000, "veth: datagrams sent before each measured flow (not counted)")
	f.IntVar(&veth.Runs, "runs", 1, "veth: runs of every point (the table has medians)")
	f.StringVar(&runArgs, "run-args", "", "veth: more arguments for every 'linkfabric run'")
	f.StringVar(&prefix, "prefix", "lffec", "veth: testbed prefix (namespaces PREFIXh1, PREFIXsw1, ...)")
	f.StringVar(&outJSON, "out", "out/fec-residual.json", "write the result as JSON here ('' to skip)")
	f.StringVar(&outCSV, "csv", "out/fec-residual.csv", "write one line per point as CSV here ('' to skip)")
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}
