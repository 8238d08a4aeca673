package lgexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// ChaosEvents are the faults `linkfabric chaos` knows: kill -9 a switch's
// dataplane and start it again, take a switch's link port down and up, stop
// a switch's dataplane (SIGSTOP) and let it continue, or send hostile
// link-header frames into a switch's running link port.
var ChaosEvents = []string{"kill-sw1", "kill-sw2", "flap-sw1", "flap-sw2", "stall-sw2", "hostile-sw2"}

// ChaosConfig configures the fault experiment.
type ChaosConfig struct {
	// Mode is the dataplane mode of both switches (lg or lgnb).
	Mode string `json:"mode"`
	// Events run one after the other on one testbed (ChaosEvents).
	Events []string `json:"events"`
	// Settle is how long TCP runs before an event; Watch how long after the
	// event ends the experiment waits for TCP to carry data again.
	Settle time.Duration `json:"settle_ns"`
	Watch  time.Duration `json:"watch_ns"`
	// Flap is how long a link port stays down.
	Flap time.Duration `json:"flap_ns"`
	// After each event, UDP from h1 to h2 at UDPRate (bit/s) for UDPTime
	// with Bernoulli loss UDPLoss on both directions of the link.
	UDPLoss float64 `json:"udp_loss"`
	UDPRate float64 `json:"udp_rate_bps"`
	// UDPFlip is the probability that a frame the impairment does not drop
	// gets one bit flipped, on both directions, during the UDP check: the
	// integrity check must keep every corrupted frame from the host.
	UDPFlip float64 `json:"udp_flip"`
	// Hostile is how many hostile frames the hostile event sends.
	Hostile int           `json:"hostile_frames"`
	UDPTime time.Duration `json:"udp_ns"`
	// Stall is how long a stalled dataplane stays stopped (SIGSTOP, then
	// SIGCONT): longer than the link session's dead-peer timeout (500 ms).
	Stall time.Duration `json:"stall_ns"`
	// A direction has resumed at the first sample from which it carries at
	// least ResumeShare of its rate before the event, sustained over the
	// next ResumeWindow (a flush of frames held during the event is not a
	// resumption).
	ResumeShare  float64       `json:"resume_share"`
	ResumeWindow time.Duration `json:"resume_window_ns"`
	// RunArgs are extra `linkfabric run` arguments.
	RunArgs []string `json:"run_args,omitempty"`
	CC      string   `json:"cc"`
}

// Normalize fills defaults and checks the configuration.
func (c *ChaosConfig) Normalize() error {
	c.Mode = cmp.Or(c.Mode, "lg")
	if c.Mode != "lg" && c.Mode != "lgnb" {
		return fmt.Errorf("chaos --mode %q: use lg or lgnb", c.Mode)
	}
	if len(c.Events) == 0 {
		c.Events = ChaosEvents
	}
	for _, ev := range c.Events {
		if !slices.Contains(ChaosEvents, ev) {
			return fmt.Errorf("chaos --events: unknown event %q (know %s)", ev, strings.Join(ChaosEvents, ", "))
		}
	}
	c.Settle = bed.Positive(c.Settle, 2*time.Second)
	c.Watch = bed.Positive(c.Watch, 4*time.Second)
	c.Flap = bed.Positive(c.Flap, 2*time.Second)
	if c.UDPLoss < 0 || c.UDPLoss >= 1 {
		return fmt.Errorf("chaos --udp-loss %g: use a probability in [0, 1)", c.UDPLoss)
	}
	c.UDPRate = bed.Positive(c.UDPRate, 50e6)
	if c.UDPFlip < 0 || c.UDPFlip >= 1 {
		return fmt.Errorf("chaos --udp-flip %g: use a probability in [0, 1)", c.UDPFlip)
	}
	c.Hostile = bed.Positive(c.Hostile, 120_000)
	c.UDPTime = bed.Positive(c.UDPTime, 3*time.Second)
	c.Stall = bed.Positive(c.Stall, 1500*time.Millisecond)
	if c.ResumeShare <= 0 || c.ResumeShare > 1 {
		c.ResumeShare = 0.25
	}
	c.ResumeWindow = bed.Positive(c.ResumeWindow, 500*time.Millisecond)
	c.CC = cmp.Or(c.CC, "auto")
	return nil
}

// ChaosEvent is what one fault did.
type ChaosEvent struct {
	Event string `json:"event"`
	// Before is the TCP rate each way in the Settle period before the event
	// (bit/s): h1→h2, h2→h1.
	BeforeBps [2]float64 `json:"before_bps"`
	// ResumeMs is, per direction, the time from the end of the event (the
	// restarted dataplane ready, the link port up again, the stalled
	// dataplane continued) until TCP carried ResumeShare of its rate before,
	// sustained over ResumeWindow; -1 if it did not within Watch.
	ResumeMs [2]float64 `json:"resume_ms"`
	// FirstMs is, per direction, the time from the end of the event until
	// the receiving host counted any bytes again (a sample's resolution);
	// -1 if it did not within Watch. Far below ResumeMs, the link carried
	// frames again early and TCP was slow to use it.
	FirstMs [2]float64 `json:"first_ms"`
	// PeerDeadMs (kill events) is the time from the kill to the surviving
	// switch's link session leaving up (its dead-peer timeout, read from
	// its statistics every 10 ms), and PeerTimeouts what its counter of
	// them rose by; the killed dataplane is started again only then. -1:
	// the session stayed up for deadWatch.
	PeerDeadMs   float64 `json:"peer_dead_ms,omitempty"`
	PeerTimeouts uint64  `json:"peer_timeouts,omitempty"`
	// Hostile (the hostile event) is what was sent into the link port.
	Hostile *HostileSent `json:"hostile,omitempty"`
	// AfterBps is the TCP rate each way over the last second of Watch (bit/s).
	AfterBps [2]float64 `json:"after_bps"`
	// Alive is whether every dataplane still ran after the event (a flap
	// must not end one; a killed one was started again).
	Alive bool   `json:"alive"`
	Error string `json:"error,omitempty"`
	// UDP through the link afterwards, with UDPLoss on both directions.
	UDP UDPCheck `json:"udp"`
}

// UDPCheck is one iperf3 UDP run from h1 to h2.
type UDPCheck struct {
	Packets    int `json:"packets"`
	Lost       int `json:"lost"`
	OutOfOrder int `json:"out_of_order"`
	// CsumErrors is h2's UDP InCsumErrors during the run: a corrupted
	// datagram delivered. RcvbufErrors is h2's UDP RcvbufErrors: datagrams
	// its socket had no room for (iperf3 not scheduled in time), lost at the
	// host, not on the link.
	CsumErrors   uint64 `json:"csum_errors"`
	RcvbufErrors uint64 `json:"rcvbuf_errors"`
	// LinkDropped is what the impairment dropped on both link ports, and
	// LinkFlipped the frames it corrupted (one bit flipped).
	LinkDropped uint64 `json:"link_dropped"`
	LinkFlipped uint64 `json:"link_flipped"`
	Error       string `json:"error,omitempty"`
}

// OK reports whether the UDP run lost nothing and kept order.
func (u UDPCheck) OK() bool {
	return u.Error == "" && u.Packets > 0 && u.Lost == 0 && u.OutOfOrder == 0 && u.CsumErrors == 0
}

// ChaosResult is the outcome of `linkfabric chaos`.
type ChaosResult struct {
	Config ChaosConfig `json:"config"`
	report.RunInfo
	CC     string        `json:"cc"`
	Events []*ChaosEvent `json:"events"`
	// Summary: per event <event>_alive, <event>_resume_ms (the slower
	// direction; -1 if either did not resume) and <event>_udp_ok; failed,
	// the events after which a dataplane was gone, TCP did not resume
	// both ways, or the UDP check lost, reordered or corrupted anything;
	// pass: every event ran and none failed.
	Summary map[string]any `json:"summary"`
}

func (r *ChaosResult) summarize() {
	s := map[string]any{}
	failed := []string{}
	for _, ev := range r.Events {
		resume := slices.Max(ev.ResumeMs[:])
		if slices.Min(ev.ResumeMs[:]) < 0 {
			resume = -1
		}
		s[ev.Event+"_alive"] = ev.Alive
		s[ev.Event+"_resume_ms"] = resume
		s[ev.Event+"_udp_ok"] = ev.UDP.OK()
		if !ev.Alive || resume < 0 || !ev.UDP.OK() || ev.Error != "" {
			failed = append(failed, ev.Event)
		}
	}
	for _, ev := range r.Config.Events[len(r.Events):] {
		failed = append(failed, ev+" (not run)")
	}
	r.Summary = report.Verdict(s, failed)
}

// Chaos runs TCP both ways through the dataplanes of the pair testbed and
// applies each fault in turn: it reports how long TCP took to carry data
// again, whether the dataplanes lived, and whether UDP through the link
// afterwards lost anything or arrived out of order.
func Chaos(ctx context.Context, e *bed.Env, cfg ChaosConfig) (*ChaosResult, error) {
	cc, err := bed.PrepareCC(e, &cfg, &cfg.CC)
	if err != nil {
		return nil, err
	}
	res := &ChaosResult{Config: cfg, RunInfo: report.NewRunInfo(), CC: cc}
	per := cfg.Settle + cfg.Watch + cfg.UDPTime + 3*time.Second
	e.Printf("chaos: pair testbed %q, %s both ends, TCP both ways (%s); events %s; about %s",
		e.Prefix, cfg.Mode, cc, strings.Join(cfg.Events, ","), (time.Duration(len(cfg.Events)) * per).Round(time.Second))
	tb, err := e.Up(netns.ForwardingNone, 0)
	if err != nil {
		return nil, err
	}
	defer tb.Down()
	if _, err := bed.PaperTCP(e, cc); err != nil {
		return nil, err
	}
	dp, err := e.StartDataplanes(ctx, cfg.Mode, cfg.RunArgs...)
	if err != nil {
		return nil, err
	}
	defer dp.Stop()
	defer res.summarize()
	for i, ev := range cfg.Events {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		e.Printf("chaos: [%d/%d] %s", i+1, len(cfg.Events), ev)
		r := chaosEvent(ctx, e, dp, ev, cfg, cc)
		res.Events = append(res.Events, r)
		e.Printf("chaos: [%d/%d] %s", i+1, len(cfg.Events), r.line())
		if !r.Alive {
			break // no dataplane to run the next event on
		}
	}
	return res, nil
}

func chaosEvent(ctx context.Context, e *bed.Env, dp *bed.Dataplanes, ev string, cfg ChaosConfig, cc string) *ChaosEvent {
	r := &ChaosEvent{Event: ev, ResumeMs: [2]float64{-1, -1}, FirstMs: [2]float64{-1, -1}}
	fail := func(err error) *ChaosEvent {
		r.Error = err.Error()
		r.Alive = dp.Alive() == nil
		return r
	}
	err := e.ReachH2(ctx, 10*time.Second)
	if err != nil {
		return fail(fmt.Errorf("before %s, h1 cannot reach h2: %w", ev, err))
	}
	stopTCP, err := tcpBothWays(ctx, e, cc, cfg.Settle+cfg.Watch+30*time.Second)
	if err != nil {
		return fail(err)
	}
	defer stopTCP()
	s, err := sampleRx(e, ctx)
	if err != nil {
		return fail(err)
	}
	defer s.stop()
	time.Sleep(cfg.Settle)
	r.BeforeBps = s.rate(time.Now().Add(-cfg.Settle/2), time.Now())
	var end time.Time
	sw := ev[len(ev)-3:]
	switch {
	case strings.HasPrefix(ev, "kill-"):
		if err := dp.Kill(sw); err != nil {
			return fail(err)
		}
		r.PeerDeadMs, r.PeerTimeouts = watchPeerDead(ctx, e, otherSwitch(sw))
		if err := dp.Restart(sw); err != nil {
			return fail(err)
		}
		end = time.Now()
	case strings.HasPrefix(ev, "flap-"):
		if err := bed.SetLinkUp(e.NS(sw), "link0", false); err != nil {
			return fail(err)
		}
		time.Sleep(cfg.Flap)
		if err := bed.SetLinkUp(e.NS(sw), "link0", true); err != nil {
			return fail(err)
		}
		end = time.Now()
	case strings.HasPrefix(ev, "hostile-"):
		h, err := sendHostile(e, otherSwitch(sw), cfg.Hostile, 1)
		if err != nil {
			return fail(err)
		}
		r.Hostile = h
		end = time.Now()
	case strings.HasPrefix(ev, "stall-"):
		if err := dp.Signal(sw, syscall.SIGSTOP); err != nil {
			return fail(err)
		}
		time.Sleep(cfg.Stall)
		if err := dp.Signal(sw, syscall.SIGCONT); err != nil {
			return fail(err)
		}
		end = time.Now()
	}
	time.Sleep(cfg.Watch)
	r.Alive = dp.Alive() == nil
	r.ResumeMs = s.resumed(end, r.BeforeBps, cfg.ResumeShare, cfg.ResumeWindow)
	r.FirstMs = s.first(end)
	r.AfterBps = s.rate(time.Now().Add(-time.Second), time.Now())
	stopTCP()
	s.stop()
	if !r.Alive {
		r.Error = dp.Alive().Error()
		return r
	}
	r.UDP = udpCheck(ctx, e, cfg)
	return r
}

// tcpBothWays runs one iperf3 TCP connection with --bidir from h1 to h2.
func tcpBothWays(ctx context.Context, e *bed.Env, cc string, d time.Duration) (stop func(), err error) {
	stopSrv, err := bed.Server(ctx, e, e.NS("h2"), "iperf3", "-s", "-1", "-p", "5202")
	if err != nil {
		return nil, err
	}
	cmd := netns.Command(ctx, e.NS("h1"), "iperf3", "-c", bed.H2Addr, "-p", "5202", "--bidir", "-C", cc,
		"-t", strconv.Itoa(int(d.Seconds())), "--connect-timeout", "3000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		stopSrv()
		return nil, fmt.Errorf("iperf3 in %s: %w", e.NS("h1"), err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
			stopSrv()
		})
	}, nil
}

// udpCheck runs UDP from h1 to h2 with the configured loss on both link
// directions (the impairment stage of each switch's running dataplane).
func udpCheck(ctx context.Context, e *bed.Env, cfg ChaosConfig) (u UDPCheck) {
	imp := bpf.Loss(cfg.UDPLoss, 0, 7)
	imp.FlipProb = cfg.UDPFlip
	for _, sw := range []string{"sw1", "sw2"} {
		if err := bed.Impair(e, sw, func(im *bpf.Impairer) error {
			if err := im.SetImpair(imp); err != nil {
				return err
			}
			return im.ResetImpairStats()
		}); err != nil {
			u.Error = err.Error()
			return u
		}
	}
	defer func() {
		for _, sw := range []string{"sw1", "sw2"} {
			bed.Impair(e, sw, func(im *bpf.Impairer) error {
				st, err := im.ImpairStats()
				u.LinkDropped += st.Dropped
				u.LinkFlipped += st.Flipped
				if err != nil {
					return err
				}
				return im.ClearImpair()
			})
		}
	}()
	snmp0, _ := netns.SNMPAll(e.NS("h2"))
	r, err := bed.UDPRun(ctx, e, 5203, cfg.UDPRate, max(cfg.UDPTime, time.Second), nil)
	if err != nil {
		u.Error = err.Error()
		return u
	}
	u.Packets, u.Lost, u.OutOfOrder = r.Packets, r.Lost, r.OutOfOrder
	snmp1, _ := netns.SNMPAll(e.NS("h2"))
	u.CsumErrors = snmp1["UdpInCsumErrors"] - snmp0["UdpInCsumErrors"]
	u.RcvbufErrors = snmp1["UdpRcvbufErrors"] - snmp0["UdpRcvbufErrors"]
	return u
}

// rxSampler reads h2's and h1's eth0 receive byte counters every 10 ms:
// index 0 is the h1→h2 direction, 1 is h2→h1.
type rxSampler struct {
	mu      sync.Mutex
	at      []time.Time
	bytes   [][2]uint64
	done    chan struct{}
	stopped sync.Once
}

const sampleEvery = 10 * time.Millisecond

func sampleRx(e *bed.Env, ctx context.Context) (*rxSampler, error) {
	s := &rxSampler{done: make(chan struct{})}
	read := func() ([2]uint64, error) {
		var b [2]uint64
		for i, h := range []string{"h2", "h1"} {
			l, err := bed.Link(e.NS(h), "eth0")
			if err != nil {
				return b, err
			}
			b[i] = l.Attrs().Statistics.RxBytes
		}
		return b, nil
	}
	if _, err := read(); err != nil {
		return nil, err
	}
	go func() {
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				b, err := read()
				if err != nil {
					continue
				}
				s.mu.Lock()
				s.at = append(s.at, now)
				s.bytes = append(s.bytes, b)
				s.mu.Unlock()
			}
		}
	}()
	return s, nil
}

func (s *rxSampler) stop() { s.stopped.Do(func() { close(s.done) }) }

// rate is the mean receive rate of each direction between from and to, bit/s.
func (s *rxSampler) rate(from, to time.Time) [2]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := -1, -1
	for i, at := range s.at {
		if at.Before(from) || at.After(to) {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	var r [2]float64
	if first < 0 || last <= first {
		return r
	}
	secs := s.at[last].Sub(s.at[first]).Seconds()
	for d := range r {
		r[d] = float64(s.bytes[last][d]-s.bytes[first][d]) * 8 / secs
	}
	return r
}

// first returns, per direction, the time from end to the first sample after
// it that counted more bytes than the one before, in ms; -1 if none.
func (s *rxSampler) first(end time.Time) [2]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := [2]float64{-1, -1}
	for d := range out {
		for i := 1; i < len(s.at); i++ {
			if s.at[i-1].Before(end) || s.bytes[i][d] == s.bytes[i-1][d] {
				continue
			}
			out[d] = float64(s.at[i].Sub(end).Microseconds()) / 1e3
			break
		}
	}
	return out
}

// resumed returns, per direction, the time from end to the first sample
// from which the direction received at least share of its rate before
// (bit/s) over each fifth of the next window, in ms; -1 if none. Asking
// it of every fifth keeps a flush of frames held during the fault, followed
// by little, from counting as a resumption. Samples may be irregular (the
// sampler is late on a busy machine): each fifth is measured over the
// samples that span it.
func (s *rxSampler) resumed(end time.Time, before [2]float64, share float64, window time.Duration) [2]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := [2]float64{-1, -1}
	const parts = 5
	part := window / parts
	for d := range out {
		perSec := max(before[d]/8*share, 80<<10) // bytes/s
	next:
		for i, at := range s.at {
			if at.Before(end) {
				continue
			}
			from := i
			for k := 1; k <= parts; k++ {
				to := from
				for to+1 < len(s.at) && s.at[to+1].Sub(at) <= time.Duration(k)*part {
					to++
				}
				if to+1 >= len(s.at) && s.at[to].Sub(at) < time.Duration(k)*part-sampleEvery {
					break next // the samples end before a whole window
				}
				if to == from {
					to++ // the gap to the next sample is longer than a fifth
				}
				span := s.at[to].Sub(s.at[from]).Seconds()
				if float64(s.bytes[to][d]-s.bytes[from][d]) < perSec*span {
					continue next
				}
				from = to
			}
			// The flow started in the first sample interval after i that
			// carried data.
			k := i + 1
			for k < len(s.at) && s.bytes[k][d] == s.bytes[k-1][d] {
				k++
			}
			out[d] = float64(max(0, s.at[k-1].Sub(end)).Microseconds()) / 1e3
			break
		}
	}
	return out
}

func (r *ChaosEvent) line() string {
	alive := "dataplanes alive"
	if !r.Alive {
		alive = "A DATAPLANE EXITED"
	}
	s := fmt.Sprintf("%-11s %s; %sTCP before %.0f/%.0f Mbit/s, resumed after %s / %s, then %.0f/%.0f Mbit/s; UDP %s",
		r.Event, alive, r.faultNote(), r.BeforeBps[0]/1e6, r.BeforeBps[1]/1e6, msStr(r.ResumeMs[0]), msStr(r.ResumeMs[1]),
		r.AfterBps[0]/1e6, r.AfterBps[1]/1e6, r.UDP.String())
	if r.Error != "" {
		s += "; error: " + r.Error
	}
	return s
}

func msStr(ms float64) string {
	if ms < 0 {
		return "never"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
}

func (u UDPCheck) String() string {
	if u.Error != "" {
		return "error: " + u.Error
	}
	return fmt.Sprintf("%d datagrams, %d lost (%d of them at h2's full socket), %d out of order, %d checksum errors (link dropped %d, corrupted %d)",
		u.Packets, u.Lost, u.RcvbufErrors, u.OutOfOrder, u.CsumErrors, u.LinkDropped, u.LinkFlipped)
}

// Text renders the result.
func (r *ChaosResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %s both ends, TCP both ways (%s), UDP at %.0f Mbit/s with loss %g and bit flips %g each way afterwards\n",
		r.Config.Mode, r.CC, r.Config.UDPRate/1e6, r.Config.UDPLoss, r.Config.UDPFlip)
	fmt.Fprintf(&b, "%-11s  %-6s  %-17s  %-17s  %-17s  %s\n", "event", "alive", "TCP before Mbit/s", "resumed after", "TCP after Mbit/s", "UDP afterwards")
	for _, e := range r.Events {
		alive := "yes"
		if !e.Alive {
			alive = "NO"
		}
		fmt.Fprintf(&b, "%-11s  %-6s  %-17s  %-17s  %-17s  %s\n", e.Event, alive,
			fmt.Sprintf("%.0f / %.0f", e.BeforeBps[0]/1e6, e.BeforeBps[1]/1e6),
			msStr(e.ResumeMs[0])+" / "+msStr(e.ResumeMs[1]),
			fmt.Sprintf("%.0f / %.0f", e.AfterBps[0]/1e6, e.AfterBps[1]/1e6), e.UDP.String())
		if n := e.faultNote(); n != "" {
			fmt.Fprintf(&b, "             %s\n", strings.TrimSuffix(n, "; "))
		}
		if e.Error != "" {
			fmt.Fprintf(&b, "             error: %s\n", e.Error)
		}
	}
	fmt.Fprintf(&b, "(directions: h1→h2 / h2→h1; resumed: %.0f%% of the rate before, sustained %v, from the restarted dataplane ready, the port up again or the stalled dataplane continued)\n",
		r.Config.ResumeShare*100, r.Config.ResumeWindow)
	return b.String()
}
