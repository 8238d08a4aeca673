package lgexp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/traffic"
)

// StressConfig sizes `linkfabric stress` (the paper's §4.1 stress test).
type StressConfig struct {
	Frames uint64  `json:"frames"`     // frames sent in the loss phase of each arm
	Size   int     `json:"frame_size"` // bytes per frame (no FCS)
	Loss   float64 `json:"loss"`       // loss rate on sw1→sw2
	Burst  float64 `json:"burst"`      // mean burst length (0: Bernoulli)
	Rate   float64 `json:"rate"`       // frames/s of the loss phase (0: half of forward's capacity)
	// Method measures capacity: "search" (default) finds the highest
	// paced rate at which at most Tolerance of the frames fail to arrive
	// (RFC 2544 throughput, by bisection of [0, SearchMax] in SearchSteps
	// trials of Capacity each); "flood" counts the frames/s delivered while
	// h1 sends as fast as it can for Capacity.
	Method    string        `json:"capacity_method"`
	Capacity  time.Duration `json:"capacity_duration"`
	SearchMax float64       `json:"search_max_frames_per_s,omitempty"`
	// SearchSteps bisections; Tolerance is the fraction of a trial's
	// frames that may fail to arrive (in the none arm: beyond those the
	// impairment dropped).
	SearchSteps int     `json:"search_steps,omitempty"`
	Tolerance   float64 `json:"tolerance,omitempty"`
	// CapacityRuns: capacity is measured this many times per arm, the arms
	// interleaved in each round, and the median reported (default 3).
	CapacityRuns int      `json:"capacity_runs"`
	Modes        []string `json:"modes"`    // arms besides the forward reference: none, lgnb, lg
	RunArgs      []string `json:"run_args"` // extra `linkfabric run` arguments for lg/lgnb
	BusyPoll     bool     `json:"busy_poll"`
	Seed         uint64   `json:"seed"`
	TargetLoss   float64  `json:"target_loss"`
	// LinkQueues is the sw1–sw2 link's queue count (0: the pair preset's 1);
	// the command gives it to Env.LinkQueues.
	LinkQueues int `json:"link_queues,omitempty"`
	// Both impairs sw2→sw1 too (the same model, seed Seed+1, at sw1's link
	// port): ACKs, loss notifications, pauses and session frames are lost
	// like data.
	Both bool `json:"both_directions,omitempty"`
}

// StressArm is one arm's result.
type StressArm struct {
	Name string `json:"name"`
	// Capacity phase: the highest rate sustained (search) or frames/s
	// delivered to h2 while h1 sends as fast as it can (flood); the median
	// of CapacitySamples.
	CapacityFPS     float64   `json:"capacity_frames_per_s"`
	CapacitySamples []float64 `json:"capacity_samples"`
	// CapacityTxFull and CapacityPaused count host frames the LinkGuardian
	// sender refused during the capacity phase because its TX buffer was
	// full (no ACK yet) or a PFC pause was in force.
	CapacityTxFull uint64 `json:"capacity_tx_full,omitempty"`
	CapacityPaused uint64 `json:"capacity_paused,omitempty"`
	// EffectiveSpeed is CapacityFPS over the forward (no loss) arm's.
	EffectiveSpeed float64 `json:"effective_link_speed"`
	// With the search method, each round also floods for 2 s: FloodFPS is
	// the median frames/s delivered, FloodSpeed its ratio to forward's.
	FloodFPS     float64   `json:"flood_frames_per_s,omitempty"`
	FloodSamples []float64 `json:"flood_samples,omitempty"`
	FloodSpeed   float64   `json:"flood_link_speed,omitempty"`
	// Loss phase, paced so the pipeline keeps up.
	Sent          uint64  `json:"sent"`
	IngressDrops  uint64  `json:"ingress_drops"` // dropped before sw1's dataplane took them (RX ring full)
	EgressDrops   uint64  `json:"egress_drops"`  // dropped after sw2 (its host TX ring full, or the sink's RX ring)
	LinkLost      uint64  `json:"link_lost"`     // missing − ingress − egress: lost on sw1→sw2 and not recovered
	Delivered     uint64  `json:"delivered_unique"`
	Missing       uint64  `json:"missing"`
	Duplicates    uint64  `json:"duplicates"`
	OutOfOrder    uint64  `json:"out_of_order"`
	ActualLoss    float64 `json:"actual_loss_rate"`    // impairment drops / frames seen on sw2 link0
	EffectiveLoss float64 `json:"effective_loss_rate"` // link_lost / (sent - ingress drops)
	// LinkGuardian (lg, lgnb).
	Copies          int64   `json:"copies,omitempty"`
	RetxCopies      uint64  `json:"retx_copies,omitempty"`
	AckNoTimeouts   uint64  `json:"ack_no_timeouts,omitempty"`
	PeakTxBufFrames uint64  `json:"peak_tx_buffer_frames,omitempty"`
	PeakReorderB    uint64  `json:"peak_reorder_bytes,omitempty"`
	Pauses          uint64  `json:"pauses,omitempty"`
	RetxDelayP50us  float64 `json:"retx_delay_p50_us,omitempty"`
	RetxDelayP99us  float64 `json:"retx_delay_p99_us,omitempty"`
	RetxDelayMaxus  float64 `json:"retx_delay_max_us,omitempty"`
	Recoveries      uint64  `json:"recoveries,omitempty"`
	// Control overhead of the loss phase: frames sw2 sent back on the link
	// (explicit ACKs, loss notifications, PFC) and dummies sw1 sent, per
	// data frame.
	ReverseFrames uint64 `json:"reverse_frames,omitempty"`
	ExplicitAcks  uint64 `json:"explicit_acks,omitempty"`
	Dummies       uint64 `json:"dummies,omitempty"`
	// KernelDelivered is what sw2's kernel receive path delivered
	// (lg/lgnb on their default path), the rest went through its worker;
	// KernelSent what sw1's kernel send path numbered and sent.
	KernelDelivered uint64 `json:"kernel_delivered,omitempty"`
	KernelSent      uint64 `json:"kernel_sent,omitempty"`
	// ReverseSeen and ReverseDropped are the impairment's counts on
	// sw2→sw1 in the loss phase (Both).
	ReverseSeen    uint64 `json:"reverse_seen,omitempty"`
	ReverseDropped uint64 `json:"reverse_dropped,omitempty"`
}

// StressResult is what `linkfabric stress` reports.
type StressResult struct {
	Config StressConfig `json:"config"`
	Kernel string       `json:"kernel"`
	Date   time.Time    `json:"date"`
	Rate   float64      `json:"loss_phase_rate"`
	Arms   []*StressArm `json:"arms"`
	// Summary: per arm <arm>_link_speed (capacity over forward's),
	// <arm>_effective_loss, <arm>_missing, <arm>_duplicates and
	// <arm>_out_of_order of the loss phase.
	Summary map[string]any `json:"summary"`
}

func (r *StressResult) summarize() {
	s := map[string]any{}
	for _, a := range r.Arms {
		s[a.Name+"_link_speed"] = a.EffectiveSpeed
		s[a.Name+"_effective_loss"] = a.EffectiveLoss
		s[a.Name+"_missing"] = a.Missing
		s[a.Name+"_duplicates"] = a.Duplicates
		s[a.Name+"_out_of_order"] = a.OutOfOrder
	}
	r.Summary = s
}

// Stress runs the stress experiment on a fresh pair testbed.
func Stress(ctx context.Context, e *bed.Env, cfg StressConfig) (*StressResult, error) {
	if err := e.Defaults(); err != nil {
		return nil, err
	}
	cfg.Frames = cmp.Or(cfg.Frames, 1_000_000)
	cfg.Size = cmp.Or(cfg.Size, 1000)
	switch cfg.Method {
	case "", "search":
		cfg.Method = "search"
		cfg.Capacity = cmp.Or(cfg.Capacity, time.Second)
		cfg.SearchMax = cmp.Or(cfg.SearchMax, 400_000)
		cfg.SearchSteps = cmp.Or(cfg.SearchSteps, 8)
		cfg.Tolerance = cmp.Or(cfg.Tolerance, 1e-3)
		if cfg.SearchMax < 0 || cfg.SearchSteps < 1 || cfg.Tolerance < 0 || cfg.Tolerance >= 1 {
			return nil, fmt.Errorf("stress: search needs a positive maximum rate and steps, and a tolerance in [0, 1)")
		}
	case "flood":
		cfg.Capacity = cmp.Or(cfg.Capacity, 3*time.Second)
	default:
		return nil, fmt.Errorf("stress: capacity method %q: want search or flood", cfg.Method)
	}
	cfg.CapacityRuns = bed.Positive(cfg.CapacityRuns, 3)
	if len(cfg.Modes) == 0 {
		cfg.Modes = []string{"none", "lgnb", "lg"}
	}
	cfg.Seed = cmp.Or(cfg.Seed, 1)
	imp := bpf.Loss(cfg.Loss, cfg.Burst, cfg.Seed)
	if err := imp.Validate(); err != nil {
		return nil, err
	}
	e.Printf("stress: pair testbed %q, %d frames of %d B per arm, loss %v on sw1→sw2", e.Prefix, cfg.Frames, cfg.Size, imp)
	tb, err := e.Up(netns.ForwardingNone, 0)
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	res := &StressResult{Config: cfg, Kernel: report.Kernel(), Date: time.Now().UTC(), Rate: cfg.Rate}
	arms := append([]string{"forward"}, cfg.Modes...)
	for _, arm := range arms {
		res.Arms = append(res.Arms, &StressArm{Name: arm})
	}
	// Capacity: rounds over all arms, so drift hits every arm alike.
	for round := 0; round < cfg.CapacityRuns; round++ {
		for _, a := range res.Arms {
			if err := stressCapacity(ctx, e, a, cfg, imp, round); err != nil {
				return nil, fmt.Errorf("stress %s: %w", a.Name, err)
			}
		}
	}
	for _, a := range res.Arms {
		a.CapacityFPS = report.Median(slices.Clone(a.CapacitySamples))
		a.FloodFPS = report.Median(slices.Clone(a.FloodSamples))
	}
	res.Rate = cmp.Or(res.Rate, math.Floor(res.Arms[0].CapacityFPS/2))
	for _, a := range res.Arms {
		a.EffectiveSpeed = report.Ratio(a.CapacityFPS, res.Arms[0].CapacityFPS)
		a.FloodSpeed = report.Ratio(a.FloodFPS, res.Arms[0].FloodFPS)
		if err := stressLoss(ctx, e, a, cfg, imp, res.Rate); err != nil {
			return nil, fmt.Errorf("stress %s: %w", a.Name, err)
		}
	}
	res.summarize()
	return res, nil
}

// stressArgs are the mode and `linkfabric run` arguments of an arm.
func stressArgs(arm string, cfg StressConfig) (string, []string, error) {
	mode := arm
	var args []string
	switch arm {
	case "forward", "none":
		mode = "forward"
	case "lg", "lgnb":
		args = append(args, cfg.RunArgs...)
		if cfg.TargetLoss > 0 {
			args = append(args, "--lg-target-loss", fmt.Sprint(cfg.TargetLoss))
		}
	default:
		return "", nil, fmt.Errorf("unknown arm %q (arms: none, lgnb, lg)", arm)
	}
	if cfg.BusyPoll {
		args = append(args, "--busy-poll")
	}
	return mode, args, nil
}

// startArm starts the arm's dataplanes with its impairment on sw1→sw2
// (applied by sw2's link port program, XDP on receive); none for forward.
func startArm(ctx context.Context, e *bed.Env, arm string, cfg StressConfig, imp bpf.ImpairConfig) (*bed.Dataplanes, error) {
	mode, args, err := stressArgs(arm, cfg)
	if err != nil {
		return nil, err
	}
	dp, err := e.StartDataplanes(ctx, mode, args...)
	if err != nil {
		return nil, err
	}
	set := func(imp bpf.ImpairConfig) func(im *bpf.Impairer) error {
		return func(im *bpf.Impairer) error {
			if arm == "forward" {
				return im.ClearImpair()
			}
			if err := im.SetImpair(imp); err != nil {
				return err
			}
			return im.ResetImpairStats()
		}
	}
	err = bed.Impair(e, "sw2", set(imp))
	if err == nil && cfg.Both {
		rev := imp
		rev.Seed++
		err = bed.Impair(e, "sw1", set(rev))
	}
	if err != nil {
		dp.Stop()
		return nil, err
	}
	return dp, nil
}

// stressCapacity measures one capacity sample of arm a: frames/s delivered
// while h1 sends as fast as it can.
func stressCapacity(ctx context.Context, e *bed.Env, a *StressArm, cfg StressConfig, imp bpf.ImpairConfig, round int) error {
	dp, err := startArm(ctx, e, a.Name, cfg, imp)
	if err != nil {
		return err
	}
	defer dp.Stop()
	var fps float64
	if cfg.Method == "flood" {
		e.Printf("stress: capacity round %d/%d, %s: %v at full speed", round+1, cfg.CapacityRuns, a.Name, cfg.Capacity)
		if fps, err = stressFlood(ctx, e, 1, cfg.Size, cfg.Capacity); err != nil {
			return err
		}
	} else {
		e.Printf("stress: capacity round %d/%d, %s: highest rate with at most %g of frames missing, %d trials of %v",
			round+1, cfg.CapacityRuns, a.Name, cfg.Tolerance, cfg.SearchSteps, cfg.Capacity)
		if fps, err = stressSearch(ctx, e, a.Name, cfg); err != nil {
			return err
		}
		flood, err := stressFlood(ctx, e, 3, cfg.Size, floodTime)
		if err != nil {
			return err
		}
		a.FloodSamples = append(a.FloodSamples, flood)
		e.Printf("stress:   flood: %.0f frames/s delivered", flood)
	}
	if err := dp.Alive(); err != nil {
		return err
	}
	a.CapacitySamples = append(a.CapacitySamples, fps)
	var c1 bed.DPStats
	if err := bed.FetchStats(ctx, e.NS("sw1"), &c1); err == nil && c1.LinkGuardian != nil && c1.LinkGuardian.Core.Sender != nil {
		cs := c1.LinkGuardian.Core.Sender
		a.CapacityTxFull += cs.TxFull
		a.CapacityPaused += cs.PausedRefusals
	}
	e.Printf("stress:   %.0f frames/s", fps)
	return nil
}

// stressFlood returns the frames/s of stream delivered to h2 while h1 sends
// as fast as it can for d.
func stressFlood(ctx context.Context, e *bed.Env, stream uint32, size int, d time.Duration) (float64, error) {
	r, err := sendAndSink(ctx, e, stream, 0, size, 0, d)
	if err != nil {
		return 0, err
	}
	return float64(r.Unique) / r.Elapsed.Seconds(), nil
}

// floodTime is the length of the flood that follows each search.
const floodTime = 2 * time.Second

// stressSearch bisects [0, cfg.SearchMax] for the highest rate at which arm
// (running) delivers all but cfg.Tolerance of a trial's frames.
func stressSearch(ctx context.Context, e *bed.Env, arm string, cfg StressConfig) (float64, error) {
	step := 0
	return bisect(cfg.SearchMax, cfg.SearchSteps, func(rate float64) (float64, bool, error) {
		step++
		count := uint64(rate * cfg.Capacity.Seconds())
		// In the none arm, frames the link lost do not count against it.
		impairDrops := func() (n uint64, err error) {
			if arm == "none" {
				err = bed.Impair(e, "sw2", func(im *bpf.Impairer) error {
					st, err := im.ImpairStats()
					n = st.Dropped
					return err
				})
			}
			return n, err
		}
		before, err := impairDrops()
		if err != nil {
			return 0, false, err
		}
		r, err := sendAndSink(ctx, e, uint32(10+step), count, cfg.Size, rate, 0)
		if err != nil {
			return 0, false, err
		}
		after, err := impairDrops()
		if err != nil {
			return 0, false, err
		}
		missing := r.Sent - min(r.Unique, r.Sent)
		missing -= min(missing, after-before)
		achieved := float64(r.Sent) / r.SendTime.Seconds()
		pass := r.Sent == count && float64(missing) <= cfg.Tolerance*float64(count)
		verdict := "missing too many"
		if pass {
			verdict = "sustained"
		}
		e.Printf("stress:   %.0f frames/s asked, %.0f sent: %d of %d missing, %s", rate, achieved, missing, count, verdict)
		return achieved, pass, nil
	})
}

// bisect searches [0, max] in steps trials for the highest rate that passes.
// trial runs one rate and returns the rate it really achieved and whether it
// passed; bisect returns the highest achieved rate of a passing trial (the
// generator may fall short of the rate asked for on a busy CPU), 0 if none
// passed.
func bisect(max float64, steps int, trial func(rate float64) (achieved float64, pass bool, err error)) (float64, error) {
	lo, hi, best := 0.0, max, 0.0
	for i := 0; i < steps; i++ {
		rate := (lo + hi) / 2
		achieved, pass, err := trial(rate)
		if err != nil {
			return 0, err
		}
		if pass {
			lo, best = rate, math.Max(best, achieved)
		} else {
			hi = rate
		}
	}
	return best, nil
}

// stressLoss runs the loss phase of arm a: cfg.Frames numbered frames at
// rate, each checked on h2.
func stressLoss(ctx context.Context, e *bed.Env, a *StressArm, cfg StressConfig, imp bpf.ImpairConfig, rate float64) error {
	arm := a.Name
	dp, err := startArm(ctx, e, arm, cfg, imp)
	if err != nil {
		return err
	}
	defer dp.Stop()
	e.Printf("stress: %s: %d frames at %.0f frames/s", arm, cfg.Frames, rate)
	r, err := sendAndSink(ctx, e, 2, cfg.Frames, cfg.Size, rate, 0)
	if err != nil {
		return err
	}
	if cfg.Both && arm != "forward" {
		err := bed.Impair(e, "sw1", func(im *bpf.Impairer) error {
			st, err := im.ImpairStats()
			a.ReverseSeen, a.ReverseDropped = st.Seen, st.Dropped
			return err
		})
		if err != nil {
			return err
		}
	}
	rep, sinkDrops := r.Report, r.SinkDrops
	if err := dp.Alive(); err != nil {
		return err
	}
	a.Sent, a.Delivered, a.Duplicates, a.OutOfOrder = cfg.Frames, rep.Unique, rep.Duplicates, rep.OutOfOrder
	a.Missing = cfg.Frames - rep.Unique

	var s1, s2 bed.DPStats
	if err := bed.FetchStats(ctx, e.NS("sw1"), &s1); err != nil {
		return err
	}
	if err := bed.FetchStats(ctx, e.NS("sw2"), &s2); err != nil {
		return err
	}
	a.IngressDrops = s1.HostIngressDrops()
	a.EgressDrops = s2.Dataplane.Host.TX.Dropped + sinkDrops
	if drops := a.IngressDrops + a.EgressDrops; drops < a.Missing {
		a.LinkLost = a.Missing - drops
	}
	a.EffectiveLoss = report.Ratio(float64(a.LinkLost), float64(a.Sent-min(a.IngressDrops, a.Sent)))
	if arm != "forward" {
		err := bed.Impair(e, "sw2", func(im *bpf.Impairer) error {
			st, err := im.ImpairStats()
			a.ActualLoss = st.LossRate()
			return err
		})
		if err != nil {
			return err
		}
	}
	if l := s1.LinkGuardian; l != nil && l.Core.Sender != nil {
		a.Copies, a.RetxCopies = l.Copies, l.Core.Sender.RetxCopies
		a.PeakTxBufFrames = l.Core.Sender.TxBufPeakFrames
		a.Dummies = l.Core.Sender.DummiesSent
	}
	if l := s2.LinkGuardian; l != nil && l.Core.Receiver != nil {
		r := l.Core.Receiver
		a.AckNoTimeouts, a.PeakReorderB, a.Pauses = r.AckNoTimeouts, r.ReorderPeakBytes, r.PausesSent
		a.RetxDelayP50us, a.RetxDelayP99us, a.RetxDelayMaxus = l.RetxDelayUS.P50, l.RetxDelayUS.P99, l.RetxDelayUS.Max
		a.Recoveries = l.RetxDelayUS.Count
		a.ExplicitAcks = r.ExplicitAcksSent
		a.ReverseFrames = s2.Dataplane.Link.TX.Frames
		a.KernelDelivered = r.FastDelivered
		// A frame the receiver gave up on (ackNoTimeout) was lost on the
		// link whatever the drop counters before and after it say: they
		// may overlap, and must not hide it.
		if r.AckNoTimeouts > a.LinkLost {
			a.LinkLost = r.AckNoTimeouts
			a.EffectiveLoss = report.Ratio(float64(a.LinkLost), float64(a.Sent-min(a.IngressDrops, a.Sent)))
		}
	}
	if l := s1.LinkGuardian; l != nil && l.Core.Sender != nil {
		a.KernelSent = l.Core.Sender.FastSent
	}
	e.Printf("stress: %s: delivered %d/%d, missing %d, dup %d, out of order %d, capacity %.0f frames/s; reverse frames %d (explicit ACKs %d), dummies %d; sw2's kernel delivered %d, sw1's kernel sent %d",
		arm, a.Delivered, a.Sent, a.Missing, a.Duplicates, a.OutOfOrder, a.CapacityFPS, a.ReverseFrames, a.ExplicitAcks, a.Dummies, a.KernelDelivered, a.KernelSent)
	if cfg.Both && arm != "forward" {
		e.Printf("stress: %s: sw2→sw1 impaired too: dropped %d of %d frames", arm, a.ReverseDropped, a.ReverseSeen)
	}
	return nil
}

// sendResult is what sendAndSink measured.
type sendResult struct {
	traffic.Report
	SinkDrops uint64        // frames h2's socket dropped (RX ring full)
	Sent      uint64        // frames h1 sent
	SendTime  time.Duration // first frame sent → last sent
	Elapsed   time.Duration // first frame sent → last received
}

// sendAndSink sends count frames (or for d) of stream from h1 and receives
// them on h2.
func sendAndSink(ctx context.Context, e *bed.Env, stream uint32, count uint64, size int, rate float64, d time.Duration) (sendResult, error) {
	var res sendResult
	src, err := bed.Link(e.NS("h1"), "eth0")
	if err != nil {
		return res, err
	}
	dst, err := bed.Link(e.NS("h2"), "eth0")
	if err != nil {
		return res, err
	}
	expected := count
	expected = cmp.Or(expected, 64<<20) // a capacity run: plenty of sequence space
	var sink *traffic.Sink
	var gen *traffic.Generator
	if err := netns.Do(e.NS("h2"), func() error {
		var err error
		sink, err = traffic.NewSink("eth0", stream, expected)
		return err
	}); err != nil {
		return res, err
	}
	defer sink.Close()
	if err := netns.Do(e.NS("h1"), func() error {
		var err error
		gen, err = traffic.NewGenerator("eth0", traffic.Template{Dst: dst.Attrs().HardwareAddr, Src: src.Attrs().HardwareAddr, Stream: stream, Size: size})
		return err
	}); err != nil {
		return res, err
	}
	defer gen.Close()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	var last time.Time
	go func() {
		defer close(done)
		sink.Run(sctx, 0)
	}()
	start := time.Now()
	progressDone := make(chan struct{})
	go func() { // progress every 2 s for long runs
		defer close(progressDone)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if count > 0 {
					e.Printf("stress:   sent %d/%d, received %d", gen.Sent(), count, sink.Received())
				}
			}
		}
	}()
	res.Sent = gen.Run(ctx, 0, count, d, rate)
	res.SendTime = time.Since(start)
	// Wait until nothing more arrives for 300 ms (retransmissions, queues).
	prev := sink.Received()
	last = time.Now()
	for time.Since(last) < 300*time.Millisecond && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if n := sink.Received(); n != prev {
			prev, last = n, time.Now()
		}
	}
	cancel()
	<-done
	<-progressDone
	if res.SinkDrops, err = sink.Drops(); err != nil {
		return res, err
	}
	res.Report, res.Elapsed = sink.Report(), last.Sub(start)
	return res, ctx.Err()
}

// Text renders a stress result.
func (r *StressResult) Text() string {
	var b strings.Builder
	c := r.Config
	model := fmt.Sprintf("Bernoulli %g", c.Loss)
	if c.Burst > 0 {
		model = fmt.Sprintf("bursty %g, mean burst %g", c.Loss, c.Burst)
	}
	capacity := fmt.Sprintf("highest rate with ≤ %g of frames missing, median of %d interleaved searches", c.Tolerance, c.CapacityRuns)
	if c.Method == "flood" {
		capacity = fmt.Sprintf("frames/s delivered under a flood, median of %d interleaved %v runs", c.CapacityRuns, c.Capacity)
	}
	fmt.Fprintf(&b, "linkfabric stress: %d frames of %d B per arm at %.0f frames/s, loss %s on sw1→sw2; capacity: %s; kernel %s\n\n",
		c.Frames, c.Size, r.Rate, model, capacity, r.Kernel)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\tactual loss\teffective loss\tmissing\t(link\tin\tout)\tdup\tout of order\tspeed ×fwd\t(flood)\tN\tpeak txbuf\tpeak reorder B\tretx p50 µs\tp99 µs\tmax µs\ttimeouts\t")
	for _, a := range r.Arms {
		flood := "-"
		if len(a.FloodSamples) > 0 {
			flood = fmt.Sprintf("%.3f", a.FloodSpeed)
		}
		fmt.Fprintf(w, "%s\t%.3g\t%.3g\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%s\t%d\t%d\t%d\t%.0f\t%.0f\t%.0f\t%d\t\n",
			a.Name, a.ActualLoss, a.EffectiveLoss, a.Missing, a.LinkLost, a.IngressDrops, a.EgressDrops, a.Duplicates, a.OutOfOrder, a.EffectiveSpeed, flood,
			a.Copies, a.PeakTxBufFrames, a.PeakReorderB, a.RetxDelayP50us, a.RetxDelayP99us, a.RetxDelayMaxus, a.AckNoTimeouts)
	}
	w.Flush()
	if c.Both {
		fmt.Fprintf(&b, "\nsw2→sw1 impaired too (%s, seed %d): frames dropped of those seen in the loss phase:", model, c.Seed+1)
		for _, a := range r.Arms {
			if a.ReverseSeen > 0 {
				fmt.Fprintf(&b, " %s %d/%d", a.Name, a.ReverseDropped, a.ReverseSeen)
			}
		}
		fmt.Fprintln(&b)
	}
	fmt.Fprintln(&b, "\nforward: no loss (the reference). none: forward with loss (unprotected). missing: frames h2 never got,")
	fmt.Fprintln(&b, "split into (link: lost on sw1→sw2, not recovered; in: dropped before sw1's dataplane took them;")
	fmt.Fprintln(&b, "out: dropped after sw2, host TX ring or h2's socket full). effective loss: link / frames sw1 accepted.")
	if c.Method == "flood" {
		fmt.Fprintln(&b, "speed: frames/s delivered at full offered load ÷ forward's.")
	} else {
		fmt.Fprintln(&b, "speed: the highest rate the arm sustains ÷ forward's (RFC 2544 throughput, by bisection);")
		fmt.Fprintln(&b, "(flood): frames/s delivered while h1 sends as fast as it can ÷ forward's.")
	}
	return b.String()
}
