package fecpipe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/spf13/pflag"
)

func init() {
	dataplane.RegisterFlags("fec", dataplane.Flags{Declare: declareFlags, Check: checkFlags})
}

// declareFlags declares mode fec's flags (--fec-*) into f, filling c's
// Config.
func declareFlags(f *pflag.FlagSet, c *dataplane.Config) {
	fc := ConfigOf(c)
	f.IntVar(&fc.N, "fec-n", 0, "fec: fix n, the data frames per parity frame (0: no parity; with --fec-copies, replication only); default: chosen by the link policy")
	f.Float64Var(&fc.Target, "fec-target", 1e-3, "fec: residual loss the hosts may see; the link policy chooses n (or replication) for it from the measured loss")
	f.Float64Var(&fc.Loss, "fec-loss", 0, "fec: take the link's loss rate as given: the policy chooses once for it (default: measured)")
	f.IntVar(&fc.Copies, "fec-copies", 0, "fec: transmissions per frame: with --fec-n fixed (default 1); otherwise when the policy replicates (default 3, RAIL's)")
	f.DurationVar(&fc.Wait, "fec-wait", 0, "fec: longest a hole holds back the frames behind it before the receiver gives up on it (default 2ms; must exceed --fec-flush plus the link's delay)")
	f.DurationVar(&fc.Flush, "fec-flush", 0, "fec: longest a group stays open before its parity is sent (default 1ms; shorter sends more partial groups at low rates)")
	f.BoolVar(&fc.Immediate, "fec-immediate", false, "fec: deliver frames as they arrive or are rebuilt, out of order (default: in order, waiting up to --fec-wait)")
	f.DurationVar(&fc.Window, "fec-window", 0, "fec: the loss monitor's moving window (default 2s; the rate counts from 10^4 frames in it)")
}

// checkFlags checks the --fec-* flags against --mode: they belong to mode
// fec and to the fec layer under the cells (--cells-link-mode fec);
// --fec-n fixes n where --fec-target and --fec-loss have the policy choose.
func checkFlags(f *pflag.FlagSet, c *dataplane.Config) error {
	var given []string
	f.Visit(func(fl *pflag.Flag) {
		if strings.HasPrefix(fl.Name, "fec-") {
			given = append(given, "--"+fl.Name)
		}
	})
	if c.Mode != ModeFEC && (c.Mode != "cells" || !underCells(f)) {
		if len(given) > 0 {
			return fmt.Errorf("%s: only mode fec and --cells-link-mode fec under the cells have these; add --mode fec (or --mode cells --cells-link-mode fec) or leave them out", strings.Join(given, ", "))
		}
		return nil
	}
	fc := ConfigOf(c)
	fc.Fixed = f.Changed("fec-n")
	if fc.Fixed && f.Changed("fec-target") {
		return errors.New("--fec-n fixes n; --fec-target has the link policy choose it from the measured loss: give one of them")
	}
	return nil
}

// underCells says whether the flags put the fec layer under the cells
// (--cells-link-mode fec): read from the flag, so that fec needs not know
// the cells' configuration.
func underCells(f *pflag.FlagSet) bool {
	fl := f.Lookup("cells-link-mode")
	return fl != nil && fl.Value.String() == string(ModeFEC)
}
