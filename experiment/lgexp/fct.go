package lgexp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
)

// FCTArms are the arms `linkfabric fct` knows, in their canonical order.
var FCTArms = []string{"noloss", "noloss-afxdp", "loss", "lg-noloss", "lg-noloss-afxdp", "lg", "lg-afxdp", "lgnb", "kernel"}

// DefaultFCTArms are the arms run when none are given.
var DefaultFCTArms = []string{"noloss", "loss", "lg", "lgnb"}

var fctArmWhat = map[string]string{
	"noloss":          "linkfabric forward (kernel fast path where possible), loss 0 (the reference)",
	"noloss-afxdp":    "linkfabric forward --fastpath afxdp (through the Go worker), loss 0",
	"lg-noloss":       "linkfabric lg (LinkGuardian, in order; its default path: the kernel's where it can), loss 0",
	"lg-noloss-afxdp": "linkfabric lg --fastpath afxdp (LinkGuardian in the Go worker), loss 0",
	"lg-afxdp":        "linkfabric lg --fastpath afxdp (LinkGuardian in the Go worker), lossy link",
	"loss":            "linkfabric forward, lossy link (unprotected)",
	"lg":              "linkfabric lg (LinkGuardian, in order; its default path: the kernel's where it can), lossy link",
	"lgnb":            "linkfabric lgnb (LinkGuardianNB, no reordering), lossy link",
	"kernel":          "Linux bridge in sw1 and sw2, no impairment",
}

// FCTConfig sizes `linkfabric fct`.
type FCTConfig struct {
	Sizes []int64 `json:"sizes"` // flow sizes in bytes, run one after the other
	// Flows per arm: one count for every size, or one per size.
	Flows []int    `json:"flows"`
	Loss  float64  `json:"loss"`            // loss rate on sw1→sw2 for loss, lg, lgnb
	Burst float64  `json:"burst,omitempty"` // mean loss burst (Gilbert-Elliott); 0 = Bernoulli
	Seed  uint64   `json:"seed"`
	CC    string   `json:"cc"`   // congestion control; "" = dctcp if the kernel has it, else cubic
	Arms  []string `json:"arms"` // from FCTArms
	Tool  string   `json:"tool"` // builtin or iperf
	// Warmup flows per size and arm, discarded (builtin only).
	Warmup int `json:"warmup"`
	// Timeout per flow; a flow not complete by then counts as failed.
	Timeout time.Duration `json:"flow_timeout"`
	// LinkQueues is the sw1–sw2 link's queue count (0: the pair preset's 1);
	// the command gives it to Env.LinkQueues.
	LinkQueues int `json:"link_queues,omitempty"`
	// RunArgs are extra `linkfabric run` arguments for lg and lgnb (after
	// --lg-link-loss LOSS, which they may override).
	RunArgs []string `json:"run_args,omitempty"`
	MTU     int      `json:"mtu,omitempty"` // host MTU (default 1500)
	// Rounds splits each arm's flows into this many rounds, the arms
	// interleaved (their order reversed every other round), so that a
	// machine whose speed drifts over the minutes weighs on every arm alike,
	// and each round gives its own ratios (0 or 1: every arm once).
	Rounds int `json:"rounds,omitempty"`
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *FCTConfig) Normalize() error {
	if len(c.Sizes) == 0 {
		c.Sizes = []int64{143}
	}
	if len(c.Flows) == 0 {
		c.Flows = []int{10000}
	}
	if err := c.mix().Check(); err != nil {
		return fmt.Errorf("fct: %w", err)
	}
	c.Rounds = bed.Positive(c.Rounds, 1)
	for _, n := range c.Flows {
		if n <= 0 {
			return fmt.Errorf("fct: flow count %d: must be positive", n)
		}
		if n < c.Rounds {
			return fmt.Errorf("fct: %d flows cannot be split into %d rounds: give more flows or fewer rounds", n, c.Rounds)
		}
	}
	if err := bed.NormalizeArms("fct", &c.Arms, DefaultFCTArms, FCTArms); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, a := range c.Arms {
		if seen[a] {
			return fmt.Errorf("fct: arm %q given twice", a)
		}
		seen[a] = true
	}
	c.Tool = cmp.Or(c.Tool, "builtin")
	switch c.Tool {
	case "builtin":
		for _, s := range c.Sizes {
			if s < fct.HeaderSize {
				return fmt.Errorf("fct: size %d B is below the builtin tool's %d B minimum", s, fct.HeaderSize)
			}
		}
	case "iperf":
		for _, s := range c.Sizes {
			if s < 100 {
				return fmt.Errorf("fct: size %d B is too small for iperf 2 (its test header alone is ~60 B)", s)
			}
		}
	default:
		return fmt.Errorf("fct: unknown tool %q (builtin or iperf)", c.Tool)
	}
	if math.IsNaN(c.Loss) || c.Loss < 0 || c.Loss >= 1 {
		return fmt.Errorf("fct: loss %v: want a rate in [0, 1)", c.Loss)
	}
	if c.Burst != 0 && c.Burst < 1 {
		return fmt.Errorf("fct: mean burst %v: want >= 1 (or 0 for Bernoulli loss)", c.Burst)
	}
	c.Seed = cmp.Or(c.Seed, 1)
	if c.Warmup < 0 {
		c.Warmup = 0
	}
	c.Timeout = bed.Positive(c.Timeout, 10*time.Second)
	_, err := c.impairment()
	return err
}

// FlowsFor is the flow count of size index i.
func (c *FCTConfig) FlowsFor(i int) int { return c.mix().For(i) }

func (c *FCTConfig) mix() fct.Mix { return fct.Mix{Sizes: c.Sizes, Flows: c.Flows} }

// round is the configuration of round r (from 0) of c.Rounds: each size's
// flows split as evenly as they go, the impairment seed advanced by r so
// that the rounds do not repeat one loss pattern.
func (c *FCTConfig) round(r int) FCTConfig {
	rc := *c
	rc.Flows = make([]int, len(c.Sizes))
	for i := range c.Sizes {
		n := c.FlowsFor(i)
		rc.Flows[i] = n / c.Rounds
		if r < n%c.Rounds {
			rc.Flows[i]++
		}
	}
	rc.Seed = c.Seed + uint64(r)
	rc.Rounds = 1
	return rc
}

// roundOrder is the order of the arms (or cells) in round r: as given in
// even rounds, reversed in odd ones.
func roundOrder[T any](arms []T, r int) []T {
	if r%2 == 0 {
		return arms
	}
	rev := slices.Clone(arms)
	slices.Reverse(rev)
	return rev
}

func (c *FCTConfig) impairment() (bpf.ImpairConfig, error) {
	imp := bpf.Loss(c.Loss, c.Burst, c.Seed)
	return imp, imp.Validate()
}

// FCTArm is one arm's context: time taken, the loss the impairment really
// applied, and the dataplane's recovery counters.
type FCTArm struct {
	Name    string  `json:"name"`
	What    string  `json:"what"`
	Seconds float64 `json:"seconds"` // wall time of the arm's flows
	// Impairment while the flows ran. Zero for kernel (no impairment
	// stage).
	linkImpair
	// lg/lgnb: sw2's receiver, sw1's sender.
	LostDetected   uint64  `json:"lost_detected,omitempty"`
	Recovered      uint64  `json:"recovered,omitempty"`
	AckNoTimeouts  uint64  `json:"ack_no_timeouts,omitempty"`
	Copies         int64   `json:"copies,omitempty"`
	RetxCopies     uint64  `json:"retx_copies,omitempty"`
	RetxDelayP99us float64 `json:"retx_delay_p99_us,omitempty"`
	// KernelSent and KernelDelivered (lg, lgnb) are the shares of the data
	// frames sw1's kernel numbered and sent, and of the frames sw2's kernel
	// delivered to h2: which path LinkGuardian took (0 on the worker path).
	KernelSent      float64 `json:"kernel_sent"`
	KernelDelivered float64 `json:"kernel_delivered"`
	// sent, fastSent, delivered, fastDelivered are the counts behind them.
	sent, fastSent, delivered, fastDelivered uint64
	// iperf tool: tcpdump's dropped packets (-1 unknown), summed over sizes.
	CaptureDropped int `json:"capture_dropped,omitempty"`
	// Control: link frames and worker wakeups per data frame (not kernel).
	Control FCTControl `json:"control"`
}

// linkImpair is what the impairment stage at sw2's link0 (sw1→sw2) saw
// and dropped.
type linkImpair struct {
	FramesSeen    uint64  `json:"frames_seen"`
	FramesDropped uint64  `json:"frames_dropped"`
	ActualLoss    float64 `json:"actual_loss_rate"`
}

// read sets l to the stage's counters.
func (l *linkImpair) read(e *bed.Env) error {
	st, err := bed.ImpairStatsOf(e, "sw2", "link0")
	l.set(st.Seen, st.Dropped)
	return err
}

// add folds o, counted over another period, into l.
func (l *linkImpair) add(o linkImpair) {
	l.set(l.FramesSeen+o.FramesSeen, l.FramesDropped+o.FramesDropped)
}

func (l *linkImpair) set(seen, dropped uint64) {
	l.FramesSeen, l.FramesDropped = seen, dropped
	l.ActualLoss = report.Ratio(float64(dropped), float64(seen))
}

// FCTResult is what `linkfabric fct` reports. Flows are written to CSV,
// not JSON.
type FCTResult struct {
	Config FCTConfig `json:"config"`
	report.RunInfo
	CC         string      `json:"congestion_control"`
	Impairment string      `json:"impairment"`
	Seconds    float64     `json:"seconds"` // the whole experiment, testbed included
	Arms       []*FCTArm   `json:"arms"`
	FCT        fct.Results `json:"fct"` // summaries, ratios to noloss, TCP settings read back
	// Rounds: with Config.Rounds > 1, each round's own summaries (the
	// pooled ones are in FCT), from which the table gives per-round ratios.
	Rounds [][]fct.Summary `json:"rounds,omitempty"`
	// RoundRatios: LinkGuardian's costs (as the table's last lines) round
	// by round, with their medians.
	RoundRatios []FCTRoundRatio `json:"round_ratios,omitempty"`
	// Summary: over all flows, per size the ratios the table ends with,
	// <size>_<stat>_<arm>_over_<ref> (e.g. 143B_p99.9_lg_over_noloss): the
	// headline's lg and lgnb against noloss and loss against them, and
	// LinkGuardian's own costs (lgComparisons); those whose arms did not
	// run or completed no flow are left out.
	Summary map[string]any `json:"summary"`
	Flows   []fct.Flow     `json:"-"`
}

// summaryComparisons are the ratios of FCTResult.Summary at size.
func summaryComparisons(size int64) []fctComparison {
	var out []fctComparison
	for _, arm := range []string{"lg", "lgnb"} {
		out = append(out, fctComparison{size, "p99.9", arm, "noloss"}, fctComparison{size, "p99.9", "loss", arm})
	}
	return append(append(out, fctComparison{size, "p99.9", "loss", "noloss"}), lgComparisons(size)...)
}

func (r *FCTResult) summarize() {
	s := map[string]any{}
	for _, size := range r.Config.Sizes {
		for _, c := range summaryComparisons(size) {
			if v, ok := c.in(r.FCT.Summaries); ok {
				s[fmt.Sprintf("%s_%s_%s_over_%s", fct.FormatSize(size), c.Stat, c.Arm, c.Ref)] = v
			}
		}
	}
	r.Summary = s
}

// FCT runs the flow-completion-time experiment on a fresh pair testbed: for
// each arm in turn, short TCP flows from h1 to h2, one connection each.
func FCT(ctx context.Context, e *bed.Env, cfg FCTConfig) (*FCTResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	imp, _ := cfg.impairment()
	cc, err := bed.ResolveCC(cfg.CC)
	if err != nil {
		return nil, err
	}
	if cfg.Tool == "iperf" {
		if err := checkIperf2(); err != nil {
			return nil, err
		}
	}
	res := &FCTResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc, Impairment: imp.String()}
	if cfg.Loss == 0 {
		res.Impairment = "none (loss 0)"
	}

	e.Printf("fct: pair testbed %q; arms %s; %s flows per arm in %d round(s) (%s tool, %s); loss %s on sw1→sw2",
		e.Prefix, strings.Join(cfg.Arms, ","), cfg.mix(), cfg.Rounds, cfg.Tool, cc, res.Impairment)
	tb, err := e.Up(netns.ForwardingNone, cfg.MTU)
	if err != nil {
		return nil, err
	}
	defer tb.Down()

	reports, err := bed.PaperTCP(e, cc)
	if err != nil {
		return nil, err
	}
	e.Printf("fct: TCP %s", tcpSummary(reports[0]))

	byArm := map[string]*FCTArm{}
	var flows []fct.Flow
	step, steps := 0, cfg.Rounds*len(cfg.Arms)
	for r := range cfg.Rounds {
		rc := cfg.round(r)
		var roundFlows []fct.Flow
		for _, arm := range roundOrder(cfg.Arms, r) {
			step++
			if cfg.Rounds > 1 {
				e.Printf("fct: [%d/%d] round %d/%d, %s: %s", step, steps, r+1, cfg.Rounds, arm, fctArmWhat[arm])
			} else {
				e.Printf("fct: [%d/%d] %s: %s", step, steps, arm, fctArmWhat[arm])
			}
			a, fl, err := fctArm(ctx, e, tb, arm, rc, cc)
			if err != nil {
				return nil, fmt.Errorf("fct %s: %w", arm, err)
			}
			if t := byArm[arm]; t != nil {
				t.add(a)
			} else {
				byArm[arm] = a
			}
			roundFlows = append(roundFlows, fl...)
			for _, s := range fct.Summarize(fl) {
				e.Printf("fct:   %s %s: %d flows (%d failed), p50 %s p99 %s p99.9 %s max %s µs; %d with a TCP retransmission",
					arm, fct.FormatSize(s.Size), s.Count, s.Failed, report.Micros(s.P50), report.Micros(s.P99), report.Micros(s.P999), report.Micros(s.Max), s.Retransmitted)
			}
			e.Printf("fct:   %s: %.1fs; %s", arm, a.Seconds, a.lossNote())
		}
		if cfg.Rounds > 1 {
			res.Rounds = append(res.Rounds, fct.Summarize(roundFlows))
		}
		flows = append(flows, roundFlows...)
	}
	for _, arm := range cfg.Arms {
		res.Arms = append(res.Arms, byArm[arm])
	}
	if cfg.Rounds > 1 {
		// Each run numbered its flows from 0: number them across the rounds.
		type armSize struct {
			arm  string
			size int64
		}
		next := map[armSize]int{}
		for k := range flows {
			as := armSize{flows[k].Arm, flows[k].Size}
			flows[k].ID = next[as]
			next[as]++
		}
	}
	ref := fct.DefaultReference
	if !slices.Contains(cfg.Arms, ref) {
		ref = cfg.Arms[0]
	}
	res.Flows = flows
	res.FCT = fct.NewResults(flows, ref)
	res.FCT.Settings = reports
	res.FCT.Meta = map[string]string{
		"tool": cfg.Tool, "congestion_control": cc, "impairment": res.Impairment,
		"direction": "h1 → h2 (data crosses sw1→sw2, the impaired direction)",
	}
	res.RoundRatios = res.roundRatios()
	res.summarize()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func fctArm(ctx context.Context, e *bed.Env, tb *netns.Testbed, arm string, cfg FCTConfig, cc string) (*FCTArm, []fct.Flow, error) {
	a := &FCTArm{Name: arm, What: fctArmWhat[arm]}
	fw := netns.ForwardingNone
	if arm == "kernel" {
		fw = netns.ForwardingKernel
	}
	if tb.Forwarding != fw {
		if err := tb.SetForwarding(fw); err != nil {
			return nil, nil, err
		}
	}
	var dp *bed.Dataplanes
	lossless := arm == "noloss" || arm == "noloss-afxdp" || strings.HasPrefix(arm, "lg-noloss") || cfg.Loss == 0
	if arm != "kernel" {
		mode, args := "forward", []string(nil)
		switch arm {
		case "noloss-afxdp":
			args = []string{"--fastpath", "afxdp"}
		case "lg", "lgnb", "lg-noloss", "lg-noloss-afxdp", "lg-afxdp":
			mode, _, _ = strings.Cut(arm, "-")
			if strings.HasSuffix(arm, "-afxdp") {
				args = append(args, "--fastpath", "afxdp")
			}
			if !lossless {
				args = append(args, "--lg-link-loss", strconv.FormatFloat(cfg.Loss, 'g', -1, 64))
			}
			args = append(args, cfg.RunArgs...)
		}
		var err error
		if dp, err = e.StartDataplanes(ctx, mode, args...); err != nil {
			return nil, nil, err
		}
		defer dp.Stop()
	}
	err := e.ReachH2(ctx, 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("h1 cannot reach h2: %w", err)
	}
	if dp != nil {
		// noloss runs the same impairment stage at loss 0, so every
		// dataplane arm takes the same XDP path and counts its frames.
		c, _ := cfg.impairment() // Normalize validated it
		if lossless {
			c = bpf.ImpairConfig{Model: bpf.Bernoulli, Seed: cfg.Seed}
		}
		if err := bed.Impair(e, "sw2", func(im *bpf.Impairer) error {
			if err := im.SetImpair(c); err != nil {
				return err
			}
			return im.ResetImpairStats()
		}); err != nil {
			return nil, nil, err
		}
	}

	var before [2]bed.DPStats
	if dp != nil {
		if err := fetchSwitches(ctx, e, &before); err != nil {
			return nil, nil, err
		}
	}
	t0 := time.Now()
	var flows []fct.Flow
	for i, size := range cfg.Sizes {
		n := cfg.FlowsFor(i)
		bar := bed.FlowProgress(e.Progress, fmt.Sprintf("%-6s %7s", arm, fct.FormatSize(size)), time.Now)
		var fl []fct.Flow
		var err error
		switch cfg.Tool {
		case "builtin":
			fl, err = fct.RunBuiltin(ctx, fct.BuiltinConfig{
				Arm: arm, ServerNS: e.NS("h2"), ClientNS: e.NS("h1"), ServerAddr: bed.H2Addr + ":0",
				Sizes: []int64{size}, FlowsPerSize: n, Warmup: cfg.Warmup,
				CongestionControl: cc, Timeout: cfg.Timeout, Progress: bar,
			})
		case "iperf":
			var r *fct.IperfResult
			r, err = fct.RunIperf(ctx, fct.IperfConfig{
				Arm: arm, ServerNS: e.NS("h2"), ClientNS: e.NS("h1"), ServerIP: bed.H2Addr,
				Sizes: []int64{size}, FlowsPerSize: n, CongestionControl: cc, Timeout: cfg.Timeout, Progress: bar,
			})
			if r != nil {
				fl = r.Flows
				a.CaptureDropped += max(r.CaptureDropped, 0)
			}
		}
		if err != nil {
			fmt.Fprintln(e.Progress) // end the progress bar's line
			return nil, nil, err
		}
		flows = append(flows, fl...)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
	a.Seconds = time.Since(t0).Seconds()

	if dp == nil {
		return a, flows, nil
	}
	if err := dp.Alive(); err != nil {
		return nil, nil, err
	}
	if err := a.linkImpair.read(e); err != nil {
		return nil, nil, err
	}
	var after [2]bed.DPStats
	if err := fetchSwitches(ctx, e, &after); err != nil {
		return nil, nil, err
	}
	a.Control = controlDelta(&before, &after)
	if isLG(arm) {
		s1, s2 := &after[0], &after[1]
		if l := s2.LinkGuardian; l != nil && l.Core.Receiver != nil {
			r := l.Core.Receiver
			a.LostDetected, a.Recovered, a.AckNoTimeouts = r.LostDetected, r.Recovered, r.AckNoTimeouts
			a.RetxDelayP99us = l.RetxDelayUS.P99
		}
		if l := s1.LinkGuardian; l != nil && l.Core.Sender != nil {
			a.Copies, a.RetxCopies = l.Copies, l.Core.Sender.RetxCopies
		}
		a.kernelShares(&before, &after)
	}
	return a, flows, nil
}

// kernelShares sets KernelSent and KernelDelivered from the switches'
// counters before and after the arm's flows (sw1 sends, sw2 delivers).
func (a *FCTArm) kernelShares(before, after *[2]bed.DPStats) {
	if b, x := before[0].LinkGuardian, after[0].LinkGuardian; b != nil && x != nil && b.Core.Sender != nil && x.Core.Sender != nil {
		a.sent = x.Core.Sender.DataSent - b.Core.Sender.DataSent
		a.fastSent = x.Core.Sender.FastSent - b.Core.Sender.FastSent
	}
	if b, x := before[1].LinkGuardian, after[1].LinkGuardian; b != nil && x != nil && b.Core.Receiver != nil && x.Core.Receiver != nil {
		a.delivered = x.Core.Receiver.Delivered - b.Core.Receiver.Delivered
		a.fastDelivered = x.Core.Receiver.FastDelivered - b.Core.Receiver.FastDelivered
	}
	a.KernelSent = report.Ratio(float64(a.fastSent), float64(a.sent))
	a.KernelDelivered = report.Ratio(float64(a.fastDelivered), float64(a.delivered))
}

func checkIperf2() error {
	for _, bin := range []string{"iperf", "tcpdump"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("fct --tool iperf needs %s (scripts/deps.sh installs it): %w", bin, err)
		}
	}
	out, _ := exec.Command("iperf", "-v").CombinedOutput()
	if !strings.Contains(string(out), "iperf version 2") {
		return fmt.Errorf("fct --tool iperf needs iperf 2 as `iperf`, found: %s", strings.TrimSpace(string(out)))
	}
	return nil
}

// add folds b, the same arm's next round, into a: counts add up, rates
// are recomputed, the retransmission delay's p99 is the worse round's.
func (a *FCTArm) add(b *FCTArm) {
	a.Seconds += b.Seconds
	a.linkImpair.add(b.linkImpair)
	a.LostDetected += b.LostDetected
	a.Recovered += b.Recovered
	a.AckNoTimeouts += b.AckNoTimeouts
	a.Copies = max(a.Copies, b.Copies)
	a.RetxCopies += b.RetxCopies
	a.RetxDelayP99us = max(a.RetxDelayP99us, b.RetxDelayP99us)
	a.CaptureDropped += b.CaptureDropped
	a.Control = a.Control.plus(b.Control)
	a.sent += b.sent
	a.fastSent += b.fastSent
	a.delivered += b.delivered
	a.fastDelivered += b.fastDelivered
	a.KernelSent = report.Ratio(float64(a.fastSent), float64(a.sent))
	a.KernelDelivered = report.Ratio(float64(a.fastDelivered), float64(a.delivered))
}

func (a *FCTArm) lossNote() string {
	switch {
	case a.Name == "kernel":
		return "no impairment"
	case a.LostDetected > 0 || isLG(a.Name):
		return fmt.Sprintf("link dropped %d/%d frames (%.3g); lost detected %d, recovered %d, ackNo timeouts %d",
			a.FramesDropped, a.FramesSeen, a.ActualLoss, a.LostDetected, a.Recovered, a.AckNoTimeouts)
	}
	return fmt.Sprintf("link dropped %d/%d frames (%.3g)", a.FramesDropped, a.FramesSeen, a.ActualLoss)
}

// tcpSummary renders a settings report on one line: "tcp_sack=1 ... rto_min 1ms".
func tcpSummary(r fct.Report) string {
	var parts []string
	for _, s := range r.Sysctls {
		v := strings.TrimPrefix(s.Key, "net.ipv4.") + "=" + s.Got
		if s.Note != "" {
			v += " (" + s.Note + ")"
		} else if !s.OK {
			v += " (MISMATCH: wanted " + s.Want + ")"
		}
		parts = append(parts, v)
	}
	if r.Route != "" {
		parts = append(parts, "route rto_min="+r.RTOMin)
	}
	return strings.Join(parts, " ")
}

// Text renders the result for people: the TCP knobs, the FCT table with
// ratios to the reference, what the link and the dataplanes did per arm,
// and the paper's headline comparisons.
func (r *FCTResult) Text() string {
	var b strings.Builder
	c := r.Config
	var counts []string
	for i, s := range c.Sizes {
		counts = append(counts, fmt.Sprintf("%d × %s", c.FlowsFor(i), fct.FormatSize(s)))
	}
	perArm := strings.Join(counts, " + ") + " flows per arm"
	if c.Rounds > 1 {
		perArm += fmt.Sprintf(" in %d interleaved rounds", c.Rounds)
	}
	fmt.Fprintf(&b, "linkfabric fct: h1 → sw1 ══ sw2 → h2, %s, %s tool, %s; loss on sw1→sw2: %s\n",
		perArm, c.Tool, r.CC, r.Impairment)
	fmt.Fprintf(&b, "kernel %s, %d CPUs; %.0fs in all\n", r.Kernel, r.CPUs, r.Seconds)
	for _, rep := range r.FCT.Settings {
		fmt.Fprintf(&b, "TCP in %s: %s\n", rep.Namespace, tcpSummary(rep))
	}
	b.WriteString("\n")
	fct.WriteTable(&b, r.FCT)

	b.WriteString("\nper arm (impairment counters at sw2 link0, sw1→sw2; LinkGuardian counters of sw2's receiver and sw1's sender; kernel sent/delivered: the shares of LinkGuardian's data frames sw1's kernel sent and sw2's kernel delivered, 0 % on the worker path):\n")
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\tseconds\tframes seen\tdropped\tactual loss\tlost detected\trecovered\tackNo timeouts\tN\tretx copies\tretx p99 µs\tkernel sent\tkernel delivered\t")
	for _, a := range r.Arms {
		if a.Name == "kernel" {
			fmt.Fprintf(w, "%s\t%.1f\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", a.Name, a.Seconds)
			continue
		}
		lg := isLG(a.Name)
		opt := func(v uint64) string {
			if !lg {
				return "-"
			}
			return strconv.FormatUint(v, 10)
		}
		n, p99, ks, kd := "-", "-", "-", "-"
		if lg {
			n, p99 = strconv.FormatInt(a.Copies, 10), fmt.Sprintf("%.0f", a.RetxDelayP99us)
			ks, kd = fmt.Sprintf("%.0f%%", 100*a.KernelSent), fmt.Sprintf("%.0f%%", 100*a.KernelDelivered)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%d\t%d\t%.3g\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", a.Name, a.Seconds, a.FramesSeen, a.FramesDropped,
			a.ActualLoss, opt(a.LostDetected), opt(a.Recovered), opt(a.AckNoTimeouts), n, opt(a.RetxCopies), p99, ks, kd)
	}
	w.Flush()

	b.WriteString("\ncontrol economy (both switches, while the flows ran; data frames: lg sequenced frames, forward link TX frames):\n")
	w = report.NewTable(&b)
	fmt.Fprintln(w, "arm\tdata frames\texplicit ACKs\tdummies\tcontrol/data\twakeups\twakeups/data\tloops/data\t")
	for _, a := range r.Arms {
		if a.Name == "kernel" {
			continue
		}
		c := a.Control
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.2f\t%d\t%.2f\t%.2f\t\n", a.Name, c.DataFrames, c.ExplicitAcks, c.Dummies,
			c.ControlPerData, c.Wakeups, c.WakeupsPerData, report.Ratio(float64(c.Loops), float64(c.DataFrames)))
	}
	w.Flush()

	if lines := r.headline(); len(lines) > 0 {
		b.WriteString("\np99.9 comparisons (the paper's claim: LinkGuardian keeps the tail near no loss):\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	if lines := r.lgCost(); len(lines) > 0 {
		b.WriteString("\nLinkGuardian's own cost (targets: lg-noloss p50 ≤ 1.1× noloss; lg p99.9 ≤ 1.2× no loss, lg-noloss's or noloss's):\n")
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	if len(r.RoundRatios) > 0 {
		fmt.Fprintf(&b, "\nthe same, round by round (%d rounds, the arms interleaved; a round's p99.9 rests on its few slowest flows, so read tails from the line above):\n", len(r.Rounds))
		for _, rr := range r.RoundRatios {
			var vs []string
			for _, v := range rr.Rounds {
				vs = append(vs, fmt.Sprintf("%.2f", v))
			}
			fmt.Fprintf(&b, "  %s %s %s/%s: %s (median %.2fx)\n", fct.FormatSize(rr.Size), rr.Stat, rr.Arm, rr.Ref, strings.Join(vs, ", "), rr.Median)
		}
	}
	return b.String()
}

// summary is the FCT summary of arm at size, if it has completed flows.
func (r *FCTResult) summary(arm string, size int64) (fct.Summary, bool) {
	return findSummary(r.FCT.Summaries, arm, size)
}

// findSummary is the summary of arm at size in sums, if it has completed
// flows.
func findSummary(sums []fct.Summary, arm string, size int64) (fct.Summary, bool) {
	for _, s := range sums {
		if s.Arm == arm && s.Size == size {
			return s, s.Count > 0
		}
	}
	return fct.Summary{}, false
}

// fctComparison is a ratio the table reports: the statistic Stat (p50 or
// p99.9) of Arm's flows of Size over the same statistic of Ref's.
type fctComparison struct {
	Size     int64
	Stat     string
	Arm, Ref string
}

func (c fctComparison) String() string { return fmt.Sprintf("%s %s/%s", c.Stat, c.Arm, c.Ref) }

// in is the ratio in sums; false when either arm has no completed flows.
func (c fctComparison) in(sums []fct.Summary) (float64, bool) {
	a, okA := findSummary(sums, c.Arm, c.Size)
	b, okB := findSummary(sums, c.Ref, c.Size)
	if !okA || !okB {
		return 0, false
	}
	stat := func(s fct.Summary) time.Duration {
		if c.Stat == "p50" {
			return s.P50
		}
		return s.P999
	}
	return report.Ratio(float64(stat(a)), float64(stat(b))), true
}

// lgComparisons are LinkGuardian's own costs at size: lg at loss 0 (its
// default path, and the worker path -afxdp) against both forward paths at
// p50, and lg on the lossy link against lg at loss 0 (path by path) and,
// for the worker path, forward at loss 0 at p99.9 (the default path's is
// the headline's lg/noloss). The arms a run lacks drop out where the ratios
// are taken.
func lgComparisons(size int64) []fctComparison {
	var out []fctComparison
	for _, path := range []string{"", "-afxdp"} {
		out = append(out,
			fctComparison{size, "p50", "lg-noloss" + path, "noloss"},
			fctComparison{size, "p50", "lg-noloss" + path, "noloss-afxdp"},
			fctComparison{size, "p99.9", "lg" + path, "lg-noloss" + path})
		if path != "" { // lg/noloss is among the headline's comparisons
			out = append(out, fctComparison{size, "p99.9", "lg" + path, "noloss"})
		}
	}
	return out
}

// lgCost renders lgComparisons over all flows, a line per size.
func (r *FCTResult) lgCost() []string {
	var out []string
	for _, size := range r.Config.Sizes {
		var parts []string
		for _, c := range lgComparisons(size) {
			if v, ok := c.in(r.FCT.Summaries); ok {
				parts = append(parts, fmt.Sprintf("%s %.2fx", c, v))
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("%s: %s", fct.FormatSize(size), strings.Join(parts, ", ")))
		}
	}
	return out
}

// FCTRoundRatio is one of lgComparisons taken in every round, and the
// median of the rounds.
type FCTRoundRatio struct {
	Size   int64     `json:"size"`
	Stat   string    `json:"stat"`
	Arm    string    `json:"arm"`
	Ref    string    `json:"ref"`
	Rounds []float64 `json:"rounds"`
	Median float64   `json:"median"`
}

// roundRatios takes lgComparisons in each of r.Rounds (none with fewer
// than two rounds).
func (r *FCTResult) roundRatios() []FCTRoundRatio {
	if len(r.Rounds) < 2 {
		return nil
	}
	var out []FCTRoundRatio
	for _, size := range r.Config.Sizes {
		for _, c := range lgComparisons(size) {
			rr := FCTRoundRatio{Size: size, Stat: c.Stat, Arm: c.Arm, Ref: c.Ref}
			for _, sums := range r.Rounds {
				if v, ok := c.in(sums); ok {
					rr.Rounds = append(rr.Rounds, v)
				}
			}
			if len(rr.Rounds) > 0 {
				rr.Median = report.Median(slices.Clone(rr.Rounds))
				out = append(out, rr)
			}
		}
	}
	return out
}

func (r *FCTResult) headline() []string {
	get := r.summary
	var out []string
	for _, size := range r.Config.Sizes {
		var parts []string
		nl, okN := get("noloss", size)
		lo, okL := get("loss", size)
		for _, arm := range []string{"lg", "lgnb"} {
			s, ok := get(arm, size)
			if !ok {
				continue
			}
			if okN {
				parts = append(parts, fmt.Sprintf("%s/noloss %.2fx", arm, report.Ratio(float64(s.P999), float64(nl.P999))))
			}
			if okL {
				parts = append(parts, fmt.Sprintf("loss/%s %.1fx", arm, report.Ratio(float64(lo.P999), float64(s.P999))))
			}
		}
		if okN && okL {
			parts = append(parts, fmt.Sprintf("loss/noloss %.1fx", report.Ratio(float64(lo.P999), float64(nl.P999))))
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("%s: %s", fct.FormatSize(size), strings.Join(parts, ", ")))
		}
	}
	return out
}

// WriteFiles writes fct.json, flows.csv and one tail-CDF PNG per size
// (fct-<size>.png) into dir and returns the paths written.
func (r *FCTResult) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return bed.WriteFlows(dir, "fct", r, r.Flows, r.Config.Arms)
}

// DemoOutDir is where Demo writes its files.
const DemoOutDir = "out/demo"

// DemoConfig is the paper's main FCT setting sized for a laptop: 10^4 flows
// of 143 B and 2,000 of 24,387 B per arm, Bernoulli loss 1e-3 on sw1→sw2,
// arms noloss, loss, lg-noloss (LinkGuardian's own cost), lg and lgnb, each
// on its default path (no flags), the builtin tool. The arms take turns in
// three rounds: a machine's speed drifts over minutes (forward's 143 B p50
// moved from 117 to 172 µs between three demos run one after the other), and
// arms measured one after the other compare the drift as much as the arms.
func DemoConfig() FCTConfig {
	return FCTConfig{
		Sizes:  []int64{143, 24387},
		Flows:  []int{10000, 2000},
		Loss:   1e-3,
		Arms:   []string{"noloss", "loss", "lg-noloss", "lg", "lgnb"},
		Tool:   "builtin",
		Rounds: 3,
	}
}

// Demo runs the FCT experiment at DemoConfig, writes its files to
// DemoOutDir and prints the table and where the files went to w (with
// asJSON, the result as JSON instead).
func Demo(ctx context.Context, e *bed.Env, w io.Writer, asJSON bool) error {
	if err := e.Defaults(); err != nil {
		return err
	}
	e.Printf("demo: LinkGuardian flow completion times (the paper's Figure 10 setting, scaled down): about a minute")
	res, err := FCT(ctx, e, DemoConfig())
	if err != nil {
		return err
	}
	files, werr := res.WriteFiles(DemoOutDir)
	if asJSON {
		if err := report.Encode(w, res); err != nil {
			return err
		}
		return werr
	}
	fmt.Fprint(w, res.Text())
	fmt.Fprintln(w)
	for _, f := range files {
		what := "file"
		switch {
		case strings.HasSuffix(f, ".png"):
			what = "plot (tail CDF)"
		case strings.HasSuffix(f, ".json"):
			what = "JSON"
		case strings.HasSuffix(f, ".csv"):
			what = "per-flow CSV"
		}
		fmt.Fprintf(w, "%s: %s\n", what, f)
	}
	return werr
}
