// Package tdmasim is a deterministic discrete-event simulator of PFC-driven
// TDMA on a virtual clock: N hosts running the real gate, one switch of
// rate-limited FIFO output ports with a bounded buffer (drops counted), and
// the fabric manager running the real fmcore and a sched.Scheduler. Control
// frames are encoded and decoded with package wire; their delay, the
// hosts' wake-up and timer lateness are drawn from distributions measured
// on this kind of machine (design §2.2–2.3), and each may be lost with a
// probability. One event queue, one seeded PCG: a run is reproducible.
//
// What it measures, from the FM's true timeline: completion of an
// all-to-all shuffle against the ideal, switch backlog and drops,
// collisions (a data frame reaching a port that holds another sender's
// data) and overrun bytes (sent after the end of the sender's slot plus
// the guard, i.e. into time another sender owns). Every data frame carries
// the window trailer the raw agents send, stamped where it enters the
// switch as the exit gate stamps it, and its receiver classifies it as the
// agents do (gate.Classify): a Fault injects one misbehaviour of a kind,
// and the causes it reports name it.
package tdmasim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/tdma/fmcore"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// HdrLen is the bytes of a data frame before its payload: Ethernet and
// the raw data header.
const HdrLen = 14 + wire.DataHdrLen

// minFrame is the Ethernet minimum without FCS.
const minFrame = 60

// Config configures a run. Zero fields take the defaults of Default.
type Config struct {
	Hosts     int
	Rate      uint64 // bits/s: host line rate and switch port rate
	MTU       int    // largest data frame, bytes without FCS
	Overhead  int    // wire bytes per frame beyond it (preamble, IFG, FCS)
	SwitchBuf int    // bytes per output port
	Prop      int64  // propagation per hop, ns
	Slot      int64
	Guard     int64
	Margin    int64 // taken off every close by the gates
	// Stagger: the FM's schedules tell the gates to move each window to
	// destination d d·guard/N later (wire.ScheduleStagger), as tdma fm
	// does by default.
	Stagger bool
	// Budget: the FM's schedules carry slot budgets in a tail's last
	// turns (sched.Planner.Budget, wire.ScheduleBudget), and the hosts
	// keep to them, as tdma fm --budget and the raw agents do.
	Budget bool
	// Lead: grants leave this long before the open part of the slot; -1:
	// the whole guard (grants at the slot boundary, the host opens at the
	// guard's end by its own timer). Paper mode has none.
	Lead       int64
	LeaseSlots int
	Mode       gate.Discipline
	Scheduler  string
	// MaxRoundSlots caps a round (default N−1: one rotor cycle).
	MaxRoundSlots int
	CtlDelay      Dist // FM send → switch port, before the port's queue
	Wake          Dist // host kernel receive → agent acts
	Timer         Dist // lateness of the host's own timers
	CtlLoss       float64
	// ScheduleCopies: each host's round schedule is sent this many times
	// (default 2), each copy lost with CtlLoss.
	ScheduleCopies int
	Seed           uint64
	// Shuffle is the bytes each host sends to every other host.
	Shuffle int64
	// FreezeAt, FreezeFor: the FM is stopped (kill -STOP) for that long.
	FreezeAt, FreezeFor int64
	// MaxTime ends the run (default: 4 × ideal + 20 rounds).
	MaxTime int64
	// Fault injects one misbehaviour (none by default).
	Fault Fault
}

// FaultKind is a misbehaviour the simulator can inject, each the origin of
// one collision cause.
type FaultKind uint8

// Faults. Each strikes host Fault.Host's window of the FM's slot
// Fault.Slot (from Slot·Fault.Slot to the next boundary), by Fault.By ns.
const (
	NoFault FaultKind = iota
	// OpenEarly: the host releases one frame By before its window opens
	// (gate.OpenedEarly).
	OpenEarly
	// CloseLate: the host releases one frame By after its window closed
	// (gate.ClosedLate).
	CloseLate
	// AfterLease: the host hears no control frame after the slot's grant
	// for LeaseSlots+2 slots, and releases one frame into the slot's
	// window By after its lease ran out (gate.AfterLease).
	AfterLease
	// GrantLate: the grants of the slot and the next reach the host By
	// later than they would (the next one ends the slot's window)
	// (gate.GrantLate).
	GrantLate
	// HostQueue: the host's egress holds the window's frames By before
	// they leave its line (gate.KernelQueue).
	HostQueue
	// SwitchQueue: the switch holds the window's frames By after they
	// entered it, before their output port (gate.SwitchQueue).
	SwitchQueue
)

// Fault is one injected misbehaviour.
type Fault struct {
	Kind FaultKind
	Host int   // the sender
	Slot int64 // the FM's slot index, counted from its first
	By   int64 // ns
}

// Default returns the design's star4-100M profile (§3.8): 4 hosts at
// 100 Mbit/s, 1500-byte frames, 64 KB switch buffers, 5 ms slots, 300 µs
// guard, lease mode, rotor, measured delays, no loss, 4 MiB per flow.
func Default() Config {
	return Config{Hosts: 4, Rate: 100_000_000, MTU: 1500, Overhead: 24, SwitchBuf: 64 << 10, Prop: 1_000,
		Slot: 5_000_000, Guard: 300_000, Lead: -1, LeaseSlots: 3, Mode: gate.Lease, Scheduler: "rotor",
		CtlDelay: MeasuredCtlDelay, Wake: MeasuredWake, Timer: MeasuredTimer, Seed: 1, Shuffle: 4 << 20}
}

// Result is what a run measured.
type Result struct {
	Config Config `json:"-"`
	// Times in ns from the FM's first slot.
	Completion  int64 `json:"completion_ns"`
	Ideal       int64 `json:"ideal_ns"`
	RoundLen    int64 `json:"round_ns"` // nominal: MaxRoundSlots slots
	FirstFinish int64 `json:"first_finish_ns"`
	Unfinished  int   `json:"unfinished_flows"`
	// PeakBacklog: the most bytes a data frame found ahead of it in a
	// switch port (unsent bytes of the frame in service included).
	PeakBacklog  int   `json:"peak_backlog_bytes"`
	PeakFrames   int   `json:"peak_frames_held"` // data frames held in one port, in service included
	Drops        int64 `json:"switch_drops"`
	Collisions   int64 `json:"collisions"`
	OverrunBytes int64 `json:"overrun_bytes"`
	// EarlyBytes: bytes of frames that left their sender's line before
	// their slot's start plus the guard (the receiver's port's slot, moved
	// by the FM's stagger): a gate opened early, or not on the FM's
	// stagger. A window never opens before then.
	EarlyBytes int64 `json:"early_bytes"`
	CtlSent    int64 `json:"ctl_sent"`
	CtlLost    int64 `json:"ctl_lost"`  // lost on the way (CtlLoss)
	CtlDrops   int64 `json:"ctl_drops"` // dropped by a full switch port
	CtlBytes   int64 `json:"ctl_wire_bytes"`
	DataBytes  int64 `json:"data_wire_bytes"`
	// Gate counters summed over hosts (gate.Stats).
	GrantOpens, FreeRunOpens, LeaseExpiries, GateOverrunBytes uint64
	LateCuts, LateCutNs                                       uint64
	FM                                                        fmcore.Stats
	// SilentAfterFreeze: the last data frame sent after the FM froze,
	// relative to the freeze; ResumeAfterThaw: the first grant-opened
	// frame after it thawed, relative to the thaw, and ResumeAllAfterThaw
	// the last host's first (freeze runs only; a host that sent nothing
	// after the thaw does not count).
	SilentAfterFreeze  int64 `json:"silent_after_freeze_ns"`
	ResumeAfterThaw    int64 `json:"resume_after_thaw_ns"`
	ResumeAllAfterThaw int64 `json:"resume_all_after_thaw_ns"`
	// PayloadMin: the least payload per slot the FM planned any sender's
	// slots with over the run (sched.Planner.Payload), bytes.
	PayloadMin int64 `json:"payload_min_bytes"`
	// Found: the data frames their receivers found outside their slot,
	// by cause, and the meetings of two frames both inside their slots.
	gate.Found
	// FaultRound, FaultSlot: the window the fault struck (round, slot in
	// it); FaultRound 0: it did not strike.
	FaultRound uint32 `json:"fault_round,omitempty"`
	FaultSlot  int    `json:"fault_slot,omitempty"`
	Events     uint64
	SimNs      int64
}

// BacklogFrames is PeakBacklog in full frames.
func (r *Result) BacklogFrames() float64 { return float64(r.PeakBacklog) / float64(r.Config.MTU) }

// Ratio is Completion ÷ Ideal.
func (r *Result) Ratio() float64 { return float64(r.Completion) / float64(r.Ideal) }

// Overhead is the control bytes on the wire per host ÷ the line rate over the run.
func (r *Result) Overhead() float64 {
	return float64(r.CtlBytes*8) / (float64(r.Config.Rate) * float64(r.Completion) / 1e9 * float64(r.Config.Hosts))
}

type event struct {
	at   int64
	pri  uint8 // order at equal times: port departures before arrivals
	seq  uint64
	kind uint8
	i    int32
	a, b int64
}

const (
	evFM uint8 = iota
	evPortDone
	evPortArrive
	evCtlRx
	evCtlAct
	evSched
	evHostWake
	evHostTx
	evData  // a data frame enters the switch
	evPort  // a data frame the switch held reaches its port
	evFault // a faulty host releases a frame outside its window
)

type frame struct {
	src, dst int16
	ctl      int32 // control pool index, -1 for data
	data     int32 // data pool index (data frames)
	bytes    int
	payload  int
}

// dframe is a data frame on its way: its release time and trailer.
type dframe struct {
	src, dst       int
	payload, bytes int
	send           int64
	win            wire.WinTrailer
	round          uint32
	slot           int
	freeRun        bool
	hit            bool // in the window the fault strikes
}

type port struct {
	q        []frame
	bytes    int
	data     int // data frames held
	busy     bool
	headEnd  int64 // when the frame in service is sent
	srcCount []int // data frames held per sender
}

type host struct {
	g        *gate.Gate
	bud      gate.Budget
	remain   []int64
	nicFree  int64
	wakeAt   int64
	ctlAt    int64 // when the control path last delivered (it is FIFO)
	actAt    int64 // when the agent last handled a control frame (in order)
	rr       int
	received []int64 // per sender
	qEnd     int64   // when the host's egress queue last let a frame go
	meet     gate.Meetings
}

// Sim is one run.
type Sim struct {
	cfg   Config
	rng   *rand.Rand
	now   int64
	seq   uint64
	ev    []event
	fm    *fmcore.FM
	hosts []*host
	ports []*port
	res   Result

	ctlPool  [][pfc.FrameLen]byte
	ctlFree  []int32
	dataPool []dframe
	dataFree []int32
	// the fault: the window it strikes, and until when its host hears
	// nothing (AfterLease)
	faultWin    gate.Window
	silentUntil int64
	schPool     []wire.Schedule
	emit        []fmcore.Emission

	plan      sched.Planner
	slots     []sched.Matching // the FM's timeline, slot k from k·Slot
	rep       [][]int64        // each host's last demand report
	repAt     []int64          // when it reached the FM
	lost      []int64          // the windows it had lost by then (sched.Demand.Lost)
	lastRep   []uint32         // the schedule that made it report
	curRound  *sched.Round
	computeAt int64
	stalls    uint64 // the FM's stalls told to the Planner
	dEst      int64
	lead      int64
	finished  int
	flows     int
	sends     []sent
}

// Run simulates cfg and returns what it measured.
func Run(cfg Config) (*Result, error) {
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	s.loop()
	return s.result(), nil
}

func (s *Sim) wireNs(bytes int) int64 {
	b := uint64(bytes+s.cfg.Overhead) * 8_000_000_000
	return int64((b + s.cfg.Rate - 1) / s.cfg.Rate)
}

// Ideal is the shortest time each host needs to send its shuffle at the
// line rate in full frames (and receive it: the same, by symmetry).
func Ideal(cfg Config) int64 {
	p := int64(cfg.MTU - HdrLen)
	frames := (cfg.Shuffle + p - 1) / p
	wireBytes := cfg.Shuffle + frames*int64(HdrLen+cfg.Overhead)
	return int64(float64(wireBytes*int64(cfg.Hosts-1)) * 8e9 / float64(cfg.Rate))
}

func fill(cfg *Config) {
	d := Default()
	cfg.Hosts, cfg.Rate, cfg.MTU, cfg.Overhead = cmp.Or(cfg.Hosts, d.Hosts), cmp.Or(cfg.Rate, d.Rate), cmp.Or(cfg.MTU, d.MTU), cmp.Or(cfg.Overhead, d.Overhead)
	cfg.SwitchBuf, cfg.Slot, cfg.LeaseSlots = cmp.Or(cfg.SwitchBuf, d.SwitchBuf), cmp.Or(cfg.Slot, d.Slot), cmp.Or(cfg.LeaseSlots, d.LeaseSlots)
	cfg.Scheduler, cfg.MaxRoundSlots = cmp.Or(cfg.Scheduler, d.Scheduler), cmp.Or(cfg.MaxRoundSlots, cfg.Hosts-1)
	cfg.Shuffle, cfg.ScheduleCopies = cmp.Or(cfg.Shuffle, d.Shuffle), cmp.Or(cfg.ScheduleCopies, 2)
	for _, dist := range []struct{ v, def *Dist }{{&cfg.CtlDelay, &d.CtlDelay}, {&cfg.Wake, &d.Wake}, {&cfg.Timer, &d.Timer}} {
		if dist.v.P == nil {
			*dist.v = *dist.def
		}
	}
}

func newSim(cfg Config) (*Sim, error) {
	fill(&cfg)
	switch {
	case cfg.Hosts < 2 || cfg.Hosts > 8:
		return nil, fmt.Errorf("tdmasim: %d hosts, want 2..8 (7 classes per host per round)", cfg.Hosts)
	case cfg.MTU < HdrLen+64 || cfg.MTU > 65535:
		return nil, fmt.Errorf("tdmasim: MTU %d, want %d..65535", cfg.MTU, HdrLen+64)
	case cfg.SwitchBuf < cfg.MTU:
		return nil, fmt.Errorf("tdmasim: switch buffer %d B below one frame (%d B)", cfg.SwitchBuf, cfg.MTU)
	case cfg.CtlLoss < 0 || cfg.CtlLoss >= 1:
		return nil, fmt.Errorf("tdmasim: control loss %g, want [0, 1)", cfg.CtlLoss)
	case cfg.Shuffle <= 0:
		return nil, errors.New("tdmasim: shuffle bytes must be > 0")
	}
	for _, d := range []Dist{cfg.CtlDelay, cfg.Wake, cfg.Timer} {
		if err := d.Check(); err != nil {
			return nil, err
		}
	}
	sch, err := sched.ByName(cfg.Scheduler)
	if err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x7d3a))}
	ctlWire := s.wireNs(pfc.FrameLen)
	s.dEst = cfg.CtlDelay.Min() + ctlWire + cfg.Prop
	s.lead = cfg.Lead
	if s.lead < 0 {
		s.lead = cfg.Guard
	}
	if cfg.Mode == gate.Paper {
		s.lead = 0
	}
	macs := make([][6]byte, cfg.Hosts)
	for i := range macs {
		macs[i] = [6]byte{2, 0, 0, 0, 0, byte(i + 1)}
	}
	s.ctlPool = make([][pfc.FrameLen]byte, 1, 64) // entry 0 is never handed out
	s.fm, err = fmcore.New(fmcore.Config{N: cfg.Hosts, SlotLen: cfg.Slot, Guard: cfg.Guard, Mode: cfg.Mode, Lead: s.lead,
		LinkSpeed: cfg.Rate, LeaseSlots: cfg.LeaseSlots, PublishMargin: cfg.Slot / 2, Src: [6]byte{2, 0, 0, 0, 0, 100}, Hosts: macs,
		Trace: s.trace}, 0)
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Hosts; i++ {
		g, err := gate.New(gate.Config{Mode: cfg.Mode, Rate: cfg.Rate, Overhead: cfg.Overhead, MinFrame: minFrame,
			DelayEst: s.dEst, Margin: cfg.Margin, LeaseSlots: cfg.LeaseSlots})
		if err != nil {
			return nil, err
		}
		h := &host{g: g, remain: make([]int64, cfg.Hosts), received: make([]int64, cfg.Hosts), wakeAt: math.MaxInt64}
		for j := range h.remain {
			if j != i {
				h.remain[j] = cfg.Shuffle
			}
		}
		s.hosts = append(s.hosts, h)
		s.ports = append(s.ports, &port{srcCount: make([]int, cfg.Hosts)})
	}
	s.flows = cfg.Hosts * (cfg.Hosts - 1)
	// The FM plans as tdma fm does, starting from the line rate over the
	// slot less its guard, then what the slots carried.
	s.plan = sched.Planner{Sched: sch, SlotCap: sched.SlotBytes(cfg.Rate, cfg.Slot, cfg.Guard), MaxSlots: cfg.MaxRoundSlots,
		SlotLen: cfg.Slot, Guard: cfg.Guard, Budget: cfg.Budget}
	s.res.Ideal = Ideal(cfg)
	s.res.RoundLen = int64(cfg.MaxRoundSlots) * cfg.Slot
	if cfg.MaxTime == 0 {
		s.cfg.MaxTime = 4*s.res.Ideal + 20*s.res.RoundLen
	}
	s.res.Config = s.cfg
	s.res.SilentAfterFreeze, s.res.ResumeAfterThaw, s.res.ResumeAllAfterThaw = -1, -1, -1
	s.rep, s.repAt, s.lastRep, s.lost = make([][]int64, cfg.Hosts), make([]int64, cfg.Hosts), make([]uint32, cfg.Hosts), make([]int64, cfg.Hosts)
	for i := range s.rep {
		s.rep[i] = append([]int64(nil), s.hosts[i].remain...)
	}
	// Round 1 from the initial demand, at time 0.
	s.publish(0)
	s.push(event{at: 0, kind: evFM})
	return s, nil
}

func (s *Sim) push(e event) {
	s.seq++
	e.seq = s.seq
	if e.kind == evPortDone {
		e.pri = 0
	} else {
		e.pri = 1
	}
	s.ev = append(s.ev, e)
	i := len(s.ev) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&s.ev[i], &s.ev[p]) {
			break
		}
		s.ev[i], s.ev[p] = s.ev[p], s.ev[i]
		i = p
	}
}

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.pri != b.pri {
		return a.pri < b.pri
	}
	return a.seq < b.seq
}

func (s *Sim) pop() event {
	h := s.ev
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.ev = h
	return e
}

func (s *Sim) loop() {
	for len(s.ev) > 0 && s.finished < s.flows {
		e := s.pop()
		if e.at > s.cfg.MaxTime {
			break
		}
		s.now = e.at
		s.res.Events++
		switch e.kind {
		case evFM:
			s.onFM()
		case evPortArrive:
			s.onArrive(int(e.i), e.a)
		case evData:
			s.onData(int32(e.a))
		case evPort:
			s.toPort(int32(e.a))
		case evFault:
			s.onFault(int(e.i))
		case evPortDone:
			s.onPortDone(int(e.i))
		case evCtlRx:
			h := s.hosts[e.i]
			h.actAt = max(h.actAt, s.now+s.cfg.Wake.Sample(s.rng))
			s.push(event{at: h.actAt, kind: evCtlAct, i: e.i, a: e.a, b: s.now})
		case evCtlAct:
			s.onCtl(int(e.i), int32(e.a), e.b)
		case evSched:
			s.hosts[e.i].g.OnSchedule(&s.schPool[e.a])
			s.report(int(e.i), s.schPool[e.a].Round)
			s.tryHost(int(e.i))
		case evHostWake:
			h := s.hosts[e.i]
			if e.a == h.wakeAt {
				h.wakeAt = math.MaxInt64
				s.tryHost(int(e.i))
			}
		case evHostTx:
			s.tryHost(int(e.i))
		}
	}
	s.res.SimNs = s.now
}
