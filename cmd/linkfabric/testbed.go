package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
)

func testbedCmd() *cobra.Command {
	cmd := cli.Group("testbed",
		"Inspect and remove network-namespace testbeds ('linkfabric up' builds them)",
		`A testbed is a set of network namespaces joined by veth pairs. The preset "pair" is

  PREFIXh1:eth0 ⇄ PREFIXsw1:host0   PREFIXsw1:link0 ⇄ PREFIXsw2:link0   PREFIXsw2:host0 ⇄ PREFIXh2:eth0

with 10.0.0.1/24 on h1 and 10.0.0.2/24 on h2 (one L2 segment through both switches).
The link ports get an MTU larger than the host MTU by the link header's size.
'linkfabric up' builds one: with a dataplane on every switch, or with Linux
bridges (--mode kernel) or bare ports for 'linkfabric run' (--mode none).
Forwarding kernel bridges host0 and link0 in each switch (the Linux baseline);
none leaves them for the dataplane.`,
		`  linkfabric up --mode none
  linkfabric testbed status --json
  linkfabric testbed forwarding kernel
  linkfabric testbed down`)
	var (
		opts                    netns.Options
		preset, topoFile, netem string
		asJSON                  bool
	)
	up := &cobra.Command{
		Use:        "up",
		Short:      "Create a testbed (removes what it made if anything fails)",
		Hidden:     true,
		Deprecated: "use 'linkfabric up --mode kernel' (Linux bridges) or 'linkfabric up --mode none' (bare ports), which take the same flags",
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := rootTopology("testbed up", preset, topoFile, netem)
			if err != nil {
				return err
			}
			if opts.Mode != "" {
				if err := knownMode(dataplane.Mode(opts.Mode)); err != nil {
					return fmt.Errorf("testbed up --mode: %w", err)
				}
			}
			return bedUp(os.Stdout, topo, opts, asJSON)
		},
	}
	up.Flags().StringVar(&preset, "preset", "pair", fmt.Sprintf("topology preset: %v", netns.Presets()))
	up.Flags().StringVar(&topoFile, "topology", "", "YAML topology file (instead of --preset)")
	up.Flags().StringVar(&opts.Prefix, "prefix", netns.DefaultPrefix, "prefix of every namespace name")
	up.Flags().StringVar(&opts.Forwarding, "forwarding", "kernel", "kernel (Linux bridge in each switch) or none (ports left for the dataplane)")
	up.Flags().StringVar(&opts.Mode, "mode", "", "the dataplane mode you will run on the switches: a preset may set offloads by it (bundle turns GRO on the hosts' ends for forward's kernel path, off for cells)")
	testbedFlags(up.Flags(), &opts.MTU, &opts.LinkHeaderLen, &opts.LinkQueues, &netem, &asJSON)

	var downPrefix string
	down := &cobra.Command{
		Use:   "down",
		Short: "Remove a testbed (safe to run twice)",
		Example: `  linkfabric testbed down
  linkfabric testbed down --prefix lab`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.RequireRoot("testbed down"); err != nil {
				return err
			}
			return netns.Down(downPrefix)
		},
	}
	down.Flags().StringVar(&downPrefix, "prefix", netns.DefaultPrefix, "prefix of the testbed to remove")

	var stPrefix string
	var stJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Show what exists of a testbed",
		Example: `  linkfabric testbed status
  linkfabric testbed status --prefix lab --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := netns.Status(stPrefix)
			if err != nil {
				return err
			}
			if stJSON {
				return report.PrintJSON(st)
			}
			fmt.Print(st.String())
			return nil
		},
	}
	status.Flags().StringVar(&stPrefix, "prefix", netns.DefaultPrefix, "prefix of the testbed")
	status.Flags().BoolVar(&stJSON, "json", false, report.JSONUsage)

	var fwPrefix string
	fw := &cobra.Command{
		Use:   "forwarding kernel|none",
		Short: "Switch an existing testbed between Linux bridges and bare ports",
		Example: `  linkfabric testbed forwarding none     # before linkfabric run
  linkfabric testbed forwarding kernel   # back to the Linux baseline`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.RequireRoot("testbed forwarding"); err != nil {
				return err
			}
			return netns.SetForwarding(fwPrefix, args[0])
		},
	}
	fw.Flags().StringVar(&fwPrefix, "prefix", netns.DefaultPrefix, "prefix of the testbed")

	cmd.AddCommand(up, down, status, fw)
	return cmd
}

func loadTopology(preset, file string) (*netns.Topology, error) {
	var topo *netns.Topology
	var err error
	if file != "" {
		topo, err = netns.LoadTopology(file)
	} else {
		topo, err = netns.Preset(preset)
	}
	if err != nil {
		return nil, err
	}
	for _, m := range topo.GROModes {
		if err := knownMode(dataplane.Mode(m)); err != nil {
			return nil, fmt.Errorf("topology %s: gro_modes: %w", topo.Name, err)
		}
	}
	return topo, nil
}

// knownMode returns the dataplane's error naming the modes if m is not one.
func knownMode(m dataplane.Mode) error {
	if slices.Contains(dataplane.Modes(), m) {
		return nil
	}
	return dataplane.CheckPorts(m, "", nil)
}

// rootTopology is what command what builds: it needs root, then the topology
// of --preset or --topology, with --netem (if given) on its links.
func rootTopology(what, preset, file, netem string) (*netns.Topology, error) {
	if err := cli.RequireRoot(what); err != nil {
		return nil, err
	}
	topo, err := loadTopology(preset, file)
	if err != nil {
		return nil, err
	}
	if netem != "" {
		topo.SetNetem(netem)
	}
	return topo, nil
}
