package cellsexp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// CellsTransports are what the incast sources send: udp (a burst of
// datagrams per source, paced at the port's rate) and tcp (iperf3).
var CellsTransports = []string{"udp", "tcp"}

// CellsIncastConfig configures `linkfabric cells incast` (Stardust §5.4) on
// fabric3: h1 (behind e1) and h2 (behind e2) each send at the rate of h3a's
// port at e3 (host0), the bottleneck.
type CellsIncastConfig struct {
	PortRate   netns.BitRate  `json:"port_rate_bps"`     // e3's host0 (default 100M)
	PortBuffer netns.ByteSize `json:"port_buffer_bytes"` // its egress queue (default 2M)
	Arms       []string       `json:"arms"`              // CellsArms
	Transports []string       `json:"transports"`        // CellsTransports
	Runs       int            `json:"runs"`
	// UDP: each source sends Burst bytes of payload in datagrams of
	// Payload bytes at PortRate (default 3 MiB: with credits each source
	// holds up to half of it in its VOQ of 2 MiB).
	Burst   int64 `json:"burst_bytes"`
	Payload int   `json:"payload_bytes"`
	// TCP: one iperf3 flow per source for Duration, congestion control CC
	// ("" the hosts' default).
	Duration time.Duration `json:"duration_ns"`
	CC       string        `json:"cc,omitempty"`
	// Trim is the share of the delivery period left out at each end when
	// the port's busy share and the sources' shares are measured.
	Trim    float64  `json:"trim"`
	RunArgs []string `json:"run_args,omitempty"`
	MTU     int      `json:"mtu,omitempty"`
}

// Normalize fills defaults and checks the configuration.
func (c *CellsIncastConfig) Normalize() error {
	if err := normalizePort("cells incast", &c.PortRate, &c.PortBuffer); err != nil {
		return err
	}
	if err := bed.NormalizeArms("cells incast", &c.Arms, CellsArms, CellsArms); err != nil {
		return err
	}
	if len(c.Transports) == 0 {
		c.Transports = slices.Clone(CellsTransports)
	}
	for _, t := range c.Transports {
		if !slices.Contains(CellsTransports, t) {
			return fmt.Errorf("cells incast --transports: unknown %q (have %s)", t, strings.Join(CellsTransports, ", "))
		}
	}
	c.Runs = bed.Positive(c.Runs, 1)
	c.Burst = cmp.Or(c.Burst, 3<<20)
	c.Payload = cmp.Or(c.Payload, 1400)
	if c.Burst < 64<<10 || c.Payload < bed.UDPHeader || c.Payload > 1472 {
		return fmt.Errorf("cells incast: --burst %d (want ≥ 64K), --payload %d (want %d..1472)", c.Burst, c.Payload, bed.UDPHeader)
	}
	c.Duration = cmp.Or(c.Duration, 5*time.Second)
	if c.Duration < 2*time.Second {
		return fmt.Errorf("cells incast --duration %v: TCP needs at least 2s", c.Duration)
	}
	return normalizeTrim("cells incast", &c.Trim, 0.1)
}

// CellsIncastRun is one arm, transport and run.
type CellsIncastRun struct {
	Arm       string `json:"arm"`
	Transport string `json:"transport"`
	Run       int    `json:"run"`
	// PortBusy is the bits the port put on the wire over the delivery
	// period less Trim at each end, over the port's rate times that time
	// (UDP: from h3a's receive times; TCP: from e3's port counters at 20 %
	// and 90 % of the run). PortBusySpan is the same over the whole
	// delivery period (UDP).
	PortBusy     float64 `json:"port_busy"`
	PortBusySpan float64 `json:"port_busy_span,omitempty"`
	// PortLate is the share of the measured period the port lost to e3's
	// worker running late (frames waited and its bucket was full; UDP:
	// over the run, against the delivery span).
	PortLate float64 `json:"port_late"`
	// Credit is e3's host0 scheduler over the run: credits issued, Polls
	// stopped at the credit window and turns passed at a VOQ's share of
	// it or late (its source kept from running), Polls that held a grant
	// for a source whose window was in the port's queue, and the loop's
	// round trip at the end (ms).
	Credit struct {
		Credits, WindowFull, ShareFull, LateFull, WaitedFor uint64
		RTTMs                                               float64
	} `json:"credit"`
	// Shares are each source's part of what was delivered (UDP: in the
	// window of PortBusy; TCP: over the run); ShareDev the largest
	// relative deviation from a fair share.
	Shares   []float64 `json:"shares"`
	ShareDev float64   `json:"share_dev"`
	// Drops inside the fabric, at the egress port and at the ingress ports,
	// summed over the switches, and by switch.
	Drops       CellsDrops            `json:"drops"`
	FabricDrops uint64                `json:"fabric_drops"`
	DropsByNode map[string]CellsDrops `json:"drops_by_node"`
	// UDP: each source's datagrams; the receive buffer errors at h3a (lost
	// in the host, not the fabric).
	Flows  []bed.UDPFlowStats `json:"flows,omitempty"`
	Rcvbuf uint64             `json:"rcvbuf_errors,omitempty"`
	// TCP: each flow's goodput (bit/s) and retransmissions.
	TCPBps     []float64 `json:"tcp_bps,omitempty"`
	TCPRetrans []int     `json:"tcp_retransmits,omitempty"`
	// MaxPollGapMs is the longest a dataplane's worker was kept from
	// running (since its start).
	MaxPollGapMs float64 `json:"max_poll_gap_ms"`
	// StalledMs is, by switch, the time its cell node's clock did not count
	// during the run (every gap between the worker's calls beyond 2 ms).
	StalledMs map[string]float64 `json:"stalled_ms"`
	Load1     float64            `json:"load1"`
}

// CellsIncastResult is what `linkfabric cells incast` reports. Its
// Summary: per arm and transport the medians over the runs
// (<arm>_<transport>_<figure>), the checks and pass.
type CellsIncastResult struct {
	fabricResult[CellsIncastConfig, *CellsIncastRun]
}

// fabric3Incast is fabric3 with e3's host0 at rate and buffer.
func fabric3Incast(rate netns.BitRate, buffer netns.ByteSize) (*netns.Topology, error) {
	topo, err := netns.Preset("fabric3")
	if err != nil {
		return nil, err
	}
	return topo, SetCellsLinkShape(topo, "e3", "host0", rate, buffer)
}

// CellsIncast runs the incast experiment: per run, arm and transport, the
// two sources send to h3a at once on fresh dataplanes of one fabric3
// testbed.
func CellsIncast(ctx context.Context, e *bed.Env, cfg CellsIncastConfig) (*CellsIncastResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	topo, err := fabric3Incast(cfg.PortRate, cfg.PortBuffer)
	if err != nil {
		return nil, err
	}
	res := &CellsIncastResult{newFabricResult[CellsIncastConfig, *CellsIncastRun](cfg)}
	total := cfg.Runs * len(cfg.Arms) * len(cfg.Transports)
	e.Printf("cells incast: fabric3 %q, h1 and h2 → h3a at %s each, h3a's port %s with a %s buffer; %d runs (%s × %s × %d); load %.1f",
		e.Prefix, cfg.PortRate, cfg.PortRate, cfg.PortBuffer, total, strings.Join(cfg.Arms, ","), strings.Join(cfg.Transports, ","), cfg.Runs, bed.LoadAvg())
	return res, fabricExpRuns(ctx, e, "cells incast", &res.fabricResult, res.summarize, start, topo, cfg.MTU, cfg.Runs, cfg.Arms, cfg.Transports, cfg.RunArgs, [][2]string{{"h1", "10.0.0.3"}, {"h2", "10.0.0.3"}},
		func(f *CellsFabric, arm, tr string, run int) (*CellsIncastRun, error) {
			return incastOnce(ctx, e, f, cfg, arm, tr, run, res)
		})
}

func (r *CellsIncastRun) line() string {
	return fmt.Sprintf("port busy %.3f (lost to e3 late %.3f), shares %s (dev %.3f); drops: %s; max worker gap %.0f ms, node clocks stalled %s; e3 credits %d, held at the window %d, at a share %d, passed late %d, waited for a window %d, loop %.2f ms",
		r.PortBusy, r.PortLate, joinFloats(r.Shares, 1, "%.3f", "/"), r.ShareDev, r.Drops, r.MaxPollGapMs, fmtStalled(r.StalledMs),
		r.Credit.Credits, r.Credit.WindowFull, r.Credit.ShareFull, r.Credit.LateFull, r.Credit.WaitedFor, r.Credit.RTTMs)
}

func incastOnce(ctx context.Context, e *bed.Env, f *CellsFabric, cfg CellsIncastConfig, arm, tr string, run int, res *CellsIncastResult) (*CellsIncastRun, error) {
	r := &CellsIncastRun{Arm: arm, Transport: tr, Run: run, Load1: bed.LoadAvg()}
	before, err := f.Stats(ctx)
	if err != nil {
		return nil, err
	}
	rate := float64(cfg.PortRate)
	var udpSpan int64
	switch tr {
	case "udp":
		flows := []bed.UDPFlow{
			{Name: "h1", From: e.NS("h1"), To: "10.0.0.3:5301", Rate: rate, Payload: cfg.Payload, Bytes: cfg.Burst},
			{Name: "h2", From: e.NS("h2"), To: "10.0.0.3:5301", Rate: rate, Payload: cfg.Payload, Bytes: cfg.Burst},
		}
		// Both bursts leave in Burst/rate; the port needs twice that.
		drain := time.Duration(float64(2*cfg.Burst*8)/rate*float64(time.Second)) + 3*time.Second
		u, err := bed.RunUDPFlows(ctx, map[string]string{e.NS("h3a"): ":5301"}, flows, 300*time.Millisecond, drain)
		if err != nil {
			return nil, err
		}
		arr := u.Arrivals[e.NS("h3a")]
		r.Rcvbuf = u.Rcvbuf
		for i, fl := range flows {
			r.Flows = append(r.Flows, bed.FlowStats(arr, uint32(i), fl.Name, u.Sent[i], u.T0))
		}
		first, last := bed.ArrivalSpan(arr, 3)
		if last <= first {
			return nil, fmt.Errorf("h3a received %d datagrams: too few to measure", len(arr))
		}
		span := last - first
		udpSpan = span
		r.PortBusySpan = bed.WireBits(arr, 3, first, last) / rate / (float64(span) / 1e9)
		a, b := first+int64(cfg.Trim*float64(span)), last-int64(cfg.Trim*float64(span))
		r.PortBusy = bed.WireBits(arr, 3, a, b) / rate / (float64(b-a) / 1e9)
		r.Shares = []float64{bed.WireBits(arr, 1, a, b), bed.WireBits(arr, 2, a, b)}
		res.addSeries(arm, tr, run, arr, flows, u.T0)
	case "tcp":
		var samples [2]portSample
		var serr error
		var extra []string
		if cfg.CC != "" {
			extra = append(extra, "-C", cfg.CC)
		}
		pairs := [][4]string{{e.NS("h1"), e.NS("h3a"), "10.0.0.3", "5201"}, {e.NS("h2"), e.NS("h3a"), "10.0.0.3", "5202"}}
		out, err := bed.RunIperfPairs(ctx, pairs, cfg.Duration, extra, func(i int) {
			s, err := samplePort(ctx, e.NS("e3"), "host0")
			samples[i], serr = s, errors.Join(serr, err)
		})
		if err != nil {
			return nil, err
		}
		if serr != nil {
			return nil, serr
		}
		bits, secs := wireBitsBetween(samples[0], samples[1])
		r.PortBusy = bits / rate / secs
		r.PortLate = float64(samples[1].lateNs-samples[0].lateNs) / 1e9 / secs
		for _, o := range out {
			r.TCPBps = append(r.TCPBps, o.Bps)
			r.TCPRetrans = append(r.TCPRetrans, o.Retransmits)
			r.Shares = append(r.Shares, o.Bytes)
		}
		time.Sleep(200 * time.Millisecond) // the last grants' cells arrive
	}
	if err := f.Alive(); err != nil {
		return nil, err
	}
	after, err := f.Stats(ctx)
	if err != nil {
		return nil, err
	}
	r.Drops, r.DropsByNode, r.MaxPollGapMs = cellsDropsAll(before, after)
	r.StalledMs = cellsStalled(before, after)
	if b, a := before["e3"], after["e3"]; b != nil && a != nil && len(b.Cells.Hosts) > 0 && len(a.Cells.Hosts) > 0 {
		hb, ha := b.Cells.Hosts[0], a.Cells.Hosts[0]
		r.Credit.Credits, r.Credit.WindowFull, r.Credit.ShareFull = ha.Credits-hb.Credits, ha.WindowFull-hb.WindowFull, ha.ShareFull-hb.ShareFull
		r.Credit.LateFull, r.Credit.WaitedFor = ha.LateFull-hb.LateFull, ha.WaitedFor-hb.WaitedFor
		r.Credit.RTTMs = float64(ha.RTT) / 1e6
	}
	if udpSpan > 0 && before["e3"] != nil && after["e3"] != nil {
		late := after["e3"].Port("host0").Egress.LateNs - before["e3"].Port("host0").Egress.LateNs
		r.PortLate = float64(late) / float64(udpSpan)
	}
	r.FabricDrops = r.Drops.Fabric()
	r.ShareDev = bed.ShareDeviation(r.Shares)
	var sum float64
	for _, s := range r.Shares {
		sum += s
	}
	for i := range r.Shares {
		r.Shares[i] = report.Ratio(r.Shares[i], sum)
	}
	return r, nil
}

// cellsMedian is the median of fig over the runs of arm and transport.
func cellsMedian[R any](runs []R, keep func(R) bool, fig func(R) float64) float64 {
	var v []float64
	for _, r := range runs {
		if keep(r) {
			v = append(v, fig(r))
		}
	}
	return report.Median(v)
}

func (res *CellsIncastResult) summarize() {
	s := map[string]any{}
	var failed []string
	for _, arm := range res.Config.Arms {
		for _, tr := range res.Config.Transports {
			keep := func(r *CellsIncastRun) bool { return r.Arm == arm && r.Transport == tr }
			k := arm + "_" + tr + "_"
			busy := cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 { return r.PortBusy })
			dev := cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 { return r.ShareDev })
			fab := cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 { return float64(r.FabricDrops) })
			egr := cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 { return float64(r.Drops.Egress) })
			s[k+"port_busy"], s[k+"share_dev"], s[k+"fabric_drops"], s[k+"egress_drops"] = busy, dev, fab, egr
			s[k+"voq_drops"] = cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 { return float64(r.Drops.VOQ) })
			if tr == "tcp" {
				s[k+"retransmits"] = cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 {
					n := 0
					for _, x := range r.TCPRetrans {
						n += x
					}
					return float64(n)
				})
			} else {
				s[k+"lost"] = cellsMedian(res.Runs, keep, func(r *CellsIncastRun) float64 {
					var n uint64
					for _, f := range r.Flows {
						n += f.Lost
					}
					return float64(n)
				})
			}
			if arm != "credits" {
				continue
			}
			for _, c := range []struct {
				name string
				ok   bool
			}{
				{k + "fabric_drops = 0", fab == 0}, {k + "egress_drops = 0", egr == 0},
				{k + "port_busy ≥ 0.95", busy >= 0.95}, {k + "share_dev ≤ 0.05", dev <= 0.05},
			} {
				if !c.ok {
					failed = append(failed, c.name)
				}
			}
		}
	}
	res.Summary = report.Verdict(s, failed)
}

// Text renders the result: per run, then the medians.
func (res *CellsIncastResult) Text() string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "linkfabric cells incast: fabric3, h1 (e1) and h2 (e2) → h3a (e3 host0 at %s, %s buffer), each at the port's rate; UDP bursts of %s per source, TCP for %v; kernel %s, %d CPUs; %.0fs in all\n\n",
		c.PortRate, c.PortBuffer, netns.ByteSize(c.Burst), c.Duration, res.Kernel, res.CPUs, res.Seconds)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\ttransport\trun\tport busy\tshares h1/h2\tdev\tfabric drops\t(link\tvoq\treasm\tother)\tegress drops\tingress drops\tlost / retrans\tmax gap ms\tload\t")
	for _, r := range res.Runs {
		lost := 0
		for _, f := range r.Flows {
			lost += int(f.Lost)
		}
		for _, x := range r.TCPRetrans {
			lost += x
		}
		d := r.Drops
		fmt.Fprintf(w, "%s\t%s\t%d\t%.3f\t%s\t%.3f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.1f\t\n", r.Arm, r.Transport, r.Run, r.PortBusy, joinFloats(r.Shares, 1, "%.3f", "/"), r.ShareDev,
			r.FabricDrops, d.Link, d.VOQ, d.Reasm, d.Other, d.Egress, d.Ingress, lost, r.MaxPollGapMs, r.Load1)
	}
	w.Flush()
	fmt.Fprintf(&b, "\nmedians over %d run(s):\n", c.Runs)
	w = report.NewTable(&b)
	fmt.Fprintln(w, "arm\ttransport\tport busy\tshare dev\tfabric drops\tvoq drops\tegress drops\t")
	s := res.Summary
	for _, arm := range c.Arms {
		for _, tr := range c.Transports {
			k := arm + "_" + tr + "_"
			fmt.Fprintf(w, "%s\t%s\t%.3f\t%.3f\t%.0f\t%.0f\t%.0f\t\n", arm, tr, s[k+"port_busy"], s[k+"share_dev"], s[k+"fabric_drops"], s[k+"voq_drops"], s[k+"egress_drops"])
		}
	}
	w.Flush()
	fmt.Fprintln(&b, "\nport busy: the port's wire bits over its rate, over the delivery period less 10 % at each end (UDP: h3a's receive times; TCP: e3's counters at 20 % and 90 %).")
	fmt.Fprintln(&b, "fabric drops: every node's link ports (egress queue, TX and RX rings), VOQs, reassembly discards, cells without route or hop; egress: h3a's port; ingress: the sources' host ports' RX rings.")
	if f, _ := s["failed"].([]string); len(f) > 0 {
		fmt.Fprintf(&b, "\ncredits arm out of target: %s\n", strings.Join(f, "; "))
	} else if slices.Contains(c.Arms, "credits") {
		fmt.Fprintln(&b, "\ncredits arm: zero fabric and egress drops, port busy ≥ 0.95, shares within 5 % of fair")
	}
	return b.String()
}

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
