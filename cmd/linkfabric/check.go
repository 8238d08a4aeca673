package main

import (
	"errors"
	"fmt"
	"os"

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
		zeroCopy                     string
		workers                      int
		asJSON                       bool
	)
	cmd := &cobra.Command{
		Use:   "check --host-port DEV --link-port DEV [--netns NS] [--mode M] [--json]",
		Short: "Check that this node can run a dataplane as configured (preflight)",
		Long: `check looks at what 'linkfabric run' with the same ports and settings needs,
without attaching anything: the kernel (AF_XDP sockets, XDP programs), and for each
port its driver, native XDP and AF_XDP zero-copy (the driver's XDP features), its
queues (against --workers, and LinkGuardian's one link queue), its MTU (a link port
carries a host frame plus the mode's link header and integrity trailer, as run checks
at start), LRO, the TX checksum offload of a veth host port's sending peer, whether a
link port's MAC checks the FCS (what --integrity auto picks) and promiscuous mode
(run turns it on for link ports and back off when it stops).

Each line is ✔ (fine), ! (runs, but slower or unknown until run) or ✗ (run would fail
or misbehave), with the command that fixes it. It exits 0 when the node can run as
configured, 1 otherwise; --json prints the same report as JSON.`,
		Example: `  linkfabric check --netns lfsw1 --host-port host0 --link-port link0 --mode lg
  linkfabric check --host-port enp1s0f0 --link-port enp1s0f1 --mode lg --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
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
				err = r.WriteJSON(os.Stdout)
			} else {
				err = r.WriteText(os.Stdout)
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
	f.BoolVar(&asJSON, "json", false, report.JSONUsage)
	return cmd
}
