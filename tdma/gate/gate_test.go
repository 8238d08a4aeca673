package gate

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/wire"
)

const (
	L     = 5_000_000 // slot
	G     = 300_000   // guard
	R     = 100_000_000
	dEst  = 40_000
	nslot = 3
)

var fmMAC, hMAC = [6]byte{2, 0, 0, 0, 0, 100}, [6]byte{2, 0, 0, 0, 0, 1}

// sched0 is host 0's part of a rotor round of 4 hosts: slot k → host k+1, class k.
func sched0(round uint32) *wire.Schedule {
	s := &wire.Schedule{Host: 0, Round: round, SlotLen: L, Guard: G, LeaseSlots: 3, NHosts: 4, NSlots: nslot}
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	for i := range s.Slot {
		s.Slot[i] = -1
	}
	for k := 0; k < nslot; k++ {
		s.ClassMap[k+1] = int8(k)
		s.Slot[k] = int8(k)
	}
	return s
}

// fm is a minimal FM timeline: slot k of round r starts at t0 + (r·3+k)·L;
// the lease grant leaves at start+G and arrives after delay.
type fm struct {
	seq uint32
}

func (f *fm) grant(round uint32, slot int) (sent int64, g wire.Grant) {
	start := int64(round*nslot+uint32(slot)) * L
	sent = start + G
	f.seq++
	wire.LeaseGrant(&g, hMAC, fmMAC, slot, L, R, wire.Trailer{Slot: uint8(slot), Round: uint16(round), Seq: f.seq,
		OpenNs: uint32(start + L - sent), GuardUs: G / 1000, FMTime: sent})
	return sent, g
}

// deliver sends the grant of (round, slot) and delivers it to g d_est
// after it was sent; it returns the send time.
func (f *fm) deliver(g *Gate, round uint32, slot int) int64 {
	sent, gr := f.grant(round, slot)
	g.OnGrant(sent+dEst, sent+dEst, &gr)
	return sent
}

func newGate(t *testing.T, m Discipline) *Gate {
	g, err := New(Config{Mode: m, Rate: R, Overhead: 24, DelayEst: dEst, LeaseSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	for r := uint32(0); r < 4; r++ {
		g.OnSchedule(sched0(r))
	}
	return g
}

func TestLeaseClosesWithoutPause(t *testing.T) {
	for _, m := range []Discipline{Lease, FreeRun} {
		g := newGate(t, m)
		var f fm
		sent, gr := f.grant(0, 1)
		rx := sent + dEst
		g.OnGrant(rx, rx, &gr)
		w, ok := g.Window(rx, 1)
		if !ok || w.Dst != 2 || w.Close != L*2 {
			t.Fatalf("%v: window %+v %v, want class 1 to host 2 until %d", m, w, ok, 2*L)
		}
		if d := g.NextDeadline(rx); d != 2*L {
			t.Fatalf("%v: next deadline %d, want the close %d", m, d, 2*L)
		}
		if g.Open(2*L-1) != 1<<1 {
			t.Fatalf("%v: closed early", m)
		}
		if got := g.Open(2 * L); got&(1<<1) != 0 {
			t.Fatalf("%v: class 1 still open at the window's end without a pause", m)
		}
	}
}

// openTime sums the time class c of host 0 is open over [from, to),
// stepping through the gate's own deadlines.
func openTime(g *Gate, from, to int64, c int) int64 {
	total := int64(0)
	for t := from; t < to; {
		next := min(g.NextDeadline(t), to)
		if next <= t {
			next = t + 1
		}
		if g.Open(t)&(1<<c) != 0 {
			total += next - t
		}
		t = next
	}
	return total
}

func TestLostGrantCostsOneSlotReactive(t *testing.T) {
	g := newGate(t, Lease)
	var f fm
	f.deliver(g, 0, 0)
	f.grant(0, 1) // lost
	if open := openTime(g, L, 2*L, 1); open != 0 {
		t.Fatalf("lease mode opened class 1 for %d ns without its grant", open)
	}
	sent := f.deliver(g, 0, 2)
	if got := g.Stats().CtlLost; got != 1 {
		t.Fatalf("ctl lost %d, want 1", got)
	}
	if open := openTime(g, sent+dEst, 3*L, 2); open != L-G-dEst {
		t.Fatalf("slot after the loss open %d ns, want %d", open, L-G-dEst)
	}
}

func TestLostGrantCostsNothingFreeRun(t *testing.T) {
	g := newGate(t, FreeRun)
	var f fm
	f.deliver(g, 0, 0)
	f.grant(0, 1) // lost
	// the whole window, but for d_est: opens wait for it (a grant may come
	// sooner than d_est)
	if open := openTime(g, L, 2*L, 1); open != L-G-dEst {
		t.Fatalf("free-run opened class 1 for %d ns, want the whole window less d_est %d", open, L-G-dEst)
	}
	if w, ok := g.Window(L+G+dEst, 1); !ok || !w.FreeRun || w.Dst != 2 {
		t.Fatalf("free-run window %+v %v", w, ok)
	}
	if s := g.Stats(); s.FreeRunOpens != 1 {
		t.Fatalf("free-run opens %d, want 1", s.FreeRunOpens)
	}
}

// TestLeaseExpirySilences: after the last frame heard, a free-running host
// sends in at most LeaseSlots more slots, then stays silent.
func TestLeaseExpirySilences(t *testing.T) {
	g := newGate(t, FreeRun)
	var f fm
	f.deliver(g, 0, 0)
	// The FM goes silent. Slots 1, 2 (round 0) and 0 (round 1) may free-run.
	lastOpen := int64(-1)
	for t := int64(0); t < 20*L; t += 10_000 {
		if g.Open(t) != 0 {
			lastOpen = t
		}
	}
	limit := int64(1+3) * L // end of the third slot after the anchor slot
	if lastOpen < 0 || lastOpen >= limit {
		t.Fatalf("last open at %d, lease ends at %d", lastOpen, limit)
	}
	if lastOpen < limit-L {
		t.Fatalf("free-run stopped at %d before using its lease (%d)", lastOpen, limit-L)
	}
	if s := g.Stats(); s.LeaseExpiries != 1 {
		t.Fatalf("lease expiries %d, want 1", s.LeaseExpiries)
	}
}

// TestPaperModeLostPauseOverruns reproduces the paper's weakness: when the
// pause ending a slot is lost, the class stays open into the next slot.
func TestPaperModeLostPauseOverruns(t *testing.T) {
	g := newGate(t, Paper)
	seq := uint32(0)
	tr := func(slot int, at int64) wire.Trailer {
		seq++
		return wire.Trailer{Slot: uint8(slot), Seq: seq, OpenNs: uint32(int64(slot+1)*L - at), GuardUs: G / 1000}
	}
	var gr wire.Grant
	wire.Unpause(&gr, hMAC, fmMAC, 0, tr(0, G))
	g.OnGrant(G+dEst, G+dEst, &gr)
	seq++ // the pause-all at L is lost
	// the next unpause is for another host: nothing reaches this one until the pause at 2L.
	at := int64(L + L/2)
	if g.Open(at)&1 == 0 {
		t.Fatal("paper mode closed class 0 without a pause")
	}
	w, ok := g.Window(at, 0)
	if !ok {
		t.Fatal("no window")
	}
	g.Sent(at, w, 1500)
	if s := g.Stats(); s.OverrunBytes != 1500 {
		t.Fatalf("overrun bytes %d, want 1500", s.OverrunBytes)
	}
	// The lease gate in the same situation is closed.
	lg := newGate(t, Lease)
	var f fm
	f.deliver(lg, 0, 0)
	if lg.Open(at) != 0 {
		t.Fatal("lease gate open in the next slot")
	}
}

// TestReleaseNeverPastClose: random frame sizes and release times; no frame
// the gate admits ends after the window closes, and the window is filled to
// within one minimum frame.
func TestReleaseNeverPastClose(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for iter := 0; iter < 200; iter++ {
		g := newGate(t, Lease)
		var f fm
		sent, gr := f.grant(0, 0)
		rx := sent + dEst + rng.Int64N(100_000)
		g.OnGrant(rx, rx, &gr)
		now := rx
		var end int64
		for {
			w, ok := g.Window(now, 0)
			if !ok {
				break
			}
			n := g.Fit(now, w, 60+rng.IntN(1455))
			if n == 0 {
				// nothing fits: try again a bit later, as a poll loop would
				now += 1000 + rng.Int64N(50_000)
				if now >= w.Close {
					break
				}
				continue
			}
			end = g.Sent(now, w, n)
			if end > w.Close {
				t.Fatalf("frame of %d bytes ends at %d, window closes at %d", n, end, w.Close)
			}
			now += rng.Int64N(200_000)
		}
		if s := g.Stats(); s.Frames == 0 {
			t.Fatal("nothing released")
		}
	}
}

func TestDuplicateAndReorderedGrants(t *testing.T) {
	g := newGate(t, Lease)
	var f fm
	s1, g1 := f.grant(0, 0)
	s2, g2 := f.grant(0, 1)
	g.OnGrant(s2+dEst, s2+dEst, &g2)
	g.OnGrant(s2+dEst+1, s1+dEst, &g1) // late, older: ignored
	g.OnGrant(s2+dEst+2, s2+dEst, &g2) // duplicate: ignored
	s := g.Stats()
	if s.CtlDup != 2 || s.GrantOpens != 1 {
		t.Fatalf("dups %d opens %d, want 2 and 1", s.CtlDup, s.GrantOpens)
	}
	if g.Open(s2+dEst+3) != 1<<1 {
		t.Fatal("the newer grant's window was disturbed")
	}
}

func TestHotPathDoesNotAllocate(t *testing.T) {
	g := newGate(t, FreeRun)
	var f fm
	sent, gr := f.grant(0, 0)
	now := sent + dEst
	if a := testing.AllocsPerRun(100, func() {
		g.OnGrant(now, now, &gr)
		if w, ok := g.Window(now, 0); ok {
			g.Sent(now, w, g.Fit(now, w, 1500))
		}
		g.NextDeadline(now)
		g.Open(now + 2*L)
	}); a != 0 {
		t.Fatalf("%v allocations", a)
	}
}

// TestWindowDueIsSlotEndPlusGuard: a lease window's Due is the estimated
// end of its slot plus the guard, past its Close (which keeps a margin).
func TestWindowDueIsSlotEndPlusGuard(t *testing.T) {
	g, err := New(Config{Mode: Lease, Rate: 1e8, Margin: 20_000, LeaseSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	var s wire.Schedule
	s.Round, s.SlotLen, s.Guard, s.NHosts, s.NSlots = 1, 5_000_000, 300_000, 2, 1
	s.ClassMap[1], s.Slot[0] = 0, 0
	for i := 2; i < len(s.ClassMap); i++ {
		s.ClassMap[i] = -1
	}
	s.ClassMap[0] = -1
	g.OnSchedule(&s)
	var gr wire.Grant
	wire.LeaseGrant(&gr, [6]byte{}, [6]byte{}, 0, 5_000_000, 1e8, wire.Trailer{Round: 1, Seq: 1, OpenNs: 5_000_000})
	g.OnGrant(1000, 1000, &gr)
	w, ok := g.Window(400_000, 0)
	if !ok {
		t.Fatal("no window after a grant")
	}
	if want := int64(1000 + 5_000_000 + 300_000); w.Due != want || w.Close >= w.Due || w.Round != 1 || w.Slot != 0 {
		t.Errorf("window %+v: want Due %d past Close, round 1 slot 0", w, want)
	}
}

// TestNeverOpensBeforeTheFMsOpen: a grant that arrives sooner than d_est
// (the estimate is a minimum over other frames: UDP echoes) must not open
// the window before the FM's slot start plus the guard, in the granted
// slot or in the free-run slots after it: the host cannot know its delay
// is that short, and opening early puts it beside the last slot's tail.
func TestNeverOpensBeforeTheFMsOpen(t *testing.T) {
	for _, m := range []Discipline{Lease, FreeRun} {
		g := newGate(t, m)
		var f fm
		sent, gr := f.grant(0, 0)
		rx := sent + dEst/4
		g.OnGrant(rx, rx, &gr)
		for k := int64(0); k < 3; k++ {
			open := k*L + G // the FM's slot k start plus the guard (the grant itself leaves then)
			for now := max(rx, open-G); now < open; now += 1000 {
				if g.Open(now) != 0 {
					w, _ := g.window(now)
					t.Fatalf("%s: slot %d open at %d ns, %d ns before the FM's open (window %+v)", m, k, now, open-now, w)
				}
			}
		}
		// the FM's default: a grant leaves at its slot's start (the lead
		// is the guard)
		g = newGate(t, m)
		_, gr = f.grant(0, 1)
		gr.FMTime, gr.OpenNs = L, L
		rx = L + dEst/4
		g.OnGrant(rx, rx, &gr)
		for now := rx; now < L+G; now += 1000 {
			if g.Open(now) != 0 {
				t.Fatalf("%s: a grant sent at the slot's start opened at %d ns, %d ns before the FM's open", m, now, L+G-now)
			}
		}
	}
}

// TestFMTimeZeroIsATime: a grant the FM sent at time 0 of its clock (the
// simulator's first slot) carries the FM's timeline like any other; a
// window knows the FM's slot end unless the FM's time is missing.
func TestFMTimeZeroIsATime(t *testing.T) {
	g := newGate(t, Lease)
	var f fm
	_, gr := f.grant(0, 0)
	gr.FMTime, gr.OpenNs = 0, L
	g.OnGrant(dEst, dEst, &gr)
	if w, ok := g.Window(G+dEst, 0); !ok || w.FMEnd != L {
		t.Fatalf("window %+v (open %v): want the FM's slot end %d", w, ok, L)
	}
	gr.FMTime, gr.Seq = -1, gr.Seq+1
	g.OnGrant(dEst, dEst, &gr)
	if w, ok := g.Window(G+dEst, 0); !ok || w.FMEnd != 0 {
		t.Fatalf("window %+v (open %v): want no FM slot end without the FM's time", w, ok)
	}
}

// TestStaggeredWindowsKeepTheGuard: four hosts in a rotor (host i sends to
// i+k+1 in slot k), granted at each slot's start as the FM does. Staggered,
// the hosts' windows of a slot open at four instants at least guard/4
// apart, where aligned they open at one; either way every window is as
// long, and every receiver has the full guard between its senders' windows
// (a window still open when the next slot's grant comes stays open to its
// close). Free-run opens the slots after the grant alike.
func TestStaggeredWindowsKeepTheGuard(t *testing.T) {
	const n, margin = 4, 50_000
	type span struct {
		src, dst, slot int
		from, to       int64
	}
	for _, m := range []Discipline{Lease, FreeRun} {
		for _, stagger := range []bool{false, true} {
			gs := make([]*Gate, n)
			for i := range gs {
				g, err := New(Config{Mode: m, Rate: R, Overhead: 24, DelayEst: dEst, Margin: margin, LeaseSlots: nslot + 1})
				if err != nil {
					t.Fatal(err)
				}
				s := &wire.Schedule{Host: uint16(i), SlotLen: L, Guard: G, LeaseSlots: nslot, NHosts: n, NSlots: nslot}
				if stagger {
					s.Flags = wire.ScheduleStagger
				}
				for j := range s.ClassMap {
					s.ClassMap[j] = -1
				}
				for j := range s.Slot {
					s.Slot[j] = -1
				}
				for k := 0; k < nslot; k++ {
					s.ClassMap[(i+k+1)%n], s.Slot[k] = int8(k), int8(k)
				}
				g.OnSchedule(s)
				gs[i] = g
			}
			var spans []span
			open := make([]int, n) // index+1 into spans of the window open now
			var seq uint32
			for now := int64(0); now < nslot*L+G; now += 1000 {
				if k := now / L; now%L == dEst && k < nslot && (m == Lease || k == 0) {
					seq++
					var gr wire.Grant
					wire.LeaseGrant(&gr, hMAC, fmMAC, int(k), L, R, wire.Trailer{Slot: uint8(k), Seq: seq, OpenNs: L, GuardUs: G / 1000, FMTime: k * L})
					for _, g := range gs {
						g.OnGrant(now, now, &gr)
					}
				}
				for i, g := range gs {
					mask := g.Open(now)
					if mask == 0 {
						open[i] = 0
						continue
					}
					w, _ := g.Window(now, bits.TrailingZeros8(mask))
					if o := open[i]; o != 0 && spans[o-1].slot == w.Slot {
						spans[o-1].to = now + 1000
						continue
					}
					spans = append(spans, span{i, w.Dst, w.Slot, now, now + 1000})
					open[i] = len(spans)
				}
			}
			name := fmt.Sprintf("%s, stagger %v", m, stagger)
			if len(spans) != n*nslot {
				t.Fatalf("%s: %d windows, want %d: %+v", name, len(spans), n*nslot, spans)
			}
			for _, a := range spans {
				if got, want := a.to-a.from, int64(L-G-margin-dEst); got < want-1000 || got > want+1000 {
					t.Errorf("%s: host %d → %d slot %d open %d ns, want %d", name, a.src, a.dst, a.slot, got, want)
				}
				for _, b := range spans {
					if b.dst == a.dst && b.slot == a.slot+1 && b.from-a.to < G-1000 {
						t.Errorf("%s: receiver %d: %d ns between host %d's window and host %d's, want the guard %d", name, a.dst, b.from-a.to, a.src, b.src, G)
					}
				}
			}
			for k := 0; k < nslot; k++ {
				var opens []int64
				for _, a := range spans {
					if a.slot == k {
						opens = append(opens, a.from)
					}
				}
				slices.Sort(opens)
				for i := 1; i < len(opens); i++ {
					if d := opens[i] - opens[i-1]; stagger && d < G/n-1000 || !stagger && d != 0 {
						t.Errorf("%s: slot %d opens at %v", name, k, opens)
						break
					}
				}
			}
		}
	}
}

// TestFreeRunStaysInTheLease: a free-running host whose FM went silent
// (its last grant at a slot's start, as the FM sends them) releases
// nothing that leaves its line after the lease of the last grant heard,
// whichever destination its windows are staggered by.
func TestFreeRunStaysInTheLease(t *testing.T) {
	for _, stagger := range []bool{false, true} {
		for c := 0; c < nslot; c++ {
			g, err := New(Config{Mode: FreeRun, Rate: R, Overhead: 24, DelayEst: dEst, Margin: 50_000, LeaseSlots: 3})
			if err != nil {
				t.Fatal(err)
			}
			for r := uint32(0); r < 4; r++ {
				s := sched0(r)
				s.ClassMap[3], s.ClassMap[c+1] = s.ClassMap[c+1], s.ClassMap[3] // the last slot's window goes to host 3
				if stagger {
					s.Flags = wire.ScheduleStagger
				}
				g.OnSchedule(s)
			}
			var gr wire.Grant
			wire.LeaseGrant(&gr, hMAC, fmMAC, 0, L, R, wire.Trailer{Seq: 1, OpenNs: L, GuardUs: G / 1000, FMTime: 0})
			g.OnGrant(dEst, dEst, &gr)
			lease := int64(dEst + 3*L)
			last := int64(0)
			for now := int64(dEst); now < 6*L; now += 1000 {
				if mask := g.Open(now); mask != 0 {
					w, _ := g.Window(now, bits.TrailingZeros8(mask))
					if f := g.Fit(now, w, 1514); f > 0 {
						last = max(last, g.Sent(now, w, f))
					}
				}
			}
			if last == 0 || last > lease {
				t.Errorf("stagger %v, class %d: last byte leaves at %d ns, the lease ends at %d", stagger, c, last, lease)
			}
		}
	}
}

// TestWindowsFollowTheFMsStagger: whether windows are staggered is the
// FM's to say, in each round's schedule; a gate has no setting of its own.
// Round 0 is staggered, round 1 aligned: each window, granted or free-run,
// and its slot end on the FM's timeline (which the exit gate and the
// receivers check against) move by its destination's share of the guard
// exactly in round 0.
func TestWindowsFollowTheFMsStagger(t *testing.T) {
	for _, m := range []Discipline{Lease, FreeRun} {
		g := newGate(t, m)
		s := sched0(0)
		s.Flags = wire.ScheduleStagger
		g.OnSchedule(s)
		var f fm
		check := func(now int64, round uint32, slot int) {
			t.Helper()
			start := int64(round*nslot+uint32(slot)) * L
			dst := slot + 1
			sh := int64(0)
			if round == 0 {
				sh = int64(dst) * G / 4
			}
			w, ok := g.Window(now, slot)
			if !ok || w.Dst != dst || w.OpenAt != start+G+dEst+sh || w.Close != start+L+sh || w.FMEnd != start+L+sh {
				t.Errorf("%v: round %d slot %d at %d: window %+v (open %v), want to host %d from %d to %d, FM's end %d",
					m, round, slot, now, w, ok, dst, start+G+dEst+sh, start+L+sh, start+L+sh)
			}
		}
		sent := f.deliver(g, 0, 1)
		check(sent+G, 0, 1)
		if m == FreeRun {
			sent = f.deliver(g, 0, 2)
			check(sent+G, 0, 2)
			check(int64(nslot+1)*L-G, 1, 0) // free-run into the aligned round
			continue
		}
		sent = f.deliver(g, 1, 1)
		check(sent+G, 1, 1)
	}
}

// TestLateGrantClosesInTime: a grant later than d_est by more than the
// guard and the margin would hold its window open past its slot's end
// plus the guard, into the next sender's time. The gate compares each
// grant's receive time less the FM's send time with the fastest of the
// last grants' (the clocks' offset drops out): a grant later than that by
// more than the guard has its window's close, and those of the free-run
// windows timed from it, brought forward by the rest; its open stays where
// its arrival puts it. A grant later by less keeps its window.
func TestLateGrantClosesInTime(t *testing.T) {
	const offset = 7_000_000_000 // the FM's clock ahead of the host's
	for _, m := range []Discipline{Lease, FreeRun} {
		for _, late := range []int64{G / 2, G + 100_000, L} {
			g := newGate(t, m)
			var f fm
			var rx int64
			for k := 0; k < nslot; k++ { // the last grant late
				sent, gr := f.grant(0, k)
				gr.FMTime += offset
				rx = sent + dEst
				if k == nslot-1 {
					rx += late
				}
				g.OnGrant(rx, rx, &gr)
			}
			cut := max(late-G, 0)
			if s := g.Stats(); s.LateCuts != uint64(min(cut, 1)) || s.LateCutNs != uint64(cut) {
				t.Errorf("%v, grant %d µs late: %d cuts of %d ns in all, want %d ns", m, late/1000, s.LateCuts, s.LateCutNs, cut)
			}
			start := int64(nslot-1) * L
			if w, ok := g.Window(start+late+dEst+G, nslot-1); late < L && (!ok || w.OpenAt != start+late+dEst+G || w.Close != start+L+min(late, G)) {
				t.Errorf("%v, grant %d µs late: window %+v (open %v), want it open at %d until %d", m, late/1000, w, ok, start+late+dEst+G, start+L+min(late, G))
			}
			// every window timed from it, granted or free-run, closes by its
			// slot's end plus the guard on the FM's timeline
			for now := rx; now < 6*L; now += 1000 {
				for c := 0; c < nslot; c++ {
					w, ok := g.Window(now, c)
					if !ok {
						continue
					}
					end := int64(w.Round*nslot+uint32(w.Slot)+1) * L
					if w.Close > end+G {
						t.Fatalf("%v, grant %d µs late: window %+v open at %d closes %d ns past its slot's end plus the guard", m, late/1000, w, now, w.Close-end-G)
					}
				}
			}
		}
	}
}

// TestBudget: a host's windows of a round keep to its schedule's slot
// budgets, together per destination and counted from the round's first
// slot; a slot without a budget, a schedule without budgets or not held,
// and a window of an older round are not bounded; a new round starts
// from nothing spent.
func TestBudget(t *testing.T) {
	g, err := New(Config{Mode: Lease, Rate: 1e8, LeaseSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	s := sched0(7)                              // slot k: class k, to destination k+1
	s.Slot[1], s.Flags = 0, wire.ScheduleBudget // slots 0 and 1 to destination 1
	s.Budget[0], s.Budget[1] = 1000, 2500
	g.OnSchedule(s)
	g.OnSchedule(sched0(8))
	var b Budget
	w0, w1, w2 := Window{Round: 7, Slot: 0, Dst: 1}, Window{Round: 7, Slot: 1, Dst: 1}, Window{Round: 7, Slot: 2, Dst: 3}
	const none = math.MaxInt64
	for _, c := range []struct {
		w    Window
		sent int64
		left int64 // before the send
	}{{w0, 600, 1000}, {w0, 400, 400}, {w0, 0, 0}, {w1, 1500, 1500}, {w1, 0, 0}, {w2, 9000, none},
		{Window{Round: 8, Slot: 0, Dst: 1}, 100, none}, {w1, 0, none}, {Window{Round: 9, Slot: 0, Dst: 1}, 0, none}} {
		if got := b.Left(g, c.w); got != c.left {
			t.Fatalf("round %d slot %d to %d after %v: %d left, want %d", c.w.Round, c.w.Slot, c.w.Dst, b.spent[:4], got, c.left)
		}
		b.Sent(c.w, c.sent)
	}
	s.Round = 11
	g.OnSchedule(s)
	if got := b.Left(g, Window{Round: 11, Slot: 1, Dst: 1}); got != 2500 {
		t.Fatalf("a new round's slot 1: %d left, want 2500", got)
	}
}
