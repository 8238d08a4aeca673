package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// CellsPushPullConfig configures `linkfabric cells pushpull` (Stardust
// §5.2) on fabric3: ports A (e3 host0, h3a) and B (e3 host1, h3b) at
// PortRate; h1 sends to A and to B, h2 to A, each at PortRate; the four
// links into e3 run at FabricRate each, so that they carry A's and B's
// rates with a margin but not the 3 port rates offered.
type CellsPushPullConfig struct {
	PortRate   netns.BitRate  `json:"port_rate_bps"`     // A's and B's (default 100M)
	FabricRate netns.BitRate  `json:"fabric_rate_bps"`   // each link into e3 (default 0.55 × PortRate)
	PortBuffer netns.ByteSize `json:"port_buffer_bytes"` // A's and B's egress queues (default 2M)
	Arms       []string       `json:"arms"`              // CellsArms
	Runs       int            `json:"runs"`
	Duration   time.Duration  `json:"duration_ns"`   // each run's UDP flows (default 3s)
	Payload    int            `json:"payload_bytes"` // per datagram (default 1400)
	Trim       float64        `json:"trim"`          // of the run left out at each end (default 0.15)
	RunArgs    []string       `json:"run_args,omitempty"`
	MTU        int            `json:"mtu,omitempty"`
}

// Normalize fills defaults and checks the configuration.
func (c *CellsPushPullConfig) Normalize() error {
	if err := normalizePort("cells pushpull", &c.PortRate, &c.PortBuffer); err != nil {
		return err
	}
	c.FabricRate = cmp.Or(c.FabricRate, c.PortRate*55/100)
	if c.FabricRate < c.PortRate/2 || c.FabricRate*4 >= c.PortRate*3 {
		return fmt.Errorf("cells pushpull --fabric-rate %s: the four links into e3 must carry A's and B's rates (≥ %s each) and less than the %s offered (< %s each)",
			c.FabricRate, c.PortRate/2, c.PortRate*3, c.PortRate*3/4)
	}
	if err := bed.NormalizeArms("cells pushpull", &c.Arms, CellsArms, CellsArms); err != nil {
		return err
	}
	c.Runs = bed.Positive(c.Runs, 1)
	c.Duration = cmp.Or(c.Duration, 3*time.Second)
	if c.Duration < time.Second {
		return fmt.Errorf("cells pushpull --duration %v: want at least 1s", c.Duration)
	}
	c.Payload = cmp.Or(c.Payload, 1400)
	if c.Payload < bed.UDPHeader || c.Payload > 1472 {
		return fmt.Errorf("cells pushpull --payload %d: want %d..1472", c.Payload, bed.UDPHeader)
	}
	return normalizeTrim("cells pushpull", &c.Trim, 0.15)
}

// CellsPushPullRun is one arm and run.
type CellsPushPullRun struct {
	Arm string `json:"arm"`
	Run int    `json:"run"`
	// B and A are the wire bits delivered to each port over its rate, in
	// the run less Trim at each end (from h3b's and h3a's receive times).
	B float64 `json:"b_throughput"`
	A float64 `json:"a_throughput"`
	// BLoss is the share of B's datagrams lost.
	BLoss        float64               `json:"b_loss"`
	Flows        []bed.UDPFlowStats    `json:"flows"` // a1 (h1 → A), b (h1 → B), a2 (h2 → A)
	Drops        CellsDrops            `json:"drops"`
	FabricDrops  uint64                `json:"fabric_drops"`
	DropsByNode  map[string]CellsDrops `json:"drops_by_node"`
	Rcvbuf       uint64                `json:"rcvbuf_errors"`
	MaxPollGapMs float64               `json:"max_poll_gap_ms"`
	StalledMs    map[string]float64    `json:"stalled_ms"`
	Load1        float64               `json:"load1"`
}

// CellsPushPullResult is what `linkfabric cells pushpull` reports. Its
// Summary: per arm the medians (<arm>_b_throughput, ...), the push
// fabric's fluid prediction for B (the links into e3 over the offer), the
// checks and pass.
type CellsPushPullResult struct {
	fabricResult[CellsPushPullConfig, *CellsPushPullRun]
}

// fabric3PushPull is fabric3 with e3's host ports at rate and buffer and
// its four links at fabric.
func fabric3PushPull(rate, fabric netns.BitRate, buffer netns.ByteSize) (*netns.Topology, error) {
	topo, err := netns.Preset("fabric3")
	if err != nil {
		return nil, err
	}
	if err := SetCellsLinkShape(topo, "e3", "host", rate, buffer); err != nil {
		return nil, err
	}
	return topo, SetCellsLinkShape(topo, "e3", "up", fabric, 0)
}

// CellsPushPull runs the push vs pull experiment: per run and arm, the
// three flows at once on fresh dataplanes of one fabric3 testbed.
func CellsPushPull(ctx context.Context, e *bed.Env, cfg CellsPushPullConfig) (*CellsPushPullResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	topo, err := fabric3PushPull(cfg.PortRate, cfg.FabricRate, cfg.PortBuffer)
	if err != nil {
		return nil, err
	}
	res := &CellsPushPullResult{newFabricResult[CellsPushPullConfig, *CellsPushPullRun](cfg)}
	total := cfg.Runs * len(cfg.Arms)
	e.Printf("cells pushpull: fabric3 %q, ports A (h3a) and B (h3b) at %s, links into e3 at %s each; h1 → A, h1 → B, h2 → A at %s each for %v; %d runs; load %.1f",
		e.Prefix, cfg.PortRate, cfg.FabricRate, cfg.PortRate, cfg.Duration, total, bed.LoadAvg())
	return res, fabricExpRuns(ctx, e, "cells pushpull", &res.fabricResult, res.summarize, start, topo, cfg.MTU, cfg.Runs, cfg.Arms, []string{""}, cfg.RunArgs, [][2]string{{"h1", "10.0.0.3"}, {"h1", "10.0.0.4"}, {"h2", "10.0.0.3"}},
		func(f *CellsFabric, arm, _ string, run int) (*CellsPushPullRun, error) {
			return pushPullOnce(ctx, e, f, cfg, arm, run, res)
		})
}

func (r *CellsPushPullRun) line() string {
	return fmt.Sprintf("B %.3f of its rate (lost %.3f), A %.3f; drops: %s; max worker gap %.0f ms, node clocks stalled %s", r.B, r.BLoss, r.A, r.Drops, r.MaxPollGapMs, fmtStalled(r.StalledMs))
}

func pushPullOnce(ctx context.Context, e *bed.Env, f *CellsFabric, cfg CellsPushPullConfig, arm string, run int, res *CellsPushPullResult) (*CellsPushPullRun, error) {
	r := &CellsPushPullRun{Arm: arm, Run: run, Load1: bed.LoadAvg()}
	before, err := f.Stats(ctx)
	if err != nil {
		return nil, err
	}
	rate := float64(cfg.PortRate)
	flows := []bed.UDPFlow{
		{Name: "a1", From: e.NS("h1"), To: "10.0.0.3:5301", Rate: rate, Payload: cfg.Payload, Duration: cfg.Duration},
		{Name: "b", From: e.NS("h1"), To: "10.0.0.4:5302", Rate: rate, Payload: cfg.Payload, Duration: cfg.Duration},
		{Name: "a2", From: e.NS("h2"), To: "10.0.0.3:5301", Rate: rate, Payload: cfg.Payload, Duration: cfg.Duration},
	}
	u, err := bed.RunUDPFlows(ctx, map[string]string{e.NS("h3a"): ":5301", e.NS("h3b"): ":5302"}, flows, 300*time.Millisecond, 3*time.Second)
	if err != nil {
		return nil, err
	}
	if err := f.Alive(); err != nil {
		return nil, err
	}
	after, err := f.Stats(ctx)
	if err != nil {
		return nil, err
	}
	arrA, arrB := u.Arrivals[e.NS("h3a")], u.Arrivals[e.NS("h3b")]
	all := append(slices.Clone(arrA), arrB...)
	for i, fl := range flows {
		r.Flows = append(r.Flows, bed.FlowStats(all, uint32(i), fl.Name, u.Sent[i], u.T0))
	}
	d := int64(cfg.Duration)
	a, b := u.T0+int64(cfg.Trim*float64(d)), u.T0+d-int64(cfg.Trim*float64(d))
	secs := float64(b-a) / 1e9
	r.B = bed.WireBits(arrB, 1<<1, a, b) / rate / secs
	r.A = bed.WireBits(arrA, 1<<0|1<<2, a, b) / rate / secs
	r.BLoss = report.Ratio(float64(r.Flows[1].Lost), float64(r.Flows[1].Sent))
	r.Rcvbuf = u.Rcvbuf
	r.Drops, r.DropsByNode, r.MaxPollGapMs = cellsDropsAll(before, after)
	r.StalledMs = cellsStalled(before, after)
	r.FabricDrops = r.Drops.Fabric()
	res.addSeries(arm, "udp", run, all, flows, u.T0)
	return r, nil
}

func (res *CellsPushPullResult) summarize() {
	c := res.Config
	s := map[string]any{}
	var failed []string
	for _, arm := range c.Arms {
		keep := func(r *CellsPushPullRun) bool { return r.Arm == arm }
		b := cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return r.B })
		s[arm+"_b_throughput"] = b
		s[arm+"_a_throughput"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return r.A })
		s[arm+"_b_loss"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return r.BLoss })
		s[arm+"_fabric_drops"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return float64(r.FabricDrops) })
		s[arm+"_link_drops"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return float64(r.Drops.Link) })
		s[arm+"_voq_drops"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return float64(r.Drops.VOQ) })
		s[arm+"_egress_drops"] = cellsMedian(res.Runs, keep, func(r *CellsPushPullRun) float64 { return float64(r.Drops.Egress) })
		if arm == "credits" && b < 0.97 {
			failed = append(failed, "credits_b_throughput ≥ 0.97")
		}
	}
	// In push the links into e3 carry what they can of the three flows
	// alike: B keeps their capacity over the offer (cell headers ignored).
	s["push_b_predicted"] = min(1, 4*float64(c.FabricRate)/(3*float64(c.PortRate)))
	res.Summary = report.Verdict(s, failed)
}

// Text renders the result: per run, then the medians.
func (res *CellsPushPullResult) Text() string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "linkfabric cells pushpull (Stardust §5.2): fabric3, ports A (h3a) and B (h3b) at %s (%s buffers), the four links into e3 at %s each; UDP h1 → A, h1 → B, h2 → A at %s each for %v; kernel %s, %d CPUs; %.0fs in all\n\n",
		c.PortRate, c.PortBuffer, c.FabricRate, c.PortRate, c.Duration, res.Kernel, res.CPUs, res.Seconds)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\trun\tB / rate\tB lost\tA / rate\tfabric drops\t(link\tvoq\treasm\tother)\tegress drops\tmax gap ms\tload\t")
	for _, r := range res.Runs {
		d := r.Drops
		fmt.Fprintf(w, "%s\t%d\t%.3f\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.1f\t\n", r.Arm, r.Run, r.B, r.BLoss, r.A, r.FabricDrops, d.Link, d.VOQ, d.Reasm, d.Other, d.Egress, r.MaxPollGapMs, r.Load1)
	}
	w.Flush()
	fmt.Fprintf(&b, "\nmedians over %d run(s):\n", c.Runs)
	w = report.NewTable(&b)
	fmt.Fprintln(w, "arm\tB / rate\tB lost\tA / rate\tlink drops\tvoq drops\tegress drops\t")
	s := res.Summary
	for _, arm := range c.Arms {
		fmt.Fprintf(w, "%s\t%.3f\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f\t\n", arm, s[arm+"_b_throughput"], s[arm+"_b_loss"], s[arm+"_a_throughput"], s[arm+"_link_drops"], s[arm+"_voq_drops"], s[arm+"_egress_drops"])
	}
	w.Flush()
	fmt.Fprintf(&b, "\nB / rate: B's wire bits over its rate, the run less %.0f %% at each end (h3b's receive times). Push prediction for B: links into e3 over the offer, %.3f (paper: about 2/3).\n", c.Trim*100, s["push_b_predicted"])
	fmt.Fprintln(&b, "With credits A's excess waits in, and overflows, its sources' VOQs (voq drops): the fabric carries only what A and B can take.")
	if f, _ := s["failed"].([]string); len(f) > 0 {
		fmt.Fprintf(&b, "out of target: %s\n", strings.Join(f, "; "))
	}
	return b.String()
}
