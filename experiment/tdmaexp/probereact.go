package tdmaexp

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
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
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/wire"
	"golang.org/x/sys/unix"
)

// TDMAProbeReactConfig sizes `linkfabric tdma probe react` (the paper's
// §3.2.2 and §3.2.4, Figs. 1, 2 and 5; design §2.3): how fast a sender
// honouring PFC in software stops after a pause and resumes after an
// unpause, and how long it stays silent after a pause timed in quanta.
type TDMAProbeReactConfig struct {
	Sizes  []int         `json:"sizes"`  // frame bytes with FCS (64 is the minimum frame)
	Cycles int           `json:"cycles"` // pause/unpause pairs per size
	Timed  int           `json:"timed"`  // quanta-timed pauses per size
	Pause  time.Duration `json:"pause_ns"`
	Hold   time.Duration `json:"hold_ns"` // each on and off phase; 0: max(2 ms, 10 frame times)
	Rate   netns.BitRate `json:"rate_bps"`
	Burst  netns.ByteSize
	Limit  netns.ByteSize `json:"switch_buffer"`
	RT     int            `json:"rt"` // the sender thread's SCHED_FIFO priority; 0: CFS
	Force  bool           `json:"force"`
}

// ReactSize is one frame size's figures.
type ReactSize struct {
	Size    int     `json:"size"`
	FrameUs float64 `json:"frame_time_us"` // at the rate, with preamble and gap
	HoldUs  float64 `json:"hold_us"`
	// Stop: pause sent → the kernel receive time of the last data
	// frame. veth does not serialise and the TBFs pass a sender paced at
	// their rate at once, so a receive time marks the instant a wire
	// would start carrying the frame: its end less one frame time. Resume:
	// unpause sent → the first frame's receive time. Stop plus one frame
	// time is when a wire would be quiet (the paper's Fig. 2 top, which
	// grows with the frame size).
	Stop   Quantiles `json:"stop_lag"`
	Resume Quantiles `json:"resume_lag"`
	// SenderStop: pause sent → the sender's loop has it (it releases
	// nothing after): the software reaction, without the frame in
	// progress. Delivery: any control frame sent → h1's kernel receive.
	SenderStop Quantiles `json:"sender_stop_lag"`
	Delivery   Quantiles `json:"control_delivery"`
	// Transit: a data frame's release by the sender → h2's kernel
	// receive; about the same at every size when the TBFs do not queue.
	Transit Quantiles `json:"data_transit"`
	// TimedDev: a pause of Quanta (RequestedUs) sent → the first frame
	// after it, less the requested length (Fig. 2 bottom).
	TimedDev    Quantiles `json:"timed_pause_deviation"`
	Quanta      uint16    `json:"quanta"`
	RequestedUs float64   `json:"requested_pause_us"`
	Sent        uint64    `json:"frames_sent"`
	Refused     uint64    `json:"frames_refused"` // by the kernel (full qdisc)
	Received    uint64    `json:"frames_received"`
	Lost        int64     `json:"frames_lost"` // sent − received
	Overflow    uint64    `json:"receiver_overflow,omitempty"`
	SockDrops   uint64    `json:"receiver_socket_drops"`
	SenderSched string    `json:"sender_sched"`
	// The sender and the FM run on threads pinned to different CPUs (-1:
	// not pinned), as they would be different machines: measured, an FM
	// waking on the sender's CPU stopped it before its pause was sent.
	SenderCPU  int     `json:"sender_cpu"`
	FMCPU      int     `json:"fm_cpu"`
	CPUBusy    float64 `json:"cpu_busy_pct"`
	LoadAvg    float64 `json:"load_avg"`
	stop, res  []time.Duration
	dev, sstop []time.Duration
}

// ReactSumm is the probe's verdict: per size, the medians.
type ReactSumm struct {
	StopP50us   map[string]float64 `json:"stop_lag_p50_us"`
	QuietP50us  map[string]float64 `json:"wire_quiet_p50_us"` // stop lag + one frame time
	SenderP50us map[string]float64 `json:"sender_stop_lag_p50_us"`
	ResumeP50us map[string]float64 `json:"resume_lag_p50_us"`
	TimedDevP50 map[string]float64 `json:"timed_pause_deviation_p50_us"`
	Paper       string             `json:"paper"`
}

// TDMAProbeReactResult is the probe's outcome.
type TDMAProbeReactResult struct {
	Config  TDMAProbeReactConfig `json:"config"`
	Machine ProbeMachine         `json:"machine"`
	Sizes   []ReactSize          `json:"sizes"`
	Summary ReactSumm            `json:"summary"`
	Sender  string               `json:"sender_sched"` // CFS or FIFO <prio>
}

// reactRound is the round the sender's schedule and the FM's frames name.
const reactRound = 1

// TDMAProbeReact runs every size on one star of two hosts (h1 sends to
// h2) and the FM, which sends h1 the pauses.
func TDMAProbeReact(ctx context.Context, e *bed.Env, cfg TDMAProbeReactConfig) (*TDMAProbeReactResult, error) {
	if cfg.Cycles < 1 || len(cfg.Sizes) == 0 || cfg.Pause <= 0 {
		return nil, fmt.Errorf("tdma probe react: %d cycles, %d sizes, pause %v: want at least one cycle and size, and a pause > 0", cfg.Cycles, len(cfg.Sizes), cfg.Pause)
	}
	mtu := 1500
	for _, s := range cfg.Sizes {
		if s < 64 || s > 9018 {
			return nil, fmt.Errorf("tdma probe react: frame size %d: want 64 to 9018 bytes (with FCS; MTU 9000)", s)
		}
		if s > 1518 {
			mtu = 9000
		}
	}
	m, tb, err := probeStar(e, cfg.Force, "tdma probe react", "; h1 sends to h2, the FM pauses h1", TDMAStar{Hosts: 2, Rate: cfg.Rate, Burst: cfg.Burst, Limit: cfg.Limit, MTU: mtu})
	if err != nil {
		return nil, err
	}
	res := &TDMAProbeReactResult{Config: cfg, Machine: m, Summary: ReactSumm{StopP50us: map[string]float64{}, QuietP50us: map[string]float64{}, SenderP50us: map[string]float64{}, ResumeP50us: map[string]float64{},
		TimedDevP50: map[string]float64{}, Paper: "software PFC (Fig. 5): ~100–200 µs, low variance; NIC 802.3x (Fig. 1): 2–6 µs"}}
	defer tb.Down()
	for _, pair := range [][2]string{{"h1", "h2"}, {"h1", "fm"}, {"h2", "fm"}} { // the bridge learns every port
		addr := netns.StarFMAddr
		if pair[1] == "h2" {
			addr = netns.StarAddr(2)
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := netns.WaitPing(pctx, tb.NS(pair[0]), addr)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	for _, size := range cfg.Sizes {
		r, err := reactSize(ctx, e, tb, cfg, size)
		if err != nil {
			return res, fmt.Errorf("size %d: %w", size, err)
		}
		e.Printf("  stop lag p50 %.1f µs, p99 %.1f µs (the sender's own p50 %.1f µs); resume lag p50 %.1f µs, p99 %.1f µs; timed pause %.0f µs: deviation p50 %.1f µs; %d sent, %d lost",
			r.Stop.P50, r.Stop.P99, r.SenderStop.P50, r.Resume.P50, r.Resume.P99, r.RequestedUs, r.TimedDev.P50, r.Sent, r.Lost)
		k := strconv.Itoa(size)
		res.Summary.StopP50us[k], res.Summary.QuietP50us[k], res.Summary.SenderP50us[k] = r.Stop.P50, r.Stop.P50+r.FrameUs, r.SenderStop.P50
		res.Summary.ResumeP50us[k], res.Summary.TimedDevP50[k] = r.Resume.P50, r.TimedDev.P50
		res.Sizes, res.Sender = append(res.Sizes, r), r.SenderSched
	}
	res.Machine.finish()
	return res, nil
}

// reactSize runs one frame size.
func reactSize(ctx context.Context, e *bed.Env, tb *netns.Testbed, cfg TDMAProbeReactConfig, size int) (ReactSize, error) {
	rate := uint64(cfg.Rate)
	fl := size - 4 // the frame without FCS
	ft := wireNs(fl, rate)
	hold := int64(cfg.Hold)
	if hold == 0 {
		hold = max(int64(2*time.Millisecond), 10*ft)
	}
	q := pfc.NanosToQuanta(int64(cfg.Pause), rate)
	req := pfc.QuantaToNanos(q, rate)
	r := ReactSize{Size: size, FrameUs: float64(ft) / 1e3, HoldUs: float64(hold) / 1e3, Quanta: q, RequestedUs: float64(req) / 1e3}
	total := hold*int64(2+2*cfg.Cycles) + int64(cfg.Timed)*(req+hold)
	e.Printf("tdma probe react: %d-byte frames (%.1f µs each): %d pause/unpause pairs, %d pauses of %d quanta, %v on and off (%.1f s, load average %.1f)",
		size, r.FrameUs, cfg.Cycles, cfg.Timed, q, time.Duration(hold), float64(total)/1e9, bed.LoadAvg())
	cpu0, _ := ReadCPU()
	var ports [4]*rawio.Port // sender data, sender control, receiver data, FM
	defer func() {
		for _, p := range ports {
			if p != nil {
				p.Close()
			}
		}
	}()
	for i, o := range []struct {
		ns     string
		proto  uint16
		stamps bool
	}{{"h1", wire.DataEtherType, false}, {"h1", 0x8808, true}, {"h2", wire.DataEtherType, true}, {"fm", 0x8808, false}} {
		p, err := openNSPort(tb.NS(o.ns), o.proto, o.stamps)
		if err != nil {
			return r, err
		}
		ports[i] = p
	}
	if err := ports[2].SetBuffers(1<<20, 64<<20); err != nil {
		return r, err
	}
	// The receiver keeps every frame's time (allocated here, not on the
	// receive path): the line rate for the whole run, and a margin.
	capacity := int(float64(total)/float64(ft)*1.2) + 4096
	rcv := reactReceiver{rx: make([]int64, 0, capacity), transit: make([]time.Duration, 0, capacity)}
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); rcv.run(ports[2], &stop) }()
	snd := reactSender{data: ports[0], ctl: ports[1], dst: ports[2].MAC, fl: fl, rate: rate, rt: cfg.RT,
		seen: make([]reactSeen, 0, 16+2*cfg.Cycles+cfg.Timed)}
	var sndErr error
	go func() { defer wg.Done(); sndErr = snd.run(&stop) }()
	evc := make(chan []reactEvent, 1)
	go func() { // a thread of its own, on another CPU than the sender's
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		r.FMCPU = pinThread(0)
		evc <- reactFM(ctx, ports[3], ports[1].MAC, cfg, hold, q, req)
	}()
	ev := <-evc
	time.Sleep(time.Duration(hold)) // the last frames arrive
	stop.Store(true)
	wg.Wait()
	if sndErr != nil {
		e.Printf("  the sender runs under CFS: %v", sndErr)
	}
	r.SenderSched, r.SenderCPU, r.Sent, r.Refused = snd.sched, snd.cpu, snd.sent, snd.refused
	r.Received, r.Overflow = uint64(len(rcv.rx)), rcv.over
	r.Lost = int64(r.Sent) - int64(r.Received)
	r.SockDrops, _ = ports[2].Drops()
	slices.Sort(rcv.rx)
	r.stop, r.res, r.dev = reactLags(ev, rcv.rx)
	var delivery []time.Duration
	r.sstop, delivery = senderLags(ev, snd.seen)
	r.Stop, r.Resume, r.TimedDev = quantilesOf(slices.Clone(r.stop)), quantilesOf(slices.Clone(r.res)), quantilesOf(slices.Clone(r.dev))
	r.SenderStop, r.Delivery, r.Transit = quantilesOf(slices.Clone(r.sstop)), quantilesOf(delivery), quantilesOf(rcv.transit)
	cpu1, _ := ReadCPU()
	r.CPUBusy, r.LoadAvg = BusyPct(cpu0, cpu1), bed.LoadAvg()
	if r.Received == 0 {
		return r, fmt.Errorf("h2 received none of the %d frames h1 sent", r.Sent)
	}
	return r, ctx.Err()
}

// reactEvent is a control frame the FM sent: a pause of every class
// ('p'), the unpause of class 0 ('u') or a pause of class 0 for Req ns
// ('t'), at T (clock ns, read just before the send), with trailer
// sequence number Seq.
type reactEvent struct {
	Kind byte
	Seq  uint32
	T    int64
	Req  int64
}

// reactSeen is a control frame the sender took: its sequence number, its
// kernel receive time and when the sender's loop had it.
type reactSeen struct {
	Seq      uint32
	Rx, Seen int64
}

// reactFM sends h1 (dst) the sequence: unpause; cycles × (pause, unpause);
// timed × a quanta-timed pause; pause, each phase hold long. Its phases
// are timed with Go sleeps: no figure depends on when it wakes, only on
// the send times it records.
func reactFM(ctx context.Context, p *rawio.Port, dst [6]byte, cfg TDMAProbeReactConfig, hold int64, q uint16, req int64) []reactEvent {
	ev := make([]reactEvent, 0, 3+2*cfg.Cycles+cfg.Timed)
	var buf [pfc.FrameLen]byte
	frames := [][]byte{buf[:]}
	var g wire.Grant
	var seq uint32
	send := func(kind byte, wait int64) {
		seq++
		t := wire.Trailer{Round: reactRound, Seq: seq, FMTime: clock.Now()}
		switch kind {
		case 'p':
			wire.PauseAll(&g, dst, p.MAC, t)
		case 'u':
			wire.Unpause(&g, dst, p.MAC, 0, t)
		case 't':
			g = wire.Grant{PFC: pfc.NewPFC(p.MAC, 1, [pfc.NumClasses]uint16{q}), HasTrailer: true, Trailer: t}
			g.PFC.Dst = dst
		}
		g.Encode(buf[:])
		now := clock.Now()
		p.Send(frames)
		e := reactEvent{Kind: kind, Seq: seq, T: now}
		if kind == 't' {
			e.Req = req
		}
		ev = append(ev, e)
		time.Sleep(time.Duration(wait))
	}
	send('u', hold)
	for i := 0; i < cfg.Cycles && ctx.Err() == nil; i++ {
		send('p', hold)
		send('u', hold)
	}
	for i := 0; i < cfg.Timed && ctx.Err() == nil; i++ {
		send('t', req+hold)
	}
	send('p', 0)
	return ev
}

// reactLags reads the receiver's sorted kernel receive times rx against
// the FM's events. A pause's stop lag is the last frame received before
// the next event, less the pause's send time: the frame's start on an
// emulated wire, i.e. its end less one frame time (ReactSize.Stop); it
// is negative when the sender was between frames, by up to a frame time.
// An unpause's resume lag is the first frame after it. A timed pause's
// deviation is the first frame after half its length, less its send time
// and length. Events with no frame to measure (the sender was not
// sending) give no sample.
func reactLags(ev []reactEvent, rx []int64) (stop, resume, dev []time.Duration) {
	first := func(t int64) int { i, _ := slices.BinarySearch(rx, t); return i } // first rx ≥ t
	for i, e := range ev {
		end, prev := int64(1<<62), int64(0)
		if i+1 < len(ev) {
			end = ev[i+1].T
		}
		if i > 0 {
			prev = ev[i-1].T
		}
		switch e.Kind {
		case 'p':
			if j := first(end) - 1; j >= 0 && rx[j] > prev {
				stop = append(stop, time.Duration(rx[j]-e.T))
			}
		case 'u':
			if j := first(e.T); j < len(rx) && rx[j] < end {
				resume = append(resume, time.Duration(rx[j]-e.T))
			}
		case 't':
			if j := first(e.T + e.Req/2); j < len(rx) && rx[j] < end {
				dev = append(dev, time.Duration(rx[j]-e.T-e.Req))
			}
		}
	}
	return stop, resume, dev
}

// senderLags matches the sender's records to the FM's events by sequence
// number: each pause's lag until the sender had it, and every control
// frame's delivery (sent → h1's kernel receive).
func senderLags(ev []reactEvent, seen []reactSeen) (stop, delivery []time.Duration) {
	for _, s := range seen {
		i := int(s.Seq) - 1 // the FM numbers its frames 1, 2, …
		if i < 0 || i >= len(ev) || ev[i].Seq != s.Seq {
			continue
		}
		if s.Rx != 0 {
			delivery = append(delivery, time.Duration(s.Rx-ev[i].T))
		}
		if ev[i].Kind == 'p' {
			stop = append(stop, time.Duration(s.Seen-ev[i].T))
		}
	}
	return stop, delivery
}

// reactSender is h1: a sender honouring PFC in software through the real
// gate in paper mode (class 0 goes to h2), on a locked thread pinned to
// the last CPU (the FM's is on the first). While the
// class is open it releases a frame each time the last one's wire time
// at the rate is over (the gate's shaper model), so the host's TBF never
// queues and a stop is seen within a frame time, and it polls its control
// socket between frames (a spin for the last 150 µs); while paused it
// sleeps in ppoll until a control frame or the pause's end.
type reactSender struct {
	data, ctl     *rawio.Port
	dst           [6]byte
	fl            int
	rate          uint64
	rt            int
	sched         string
	cpu           int
	sent, refused uint64
	seen          []reactSeen // the control frames taken (capacity allocated beforehand)
}

func (s *reactSender) run(stop *atomic.Bool) error {
	sched, rtErr := lockProbeThread(s.rt)
	s.sched, s.cpu = sched, pinThread(runtime.NumCPU()-1)
	g, err := gate.New(gate.Config{Mode: gate.Paper, Rate: s.rate, Overhead: 24, MinFrame: 60})
	if err != nil {
		return err
	}
	sc := wire.Schedule{Round: reactRound, NHosts: 2, NSlots: 1}
	for i := range sc.ClassMap {
		sc.ClassMap[i] = -1
	}
	sc.ClassMap[1] = 0 // class 0 is the way to h2
	g.OnSchedule(&sc)
	var tx [32][]byte
	for i := range tx {
		b := make([]byte, s.fl)
		copy(b[0:6], s.dst[:])
		copy(b[6:12], s.data.MAC[:])
		binary.BigEndian.PutUint16(b[12:], wire.DataEtherType)
		tx[i] = b
	}
	var cb [16][]byte
	var cback [16][128]byte
	var cl [16]int
	var cts [16]int64
	for i := range cb {
		cb[i] = cback[i][:]
	}
	var gr wire.Grant
	fds := []unix.PollFd{{Fd: int32(s.ctl.Fd()), Events: unix.POLLIN}}
	var vf int64
	for !stop.Load() {
		now := clock.Now()
		for {
			k, err := s.ctl.Recv(cb[:], cl[:], cts[:])
			if err != nil || k == 0 {
				break
			}
			seen := clock.Now()
			for j := 0; j < k; j++ {
				if wire.DecodeGrant(cb[j][:cl[j]], &gr) != nil {
					continue
				}
				g.OnGrant(now, cmp0(cts[j], now), &gr)
				if len(s.seen) < cap(s.seen) {
					s.seen = append(s.seen, reactSeen{Seq: gr.Seq, Rx: cts[j], Seen: seen})
				}
			}
		}
		if g.Open(now)&1 == 0 {
			pollUntil(fds, min(g.NextDeadline(now), now+int64(10*time.Millisecond)))
			continue
		}
		w, ok := g.Window(now, 0)
		n := 0
		for ok && n < len(tx) && vf <= now {
			vf = g.Sent(now, w, s.fl)
			n++
		}
		if n > 0 {
			t := uint64(clock.Now())
			for _, b := range tx[:n] {
				binary.BigEndian.PutUint64(b[14:], t)
			}
			k, _ := s.data.Send(tx[:n])
			s.sent += uint64(k)
			s.refused += uint64(n - k)
		}
		pollUntil(fds, vf) // until the frame's wire time is over, or a control frame
	}
	return rtErr
}

// cmp0 is v, or def if v is 0 (no kernel time stamp).
func cmp0(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// reactReceiver is h2: it keeps the kernel receive time of every data
// frame and its transit since the sender released it (the send time is
// in its first payload bytes), in the capacity allocated beforehand (more
// are counted).
type reactReceiver struct {
	rx      []int64
	transit []time.Duration
	over    uint64
}

func (r *reactReceiver) run(p *rawio.Port, stop *atomic.Bool) {
	recvEach(p, 9216, stop, func(b []byte, ts int64) {
		if ts == 0 {
			return
		}
		if len(r.rx) == cap(r.rx) {
			r.over++
			return
		}
		r.rx = append(r.rx, ts)
		if len(b) >= 22 {
			r.transit = append(r.transit, time.Duration(ts-int64(binary.BigEndian.Uint64(b[14:]))))
		}
	})
}

// Text is the table and the verdict.
func (r *TDMAProbeReactResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "software PFC: h1 → h2 at %s, the FM pauses h1; sender thread %s\n\n", c.Rate, r.Sender)
	tw := report.NewTable(&b)
	fmt.Fprintln(tw, "size B\tframe µs\tstop p50 µs\tp99\twire quiet p50 µs\tsender stop p50 µs\tp99\tresume p50 µs\tp99\tdelivery p50 µs\ttimed pause µs\tdeviation p50 µs\tp99\tsent\tlost\tsocket drops\tCPU %\tload avg\t")
	for _, s := range r.Sizes {
		dev50, dev99 := "-", "-" // no timed pause measured
		if s.TimedDev.N > 0 {
			dev50, dev99 = strconv.FormatFloat(s.TimedDev.P50, 'f', 1, 64), strconv.FormatFloat(s.TimedDev.P99, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%s\t%s\t%d\t%d\t%d\t%.0f\t%.1f\t\n", s.Size, s.FrameUs, s.Stop.P50, s.Stop.P99,
			s.Stop.P50+s.FrameUs, s.SenderStop.P50, s.SenderStop.P99, s.Resume.P50, s.Resume.P99, s.Delivery.P50, s.RequestedUs, dev50, dev99, s.Sent, s.Lost, s.SockDrops, s.CPUBusy, s.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintln(&b, "\nstop lag: pause sent → h2's last frame (its end on a wire less one frame time: within a frame time of the sender's stop);")
	fmt.Fprintln(&b, "wire quiet: stop lag + one frame time, when a wire would carry no more (Fig. 2 top: grows with the frame size);")
	fmt.Fprintln(&b, "sender stop: pause sent → the sender has it; resume lag: unpause sent → h2's first frame; delivery: control frame sent → h1's kernel;")
	fmt.Fprintln(&b, "deviation: a quanta-timed pause's silence beyond its length")
	fmt.Fprintf(&b, "paper: %s\n", r.Summary.Paper)
	r.Machine.text(&b)
	return b.String()
}

// WriteFiles writes react.json, react.csv (every lag) and react.png
// (medians against frame size, Figs. 2 and 5 in shape) into dir.
func (r *TDMAProbeReactResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	us := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 3, 64) }
	var groups []string
	series := []report.BarSeries{{Name: "stop p50"}, {Name: "wire quiet p50"}, {Name: "sender stop p50"}, {Name: "resume p50"}, {Name: "timed pause deviation p50"}}
	for _, s := range r.Sizes {
		for k, v := range [][]time.Duration{s.stop, s.sstop, s.res, s.dev} {
			for i, d := range v {
				rows = append(rows, []string{strconv.Itoa(s.Size), []string{"stop", "sender_stop", "resume", "timed_deviation"}[k], strconv.Itoa(i), us(d)})
			}
		}
		groups = append(groups, strconv.Itoa(s.Size)+" B")
		for i, v := range []float64{s.Stop.P50, s.Stop.P50 + s.FrameUs, s.SenderStop.P50, s.Resume.P50, s.TimedDev.P50} {
			series[i].Values = append(series[i].Values, v)
		}
	}
	return report.WriteTablePlot(dir, "react", r, []string{"size", "what", "event", "lag_us"}, rows, "react.png", func(png string) error {
		return report.PlotBars(png, "software PFC reaction at "+r.Config.Rate.String()+"bit/s (medians)", "µs", groups, series, 0)
	})
}
