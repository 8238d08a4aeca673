package tdmaexp

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// TDMARPCConfig sizes `linkfabric tdma rpc` (§6.2, Figures 9–10): on a
// star of 4 hosts, h1 and h2 send bulk into h3 while h4 pings h3.
type TDMARPCConfig struct {
	Star TDMAStar `json:"star"` // Star.Limit is the switch buffer (--buffer)
	Arms []string `json:"arms"` // tcp, tdma, idle
	Runs int      `json:"runs"`
	// Warm: bulk runs this long before the measured phases; Phase: how
	// long each phase lasts (bulk alone, then bulk with the ping).
	Warm  time.Duration `json:"warm_ns"`
	Phase time.Duration `json:"phase_ns"`
	// A batch of requests every PingEvery, one at each of Offsets after
	// the client's window to the server opens (TCP: after the batch starts).
	PingEvery time.Duration   `json:"ping_every_ns"`
	Offsets   []time.Duration `json:"ping_offsets_ns"`
	Force     bool            `json:"force"`
	Dir       string          `json:"-"`
}

// RPCArms are the arms of tdma rpc.
var RPCArms = []string{"tcp", "tdma", "idle"}

// The RPC setup's hosts (1-based): two bulk senders, the server, the client.
const (
	rpcBulk1, rpcBulk2, rpcServer, rpcClient = 1, 2, 3, 4
	rpcHosts                                 = 4
	rpcBulkPort, rpcPingPort                 = 5302, 5303
)

// RPCArm is one arm's run.
type RPCArm struct {
	Arm string `json:"arm"`
	Run int    `json:"run"`
	// RTT: request sent → answer received, while the bulk runs (tdma, tcp)
	// or on the idle network (idle). Wait: batch issued → answer, so the
	// wait for the client's slot is included (tdma, idle).
	RTT  LatQuantiles `json:"rtt"`
	Wait LatQuantiles `json:"wait"`
	// KernelIdle: the TCP ping-pong on the idle star (idle arm): the
	// paper's "baseline" without kernel bypass or TDMA.
	KernelIdle LatQuantiles `json:"kernel_idle_rtt"`
	Sent       uint64       `json:"requests_sent"`
	Answered   uint64       `json:"requests_answered"`
	Deferred   uint64       `json:"answers_deferred"` // answers the server could not send at once
	// DeferredToOpen: of them, requests the server read before its
	// window back to the client in their slot had opened (staggered
	// windows), answered at its open; DeferredInSlot: requests it read
	// only after that window had closed, up to ReadLateMaxUs after they
	// arrived (its agent ran late); DeferredNoSlot: requests whose slot
	// held no such window (the rest were read so late that their round's
	// schedule was gone, or never answered).
	DeferredToOpen uint64  `json:"answers_deferred_to_open"`
	DeferredInSlot uint64  `json:"answers_deferred_in_slot"`
	DeferredNoSlot uint64  `json:"answers_deferred_no_slot"`
	ReadLateMaxUs  float64 `json:"deferred_read_late_max_us"`
	// Held: requests the client held back from a window whose end was
	// nearer than the server's recent turnarounds (sent in the next).
	Held uint64 `json:"requests_held"`
	// Bulk goodput into h3 (bit/s) without and with the ping, and the hit
	// (%) against the share of slots the ping took (%).
	BulkAloneBps     float64 `json:"bulk_alone_bps"`
	BulkPingBps      float64 `json:"bulk_with_ping_bps"`
	HitPct           float64 `json:"bulk_hit_pct"`
	PingWindows      int     `json:"ping_windows"`
	PingSlotSharePct float64 `json:"ping_slot_share_pct"`
	Retransmits      uint64  `json:"tcp_retransmits,omitempty"`
	ArmMeasures
	TDMACounters
	// Samples of RTT (and offset in the window); KernelSamples those of
	// KernelIdle. In rpc-samples.csv, not in the JSON.
	Samples       []host.PingSample `json:"-"`
	KernelSamples []host.PingSample `json:"-"`
}

// RPCArmSumm is an arm's medians over the runs.
type RPCArmSumm struct {
	RTTP50us        float64 `json:"rtt_p50_us"`
	RTTP95us        float64 `json:"rtt_p95_us"`
	RTTP99us        float64 `json:"rtt_p99_us"`
	WaitP50us       float64 `json:"wait_p50_us,omitempty"`
	WaitP95us       float64 `json:"wait_p95_us,omitempty"`
	KernelIdleP95us float64 `json:"kernel_idle_rtt_p95_us,omitempty"`
	BulkAloneBps    float64 `json:"bulk_alone_bps,omitempty"`
	BulkPingBps     float64 `json:"bulk_with_ping_bps,omitempty"`
	HitPct          float64 `json:"bulk_hit_pct"`
	SharePct        float64 `json:"ping_slot_share_pct"`
	SwitchDrops     float64 `json:"switch_drops"`
	CtlOverheadPct  float64 `json:"control_overhead_pct,omitempty"`
}

// RPCSummary is the medians and the checks.
type RPCSummary struct {
	Arms map[string]RPCArmSumm `json:"arms"`
	// TDMA RTT p95 over the TCP arm's and over the idle network's.
	TDMAOverTCPP95  float64 `json:"tdma_over_tcp_rtt_p95,omitempty"`
	TDMAOverIdleP95 float64 `json:"tdma_over_idle_rtt_p95,omitempty"`
	Checks          []Check `json:"checks"`
	Paper           string  `json:"paper"`
}

// TDMARPCResult is the experiment's outcome.
type TDMARPCResult struct {
	Config  TDMARPCConfig `json:"config"`
	Runs    []RPCArm      `json:"runs"`
	Summary RPCSummary    `json:"summary"`
	Precheck
}

const rpcPaper = "paper (§6.2): TDMA RTT ≥ 3× lower than with TCP cross traffic at p95 (170 µs without kernel bypass), about the idle network's; a ping every 100 slots costs the bulk flows ~1 %"

// TDMARPC runs the arms Runs times, interleaved.
func TDMARPC(ctx context.Context, e *bed.Env, cfg TDMARPCConfig) (*TDMARPCResult, error) {
	if cfg.Star.Hosts != rpcHosts || len(cfg.Offsets) == 0 || cfg.PingEvery <= 0 || cfg.Phase <= 0 || cfg.Runs < 1 {
		return nil, fmt.Errorf("tdma rpc: want %d hosts, an offset or more, a ping interval, a phase and a run (have %d hosts, %d offsets, every %v, phase %v, %d runs)",
			rpcHosts, cfg.Star.Hosts, len(cfg.Offsets), cfg.PingEvery, cfg.Phase, cfg.Runs)
	}
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMARPCResult{Config: cfg, Precheck: pre}
	for run := 1; run <= cfg.Runs; run++ {
		for _, arm := range cfg.Arms {
			e.Printf("tdma rpc: run %d/%d, arm %s (switch buffer %s, a batch of %d pings every %v, load average %.1f)",
				run, cfg.Runs, arm, cfg.Star.Limit, len(cfg.Offsets), cfg.PingEvery, bed.LoadAvg())
			a, err := rpcOnce(ctx, e, cfg, arm, run)
			if err != nil {
				res.Summary = summarizeRPC(cfg.Arms, res.Runs) // of the runs done
				return res, fmt.Errorf("run %d, arm %s: %w", run, arm, err)
			}
			e.Printf("  RTT p50/p95/p99 %.0f/%.0f/%.0f µs (%d of %d answered)%s, switch drops %d, CPU %.0f %%",
				a.RTT.P50us, a.RTT.P95us, a.RTT.P99us, a.Answered, a.Sent, a.bulkLine(), a.Switch.Drops, a.CPUBusyPct)
			res.Runs = append(res.Runs, a)
		}
	}
	res.Summary = summarizeRPC(cfg.Arms, res.Runs)
	return res, nil
}

func (a *RPCArm) bulkLine() string {
	if a.BulkAloneBps == 0 {
		return ""
	}
	return fmt.Sprintf(", bulk %.1f → %.1f Mbit/s with the ping (hit %.1f %%, ping slots %.1f %%)", a.BulkAloneBps/1e6, a.BulkPingBps/1e6, a.HitPct, a.PingSlotSharePct)
}

// summarizeRPC takes the medians per arm and checks them.
func summarizeRPC(arms []string, runs []RPCArm) RPCSummary {
	s := RPCSummary{Arms: map[string]RPCArmSumm{}, Paper: rpcPaper}
	for _, arm := range arms {
		med := func(f func(*RPCArm) float64) float64 {
			var v []float64
			for i := range runs {
				if runs[i].Arm == arm {
					v = append(v, f(&runs[i]))
				}
			}
			return report.Median(v)
		}
		s.Arms[arm] = RPCArmSumm{
			RTTP50us: med(func(a *RPCArm) float64 { return a.RTT.P50us }), RTTP95us: med(func(a *RPCArm) float64 { return a.RTT.P95us }),
			RTTP99us: med(func(a *RPCArm) float64 { return a.RTT.P99us }), WaitP50us: med(func(a *RPCArm) float64 { return a.Wait.P50us }),
			WaitP95us: med(func(a *RPCArm) float64 { return a.Wait.P95us }), KernelIdleP95us: med(func(a *RPCArm) float64 { return a.KernelIdle.P95us }),
			BulkAloneBps: med(func(a *RPCArm) float64 { return a.BulkAloneBps }), BulkPingBps: med(func(a *RPCArm) float64 { return a.BulkPingBps }),
			HitPct: med(func(a *RPCArm) float64 { return a.HitPct }), SharePct: med(func(a *RPCArm) float64 { return a.PingSlotSharePct }),
			SwitchDrops:    med(func(a *RPCArm) float64 { return float64(a.Switch.Drops) }),
			CtlOverheadPct: med(func(a *RPCArm) float64 { return a.CtlOverheadPct }),
		}
	}
	s.Checks = rpcChecks(s.Arms)
	if t, ok := s.Arms["tdma"]; ok {
		if c, ok := s.Arms["tcp"]; ok {
			s.TDMAOverTCPP95 = report.RatioNaN(t.RTTP95us, c.RTTP95us)
		}
		if i, ok := s.Arms["idle"]; ok {
			s.TDMAOverIdleP95 = report.RatioNaN(t.RTTP95us, i.RTTP95us)
		}
	}
	return s
}

// rpcChecks are the design's targets (§4 item 5) on the medians: TDMA RTT
// p95 ≤ ⅓ of the TCP arm's and ≤ 1.5 × the idle network's; the bulk loses
// at most the ping slots' share + 1 percentage point. A check needs its
// arms; one without samples is missed.
func rpcChecks(arms map[string]RPCArmSumm) []Check {
	t, ok := arms["tdma"]
	if !ok {
		return nil
	}
	var cs []Check
	if c, ok := arms["tcp"]; ok {
		cs = append(cs, atMost("tdma RTT p95 ÷ tcp RTT p95", "≤", report.RatioNaN(t.RTTP95us, c.RTTP95us), 1.0/3))
	}
	if i, ok := arms["idle"]; ok {
		cs = append(cs, atMost("tdma RTT p95 ÷ idle RTT p95", "≤", report.RatioNaN(t.RTTP95us, i.RTTP95us), 1.5))
	}
	hit := atMost("tdma bulk hit − ping slot share (percentage points)", "≤", t.HitPct-t.SharePct, 1)
	hit.Note = fmt.Sprintf("hit %.2f %%, share %.2f %%", t.HitPct, t.SharePct)
	if t.BulkAloneBps == 0 {
		hit.Value, hit.Met, hit.Note = math.NaN(), false, "no bulk measured"
	}
	return append(cs, hit)
}

// rpcOnce runs one arm on a fresh star.
func rpcOnce(ctx context.Context, e *bed.Env, cfg TDMARPCConfig, arm string, run int) (RPCArm, error) {
	out := RPCArm{Arm: arm, Run: run}
	err := onStar(e, cfg.Star, &out.ArmMeasures, func(tb *netns.Testbed) error {
		switch arm {
		case "tdma", "idle":
			return rpcTDMA(ctx, e, cfg, tb, &out)
		case "tcp":
			return rpcTCP(ctx, cfg, tb, &out)
		}
		return fmt.Errorf("arm %q: want %s", arm, strings.Join(RPCArms, ", "))
	})
	return out, err
}

// offsetsArg is --ping-offset's value.
func offsetsArg(offs []time.Duration) string {
	s := make([]string, len(offs))
	for i, o := range offs {
		s[i] = o.String()
	}
	return strings.Join(s, ",")
}

// rpcTDMA runs the tdma arm (raw agents: bulk, pong server, ping client;
// the ping from Warm + Phase on) or the idle arm (the ping alone from Warm
// on, then the kernel TCP ping-pong on the idle star for Phase).
func rpcTDMA(ctx context.Context, e *bed.Env, cfg TDMARPCConfig, tb *netns.Testbed, out *RPCArm) error {
	c := cfg.Star
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-run%d", out.Arm, out.Run))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	const clientEarly = 500 * time.Millisecond
	bulk := out.Arm == "tdma"
	delay, dur := cfg.Warm, cfg.Warm+cfg.Phase+time.Second
	if bulk {
		delay, dur = cfg.Warm+cfg.Phase, cfg.Warm+2*cfg.Phase+time.Second
	}
	r, err := runTDMA(ctx, e, tb, c, dir, dur+20*time.Second, func(i int) []string {
		args := agentDuration(dur)
		switch i + 1 {
		case rpcBulk1, rpcBulk2:
			if bulk {
				return append(args, "--workload", "bulk", "--dst", strconv.Itoa(rpcServer-1))
			}
		case rpcServer:
			return append(args, "--workload", "pong", "--dst", strconv.Itoa(rpcClient-1))
		case rpcClient: // it stops first, so every request it sent can be answered
			return append(agentDuration(dur-clientEarly), "--workload", "ping", "--dst", strconv.Itoa(rpcServer-1), "--ping-every", cfg.PingEvery.String(),
				"--ping-offset", offsetsArg(cfg.Offsets), "--ping-delay", delay.String())
		}
		return args
	})
	if err != nil {
		return err
	}
	out.TDMACounters = r.counters(c)
	cl, sv := r.Hosts[rpcClient-1].Ping, r.Hosts[rpcServer-1].Ping
	if cl.FirstIssue == 0 || cl.Sent == 0 {
		return fmt.Errorf("the ping client sent no request (issued %d batches; see %s)", cl.Batches, dir)
	}
	out.Sent, out.Answered, out.Deferred = cl.Sent, cl.Answered, sv.Deferred
	out.DeferredToOpen, out.DeferredInSlot, out.DeferredNoSlot, out.ReadLateMaxUs = sv.DeferredToOpen, sv.DeferredInSlot, sv.DeferredNoSlot, sv.DeferredReadLateMaxus
	out.Held = cl.Held
	if cl.SamplesCut > 0 {
		e.Printf("  %d answers beyond the %d samples kept are not in the quantiles", cl.SamplesCut, host.MaxPingSamples)
	}
	from, to := cl.FirstIssue, cl.FirstIssue+int64(cfg.Phase)
	for _, s := range cl.Samples {
		if s.T >= from && s.T < to {
			out.Samples = append(out.Samples, s)
		}
	}
	out.RTT, out.Wait = rttQuantiles(out.Samples)
	if bulk {
		h3 := r.Hosts[rpcServer-1].Progress
		out.BulkAloneBps = progressRate(h3, from-int64(cfg.Phase), from) * 8
		out.BulkPingBps = progressRate(h3, from, to) * 8
		if out.BulkAloneBps == 0 || out.BulkPingBps == 0 {
			return fmt.Errorf("h3's progress does not cover both phases (bulk %.1f and %.1f Mbit/s; see %s)", out.BulkAloneBps/1e6, out.BulkPingBps/1e6, dir)
		}
		out.HitPct = 100 * (1 - out.BulkPingBps/out.BulkAloneBps)
		out.PingWindows = pingWindows(out.Samples, c.Slot)
		out.PingSlotSharePct = 100 * float64(out.PingWindows) * float64(c.Slot) / float64(cfg.Phase)
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Phase)
	defer cancel()
	out.KernelSamples, err = tcpPingPong(pctx, tb, rpcClient, rpcServer, rpcPingPort, cfg.PingEvery, cfg.Offsets)
	out.KernelIdle, _ = rttQuantiles(out.KernelSamples)
	return err
}

// rttQuantiles are the RTT and wait quantiles of samples.
func rttQuantiles(ss []host.PingSample) (rtt, wait LatQuantiles) {
	r, w := make([]float64, len(ss)), make([]float64, len(ss))
	for i, s := range ss {
		r[i], w[i] = s.RTTUs, s.WaitUs
	}
	return latQuantilesOf(r), latQuantilesOf(w)
}

// pingWindows counts the client's windows that carried requests: samples
// whose windows opened (send time less offset) within a slot of each other
// share one.
func pingWindows(ss []host.PingSample, slot time.Duration) int {
	opens := make([]float64, len(ss))
	for i, s := range ss {
		opens[i] = float64(s.T) - s.OffsetUs*1e3
	}
	slices.Sort(opens)
	n := 0
	for i, o := range opens {
		if i == 0 || o-opens[i-1] > float64(slot)/2 {
			n++
		}
	}
	return n
}

// rpcTCP runs the tcp arm: kernel TCP bulk h1, h2 → h3; after Warm, Phase
// of bulk alone, then Phase with the TCP ping-pong h4 → h3 → h4.
func rpcTCP(ctx context.Context, cfg TDMARPCConfig, tb *netns.Testbed, out *RPCArm) error {
	r0 := tcpRetrans(tb, rpcHosts)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	recv, wait, err := tcpBulk(bctx, tb, []int{rpcBulk1, rpcBulk2}, rpcServer, rpcBulkPort)
	if err != nil {
		return err
	}
	defer func() { cancel(); wait(); out.Retransmits = tcpRetrans(tb, rpcHosts) - r0 }()
	if !sleepUntil(ctx, time.Now().Add(cfg.Warm)) {
		return ctx.Err()
	}
	a0, t0 := recv.Load(), clock.Now()
	if !sleepUntil(ctx, time.Now().Add(cfg.Phase)) {
		return ctx.Err()
	}
	a1, t1 := recv.Load(), clock.Now()
	pctx, pcancel := context.WithTimeout(bctx, cfg.Phase)
	defer pcancel()
	out.Samples, err = tcpPingPong(pctx, tb, rpcClient, rpcServer, rpcPingPort, cfg.PingEvery, cfg.Offsets)
	a2, t2 := recv.Load(), clock.Now()
	if err != nil {
		return err
	}
	out.Sent, out.Answered = uint64(len(out.Samples)), uint64(len(out.Samples))
	out.RTT, _ = rttQuantiles(out.Samples)
	out.BulkAloneBps = float64(a1-a0) * 8 / (float64(t1-t0) / 1e9)
	out.BulkPingBps = float64(a2-a1) * 8 / (float64(t2-t1) / 1e9)
	if out.BulkAloneBps > 0 {
		out.HitPct = 100 * (1 - out.BulkPingBps/out.BulkAloneBps)
	}
	return nil
}

// WriteTDMARPC writes rpc.json, rpc-runs.csv, rpc-samples.csv and the
// plots rpc-rtt-offset.png (Fig. 10) and rpc-rtt-cdf.png (Fig. 9) into
// dir; it returns the paths written.
func WriteTDMARPC(dir string, r *TDMARPCResult) ([]string, error) {
	jp := filepath.Join(dir, "rpc.json")
	if err := report.WriteJSON(jp, r); err != nil {
		return nil, err
	}
	paths := []string{jp}
	runs := [][]string{{"arm", "run", "rtt_p50_us", "rtt_p95_us", "rtt_p99_us", "wait_p50_us", "wait_p95_us", "kernel_idle_rtt_p95_us",
		"sent", "answered", "held", "deferred", "deferred_to_open", "deferred_in_slot", "deferred_no_slot", "deferred_read_late_max_us", "bulk_alone_bps", "bulk_with_ping_bps", "bulk_hit_pct", "ping_slot_share_pct",
		"switch_drops", "collisions", "lost_frames", "tcp_retransmits", "control_overhead_pct", "cpu_busy_pct", "load_avg"}}
	samples := [][]string{{"arm", "run", "kind", "t_ns", "offset_us", "rtt_us", "wait_us", "deferred", "held"}}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, a := range r.Runs {
		runs = append(runs, []string{a.Arm, strconv.Itoa(a.Run), f(a.RTT.P50us), f(a.RTT.P95us), f(a.RTT.P99us), f(a.Wait.P50us), f(a.Wait.P95us),
			f(a.KernelIdle.P95us), u(a.Sent), u(a.Answered), u(a.Held), u(a.Deferred), u(a.DeferredToOpen), u(a.DeferredInSlot), u(a.DeferredNoSlot), f(a.ReadLateMaxUs), f(a.BulkAloneBps), f(a.BulkPingBps), f(a.HitPct),
			f(a.PingSlotSharePct), u(a.Switch.Drops), u(a.Collisions), u(a.LostFrames), u(a.Retransmits), f(a.CtlOverheadPct), f(a.CPUBusyPct), f(a.LoadAvg)})
		for k, ss := range [][]host.PingSample{a.Samples, a.KernelSamples} {
			kind := [...]string{"ping", "kernel_idle"}[k]
			for _, s := range ss {
				samples = append(samples, []string{a.Arm, strconv.Itoa(a.Run), kind, strconv.FormatInt(s.T, 10), f(s.OffsetUs), f(s.RTTUs), f(s.WaitUs), strconv.FormatBool(s.Deferred), strconv.FormatBool(s.Held)})
			}
		}
	}
	for _, c := range []struct {
		name string
		rows [][]string
	}{{"rpc-runs.csv", runs}, {"rpc-samples.csv", samples}} {
		p := filepath.Join(dir, c.name)
		if err := report.WriteCSV(p, c.rows[0], c.rows[1:]); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	ps, err := plotRPC(dir, r)
	return append(paths, ps...), err
}

// plotRPC draws RTT against the send offset in the window (Fig. 10: the
// TDMA arms' samples) and the RTT CDF of every arm (Fig. 9).
func plotRPC(dir string, r *TDMARPCResult) ([]string, error) {
	byArm := map[string][]host.PingSample{}
	for _, a := range r.Runs {
		byArm[a.Arm] = append(byArm[a.Arm], a.Samples...)
		if len(a.KernelSamples) > 0 {
			byArm["idle kernel TCP"] = append(byArm["idle kernel TCP"], a.KernelSamples...)
		}
	}
	var scatter, cdf []report.XYSeries
	for _, arm := range append(slices.Clone(r.Config.Arms), "idle kernel TCP") {
		ss := byArm[arm]
		if len(ss) == 0 {
			continue
		}
		rtt := make([]float64, len(ss))
		x, y := make([]float64, len(ss)), make([]float64, len(ss))
		for i, s := range ss {
			x[i], y[i], rtt[i] = s.OffsetUs, s.RTTUs, s.RTTUs
		}
		if arm == "tdma" || arm == "idle" {
			scatter = append(scatter, report.XYSeries{Name: arm, X: x, Y: y, Style: report.Points})
		}
		slices.Sort(rtt)
		cy := make([]float64, len(rtt))
		for i := range rtt {
			cy[i] = float64(i+1) / float64(len(rtt))
		}
		cdf = append(cdf, report.XYSeries{Name: fmt.Sprintf("%s (n=%d)", arm, len(rtt)), X: rtt, Y: cy, Style: report.Steps})
	}
	var paths []string
	if len(scatter) > 0 {
		p := filepath.Join(dir, "rpc-rtt-offset.png")
		if err := report.PlotLines(p, report.LinesOptions{Title: "RTT against the request's offset in its slot (Fig. 10)",
			XLabel: "send offset after the window opens (µs)", YLabel: "RTT (µs)", YFrom0: true}, scatter...); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	if len(cdf) > 0 {
		p := filepath.Join(dir, "rpc-rtt-cdf.png")
		if err := report.PlotLines(p, report.LinesOptions{Title: fmt.Sprintf("RPC RTT by arm (switch buffer %s; Fig. 9)", r.Config.Star.Limit),
			XLabel: "RTT (µs)", YLabel: "CDF", LogX: true, LegendBottom: true}, cdf...); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Text renders the runs, the medians and the checks.
func (r *TDMARPCResult) Text() string { return report.Sprint(r.write) }

func (r *TDMARPCResult) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\trun\tRTT p50/p95/p99 µs\twait p50/p95 µs\tanswered\theld\tdeferred (to the open; in slot, read late max µs; no slot)\tbulk alone Mb/s\twith ping Mb/s\thit %\tping slots %\tswitch drops\tcollisions\tlost frames\tretrans\tctl %\tCPU %\tload")
	for _, a := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.0f/%.0f/%.0f\t%.0f/%.0f\t%d/%d\t%d\t%d (%d; %d, %.0f; %d)\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%.1f\n", a.Arm, a.Run,
			a.RTT.P50us, a.RTT.P95us, a.RTT.P99us, a.Wait.P50us, a.Wait.P95us, a.Answered, a.Sent, a.Held, a.Deferred, a.DeferredToOpen, a.DeferredInSlot, a.ReadLateMaxUs, a.DeferredNoSlot, a.BulkAloneBps/1e6, a.BulkPingBps/1e6,
			a.HitPct, a.PingSlotSharePct, a.Switch.Drops, a.Collisions, a.LostFrames, a.Retransmits, a.CtlOverheadPct, a.CPUBusyPct, a.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for _, arm := range r.Config.Arms {
		s := r.Summary.Arms[arm]
		fmt.Fprintf(w, "  %-5s RTT p50 %.0f µs, p95 %.0f µs, p99 %.0f µs", arm, s.RTTP50us, s.RTTP95us, s.RTTP99us)
		if s.WaitP50us > 0 {
			fmt.Fprintf(w, "; with the wait for the slot p50 %.0f µs, p95 %.0f µs", s.WaitP50us, s.WaitP95us)
		}
		if s.KernelIdleP95us > 0 {
			fmt.Fprintf(w, "; kernel TCP ping-pong on the idle star p95 %.0f µs", s.KernelIdleP95us)
		}
		if s.BulkAloneBps > 0 {
			fmt.Fprintf(w, "; bulk %.1f → %.1f Mbit/s with the ping (hit %.2f %%, ping slots %.2f %%)", s.BulkAloneBps/1e6, s.BulkPingBps/1e6, s.HitPct, s.SharePct)
		}
		if s.CtlOverheadPct > 0 {
			fmt.Fprintf(w, "; control overhead %.3f %% of the port rate", s.CtlOverheadPct)
		}
		fmt.Fprintf(w, "; switch drops %.0f\n", s.SwitchDrops)
	}
	if v := r.Summary.TDMAOverTCPP95; v > 0 {
		fmt.Fprintf(w, "  TDMA RTT p95 ÷ TCP RTT p95 = %.3f (%.1f× lower)\n", v, 1/v)
	}
	if v := r.Summary.TDMAOverIdleP95; v > 0 {
		fmt.Fprintf(w, "  TDMA RTT p95 ÷ idle RTT p95 = %.3f\n", v)
	}
	fmt.Fprintln(w, "  "+r.Summary.Paper)
	printChecks(w, r.Summary.Checks)
	r.Precheck.print(w)
}

func (r *TDMARPCResult) measured() bool { return r != nil && len(r.Runs) > 0 }
