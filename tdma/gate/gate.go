// Package gate is the host's TDMA gate: which traffic class may send now,
// until when, and how many bytes may still leave before the window closes.
// It is driven by grants from the fabric manager (wire.Grant), by the round
// schedule (wire.Schedule) and by the caller's clock: pure logic, times in
// ns passed in, deadlines returned, no allocation after New.
//
// Disciplines:
//   - Lease: a grant opens one class until rx + open − d_est − margin, on the
//     host's own timer; no pause is needed to stop.
//   - FreeRun: Lease, and between grants the host opens the class the
//     schedule gives each slot on its own timer, for at most LeaseSlots slots
//     after the last frame heard.
//   - Paper: the paper's reactive gate (§4 step 5): 802.1Qbb pause/resume
//     only; a class stays open until a pause arrives or its quanta run out.
//
// Verdict is the rule of the exit gate on the switch side (bpf.TDMAGate),
// which returns to its host a frame that left too late.
package gate

import (
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// Discipline selects how the gate opens and closes.
type Discipline uint8

// Disciplines.
const (
	Lease Discipline = iota
	FreeRun
	Paper
)

func (m Discipline) String() string {
	switch m {
	case Lease:
		return "lease"
	case FreeRun:
		return "freerun"
	case Paper:
		return "paper"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseDiscipline parses lease, freerun or paper.
func ParseDiscipline(s string) (Discipline, error) {
	for _, m := range []Discipline{Lease, FreeRun, Paper} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("mode %q: want lease, freerun or paper", s)
}

// Config configures a gate.
type Config struct {
	Mode Discipline
	// Rate is the host's line rate in bits/s (the egress TBF at R).
	Rate uint64
	// Overhead is the wire bytes per frame beyond its bytes (preamble,
	// inter-frame gap, FCS): 24 on Ethernet.
	Overhead int
	// MinFrame is the smallest frame worth releasing (60).
	MinFrame int
	// DelayEst is d_est, the FM → host one-way delay estimate (ns).
	DelayEst int64
	// Margin is taken off every close time (ns): the host timer's error.
	Margin int64
	// LeaseSlots bounds free-run: slots after the one of the last frame heard.
	LeaseSlots int
}

// Window is an open class: its destination and when it opens and closes.
type Window struct {
	Class   int
	Dst     int
	OpenAt  int64  // a grant that arrives early opens the class at its slot's guard end
	Close   int64  // math.MaxInt64: until paused (paper mode)
	FreeRun bool   // opened by the host's own timer
	Round   uint32 // the round and slot the window belongs to
	Slot    int
	// Due is the intended end of the slot plus the guard (host clock):
	// after it the next slot's sender may be on the receiver's port. In
	// paper mode the window stays open past it until a pause arrives.
	Due int64
	// FMEnd is the slot's end on the FM's timeline: the grant's send time
	// (its trailer) plus its open time, moved with the window when
	// staggered (the receiving port's slot); 0 if unknown.
	// Diagnostics only: the host never acts on the FM's clock.
	FMEnd int64
	// SlotLen and Guard are the window's slot length and guard (ns).
	SlotLen, Guard int64
}

// Stats are the gate's counters.
type Stats struct {
	CtlRx         uint64 // control frames heard
	CtlLost       uint64 // gaps in the FM's sequence numbers
	CtlDup        uint64 // duplicate or reordered frames ignored
	Plain         uint64 // PFC frames without a TDMA trailer
	GrantOpens    uint64 // windows opened by a grant
	FreeRunOpens  uint64 // windows opened by the host's own timer
	LeaseExpiries uint64 // silences: nothing heard for the lease
	NoSchedule    uint64 // grants whose round schedule was unknown
	Frames, Bytes uint64 // released
	// OverrunBytes: bytes released to end after the intended close plus
	// guard of the grant that opened them (what paper mode risks).
	OverrunBytes uint64
	// LateCuts: windows closed early because their grant came later than
	// the fastest of the last grants by more than the guard (Gate.late);
	// LateCutNs: the time so taken off their closes.
	LateCuts, LateCutNs uint64
}

const nsched = 4

// nlag is how many grants the gate compares a grant with to tell how late
// it is (Gate.late): a grant a slot, 1.28 s of the star's 5 ms slots. In
// the simulator's shuffle the fastest of 16 could still be some 90 µs
// later than d_est, past the margin (a receiving host's switch port is
// seldom idle: a grant waits behind part of a data frame), and 2 runs of
// 128 overran; with 256 no frame of 256 runs ended closer than 17 µs to
// its slot's end plus the guard. Two clocks drifting apart at a rate r
// move the comparison by at most r × 1.28 s (13 µs at 10 ppm): grants
// look later when the host's clock gains, earlier when it loses.
const nlag = 256

// Gate is one host's gate. Not safe for concurrent use.
type Gate struct {
	cfg   Config
	sched [nsched]wire.Schedule
	have  [nsched]bool

	heard     bool
	lastHeard int64
	lastSeq   uint32
	expired   bool

	// lease / free-run
	win     Window
	winOpen bool
	// next: a staggered window granted while win is still open; it
	// becomes win when win closes.
	next    Window
	hasNext bool
	anchor  struct {
		ok       bool
		round    uint32 // full round number
		slot     int
		boundary int64 // estimated end of the anchor slot
		fmEnd    int64 // the same on the FM's timeline (0: unknown)
		openLag  int64 // d_est when anchored: opens wait for it (see OnGrant)
		cut      int64 // taken off every close timed from it (see OnGrant)
		slotLen  int64
		guard    int64
	}
	frKey uint64 // round<<16|slot of the last free-run window counted

	// lags: the last grants' receive time less the FM's send time in
	// their trailer (the FM's clock's offset and each grant's delay),
	// nlags of them held, the next one to go at lags[lagAt]
	lags         [nlag]int64
	nlags, lagAt int

	// paper
	st       pfc.State
	opened   uint8
	clsRound [pfc.NumClasses]uint16 // trailer round of the unpause that opened each class
	clsSlot  [pfc.NumClasses]uint8
	clsEnd   [pfc.NumClasses]int64 // intended close + guard, for overrun accounting
	clsFMEnd [pfc.NumClasses]int64 // the slot's end on the FM's timeline (0: unknown)

	ext pfc.State // plain PFC from other senders (any mode)
	vf  int64     // shaper: when the TBF will have sent everything released
	s   Stats
}

// New returns a closed gate.
func New(cfg Config) (*Gate, error) {
	if cfg.Rate == 0 {
		return nil, fmt.Errorf("gate: Rate must be > 0 bits/s")
	}
	if cfg.Mode > Paper {
		return nil, fmt.Errorf("gate: unknown mode %d", cfg.Mode)
	}
	if cfg.MinFrame <= 0 {
		cfg.MinFrame = 60
	}
	if cfg.LeaseSlots <= 0 {
		cfg.LeaseSlots = 1
	}
	return &Gate{cfg: cfg}, nil
}

// Stats returns the counters.
func (g *Gate) Stats() Stats { return g.s }

// SetDelayEst replaces d_est (a new calibration); it applies from the
// next grant.
func (g *Gate) SetDelayEst(d int64) { g.cfg.DelayEst = d }

// Config returns the configuration.
func (g *Gate) Config() Config { return g.cfg }

// LastHeard returns the kernel receive time of the last control frame with
// a TDMA trailer (the lease runs from it), 0 if none yet.
func (g *Gate) LastHeard() int64 {
	if !g.heard {
		return 0
	}
	return g.lastHeard
}

// OnSchedule stores a round's schedule for this host (kept for 4 rounds).
func (g *Gate) OnSchedule(s *wire.Schedule) {
	i := s.Round % nsched
	g.sched[i] = *s
	g.have[i] = true
}

// schedule returns the stored schedule of the round whose low 16 bits are
// r16 (the trailer's round), or nil.
func (g *Gate) schedule16(r16 uint16) *wire.Schedule {
	for i := range g.sched {
		if g.have[i] && uint16(g.sched[i].Round) == r16 {
			return &g.sched[i]
		}
	}
	return nil
}

// Booked reports whether the schedule of round r gives this host a window
// to dst in slot k; known is false if that schedule is not (or no longer)
// held.
func (g *Gate) Booked(r uint32, k, dst int) (booked, known bool) {
	s := g.schedule(r)
	if s == nil {
		return false, false
	}
	if uint(k) >= uint(len(s.Slot)) || uint(dst) >= uint(len(s.ClassMap)) {
		return false, true
	}
	c := s.ClassMap[dst]
	return c >= 0 && s.Slot[k] == c, true
}

func (g *Gate) schedule(r uint32) *wire.Schedule {
	i := r % nsched
	if g.have[i] && g.sched[i].Round == r {
		return &g.sched[i]
	}
	return nil
}

// OnGrant takes a control frame handled at now and received (kernel time
// stamp) at rx.
func (g *Gate) OnGrant(now, rx int64, gr *wire.Grant) {
	g.s.CtlRx++
	if !gr.HasTrailer {
		g.s.Plain++
		g.ext.Apply(&gr.PFC, rx, g.cfg.Rate)
		if g.cfg.Mode == Paper {
			g.st.Apply(&gr.PFC, rx, g.cfg.Rate)
		}
		return
	}
	if g.heard {
		d := int32(gr.Seq - g.lastSeq)
		if d <= 0 {
			g.s.CtlDup++
			return
		}
		g.s.CtlLost += uint64(d - 1)
	}
	g.heard, g.lastSeq, g.lastHeard, g.expired = true, gr.Seq, rx, false
	if gr.Flags&wire.FlagClose != 0 {
		g.closeAll()
		return
	}
	sc := g.schedule16(gr.Round)
	if g.cfg.Mode == Paper {
		g.st.Apply(&gr.PFC, rx, g.cfg.Rate)
		if gr.PFC.Opcode != pfc.OpPFC {
			return
		}
		for c := 0; c < pfc.NumClasses; c++ {
			bit := uint8(1) << c
			if gr.PFC.ClassEnable&bit == 0 {
				continue
			}
			if gr.PFC.Quanta[c] == 0 {
				g.opened |= bit
				g.clsRound[c], g.clsSlot[c] = gr.Round, gr.Slot
				g.clsEnd[c] = rx + int64(gr.OpenNs) - g.cfg.DelayEst + int64(gr.GuardUs)*1000
				g.clsFMEnd[c] = fmEnd(gr)
				g.s.GrantOpens++
			}
		}
		return
	}
	c := gr.GrantClass()
	if c < 0 {
		g.closeAll() // a pause-all or anything else: closed
		return
	}
	if sc == nil {
		g.s.NoSchedule++
		g.winOpen = false
		return
	}
	boundary := rx - g.cfg.DelayEst + int64(gr.OpenNs)
	// The guard covers a grant's delay beyond d_est, up to the guard and
	// the margin: a grant later than that (the control delay's tail, and
	// a data frame ahead of it in the switch's port) would leave its
	// window open past the slot's end plus the guard, into the next
	// sender's time. How late a grant is, the gate learns without the
	// FM's clock: from how much later than the fastest of the last grants
	// it came (late). A grant later than that by more than the guard has
	// its window's close, and those of the free-run windows timed from
	// it, brought forward by the rest; the margin covers the fastest
	// one's own delay beyond d_est. Its open stays where its arrival puts
	// it: however wrong the estimate, a window only closes earlier.
	cut := max(g.late(rx, gr)-int64(sc.Guard), 0)
	if cut > 0 {
		g.s.LateCuts++
		g.s.LateCutNs += uint64(cut)
	}
	a := &g.anchor
	a.ok, a.round, a.slot, a.boundary, a.fmEnd, a.openLag, a.cut = true, sc.Round, int(gr.Slot), boundary, fmEnd(gr), g.cfg.DelayEst, cut
	a.slotLen, a.guard = int64(sc.SlotLen), int64(sc.Guard)
	key := uint64(sc.Round)<<16 | uint64(gr.Slot)
	if !(g.winOpen && g.win.FreeRun && g.frKey == key) {
		g.s.GrantOpens++
	}
	g.frKey = key
	// Timers are anchored on the kernel receive time, not on when the agent
	// woke. A window closes at the estimated end of its slot (d_est taken
	// off the delay; the guard covers the error) but opens as if the grant
	// had taken no time at all: d_est is a minimum over other frames, a
	// grant may come sooner, and a host must never open before the FM's
	// slot start plus the guard. A grant sent ahead of its slot so opens d
	// after the end of its guard, d_est at most later than it could.
	w := Window{Class: c, Dst: sc.Dst(c), OpenAt: boundary + g.cfg.DelayEst - int64(sc.SlotLen) + int64(sc.Guard), Close: boundary - cut - g.cfg.Margin,
		Round: sc.Round, Slot: int(gr.Slot), Due: boundary - cut + int64(sc.Guard), FMEnd: a.fmEnd,
		SlotLen: int64(sc.SlotLen), Guard: int64(sc.Guard)}
	w.move(shift(sc, w.Dst))
	ok := w.Dst >= 0 && w.Close > w.OpenAt
	// The grant of the next slot can come while a staggered window is
	// open: it stays open to its close, never past the new window's open.
	if sc.Staggered() && g.winOpen && now >= g.win.OpenAt && now < g.win.Close && ok {
		g.win.Close = min(g.win.Close, w.OpenAt)
		g.next, g.hasNext = w, true
		return
	}
	g.win, g.hasNext = w, false
	g.winOpen = ok
}

// late returns how much later than the fastest of the last nlag grants
// (gr among them) gr came: its receive time less the FM's send time in its
// trailer, less their least. The FM's clock's offset from the host's is
// in every one of them and drops out; what is left is gr's delay less the
// fastest one's. 0 if the trailer has no send time.
func (g *Gate) late(rx int64, gr *wire.Grant) int64 {
	if gr.FMTime < 0 {
		return 0
	}
	d := rx - gr.FMTime
	g.lags[g.lagAt] = d
	g.lagAt = (g.lagAt + 1) % nlag
	g.nlags = min(g.nlags+1, nlag)
	least := d
	for _, l := range g.lags[:g.nlags] {
		least = min(least, l)
	}
	return d - least
}

// shift is how much later than its slot a window to dst opens and closes:
// dst·guard/N if the FM staggers the round sc (wire.ScheduleStagger), 0
// otherwise. Staggered, the hosts' windows of a slot open at N instants
// guard/N apart instead of one, so that N agents on fewer CPUs do not all
// need one at once. Each window keeps its length, and every receiver the
// full guard between its senders (all its windows move alike); a host's
// own windows to two destinations stay at least guard/N plus the margin
// apart. Every host must stagger alike, so the FM decides it, and every
// gate follows the schedule.
func shift(sc *wire.Schedule, dst int) int64 {
	if !sc.Staggered() || dst < 0 || sc.NHosts == 0 {
		return 0
	}
	return int64(dst) * int64(sc.Guard) / int64(sc.NHosts)
}

// move shifts w by d, its slot's end on the FM's timeline with it: the
// receiving port's slot (every window to it moves alike).
func (w *Window) move(d int64) {
	w.OpenAt += d
	w.Close += d
	w.Due += d
	if w.FMEnd != 0 {
		w.FMEnd += d
	}
}

// promote makes the window granted while the last one was open current
// once that one has closed.
func (g *Gate) promote(now int64) {
	if g.hasNext && (!g.winOpen || now >= g.win.Close) {
		g.win, g.winOpen, g.hasNext = g.next, true, false
	}
}

// fmEnd is the end of the slot gr grants on the FM's clock, 0 if gr does
// not say when it was sent (a negative time; 0 is a time: the simulated
// FM's first slot starts then).
func fmEnd(gr *wire.Grant) int64 {
	if !gr.HasTrailer || gr.FMTime < 0 {
		return 0
	}
	return gr.FMTime + int64(gr.OpenNs)
}

// LeaseEnd returns when the lease of the last control frame heard runs
// out (lease and free-run modes), math.MaxInt64 if there is none.
func (g *Gate) LeaseEnd() int64 {
	if g.cfg.Mode == Paper || !g.heard || g.anchor.slotLen <= 0 {
		return math.MaxInt64
	}
	return g.lastHeard + g.lease()
}

func (g *Gate) closeAll() {
	g.winOpen, g.hasNext = false, false
	g.anchor.ok = false
	g.opened = 0
}

// lease is how long the gate may act on the last frame heard.
func (g *Gate) lease() int64 { return int64(g.cfg.LeaseSlots) * g.anchor.slotLen }

// expire applies the lease: nothing heard for LeaseSlots slots closes all.
func (g *Gate) expire(now int64) {
	if g.heard && !g.expired && g.cfg.Mode != Paper && g.anchor.slotLen > 0 && now-g.lastHeard > g.lease() {
		g.expired = true
		g.s.LeaseExpiries++
		g.closeAll()
	}
}

// freeRun returns the free-run window at now, if any, and the start of
// the next free-run opportunity otherwise (math.MaxInt64 if none).
func (g *Gate) freeRun(now int64) (Window, bool, int64) {
	a := &g.anchor
	if g.cfg.Mode != FreeRun || !a.ok || a.slotLen <= 0 {
		return Window{}, false, math.MaxInt64
	}
	m := int64(0)
	if now >= a.boundary {
		m = (now - a.boundary) / a.slotLen
	}
	if m > 0 {
		m-- // the slot before's staggered window may still be open
	}
	for ; m < int64(g.cfg.LeaseSlots); m++ {
		start := a.boundary + m*a.slotLen
		r, s, ok := g.locate(a.round, a.slot+1+int(m))
		if !ok {
			return Window{}, false, math.MaxInt64
		}
		sc := g.schedule(r)
		c := int(sc.Slot[s])
		if c < 0 {
			continue
		}
		w := Window{Class: c, Dst: sc.Dst(c), OpenAt: start + a.guard + a.openLag, Close: start + a.slotLen - a.cut - g.cfg.Margin, FreeRun: true,
			Round: r, Slot: s, Due: start + a.slotLen - a.cut + a.guard, SlotLen: a.slotLen, Guard: a.guard}
		if a.fmEnd != 0 {
			w.FMEnd = a.fmEnd + (m+1)*a.slotLen
		}
		if w.Dst < 0 {
			continue
		}
		if sh := shift(sc, w.Dst); sh > 0 {
			w.move(sh)
			w.Close = min(w.Close, g.lastHeard+g.lease()) // the lease's last window would close past it
		}
		if w.Close <= now || w.Close <= w.OpenAt {
			continue
		}
		if now < w.OpenAt {
			return Window{}, false, w.OpenAt
		}
		if key := uint64(r)<<16 | uint64(s); key != g.frKey {
			g.frKey = key
			g.s.FreeRunOpens++
		}
		return w, true, 0
	}
	return Window{}, false, math.MaxInt64
}

// locate maps slot index s counted from the start of round r (possibly
// past its end) to a (round, slot) with a known schedule.
func (g *Gate) locate(r uint32, s int) (uint32, int, bool) {
	for {
		sc := g.schedule(r)
		if sc == nil || sc.NSlots == 0 {
			return 0, 0, false
		}
		if s < int(sc.NSlots) {
			return r, s, true
		}
		s -= int(sc.NSlots)
		r++
	}
}

// Open returns the classes open at now (a bit per class) and the window of
// the first; the caller asks Window for others.
func (g *Gate) Open(now int64) uint8 {
	g.expire(now)
	ext := g.ext.PausedMask(now)
	if g.cfg.Mode == Paper {
		return g.opened &^ g.st.PausedMask(now) &^ ext
	}
	if w, ok := g.window(now); ok {
		return uint8(1<<w.Class) &^ ext
	}
	return 0
}

func (g *Gate) window(now int64) (Window, bool) {
	g.promote(now)
	if g.winOpen && now < g.win.Close {
		return g.win, now >= g.win.OpenAt
	}
	g.winOpen = false
	w, ok, _ := g.freeRun(now)
	return w, ok
}

// Window returns class c's window at now; ok is false if c is closed.
func (g *Gate) Window(now int64, c int) (Window, bool) {
	if uint(c) >= pfc.NumClasses || g.Open(now)&(1<<c) == 0 {
		return Window{}, false
	}
	if g.cfg.Mode == Paper {
		w := Window{Class: c, Dst: -1, Close: math.MaxInt64, Slot: int(g.clsSlot[c]), Due: g.clsEnd[c], FMEnd: g.clsFMEnd[c]}
		if sc := g.schedule16(g.clsRound[c]); sc != nil {
			w.Dst, w.Round = sc.Dst(c), sc.Round
			w.SlotLen, w.Guard = int64(sc.SlotLen), int64(sc.Guard)
		}
		return w, w.Dst >= 0
	}
	return g.window(now)
}

// NextDeadline returns the next time after now at which Open may change
// on its own (a close, a free-run open, a lease expiry, a pause running
// out), math.MaxInt64 if none.
func (g *Gate) NextDeadline(now int64) int64 {
	t, _ := g.NextDeadlineOpens(now)
	return t
}

// NextDeadlineOpens is NextDeadline, and whether a window opens then (a
// granted window's open or a free-run open): the instant whose lateness
// costs capacity, so the agent spins up to it rather than trust a wake-up.
func (g *Gate) NextDeadlineOpens(now int64) (next int64, opens bool) {
	next = int64(math.MaxInt64)
	if g.cfg.Mode == Paper {
		if t, ok := g.st.NextResume(now); ok {
			next, opens = t, true
		}
		return next, opens
	}
	g.promote(now)
	if g.winOpen && now < g.win.Close {
		next = g.win.Close
		if now < g.win.OpenAt {
			next, opens = g.win.OpenAt, true
		}
	} else if w, ok, t := g.freeRun(now); ok {
		next = w.Close
	} else {
		next, opens = t, t != math.MaxInt64
	}
	if g.heard && !g.expired && g.anchor.slotLen > 0 && g.lastHeard+g.lease()+1 < next {
		next, opens = g.lastHeard+g.lease()+1, false
	}
	if t, ok := g.ext.NextResume(now); ok && t < next {
		next, opens = t, true
	}
	return next, opens
}

// wireNs is how long frameLen bytes take at the line rate.
func (g *Gate) wireNs(frameLen int) int64 {
	b := uint64(frameLen+g.cfg.Overhead) * 8_000_000_000
	return int64((b + g.cfg.Rate - 1) / g.cfg.Rate)
}

// Fit returns the largest frame (≤ max bytes) that may be released into w
// at now so that its last byte leaves before w closes, 0 if none fits (the
// shaper model: the TBF at Rate sends what was released before it).
func (g *Gate) Fit(now int64, w Window, max int) int {
	if w.Close == math.MaxInt64 {
		return max
	}
	start := g.vf
	if now > start {
		start = now
	}
	avail := w.Close - start
	if avail <= 0 {
		return 0
	}
	n := int64(max)
	if g.wireNs(max) > avail {
		n = int64(uint64(avail)*g.cfg.Rate/8_000_000_000) - int64(g.cfg.Overhead)
	}
	if n < int64(g.cfg.MinFrame) {
		return 0
	}
	return int(n)
}

// Sent books a frame of frameLen bytes released into w at now, and
// returns when its last byte leaves (the shaper's virtual finish).
func (g *Gate) Sent(now int64, w Window, frameLen int) int64 {
	if now > g.vf {
		g.vf = now
	}
	g.vf += g.wireNs(frameLen)
	g.s.Frames++
	g.s.Bytes += uint64(frameLen)
	if g.cfg.Mode == Paper && g.clsEnd[w.Class] != 0 && g.vf > g.clsEnd[w.Class] {
		g.s.OverrunBytes += uint64(frameLen)
	}
	return g.vf
}

// Budget keeps a host's windows to the budgets of their rounds'
// schedules (wire.ScheduleBudget): what the windows of the latest round
// carried so far, per destination.
type Budget struct {
	round uint32
	spent [wire.MaxHosts]int64
}

// Left returns how many more payload bytes window w may carry now: its
// slot's budget less what the windows of its round to its destination
// carried before, math.MaxInt64 if its schedule sets no bound (or is not
// held, or w belongs to a round before the latest one that sent).
func (b *Budget) Left(g *Gate, w Window) int64 {
	s := g.schedule(w.Round)
	if s == nil || !s.Budgeted() || uint(w.Slot) >= uint(s.NSlots) || uint(w.Dst) >= wire.MaxHosts || s.Budget[w.Slot] == 0 {
		return math.MaxInt64
	}
	if w.Round != b.round {
		if w.Round < b.round {
			return math.MaxInt64
		}
		return int64(s.Budget[w.Slot])
	}
	return max(int64(s.Budget[w.Slot])-b.spent[w.Dst], 0)
}

// Sent counts n payload bytes sent in window w.
func (b *Budget) Sent(w Window, n int64) {
	if w.Round > b.round {
		b.round, b.spent = w.Round, [wire.MaxHosts]int64{}
	}
	if w.Round == b.round && uint(w.Dst) < wire.MaxHosts {
		b.spent[w.Dst] += n
	}
}
