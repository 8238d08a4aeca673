// Package host is the TDMA host agent (design §3.6): one locked OS thread
// runs the gate (package gate) on grants received with their kernel time
// stamps, and either sends the built-in workloads itself as raw Ethernet
// frames in its windows (raw mode, the paper's §5.3.2) or releases kernel
// TCP/UDP held in an NFQUEUE by verdicts inside the windows (nfqueue mode).
// A UDP goroutine takes schedules, calibration echoes and d_est from the
// fabric manager; the agent reports its demand once a round.
package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/fm"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/nfq"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/wire"
	"golang.org/x/sys/unix"
)

// Config configures an agent.
type Config struct {
	Dev   string
	Index int          // this host's index in Hosts (0-based)
	Hosts []netip.Addr // every host, in the FM's order
	FM    netip.Addr
	Mode  gate.Discipline
	NFQ   bool   // nfqueue mode; raw otherwise
	Queue uint16 // NFQUEUE number (nfqueue mode)
	// NFQActive (nfqueue mode), if > 0: a destination the gate held a
	// packet for within this long is reported as wanting every slot
	// (ActiveDemand), not as what it holds. A TCP sender puts at the gate
	// only what its window lets it: a round planned for what is held at
	// a report gives a flow the rate it has, never more; TCP beneath a
	// fixed schedule (the paper's §6.4) takes what the slots give it.
	NFQActive time.Duration
	// GSOMax (nfqueue mode) caps the host's GSO packets (0: the default,
	// host.GSOMax): a verdict releases one whole, so a window carries
	// only what fits in it of whole ones.
	GSOMax int
	Rate   uint64 // line rate, bit/s (the host's TBF)
	// Margin is taken off every close (the timer's error); Backlog is how
	// much may wait in the host's TBF ahead of the wire (raw mode).
	Margin  time.Duration
	Backlog int
	// Spin is how long before a window opens the agent stops sleeping and
	// polls its sockets in a loop (0: it only sleeps). Measured on the
	// 4-host star: without it, windows opened 151 µs late at p50.
	Spin time.Duration
	MTU  int
	RT   int // SCHED_FIFO priority; 0: the default scheduler
	// OpenRT, if > 0 (and RT is 0), is the SCHED_FIFO priority of the
	// agent's thread from when it waits for a window's open until it has
	// released that window's first frames; the default scheduler
	// otherwise (see Agent.openPriority).
	OpenRT int
	// DropControl drops this fraction of received grants (seeded): lost
	// pause/unpause frames on purpose.
	DropControl float64
	Seed        uint64
	Work        Workload
	// ExitAfter, if > 0, ends Run this long after a shuffle is complete
	// (everything sent and received).
	ExitAfter time.Duration
	// Duration, if > 0, ends Run this long after the first control frame
	// heard (the FM's first grant), not after the agent's start: the FM's
	// first round waits for every agent, and on a busy machine that can
	// take longer than a run measures.
	Duration time.Duration
}

// Workload is what a raw-mode agent sends. Every agent answers the RPC
// requests (pings) it receives, whatever its workload.
type Workload struct {
	// Kind: shuffle (Bytes to every other host), bulk (Bytes, 0: endless,
	// to Dst), rr (blocks of Bytes to every other host in turn, endless:
	// in each window to a host it finishes that host's current block and
	// starts at most one new one, §6.3), ping (RPCs to the server Dst, §6.2),
	// pong (answers pings, and reserves a slot a round for its answers to
	// the client Dst) or none (receive only).
	Kind  string
	Bytes int64
	Dst   int
	// ping: a batch of requests every PingEvery, from PingDelay after the
	// first schedule; in the window to the server, one request at each of
	// PingOffsets after the window opens (the slot's start plus the guard).
	PingEvery   time.Duration
	PingOffsets []time.Duration
	PingDelay   time.Duration
}

// check validates w for host index of n.
func (w *Workload) check(index, n int, nfq bool) error {
	switch w.Kind {
	case "", "none", "shuffle", "bulk":
	case "rr":
		if w.Bytes <= 0 {
			return fmt.Errorf("host: workload rr needs a block size (--size)")
		}
	case "ping":
		if w.PingEvery <= 0 {
			return fmt.Errorf("host: workload ping needs --ping-every > 0")
		}
		if len(w.PingOffsets) == 0 {
			w.PingOffsets = []time.Duration{0}
		}
		if len(w.PingOffsets) > maxPingOffsets {
			return fmt.Errorf("host: %d ping offsets: at most %d", len(w.PingOffsets), maxPingOffsets)
		}
		for _, o := range w.PingOffsets {
			if o < 0 {
				return fmt.Errorf("host: ping offset %v is negative", o)
			}
		}
	case "pong":
	default:
		return fmt.Errorf("host: workload %q: want shuffle, bulk, rr, ping, pong or none", w.Kind)
	}
	if (w.Kind == "ping" || w.Kind == "pong" || w.Kind == "bulk") && (w.Dst < 0 || w.Dst >= n || w.Dst == index) {
		return fmt.Errorf("host: workload %s: peer index %d (--dst) must be another host, 0..%d", w.Kind, w.Dst, n-1)
	}
	if nfq && w.Kind != "" && w.Kind != "none" {
		return fmt.Errorf("host: workload %s needs --gate raw (nfqueue mode gates kernel traffic)", w.Kind)
	}
	return nil
}

// Stats are an agent's counters.
type Stats struct {
	Host int    `json:"host"`
	Mode string `json:"mode"`
	Gate string `json:"gate"`
	RT   bool   `json:"rt"`
	// OpenRT: the agent's thread ran under SCHED_FIFO while it waited for
	// its windows' opens (Config.OpenRT); OpenRTErrors counts the changes
	// of policy the kernel refused (it then stays off).
	OpenRT       bool       `json:"open_rt"`
	OpenRTErrors uint64     `json:"open_rt_errors"`
	G            gate.Stats `json:"gate_stats"`
	CtlDrop      uint64     `json:"ctl_dropped_on_purpose"`
	BadCtl       uint64     `json:"bad_control_frames"`
	// Per class: bytes released and windows used.
	ClassBytes   [8]uint64 `json:"class_bytes"`
	ClassWindows [8]uint64 `json:"class_windows"`
	// LateOpens: windows whose first frame left more than 100 µs after
	// the window opened; OpenLate* its distribution.
	LateOpens   uint64  `json:"late_opens"`
	OpenLateP50 float64 `json:"open_late_p50_us"`
	OpenLateP99 float64 `json:"open_late_p99_us"`
	LoopLateP99 float64 `json:"loop_late_p99_us"`
	TxShort     uint64  `json:"tx_short"` // frames the kernel refused (rolled back)
	// Returned: frames a gate sent back (they left too late, or reached
	// their receiver too late);
	// Resent: sent again in a later window; RetRPC: RPC frames among the
	// returned ones (not sent again); RetFull: returned frames the agent
	// had no room to hold (lost).
	Returned uint64 `json:"returned"`
	// Stopped counts the returned frames by cause (gate.Stopped: the
	// collisions the gates prevented), StopSample holds the first ones
	// in full (transit: from the planned departure to the gate).
	Stopped    gate.Causes      `json:"stopped_causes"`
	StopSample []gate.Collision `json:"stopped_sample,omitempty"`
	Resent     uint64           `json:"resent"`
	RetRPC     uint64           `json:"returned_rpc"`
	RetFull    uint64           `json:"returned_lost"`
	SentBytes  []int64          `json:"sent_bytes"`
	FirstSend  int64            `json:"first_send_ns"`
	LastSend   int64            `json:"last_send_ns"`
	RecvBytes  []int64          `json:"recv_bytes"`
	RecvFrames uint64           `json:"recv_frames"`
	RecvDone   []int64          `json:"recv_done_ns"` // when each source's flow was complete (0: not)
	RecvLost   uint64           `json:"recv_lost"`
	SockDrops  uint64           `json:"recv_socket_drops"` // dropped at the data socket: the agent did not read in time
	BadData    uint64           `json:"bad_data_frames"`
	// Collisions: frames received (kernel time stamp) after their slot's
	// end plus the guard, when the next slot's sender may be sending, or
	// released before the slot's start plus the guard (gate.Classify);
	// Found counts them by cause, holds the first ones in full, and the
	// meetings of two senders' frames both inside their slots.
	Collisions uint64 `json:"collisions"`
	gate.Found
	// Entered: frames received with the exit gate's stamp of when they
	// entered the switch; EnteredOutside: of them, those that entered
	// outside their slot (gate.EnteredOutside: never, with the gate).
	Entered        uint64  `json:"entered"`
	EnteredOutside uint64  `json:"entered_outside"`
	CollBytes      uint64  `json:"collision_bytes"`
	CollMaxUs      float64 `json:"collision_max_late_us"`
	// CrossOrder: frames arriving after a frame of a later slot from
	// another sender (veth may reorder across CPUs; informational).
	CrossOrder uint64 `json:"cross_order"`
	Reordered  uint64 `json:"reordered"`
	DelayEst   int64  `json:"delay_est_ns"`
	Schedules  uint64 `json:"schedules"`
	// StaggeredSchedules and AlignedSchedules count the schedules taken
	// (each round's comes twice) by whether the FM staggered their
	// windows (wire.ScheduleStagger): the agent follows it. BadSchedules
	// counts schedules it could not decode (another version of the
	// format, a flag it does not know): it opens no window of their rounds.
	StaggeredSchedules uint64 `json:"staggered_schedules"`
	AlignedSchedules   uint64 `json:"aligned_schedules"`
	BadSchedules       uint64 `json:"bad_schedules"`
	// BadScheduleErr is why the first of them was refused (it names the
	// flags this host knows).
	BadScheduleErr string `json:"bad_schedule_err,omitempty"`
	// BudgetSchedules counts the schedules taken that carried slot
	// budgets (wire.ScheduleBudget, tdma fm --budget): a raw sender keeps
	// to them; KeepsBudgets says whether this agent does (not in
	// nfqueue mode).
	BudgetSchedules uint64  `json:"budget_schedules"`
	KeepsBudgets    bool    `json:"keeps_budgets"`
	Reports         uint64  `json:"reports"`
	Progress        []Point `json:"progress,omitempty"` // received bytes over time
	// SendSinceCtlMax: the longest time from the last control frame heard
	// (kernel receive time) to the moment a released frame's last byte
	// leaves the host's line (the shaper model), ns. A lease-mode host that
	// hears nothing goes silent: this stays within the lease.
	SendSinceCtlMax int64 `json:"send_since_ctl_max_ns"`
	// Gaps are the longest silences between released frames (raw mode).
	Gaps SendGaps `json:"send_gaps"`
	// Fill is how the windows were used (raw mode).
	Fill WindowFill `json:"window_fill"`
	// CtlDelay*: grant delivery delay, kernel receive time − the FM's send
	// time in the trailer (one clock for all namespaces), µs: p0.1, p50,
	// p99.9 and the largest. DelayEst above is the FM's estimate d_est.
	CtlDelayP001us float64 `json:"ctl_delay_p001_us"`
	CtlDelayP50us  float64 `json:"ctl_delay_p50_us"`
	CtlDelayP999us float64 `json:"ctl_delay_p999_us"`
	CtlDelayMaxus  float64 `json:"ctl_delay_max_us"`
	// RRBlocks: rr blocks handed to the wire in full.
	RRBlocks uint64    `json:"rr_blocks"`
	Ping     PingStats `json:"ping"`
	// nfqueue mode
	NFQHeldMax      int    `json:"nfq_held_max"`
	NFQReleased     uint64 `json:"nfq_released"`
	NFQQueueDropped uint64 `json:"nfq_queue_dropped"`
	NFQUserDropped  uint64 `json:"nfq_user_dropped"`
}

// Point is a progress sample: total bytes received by t (clock ns).
type Point struct {
	T     int64 `json:"t_ns"`
	Bytes int64 `json:"bytes"`
}

// SendGap is a silence of the sender: from when the last byte released
// before it left the line (shaper model) to the release of the next frame,
// with the last control frame heard before it (clock ns; 0: none).
type SendGap struct {
	From  int64 `json:"from_ns"`
	To    int64 `json:"to_ns"`
	Heard int64 `json:"heard_ns"`
}

// Len is the gap's length, ns.
func (g SendGap) Len() int64 { return g.To - g.From }

// SendGaps keeps the longest gaps, longest first (no allocation).
type SendGaps [4]SendGap

// Add records g if it is longer than the shortest kept.
func (s *SendGaps) Add(g SendGap) {
	if g.Len() <= s[len(s)-1].Len() {
		return
	}
	i := len(s) - 1
	for ; i > 0 && s[i-1].Len() < g.Len(); i-- {
		s[i] = s[i-1]
	}
	s[i] = g
}

// Agent is a host agent with its sockets open.
type Agent struct {
	cfg   Config
	g     *gate.Gate
	ctl   *rawio.Port
	data  *rawio.Port
	udp   *rawio.UDP
	q     *nfq.Queue
	macs  [][6]byte
	rng   *rand.Rand
	s     Stats
	delay *clock.Lateness // grant delivery delay
	sched chan wire.Schedule
	dEst  atomic.Int64
	nsch  atomic.Uint64
	// badSch: schedules DecodeSchedule refused (Stats.BadSchedules), and
	// why the first was (Stats.BadScheduleErr)
	badSch    atomic.Uint64
	badSchErr atomic.Pointer[string]
	stop      atomic.Bool
	// heardAt: when the loop first saw a control frame heard (Duration)
	heardAt int64
	// fifo: the thread runs under SCHED_FIFO (Config.OpenRT) now;
	// fifoSpin: its spin then, at most the staggered opens' spacing
	// (guard/N of the last schedule)
	fifo     bool
	fifoSpin int64
}

// New opens the agent's sockets in the calling thread's namespace and
// resolves its peers' MACs.
func New(cfg Config) (*Agent, error) {
	N := len(cfg.Hosts)
	if N < 2 || cfg.Index < 0 || cfg.Index >= N {
		return nil, fmt.Errorf("host: index %d of %d hosts (--index, --hosts)", cfg.Index, N)
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if cfg.Backlog == 0 {
		cfg.Backlog = 16 << 10
	}
	if cfg.Margin == 0 {
		cfg.Margin = 50 * time.Microsecond
	}
	if err := cfg.Work.check(cfg.Index, N, cfg.NFQ); err != nil {
		return nil, err
	}
	g, err := gate.New(gate.Config{Mode: cfg.Mode, Rate: cfg.Rate, Overhead: 24, MinFrame: 60,
		Margin: int64(cfg.Margin), LeaseSlots: N})
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, g: g, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Index))), sched: make(chan wire.Schedule, 16), delay: clock.NewLateness()}
	a.s = Stats{Host: cfg.Index, Mode: cfg.Mode.String(), Gate: "raw", SentBytes: make([]int64, N), RecvBytes: make([]int64, N), RecvDone: make([]int64, N), Fill: WindowFill{Last: make([][lastWins]WinUse, N)},
		Found:      gate.Found{CollSample: make([]gate.Collision, 0, gate.MaxCollisionSample)},
		StopSample: make([]gate.Collision, 0, gate.MaxCollisionSample)}
	if cfg.NFQ {
		a.s.Gate = "nfqueue"
	}
	fail := func(err error) (*Agent, error) { a.Close(); return nil, err }
	if a.ctl, err = rawio.Open(cfg.Dev, 0x8808, true); err != nil {
		return fail(err)
	}
	if a.data, err = rawio.Open(cfg.Dev, wire.DataEtherType, true); err != nil {
		return fail(err)
	}
	if err := a.data.SetBuffers(1<<20, 32<<20); err != nil {
		return fail(fmt.Errorf("host: data socket buffers: %w", err))
	}
	if a.udp, err = rawio.ListenUDP(fm.HostPort); err != nil {
		return fail(err)
	}
	if !cfg.NFQ {
		peers := append(append([]netip.Addr(nil), cfg.Hosts[:cfg.Index]...), cfg.Hosts[cfg.Index+1:]...)
		m, err := rawio.Resolve(a.udp, a.ctl.Index, peers, fm.HostPort, 3*time.Second)
		if err != nil {
			return fail(fmt.Errorf("host: %w", err))
		}
		a.macs = append(append(append([][6]byte(nil), m[:cfg.Index]...), a.ctl.MAC), m[cfg.Index:]...)
	} else if err := a.openNFQ(); err != nil {
		return fail(err)
	}
	return a, nil
}

// Close closes the sockets (and removes nfqueue mode's rules).
func (a *Agent) Close() {
	if a.ctl != nil {
		a.ctl.Close()
	}
	if a.data != nil {
		a.data.Close()
	}
	if a.udp != nil {
		a.udp.Close()
	}
	a.closeNFQ()
}

// Run runs the agent until ctx ends.
func (a *Agent) Run(ctx context.Context) (Stats, error) {
	go a.control()
	err := clock.RunUntil(ctx, &a.stop, a.loop)
	a.s.G = a.g.Stats()
	if d, err := a.data.Drops(); err == nil {
		a.s.SockDrops += d
	}
	a.s.DelayEst = a.dEst.Load()
	a.s.CtlDelayP001us, a.s.CtlDelayP50us = a.delay.Quantile(0.001), a.delay.Quantile(0.5)
	a.s.CtlDelayP999us, a.s.CtlDelayMaxus = a.delay.Quantile(0.999), a.delay.Quantile(1)
	a.s.Schedules, a.s.BadSchedules = a.nsch.Load(), a.badSch.Load()
	if e := a.badSchErr.Load(); e != nil {
		a.s.BadScheduleErr = *e
	}
	if a.q != nil {
		if st, serr := nfq.ReadStats("/proc/thread-self/net/netfilter/nfnetlink_queue", a.cfg.Queue); serr == nil {
			a.s.NFQQueueDropped, a.s.NFQUserDropped = st.QueueDropped, st.UserDropped
		}
	}
	return a.s, err
}

// control reads the FM's UDP messages: schedules go to the loop, echoes are
// answered at once, d_est is stored.
func (a *Agent) control() {
	b := make([]byte, 2048)
	var e wire.Echo
	var c wire.Calib
	var s wire.Schedule
	a.udp.Serve(&a.stop, b, 50*time.Millisecond, func(n int, from netip.AddrPort, rx int64) {
		if from.Addr() != a.cfg.FM {
			return
		}
		switch {
		case wire.DecodeEcho(b[:n], &e) == nil && !e.Reply:
			e.Reply, e.HostRx = true, rx
			e.HostTx = clock.Now()
			e.Encode(b)
			a.udp.WriteToUDPAddrPort(b[:wire.EchoLen], from)
		case wire.DecodeCalib(b[:n], &c) == nil:
			a.dEst.Store(c.DelayEst)
		case n >= 2 && binary.BigEndian.Uint16(b) == wire.ScheduleMagic:
			if err := wire.DecodeSchedule(b[:n], &s); err != nil {
				a.badSch.Add(1)
				e := err.Error()
				a.badSchErr.CompareAndSwap(nil, &e)
				return
			}
			if int(s.Host) != a.cfg.Index {
				return
			}
			a.nsch.Add(1)
			select {
			case a.sched <- s:
			default:
			}
		}
	})
}

// over reports whether the agent has run its Duration at now, counted
// from the first control frame it heard.
func (a *Agent) over(now int64) bool {
	if a.cfg.Duration <= 0 {
		return false
	}
	if a.heardAt == 0 {
		if a.g.LastHeard() == 0 {
			return false
		}
		a.heardAt = now
	}
	return now-a.heardAt >= int64(a.cfg.Duration)
}

// report sends the demand report for round r.
func (a *Agent) report(r uint32, queued func(j int) int64) {
	var rep wire.Report
	rep.Host, rep.Round, rep.N = uint16(a.cfg.Index), r, uint8(len(a.cfg.Hosts))
	rep.Seq = uint32(a.s.Reports)
	for j := range a.cfg.Hosts {
		rep.Queued[j] = uint64(max(queued(j), 0))
		rep.RxFree[j] = 1 << 40
	}
	st := a.g.Stats()
	rep.Counters = wire.Counters{CtlRx: st.CtlRx, CtlLost: st.CtlLost, GrantsLate: a.s.LateOpens, OverrunBytes: st.OverrunBytes,
		FreeRunOpens: st.FreeRunOpens, LeaseExpiries: st.LeaseExpiries}
	var b [1200]byte
	if n, err := rep.Encode(b[:]); err == nil {
		a.udp.WriteToUDPAddrPort(b[:n], netip.AddrPortFrom(a.cfg.FM, fm.Port))
		a.s.Reports++
	}
}

// ctlBufs are the loop's receive buffers for grants.
type ctlBufs struct {
	b   [16][]byte
	l   [16]int
	ts  [16]int64
	gr  wire.Grant
	buf [16][128]byte
}

func (c *ctlBufs) init() {
	for i := range c.b {
		c.b[i] = c.buf[i][:]
	}
}

// pollControl hands received grants and schedules to the gate, and returns
// how many grants it handed.
func (a *Agent) pollControl(now int64, c *ctlBufs, onSchedule func(*wire.Schedule)) int {
	grants := 0
	for {
		n, err := a.ctl.Recv(c.b[:], c.l[:], c.ts[:])
		if err != nil || n == 0 {
			break
		}
		for i := 0; i < n; i++ {
			if wire.DecodeGrant(c.b[i][:c.l[i]], &c.gr) != nil {
				a.s.BadCtl++
				continue
			}
			if a.cfg.DropControl > 0 && a.rng.Float64() < a.cfg.DropControl {
				a.s.CtlDrop++
				continue
			}
			rx := c.ts[i]
			if rx == 0 {
				rx = now
			} else if c.gr.HasTrailer && c.gr.FMTime > 0 {
				a.delay.Add(rx - c.gr.FMTime)
			}
			a.g.OnGrant(now, rx, &c.gr)
			grants++
		}
	}
	for {
		select {
		case s := <-a.sched:
			a.g.OnSchedule(&s)
			a.fifoSpin = int64(s.Guard) / int64(max(s.NHosts, 1))
			if s.Staggered() {
				a.s.StaggeredSchedules++
			} else {
				a.s.AlignedSchedules++
			}
			if s.Budgeted() {
				a.s.BudgetSchedules++
			}
			onSchedule(&s)
			continue
		default:
		}
		break
	}
	if d := a.dEst.Load(); d != a.g.Config().DelayEst {
		a.g.SetDelayEst(d)
	}
	return grants
}

// lockThread locks the loop to its OS thread, SCHED_FIFO if asked.
func (a *Agent) lockThread() error {
	runtime.LockOSThread()
	// The default 50 µs timer slack would add to every window's open.
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if a.cfg.RT > 0 {
		if err := clock.SetRT(a.cfg.RT); err != nil {
			return err
		}
		a.s.RT = true
	}
	return nil
}

// openPriority puts the thread under SCHED_FIFO (Config.OpenRT) while it
// waits for a window's open (opens) and back under the default scheduler
// once it waits for anything else: after the window's first release.
// Every agent of a shuffle sends in every slot, and on the 2-CPU star an
// agent woken or spinning for its open under the default scheduler waited
// for a CPU held by the others (measured: late opens p99 0.8-1 ms with
// staggered windows); under SCHED_FIFO its wake-up preempts them. Only
// from the grant to the open, mostly asleep, and spinning no longer than
// the staggered opens are apart (guard/N), so that two agents never spin
// under SCHED_FIFO at once: agents under SCHED_FIFO all the time starved
// the switch's softirqs (RT), and spinning the default 150 µs under it
// left their lines idle (measured: 1.126 × ideal against 1.085 at 75 µs).
func (a *Agent) openPriority(opens bool) {
	if a.cfg.OpenRT <= 0 || a.cfg.RT > 0 || opens == a.fifo {
		return
	}
	at := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	if opens {
		at.Policy, at.Priority = unix.SCHED_FIFO, uint32(a.cfg.OpenRT)
	}
	if err := unix.SchedSetAttr(0, &at, 0); err != nil {
		a.s.OpenRTErrors++
		a.cfg.OpenRT = 0
		return
	}
	a.fifo = opens
	a.s.OpenRT = a.s.OpenRT || opens
}

// wait blocks until a socket is readable or deadline (clock ns). It
// sleeps, and spins (polls without blocking) only for the last Spin before
// a window opens (opens): measured on the star, four agents spinning under
// SCHED_FIFO starved the FM and the softirqs that pace the TBFs (the FM's
// boundaries went from 75 µs to 1.3 ms late at p50), so agents spin under
// the default scheduler and only briefly.
func (a *Agent) wait(fds []unix.PollFd, now, deadline int64, opens bool) {
	a.openPriority(opens)
	d := deadline - now
	if d <= 0 {
		return
	}
	spin := int64(0)
	if opens {
		spin = min(d, int64(a.cfg.Spin))
	}
	if a.fifo {
		spin = min(spin, a.fifoSpin)
	}
	if d > spin {
		ts := unix.NsecToTimespec(d - spin)
		for i := range fds {
			fds[i].Revents = 0
		}
		if n, _ := unix.Ppoll(fds, &ts, nil); n > 0 {
			return
		}
	}
	for clock.Now() < deadline {
		for i := range fds {
			fds[i].Revents = 0
		}
		if n, _ := unix.Poll(fds, 0); n > 0 {
			return
		}
	}
}
