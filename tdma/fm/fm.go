// Package fm is the fabric manager process (design §3.5): a clock thread
// that walks fmcore's timeline on a locked OS thread (raw clock_nanosleep
// and a spin tail; SCHED_FIFO on request) and sends each instant's grants
// with one sendmmsg to the hosts' unicast MACs; a scheduler goroutine that
// computes round r+1 from the demand reports while round r runs and hands
// it over through an atomic pointer; a UDP handler for demand reports and
// calibration echoes (d_est per host: the minimum round trip less the
// host's turnaround, halved).
package fm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/fmcore"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// UDP ports of the control messages.
const (
	Port     = 7400 // the FM's: demand reports, echo replies
	HostPort = 7401 // the hosts': schedules, echoes, d_est
)

// Config configures a fabric manager.
type Config struct {
	Dev           string       // the FM's interface (eth0)
	Hosts         []netip.Addr // host i's address
	SlotLen       time.Duration
	Guard         time.Duration
	Lead          time.Duration // grants leave this long before the guard ends (≤ Guard)
	Mode          gate.Discipline
	Scheduler     string // rotor, wrr, bvn
	LeaseSlots    int
	LinkSpeed     uint64 // host line rate, bit/s: slot capacity and PFC quanta
	MaxRoundSlots int
	RT            int // SCHED_FIFO priority of the clock thread; 0: the default scheduler
	// Stagger: every round's schedule tells the hosts to stagger their
	// windows (wire.ScheduleStagger); they all follow it.
	Stagger bool
	// Budget: the rounds of a transfer's last turns carry slot budgets
	// (sched.Planner.Budget, wire.ScheduleBudget), which raw senders keep
	// to.
	Budget     bool
	CalibEvery time.Duration
	// StartWait: the first round waits for every host's first demand
	// report, at most this long after the first one arrives (default one
	// round of MaxRoundSlots: a host left out waits that long anyway; the
	// reports of 4 agents started one after another came 3-16 ms apart). A round built from the first reports alone serves only the
	// hosts that reported, for up to MaxRoundSlots slots, while the others
	// wait: measured on star4 with 40 MiB flows, two hosts started 80 ms
	// (16 slots) after the other two, and the shuffle's finishes spread by
	// 0.1 s instead of one round.
	StartWait time.Duration
	// Capacity: hosts whose receive capacity oscillates (fmcore.Capacity,
	// times on clock.Now's clock); lease and paper modes only.
	Capacity []fmcore.Capacity
}

// Stats is what a run measured.
type Stats struct {
	fmcore.Stats
	RT            bool    `json:"rt"`
	Stagger       bool    `json:"stagger"`       // the schedules staggered the windows (Config.Stagger)
	Budget        bool    `json:"budget"`        // the tails' last turns carried slot budgets (Config.Budget)
	BudgetRounds  uint64  `json:"budget_rounds"` // rounds published with slot budgets
	Boundaries    uint64  `json:"boundaries"`
	LateP50us     float64 `json:"late_p50_us"`
	LateP99us     float64 `json:"late_p99_us"`
	LateP999us    float64 `json:"late_p999_us"`
	LateMaxus     float64 `json:"late_max_us"`
	SendP50us     float64 `json:"send_p50_us"`
	SendP99us     float64 `json:"send_p99_us"`
	CtlBytes      uint64  `json:"ctl_bytes"` // grants on the wire (60 B + 24 B overhead each)
	Reports       uint64  `json:"reports"`
	BadMessages   uint64  `json:"bad_messages"`
	SendErrors    uint64  `json:"send_errors"`
	SchedPublishs uint64  `json:"rounds_published"`
	DelayEstNs    []int64 `json:"delay_est_ns"`
	// FirstReportMs: when each host's first demand report came, ms after
	// the first host's (-1: never); FirstRoundMs: when the first round was
	// published, ms after the first report.
	FirstReportMs []float64       `json:"first_report_ms"`
	FirstRoundMs  float64         `json:"first_round_ms"`
	Duration      float64         `json:"duration_s"`
	Hosts         []string        `json:"hosts"`
	HostCounters  []wire.Counters `json:"host_counters"`
	// LastRounds are the last rounds computed with a slot, oldest first.
	LastRounds []RoundLog `json:"last_rounds"`
}

// RoundLog is a round as the scheduler computed it: when (clock ns), the
// bytes it planned for per pair (the reports less what the rounds since
// them carry, in bytes of a full slot: sched.Planner), the slots it gave
// each pair and its length in slots.
type RoundLog struct {
	ID     uint32    `json:"id"`
	At     int64     `json:"at_ns"`
	Bytes  [][]int64 `json:"bytes"`
	Given  [][]int   `json:"slots_given"`
	NSlots int       `json:"slots"`
}

// keptRounds is how many of the last rounds Stats holds.
const keptRounds = 8

// Manager is a fabric manager with its sockets open.
type Manager struct {
	cfg  Config
	port *rawio.Port
	udp  *rawio.UDP
	macs [][6]byte
	sch  sched.Scheduler
	cap  int64 // slot capacity, bytes

	mu      sync.Mutex
	demand  *sched.Demand
	repAt   []int64 // when each host's last demand report came (clock ns)
	ctrs    []wire.Counters
	reports uint64
	bad     uint64
	calib   []calibState
	// heard: hosts whose demand has been reported at least once, how many,
	// and when the first report came (clock ns; 0: none yet).
	heard      []bool
	heardAt    []int64
	nheard     int
	firstHeard int64
	firstRound int64

	// stalls and starts: the clock thread's stalls (fmcore.Stall) and
	// round starts the scheduler has not yet told its Planner of
	stalls []fmcore.Stall
	starts []roundStart

	rounds   []RoundLog // the last keptRounds rounds computed (mu), a ring
	nround   int
	want     atomic.Uint32               // round the clock thread needs next
	pending  atomic.Pointer[sched.Round] // computed, not yet taken
	taken    atomic.Uint32               // the last round the clock thread published
	stop     atomic.Bool
	publ     atomic.Uint64
	budgeted atomic.Uint64 // rounds published with slot budgets
}

// roundStart is when the clock thread started a round (clock ns).
type roundStart struct {
	id uint32
	at int64
}

type calibState struct {
	best int64 // ns; 0: none yet
	est  int64
}

// New opens the FM's sockets in the calling thread's network namespace and
// resolves each host's MAC (ARP); the hosts' agents need not run yet.
func New(cfg Config) (*Manager, error) {
	N := len(cfg.Hosts)
	if N < 2 || N > wire.MaxHosts {
		return nil, fmt.Errorf("fm: %d hosts: want 2..%d (--hosts)", N, wire.MaxHosts)
	}
	if cfg.LinkSpeed == 0 {
		return nil, errors.New("fm: link speed must be > 0 (--rate)")
	}
	if cfg.Lead == 0 {
		cfg.Lead = cfg.Guard
	}
	if cfg.MaxRoundSlots == 0 {
		cfg.MaxRoundSlots = 4 * N
	}
	if cfg.LeaseSlots == 0 {
		cfg.LeaseSlots = N
	}
	if cfg.CalibEvery == 0 {
		cfg.CalibEvery = time.Second
	}
	if cfg.StartWait == 0 {
		cfg.StartWait = time.Duration(cfg.MaxRoundSlots) * cfg.SlotLen
	}
	sch, err := sched.ByName(cfg.Scheduler)
	if err != nil {
		return nil, fmt.Errorf("fm: --scheduler: %w", err)
	}
	m := &Manager{cfg: cfg, sch: sch, demand: sched.NewDemand(N), repAt: make([]int64, N), ctrs: make([]wire.Counters, N), calib: make([]calibState, N), heard: make([]bool, N), heardAt: make([]int64, N)}
	m.cap = sched.SlotBytes(cfg.LinkSpeed, int64(cfg.SlotLen), int64(cfg.Guard))
	for j := range m.demand.RxFree {
		m.demand.RxFree[j] = 1 << 40
	}
	if m.port, err = rawio.Open(cfg.Dev, 0x8808, false); err != nil {
		return nil, err
	}
	if m.udp, err = rawio.ListenUDP(Port); err != nil {
		m.port.Close()
		return nil, err
	}
	if m.macs, err = rawio.Resolve(m.udp, m.port.Index, cfg.Hosts, HostPort, 3*time.Second); err != nil {
		m.Close()
		return nil, fmt.Errorf("fm: %w", err)
	}
	return m, nil
}

// Close closes the sockets.
func (m *Manager) Close() {
	m.port.Close()
	m.udp.Close()
}

// Run runs the FM until ctx ends and returns what it measured.
func (m *Manager) Run(ctx context.Context) (Stats, error) {
	var wg sync.WaitGroup
	start := time.Now()
	wg.Add(3)
	go func() { defer wg.Done(); m.handler() }()
	go func() { defer wg.Done(); m.scheduler() }()
	go func() { defer wg.Done(); m.calibrator() }()
	type res struct {
		s   Stats
		err error
	}
	r := clock.RunUntil(ctx, &m.stop, func() res {
		s, err := m.clockThread()
		return res{s, err}
	})
	wg.Wait()
	r.s.Duration = time.Since(start).Seconds()
	m.mu.Lock()
	r.s.Reports, r.s.BadMessages = m.reports, m.bad
	r.s.HostCounters = append([]wire.Counters(nil), m.ctrs...)
	for _, c := range m.calib {
		r.s.DelayEstNs = append(r.s.DelayEstNs, c.est)
	}
	r.s.LastRounds = m.lastRounds()
	m.mu.Unlock()
	for _, h := range m.cfg.Hosts {
		r.s.Hosts = append(r.s.Hosts, h.String())
	}
	r.s.SchedPublishs, r.s.BudgetRounds = m.publ.Load(), m.budgeted.Load()
	return r.s, r.err
}

// clockThread owns the fmcore state machine.
func (m *Manager) clockThread() (Stats, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Stats{Stagger: m.cfg.Stagger, Budget: m.cfg.Budget}
	if m.cfg.RT > 0 {
		if err := clock.SetRT(m.cfg.RT); err != nil {
			return s, err
		}
		s.RT = true
	}
	src := m.port.MAC
	var starts []roundStart // rounds started in an Emit
	started := func(start int64, r *sched.Round, slot int) {
		if r != nil && slot == 0 {
			starts = append(starts, roundStart{r.ID, start})
		}
	}
	f, err := fmcore.New(fmcore.Config{N: len(m.cfg.Hosts), SlotLen: int64(m.cfg.SlotLen), Guard: int64(m.cfg.Guard),
		Mode: m.cfg.Mode, Lead: int64(m.cfg.Lead), LinkSpeed: m.cfg.LinkSpeed, LeaseSlots: m.cfg.LeaseSlots,
		PublishMargin: int64(m.cfg.SlotLen) / 4, Src: src, Hosts: m.macs, Capacity: m.cfg.Capacity, Trace: started}, clock.Now()+int64(100*time.Millisecond))
	if err != nil {
		return s, err
	}
	late, send := clock.NewLateness(), clock.NewLateness()
	var sl clock.Sleeper
	out := make([]fmcore.Emission, 0, 2*len(m.cfg.Hosts))
	bufs := make([][60]byte, 2*len(m.cfg.Hosts))
	frames := make([][]byte, len(bufs))
	poll := int64(m.cfg.SlotLen) / 4
	var stalls uint64
	for !m.stop.Load() {
		now := clock.Now()
		if p := m.pending.Load(); p != nil {
			err := f.Publish(now, p)
			if err == nil {
				m.taken.Store(p.ID)
			}
			if err == nil || p.ID < m.want.Load() {
				m.pending.CompareAndSwap(p, nil)
			}
		}
		if id, _, ok := f.Want(); ok {
			m.want.Store(id)
		}
		d := f.NextDeadline()
		if d > now+poll {
			sl.SleepUntil(now + poll)
			continue
		}
		now = sl.SleepUntil(d)
		late.Add(now - d)
		s.Boundaries++
		out = f.Emit(now, out[:0])
		// Before the next round is wanted: the scheduler plans it knowing
		// when the rounds since started and what the hosts did not send.
		if st, k := f.LastStall(); k != stalls || len(starts) > 0 {
			m.mu.Lock()
			if k != stalls {
				stalls = k
				m.stalls = append(m.stalls, fmcore.Stall{From: append([]int64(nil), st.From...), To: st.To})
			}
			m.starts = append(m.starts, starts...)
			m.mu.Unlock()
			starts = starts[:0]
		}
		n := 0
		for _, e := range out {
			if n == len(bufs) {
				break
			}
			e.Grant.Encode(bufs[n][:])
			frames[n] = bufs[n][:]
			n++
		}
		if n > 0 {
			t0 := clock.Now()
			k, err := m.port.Send(frames[:n])
			send.Add(clock.Now() - t0)
			if err != nil || k < n {
				s.SendErrors += uint64(n - k)
			}
			s.CtlBytes += uint64(k) * (60 + 24)
		}
	}
	s.Stats = f.Stats()
	m.mu.Lock()
	for _, t := range m.heardAt {
		ms := -1.0
		if t != 0 {
			ms = float64(t-m.firstHeard) / 1e6
		}
		s.FirstReportMs = append(s.FirstReportMs, ms)
	}
	if m.firstRound != 0 {
		s.FirstRoundMs = float64(m.firstRound-m.firstHeard) / 1e6
	}
	m.mu.Unlock()
	s.LateP50us, s.LateP99us, s.LateP999us, s.LateMaxus = late.Quantile(0.5), late.Quantile(0.99), late.Quantile(0.999), late.Quantile(1)
	s.SendP50us, s.SendP99us = send.Quantile(0.5), send.Quantile(0.99)
	return s, nil
}

// scheduler computes each round the clock thread wants from the latest
// demand reports (sched.Planner: less every round planned since each),
// sends every host its schedule (twice) and hands the round over.
func (m *Manager) scheduler() {
	var last *sched.Round
	var sb [wire.MaxScheduleLen]byte
	N := len(m.cfg.Hosts)
	plan := sched.Planner{Sched: m.sch, SlotCap: m.cap, MaxSlots: m.cfg.MaxRoundSlots, SlotLen: int64(m.cfg.SlotLen), Guard: int64(m.cfg.Guard),
		Budget: m.cfg.Budget}
	at := make([]int64, N)
	for !m.stop.Load() {
		time.Sleep(200 * time.Microsecond)
		id := m.want.Load()
		if id == 0 || (last != nil && id <= last.ID) {
			continue
		}
		m.mu.Lock()
		ready := m.nheard == N || m.firstHeard != 0 && clock.Now()-m.firstHeard >= int64(m.cfg.StartWait)
		m.mu.Unlock()
		if last == nil {
			if !ready {
				continue // the first round waits for every host's demand (StartWait)
			}
			m.mu.Lock()
			m.firstRound = clock.Now()
			m.mu.Unlock()
		}
		d := sched.NewDemand(N)
		m.mu.Lock()
		for i := range d.Bytes {
			copy(d.Bytes[i], m.demand.Bytes[i])
		}
		copy(d.RxFree, m.demand.RxFree)
		copy(at, m.repAt)
		for h, c := range m.ctrs {
			d.Lost[h] = c.LostWindows()
		}
		stalls, starts := m.stalls, m.starts
		m.stalls, m.starts = nil, nil
		m.mu.Unlock()
		for _, st := range stalls {
			plan.Stalled(st.From, st.To) // its slots skipped carried nothing
		}
		for _, s := range starts {
			plan.Started(s.id, s.at) // a round the FM found itself in after a stall began during it
		}
		if last != nil && m.taken.Load() != last.ID {
			plan.Forget(last.ID) // it came too late: not run
		}
		r := plan.Next(id, clock.Now(), d, at)
		m.logRound(r, d)
		for c := 0; c < 2; c++ {
			for h := 0; h < N; h++ {
				var s wire.Schedule
				fmcore.ScheduleFor(r, h, m.cfg.LeaseSlots, m.cfg.Stagger, &s)
				if n, err := s.Encode(sb[:]); err == nil {
					m.udp.WriteToUDPAddrPort(sb[:n], netip.AddrPortFrom(m.cfg.Hosts[h], HostPort))
				}
			}
		}
		m.pending.Store(r)
		m.publ.Add(1)
		if r.Budget != nil {
			m.budgeted.Add(1)
		}
		last = r
	}
}

// logRound keeps round r, computed from demand d, among the last rounds
// (an empty one is not kept: the FM makes them once the work is done).
func (m *Manager) logRound(r *sched.Round, d *sched.Demand) {
	if len(r.Slots) == 0 {
		return
	}
	l := RoundLog{ID: r.ID, At: clock.Now(), Bytes: d.Bytes, NSlots: len(r.Slots), Given: make([][]int, d.N)}
	for i := range l.Given {
		l.Given[i] = make([]int, d.N)
	}
	for _, mt := range r.Slots {
		for i, j := range mt {
			if j >= 0 {
				l.Given[i][j]++
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.rounds) < keptRounds {
		m.rounds = append(m.rounds, l)
	} else {
		m.rounds[m.nround%keptRounds] = l
	}
	m.nround++
}

// lastRounds returns the rounds kept, oldest first (mu held).
func (m *Manager) lastRounds() []RoundLog {
	var out []RoundLog
	for k := range m.rounds {
		out = append(out, m.rounds[(m.nround+k)%len(m.rounds)])
	}
	return out
}

// handler reads demand reports and echo replies.
func (m *Manager) handler() {
	b := make([]byte, 2048)
	var rep wire.Report
	var e wire.Echo
	m.udp.Serve(&m.stop, b, 50*time.Millisecond, func(n int, from netip.AddrPort, rx int64) {
		h := m.hostIndex(from.Addr())
		m.mu.Lock()
		switch {
		case h < 0:
			m.bad++
		case wire.DecodeReport(b[:n], &rep) == nil && int(rep.Host) == h:
			m.reports++
			if !m.heard[h] {
				m.heard[h], m.heardAt[h] = true, clock.Now()
				m.nheard++
				if m.firstHeard == 0 {
					m.firstHeard = m.heardAt[h]
				}
			}
			for j := 0; j < min(int(rep.N), len(m.cfg.Hosts)); j++ {
				m.demand.Bytes[h][j] = int64(min(rep.Queued[j], 1<<50))
			}
			m.repAt[h] = clock.Now()
			m.ctrs[h] = rep.Counters
		case wire.DecodeEcho(b[:n], &e) == nil && e.Reply && rx != 0:
			rtt := (rx - e.FMSend) - (e.HostTx - e.HostRx)
			if rtt > 0 && (m.calib[h].best == 0 || rtt < m.calib[h].best) {
				m.calib[h].best = rtt
			}
		default:
			m.bad++
		}
		m.mu.Unlock()
	})
}

func (m *Manager) hostIndex(a netip.Addr) int {
	for i, h := range m.cfg.Hosts {
		if h == a {
			return i
		}
	}
	return -1
}

// calibrator sends 20 echoes to every host, 1 ms apart, then each host's
// d_est (the best round trip of the burst, halved), every CalibEvery.
func (m *Manager) calibrator() {
	var b [wire.EchoLen]byte
	var seq uint32
	for !m.stop.Load() {
		m.mu.Lock()
		for i := range m.calib {
			m.calib[i].best = 0
		}
		m.mu.Unlock()
		for k := 0; k < 20 && !m.stop.Load(); k++ {
			for _, h := range m.cfg.Hosts {
				seq++
				e := wire.Echo{Seq: seq, FMSend: clock.Now()}
				e.Encode(b[:])
				m.udp.WriteToUDPAddrPort(b[:], netip.AddrPortFrom(h, HostPort))
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		m.mu.Lock()
		for i, h := range m.cfg.Hosts {
			if m.calib[i].best > 0 {
				m.calib[i].est = m.calib[i].best / 2
				var cb [wire.CalibMsgLen]byte
				(&wire.Calib{DelayEst: m.calib[i].est}).Encode(cb[:])
				m.udp.WriteToUDPAddrPort(cb[:], netip.AddrPortFrom(h, HostPort))
			}
		}
		m.mu.Unlock()
		for t := time.Duration(0); t < m.cfg.CalibEvery && !m.stop.Load(); t += 50 * time.Millisecond {
			time.Sleep(50 * time.Millisecond)
		}
	}
}
