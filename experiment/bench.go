package experiment

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// BenchConfig sizes `linkfabric bench`.
type BenchConfig struct {
	Runs      int           `json:"runs"`       // runs per arm; medians are reported
	Duration  time.Duration `json:"duration"`   // per measurement
	FrameSize int           `json:"frame_size"` // generator frame size (no FCS)
	MTU       int           `json:"mtu"`        // host MTU
	BusyPoll  bool          `json:"busy_poll"`  // add an arm with the dataplane busy-polling
}

// BenchSample is one run of one arm.
type BenchSample struct {
	TCPGbps     float64 `json:"tcp_gbps"`
	TCPRetrans  float64 `json:"tcp_retransmits"`
	FramesPerS  float64 `json:"frames_per_s"`
	OfferedPerS float64 `json:"offered_frames_per_s"`
	LatP50us    float64 `json:"latency_p50_us"`
	LatP99us    float64 `json:"latency_p99_us"`
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
	Kernel string      `json:"kernel"`
	CPUs   int         `json:"cpus"`
	Date   time.Time   `json:"date"`
	Arms   []*BenchArm `json:"arms"`
}

type benchArm struct {
	name, what string
	fw         string
	dpArgs     []string // nil: no dataplane
}

// Bench measures the Linux bridge and the dataplane in forward mode on one
// testbed, interleaving the arms in every run so that drift hits all alike.
func (e *Env) Bench(ctx context.Context, cfg BenchConfig) (*BenchResult, error) {
	if err := e.defaults(); err != nil {
		return nil, err
	}
	if cfg.Runs <= 0 {
		cfg.Runs = 3
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.FrameSize <= 0 {
		cfg.FrameSize = 60
	}
	arms := []benchArm{
		{name: "bridge", what: "Linux bridge in sw1 and sw2", fw: netns.ForwardingKernel},
		{name: "forward", what: "linkfabric forward mode, poll()", fw: netns.ForwardingNone, dpArgs: []string{}},
	}
	if cfg.BusyPoll {
		arms = append(arms, benchArm{name: "forward-busy", what: "linkfabric forward mode, busy poll",
			fw: netns.ForwardingNone, dpArgs: []string{"--busy-poll"}})
	}
	e.progress("bench: pair testbed %q (host MTU %d, TX checksum offload off on every veth end, same for all arms)", e.Prefix, max(cfg.MTU, netns.DefaultMTU))
	tb, err := e.Up(netns.ForwardingKernel, cfg.MTU)
	if err != nil {
		return nil, err
	}
	defer tb.Down()

	res := &BenchResult{Config: cfg, Kernel: kernel(), CPUs: runtime.NumCPU(), Date: time.Now().UTC()}
	for _, a := range arms {
		res.Arms = append(res.Arms, &BenchArm{Name: a.name, What: a.what})
	}
	total := cfg.Runs * len(arms)
	step := 0
	for run := 0; run < cfg.Runs; run++ {
		for i, a := range arms {
			step++
			e.progress("bench: [%d/%d] run %d, %s", step, total, run+1, a.name)
			s, err := e.benchOnce(ctx, tb, a, cfg)
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
	for _, a := range res.Arms {
		m := a.Median
		a.Ratio = BenchSample{
			TCPGbps: ratio(m.TCPGbps, base.TCPGbps), TCPRetrans: ratio(m.TCPRetrans, base.TCPRetrans),
			FramesPerS: ratio(m.FramesPerS, base.FramesPerS), OfferedPerS: ratio(m.OfferedPerS, base.OfferedPerS),
			LatP50us: ratio(m.LatP50us, base.LatP50us), LatP99us: ratio(m.LatP99us, base.LatP99us),
		}
	}
	return res, nil
}

func (e *Env) benchOnce(ctx context.Context, tb *netns.Testbed, a benchArm, cfg BenchConfig) (BenchSample, error) {
	if err := tb.SetForwarding(a.fw); err != nil {
		return BenchSample{}, err
	}
	if a.dpArgs != nil {
		dp, err := e.StartDataplanes(ctx, "forward", append([]string{"--metrics", ""}, a.dpArgs...)...)
		if err != nil {
			return BenchSample{}, err
		}
		defer dp.Stop()
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := netns.WaitPing(wctx, e.NS("h1"), H2Addr)
	cancel()
	if err != nil {
		return BenchSample{}, fmt.Errorf("h1 cannot reach h2 through %s: %w", a.name, err)
	}
	var s BenchSample
	ip, err := e.Iperf3(ctx, cfg.Duration)
	if err != nil {
		return s, err
	}
	s.TCPGbps, s.TCPRetrans = ip.Gbps, float64(ip.Retransmits)
	if s.FramesPerS, s.OfferedPerS, err = e.FrameRate(ctx, cfg.FrameSize, min(cfg.Duration, 3*time.Second)); err != nil {
		return s, err
	}
	lat, err := e.Sockperf(ctx, min(cfg.Duration, 3*time.Second))
	if err != nil {
		return s, err
	}
	s.LatP50us, s.LatP99us = lat.P50, lat.P99
	e.progress("bench:   tcp %.2f Gbit/s (%d retrans)  %s frames/s delivered of %s offered  latency p50 %.1f µs p99 %.1f µs",
		s.TCPGbps, ip.Retransmits, si(s.FramesPerS), si(s.OfferedPerS), s.LatP50us, s.LatP99us)
	return s, nil
}

func medianSample(ss []BenchSample) BenchSample {
	pick := func(f func(BenchSample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		return Median(v)
	}
	return BenchSample{
		TCPGbps:     pick(func(s BenchSample) float64 { return s.TCPGbps }),
		TCPRetrans:  pick(func(s BenchSample) float64 { return s.TCPRetrans }),
		FramesPerS:  pick(func(s BenchSample) float64 { return s.FramesPerS }),
		OfferedPerS: pick(func(s BenchSample) float64 { return s.OfferedPerS }),
		LatP50us:    pick(func(s BenchSample) float64 { return s.LatP50us }),
		LatP99us:    pick(func(s BenchSample) float64 { return s.LatP99us }),
	}
}

// Median of v (the mean of the middle two for an even count); v is reordered.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
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

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Table renders the result for people.
func (r *BenchResult) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "linkfabric bench: h1 — sw1 — sw2 — h2, %d runs per arm, medians; kernel %s, %d CPUs\n\n", r.Config.Runs, r.Kernel, r.CPUs)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "arm\tTCP Gbit/s\t×bridge\t64B frames/s\t×bridge\tp50 µs\t×bridge\tp99 µs\t×bridge\tTCP retrans\t")
	for _, a := range r.Arms {
		m, q := a.Median, a.Ratio
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%s\t%.2f\t%.1f\t%.2f\t%.1f\t%.2f\t%.0f\t\n",
			a.Name, m.TCPGbps, q.TCPGbps, si(m.FramesPerS), q.FramesPerS, m.LatP50us, q.LatP50us, m.LatP99us, q.LatP99us, m.TCPRetrans)
	}
	w.Flush()
	fmt.Fprintln(&b, "\nlatency: sockperf UDP ping-pong, 64-byte messages, one-way (RTT/2). frames: 60-byte frames (64 on a wire with FCS)")
	fmt.Fprintln(&b, "from an AF_XDP generator in h1, counted by h2's eth0; the generator shares the two CPUs.")
	return b.String()
}

// WriteJSON writes v as indented JSON to path, creating its directory.
func WriteJSON(path string, v any) error {
	if i := strings.LastIndex(path, "/"); i > 0 {
		if err := os.MkdirAll(path[:i], 0o755); err != nil {
			return err
		}
	}
	b, err := jsonIndent(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
