package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCommonFlags are the flags 'run --help' shows, in this order; 'run
// --help-all' shows every flag (docs/run.md explains them).
var runCommonFlags = []string{
	"config", "node", "preset", "prefix", "netns", "host-port", "link-port",
	"mode", "fastpath", "integrity", "port-rate", "metrics", "stats-every", "help-all",
}

// helpWidth is the column the flag lists wrap at.
const helpWidth = 100

// setRunHelp gives run a help of one screen (its common flags) and adds
// --help-all, which the command's RunE answers with runHelp(all).
func setRunHelp(cmd *cobra.Command, all *bool) {
	cmd.Flags().BoolVar(all, "help-all", false, "help with every flag (LinkGuardian, cells, FEC, PFC, sessions, AF_XDP, sizes)")
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { runHelp(c, false) })
}

// runHelp prints run's help: the common flags, or every flag with all.
func runHelp(cmd *cobra.Command, all bool) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%s\n\nUsage:\n  %s\n", cmd.Long, cmd.UseLine())
	local := cmd.LocalFlags()
	if all {
		for _, g := range runFlagGroups(local) {
			fmt.Fprintf(out, "\n%s:\n%s", g.title, g.flags.FlagUsagesWrapped(helpWidth))
		}
	} else {
		common := pflag.NewFlagSet("common", pflag.ContinueOnError)
		common.SortFlags = false
		for _, name := range runCommonFlags {
			if f := local.Lookup(name); f != nil {
				common.AddFlag(f)
			}
		}
		more := 0
		local.VisitAll(func(f *pflag.Flag) {
			if common.Lookup(f.Name) == nil && !f.Hidden {
				more++
			}
		})
		fmt.Fprintf(out, "\nCommon flags:\n%s", common.FlagUsagesWrapped(helpWidth))
		fmt.Fprintf(out, "\n%d more flags: linkfabric run --help-all\n", more)
	}
	fmt.Fprintf(out, "\nExamples:\n%s\n", cmd.Example)
	if g := cmd.InheritedFlags(); g.HasAvailableFlags() {
		fmt.Fprintf(out, "\nGlobal Flags:\n%s", g.FlagUsagesWrapped(helpWidth))
	}
}

// runFlagGroup is a title and its flags, for --help-all.
type runFlagGroup struct {
	title string
	flags *pflag.FlagSet
}

// runGroupTitles are --help-all's groups, in order: a flag goes in the
// first whose prefix it has (the last, "", takes the rest).
var runGroupTitles = []struct{ prefix, title string }{
	{"lg-", "LinkGuardian (--mode lg, lgnb, monitor; cells --cells-link-mode lg)"},
	{"session-", "The link session (lg, lgnb, monitor)"},
	{"cells-", "Cells (--mode cells)"},
	{"fec-", "FEC (--mode fec; cells --cells-link-mode fec)"},
	{"pfc", "Per-class PFC toward the host"},
	{"", "The dataplane: ports, the link, AF_XDP, sizes, output"},
}

// runFlagGroups sorts run's visible flags into runGroupTitles' groups.
func runFlagGroups(fs *pflag.FlagSet) []runFlagGroup {
	groups := make([]runFlagGroup, len(runGroupTitles))
	for i, g := range runGroupTitles {
		groups[i] = runFlagGroup{title: g.title, flags: pflag.NewFlagSet(g.title, pflag.ContinueOnError)}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		for i, g := range runGroupTitles {
			if strings.HasPrefix(f.Name, g.prefix) {
				groups[i].flags.AddFlag(f)
				return
			}
		}
	})
	return groups
}
