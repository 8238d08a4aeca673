package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/internal/preflight"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/spf13/cobra"
)

// errCheckFailed is check's error when the node cannot run as configured
// (the report has said why).
var errCheckFailed = errors.New("the node cannot run as configured")

func checkCmd() *cobra.Command {
	var (
		hosts, links                 []string
		ns, mode, integrity, xdpMode string
		zeroCopy, file               string
		workers                      int
		asJSON                       bool
	)
	cmd := &cobra.Command{
		Use:   "check {--config NODE.yaml | --host-port DEV --link-port DEV [--netns NS] [--mode M]} [--json]",
		Short: "Check that this node can run a dataplane as configured (preflight)",
		Long: `check looks at what 'linkfabric run' with the same ports and settings needs,
without attaching anything: the kernel (AF_XDP sockets, XDP programs), and for each
port its driver, native XDP and AF_XDP zero-copy (the driver's XDP features), its
queues (against --workers, and LinkGuardian's one link queue), its MTU (a link port
carries a host frame plus the mode's link header and integrity trailer, as run checks
at start), LRO, the TX checksum offload of a veth host port's sending peer, whether a
link port's MAC checks the FCS (what --integrity auto picks) and promiscuous mode
(run turns it on for link ports and back off when it stops).

With --config, the node file run would read gives the ports, --netns, --mode,
--integrity, --xdp-mode, --zerocopy and --workers (and --node with its testbed), read
as run reads them; check's own flags win over the file, as run's do.

Each line is ✔ (fine), ! (runs, but slower or unknown until run) or ✗ (run would fail
or misbehave), with the command that fixes it. It exits 0 when the node can run as
configured, 1 otherwise; --json prints the same report as JSON.`,
		Example: `  linkfabric check --config /etc/linkfabric/node-a.yaml
  linkfabric check --netns lfsw1 --host-port host0 --link-port link0 --mode lg
  linkfabric check --host-port enp1s0f0 --link-port enp1s0f1 --mode lg --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" {
				if err := checkNodeFile(cmd, file, &hosts, &links, &ns); err != nil {
					return err
				}
			}
			if len(links) == 0 {
				return fmt.Errorf("--link-port: give the link port(s) to check")
			}
			if err := cli.EnterNetns(ns); err != nil {
				return err
			}
			cfg := dataplane.Config{Mode: dataplane.Mode(mode), HostPorts: hosts, LinkPorts: links, Netns: ns, Workers: workers}
			if len(hosts) == 1 {
				cfg.HostPort = hosts[0]
			}
			cfg.LinkPort = links[0]
			var err error
			if cfg.XDPMode, err = parseXDPMode(xdpMode); err != nil {
				return err
			}
			if cfg.ZeroCopy, err = dataplane.ParseZeroCopy(zeroCopy); err != nil {
				return err
			}
			if cfg.Link.Integrity, err = linkcrc.ParseMode(integrity); err != nil {
				return err
			}
			r := preflight.Run(cfg)
			if asJSON {
				err = r.WriteJSON(cmd.OutOrStdout())
			} else {
				err = r.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if !r.OK {
				return errCheckFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&hosts, "host-port", nil, "host port(s) to check (as run's --host-port)")
	f.StringSliceVar(&links, "link-port", nil, "link port(s) to check (as run's --link-port)")
	f.StringVar(&ns, "netns", "", "network namespace of the ports")
	f.StringVar(&mode, "mode", "", "mode run will run ("+dataplane.ModeList()+"; default forward)")
	f.StringVar(&integrity, "integrity", "auto", "--integrity run will use: auto, crc32c, csum or off")
	f.StringVar(&xdpMode, "xdp-mode", "auto", "--xdp-mode run will use: auto, native or generic")
	f.StringVar(&zeroCopy, "zerocopy", "auto", "--zerocopy run will use: auto, on or off")
	f.IntVar(&workers, "workers", 1, "--workers run will use")
	f.StringVar(&file, "config", "", "node file (as run's --config): its settings, unless given here")
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}

// checkSettings are the settings check takes from a node file, each a
// flag of both run and check.
var checkSettings = []string{"host-port", "link-port", "netns", "mode", "integrity", "xdp-mode", "zerocopy", "workers"}

// checkNodeFile reads the node file through run's own flags (so a key run
// would refuse, check refuses the same way) and sets each of check's
// settings the file gives and check's command line does not; a node file
// naming a testbed node (node:, preset:, topology:, prefix:) gives its
// ports and namespace as run takes them.
func checkNodeFile(cmd *cobra.Command, file string, hosts, links *[]string, ns *string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return usageError{fmt.Errorf("--config: %w", err)}
	}
	rf := runCmd().Flags()
	if _, err := applyNodeConfig(rf, file, b); err != nil {
		return usageError{err}
	}
	cf := cmd.Flags()
	for _, name := range checkSettings {
		from, to := rf.Lookup(name), cf.Lookup(name)
		if !from.Changed || to.Changed {
			continue
		}
		if err := cf.Set(name, from.Value.String()); err != nil {
			return usageError{fmt.Errorf("node file %s: %s: %w", file, name, err)}
		}
	}
	node := rf.Lookup("node").Value.String()
	if node == "" {
		return nil
	}
	value := func(name string) string { return rf.Lookup(name).Value.String() }
	cfg := dataplane.Config{HostPort: strings.Join(*hosts, ","), LinkPort: strings.Join(*links, ",")}
	if err := nodePorts(&cfg, ns, node, value("preset"), value("topology"), value("prefix")); err != nil {
		return err
	}
	*hosts, *links = cfg.HostPorts, cfg.LinkPorts
	return nil
}
