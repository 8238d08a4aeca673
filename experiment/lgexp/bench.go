package lgexp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// BenchConfig sizes `linkfabric bench`.
type BenchConfig struct {
	Runs      int           `json:"runs"`       // runs per arm; medians are reported
	Duration  time.Duration `json:"duration"`   // per measurement
	FrameSize int           `json:"frame_size"` // generator frame size (no FCS)
	MTU       int           `json:"mtu"`        // host MTU
	BusyPoll  bool          `json:"busy_poll"`  // add an arm with the dataplane busy-polling
	// NoWakeupArm adds forward-afxdp-nowakeup: the AF_XDP arm with its
	// sockets bound without XDP_USE_NEED_WAKEUP, beside forward-afxdp
	// (need_wakeup on, run's default).
	NoWakeupArm bool `json:"no_wakeup_arm"`
}

// BenchSample is one run of one arm (as BenchArm.Ratio: each figure over
// the bridge's, so there TCPBps is a ratio).
type BenchSample struct {
	TCPBps      float64 `json:"tcp_bps"` // bit/s
	TCPRetrans  float64 `json:"tcp_retransmits"`
	FramesPerS  float64 `json:"frames_per_s"`
	OfferedPerS float64 `json:"offered_frames_per_s"`
	LatP50us    float64 `json:"latency_p50_us"`
	LatP99us    float64 `json:"latency_p99_us"`
	// KernelShare is the share of the frames sw1 and sw2 took from their
	// ports that the XDP fast path carried (the forward-xdp arm).
	KernelShare float64 `json:"kernel_path_share,omitempty"`
}

// BenchArm is one forwarding path's samples and their medians.
type BenchArm struct {
	Name    string        `json:"name"`
	What    string        `json:"what"`
	Samples []BenchSample `json:"samples"`
	Median  BenchSample   `json:"median"`
	// Ratio is each median divided by the bridge's (1 for the bridge).
	Ratio BenchSample `json:"ratio_to_bridge"`
}

// BenchResult is what `linkfabric bench` reports.
type BenchResult struct {
	Config BenchConfig `json:"config"`
	report.RunInfo
	// LoadAvg is /proc/loadavg's 1-minute figure at the start and the end:
	// other work on the machine moves every arm's figures.
	LoadAvg [2]float64   `json:"load_average_1m"`
	Arms    []*BenchArm  `json:"arms"`
	Summary BenchSummary `json:"summary"`
}

// BenchWakeup is forward-afxdp (need_wakeup on) against
// forward-afxdp-nowakeup (off): each median on ÷ off. Above 1 is better
// for TCP and frames, below 1 for latency.
type BenchWakeup struct {
	TCPRatio    float64 `json:"tcp_ratio"`
	FramesRatio float64 `json:"frames_ratio"`
	LatP50Ratio float64 `json:"latency_p50_ratio"`
	LatP99Ratio float64 `json:"latency_p99_ratio"`
}

// BenchSummary is the XDP forward arm against the bridge, with the targets
// of forward mode's fast path: TCP and 60-byte frames ≥ 1.0× the bridge,
// latency p50 ≤ 1.3×.
type BenchSummary struct {
	Arm          string  `json:"arm"`
	TCPRatio     float64 `json:"tcp_ratio"`
	FramesRatio  float64 `json:"frames_ratio"`
	LatP50Ratio  float64 `json:"latency_p50_ratio"`
	MeetsTargets bool    `json:"meets_targets"`
	// NeedWakeup compares the AF_XDP arm with need_wakeup on and off
	// (with --no-wakeup-arm).
	NeedWakeup *BenchWakeup `json:"need_wakeup,omitempty"`
}

type benchArm struct {
	name, what string
	fw         string
	dpArgs     []string // nil: no dataplane
	xdp        bool     // the kernel fast path, checked through the stats endpoint
}

// Bench measures the Linux bridge and the dataplane in forward mode on one
// testbed, interleaving the arms in every run so that drift hits all alike.
func Bench(ctx context.Context, e *bed.Env, cfg BenchConfig) (*BenchResult, error) {
	if err := e.Defaults(); err != nil {
		return nil, err
	}
	cfg.Runs = bed.Positive(cfg.Runs, 3)
	cfg.Duration = bed.Positive(cfg.Duration, 5*time.Second)
	cfg.FrameSize = bed.Positive(cfg.FrameSize, 60)
	arms := []benchArm{
		{name: "bridge", what: "Linux bridge in sw1 and sw2", fw: netns.ForwardingKernel},
		{name: "forward-xdp", what: "linkfabric forward mode, XDP fast path (devmap redirect in the kernel)", fw: netns.ForwardingNone,
			dpArgs: []string{"--fastpath", "xdp"}, xdp: true},
		{name: "forward-afxdp", what: "linkfabric forward mode, AF_XDP path, poll(), need_wakeup on", fw: netns.ForwardingNone,
			dpArgs: []string{"--fastpath", "afxdp", "--metrics", ""}},
	}
	if cfg.NoWakeupArm {
		arms = append(arms, benchArm{name: armNoWakeup, what: "linkfabric forward mode, AF_XDP path, poll(), need_wakeup off (--need-wakeup=false)",
			fw: netns.ForwardingNone, dpArgs: []string{"--fastpath", "afxdp", "--need-wakeup=false", "--metrics", ""}})
	}
	if cfg.BusyPoll {
		arms = append(arms, benchArm{name: "forward-afxdp-busy", what: "linkfabric forward mode, AF_XDP path, busy poll",
			fw: netns.ForwardingNone, dpArgs: []string{"--fastpath", "afxdp", "--busy-poll", "--metrics", ""}})
	}
	e.Printf("bench: pair testbed %q (host MTU %d, TX checksum offload off on every veth end, GRO on at the hosts' ends, same for all arms)", e.Prefix, max(cfg.MTU, netns.DefaultMTU))
	tb, err := e.Up(netns.ForwardingKernel, cfg.MTU)
	if err != nil {
		return nil, err
	}
	defer tb.Down()

	res := &BenchResult{Config: cfg, RunInfo: report.NewRunInfo()}
	res.LoadAvg[0] = bed.LoadAvg()
	for _, a := range arms {
		res.Arms = append(res.Arms, &BenchArm{Name: a.name, What: a.what})
	}
	total := cfg.Runs * len(arms)
	step := 0
	for run := 0; run < cfg.Runs; run++ {
		for i, a := range arms {
			step++
			e.Printf("bench: [%d/%d] run %d, %s", step, total, run+1, a.name)
			s, err := benchOnce(ctx, e, tb, a, cfg)
			if err != nil {
				return nil, fmt.Errorf("bench %s run %d: %w", a.name, run+1, err)
			}
			res.Arms[i].Samples = append(res.Arms[i].Samples, s)
		}
	}
	for _, a := range res.Arms {
		a.Median = medianSample(a.Samples)
	}
	base := res.Arms[0].Median
	var wakeOn, wakeOff *BenchSample
	for _, a := range res.Arms {
		switch a.Name {
		case "forward-afxdp":
			wakeOn = &a.Median
		case armNoWakeup:
			wakeOff = &a.Median
		}
		m := a.Median
		a.Ratio = BenchSample{
			TCPBps: report.Ratio(m.TCPBps, base.TCPBps), TCPRetrans: report.Ratio(m.TCPRetrans, base.TCPRetrans),
			FramesPerS: report.Ratio(m.FramesPerS, base.FramesPerS), OfferedPerS: report.Ratio(m.OfferedPerS, base.OfferedPerS),
			LatP50us: report.Ratio(m.LatP50us, base.LatP50us), LatP99us: report.Ratio(m.LatP99us, base.LatP99us),
		}
		if a.Name == "forward-xdp" {
			q := a.Ratio
			res.Summary = BenchSummary{Arm: a.Name, TCPRatio: q.TCPBps, FramesRatio: q.FramesPerS, LatP50Ratio: q.LatP50us,
				MeetsTargets: q.TCPBps >= 1 && q.FramesPerS >= 1 && q.LatP50us <= 1.3}
		}
	}
	if wakeOn != nil && wakeOff != nil {
		res.Summary.NeedWakeup = &BenchWakeup{TCPRatio: report.Ratio(wakeOn.TCPBps, wakeOff.TCPBps), FramesRatio: report.Ratio(wakeOn.FramesPerS, wakeOff.FramesPerS),
			LatP50Ratio: report.Ratio(wakeOn.LatP50us, wakeOff.LatP50us), LatP99Ratio: report.Ratio(wakeOn.LatP99us, wakeOff.LatP99us)}
	}
	res.LoadAvg[1] = bed.LoadAvg()
	return res, nil
}

// armNoWakeup is the AF_XDP arm without XDP_USE_NEED_WAKEUP.
const armNoWakeup = "forward-afxdp-nowakeup"

func benchOnce(ctx context.Context, e *bed.Env, tb *netns.Testbed, a benchArm, cfg BenchConfig) (BenchSample, error) {
	if err := tb.SetForwarding(a.fw); err != nil {
		return BenchSample{}, err
	}
	if a.dpArgs != nil {
		dp, err := e.StartDataplanes(ctx, "forward", a.dpArgs...)
		if err != nil {
			return BenchSample{}, err
		}
		defer dp.Stop()
	}
	var before [2]fastPathCounts
	if a.xdp {
		var err error
		if before, err = waitFastPath(e, ctx); err != nil {
			return BenchSample{}, err
		}
	}
	err := e.ReachH2(ctx, 10*time.Second)
	if err != nil {
		return BenchSample{}, fmt.Errorf("h1 cannot reach h2 through %s: %w", a.name, err)
	}
	var s BenchSample
	ip, err := e.Iperf3(ctx, cfg.Duration)
	if err != nil {
		return s, err
	}
	s.TCPBps, s.TCPRetrans = ip.Bps, float64(ip.Retransmits)
	if s.FramesPerS, s.OfferedPerS, err = bed.FrameRate(ctx, e, cfg.FrameSize, min(cfg.Duration, 3*time.Second)); err != nil {
		return s, err
	}
	lat, err := bed.Sockperf(ctx, e, min(cfg.Duration, 3*time.Second))
	if err != nil {
		return s, err
	}
	s.LatP50us, s.LatP99us = lat.P50, lat.P99
	kernel := ""
	if a.xdp {
		if s.KernelShare, err = kernelShare(ctx, e, before); err != nil {
			return s, err
		}
		kernel = fmt.Sprintf("  (%.4f of the frames on the XDP fast path)", s.KernelShare)
	}
	e.Printf("bench:   tcp %.2f Gbit/s (%d retrans)  %s frames/s delivered of %s offered  latency p50 %.1f µs p99 %.1f µs%s",
		s.TCPBps/1e9, ip.Retransmits, si(s.FramesPerS), si(s.OfferedPerS), s.LatP50us, s.LatP99us, kernel)
	return s, nil
}

// fastPathCounts is what /stats.json says of a switch's fast path.
type fastPathCounts struct {
	Dataplane struct {
		Ports []struct {
			RX struct{ Frames uint64 } `json:"rx"`
		} `json:"ports"`
		FastPath []struct {
			From, To, Path, Reason string
			Frames                 uint64 `json:"xdp_frames"`
		} `json:"fast_path"`
	} `json:"dataplane"`
}

func (c *fastPathCounts) frames() (rx, kernel uint64) {
	for _, p := range c.Dataplane.Ports {
		rx += p.RX.Frames
	}
	for _, f := range c.Dataplane.FastPath {
		kernel += f.Frames
	}
	return rx, kernel
}

// waitFastPath waits until both directions of sw1 and sw2 take the XDP fast
// path (a switch started before its peer waits on AF_XDP until the peer's
// program takes redirected frames) and returns their counters.
func waitFastPath(e *bed.Env, ctx context.Context) ([2]fastPathCounts, error) {
	var c [2]fastPathCounts
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok := true
		var why []string
		for i, sw := range []string{"sw1", "sw2"} {
			c[i] = fastPathCounts{}
			if err := bed.FetchStats(ctx, e.NS(sw), &c[i]); err != nil {
				return c, err
			}
			fp := c[i].Dataplane.FastPath
			ok = ok && len(fp) == 2
			for _, f := range fp {
				if f.Path != "xdp" {
					ok = false
					why = append(why, fmt.Sprintf("%s %s→%s: %s", sw, f.From, f.To, f.Reason))
				}
			}
		}
		if ok {
			return c, nil
		}
		if time.Now().After(deadline) {
			return c, fmt.Errorf("the XDP fast path is not on both ways after 5 s: %s", strings.Join(why, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kernelShare is the share of the frames sw1 and sw2 received since before
// that the fast path carried.
func kernelShare(ctx context.Context, e *bed.Env, before [2]fastPathCounts) (float64, error) {
	var rx, kernel uint64
	for i, sw := range []string{"sw1", "sw2"} {
		var now fastPathCounts
		if err := bed.FetchStats(ctx, e.NS(sw), &now); err != nil {
			return 0, err
		}
		r1, k1 := now.frames()
		r0, k0 := before[i].frames()
		rx, kernel = rx+r1-r0, kernel+k1-k0
	}
	return report.Ratio(float64(kernel), float64(rx)), nil
}

func medianSample(ss []BenchSample) BenchSample {
	pick := func(f func(BenchSample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		return report.Median(v)
	}
	return BenchSample{
		TCPBps:      pick(func(s BenchSample) float64 { return s.TCPBps }),
		TCPRetrans:  pick(func(s BenchSample) float64 { return s.TCPRetrans }),
		FramesPerS:  pick(func(s BenchSample) float64 { return s.FramesPerS }),
		OfferedPerS: pick(func(s BenchSample) float64 { return s.OfferedPerS }),
		LatP50us:    pick(func(s BenchSample) float64 { return s.LatP50us }),
		LatP99us:    pick(func(s BenchSample) float64 { return s.LatP99us }),
		KernelShare: pick(func(s BenchSample) float64 { return s.KernelShare }),
	}
}

func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Text renders the result for people.
func (r *BenchResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "linkfabric bench: h1 — sw1 — sw2 — h2, host MTU %d, %d runs per arm, medians; kernel %s, %d CPUs, load average %.2f at the start, %.2f at the end\n\n",
		max(r.Config.MTU, netns.DefaultMTU), r.Config.Runs, r.Kernel, r.CPUs, r.LoadAvg[0], r.LoadAvg[1])
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\tTCP Gbit/s\t×bridge\t64B frames/s\t×bridge\tp50 µs\t×bridge\tp99 µs\t×bridge\tTCP retrans\t")
	for _, a := range r.Arms {
		m, q := a.Median, a.Ratio
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%s\t%.2f\t%.1f\t%.2f\t%.1f\t%.2f\t%.0f\t\n",
			a.Name, m.TCPBps/1e9, q.TCPBps, si(m.FramesPerS), q.FramesPerS, m.LatP50us, q.LatP50us, m.LatP99us, q.LatP99us, m.TCPRetrans)
	}
	w.Flush()
	for _, a := range r.Arms {
		if a.Median.KernelShare > 0 {
			fmt.Fprintf(&b, "\n%s: %.4f of the switches' frames took the XDP fast path (median)", a.Name, a.Median.KernelShare)
		}
	}
	if s := r.Summary; s.Arm != "" {
		verdict := "meets"
		if !s.MeetsTargets {
			verdict = "misses"
		}
		fmt.Fprintf(&b, "\n%s ÷ bridge: TCP %.2f×, frames %.2f×, latency p50 %.2f× (%s the targets ≥ 1.0, ≥ 1.0, ≤ 1.3)\n", s.Arm, s.TCPRatio, s.FramesRatio, s.LatP50Ratio, verdict)
	}
	if w := r.Summary.NeedWakeup; w != nil {
		fmt.Fprintf(&b, "need_wakeup on ÷ off (forward-afxdp ÷ %s): TCP %.2f×, frames %.2f×, latency p50 %.2f×, p99 %.2f× (above 1 is better for TCP and frames, below 1 for latency)\n",
			armNoWakeup, w.TCPRatio, w.FramesRatio, w.LatP50Ratio, w.LatP99Ratio)
	}
	fmt.Fprintln(&b, "\nlatency: sockperf UDP ping-pong, 64-byte messages, one-way (RTT/2). frames: 60-byte frames (64 on a wire with FCS)")
	fmt.Fprintln(&b, "from an AF_XDP generator in h1, counted by h2's eth0; the generator shares the two CPUs.")
	return b.String()
}
