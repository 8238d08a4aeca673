package lgexp

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
	"github.com/linkfabric/linkfabric/netns"
)

// GoodputArms are the arms of `linkfabric goodput`.
var GoodputArms = []string{"loss", "lg", "lgnb"}

var goodputArmWhat = map[string]string{
	"loss": "linkfabric forward (unprotected)",
	"lg":   "linkfabric lg (LinkGuardian)",
	"lgnb": "linkfabric lgnb (LinkGuardianNB)",
}

// GoodputConfig sizes `linkfabric goodput` (the paper's Table 3).
type GoodputConfig struct {
	Duration time.Duration `json:"duration"` // per iperf3 run
	Runs     int           `json:"runs"`     // runs per arm and loss rate; the table shows medians
	Losses   []float64     `json:"losses"`   // loss rates on sw1→sw2
	Arms     []string      `json:"arms"`     // from GoodputArms
	Burst    float64       `json:"burst,omitempty"`
	Seed     uint64        `json:"seed"`
	CC       string        `json:"cc"` // "" = dctcp if available, else cubic
	RunArgs  []string      `json:"run_args,omitempty"`
	// LinkQueues is the sw1–sw2 link's queue count (0: the pair preset's 1);
	// the command gives it to Env.LinkQueues.
	LinkQueues int `json:"link_queues,omitempty"`
	MTU        int `json:"mtu,omitempty"`
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *GoodputConfig) Normalize() error {
	c.Duration = bed.Positive(c.Duration, 5*time.Second)
	if c.Duration < time.Second {
		return fmt.Errorf("goodput: duration %v: iperf3 needs at least 1s", c.Duration)
	}
	c.Runs = bed.Positive(c.Runs, 1)
	if len(c.Losses) == 0 {
		c.Losses = []float64{0, 1e-5, 1e-4, 1e-3, 1e-2}
	}
	for _, l := range c.Losses {
		if math.IsNaN(l) || l < 0 || l >= 1 {
			return fmt.Errorf("goodput: loss %v: want a rate in [0, 1)", l)
		}
	}
	if err := bed.NormalizeArms("goodput", &c.Arms, GoodputArms, GoodputArms); err != nil {
		return err
	}
	if c.Burst != 0 && c.Burst < 1 {
		return fmt.Errorf("goodput: mean burst %v: want >= 1 (or 0 for Bernoulli loss)", c.Burst)
	}
	c.Seed = cmp.Or(c.Seed, 1)
	return nil
}

func (c *GoodputConfig) impairment(loss float64) (bpf.ImpairConfig, error) {
	imp := bpf.Loss(loss, c.Burst, c.Seed)
	return imp, imp.Validate()
}

// GoodputSample is one iperf3 run: an arm at a loss rate.
type GoodputSample struct {
	Arm         string  `json:"arm"`
	Loss        float64 `json:"loss_rate"`
	Run         int     `json:"run"`
	Bps         float64 `json:"goodput_bps"` // bit/s
	Retransmits int     `json:"tcp_retransmits"`
	linkImpair
	LostDetected  uint64 `json:"lost_detected,omitempty"`
	Recovered     uint64 `json:"recovered,omitempty"`
	AckNoTimeouts uint64 `json:"ack_no_timeouts,omitempty"`
	Copies        int64  `json:"copies,omitempty"`
	// What the dataplanes did (lg/lgnb): retransmission delay p99 (µs),
	// PFC pauses sw2 sent, the reorder buffer's peak, and how long sw1 held
	// host frames for lack of credit (TX buffer full) or for a pause (ms).
	// IngressDrops counts frames sw1's host port dropped (RX ring full) in
	// every arm: the pipeline's own bottleneck queue overflowing.
	RetxP99US        float64 `json:"retx_delay_p99_us,omitempty"`
	PausesSent       uint64  `json:"pauses_sent,omitempty"`
	ReorderPeakBytes uint64  `json:"reorder_peak_bytes,omitempty"`
	HeldByCreditMs   float64 `json:"held_by_credit_ms,omitempty"`
	HeldByPauseMs    float64 `json:"held_by_pause_ms,omitempty"`
	IngressDrops     uint64  `json:"ingress_drops"`
	// HostVethDrops counts frames h1's own veth dropped during the run:
	// its peer, sw1's host port, had its ring of 256 full (not polled in
	// time; with native XDP on the host port the frames never reach an
	// AF_XDP socket). Each costs TCP a retransmission.
	HostVethDrops uint64 `json:"h1_veth_drops"`
	// The kernel's share (lg/lgnb on their default path): of the data
	// frames sw1 sent, those its kernel send path numbered and sent, and
	// of those sw2 delivered, those its kernel
	// receive path delivered. A run whose sending stayed with sw1's worker
	// shows a low KernelSent (the worker path is about half as fast).
	KernelSent      float64 `json:"kernel_sent_share"`
	KernelDelivered float64 `json:"kernel_delivered_share"`
}

// GoodputResult is what `linkfabric goodput` reports.
type GoodputResult struct {
	Config GoodputConfig `json:"config"`
	report.RunInfo
	CC      string           `json:"congestion_control"`
	TCP     []fct.Report     `json:"tcp_settings"`
	Seconds float64          `json:"seconds"`
	Samples []*GoodputSample `json:"samples"`
	Table   fct.GoodputTable `json:"table"`
	// RunRatios (with more than one run): run by run, each other arm at
	// loss 0 over the first arm at loss 0, and each arm at each loss over
	// itself at loss 0, with the medians.
	RunRatios []GoodputRunRatio `json:"run_ratios,omitempty"`
	// Summary: the table's cells, <arm>_bps_at_<loss> (bit/s, the median over
	// the runs) and <arm>_ratio_at_<loss> (to no loss); cells not measured
	// are left out.
	Summary map[string]any `json:"summary"`
}

func (r *GoodputResult) summarize() {
	s := map[string]any{}
	for _, row := range r.Table.Rows {
		for i, loss := range r.Table.LossRates {
			at := "_at_" + strconv.FormatFloat(loss, 'g', -1, 64)
			if v := row.Bps[i]; v != nil {
				s[row.Arm+"_bps"+at] = *v
			}
			if v := row.Ratio[i]; v != nil {
				s[row.Arm+"_ratio"+at] = *v
			}
		}
	}
	r.Summary = s
}

// goodputCell is one cell of the table: an arm at a loss rate.
type goodputCell struct {
	arm  string
	loss float64
}

// GoodputRunRatio is Arm at Loss over Ref at RefLoss, run by run.
type GoodputRunRatio struct {
	Arm     string    `json:"arm"`
	Loss    float64   `json:"loss_rate"`
	Ref     string    `json:"ref"`
	RefLoss float64   `json:"ref_loss_rate"`
	Runs    []float64 `json:"runs"`
	Median  float64   `json:"median"`
}

func (q GoodputRunRatio) String() string {
	var vs []string
	for _, v := range q.Runs {
		vs = append(vs, fmt.Sprintf("%.2f", v))
	}
	return fmt.Sprintf("%s at %s ÷ %s at %s: %s (median %.2f)", q.Arm, fct.FormatLossRate(q.Loss), q.Ref,
		fct.FormatLossRate(q.RefLoss), strings.Join(vs, ", "), q.Median)
}

// goodputRunRatios takes, within each run, every other arm at loss 0 over
// the first arm at loss 0 and every arm at every other loss over itself at
// loss 0 (none without loss 0 among the rates, or with one run).
func goodputRunRatios(samples []*GoodputSample, cfg GoodputConfig) []GoodputRunRatio {
	if cfg.Runs < 2 || !slices.Contains(cfg.Losses, 0) {
		return nil
	}
	type key struct {
		c   goodputCell
		run int
	}
	g := map[key]float64{}
	for _, s := range samples {
		g[key{goodputCell{s.Arm, s.Loss}, s.Run}] = s.Bps
	}
	var pairs [][2]goodputCell
	for i, arm := range cfg.Arms {
		if i > 0 {
			pairs = append(pairs, [2]goodputCell{{arm, 0}, {cfg.Arms[0], 0}})
		}
		for _, loss := range cfg.Losses {
			if loss != 0 {
				pairs = append(pairs, [2]goodputCell{{arm, loss}, {arm, 0}})
			}
		}
	}
	var out []GoodputRunRatio
	for _, p := range pairs {
		q := GoodputRunRatio{Arm: p[0].arm, Loss: p[0].loss, Ref: p[1].arm, RefLoss: p[1].loss}
		for run := 1; run <= cfg.Runs; run++ {
			a, okA := g[key{p[0], run}]
			b, okB := g[key{p[1], run}]
			if okA && okB && b > 0 {
				q.Runs = append(q.Runs, a/b)
			}
		}
		if len(q.Runs) > 0 {
			q.Median = report.Median(slices.Clone(q.Runs))
			out = append(out, q)
		}
	}
	return out
}

// Goodput measures iperf3 goodput of one long TCP flow h1→h2 for every arm
// and loss rate, each on freshly started dataplanes, on one pair testbed.
func Goodput(ctx context.Context, e *bed.Env, cfg GoodputConfig) (*GoodputResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	for _, l := range cfg.Losses {
		if _, err := cfg.impairment(l); err != nil {
			return nil, err
		}
	}
	cc, err := bed.ResolveCC(cfg.CC)
	if err != nil {
		return nil, err
	}
	res := &GoodputResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc}
	total := len(cfg.Arms) * len(cfg.Losses) * cfg.Runs
	e.Printf("goodput: pair testbed %q; %d runs of iperf3 for %v (arms %s × loss rates %v × %d, %s); about %s",
		e.Prefix, total, cfg.Duration, strings.Join(cfg.Arms, ","), cfg.Losses, cfg.Runs, cc,
		(time.Duration(total) * (cfg.Duration + 2*time.Second)).Round(time.Second))
	tb, err := e.Up(netns.ForwardingNone, cfg.MTU)
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	if res.TCP, err = bed.PaperTCP(e, cc); err != nil {
		return nil, err
	}
	e.Printf("goodput: TCP %s", tcpSummary(res.TCP[0]))

	// Runs go round the cells (arm × loss rate), the order reversed every
	// other run, so that a machine whose speed drifts weighs on every cell
	// alike.
	var order []goodputCell
	for _, arm := range cfg.Arms {
		for _, loss := range cfg.Losses {
			order = append(order, goodputCell{arm, loss})
		}
	}
	bps := map[goodputCell][]float64{}
	step := 0
	for run := 1; run <= cfg.Runs; run++ {
		for _, c := range roundOrder(order, run-1) {
			arm, loss := c.arm, c.loss
			step++
			e.Printf("goodput: [%d/%d] %s at loss %s, run %d", step, total, arm, fct.FormatLossRate(loss), run)
			s, err := goodputOnce(ctx, e, arm, loss, cfg, cc)
			if err != nil {
				return nil, fmt.Errorf("goodput %s at loss %g: %w", arm, loss, err)
			}
			s.Run = run
			extra := ""
			if arm != "loss" {
				extra = fmt.Sprintf("; lost detected %d, recovered %d, ackNo timeouts %d, N %d; retx p99 %.0f µs, reorder peak %d B, %d pauses; sw1 held host frames %.0f ms for credit, %.0f ms paused; kernel sent %.0f%%, delivered %.0f%%",
					s.LostDetected, s.Recovered, s.AckNoTimeouts, s.Copies, s.RetxP99US, s.ReorderPeakBytes, s.PausesSent, s.HeldByCreditMs, s.HeldByPauseMs, 100*s.KernelSent, 100*s.KernelDelivered)
			}
			e.Printf("goodput:   %.2f Gbit/s, %d TCP retransmits; sw1 host port dropped %d, h1's veth %d; link dropped %d/%d frames (%.3g)%s",
				s.Bps/1e9, s.Retransmits, s.IngressDrops, s.HostVethDrops, s.FramesDropped, s.FramesSeen, s.ActualLoss, extra)
			res.Samples = append(res.Samples, s)
			bps[c] = append(bps[c], s.Bps)
		}
	}
	var cells []fct.GoodputCell
	for _, c := range order {
		cells = append(cells, fct.GoodputCell{Arm: c.arm, LossRate: c.loss, Bps: report.Median(bps[c])})
	}
	res.RunRatios = goodputRunRatios(res.Samples, cfg)
	res.Table = fct.NewGoodputTable(cells, cfg.Arms[0])
	res.summarize()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func goodputOnce(ctx context.Context, e *bed.Env, arm string, loss float64, cfg GoodputConfig, cc string) (*GoodputSample, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s := &GoodputSample{Arm: arm, Loss: loss}
	mode, args := "forward", []string(nil)
	if arm != "loss" {
		mode = arm
		if loss > 0 {
			args = append(args, "--lg-link-loss", strconv.FormatFloat(loss, 'g', -1, 64))
		}
		args = append(args, cfg.RunArgs...)
	}
	dp, err := e.StartDataplanes(ctx, mode, args...)
	if err != nil {
		return nil, err
	}
	defer dp.Stop()
	err = e.ReachH2(ctx, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("h1 cannot reach h2: %w", err)
	}
	imp, _ := cfg.impairment(loss)
	if err := bed.Impair(e, "sw2", func(im *bpf.Impairer) error {
		if err := im.SetImpair(imp); err != nil {
			return err
		}
		return im.ResetImpairStats()
	}); err != nil {
		return nil, err
	}
	veth0, err := netns.LinkTxDrops(e.NS("h1"), "eth0")
	if err != nil {
		return nil, err
	}
	ip, err := e.Iperf3(ctx, cfg.Duration, "-C", cc)
	if err != nil {
		return nil, err
	}
	s.Bps, s.Retransmits = ip.Bps, ip.Retransmits
	if veth1, err := netns.LinkTxDrops(e.NS("h1"), "eth0"); err == nil {
		s.HostVethDrops = veth1 - veth0
	}
	if err := dp.Alive(); err != nil {
		return nil, err
	}
	if err := s.linkImpair.read(e); err != nil {
		return nil, err
	}
	var s1, s2 bed.DPStats
	if err := bed.FetchStats(ctx, e.NS("sw1"), &s1); err != nil {
		return nil, err
	}
	s.IngressDrops = s1.HostIngressDrops()
	if arm == "loss" {
		return s, nil
	}
	if err := bed.FetchStats(ctx, e.NS("sw2"), &s2); err != nil {
		return nil, err
	}
	if l := s2.LinkGuardian; l != nil {
		s.RetxP99US = l.RetxDelayUS.P99
		if r := l.Core.Receiver; r != nil {
			s.LostDetected, s.Recovered, s.AckNoTimeouts = r.LostDetected, r.Recovered, r.AckNoTimeouts
			s.PausesSent, s.ReorderPeakBytes = r.PausesSent, r.ReorderPeakBytes
			s.KernelDelivered = report.Ratio(float64(r.FastDelivered), float64(r.Delivered))
		}
	}
	if l := s1.LinkGuardian; l != nil {
		s.Copies = l.Copies
		s.HeldByCreditMs, s.HeldByPauseMs = float64(l.Core.HeldByCreditNs)/1e6, float64(l.Core.HeldByPauseNs)/1e6
		if x := l.Core.Sender; x != nil {
			s.KernelSent = report.Ratio(float64(x.FastSent), float64(x.DataSent))
		}
	}
	return s, nil
}

// Text renders the result: the paper's Table 3 layout, then per run what
// the link and the dataplanes did.
func (r *GoodputResult) Text() string {
	var b strings.Builder
	c := r.Config
	model := "Bernoulli"
	if c.Burst > 0 {
		model = fmt.Sprintf("bursty (mean burst %g)", c.Burst)
	}
	fmt.Fprintf(&b, "linkfabric goodput: iperf3, one TCP flow h1 → h2 for %v, median of %d run(s) per cell, %s loss on sw1→sw2, %s; kernel %s, %d CPUs; %.0fs in all\n",
		c.Duration, c.Runs, model, r.CC, r.Kernel, r.CPUs, r.Seconds)
	if len(r.TCP) > 0 {
		fmt.Fprintf(&b, "TCP in h1 and h2: %s\n", tcpSummary(r.TCP[0]))
	}
	b.WriteString("\n")
	r.Table.WriteText(&b)
	b.WriteString("\narms: ")
	for i, a := range c.Arms {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s = %s", a, goodputArmWhat[a])
	}
	if len(r.RunRatios) > 0 {
		b.WriteString("\n\nrun by run (the cells interleaved, so each run's ratios compare neighbours in time):")
		for _, q := range r.RunRatios {
			b.WriteString("\n  " + q.String())
		}
	}
	b.WriteString("\n\nper run:\n")
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\tloss\trun\tGbit/s\tTCP retrans\th1 veth drops\tframes seen\tdropped\tactual loss\tlost detected\trecovered\tackNo timeouts\tN\tkernel sent\tkernel delivered\t")
	for _, s := range r.Samples {
		if s.Arm == "loss" {
			fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%d\t%d\t%d\t%d\t%.3g\t-\t-\t-\t-\t-\t-\t\n", s.Arm, fct.FormatLossRate(s.Loss), s.Run, s.Bps/1e9, s.Retransmits,
				s.HostVethDrops, s.FramesSeen, s.FramesDropped, s.ActualLoss)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.2f\t%d\t%d\t%d\t%d\t%.3g\t%d\t%d\t%d\t%d\t%.0f%%\t%.0f%%\t\n", s.Arm, fct.FormatLossRate(s.Loss), s.Run, s.Bps/1e9, s.Retransmits,
			s.HostVethDrops, s.FramesSeen, s.FramesDropped, s.ActualLoss, s.LostDetected, s.Recovered, s.AckNoTimeouts, s.Copies, 100*s.KernelSent, 100*s.KernelDelivered)
	}
	w.Flush()
	return b.String()
}
