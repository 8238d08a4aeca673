package main

import (
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/spf13/cobra"
)

// runCaps checks that run holds the capabilities it needs (not that it is
// root): cli.RunNeeds, with CAP_SYS_ADMIN when it enters a network
// namespace (--netns, or --node of a testbed).
func runCaps(cmd *cobra.Command) error {
	ns := false
	for _, name := range []string{"netns", "node"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Value.String() != "" {
			ns = true
		}
	}
	return cli.RequireCaps("run", cli.RunNeeds(ns))
}
