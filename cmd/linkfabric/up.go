package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func upCmd() *cobra.Command {
	var (
		preset, topoFile, mode, prefix, runArgs, netem string
		mtu, linkQueues, linkHeader                    int
		asJSON                                         bool
	)
	cmd := &cobra.Command{
		Use:   "up [--preset pair|bundle|fabric3|star4 | --topology FILE] [--mode MODE|kernel|none] [--prefix P] [--run-args \"...\"]",
		Short: "Bring a testbed up, with a dataplane on every switch (Ctrl-C takes it all down) or left bare",
		Long: `up builds a testbed (namespaces PREFIX+name joined by veth pairs), starts
'linkfabric run --node NAME --mode MODE' in every switch namespace (edge and fabric
nodes; each port at the rate and buffer the topology gives it), prints the hosts, how
to reach them and where each dataplane's statistics are, and keeps everything up until
Ctrl-C or SIGTERM. Then it stops the dataplanes and removes the testbed.

A mode runs only on switches with the ports it takes: forward, lg, lgnb and monitor
take one host port and one link port (preset pair). Presets bundle and fabric3 have
switches with several link ports (fabric3's fabric nodes have no host port, its e3
has two): they are for the cells mode, which runs on every switch (an edge where it
has host ports, a fabric node where it has none). In mode cells up gives each
switch its own --cells-node-id (1, 2, ... in topology order). up says which modes and
presets fit before it builds anything.

--run-args is added to every 'linkfabric run' (split at spaces, no quoting), e.g.
"--busy-poll" or "--lg-link-loss 1e-2". If up is killed with SIGKILL its dataplanes stop
too, but the testbed stays: remove it with 'linkfabric testbed down --prefix P'.

--mode kernel (Linux bridges in the switches, the baseline) and --mode none (ports
left bare for 'linkfabric run' by hand) build the testbed, print it and return: it
stays until 'linkfabric testbed down --prefix P'. 'linkfabric testbed status' shows
what exists; 'linkfabric testbed forwarding kernel|none' switches one that is up.`,
		Example: `  linkfabric up                                   # pair, forward, prefix lf
  linkfabric up --mode lg --run-args "--lg-copies 2"
  linkfabric up --mode lg --mtu 9000              # jumbo frames (UMEM frames of 16 KiB, multi-buffer)
  linkfabric up --preset bundle --mode cells --run-args "--cells-spray p2c"
  linkfabric up --preset fabric3 --mode cells
  linkfabric up --preset pair --mode lgnb --prefix lab
  linkfabric up --mode none                       # bare ports for linkfabric run; stays up
  linkfabric up --mode kernel --netem "loss 1% corrupt 0.1%"   # Linux bridges, tc netem on the link`,
		RunE: func(cmd *cobra.Command, args []string) error {
			topo, err := rootTopology("up", preset, topoFile, netem)
			if err != nil {
				return err
			}
			opts := netns.Options{Prefix: prefix, Forwarding: netns.ForwardingNone, MTU: mtu, LinkHeaderLen: linkHeader, LinkQueues: linkQueues}
			if mode == netns.ForwardingKernel || mode == netns.ForwardingNone {
				opts.Forwarding = mode
				return bedUp(os.Stdout, topo, opts, asJSON)
			}
			switches, err := checkTopologyMode(topo, dataplane.Mode(mode))
			if err != nil {
				return err
			}
			opts.Mode = bed.OffloadMode(mode, strings.Fields(runArgs))
			where := []string{"--preset", preset}
			if topoFile != "" {
				where = []string{"--topology", topoFile}
			}
			return runUp(cmd.Context(), os.Stdout, topo, switches, upRun{
				mode: mode, opts: opts, json: asJSON, where: where, extra: strings.Fields(runArgs),
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&preset, "preset", "pair", fmt.Sprintf("topology preset: %v", netns.Presets()))
	f.StringVar(&topoFile, "topology", "", "YAML topology file (instead of --preset)")
	f.StringVar(&mode, "mode", "forward", "the dataplane's mode on every switch (see linkfabric run --help); kernel: Linux bridges, none: bare ports (both: no dataplane, the testbed stays up)")
	f.StringVar(&prefix, "prefix", netns.DefaultPrefix, "prefix of every namespace name")
	testbedFlags(f, &mtu, &linkHeader, &linkQueues, &netem, &asJSON)
	f.StringVar(&runArgs, "run-args", "", `more arguments for every 'linkfabric run', e.g. "--busy-poll"`)
	return cmd
}

// testbedFlags are the flags that shape a testbed (up, and testbed up, its former name).
func testbedFlags(f *pflag.FlagSet, mtu, linkHeader, linkQueues *int, netem *string, asJSON *bool) {
	f.IntVar(mtu, "mtu", netns.DefaultMTU, "host MTU; link ports get MTU + link header, or the topology's link_mtu where larger (fabric3: 3500)")
	f.IntVar(linkHeader, "link-header", netns.DefaultLinkHeaderLen, "bytes link ports' MTU exceeds the hosts' (the default fits every mode)")
	cli.LinkQueuesFlag(f, linkQueues)
	f.StringVar(netem, "netem", "", `tc netem arguments for every switch-to-switch link, applied in a middle namespace ("wire") to both directions, e.g. "loss 1% delay 100us" (needs sch_netem)`)
	f.BoolVar(asJSON, "json", false, report.JSONUsage)
}

// bedUp builds topo with opts, prints it (JSON with asJSON) and leaves it up.
func bedUp(out io.Writer, topo *netns.Topology, opts netns.Options, asJSON bool) error {
	tb, err := netns.Up(topo, opts)
	if err != nil {
		return err
	}
	if asJSON {
		return report.Encode(out, tb)
	}
	st, err := tb.Status()
	if err != nil {
		return err
	}
	fmt.Fprint(out, st.String())
	fmt.Fprintf(out, "\nthe testbed stays up: linkfabric testbed down --prefix %s removes it\n", opts.Prefix)
	return nil
}

// upRun is what up runs on a topology.
type upRun struct {
	mode  string
	opts  netns.Options
	json  bool     // print the testbed as JSON instead of the text
	where []string // --preset NAME or --topology FILE, for run --node
	extra []string
}

// checkTopologyMode returns the switches (edge and fabric nodes) of topo,
// or an error if mode does not run on one of them, naming the modes that
// run this topology and the presets that run with mode.
func checkTopologyMode(topo *netns.Topology, mode dataplane.Mode) ([]string, error) {
	switches, err := topo.Switches()
	if err != nil {
		return nil, err
	}
	if len(switches) == 0 {
		return nil, fmt.Errorf("topology %q has no switch (a namespace with a link port) to run a dataplane on", topo.Name)
	}
	if err := knownMode(mode); err != nil {
		return nil, err
	}
	bad := runsOn(topo, mode)
	if bad == nil {
		return switches, nil
	}
	var modes, presets []string
	for _, m := range dataplane.Modes() {
		if runsOn(topo, m) == nil {
			modes = append(modes, string(m))
		}
	}
	for _, p := range netns.Presets() {
		if t, err := netns.Preset(p); err == nil && runsOn(t, mode) == nil {
			presets = append(presets, p)
		}
	}
	fits := fmt.Sprintf("modes that run topology %s: %s", topo.Name, strings.Join(modes, ", "))
	if len(modes) == 0 {
		var all []string
		for _, m := range dataplane.Modes() {
			all = append(all, string(m))
		}
		fits = fmt.Sprintf("no mode (%s) runs topology %s", strings.Join(all, ", "), topo.Name)
	}
	with := "no preset"
	if len(presets) > 0 {
		with = "--preset " + strings.Join(presets, ", --preset ")
	}
	return nil, fmt.Errorf("--mode %s cannot run topology %s: %w; %s; with --mode %s use %s", mode, topo.Name, bad, fits, mode, with)
}

// runsOn returns why mode does not run on a switch of topo (nil: it runs
// on all of them).
func runsOn(topo *netns.Topology, mode dataplane.Mode) error {
	switches, err := topo.Switches()
	if err != nil {
		return err
	}
	for _, sw := range switches {
		ports, err := topo.NodePorts(sw)
		if err != nil {
			return err
		}
		host, links := netns.PortsOf(ports, netns.RoleHost), netns.PortsOf(ports, netns.RoleLink)
		if err := dataplane.CheckNodePorts(mode, host, links); err != nil {
			return fmt.Errorf("switch %s: %w", sw, err)
		}
	}
	return nil
}

// runUp brings topo up, starts a dataplane on every switch, prints how to use
// it to out and waits for ctx (or a dataplane's end); then it takes it all
// down.
func runUp(ctx context.Context, out io.Writer, topo *netns.Topology, switches []string, r upRun) (err error) {
	prefix := r.opts.Prefix
	tb, err := netns.Up(topo, r.opts)
	if err != nil {
		return err
	}
	defer func() {
		if derr := tb.Down(); derr != nil {
			err = errors.Join(err, derr)
		} else if !r.json {
			fmt.Fprintf(out, "testbed %s removed\n", prefix)
		}
	}()
	env := &bed.Env{Prefix: prefix, Log: log}
	runs := bed.SwitchRuns(prefix, r.where, switches, r.mode, r.extra)
	if !r.json {
		fmt.Fprintf(out, "starting %d dataplanes (mode %s) ...\n", len(runs), r.mode)
	}
	dps, err := env.StartNodes(ctx, runs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, dps.Stop()) }()
	if r.json {
		err = report.Encode(out, tb)
	} else {
		printUp(out, tb, runs)
	}
	if err != nil {
		return err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if !r.json {
				fmt.Fprintln(out, "stopping ...")
			}
			return nil
		case <-tick.C:
			if err := dps.Alive(); err != nil {
				return err
			}
		}
	}
}

// printUp tells what is up and how to use it.
func printUp(out io.Writer, tb *netns.Testbed, runs []bed.NodeRun) {
	t := tb.Topology
	fmt.Fprintf(out, "\ntestbed %s (prefix %s) is up, namespaces %s\n\nhosts:\n", t.Name, tb.Prefix, strings.Join(t.NamespaceNames(tb.Prefix), " "))
	var addrs []string // the hosts' first addresses, in order
	var hostNS []string
	for _, n := range t.Namespaces {
		if r, _ := t.Role(n); r != netns.NodeHost {
			continue
		}
		ports, _ := t.NodePorts(n)
		for _, p := range ports {
			a := t.Addresses[n+":"+p.Dev]
			fmt.Fprintf(out, "  %-10s %s %s\n", tb.NS(n), p.Dev, strings.Join(a, " "))
			if len(a) > 0 {
				addrs = append(addrs, strings.Split(a[0], "/")[0])
				hostNS = append(hostNS, tb.NS(n))
			}
		}
	}
	fmt.Fprintf(out, "\ndataplanes:\n")
	for _, r := range runs {
		ports, _ := t.NodePorts(r.Name)
		var desc []string
		for _, p := range ports {
			d := string(p.Role) + " " + p.Dev
			if p.Rate > 0 {
				d += " at " + p.Rate.String() + "bit/s"
			}
			desc = append(desc, d)
		}
		fmt.Fprintf(out, "  %-10s %s\n             linkfabric %s\n             stats: linkfabric stats --netns %s\n",
			tb.NS(r.Name), strings.Join(desc, ", "), strings.Join(r.Args, " "), tb.NS(r.Name))
	}
	if len(addrs) >= 2 {
		fmt.Fprintf(out, "\ntry:\n  ip netns exec %s ping -c 3 %s\n  ip netns exec %s iperf3 -s -D\n  ip netns exec %s iperf3 -c %s\n",
			hostNS[0], addrs[1], hostNS[1], hostNS[0], addrs[1])
	}
	fmt.Fprintf(out, "\nCtrl-C (or SIGTERM) stops the dataplanes and removes the testbed.\n")
}
