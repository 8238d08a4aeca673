package tdmaexp

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// TDMAProbeSpreadConfig sizes `linkfabric tdma probe spread` (the paper's
// §3.2.3, Figs. 3–4; design §2.3): how far apart one batch of grants,
// sent with one sendmmsg, reaches the hosts of the star.
type TDMAProbeSpreadConfig struct {
	Hosts    int             `json:"hosts"`
	Rate     netns.BitRate   `json:"rate_bps"` // every host NIC and switch port (TBF)
	Burst    netns.ByteSize  `json:"burst"`
	Limit    netns.ByteSize  `json:"switch_buffer"`
	Loads    []netns.BitRate `json:"loads_bps"` // background UDP load h<N−1> → h<N>; 0: none
	Frames   []int           `json:"frames"`    // IP bytes per load datagram
	Batches  int             `json:"batches"`
	Interval time.Duration   `json:"interval_ns"` // between batches
	RT       int             `json:"rt"`          // the FM thread's SCHED_FIFO priority; 0: CFS
	Force    bool            `json:"force"`
}

// SpreadArm is one background load.
type SpreadArm struct {
	Arm     string `json:"arm"` // "idle" or "<load> <frame>B"
	LoadBps uint64 `json:"load_bps"`
	Frame   int    `json:"frame,omitempty"`
	Batches int    `json:"batches"`
	// Complete batches reached every host; LostGrants are the grants
	// missing from the others.
	Complete   int       `json:"complete_batches"`
	LostGrants int       `json:"lost_grants"`
	Spread     Quantiles `json:"spread"`   // max − min kernel RX time of a batch across hosts
	Delivery   Quantiles `json:"delivery"` // FM send → host kernel RX, every grant
	FMLate     Quantiles `json:"fm_late"`  // the FM's batch lateness (1 µs buckets)
	FMSched    string    `json:"fm_sched"`
	GuardUs    float64   `json:"recommended_guard_us"`
	LoadRate   float64   `json:"load_achieved_bps,omitempty"`
	LoadLost   uint64    `json:"load_lost,omitempty"`
	CPUBusy    float64   `json:"cpu_busy_pct"`
	LoadAvg    float64   `json:"load_avg"`
	spreads    []time.Duration
}

// SpreadSumm is the probe's verdict.
type SpreadSumm struct {
	IdleP99us  float64 `json:"idle_spread_p99_us"`
	IdleP999us float64 `json:"idle_spread_p99_9_us"`
	WorstP99us float64 `json:"worst_spread_p99_us"`
	WorstArm   string  `json:"worst_arm"`
	GuardUs    float64 `json:"recommended_guard_us"` // the largest over the arms
	GuardArm   string  `json:"guard_arm"`
	Paper      string  `json:"paper"`
}

// TDMAProbeSpreadResult is the probe's outcome.
type TDMAProbeSpreadResult struct {
	Config  TDMAProbeSpreadConfig `json:"config"`
	Machine ProbeMachine          `json:"machine"`
	Arms    []SpreadArm           `json:"arms"`
	Summary SpreadSumm            `json:"summary"`
	FMSched string                `json:"fm_sched"` // CFS or FIFO <prio>
}

// spreadPort is the UDP port of the background load's sink.
const spreadPort = 5309

// TDMAProbeSpread brings up the star and runs every arm on it.
func TDMAProbeSpread(ctx context.Context, e *bed.Env, cfg TDMAProbeSpreadConfig) (*TDMAProbeSpreadResult, error) {
	if cfg.Batches < 1 || cfg.Interval <= 0 || len(cfg.Loads) == 0 {
		return nil, fmt.Errorf("tdma probe spread: %d batches every %v, %d loads: want at least one batch, a positive interval and a load", cfg.Batches, cfg.Interval, len(cfg.Loads))
	}
	type armCfg struct {
		load  netns.BitRate
		frame int
	}
	var arms []armCfg
	mtu := 1500
	for _, l := range cfg.Loads {
		if l == 0 {
			arms = append(arms, armCfg{})
			continue
		}
		for _, f := range cfg.Frames {
			if f < bed.UDPHeader+28 || f > 9000 {
				return nil, fmt.Errorf("tdma probe spread: load frame %d B: want %d to 9000 (IP bytes)", f, bed.UDPHeader+28)
			}
			mtu = max(mtu, f)
			arms = append(arms, armCfg{l, f})
		}
	}
	m, tb, err := probeStar(e, cfg.Force, "tdma probe spread", "", TDMAStar{Hosts: cfg.Hosts, Rate: cfg.Rate, Burst: cfg.Burst, Limit: cfg.Limit, MTU: mtu})
	if err != nil {
		return nil, err
	}
	res := &TDMAProbeSpreadResult{Config: cfg, Machine: m}
	defer tb.Down()
	s, err := openSpread(ctx, tb, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	defer s.close()
	for i, a := range arms {
		name := "idle"
		if a.load > 0 {
			name = fmt.Sprintf("%s %dB", a.load, a.frame)
		}
		e.Printf("tdma probe spread: arm %s: %d batches every %v (load average %.1f)", name, cfg.Batches, cfg.Interval, bed.LoadAvg())
		r, err := spreadArm(ctx, e, tb, s, cfg, uint16(i+1), a.load, a.frame)
		if err != nil {
			return res, fmt.Errorf("arm %s: %w", name, err)
		}
		r.Arm = name
		e.Printf("  spread p50 %.1f µs, p99 %.1f µs, p99.9 %.1f µs, max %.1f µs; delivery p50 %.1f µs; %d grants lost; guard %.0f µs%s",
			r.Spread.P50, r.Spread.P99, r.Spread.P999, r.Spread.Max, r.Delivery.P50, r.LostGrants, r.GuardUs, loadNote(r))
		res.Arms, res.FMSched = append(res.Arms, r), r.FMSched
	}
	res.Summary = spreadSummary(res.Arms)
	res.Machine.finish()
	return res, nil
}

func loadNote(r SpreadArm) string {
	if r.LoadBps == 0 {
		return ""
	}
	return fmt.Sprintf("; load %.0f Mbit/s achieved, %d datagrams lost", r.LoadRate/1e6, r.LoadLost)
}

// spreadSummary is the verdict over the arms.
func spreadSummary(arms []SpreadArm) SpreadSumm {
	s := SpreadSumm{Paper: "10–15 µs for most pairs, rarely > 20 µs (24 hosts, 10 Gbit/s, NIC pause frames)"}
	for _, a := range arms {
		if a.LoadBps == 0 {
			s.IdleP99us, s.IdleP999us = a.Spread.P99, a.Spread.P999
		}
		if a.Spread.P99 >= s.WorstP99us {
			s.WorstP99us, s.WorstArm = a.Spread.P99, a.Arm
		}
		if a.GuardUs >= s.GuardUs {
			s.GuardUs, s.GuardArm = a.GuardUs, a.Arm
		}
	}
	return s
}

// spreadPorts are the FM's sending port and each host's receiving port
// (grants, kernel time stamps), open in their namespaces.
type spreadPorts struct {
	fm   *rawio.Port
	rx   []*rawio.Port
	macs [][6]byte
}

func openNSPort(ns string, proto uint16, stamps bool) (*rawio.Port, error) {
	var p *rawio.Port
	err := netns.Do(ns, func() (err error) {
		p, err = rawio.Open("eth0", proto, stamps)
		return err
	})
	return p, err
}

func openSpread(ctx context.Context, tb *netns.Testbed, n int) (*spreadPorts, error) {
	s := &spreadPorts{}
	var err error
	if s.fm, err = openNSPort(tb.NS("fm"), 0x8808, false); err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		h := tb.NS("h" + strconv.Itoa(i))
		p, err := openNSPort(h, 0x8808, true)
		if err != nil {
			s.close()
			return nil, err
		}
		s.rx = append(s.rx, p)
		s.macs = append(s.macs, p.MAC)
		// The bridge learns the host's port (grants are then never
		// flooded to the other hosts).
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = netns.WaitPing(pctx, h, netns.StarFMAddr)
		cancel()
		if err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func (s *spreadPorts) close() {
	if s.fm != nil {
		s.fm.Close()
	}
	for _, p := range s.rx {
		p.Close()
	}
}

// spreadArm sends the batches (arm id in the grants' round field) with
// the load running, and measures.
func spreadArm(ctx context.Context, e *bed.Env, tb *netns.Testbed, s *spreadPorts, cfg TDMAProbeSpreadConfig, arm uint16, load netns.BitRate, frame int) (SpreadArm, error) {
	n := len(s.rx)
	r := SpreadArm{LoadBps: uint64(load), Frame: frame, Batches: cfg.Batches}
	cpu0, _ := ReadCPU()
	var sink *bed.UDPSink
	var loadDone chan struct{}
	var loadSent []uint64
	var loadStart []int64
	if load > 0 {
		from := tb.NS("h" + strconv.Itoa(n-1))
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := netns.WaitPing(pctx, from, netns.StarAddr(n)) // ARP first: no datagram waits for it
		cancel()
		if err != nil {
			return r, err
		}
		if sink, err = bed.ListenUDPSink(tb.NS("h"+strconv.Itoa(n)), ":"+strconv.Itoa(spreadPort)); err != nil {
			return r, err
		}
		flow := bed.UDPFlow{Name: "load", From: from, To: netns.StarAddr(n) + ":" + strconv.Itoa(spreadPort),
			Rate: float64(load), Payload: frame - 28, Duration: time.Duration(cfg.Batches)*cfg.Interval + 400*time.Millisecond}
		loadDone = make(chan struct{})
		go func() {
			defer close(loadDone)
			loadSent, loadStart, _ = bed.SendUDP(ctx, []bed.UDPFlow{flow})
		}()
		time.Sleep(200 * time.Millisecond) // the load is on before the first batch
	}
	rx := make([]int64, cfg.Batches*n)
	sent := make([]int64, cfg.Batches)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, p := range s.rx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recvGrants(p, i, n, arm, rx, &stop)
		}()
	}
	late := clock.NewLateness()
	done := make(chan error, 1)
	go func() { done <- sendBatches(s.fm, s.macs, arm, cfg, sent, late, &r.FMSched) }()
	rtErr := <-done
	time.Sleep(50 * time.Millisecond) // the last batch's grants arrive
	stop.Store(true)
	wg.Wait()
	if rtErr != nil {
		e.Printf("  the FM thread runs under CFS: %v", rtErr)
	}
	if sink != nil {
		<-loadDone
		arr := sink.Close()
		if len(loadSent) == 1 {
			st := bed.FlowStats(arr, 0, "load", loadSent[0], loadStart[0])
			r.LoadLost = st.Lost
			if first, last := bed.ArrivalSpan(arr, 1); last > first {
				r.LoadRate = bed.WireBits(arr, 1, first, last) / (float64(last-first) / 1e9)
			}
		}
	}
	var spreads, delivery []time.Duration
	spreads, delivery, r.LostGrants = spreadOf(rx, sent, n)
	r.Complete = len(spreads)
	r.spreads = slices.Clone(spreads)
	r.Spread, r.Delivery, r.FMLate = quantilesOf(spreads), quantilesOf(delivery), latenessQuantiles(late)
	if r.Complete == 0 {
		return r, fmt.Errorf("no batch reached all %d hosts (%d grants lost)", n, r.LostGrants)
	}
	r.GuardUs = recommendGuard(r.Spread.P999, max(frame, 1500)+14, uint64(cfg.Rate))
	cpu1, _ := ReadCPU()
	r.CPUBusy, r.LoadAvg = BusyPct(cpu0, cpu1), bed.LoadAvg()
	return r, ctx.Err()
}

// sendBatches is the FM: every cfg.Interval, on a locked thread with the
// hybrid sleeper, one grant to each host in one sendmmsg, the host order
// rotated per batch (§5.2.1). sent[k] is batch k's send time. It returns
// why SCHED_FIFO was refused, if it was.
func sendBatches(p *rawio.Port, macs [][6]byte, arm uint16, cfg TDMAProbeSpreadConfig, sent []int64, late *clock.Lateness, sched *string) error {
	sch, rtErr := lockProbeThread(cfg.RT)
	*sched = sch
	n := len(macs)
	bufs := make([][pfc.FrameLen]byte, n)
	frames := make([][]byte, n)
	var g wire.Grant
	var sl clock.Sleeper
	P := int64(cfg.Interval)
	t0 := clock.Now() + P
	for k := range sent {
		d := t0 + int64(k)*P
		now := sl.SleepUntil(d)
		late.Add(now - d)
		for j := range frames {
			i := (j + k) % n
			wire.LeaseGrant(&g, macs[i], p.MAC, 0, P, uint64(cfg.Rate), wire.Trailer{Round: arm, Seq: uint32(k), OpenNs: uint32(P), FMTime: now})
			g.Encode(bufs[i][:])
			frames[j] = bufs[i][:]
		}
		sent[k] = clock.Now()
		p.Send(frames)
	}
	return rtErr
}

// recvGrants records host i's kernel receive time of each of arm's
// grants addressed to it (rx[batch·n+i]) until stop.
func recvGrants(p *rawio.Port, i, n int, arm uint16, rx []int64, stop *atomic.Bool) {
	var g wire.Grant
	recvEach(p, 128, stop, func(b []byte, ts int64) {
		if len(b) < 6 || [6]byte(b[:6]) != p.MAC || wire.DecodeGrant(b, &g) != nil || !g.HasTrailer || g.Round != arm {
			return
		}
		if k := int(g.Seq); k < len(rx)/n {
			rx[k*n+i] = ts
		}
	})
}

// spreadOf reads the receive times rx[batch·n+host] (0: not received)
// against each batch's send time: the spread (max − min) of each batch
// that reached every host, every grant's delivery time, and how many
// grants are missing.
func spreadOf(rx, sent []int64, n int) (spreads, delivery []time.Duration, lost int) {
	for k, t := range sent {
		lo, hi, ok := int64(0), int64(0), true
		for _, v := range rx[k*n : k*n+n] {
			if v == 0 {
				lost++
				ok = false
				continue
			}
			delivery = append(delivery, time.Duration(v-t))
			if lo == 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
		if ok {
			spreads = append(spreads, time.Duration(hi-lo))
		}
	}
	return spreads, delivery, lost
}

// Text is the table and the verdict.
func (r *TDMAProbeSpreadResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "grants to %d hosts, one sendmmsg per batch every %v, star at %s; FM thread %s\n\n", c.Hosts, c.Interval, c.Rate, r.FMSched)
	tw := report.NewTable(&b)
	fmt.Fprintln(tw, "arm\tbatches\tlost grants\tspread p50 µs\tp99\tp99.9\tmax\tdelivery p50 µs\tp99\tFM late p99 µs\tguard µs\tload Mbit/s\tload lost\tCPU %\tload avg\t")
	for _, a := range r.Arms {
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t%.0f\t%d\t%.0f\t%.1f\t\n", a.Arm, a.Complete, a.Batches, a.LostGrants,
			a.Spread.P50, a.Spread.P99, a.Spread.P999, a.Spread.Max, a.Delivery.P50, a.Delivery.P99, a.FMLate.P99, a.GuardUs, a.LoadRate/1e6, a.LoadLost, a.CPUBusy, a.LoadAvg)
	}
	tw.Flush()
	s := r.Summary
	fmt.Fprintf(&b, "\nidle spread p99 %.1f µs, p99.9 %.1f µs; worst p99 %.1f µs (%s); recommended guard %.0f µs (%s: spread p99.9 + one frame at %s)\n",
		s.IdleP99us, s.IdleP999us, s.WorstP99us, s.WorstArm, s.GuardUs, s.GuardArm, c.Rate)
	fmt.Fprintf(&b, "paper: %s\n", s.Paper)
	r.Machine.text(&b)
	return b.String()
}

// WriteFiles writes spread.json, spread.csv (every complete batch's
// spread) and spread.png (CDFs per arm) into dir.
func (r *TDMAProbeSpreadResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	var names []string
	var samples [][]time.Duration
	for _, a := range r.Arms {
		for i, d := range a.spreads {
			rows = append(rows, []string{a.Arm, strconv.FormatUint(a.LoadBps, 10), strconv.Itoa(a.Frame), strconv.Itoa(i), strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64)})
		}
		names, samples = append(names, a.Arm), append(samples, a.spreads)
	}
	title := fmt.Sprintf("grant arrival spread across %d hosts", r.Config.Hosts)
	return report.WriteTablePlot(dir, "spread", r, []string{"arm", "load_bps", "frame", "batch", "spread_us"}, rows, "spread.png", func(png string) error {
		return plotProbeCDF(png, title, "max − min kernel receive time of a batch (µs)", names, samples)
	})
}
