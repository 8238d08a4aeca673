package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// CellsFabric is a testbed whose switches (edge and fabric nodes) run
// `linkfabric run --mode cells`, each port at the rate and buffer its
// topology gives it.
type CellsFabric struct {
	// Bed's Switches are in topology order: node ids 1, 2, ... in this
	// order. It has no Hosts: Reach says who must reach whom.
	*bed.Bed
}

// UpCellsFabric brings topo up under e.Prefix with bare ports (a stale
// testbed of that prefix is removed first). Start the dataplanes with Start.
func UpCellsFabric(e *bed.Env, topo *netns.Topology, mtu int) (*CellsFabric, error) {
	if err := e.Defaults(); err != nil {
		return nil, err
	}
	switches, err := topo.Switches()
	if err != nil {
		return nil, err
	}
	tb, err := bed.UpBare(e, topo, mtu)
	if err != nil {
		return nil, err
	}
	return &CellsFabric{&bed.Bed{Env: e, TB: tb, Switches: switches}}, nil
}

// CellsNodeArgs returns the arguments of `linkfabric` that run mode cells
// on node of tb as node id: its namespace, host and link ports and their
// rates and buffers from tb's topology, then extra.
func CellsNodeArgs(tb *netns.Testbed, node string, id int, extra ...string) ([]string, error) {
	ports, err := tb.Topology.NodePorts(node)
	if err != nil {
		return nil, err
	}
	args := []string{"run", "--netns", tb.NS(node), "--mode", "cells", "--cells-node-id", fmt.Sprint(id)}
	if h := netns.PortsOf(ports, netns.RoleHost); len(h) > 0 {
		args = append(args, "--host-port", strings.Join(h, ","))
	}
	args = append(args, "--link-port", strings.Join(netns.PortsOf(ports, netns.RoleLink), ","))
	var rates, bufs []string
	for _, p := range ports {
		if p.Rate > 0 {
			rates = append(rates, p.Dev+"="+p.Rate.String())
			if p.Buffer > 0 {
				bufs = append(bufs, p.Dev+"="+p.Buffer.String())
			}
		}
	}
	if len(rates) > 0 {
		args = append(args, "--port-rate", strings.Join(rates, ","))
	}
	if len(bufs) > 0 {
		args = append(args, "--port-buffer", strings.Join(bufs, ","))
	}
	return append(args, extra...), nil
}

// Start runs mode cells on every switch with extra arguments (node ids 1,
// 2, ... in Switches order) and waits until each is ready. Stop any that
// run first.
func (f *CellsFabric) Start(ctx context.Context, extra ...string) error {
	var runs []bed.NodeRun
	for i, sw := range f.Switches {
		args, err := CellsNodeArgs(f.TB, sw, i+1, extra...)
		if err != nil {
			return err
		}
		runs = append(runs, bed.NodeRun{Name: sw, Args: args})
	}
	return f.StartNodes(ctx, runs)
}

// Reach pings each pair (host namespace short name, address) until it
// answers (the routes converge and the edges learn the hosts' MACs), within
// timeout in all.
func (f *CellsFabric) Reach(ctx context.Context, timeout time.Duration, pairs ...[2]string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, p := range pairs {
		if err := netns.WaitPing(ctx, f.TB.NS(p[0]), p[1]); err != nil {
			return fmt.Errorf("%s cannot reach %s through the cells fabric: %w", p[0], p[1], err)
		}
	}
	return nil
}

// Stats reads the statistics of every switch's dataplane, by short name.
func (f *CellsFabric) Stats(ctx context.Context) (map[string]*CellsNodeStats, error) {
	m := map[string]*CellsNodeStats{}
	for _, sw := range f.Switches {
		s, err := FetchCellsStats(ctx, f.TB.NS(sw))
		if err != nil {
			return nil, err
		}
		m[sw] = s
	}
	return m, nil
}

// SetCellsLinkShape sets the rate and buffer (0: the dataplane's default)
// of every veth pair of topo with an end in namespace ns whose device name
// starts with devPrefix ("" matches every device of ns); it fails if none
// matches.
func SetCellsLinkShape(topo *netns.Topology, ns, devPrefix string, rate netns.BitRate, buffer netns.ByteSize) error {
	n := 0
	for i := range topo.Links {
		l := &topo.Links[i]
		for _, e := range l.Ends {
			if e.NS == ns && strings.HasPrefix(e.Dev, devPrefix) {
				l.Rate, l.Buffer = rate, buffer
				n++
				break
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("topology %s has no link at %s:%s*", topo.Name, ns, devPrefix)
	}
	return nil
}

// fabricArmRuns brings fabric3 up with topo and, per run and arm, starts
// its dataplanes with the arm's flags and runArgs, waits until each pair
// of reach (host, address) gets through, calls once and stops them.
func fabricArmRuns(ctx context.Context, e *bed.Env, topo *netns.Topology, mtu, runs int, arms, runArgs []string, reach [][2]string, once func(f *CellsFabric, arm string, run int) error) error {
	f, err := UpCellsFabric(e, topo, mtu)
	if err != nil {
		return err
	}
	defer f.Down()
	for run := 1; run <= runs; run++ {
		for _, arm := range arms {
			if err := f.Start(ctx, append(cellsArmArgs(arm), runArgs...)...); err != nil {
				return err
			}
			if err := f.Reach(ctx, 20*time.Second, reach...); err != nil {
				return err
			}
			if err := once(f, arm, run); err != nil {
				return err
			}
			if err := f.Stop(); err != nil {
				return err
			}
		}
	}
	return nil
}

// fabricResult is a fabric3 experiment's result: its runs, how long it
// took, and the UDP flows' delivered rates for its CSV.
type fabricResult[C, R any] struct {
	report.Result[C, R]
	Seconds float64 `json:"seconds"`
	series  []cellsSeriesRow
}

func newFabricResult[C, R any](cfg C) fabricResult[C, R] {
	return fabricResult[C, R]{Result: report.NewResult[C, R](cfg)}
}

// addSeries keeps the delivered rate of each of flows (arrivals arr, the
// run starting at t0) in 10 ms bins.
func (res *fabricResult[C, R]) addSeries(arm, transport string, run int, arr []bed.UDPArrival, flows []bed.UDPFlow, t0 int64) {
	names := make([]string, len(flows))
	for i, f := range flows {
		names[i] = f.Name
	}
	for k, s := range bed.UDPSeries(arr, names, t0, 10*time.Millisecond) {
		for i, v := range s {
			res.series = append(res.series, cellsSeriesRow{Arm: arm, Transport: transport, Run: run, Flow: flows[k].Name, TMs: float64(i) * 10, Bps: v})
		}
	}
}

// failed are the targets the summary says were missed.
func (res *fabricResult[C, R]) failed() []string {
	f, _ := res.Summary["failed"].([]string)
	return f
}

// WriteCSV writes the UDP flows' delivered rates in 10 ms bins.
func (res *fabricResult[C, R]) WriteCSV(path string) error { return writeCellsCSV(path, res.series) }

// fabricExpRuns runs a fabric3 experiment's runs on topo (fabricArmRuns):
// per run and arm, once for each variant in turn (a single "" for none),
// with a progress line before and the run's line after; every run is kept
// in res.Runs, and res summarized at the end; res.Seconds is the time
// since start then.
func fabricExpRuns[C any, R interface{ line() string }](ctx context.Context, e *bed.Env, what string, res *fabricResult[C, R], summarize func(), start time.Time,
	topo *netns.Topology, mtu, runs int, arms, variants, runArgs []string, reach [][2]string,
	once func(f *CellsFabric, arm, variant string, run int) (R, error)) error {
	step, total := 0, runs*len(arms)*len(variants)
	err := fabricArmRuns(ctx, e, topo, mtu, runs, arms, runArgs, reach, func(f *CellsFabric, arm string, run int) error {
		for _, v := range variants {
			step++
			name := strings.TrimSpace(arm + " " + v)
			e.Printf("%s: [%d/%d] %s, run %d", what, step, total, name, run)
			r, err := once(f, arm, v, run)
			if err != nil {
				return fmt.Errorf("%s %s run %d: %w", what, name, run, err)
			}
			e.Printf("%s:   %s", what, r.line())
			res.Runs = append(res.Runs, r)
		}
		return nil
	})
	if err == nil {
		summarize()
	}
	res.Seconds = time.Since(start).Seconds()
	return err
}

// normalizePort fills and checks a fabric3 experiment's port: its rate
// (default 100M, 1M..10G) and egress buffer (default 2M, at least 16K).
func normalizePort(what string, rate *netns.BitRate, buf *netns.ByteSize) error {
	*rate = cmp.Or(*rate, 100e6)
	if *rate < 1e6 || *rate > 10e9 {
		return fmt.Errorf("%s --port-rate %s: want 1M..10G", what, *rate)
	}
	*buf = cmp.Or(*buf, 2<<20)
	if *buf < 16<<10 {
		return fmt.Errorf("%s --port-buffer %s: want at least 16K", what, *buf)
	}
	return nil
}

// normalizeTrim fills and checks the share of a run left out at each end
// (default def, in [0, 0.5)).
func normalizeTrim(what string, trim *float64, def float64) error {
	*trim = cmp.Or(*trim, def)
	if *trim < 0 || *trim >= 0.5 {
		return fmt.Errorf("%s: trim %g: want [0, 0.5)", what, *trim)
	}
	return nil
}
