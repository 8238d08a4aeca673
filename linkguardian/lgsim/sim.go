// Package lgsim is a deterministic in-memory link simulator with a virtual
// clock for testing the LinkGuardian core (package lg) without I/O or root.
//
// A Sim has two ends, A and B, each a "switch" running a linkguardian.Endpoint over its own
// frame memory (a linksim.Pool, the UMEM stand-in) with the worker loop documented in package lg.
// A host behind each end sends numbered frames to the host behind the other
// end. Each direction (A→B, B→A) has a propagation delay, a serialization
// rate, scripted loss rules, seeded random loss and optional extra delay
// jitter for control frames (which reorders them). A receiver's pause/resume
// crosses the reverse direction as PAUSE/RESUME link-header frames (and, with
// Config.PFCMessages, also as PFC messages calling Pause/Resume on the peer's
// Port). With SessionA/SessionB each end runs a link session (package
// linksession) that resets its port when the peer restarts (Restart). The simulator records exactly which host frames each host
// receives and in what order, checks that they are byte-for-byte the frames
// that were sent, and checks frame ownership (no double free; InUse() is 0
// when the link is quiet).
package lgsim

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// Side names an end of the link.
type Side int

// The two ends.
const (
	A Side = 0
	B Side = 1
)

func (s Side) String() string { return [...]string{"A", "B"}[s] }

// DirConfig configures one direction of the link.
type DirConfig struct {
	Delay      int64             // propagation delay, ns
	Rate       float64           // serialization rate, bits/s; 0 = infinitely fast
	Rules      []*Rule           // scripted losses, checked in order
	Random     linksim.LossModel // random loss; nil for none
	Seed       uint64            // seed of the random loss and jitter
	CtrlJitter int64             // control frames get an extra delay uniform in [0, CtrlJitter)
	// PriorityLane sends link control frames (everything but sequenced
	// data) on a lane of their own: they do not wait behind the data frames
	// queued on the wire (the NIC TX ring), and overtake them.
	PriorityLane bool
	LosePFC      bool // apply Random to PFC messages too
}

// Config configures a Sim.
type Config struct {
	A, B         linkguardian.Config // the two ports (MACs are filled in if zero)
	AB, BA       DirConfig           // directions A→B and B→A
	PollInterval int64               // worker loop tick when nothing arrives (default 1 µs)
	// TxBudget is how much queued wire time (ns) a worker allows before it
	// stops handing normal frames to the port, i.e. the NIC TX ring: control
	// frames and retransmissions queued later overtake the host queue.
	// Default: 2 frames at the direction's rate (1 ns if the rate is 0).
	TxBudget   int64
	FrameLen   int // host frame length, 60..1514 (default 128)
	PoolFrames int // buffers per end (default 8192)
	HostQueue  int // host frames a switch queues for the link (default 128)
	// PFCMessages also sends each EvPause/EvResume as an 802.1Qbb-like
	// message (the old integration). By default backpressure crosses the
	// link only as the PAUSE/RESUME control frames the receiver emits.
	PFCMessages bool
	// SessionA and SessionB, if set, run a link session at each end (both
	// or neither): session frames cross the link on the priority path, host
	// frames wait for the session by its Policy, and on every agreement the
	// sender's credit is set to the agreed window. MACs are filled in.
	SessionA, SessionB *linksession.Config
	// Fast gives each end's receiver a kernel fast path (linkguardian.FastPoint):
	// a data frame arriving at the point is delivered at once by the model
	// of the XDP program (FastPoint.Offer), every other frame reaches the
	// core FastLag later (the worker's wakeup behind the kernel), and the
	// core hands the point back after each iteration that leaves it
	// nothing to wait for (and, with sessions, while its session accepts
	// the peer's frames).
	Fast    bool
	FastLag int64
	// FastSend gives each end's sender a kernel fast path
	// (linkguardian.FastSend): a host frame is offered to the model of the
	// host port's XDP program first (FastSend.Offer), and one it sends goes
	// on the wire at once, stamped as the C program stamps it; the others
	// reach the core FastLag later. The core hands sending back after each
	// iteration that leaves its host queue empty, its wire drained and (with
	// sessions) its session up. The receive point's serial is the ACK the
	// kernel piggybacks (each receiver gets a FastPoint, handed to the kernel
	// only with Fast).
	FastSend bool
	// FastWakeEvery is FastSend.WakeEvery: 0, the kernel wakes the core
	// after its first send while nothing is outstanding; > 0, the core looks
	// every FastWakeEvery instead.
	FastWakeEvery int64
	// FastFlush, with FastSend, holds what the kernel's send path sends
	// for up to that long before it reaches the wire, as the kernel's
	// redirects wait for the end of their NAPI poll: frames the core sends
	// meanwhile (dummies, retransmissions, data after sending changed
	// hands) overtake them. Each held frame leaves at a time drawn
	// uniformly from [0, FastFlush), in order. 0: at once.
	FastFlush int64
	// Sleeping: the cores do not tick every PollInterval; each sleeps
	// until its endpoint's NextDeadline (or its session's, or its wire's
	// queue draining) unless a frame arrives or its host sends, as the
	// dataplane's worker does. Timers that must wake a core are then
	// tested for real.
	Sleeping bool
}

// DirStats counts what crossed a direction.
type DirStats struct {
	Sent, Dropped   uint64
	SentByType      [seqhdr.NumTypes]uint64 // index seqhdr.Type; 0 = frames without a link header
	DroppedByType   [seqhdr.NumTypes]uint64
	PFCSent, PFCDrp uint64
	Bytes           uint64
}

type evKind uint8

const (
	evArrive evKind = iota
	evPFC
	evTick
	evWake
	evSleep // a Sleeping core's own deadline (stale once it set another)
	evFlush // frames the kernel's send path sent reach the wire (Config.FastFlush)
)

type event struct {
	t     int64
	seq   uint64
	kind  evKind
	side  Side // the end that handles the event
	data  []byte
	pause int64 // evPFC: pause duration, 0 = resume
}

type eventHeap []*event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type wire struct {
	cfg       DirConfig
	busyUntil int64
	rng       *rand.Rand
	n, dataN  int
	stats     DirStats
}

type end struct {
	side      Side
	port      *linkguardian.Endpoint
	pool      *linksim.Pool
	out       *wire // this end's outgoing direction
	rxQ       [][]byte
	rxReady   []int64 // parallel to rxQ: when the core may read the frame (Fast)
	fast      *linkguardian.FastPoint
	fastDel   int                     // frames the fast path delivered
	flushAt   int64                   // when the last frame the kernel sent reaches the wire (Config.FastFlush)
	point     *linkguardian.FastPoint // the receiver's point word (Fast or FastSend)
	fs        *linkguardian.FastSend
	fastSent  int          // host frames the send fast path sent
	hostPend  []link.Frame // host frames the kernel passed on, for the core
	consumed  uint64       // how many of them reached the core (FastSend.Consumed)
	pendAt    []int64      // parallel: when the core may read them
	hostQ     []link.Frame
	remaining int
	gap       int64
	nextAt    int64
	nextID    uint64
	wakeAt    int64
	sleepTo   int64 // Sleeping: the core's deadline (evSleep events at other times are stale)
	dirty     bool
	delivered []uint64
	corrupt   int
	rxNoBuf   int
	events    []linkguardian.Event
	recovery  []int64
	pcfg      linkguardian.Config
	sendAt    []int64 // host frame id -> time the port accepted it (-1: not yet)
	delAt     []int64 // parallel to delivered: delivery time
	restarts  []int64
	lost      int     // frames that vanished with a restarted switch
	hostAt    []int64 // parallel to hostQ: when the frame was queued
	sess      *linksession.Session
	scfg      linksession.Config
	sessEv    []SessionEvent
	resets    []int64
	dead      bool // killed (Kill) and not restarted
}

// SessionEvent is a non-empty linksession.Receive result at an end.
type SessionEvent struct {
	T  int64
	Ev linksession.Event
}

// Sim is the simulated link.
type Sim struct {
	cfg     Config
	now     int64
	seq     uint64
	q       eventHeap
	ends    [2]*end
	wires   [2]*wire // [A] = A→B, [B] = B→A
	inWire  int      // arrive and PFC events pending
	bufs    [][]byte
	OnEvent func(side Side, now int64, ev linkguardian.Event)
}

// New builds a Sim.
func New(cfg Config) (*Sim, error) {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 1000
	}
	if cfg.FrameLen == 0 {
		cfg.FrameLen = 128
	}
	if cfg.FrameLen < 60 || cfg.FrameLen > 1514 {
		return nil, errors.New("lgsim: FrameLen must be in [60, 1514]")
	}
	if cfg.PoolFrames <= 0 {
		cfg.PoolFrames = 8192
	}
	if cfg.HostQueue <= 0 {
		cfg.HostQueue = 128
	}
	s := &Sim{cfg: cfg}
	macs := [2][6]byte{{2, 0, 0, 0, 0, 0xA}, {2, 0, 0, 0, 0, 0xB}}
	pcfg := [2]linkguardian.Config{cfg.A, cfg.B}
	dcfg := [2]DirConfig{cfg.AB, cfg.BA}
	for i := range 2 {
		if pcfg[i].LocalMAC == [6]byte{} {
			pcfg[i].LocalMAC = macs[i]
		}
		if pcfg[i].PeerMAC == [6]byte{} {
			pcfg[i].PeerMAC = macs[1-i]
		}
		pool := linksim.NewPool(cfg.PoolFrames, 2048, 256)
		p, err := linkguardian.NewEndpoint(pcfg[i], pool)
		if err != nil {
			return nil, fmt.Errorf("lgsim: port %v: %w", Side(i), err)
		}
		s.wires[i] = &wire{cfg: dcfg[i], rng: rand.New(rand.NewPCG(dcfg[i].Seed, uint64(i)+0x5eed))}
		s.ends[i] = &end{side: Side(i), port: p, pool: pool, out: s.wires[i], pcfg: pcfg[i]}
		if err := s.connectFast(s.ends[i]); err != nil {
			return nil, err
		}
	}
	if (cfg.SessionA == nil) != (cfg.SessionB == nil) {
		return nil, errors.New("lgsim: set both SessionA and SessionB, or neither")
	}
	if cfg.SessionA != nil {
		for i, sc := range [2]*linksession.Config{cfg.SessionA, cfg.SessionB} {
			c := *sc
			c.LocalMAC, c.PeerMAC = pcfg[i].LocalMAC, pcfg[i].PeerMAC
			e := s.ends[i]
			e.scfg = c
			if err := s.newSession(e); err != nil {
				return nil, err
			}
		}
	}
	for i := range 2 {
		if e := s.ends[i]; e.fs != nil && e.sess == nil {
			e.port.HandOffSend(0, true) // an idle core at the start
		}
		if cfg.Sleeping {
			s.push(&event{t: 0, kind: evWake, side: Side(i)})
		} else {
			s.push(&event{t: 0, kind: evTick, side: Side(i)})
		}
	}
	return s, nil
}

func (s *Sim) push(e *event) {
	e.seq = s.seq
	s.seq++
	heap.Push(&s.q, e)
}

// Now returns the virtual time.
func (s *Sim) Now() int64 { return s.now }

// Port returns the linkguardian.Endpoint of an end.
func (s *Sim) Port(side Side) *linkguardian.Endpoint { return s.ends[side].port }

// Pool returns the frame memory of an end.
func (s *Sim) Pool(side Side) *linksim.Pool { return s.ends[side].pool }

// Dir returns the statistics of the direction leaving side.
func (s *Sim) Dir(from Side) DirStats { return s.wires[from].stats }

// Delivered returns the IDs of the host frames the host behind side received,
// in order. IDs of frames sent by a host are 0, 1, 2, ...
func (s *Sim) Delivered(side Side) []uint64 { return s.ends[side].delivered }

// Corrupt returns how many frames delivered to side's host were not byte for
// byte a frame the other host sent.
func (s *Sim) Corrupt(side Side) int { return s.ends[side].corrupt }

// Events returns the lg events side's port emitted.
func (s *Sim) Events(side Side) []linkguardian.Event { return s.ends[side].events }

// Recoveries returns the retransmission delays measured by side's receiver.
func (s *Sim) Recoveries(side Side) []int64 { return s.ends[side].recovery }

// Sent returns how many host frames side's host has generated.
func (s *Sim) Sent(side Side) uint64 { return s.ends[side].nextID }

// SentAt returns when side's port accepted host frame id (Send returned
// true; the frame was stamped), or -1 if it never did.
func (s *Sim) SentAt(side Side, id uint64) int64 {
	if e := s.ends[side]; id < uint64(len(e.sendAt)) {
		return e.sendAt[id]
	}
	return -1
}

// DeliveredAt returns the delivery times of Delivered(side), in order.
func (s *Sim) DeliveredAt(side Side) []int64 { return s.ends[side].delAt }

// Restarts returns the times side's switch was restarted.
func (s *Sim) Restarts(side Side) []int64 { return s.ends[side].restarts }

func (s *Sim) newSession(e *end) error {
	ss, err := linksession.New(e.scfg, e.port)
	if err != nil {
		return fmt.Errorf("lgsim: session %v: %w", e.side, err)
	}
	e.sess = ss
	return nil
}

// Session returns side's link session (nil without one).
func (s *Sim) Session(side Side) *linksession.Session { return s.ends[side].sess }

// SessionEvents returns what side's session reported.
func (s *Sim) SessionEvents(side Side) []SessionEvent { return s.ends[side].sessEv }

// Resets returns the times side's port was reset by its session.
func (s *Sim) Resets(side Side) []int64 { return s.ends[side].resets }

// Lost returns how many host frames vanished from side's host queue with a
// restarted switch.
func (s *Sim) Lost(side Side) int { return s.ends[side].lost }

// RestartWith restarts side like Restart, with a new session configuration
// (a new process: give it a new Epoch, or 0 for a random one).
func (s *Sim) RestartWith(side Side, sc linksession.Config) error {
	e := s.ends[side]
	sc.LocalMAC, sc.PeerMAC = e.scfg.LocalMAC, e.scfg.PeerMAC
	e.scfg = sc
	return s.Restart(side)
}

// Restart simulates kill -9 and a new start of side's switch: a new Port
// (same configuration, sequence state from scratch) over a new frame memory.
// Every frame the old process held (TX buffer, reorder buffer, host queue,
// frames received but not processed) vanishes with it; the host behind side
// keeps sending new frames afterwards. Frames already on the wire arrive at
// the new process.
func (s *Sim) Restart(side Side) error {
	e := s.ends[side]
	pool := linksim.NewPool(s.cfg.PoolFrames, 2048, 256)
	p, err := linkguardian.NewEndpoint(e.pcfg, pool)
	if err != nil {
		return fmt.Errorf("lgsim: restart %v: %w", side, err)
	}
	e.lost += len(e.hostQ) + len(e.hostPend)
	e.hostPend, e.pendAt = nil, nil
	for _, data := range e.rxQ {
		s.putBuf(data)
	}
	e.rxQ, e.rxReady = e.rxQ[:0], e.rxReady[:0]
	e.hostQ, e.hostAt = nil, nil
	e.port, e.pool = p, pool
	// A new process loads a new program: a new point and send state, not owned.
	if err := s.connectFast(e); err != nil {
		return err
	}
	if e.sess != nil {
		if e.scfg.Epoch != 0 && e.scfg.Epoch == e.sess.Epoch() {
			e.scfg.Epoch = e.scfg.Epoch*6364136223846793005 + 1442695040888963407 // a new process, deterministically
		}
		if err := s.newSession(e); err != nil {
			return err
		}
	}
	e.restarts = append(e.restarts, s.now)
	e.dirty = true
	s.push(&event{t: s.now, kind: evWake, side: side})
	if e.dead && !s.cfg.Sleeping {
		s.push(&event{t: s.now, kind: evTick, side: side}) // its ticks died with it
	}
	e.dead = false
	return nil
}

// Kill simulates kill -9 of side's switch without a new start: from now on
// it processes nothing and sends nothing (its kernel's frames not yet on
// the wire included), and what reaches it is lost. Its host stops too.
// Restart starts it again.
func (s *Sim) Kill(side Side) { s.ends[side].dead = true }

// AddRule adds a scripted loss rule to the direction leaving from.
func (s *Sim) AddRule(from Side, r *Rule) {
	s.wires[from].cfg.Rules = append(s.wires[from].cfg.Rules, r)
}

// Inject makes frame arrive at side now, as if it had crossed the link (a
// corrupted or forged frame: tests of hostile input). Frames longer than
// 1514 bytes are cut to 1514.
func (s *Sim) Inject(side Side, frame []byte) {
	data := s.getBuf(min(len(frame), 1514))
	copy(data, frame)
	s.inWire++
	s.push(&event{t: s.now, kind: evArrive, side: side, data: data})
}

// Send makes the host behind side send n more frames to the other host, one
// every gap ns from now (gap 0: as fast as the switch takes them).
func (s *Sim) Send(side Side, n int, gap int64) {
	e := s.ends[side]
	e.remaining += n
	e.gap = gap
	e.nextAt = s.now
	s.push(&event{t: s.now, kind: evWake, side: side})
}

// Run advances the virtual clock by d.
func (s *Sim) Run(d int64) { s.run(s.now+d, false) }

// RunUntilQuiet runs until both hosts have sent everything, nothing is on the
// wire and both ports are quiet, or until maxTime more has passed. It reports
// whether the link became quiet.
func (s *Sim) RunUntilQuiet(maxTime int64) bool { return s.run(s.now+maxTime, true) }

func (s *Sim) quiet() bool {
	if s.inWire > 0 {
		return false
	}
	for _, e := range s.ends {
		if e.dead {
			continue
		}
		if e.remaining > 0 || len(e.hostQ) > 0 || len(e.hostPend) > 0 || len(e.rxQ) > 0 || !e.port.Quiet() {
			return false
		}
	}
	return true
}

func (s *Sim) run(until int64, stopQuiet bool) bool {
	for len(s.q) > 0 && s.q[0].t <= until {
		ev := heap.Pop(&s.q).(*event)
		s.now = ev.t
		e := s.ends[ev.side]
		if e.dead {
			// A killed switch: what reaches it is lost, its timers
			// and the frames its kernel held are gone.
			if ev.kind == evArrive || ev.kind == evPFC {
				s.inWire--
			}
			if ev.data != nil {
				s.putBuf(ev.data)
			}
		} else {
			s.handle(e, ev)
		}
		if len(s.q) == 0 || s.q[0].t > s.now {
			for _, e := range s.ends {
				if e.dirty {
					e.dirty = false
					s.iterate(e)
				}
			}
			if stopQuiet && s.quiet() {
				return true
			}
		}
	}
	if s.now < until {
		s.now = until
	}
	return stopQuiet && s.quiet()
}

// handle applies event ev at end e (alive) and marks e for an iteration.
func (s *Sim) handle(e *end, ev *event) {
	switch ev.kind {
	case evArrive:
		s.inWire--
		if e.fast != nil && e.fast.Offer(ev.data) {
			s.fastDeliver(e, ev.data)
			break
		}
		e.rxQ = append(e.rxQ, ev.data)
		e.rxReady = append(e.rxReady, s.now+s.cfg.FastLag)
		if s.cfg.FastLag > 0 {
			s.push(&event{t: s.now + s.cfg.FastLag, kind: evWake, side: ev.side})
		}
	case evPFC:
		s.inWire--
		if ev.pause > 0 {
			e.port.Pause(s.now, ev.pause)
		} else {
			e.port.Resume(s.now)
		}
	case evTick:
		s.push(&event{t: s.now + s.cfg.PollInterval, kind: evTick, side: ev.side})
	case evFlush:
		s.transmit(e, ev.data)
		s.putBuf(ev.data)
	case evWake:
	}
	// A core's deadline it has since replaced wakes nobody (the worker's
	// poll timeout is the latest deadline only).
	if ev.kind != evSleep || ev.t == e.sleepTo {
		e.dirty = true
	}
}

var etherTypes = [...]uint16{0x0800, 0x86DD, 0x0806, 0x88CC, 0x8100}

// hostFrame writes host frame id sent by side into b (deterministic contents:
// MACs of the hosts, an EtherType that varies with id, the id, a pattern).
func hostFrame(b []byte, side Side, id uint64) {
	for i := range b {
		b[i] = byte(uint64(i)*13 + id*7 + uint64(side))
	}
	b[0], b[5] = 0x02, byte(0xB0+1-side) // destination host
	b[6], b[11] = 0x02, byte(0xB0+side)  // source host
	binary.BigEndian.PutUint16(b[12:], etherTypes[id%uint64(len(etherTypes))])
	binary.BigEndian.PutUint64(b[14:], id)
}

func (s *Sim) getBuf(n int) []byte {
	if k := len(s.bufs); k > 0 {
		b := s.bufs[k-1]
		s.bufs = s.bufs[:k-1]
		return b[:n]
	}
	return make([]byte, n, 2048)
}

func (s *Sim) putBuf(b []byte) { s.bufs = append(s.bufs, b) }

// iterate is one pass of the worker loop of package lg at end e.
func (s *Sim) iterate(e *end) {
	now := s.now
	p := e.port
	// 1. Frames from the link: copy into this end's memory (the RX ring).
	ready := len(e.rxQ)
	for i, t := range e.rxReady {
		if t > now {
			ready = i
			break
		}
	}
	for _, data := range e.rxQ[:ready] {
		h, ok := e.pool.Alloc(len(data))
		if !ok {
			e.rxNoBuf++
			s.putBuf(data)
			continue
		}
		b := e.pool.Bytes(h, len(data))
		copy(b, data)
		s.putBuf(data)
		if e.sess != nil {
			if t, ok := seqhdr.FrameType(b); ok && t.IsSession() {
				if ev := e.sess.Receive(now, b); ev != 0 {
					e.sessEv = append(e.sessEv, SessionEvent{now, ev})
					if ev&linksession.EvReset != 0 {
						e.resets = append(e.resets, now)
						if g, ok := e.sess.Agreed(); ok && p.S != nil {
							p.S.SetCredit(int(min(g.Window, 1<<14)))
						}
					}
				}
				e.pool.Free(h)
				continue
			} else if ok && !e.sess.AcceptLink(now) {
				e.pool.Free(h)
				continue
			}
		}
		p.Receive(now, link.Frame{H: h, Len: len(data)})
	}
	n := copy(e.rxQ, e.rxQ[ready:])
	clear(e.rxQ[n:])
	e.rxQ = e.rxQ[:n]
	e.rxReady = e.rxReady[:copy(e.rxReady, e.rxReady[ready:])]
	// The host generates frames into the switch's queue (with FastSend,
	// through the kernel's send path first). The wire's queue (the NIC TX
	// ring) paces the host the kernel sends for as it paces the worker.
	w := e.out
	budget := s.cfg.TxBudget
	if budget <= 0 {
		budget = max(1, w.ser(2*(s.cfg.FrameLen+seqhdr.MaxOverhead)))
	}
	for e.remaining > 0 && len(e.hostQ)+len(e.hostPend) < s.cfg.HostQueue && now >= e.nextAt {
		if e.fs != nil && e.fs.State.Load()&linkguardian.FastOwned != 0 && max(0, w.busyUntil-now) >= budget {
			break // the next tick retries
		}
		if e.fs != nil && s.fastSend(e, now) {
			e.nextID++
			e.remaining--
			e.nextAt += e.gap
			continue
		}
		h, ok := e.pool.Alloc(s.cfg.FrameLen)
		if !ok {
			break
		}
		hostFrame(e.pool.Bytes(h, s.cfg.FrameLen), e.side, e.nextID)
		e.sendAt = append(e.sendAt, -1)
		if e.fs != nil {
			e.hostPend = append(e.hostPend, link.Frame{H: h, Len: s.cfg.FrameLen})
			e.pendAt = append(e.pendAt, now+s.cfg.FastLag)
			if s.cfg.FastLag > 0 {
				s.push(&event{t: now + s.cfg.FastLag, kind: evWake, side: e.side})
			}
		} else {
			e.hostQ = append(e.hostQ, link.Frame{H: h, Len: s.cfg.FrameLen})
			e.hostAt = append(e.hostAt, now)
		}
		e.nextID++
		e.remaining--
		e.nextAt += e.gap
	}
	// Host frames the kernel passed on reach the core (the host port's
	// AF_XDP ring), in order.
	k := 0
	for k < len(e.hostPend) && e.pendAt[k] <= now {
		e.hostQ = append(e.hostQ, e.hostPend[k])
		e.hostAt = append(e.hostAt, now)
		k++
	}
	e.consumed += uint64(k)
	if k > 0 {
		e.hostPend = e.hostPend[:copy(e.hostPend, e.hostPend[k:])]
		e.pendAt = e.pendAt[:copy(e.pendAt, e.pendAt[k:])]
	}
	if e.remaining > 0 && e.gap > 0 && e.nextAt > now && e.wakeAt != e.nextAt {
		e.wakeAt = e.nextAt
		s.push(&event{t: e.nextAt, kind: evWake, side: e.side})
	}
	// 2. Normal frames while the NIC TX ring (TxBudget) has room.
	backlog := max(0, w.busyUntil-now)
	sent := 0
	for len(e.hostQ) > 0 && backlog+w.ser(sent) < budget && p.CanSend(now) {
		f := e.hostQ[0]
		if e.sess != nil {
			v := e.sess.Admit(now, e.hostAt[0])
			if v == linksession.Wait {
				break
			}
			if v != linksession.Send {
				if v == linksession.Pass {
					s.transmit(e, e.pool.Bytes(f.H, f.Len))
					sent += f.Len
				}
				e.pool.Free(f.H)
				e.hostQ, e.hostAt = e.hostQ[1:], e.hostAt[1:]
				continue
			}
		}
		if !p.Send(now, f) {
			break
		}
		if b := e.pool.Bytes(f.H, f.Len); len(b) >= 22 {
			if id := binary.BigEndian.Uint64(b[14:]); id < uint64(len(e.sendAt)) && e.sendAt[id] < 0 {
				e.sendAt[id] = now
			}
		}
		sent += f.Len + seqhdr.MaxOverhead
		e.hostQ, e.hostAt = e.hostQ[1:], e.hostAt[1:]
	}
	if len(e.hostQ) == 0 {
		e.hostQ, e.hostAt = e.hostQ[:0:0], e.hostAt[:0:0]
	}
	// 3. Timers.
	p.Poll(now, len(e.hostQ) == 0)
	// Session frames go first (the priority lane).
	if e.sess != nil {
		if d := e.sess.Poll(now); d > now && (d < now+s.cfg.PollInterval || s.cfg.Sleeping) {
			s.push(&event{t: d, kind: evWake, side: e.side})
		}
		for {
			h, ok := e.pool.Alloc(seqhdr.MinFrameLen)
			if !ok {
				break
			}
			b := e.pool.Bytes(h, seqhdr.MinFrameLen)
			n := e.sess.Frame(now, b)
			if n > 0 {
				s.transmit(e, b[:n])
			}
			e.pool.Free(h)
			if n == 0 {
				break
			}
		}
	}
	// 4. Transmit in priority order.
	for _, ev := range p.Out.Events {
		switch ev.Kind {
		case linkguardian.EvPause:
			if s.cfg.PFCMessages {
				s.sendPFC(e, ev.Nanos)
			}
		case linkguardian.EvResume:
			if s.cfg.PFCMessages {
				s.sendPFC(e, 0)
			}
		case linkguardian.EvRecovered:
			e.recovery = append(e.recovery, ev.Nanos)
		}
		e.events = append(e.events, ev)
		if s.OnEvent != nil {
			s.OnEvent(e.side, now, ev)
		}
	}
	for _, list := range [...][]link.Frame{p.Out.Pause, p.Out.Urgent, p.Out.Retx, p.Out.Normal, p.Out.Low} {
		for _, f := range list {
			s.transmit(e, e.pool.Bytes(f.H, f.Len))
		}
	}
	// 5. Deliver to the host: check the bytes, record the id.
	for _, f := range p.Out.Deliver {
		s.toHost(e, e.pool.Bytes(f.H, f.Len))
		e.pool.Free(f.H)
	}
	// 6. Release.
	for _, f := range p.Out.Free {
		e.pool.Free(f.H)
	}
	p.Out.Reset()
	// 7. The deliveries left for the host at once: the point may go back
	// to the kernel, unless frames it passed on still wait for the core
	// (the kernel would give the point straight back).
	if e.fast != nil && p.R != nil && len(e.rxQ) == 0 && (e.sess == nil || e.sess.Accepts()) {
		p.R.HandOff(now)
	}
	// 8. Sending goes back to the kernel once the core holds no host frame,
	// none waits unread, its data frames left the wire's queue and the
	// session is up; a session that is not up takes it back.
	if e.fs != nil {
		up := e.sess == nil || e.sess.Admit(now, now) == linksession.Send
		if !up {
			p.ClaimSend()
		} else if len(e.hostQ) == 0 && w.busyUntil <= now {
			// What the core took in (it claimed sending for each frame
			// before numbering it): HandOffSend and the kernel's rule
			// compare it with what the kernel passed on, so a frame
			// still in hostPend keeps sending in Go.
			e.fs.Consumed.Store(e.consumed)
			p.HandOffSend(now, true)
		}
	}
	if s.cfg.Sleeping {
		s.sleep(e, w)
	}
}

// sleep schedules a Sleeping core's next wake: its endpoint's deadline, the
// end of its wire's queue while frames wait to be handed back, or at once
// (PollInterval) while it still holds host frames.
func (s *Sim) sleep(e *end, w *wire) {
	now := s.now
	d := e.port.NextDeadline(now, len(e.hostQ) == 0)
	if len(e.hostQ) > 0 || len(e.rxQ) > 0 {
		d = min(d, now+s.cfg.PollInterval)
	}
	if w.busyUntil > now {
		d = min(d, w.busyUntil)
	}
	if d <= now {
		d = now + s.cfg.PollInterval
	}
	if d == e.sleepTo {
		return
	}
	e.sleepTo = d
	if d != math.MaxInt64 {
		s.push(&event{t: d, kind: evSleep, side: e.side})
	}
}

// fastSend offers host frame e.nextID to the kernel's send path (the model
// of the host port's XDP program); if it sends it, the frame goes on the
// wire at once, stamped as the C program stamps it: Seq, the original
// EtherType and the receive point's serial − 1 as the ACK.
func (s *Sim) fastSend(e *end, now int64) bool {
	n := s.cfg.FrameLen
	data := s.getBuf(n + seqhdr.MaxOverhead)
	host := data[seqhdr.MaxOverhead:]
	hostFrame(host, e.side, e.nextID)
	hasAck := e.point != nil
	woken := e.fs.Wakeups.Load()
	q, ack, ok := e.fs.Offer(host, e.point, now)
	if !ok {
		s.putBuf(data)
		return false
	}
	if e.fs.Wakeups.Load() != woken {
		s.push(&event{t: now + s.cfg.FastLag, kind: evWake, side: e.side})
	}
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: q, HasAck: hasAck, Ack: ack}
	_, l, err := seqhdr.Insert(data, seqhdr.MaxOverhead, n, &h)
	if err != nil {
		panic("lgsim: the send fast path took a frame it cannot stamp: " + err.Error())
	}
	e.sendAt = append(e.sendAt, now)
	e.fastSent++
	if s.cfg.FastFlush > 0 {
		// In order behind what the kernel already holds.
		at := max(now+e.out.rng.Int64N(s.cfg.FastFlush), e.flushAt)
		e.flushAt = at
		b := s.getBuf(l)
		copy(b, data[:l])
		s.push(&event{t: at, kind: evFlush, side: e.side, data: b})
	} else {
		s.transmit(e, data[:l])
	}
	s.putBuf(data)
	return true
}

// toHost checks a frame delivered to the host behind e and records its id.
func (s *Sim) toHost(e *end, b []byte) {
	var id uint64
	ok := len(b) == s.cfg.FrameLen
	if ok {
		id = binary.BigEndian.Uint64(b[14:])
		want := s.getBuf(len(b))
		hostFrame(want, 1-e.side, id)
		ok = string(want) == string(b)
		s.putBuf(want)
	}
	if ok {
		e.delivered = append(e.delivered, id)
		e.delAt = append(e.delAt, s.now)
	} else {
		e.corrupt++
	}
}

// fastDeliver is the kernel fast path delivering data (Offer said so): the
// link header stripped, to the host at once.
func (s *Sim) fastDeliver(e *end, data []byte) {
	if _, off, n, err := seqhdr.Strip(data, 0, len(data)); err == nil {
		s.toHost(e, data[off:off+n])
	} else {
		e.corrupt++
	}
	e.fastDel++
	s.putBuf(data)
}

// connectFast gives e's endpoint a new fast path point (Config.Fast) and
// send state (Config.FastSend).
func (s *Sim) connectFast(e *end) error {
	on, send, wakeEvery := s.cfg.Fast, s.cfg.FastSend, s.cfg.FastWakeEvery
	e.fast, e.point, e.fs, e.consumed = nil, nil, nil, 0
	if (on || send) && e.port.R != nil {
		e.point = linkguardian.NewFastPoint()
		e.port.SetFast(e.point)
		if on {
			e.fast = e.point
		}
	}
	if send && e.port.S != nil {
		slots := e.pcfg.Sender.TxBuffer
		fs, err := linkguardian.NewFastSend(slots, linkguardian.FastSlotHeader+1514)
		if err != nil {
			return err
		}
		fs.WakeEvery = wakeEvery
		if err := e.port.SetFastSend(fs); err != nil {
			return err
		}
		e.fs = fs
	}
	return nil
}

// FastSent is the number of host frames the kernel's send path sent at side.
func (s *Sim) FastSent(side Side) int { return s.ends[side].fastSent }

// FastSendState returns side's send fast path state (nil without FastSend).
func (s *Sim) FastSendState(side Side) *linkguardian.FastSend { return s.ends[side].fs }

// FastDelivered is the number of frames the kernel fast path delivered at side.
func (s *Sim) FastDelivered(side Side) int { return s.ends[side].fastDel }

// ser returns the serialization time of n bytes.
func (w *wire) ser(n int) int64 {
	if w.cfg.Rate <= 0 {
		return 0
	}
	return int64(float64(n) * 8e9 / w.cfg.Rate)
}

func (s *Sim) transmit(e *end, frame []byte) {
	w := e.out
	info := Info{N: w.n, DataN: -1}
	w.n++
	var typ seqhdr.Type
	if t, ok := seqhdr.FrameType(frame); ok && !t.IsLG() {
		info.Link, info.Hdr.Type, typ = true, t, t
	} else if seqhdr.IsLink(frame) {
		if h, err := seqhdr.ParseFrame(frame); err == nil {
			info.Link, info.Hdr, typ = true, h, h.Type
			if info.IsData() {
				info.DataN = w.dataN
				w.dataN++
				info.Retx = h.Retx
				if len(frame) >= seqhdr.DataOffset+8 {
					info.ID = binary.BigEndian.Uint64(frame[seqhdr.DataOffset:])
				}
			}
		}
	}
	start := max(s.now, w.busyUntil)
	arrive := start + w.ser(len(frame))
	if w.cfg.PriorityLane && info.Link && !info.IsData() {
		arrive = s.now + w.ser(len(frame))
	} else {
		w.busyUntil = arrive
	}
	w.stats.Sent++
	w.stats.SentByType[typ]++
	w.stats.Bytes += uint64(len(frame))
	drop := false
	for _, r := range w.cfg.Rules {
		if r.apply(&info) {
			drop = true
			break
		}
	}
	if !drop && w.cfg.Random != nil {
		drop = w.cfg.Random.Drop(w.rng, s.now)
	}
	if drop {
		w.stats.Dropped++
		w.stats.DroppedByType[typ]++
		return
	}
	t := arrive + w.cfg.Delay
	if info.Link && typ != seqhdr.TypeData && w.cfg.CtrlJitter > 0 {
		t += w.rng.Int64N(w.cfg.CtrlJitter)
	}
	data := s.getBuf(len(frame))
	copy(data, frame)
	s.inWire++
	s.push(&event{t: t, kind: evArrive, side: 1 - e.side, data: data})
}

// sendPFC sends a PFC pause (d > 0) or resume (d == 0) towards the peer of e.
// It takes a minimum-size frame's time on the wire.
func (s *Sim) sendPFC(e *end, d int64) {
	w := e.out
	info := Info{N: w.n, DataN: -1, PFC: true}
	w.n++
	start := max(s.now, w.busyUntil)
	w.busyUntil = start + w.ser(64)
	w.stats.PFCSent++
	for _, r := range w.cfg.Rules {
		if r.apply(&info) {
			w.stats.PFCDrp++
			return
		}
	}
	if w.cfg.LosePFC && w.cfg.Random != nil && w.cfg.Random.Drop(w.rng, s.now) {
		w.stats.PFCDrp++
		return
	}
	s.inWire++
	s.push(&event{t: w.busyUntil + w.cfg.Delay, kind: evPFC, side: 1 - e.side, pause: d})
}
