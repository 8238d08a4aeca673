package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// eachFlag calls fn for every flag of every command under root, hidden
// ones and former names included.
func eachFlag(root *cobra.Command, fn func(cmd *cobra.Command, f *pflag.Flag)) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { fn(c, f) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// Flags that are not what their names say to the rules below, and why.
var cliRuleExceptions = map[string]string{
	// The agents' statistics file ('-': stdout): they are started by the
	// tdma experiments, whose own --json prints the result.
	"linkfabric tdma fm --json":   "a file",
	"linkfabric tdma host --json": "a file",
	// Frame rates, not bit rates: their help says frames/s.
	"linkfabric stress --rate":         "frames/s",
	"linkfabric cells pack --cpu-rate": "frames/s",
	// PORT=RATE,...: each RATE through netns.ParseBitRate (parsePortShapes).
	"linkfabric run --port-rate": "a list of PORT=RATE",
}

// The rules a script can rely on, over the whole command tree:
//   - --json is one switch: a bool, off by default, that prints JSON on
//     stdout instead of the text, with the same help everywhere;
//   - every rate (a flag named rate, *-rate, or --link-speed) is a bit rate
//     in one format, netns.ParseBitRate's (500M, 10G, 2.5Gbit, 200e6),
//     checked when the flag is parsed;
//   - every loss (a flag named loss, losses, *-loss) is a probability
//     (1e-2, 0.01), never a percentage.
func TestCLIRules(t *testing.T) {
	eachFlag(newRoot(), func(cmd *cobra.Command, f *pflag.Flag) {
		if f.Hidden && f.Deprecated != "" {
			return // a former name: the rules hold for the flag it sets
		}
		id := cmd.CommandPath() + " --" + f.Name
		if why, ok := cliRuleExceptions[id]; ok {
			if why == "frames/s" && !strings.Contains(f.Usage, "frames/s") {
				t.Errorf("%s: a frame rate whose help does not say frames/s: %q", id, f.Usage)
			}
			return
		}
		switch {
		case f.Name == "json":
			if f.Value.Type() != "bool" || f.DefValue != "false" || !strings.HasSuffix(f.Usage, report.JSONUsage) {
				t.Errorf("%s: %s, default %s, help %q; want a bool, default false, help ending %q", id, f.Value.Type(), f.DefValue, f.Usage, report.JSONUsage)
			}
		case f.Name == "rate" || strings.HasSuffix(f.Name, "-rate") || f.Name == "link-speed":
			if f.Value.Type() != "bitrate" {
				t.Errorf("%s: a %s flag (default %q); want a bit rate flag (cli.BitRateVar: 500M, 10G, 200e6)", id, f.Value.Type(), f.DefValue)
				return
			}
			if err := f.Value.Set("2.5G"); err != nil {
				t.Errorf("%s: refuses 2.5G: %v", id, err)
			}
			if err := f.Value.Set("fast"); err == nil {
				t.Errorf("%s: takes \"fast\"", id)
			}
		case f.Name == "loss" || f.Name == "losses" || strings.HasSuffix(f.Name, "-loss"):
			if strings.Contains(f.DefValue, "%") || strings.Contains(f.Usage, "%") || strings.Contains(f.Usage, "percent") {
				t.Errorf("%s: a percentage (default %q, help %q); want a probability", id, f.DefValue, f.Usage)
			}
			for _, v := range strings.Split(strings.Trim(f.DefValue, "[]"), ",") {
				if p, err := parseProbability(v); err != nil || p < 0 || p > 1 {
					t.Errorf("%s: default %q is not a probability", id, f.DefValue)
				}
			}
		}
	})
}

func parseProbability(s string) (float64, error) {
	var p float64
	_, err := fmt.Sscan(strings.TrimSpace(s), &p)
	return p, err
}

// run's --link-speed takes every rate the other commands' rates take.
func TestLinkSpeedParsesAsEveryRate(t *testing.T) {
	for _, in := range []string{"10G", "25Gbit", "2.5G", " 100G", "1T", "400e9"} {
		want, err := netns.ParseBitRate(in)
		if err != nil {
			t.Fatalf("netns.ParseBitRate(%q): %v", in, err)
		}
		got, err := parseBitRate(in)
		if err != nil || got != uint64(want) {
			t.Errorf("--link-speed %q: %d, %v; netns.ParseBitRate: %d", in, got, err, uint64(want))
		}
	}
}
