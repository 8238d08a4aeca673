package bed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
)

// ModeCells is the dataplane mode of a cell fabric (`linkfabric run --mode cells`).
const ModeCells = "cells"

// Bed is a testbed of a multi-link topology (a preset such as bundle
// or fabric3) for the cells experiments, with a dataplane on every switch
// once Start is called.
type Bed struct {
	Env    *Env
	Preset string
	TB     *netns.Testbed
	// Switches are the edge and fabric nodes, in topology order.
	Switches []string
	// Hosts are the host namespaces with their first address, in topology
	// order.
	Hosts []BedHost
	dp    *Dataplanes
	run   BedRun
}

// BedHost is a host of a Bed: its namespace (short name), device and
// first address.
type BedHost struct {
	Name, Dev, Addr string
}

// BedRun is how the dataplanes of a Bed run.
type BedRun struct {
	Mode string // cells, forward, ...
	// Args are more `linkfabric run` arguments for every switch;
	// SwitchArgs more for one switch (its short name).
	Args       []string
	SwitchArgs map[string][]string
	// LinkRate, if set, is the line rate of every link port of every
	// switch (--port-rate), LinkBuffer its egress queue (--port-buffer).
	LinkRate   netns.BitRate
	LinkBuffer netns.ByteSize
}

// OffloadMode is the mode a testbed sets its hosts' offloads for
// (netns.Testbed.SetMode) when the switches run mode with args: none ("")
// when args keep every frame in the workers (--fastpath afxdp), as then no
// kernel path wants the hosts' GRO (a bundle runs such a forward with the
// hosts' ends as cells has them).
func OffloadMode(mode string, args []string) string {
	for i, a := range args {
		if a == "--fastpath=afxdp" || a == "--fastpath" && i+1 < len(args) && args[i+1] == "afxdp" {
			return ""
		}
	}
	return mode
}

// UpBare brings topo up under e.Prefix with bare ports (forwarding none:
// the dataplanes forward), removing a stale testbed of that prefix first.
func UpBare(e *Env, topo *netns.Topology, mtu int) (*netns.Testbed, error) {
	if err := netns.Down(e.Prefix); err != nil {
		return nil, err
	}
	return netns.Up(topo, netns.Options{Prefix: e.Prefix, Forwarding: netns.ForwardingNone, MTU: mtu})
}

// BedUp brings preset up with bare ports (forwarding none) under
// e.Prefix, removing a stale testbed of that prefix first.
func (e *Env) BedUp(preset string, mtu int) (*Bed, error) {
	if err := e.Defaults(); err != nil {
		return nil, err
	}
	topo, err := netns.Preset(preset)
	if err != nil {
		return nil, err
	}
	switches, err := topo.Switches()
	if err != nil {
		return nil, err
	}
	tb, err := UpBare(e, topo, mtu)
	if err != nil {
		return nil, err
	}
	b := &Bed{Env: e, Preset: preset, TB: tb, Switches: switches}
	for _, n := range topo.Namespaces {
		if r, _ := topo.Role(n); r != netns.NodeHost {
			continue
		}
		ports, _ := topo.NodePorts(n)
		for _, p := range ports {
			if a := topo.Addresses[n+":"+p.Dev]; len(a) > 0 {
				b.Hosts = append(b.Hosts, BedHost{Name: n, Dev: p.Dev, Addr: strings.Split(a[0], "/")[0]})
				break
			}
		}
	}
	if len(b.Hosts) < 2 {
		tb.Down()
		return nil, fmt.Errorf("preset %s has %d hosts with an address: the cells experiments need two", preset, len(b.Hosts))
	}
	return b, nil
}

// SwitchRuns returns the `linkfabric run` of every switch of a testbed
// (prefix, topology given as where: --preset NAME or --topology FILE) in
// mode: --node SW, and in mode cells --cells-node-id 1, 2, ... in topology order
// (unique in the testbed), then extra.
func SwitchRuns(prefix string, where, switches []string, mode string, extra []string) []NodeRun {
	var runs []NodeRun
	for i, sw := range switches {
		args := append([]string{"run", "--node", sw, "--prefix", prefix}, where...)
		args = append(args, "--mode", mode)
		if mode == ModeCells {
			args = append(args, "--cells-node-id", fmt.Sprint(i+1))
		}
		runs = append(runs, NodeRun{Name: sw, Args: append(args, extra...)})
	}
	return runs
}

// Start starts a dataplane on every switch (stopping those of an earlier
// Start) and waits until the first host reaches every other one, which
// also teaches the edges where the hosts' MACs are. Modes other than cells
// take one link port: they run on each switch's first.
func (b *Bed) Start(ctx context.Context, r BedRun) error {
	if err := b.Stop(); err != nil {
		return err
	}
	topo := b.TB.Topology
	runs := SwitchRuns(b.Env.Prefix, []string{"--preset", b.Preset}, b.Switches, r.Mode, r.Args)
	for i, sw := range b.Switches {
		ports, err := topo.NodePorts(sw)
		if err != nil {
			return err
		}
		links := netns.PortsOf(ports, netns.RoleLink)
		var rates, bufs []string
		for _, l := range links {
			if r.LinkRate > 0 {
				rates = append(rates, l+"="+fmt.Sprint(uint64(r.LinkRate)))
			}
			if r.LinkBuffer > 0 {
				bufs = append(bufs, l+"="+fmt.Sprint(int(r.LinkBuffer)))
			}
		}
		a := &runs[i].Args
		if r.Mode != ModeCells && len(links) > 1 {
			*a = append(*a, "--link-port", links[0])
		}
		if len(rates) > 0 {
			*a = append(*a, "--port-rate", strings.Join(rates, ","))
		}
		if len(bufs) > 0 {
			*a = append(*a, "--port-buffer", strings.Join(bufs, ","))
		}
		*a = append(*a, r.SwitchArgs[sw]...)
	}
	if err := b.TB.SetMode(OffloadMode(r.Mode, r.Args)); err != nil {
		return err
	}
	if err := b.StartNodes(ctx, runs); err != nil {
		return err
	}
	b.run = r
	if err := b.WaitHosts(ctx, 15*time.Second); err != nil {
		return errors.Join(err, b.Stop())
	}
	return nil
}

// StartNodes starts runs as the bed's dataplanes (stopping those that
// run) and waits until each is ready.
func (b *Bed) StartNodes(ctx context.Context, runs []NodeRun) error {
	if err := b.Stop(); err != nil {
		return err
	}
	dp, err := b.Env.StartNodes(ctx, runs)
	if err != nil {
		return err
	}
	b.dp = dp
	return nil
}

// Alive reports an error if a dataplane exited, or none runs.
func (b *Bed) Alive() error {
	if b.dp == nil {
		return errors.New("no dataplane runs")
	}
	return b.dp.Alive()
}

// WaitHosts waits until the first host reaches every other one.
func (b *Bed) WaitHosts(ctx context.Context, d time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	from := b.Hosts[0]
	for _, h := range b.Hosts[1:] {
		if err := netns.WaitPing(wctx, b.TB.NS(from.Name), h.Addr); err != nil {
			return fmt.Errorf("%s cannot reach %s (%s) through mode %s: %w", from.Name, h.Name, h.Addr, b.run.Mode, err)
		}
	}
	return nil
}

// Dataplanes returns the running dataplanes (nil before Start).
func (b *Bed) Dataplanes() *Dataplanes { return b.dp }

// Stop stops the dataplanes.
func (b *Bed) Stop() error {
	if b.dp == nil {
		return nil
	}
	err := b.dp.Stop()
	b.dp = nil
	return err
}

// Down stops the dataplanes and removes the testbed.
func (b *Bed) Down() error {
	return errors.Join(b.Stop(), b.TB.Down())
}

// LinkPorts returns the link ports of switch sw.
func (b *Bed) LinkPorts(sw string) []string {
	ports, _ := b.TB.Topology.NodePorts(sw)
	return netns.PortsOf(ports, netns.RoleLink)
}

// IfCounters are an interface's own counters (netlink).
type IfCounters struct {
	RxPackets, RxBytes, TxPackets, TxBytes uint64
}

// Sub returns c - o.
func (c IfCounters) Sub(o IfCounters) IfCounters {
	return IfCounters{c.RxPackets - o.RxPackets, c.RxBytes - o.RxBytes, c.TxPackets - o.TxPackets, c.TxBytes - o.TxBytes}
}

// ReadIfCounters reads the counters of devs in namespace ns (full name).
// veth counts AF_XDP transmissions too.
func ReadIfCounters(ns string, devs ...string) ([]IfCounters, error) {
	out := make([]IfCounters, len(devs))
	err := netns.Do(ns, func() error {
		for i, d := range devs {
			l, err := netlink.LinkByName(d)
			if err != nil {
				return fmt.Errorf("%s in namespace %s: %w", d, ns, err)
			}
			s := l.Attrs().Statistics
			if s == nil {
				return fmt.Errorf("%s in namespace %s: no statistics", d, ns)
			}
			out[i] = IfCounters{s.RxPackets, s.RxBytes, s.TxPackets, s.TxBytes}
		}
		return nil
	})
	return out, err
}

// MaxMean returns the largest value of v over their mean (0 if the mean is 0).
func MaxMean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	return report.Ratio(slices.Max(v), sum/float64(len(v)))
}
