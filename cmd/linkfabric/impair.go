package main

import (
	"errors"
	"fmt"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

func impairCmd() *cobra.Command {
	var (
		ns, dev, xdpMode          string
		loss, burst, flip         float64
		seed                      uint64
		off, stats, asJSON, reset bool
	)
	cmd := &cobra.Command{
		Use:   "impair --netns NS --dev DEV (--loss P [--burst MEAN] | --off | --stats)",
		Short: "Inject loss (or bit flips) on frames received by an interface",
		Long: `impair configures the eBPF impairment stage on the receiving end of a link.
The kernel here has no sch_netem, so loss is applied by XDP on receive.

If linkfabric's dataplane runs on DEV, impair reconfigures the stage inside its
XDP program while traffic flows. Otherwise it attaches a standalone impairment
program (impair, then pass to the kernel) that stays attached after this command
exits, so the unprotected baseline (a Linux bridge) can be measured on the same
link; --off removes it again.

Loss models: Bernoulli (--loss P), or Gilbert-Elliott bursty loss with mean burst
length MEAN frames and the same average rate (--loss P --burst MEAN).`,
		Example: `  linkfabric impair --netns lfsw2 --dev link0 --loss 1e-3
  linkfabric impair --netns lfsw2 --dev link0 --loss 1e-2 --burst 3 --seed 7
  linkfabric impair --netns lfsw2 --dev link0 --stats --json
  linkfabric impair --netns lfsw2 --dev link0 --off`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.RequireRoot("impair"); err != nil {
				return err
			}
			if dev == "" {
				return errors.New("--dev is required: the interface whose received frames are impaired")
			}
			set := cmd.Flags().Changed("loss") || cmd.Flags().Changed("flip")
			if n := btoi(set) + btoi(off) + btoi(stats); n != 1 {
				return errors.New("say exactly one of: --loss P (or --flip P), --off, --stats")
			}
			if err := cli.EnterNetns(ns); err != nil {
				return err
			}
			switch {
			case stats:
				return impairStats(dev, asJSON, reset)
			case off:
				return impairOff(dev)
			}
			cfg := bpf.Loss(loss, burst, seed)
			cfg.FlipProb = flip
			if err := cfg.Validate(); err != nil {
				return err
			}
			mode, err := parseXDPMode(xdpMode)
			if err != nil {
				return err
			}
			return impairSet(dev, cfg, mode)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "netns", "", "network namespace of the interface (default: current)")
	f.StringVar(&dev, "dev", "", "interface whose received frames are impaired")
	f.Float64Var(&loss, "loss", 0, "average frame loss probability, e.g. 1e-3")
	f.Float64Var(&burst, "burst", 0, "mean loss burst length in frames (Gilbert-Elliott); 0 = Bernoulli")
	f.Float64Var(&flip, "flip", 0, "probability of flipping one bit in a frame's payload")
	f.Uint64Var(&seed, "seed", 1, "PRNG seed")
	f.BoolVar(&off, "off", false, "stop impairing (detaches the standalone program if that is what runs)")
	f.BoolVar(&stats, "stats", false, "print the impairment counters")
	f.BoolVar(&reset, "reset", false, "with --stats: zero the counters after reading")
	f.BoolVar(&asJSON, "json", false, "with --stats: "+report.JSONUsage)
	f.StringVar(&xdpMode, "xdp-mode", "auto", "attach mode of a standalone program: auto, native, generic")
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func impairSet(dev string, cfg bpf.ImpairConfig, mode bpf.AttachMode) error {
	im, err := bpf.OpenImpairer(dev)
	switch {
	case err == nil:
		defer im.Close()
		if err := im.SetImpair(cfg); err != nil {
			return err
		}
		fmt.Printf("%s: %v on the %v (program %d)\n", dev, cfg, im.Kind(), im.ProgramID())
		return nil
	case errors.Is(err, bpf.ErrNoProgram):
		im, err := bpf.AttachImpairerMode(dev, cfg, mode)
		if err != nil {
			return err
		}
		defer im.Close()
		fmt.Printf("%s: %v, standalone program %d attached (%v mode); remove with --off\n", dev, cfg, im.ProgramID(), im.Mode())
		return nil
	default:
		return err
	}
}

func impairOff(dev string) error {
	im, err := bpf.OpenImpairer(dev)
	if errors.Is(err, bpf.ErrNoProgram) {
		fmt.Printf("%s: no impairment program attached; nothing to do\n", dev)
		return nil
	}
	if err != nil {
		return err
	}
	kind := im.Kind()
	if kind == bpf.KindStandalone {
		im.Close()
		if err := bpf.DetachImpairer(dev); err != nil {
			return err
		}
		fmt.Printf("%s: standalone impairment program detached\n", dev)
		return nil
	}
	defer im.Close()
	if err := im.ClearImpair(); err != nil {
		return err
	}
	fmt.Printf("%s: impairment off in the %v\n", dev, kind)
	return nil
}

func impairStats(dev string, asJSON, reset bool) error {
	im, err := bpf.OpenImpairer(dev)
	if err != nil {
		return err
	}
	defer im.Close()
	st, err := im.ImpairStats()
	if err != nil {
		return err
	}
	cfg, enabled, err := im.ImpairConfig()
	if err != nil {
		return err
	}
	if reset {
		if err := im.ResetImpairStats(); err != nil {
			return err
		}
	}
	if asJSON {
		doc := map[string]any{
			"dev": dev, "program": im.Kind().String(), "program_id": im.ProgramID(), "enabled": enabled,
			"seen": st.Seen, "dropped": st.Dropped, "flipped": st.Flipped, "bursts": st.Bursts,
			"loss_rate": nanToZero(st.LossRate()), "mean_burst": nanToZero(st.MeanBurst()),
		}
		if enabled {
			doc["config"] = cfg.String()
			doc["expected_loss"] = cfg.ExpectedLoss()
		}
		return report.PrintJSON(doc)
	}
	state := "off"
	if enabled {
		state = cfg.String()
	}
	fmt.Printf("%s (%v, program %d): %s\n  %v\n", dev, im.Kind(), im.ProgramID(), state, st)
	return nil
}

func nanToZero(f float64) float64 {
	if f != f {
		return 0
	}
	return f
}
