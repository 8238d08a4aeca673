// Package fmcore is the fabric manager's state machine: it walks the slots
// of the current round on the caller's clock and says which control frames
// leave when, while the next round is computed elsewhere and published one
// round ahead (the paper's pipelining, §4). Pure logic: times in ns passed
// in, deadlines returned, no goroutines.
//
// Per slot k of a round (boundary T_k, guard g, slot length L):
//   - lease and free-run: at T_k + g − Lead, a lease grant to every host
//     scheduled in slot k, open until T_{k+1};
//   - paper: at T_k a pause of every class to every host, at T_k + g an
//     unpause of its class to every scheduled host.
//
// Frames of one instant go out host by host, the order rotated by one at
// every boundary (§5.2.1), so no host is always served last.
//
// A round not published by its deadline is never used: the FM runs one
// idle slot and skips that round number, so a host that knows round r+1's
// schedule may assume it starts exactly when round r ends (free-run relies
// on it).
package fmcore

import (
	"errors"
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// Config configures the FM.
type Config struct {
	N       int
	SlotLen int64
	Guard   int64
	Mode    gate.Discipline
	// Lead: grants leave this long before the open part of the slot (the
	// hosts' delay and wake-up), 0 ≤ Lead ≤ Guard; a host opens at the end
	// of the guard by its own timer, anchored on the grant's receive time.
	Lead int64
	// LinkSpeed (bits/s) converts the standard part's pause to quanta.
	LinkSpeed uint64
	// LeaseSlots is written in every schedule: how long hosts may free-run.
	LeaseSlots int
	// PublishMargin: round r+1 must be published this long before round r ends.
	PublishMargin int64
	Src           [6]byte
	Hosts         [][6]byte // unicast MAC per host (may be nil)
	// Trace, if set, is called as each slot starts (skipped ones too) with
	// its start, round (nil: idle) and index: the FM's true timeline.
	Trace func(start int64, r *sched.Round, slot int)
	// Capacity: hosts whose receive capacity oscillates; windows into
	// them open only as it drains them (capGate). Lease and paper modes
	// only: in free-run a host opens its schedule's windows without a
	// grant.
	Capacity []Capacity
}

// Stall is a span of the FM's timeline in which the hosts had no window:
// the FM woke after the grants of some slots were due (its process was
// stopped or starved) and skipped them. Host h's windows ended at From[h]:
// where its last grant before the stall had it stop, the end of the
// granted slot, or in free-run the end of the lease that grant gave it
// (LeaseSlots slots after it: the host opens its schedule's windows on its
// own timer until then); 0 if it never had a grant. To is the end of the
// last slot skipped. Nothing of the slots between From[h] and To left host
// h, whatever its rounds gave it there. Paper mode has no stall: a host
// unpaused sends until a pause comes.
type Stall struct {
	From []int64
	To   int64
}

// Emission is a control frame due to a host.
type Emission struct {
	Host  int
	Due   int64 // when it should have left
	Grant wire.Grant
}

// Stats are the FM's counters.
type Stats struct {
	Rounds     uint64 // rounds started
	Slots      uint64 // slots run (idle ones included)
	IdleSlots  uint64 // slots with no round: the next was not published in time
	Frames     uint64 // control frames emitted
	Skipped    uint64 // frames skipped: the FM woke after their window had passed
	Stalls     uint64 // wake-ups that skipped grants (LastStall)
	LatePublic uint64 // rounds refused by Publish after their deadline
	Withheld   uint64 // windows into a Capacity's host not opened: its low rate had not drained the ones before
}

// ErrLate: Publish after the round's deadline, or of an unexpected round.
var ErrLate = errors.New("fmcore: round published too late or out of order")

// FM is the state machine. Not safe for concurrent use.
type FM struct {
	cfg       Config
	cur, next *sched.Round
	lastID    uint32 // highest round number used or skipped
	slot      int    // index in cur; -1 while idle
	slotStart int64
	phase     int // 0: boundary (pause-all in paper mode), 1: grants, 2: done
	rotation  int
	seq       []uint32
	capGates  []*capGate // per host; nil: full capacity
	s         Stats
	// winEnd: when each host's last granted window ends (its lease's end
	// in free-run); stall: the last stall (Stats.Stalls counts them);
	// skipping: Emit has skipped grants in this call
	winEnd   []int64
	stall    Stall
	skipping bool
}

// New returns an FM whose first slot starts at start; the first round
// (ID 1) must be published by start, or the FM idles until it is.
func New(cfg Config, start int64) (*FM, error) {
	switch {
	case cfg.N < 2 || cfg.N > wire.MaxHosts:
		return nil, fmt.Errorf("fmcore: %d hosts (want 2..%d)", cfg.N, wire.MaxHosts)
	case cfg.SlotLen <= 0 || cfg.Guard < 0 || cfg.Guard >= cfg.SlotLen:
		return nil, fmt.Errorf("fmcore: slot %d ns, guard %d ns: want 0 ≤ guard < slot", cfg.SlotLen, cfg.Guard)
	case cfg.Lead < 0 || cfg.Lead > cfg.Guard:
		return nil, fmt.Errorf("fmcore: lead %d ns must be in [0, guard %d ns]", cfg.Lead, cfg.Guard)
	case cfg.SlotLen > math.MaxUint32:
		return nil, fmt.Errorf("fmcore: slot %d ns over the trailer's 4.29 s", cfg.SlotLen)
	case cfg.LinkSpeed == 0:
		return nil, fmt.Errorf("fmcore: LinkSpeed must be > 0")
	case len(cfg.Capacity) > 0 && cfg.Mode == gate.FreeRun:
		return nil, fmt.Errorf("fmcore: a host's capacity needs lease or paper mode: in free-run hosts open their schedules' windows without a grant")
	}
	f := &FM{cfg: cfg, slot: -1, slotStart: start - cfg.SlotLen, phase: 2, seq: make([]uint32, cfg.N),
		winEnd: make([]int64, cfg.N), stall: Stall{From: make([]int64, cfg.N)}}
	for _, c := range cfg.Capacity {
		if err := c.Check(cfg.N, cfg.SlotLen, cfg.Guard); err != nil {
			return nil, err
		}
		if f.capGates == nil {
			f.capGates = make([]*capGate, cfg.N)
		}
		if f.capGates[c.Host] != nil {
			return nil, fmt.Errorf("fmcore: two capacities for host %d", c.Host)
		}
		f.capGates[c.Host] = newCapGate(c, cfg.SlotLen, cfg.Guard)
	}
	f.lastID = 0
	return f, nil
}

// Stats returns the counters.
func (f *FM) Stats() Stats { return f.s }

// LastStall returns the last stall and how many there have been (0: none,
// and the Stall is empty). Its From is the FM's own: copy it to keep it.
func (f *FM) LastStall() (Stall, uint64) { return f.stall, f.s.Stalls }

// Want returns the round number the FM needs next and the time by which
// it must be published; ok is false while one is already waiting.
func (f *FM) Want() (id uint32, by int64, ok bool) {
	if f.next != nil {
		return 0, 0, false
	}
	if f.lastID == 0 && f.cur == nil {
		return 1, f.roundEnd(), true // the first round: any time before the next boundary
	}
	return f.lastID + 1, f.roundEnd() - f.cfg.PublishMargin, true
}

// roundEnd is when the current round (or idle slot) ends.
func (f *FM) roundEnd() int64 {
	if f.cur == nil || f.slot < 0 {
		return f.slotStart + f.cfg.SlotLen
	}
	return f.slotStart + int64(len(f.cur.Slots)-f.slot)*f.cfg.SlotLen
}

// Publish hands over the next round at now. It fails with ErrLate after
// Want's deadline or for another round number; the round is then dropped
// and its number skipped.
func (f *FM) Publish(now int64, r *sched.Round) error {
	id, by, ok := f.Want()
	if !ok || r.ID != id || now > by {
		f.s.LatePublic++
		return fmt.Errorf("%w: round %d at %d ns (want round %d by %d ns)", ErrLate, r.ID, now, id, by)
	}
	if len(r.Slots) > wire.MaxSlots {
		return fmt.Errorf("fmcore: round %d has %d slots (max %d)", r.ID, len(r.Slots), wire.MaxSlots)
	}
	f.next = r
	return nil
}

// Current returns the round being run (nil while idle), the slot index and
// its start time.
func (f *FM) Current() (*sched.Round, int, int64) {
	if f.slot < 0 {
		return nil, -1, f.slotStart
	}
	return f.cur, f.slot, f.slotStart
}

// NextDeadline returns when Emit has something to do next.
func (f *FM) NextDeadline() int64 {
	switch f.phase {
	case 0:
		return f.slotStart
	case 1:
		return f.grantTime()
	}
	return f.slotStart + f.cfg.SlotLen
}

func (f *FM) grantTime() int64 {
	t := f.slotStart + f.cfg.Guard
	if f.cfg.Mode != gate.Paper {
		t -= f.cfg.Lead
	}
	return t
}

// advance moves to the next slot (and round).
func (f *FM) advance() {
	f.slotStart += f.cfg.SlotLen
	f.rotation++
	f.s.Slots++
	defer f.trace()
	if f.cur != nil && f.slot >= 0 && f.slot+1 < len(f.cur.Slots) {
		f.slot++
		f.phase = 0
		return
	}
	if f.next != nil {
		f.cur, f.next, f.slot = f.next, nil, 0
		f.lastID = f.cur.ID
		f.s.Rounds++
		if len(f.cur.Slots) == 0 { // an empty round is one idle slot
			f.slot = -1
		}
	} else {
		if f.cur != nil || f.lastID > 0 {
			f.lastID++ // that round is skipped for good
		}
		f.cur, f.slot = nil, -1
		f.s.IdleSlots++
	}
	f.phase = 0
}

func (f *FM) trace() {
	if f.cfg.Trace != nil {
		r, k, t := f.Current()
		f.cfg.Trace(t, r, k)
	}
}

// Emit appends to out every frame due by now and returns it. Frames whose
// window is already over (the FM woke too late) are skipped and counted,
// and the grants skipped make a stall (LastStall).
func (f *FM) Emit(now int64, out []Emission) []Emission {
	for f.NextDeadline() <= now {
		if f.phase == 2 {
			f.advance()
			continue
		}
		end := f.slotStart + f.cfg.SlotLen
		if f.phase == 0 {
			f.phase = 1
			if f.cfg.Mode == gate.Paper {
				out = f.emitAll(now, end, out, true)
			}
			continue
		}
		f.phase = 2
		if f.slot >= 0 {
			out = f.emitAll(now, end, out, false)
		}
	}
	if f.skipping {
		f.skipping = false
		f.s.Stalls++
	}
	return out
}

func (f *FM) emitAll(now, end int64, out []Emission, pause bool) []Emission {
	N := f.cfg.N
	for v := 0; v < N; v++ {
		h := (f.rotation + v) % N
		var c int = -1
		if !pause {
			m := f.cur.Slots[f.slot]
			if m[h] < 0 {
				continue
			}
			c = int(f.cur.Class[h][m[h]])
		}
		if now >= end-f.cfg.Guard && !pause || now >= end {
			f.s.Skipped++
			if !pause && f.cfg.Mode != gate.Paper {
				if !f.skipping {
					f.skipping = true
					copy(f.stall.From, f.winEnd)
				}
				f.stall.To = end
			}
			continue
		}
		if !pause && f.capGates != nil {
			if g := f.capGates[f.cur.Slots[f.slot][h]]; g != nil && !g.allow(f.slotStart) {
				f.s.Withheld++
				continue
			}
		}
		f.seq[h]++
		t := wire.Trailer{Seq: f.seq[h], GuardUs: uint16(min(f.cfg.Guard/1000, math.MaxUint16)), FMTime: now}
		if f.slot >= 0 {
			t.Round, t.Slot = uint16(f.cur.ID), uint8(f.slot)
		}
		if f.cfg.Mode == gate.FreeRun {
			t.Flags |= wire.FlagFreeRunOK
		}
		if f.next == nil && (f.cur == nil || f.slot == len(f.cur.Slots)-1) {
			t.Flags |= wire.FlagSchedulePending
		}
		var dst [6]byte
		if h < len(f.cfg.Hosts) {
			dst = f.cfg.Hosts[h]
		}
		e := Emission{Host: h}
		if pause {
			e.Due = f.slotStart
			wire.PauseAll(&e.Grant, dst, f.cfg.Src, t)
		} else {
			e.Due = f.grantTime()
			t.OpenNs = uint32(end - now)
			if f.cfg.Mode == gate.Paper {
				wire.Unpause(&e.Grant, dst, f.cfg.Src, c, t)
			} else {
				wire.LeaseGrant(&e.Grant, dst, f.cfg.Src, c, f.cfg.SlotLen, f.cfg.LinkSpeed, t)
			}
			f.winEnd[h] = end
			if f.cfg.Mode == gate.FreeRun {
				f.winEnd[h] = max(end, now+int64(f.cfg.LeaseSlots)*f.cfg.SlotLen)
			}
		}
		f.s.Frames++
		out = append(out, e)
	}
	return out
}

// ScheduleFor fills s with host h's part of round r; stagger: the FM
// staggers the round's windows for every host alike (wire.ScheduleStagger).
// A round with slot budgets (sched.Round.Budget) sets them for every host
// alike (wire.ScheduleBudget), a host without a window or a bound in a
// slot 0 there.
func ScheduleFor(r *sched.Round, h int, leaseSlots int, stagger bool, s *wire.Schedule) {
	N := len(r.Class)
	*s = wire.Schedule{Host: uint16(h), Round: r.ID, SlotLen: uint32(r.SlotLen), Guard: uint32(r.Guard),
		LeaseSlots: uint16(leaseSlots), NHosts: uint8(N), NSlots: uint16(len(r.Slots))}
	if stagger {
		s.Flags |= wire.ScheduleStagger
	}
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	for i := range s.Slot {
		s.Slot[i] = -1
	}
	copy(s.ClassMap[:N], r.Class[h])
	for k, m := range r.Slots {
		if j := m[h]; j >= 0 {
			s.Slot[k] = r.Class[h][j]
		}
	}
	if r.Budget != nil {
		s.Flags |= wire.ScheduleBudget
		for k := range r.Slots {
			if s.Slot[k] >= 0 && k < len(r.Budget) {
				s.Budget[k] = uint32(min(max(r.Budget[k][h], 0), math.MaxUint32))
			}
		}
	}
}
