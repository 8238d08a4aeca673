package fecexp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/netns"
)

// Arms of `fec residual` on veth.
const (
	FECArmForward   = "forward"   // no protection
	FECArmFEC       = "fec"       // --mode fec --fec-target: the link policy on the measured loss
	FECArmParity    = "parity"    // --mode fec --fec-n n: XOR parity with RAIL's n for p and the target, whatever the policy would pick
	FECArmFECGiven  = "fec-given" // --mode fec --fec-loss p: the policy on the impairment's rate
	FECArmReplicate = "replicate" // --mode fec --fec-n 0 --fec-copies k
	FECArmLG        = "lg"        // LinkGuardian
)

// FECVethArms is every arm, in the default order.
var FECVethArms = []string{FECArmForward, FECArmFEC, FECArmReplicate, FECArmLG}

// FECVethConfig configures `linkfabric fec residual` on the pair testbed:
// UDP from h1 to h2 through sw1 ⇄ sw2, the impairment on sw2's link0
// (sw1 → sw2) at each loss rate, every arm on fresh dataplanes.
type FECVethConfig struct {
	Loss      []float64     `json:"loss"`
	Target    float64       `json:"target"`     // the fec arms' --fec-target
	Frames    int           `json:"frames"`     // measured datagrams per point (default 10^5)
	Warmup    int           `json:"warmup"`     // datagrams sent first, not counted (default 2·10^4: the loss monitor's window fills)
	Copies    int           `json:"copies"`     // replicate arm
	MeanBurst float64       `json:"mean_burst"` // bursty model too (0: Bernoulli only)
	Arms      []string      `json:"arms"`
	Rate      float64       `json:"rate_bps"` // UDP on the wire
	Payload   int           `json:"payload_bytes"`
	Runs      int           `json:"runs"`
	Seed      uint64        `json:"seed"`
	Drain     time.Duration `json:"drain_ns"` // longest wait for the last datagrams
	RunArgs   []string      `json:"run_args,omitempty"`
	// FCTFlows TCP flows of FCTSize bytes (builtin tool, back to back) run
	// after the UDP flow at every point (0: none); cc is the congestion
	// control they use (set by FECResidualVeth).
	FCTFlows int   `json:"fct_flows,omitempty"`
	FCTSize  int64 `json:"fct_size,omitempty"`
	cc       string
}

// Normalize fills defaults and refuses what cannot run.
func (c *FECVethConfig) Normalize() error {
	c.Warmup = cmp.Or(c.Warmup, 20_000)
	c.Copies = cmp.Or(c.Copies, 3)
	if len(c.Arms) == 0 {
		c.Arms = slices.Clone(FECVethArms)
	}
	c.Rate = cmp.Or(c.Rate, 200e6)
	c.Payload = cmp.Or(c.Payload, 1000)
	c.Runs = cmp.Or(c.Runs, 1)
	c.Seed = cmp.Or(c.Seed, 1)
	c.Drain = cmp.Or(c.Drain, 5*time.Second)
	if err := normalizeFECRun(&c.Loss, &c.Target, &c.Frames, 100_000, c.MeanBurst); err != nil {
		return err
	}
	switch {
	case c.Warmup < 0:
		return fmt.Errorf("--warmup %d: want ≥ 0", c.Warmup)
	case c.Copies < 2 || c.Copies > fec.MaxCopies:
		return fmt.Errorf("--copies %d: want 2 to %d", c.Copies, fec.MaxCopies)
	case c.Rate < 1e6 || c.Rate > 10e9:
		return fmt.Errorf("--rate %g: want 1e6..1e10 bit/s", c.Rate)
	case c.Payload < bed.UDPStamped || c.Payload > 1472:
		return fmt.Errorf("--payload %d: want %d..1472 (the datagram carries its send time)", c.Payload, bed.UDPStamped)
	case c.Runs < 1:
		return fmt.Errorf("--runs %d: want at least 1", c.Runs)
	}
	for _, a := range c.Arms {
		if !slices.Contains(append(slices.Clone(FECVethArms), FECArmFECGiven, FECArmParity), a) {
			return fmt.Errorf("--arms %s: want some of %s, %s, %s", a, strings.Join(FECVethArms, ", "), FECArmFECGiven, FECArmParity)
		}
	}
	return nil
}

// FECVethPoint is one arm at one loss rate and model, one run.
type FECVethPoint struct {
	Arm   string  `json:"arm"`
	Loss  float64 `json:"loss"`
	Model string  `json:"model"` // bernoulli or bursty(B)
	Run   int     `json:"run"`
	// Scheme is the protection the sender ran (mode fec: from its
	// statistics at the end; N, Copies as there); in arm fec,
	// PolicyChanges is how often the link policy changed it during the
	// measured flow.
	Scheme        string `json:"scheme"`
	N             int    `json:"n,omitempty"`
	Copies        int    `json:"copies,omitempty"`
	PolicyChanges uint64 `json:"policy_changes,omitempty"`
	// Decision is arm fec's link policy decision at the end; the sender
	// keeps what it ran when mode fec cannot do it (lg, exclude).
	Decision string `json:"policy_decision,omitempty"`
	// Sent and Received are the measured flow's datagrams (distinct
	// sequence numbers received); Residual = 1 − Received/Sent.
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
	OutOfOrder uint64  `json:"out_of_order"`
	Duplicates uint64  `json:"duplicates"`
	Residual   float64 `json:"residual"`
	// Predicted is the residual of independent loss at the rate the
	// impairment realised: p for forward, p(1−(1−p)^n) for parity, p^k for
	// replication; lg none (-1).
	Predicted float64 `json:"predicted"`
	// LinkLoss is what the impairment dropped over what it saw during the
	// measured flow (every frame on sw1 → sw2: data, parity, copies,
	// control).
	LinkLoss float64 `json:"link_loss"`
	// Overhead is sw1's link0 bytes sent over sw1's host0 bytes received
	// (interface counters, during the measured flow).
	Overhead float64 `json:"overhead"`
	// One-way latency of the delivered datagrams (send to h2's kernel
	// receive time), µs.
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	// HostDrops: datagrams h2's socket could not take (RcvbufErrors):
	// lost, but not by the link.
	HostDrops uint64 `json:"host_drops"`
	// FCT of the TCP flows (FCTFlows), µs; FCTFailed did not complete.
	FCTP50Us  float64 `json:"fct_p50_us,omitempty"`
	FCTP99Us  float64 `json:"fct_p99_us,omitempty"`
	FCTFailed int     `json:"fct_failed,omitempty"`
}

// FECVethResult is what FECResidualVeth measured.
type FECVethResult struct {
	Config FECVethConfig `json:"config"`
	report.RunInfo
	Seconds float64        `json:"seconds"`
	Points  []FECVethPoint `json:"points"`
	// Summary: per arm, model and loss rate the medians over runs
	// (<arm>_<model>_<p>_residual, _overhead, _p50_us, _p99_us, _scheme),
	// the check at p = 3·10⁻³ (fec_check_*), the fec arm's
	// worst ratio of residual to prediction (Bernoulli) and pass.
	Summary map[string]any `json:"summary"`
}

// FECResidualVeth runs every arm at every loss rate (Bernoulli, and bursty
// with MeanBurst) on the pair testbed.
func FECResidualVeth(ctx context.Context, e *bed.Env, cfg FECVethConfig) (*FECVethResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	res := &FECVethResult{Config: cfg, RunInfo: report.NewRunInfo()}
	models := []float64{0}
	if cfg.MeanBurst > 0 {
		models = append(models, cfg.MeanBurst)
	}
	total := cfg.Runs * len(cfg.Loss) * len(models) * len(cfg.Arms)
	per := float64(cfg.Frames+cfg.Warmup) * float64(cfg.Payload+bed.UDPWireOverhead) * 8 / cfg.Rate
	e.Printf("fec residual: pair testbed %q; arms %s; %d loss rates × %d models × %d runs: %d points of %d datagrams (+%d warm-up) at %.0f Mbit/s, about %.0f s each",
		e.Prefix, strings.Join(cfg.Arms, ","), len(cfg.Loss), len(models), cfg.Runs, total, cfg.Frames, cfg.Warmup, cfg.Rate/1e6, per+3)
	// Room on the link for a parity frame after a full-size host frame.
	tb, err := bed.UpPair(e, netns.Options{Forwarding: netns.ForwardingNone, LinkHeaderLen: fec.MaxOverhead + linkcrc.TrailerLen})
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	if cfg.FCTFlows > 0 {
		if cfg.cc, err = bed.ResolveCC(""); err != nil {
			return nil, err
		}
		if _, err := bed.PaperTCP(e, cfg.cc); err != nil {
			return nil, err
		}
	}
	step := 0
	for run := 1; run <= cfg.Runs; run++ {
		for _, p := range cfg.Loss {
			for _, burst := range models {
				for _, arm := range cfg.Arms {
					step++
					if arm == FECArmParity && fec.GroupSize(p, cfg.Target) == 0 {
						e.Printf("fec residual: [%d/%d] parity at p %g: no n reaches the target %g (skipped)", step, total, p, cfg.Target)
						continue
					}
					pt, err := fecVethPoint(ctx, e, cfg, arm, p, burst, run)
					if err != nil {
						return nil, fmt.Errorf("fec residual %s at p %g: %w", arm, p, err)
					}
					e.Printf("fec residual: [%d/%d] %s", step, total, pt.line())
					res.Points = append(res.Points, pt)
				}
			}
		}
	}
	res.summarize()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// fecArmArgs is the mode and arguments of arm at loss rate p.
func fecArmArgs(arm string, p, target float64, copies int) (string, []string) {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch arm {
	case FECArmFEC:
		return "fec", []string{"--fec-target", f(target)}
	case FECArmFECGiven:
		return "fec", []string{"--fec-target", f(target), "--fec-loss", f(p)}
	case FECArmReplicate:
		return "fec", []string{"--fec-n", "0", "--fec-copies", strconv.Itoa(copies)}
	case FECArmParity:
		return "fec", []string{"--fec-n", strconv.Itoa(fec.GroupSize(p, target))}
	case FECArmLG:
		return "lg", []string{"--lg-link-loss", f(p)}
	}
	return "forward", nil
}

func fecVethPoint(ctx context.Context, e *bed.Env, cfg FECVethConfig, arm string, p, burst float64, run int) (FECVethPoint, error) {
	pt := FECVethPoint{Arm: arm, Loss: p, Model: "bernoulli", Run: run, Scheme: arm}
	if burst > 0 {
		pt.Model = fmt.Sprintf("bursty(%g)", burst)
	}
	mode, args := fecArmArgs(arm, p, cfg.Target, cfg.Copies)
	dp, err := e.StartDataplanes(ctx, mode, append(args, cfg.RunArgs...)...)
	if err != nil {
		return pt, err
	}
	defer dp.Stop()
	err = e.ReachH2(ctx, 10*time.Second)
	if err != nil {
		return pt, fmt.Errorf("h1 cannot reach h2: %w", err)
	}
	imp := bpf.Loss(p, burst, cfg.Seed+uint64(run))
	if err := bed.Impair(e, "sw2", func(im *bpf.Impairer) error { return im.SetImpair(imp) }); err != nil {
		return pt, err
	}
	counters := func() (link, host bed.IfCounters, err error) {
		c, err := bed.ReadIfCounters(e.NS("sw1"), "link0", "host0")
		if err != nil {
			return bed.IfCounters{}, bed.IfCounters{}, err
		}
		return c[0], c[1], nil
	}
	sink := map[string]string{e.NS("h2"): ":5310"}
	to := bed.H2Addr + ":5310"
	if cfg.Warmup > 0 {
		w := bed.UDPFlow{Name: "warmup", From: e.NS("h1"), To: to, Rate: cfg.Rate, Payload: cfg.Payload, Bytes: int64(cfg.Warmup) * int64(cfg.Payload)}
		if _, err := bed.RunUDPFlows(ctx, sink, []bed.UDPFlow{w}, 200*time.Millisecond, cfg.Drain); err != nil {
			return pt, err
		}
	}
	var fs0, fs1 fecPolicyStats
	if arm == FECArmFEC { // the other arms fix what the sender runs
		if err := bed.FetchStats(ctx, e.NS("sw1"), &fs0); err != nil {
			return pt, err
		}
	}
	l0, h0, err := counters()
	if err != nil {
		return pt, err
	}
	if err := bed.Impair(e, "sw2", func(im *bpf.Impairer) error { return im.ResetImpairStats() }); err != nil {
		return pt, err
	}
	fl := bed.UDPFlow{Name: "measured", From: e.NS("h1"), To: to, Rate: cfg.Rate, Payload: cfg.Payload, Bytes: int64(cfg.Frames) * int64(cfg.Payload)}
	u, err := bed.RunUDPFlows(ctx, sink, []bed.UDPFlow{fl}, 200*time.Millisecond, cfg.Drain)
	if err != nil {
		return pt, err
	}
	if err := dp.Alive(); err != nil {
		return pt, err
	}
	l1, h1, err := counters()
	if err != nil {
		return pt, err
	}
	link, err := bed.ImpairStatsOf(e, "sw2", "link0")
	pt.LinkLoss = report.Ratio(float64(link.Dropped), float64(link.Seen))
	if err != nil {
		return pt, err
	}
	if mode == "fec" {
		if err := bed.FetchStats(ctx, e.NS("sw1"), &fs1); err != nil {
			return pt, err
		}
		pt.N, pt.Copies = fs1.FEC.N, fs1.FEC.Copies
		pt.Scheme = fecScheme(pt.N, pt.Copies)
		if arm == FECArmFEC {
			pt.Decision = fs1.FEC.Policy.Decision
			pt.PolicyChanges = fs1.FEC.Policy.Changes - fs0.FEC.Policy.Changes
			if d := pt.Decision; d != "" && !fs1.FEC.Policy.Applied {
				pt.Scheme += fmt.Sprintf(" [policy: %s, not applied]", d)
			}
			if pt.PolicyChanges > 0 {
				pt.Scheme += fmt.Sprintf(" (%d changes)", pt.PolicyChanges)
			}
		}
	}
	arr := u.Arrivals[e.NS("h2")]
	st := bed.FlowStats(arr, 0, fl.Name, u.Sent[0], u.T0)
	pt.Sent, pt.Received, pt.OutOfOrder, pt.Duplicates = st.Sent, st.Received, st.OutOfOrder, st.Duplicates
	pt.Residual = 1 - report.Ratio(float64(st.Received), float64(st.Sent))
	pt.HostDrops = u.Rcvbuf
	pt.Predicted = fecPredicted(arm, pt.N, pt.Copies, pt.LinkLoss)
	pt.Overhead = report.Ratio(float64(l1.TxBytes-l0.TxBytes), float64(h1.RxBytes-h0.RxBytes))
	lat := make([]time.Duration, 0, len(arr))
	for _, a := range arr {
		if a.Sent > 0 {
			lat = append(lat, time.Duration(a.T-a.Sent))
		}
	}
	slices.Sort(lat)
	pt.P50Us, pt.P99Us = us(report.Percentile(lat, 50)), us(report.Percentile(lat, 99))
	if cfg.FCTFlows > 0 {
		flows, err := fct.RunBuiltin(ctx, fct.BuiltinConfig{
			Arm: arm, ServerNS: e.NS("h2"), ClientNS: e.NS("h1"), ServerAddr: bed.H2Addr + ":0",
			Sizes: []int64{cfg.FCTSize}, FlowsPerSize: cfg.FCTFlows, Warmup: 5, CongestionControl: cfg.cc, Timeout: 10 * time.Second,
		})
		if err != nil {
			return pt, err
		}
		if s := fct.Summarize(flows); len(s) == 1 {
			pt.FCTP50Us, pt.FCTP99Us, pt.FCTFailed = us(s[0].P50), us(s[0].P99), s[0].Failed
		}
	}
	return pt, nil
}

// fecPolicyStats is the part of a mode fec dataplane's /stats.json that
// says what its sender runs.
type fecPolicyStats struct {
	FEC struct {
		N      int `json:"n"`
		Copies int `json:"copies"`
		Policy struct {
			Decision string `json:"decision"`
			Applied  bool   `json:"applied"`
			Changes  uint64 `json:"changes"`
		} `json:"policy"`
	} `json:"fec"`
}

// fecScheme names what mode fec's sender ran.
func fecScheme(n, copies int) string {
	switch {
	case n > 0 && copies > 1:
		return fmt.Sprintf("fec(%d)×%d", n, copies)
	case n > 0:
		return fmt.Sprintf("fec(%d)", n)
	case copies > 1:
		return fmt.Sprintf("replicate×%d", copies)
	}
	return "none"
}

// fecPredicted is the residual independent loss at rate p leaves through
// arm (n and copies: what mode fec ran); -1 where there is no formula (lg).
func fecPredicted(arm string, n, copies int, p float64) float64 {
	switch {
	case arm == FECArmLG:
		return -1
	case arm == FECArmForward:
		return p
	}
	r := p
	if n > 0 {
		r = fec.Residual(n, p)
	}
	if copies > 1 {
		// every transmission of a frame (and of its group's parity) lost
		r = min(r, fec.ReplicaResidual(copies, p))
	}
	return r
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func (pt *FECVethPoint) line() string {
	pred := "-"
	if pt.Predicted >= 0 {
		pred = fmt.Sprintf("%.2g", pt.Predicted)
	}
	return fmt.Sprintf("%s p %g %s (%s): %d of %d lost, residual %.3g (predicted %s at the link's %.3g), overhead %.3f, one-way p50 %.0f p99 %.0f µs, %d out of order, %d host drops",
		pt.Arm, pt.Loss, pt.Model, pt.Scheme, pt.Sent-pt.Received, pt.Sent, pt.Residual, pred, pt.LinkLoss, pt.Overhead, pt.P50Us, pt.P99Us, pt.OutOfOrder, pt.HostDrops)
}

// fecCheckLoss is the veth check of the residual claim: fec at the target 10⁻³ and
// p = 3·10⁻³ leaves at most 2·10⁻³ with at most 1.12× the host bytes.
const (
	fecCheckLoss     = 3e-3
	fecCheckResidual = 2e-3
	fecCheckOverhead = 1.12
	fecMinEvents     = 10
)

// fecGroup is one arm at one loss rate and model, its runs.
type fecGroup []FECVethPoint

// groups returns the points by (loss, model, arm), in the order they ran.
func (r *FECVethResult) groups() []fecGroup {
	type key struct {
		p          float64
		model, arm string
	}
	at := map[key]int{}
	var gs []fecGroup
	for _, pt := range r.Points {
		k := key{pt.Loss, pt.Model, pt.Arm}
		i, ok := at[k]
		if !ok {
			i = len(gs)
			at[k] = i
			gs = append(gs, nil)
		}
		gs[i] = append(gs[i], pt)
	}
	return gs
}

// med is the median over the group's runs of f.
func (g fecGroup) med(f func(FECVethPoint) float64) float64 {
	v := make([]float64, len(g))
	for i, p := range g {
		v[i] = f(p)
	}
	return report.Median(v)
}

func (r *FECVethResult) summarize() {
	s := map[string]any{}
	c := r.Config
	lo, hi, within := math.Inf(1), 0.0, true
	var failed []string
	for _, g := range r.groups() {
		k, med := g[0], g.med
		name := fmt.Sprintf("%s_%s_%g_", k.Arm, strings.SplitN(k.Model, "(", 2)[0], k.Loss)
		residual := med(func(p FECVethPoint) float64 { return p.Residual })
		overhead := med(func(p FECVethPoint) float64 { return p.Overhead })
		s[name+"residual"] = residual
		s[name+"overhead"] = overhead
		s[name+"p50_us"] = med(func(p FECVethPoint) float64 { return p.P50Us })
		s[name+"p99_us"] = med(func(p FECVethPoint) float64 { return p.P99Us })
		s[name+"scheme"] = g[len(g)-1].Scheme
		if k.Model == "bernoulli" && (k.Arm == FECArmFEC || k.Arm == FECArmFECGiven) {
			// Parity's residual against the formula where the formula
			// expects at least fecMinEvents losses in a run (fewer are
			// too noisy to compare: at 10 expected, a Poisson count
			// falls outside [5, 20] one time in 20).
			pred := med(func(p FECVethPoint) float64 { return p.Predicted })
			if n := med(func(p FECVethPoint) float64 { return float64(p.N) }); n > 0 && pred*float64(c.Frames) >= fecMinEvents {
				ratio := residual / pred
				s[name+"ratio"] = ratio
				lo, hi = min(lo, ratio), max(hi, ratio)
				within = within && ratio >= 0.5 && ratio <= 2
			}
		}
		if k.Arm == FECArmFEC && k.Model == "bernoulli" && k.Loss == fecCheckLoss && c.Target == 1e-3 {
			s["fec_check_residual"], s["fec_check_overhead"] = residual, overhead
			if residual > fecCheckResidual || overhead > fecCheckOverhead {
				failed = append(failed, fmt.Sprintf("fec at p 3e-3: residual %.3g (≤ 2e-3), overhead %.3f (≤ 1.12)", residual, overhead))
			}
		}
	}
	if hi > 0 || !math.IsInf(lo, 1) {
		s["fec_ratio_min"], s["fec_ratio_max"], s["fec_within_2x"] = lo, hi, within
	}
	r.Summary = report.Verdict(s, failed)
}

// Text renders the result: the medians per point, then the check.
func (r *FECVethResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "linkfabric fec residual (veth): h1 → sw1 ═link0═ sw2 → h2, UDP %d-byte payloads at %.0f Mbit/s, %d datagrams per point after %d warm-up; loss at sw2's link0 (sw1 → sw2); fec target %g; kernel %s, %d CPUs; %.0fs\n\n",
		c.Payload, c.Rate/1e6, c.Frames, c.Warmup, c.Target, r.Kernel, r.CPUs, r.Seconds)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "p\tmodel\tarm\tscheme\tresidual\tpredicted\tlink loss\toverhead\tp50 µs\tp99 µs\tout of order\thost drops\truns\t")
	for _, g := range r.groups() {
		k, med := g[0], g.med
		pred := "-"
		if v := med(func(p FECVethPoint) float64 { return p.Predicted }); v >= 0 {
			pred = fmt.Sprintf("%.2g", v)
		}
		var ooo, hd uint64
		for _, p := range g {
			ooo, hd = ooo+p.OutOfOrder, hd+p.HostDrops
		}
		fmt.Fprintf(w, "%g\t%s\t%s\t%s\t%.3g\t%s\t%.3g\t%.3f\t%.0f\t%.0f\t%d\t%d\t%d\t\n", k.Loss, k.Model, k.Arm, g[len(g)-1].Scheme,
			med(func(p FECVethPoint) float64 { return p.Residual }), pred, med(func(p FECVethPoint) float64 { return p.LinkLoss }),
			med(func(p FECVethPoint) float64 { return p.Overhead }), med(func(p FECVethPoint) float64 { return p.P50Us }),
			med(func(p FECVethPoint) float64 { return p.P99Us }), ooo, hd, len(g))
	}
	w.Flush()
	fmt.Fprintf(&b, "\nresidual: datagrams never delivered over those sent (medians over runs); predicted: independent loss at the link's realised rate (forward p, fec(n) p(1−(1−p)^n), replicate p^k); overhead: sw1's link0 bytes over its host0 bytes.\n")
	s := r.Summary
	if lo, ok := s["fec_ratio_min"].(float64); ok {
		fmt.Fprintf(&b, "parity (Bernoulli, points where the formula expects ≥ %d losses): residual over predicted %.2f to %.2f: %s within a factor of 2\n",
			fecMinEvents, lo, s["fec_ratio_max"], map[bool]string{true: "all", false: "NOT all"}[s["fec_within_2x"] == true])
	}
	if v, ok := s["fec_check_residual"].(float64); ok {
		fmt.Fprintf(&b, "fec --fec-target 1e-3 at p 3e-3: residual %.3g (≤ 2e-3), overhead %.3f (≤ 1.12): %s\n", v, s["fec_check_overhead"], report.MetWord(s["pass"] == true))
	}
	if f, _ := s["failed"].([]string); len(f) > 0 {
		fmt.Fprintf(&b, "out of target: %s\n", strings.Join(f, "; "))
	}
	return b.String()
}

// WriteCSV writes one line per point and run.
func (r *FECVethResult) WriteCSV(path string) error {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	var rows [][]string
	for _, p := range r.Points {
		rows = append(rows, []string{g(p.Loss), p.Model, p.Arm, strconv.Itoa(p.Run), p.Scheme, u(p.Sent), u(p.Received),
			g(p.Residual), g(p.Predicted), g(p.LinkLoss), g(p.Overhead), g(p.P50Us), g(p.P99Us), u(p.OutOfOrder), u(p.HostDrops)})
	}
	return report.WriteCSV(path, []string{"loss", "model", "arm", "run", "scheme", "sent", "received", "residual", "predicted", "link_loss", "overhead", "p50_us", "p99_us", "out_of_order", "host_drops"}, rows)
}
