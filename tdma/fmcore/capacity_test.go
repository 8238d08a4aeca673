package fmcore

import (
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
)

// TestCapGate walks slots of 2 ms (guard 300 µs) past a capacity that
// alternates every 50 ms (and every 10 ms: less than one window a low
// phase) between the line rate and a tenth of it, from 10 ms on, and runs
// the port the windows it opens fill, as a fluid (each window's open part
// arrives at the line rate, but for its first Burst at once, 0 or 1.3
// ms; the port drains at its phase's rate): every
// window that lies whole in high phases opens, the port never holds more
// than one window and a burst, and the windows that touch low phases carry at least
// half what the low rate does (they are not starved).
func TestCapGate(t *testing.T) {
	const (
		slot, guard = 2_000_000, 300_000
		start       = 10_000_000
		lowRate     = 0.1
		walk        = 4_000_000_000
		dt          = 10_000
	)
	open := int64(slot - guard)
	for _, arm := range []struct{ period, burst int64 }{{50_000_000, 0}, {10_000_000, 0}, {50_000_000, 1_300_000}, {10_000_000, 1_300_000}} {
		period, burst := arm.period, arm.burst
		c := Capacity{Host: 1, Start: start, Period: period, Low: lowRate, Burst: burst}
		g := newCapGate(c, slot, guard)
		var charged, lowTime int64 // open time of the windows that touch a low phase; low time walked
		var q, maxQ float64        // the port's queue, ns of the line rate
		var from, until int64      // the open window's line-rate part
		for s := int64(0); s < walk; s += slot {
			a, b := s+guard, s+slot+guard
			whole := !low(c.phase(a)) && !low(c.phase(b))
			ok := g.allow(s)
			if whole && !ok {
				t.Fatalf("period %d ms, slot at %d ms: window whole in high phases (%d, %d) not opened", period/1e6, s/1e6, c.phase(a), c.phase(b))
			}
			if !whole && ok {
				charged += open
			}
			if ok {
				// its first burst bytes come at once, the rest at the
				// line rate
				q += float64(burst)
				from, until = a, a+open-burst
			}
			for x := s; x < s+slot; x += dt {
				rate := 1.0
				if low(c.phase(x)) {
					rate = lowRate
					lowTime += dt
				}
				if x >= from && x < until {
					q += dt
				}
				q = max(q-rate*dt, 0)
				maxQ = max(maxQ, q)
			}
		}
		if maxQ > float64(open+burst+dt) {
			t.Errorf("period %d ms, burst %.1f ms: the port held %.2f ms of the line rate, more than a window and a burst (%.2f ms)",
				period/1e6, float64(burst)/1e6, maxQ/1e6, float64(open+burst)/1e6)
		}
		if carried := int64(lowRate * float64(lowTime)); lowTime < 20*period || charged < carried/2 {
			t.Errorf("period %d ms: %.0f ms of low phases walked, the windows touching them carried %.1f ms of the line rate, the low rate %.1f ms: starved",
				period/1e6, float64(lowTime)/1e6, float64(charged)/1e6, float64(carried)/1e6)
		}
		t.Logf("period %d ms, burst %.1f ms: port held at most %.2f ms of the line rate; windows touching low phases carried %.1f ms, the low rate %.1f ms",
			period/1e6, float64(burst)/1e6, maxQ/1e6, float64(charged)/1e6, lowRate*float64(lowTime)/1e6)
	}
}

// TestCapGateBoundaries: before Start the capacity is high; in a low phase
// a window opens only once the port has drained the one before.
func TestCapGateBoundaries(t *testing.T) {
	c := Capacity{Host: 0, Start: 100, Period: 10_000, Low: 0.5}
	g := newCapGate(c, 1_000, 100) // windows of 900 open
	if !g.allow(-5_000) {
		t.Fatal("a window before Start did not open")
	}
	// [10_200, 11_100] lies in low phase 1: the port is empty. It arrives
	// at twice the rate the port drains: 450 left at its end, drained by
	// 12_000.
	if !g.allow(10_100) {
		t.Fatal("the first window of a low phase did not open")
	}
	if g.allow(11_100) || !g.allow(12_100) || g.allow(13_100) {
		t.Fatal("a window in a low phase opened before the port had drained the one before, or not after")
	}
	// [20_000, 21_000] straddles into high phase 2: the port is empty.
	if !g.allow(19_900) {
		t.Fatal("a window across a boundary did not open on an empty port")
	}
	// whole in high phase 2 with the port not empty: opens all the same.
	if g.q == 0 || !g.allow(20_900) {
		t.Fatal("a window whole in a high phase did not open")
	}
}

// TestCapacityWithholdsGrants: an FM whose host 1 has a capacity that
// alternates every 20 slots between the line rate and a quarter of it
// grants the windows into it as capGate says, counts the others
// (Withheld), and never withholds a window into another host.
func TestCapacityWithholdsGrants(t *testing.T) {
	const period = 20 * L
	for _, m := range []gate.Discipline{gate.Lease, gate.Paper} {
		capa := Capacity{Host: 1, Start: 0, Period: period, Low: 0.25}
		f, err := New(Config{N: N, SlotLen: L, Guard: G, Lead: lead, Mode: m, LinkSpeed: 1e8, LeaseSlots: 3, PublishMargin: L,
			Capacity: []Capacity{capa}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := newCapGate(capa, L, G)
		rotor := &sched.Rotor{}
		rounds := map[uint32]*sched.Round{}
		into1, lowInto1, others := 0, 0, 0
		wantInto1 := 0
		seen := map[int64]bool{}
		for now := int64(0); now < 20*period; now = f.NextDeadline() {
			if id, _, ok := f.Want(); ok {
				r := sched.Make(rotor, id, uniform(), 100, L, G)
				rounds[id] = r
				if err := f.Publish(now, r); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range f.Emit(now, nil) {
				tr := e.Grant.Trailer
				if m == gate.Paper && e.Due%L == 0 {
					continue // the pause of every class at the boundary
				}
				r := rounds[uint32(tr.Round)]
				dst := int(r.Slots[tr.Slot][e.Host])
				s := e.Due - G
				if m != gate.Paper {
					s += lead
				}
				if dst != 1 {
					others++
					continue
				}
				into1++
				if low(capa.phase(s + G)) {
					lowInto1++
				}
				if seen[s] {
					t.Fatalf("%v: two windows into host 1 in the slot at %d", m, s)
				}
				seen[s] = true
			}
		}
		// The rotor over 4 hosts puts host 1 in every slot: replay capGate
		// over every slot the FM ran.
		slots := int64(f.Stats().Slots)
		for k := int64(0); k < slots; k++ {
			if want.allow(k * L) {
				wantInto1++
			}
		}
		s := f.Stats()
		if into1 != wantInto1 || s.Withheld == 0 || into1+int(s.Withheld) != int(slots) {
			t.Errorf("%v: %d windows into host 1 (capGate: %d), %d withheld, %d slots", m, into1, wantInto1, s.Withheld, slots)
		}
		if lowInto1 == 0 || others != 3*int(slots) {
			t.Errorf("%v: %d windows into host 1 in low phases, %d into the others in %d slots (want 3 a slot)", m, lowInto1, others, slots)
		}
		if got, max := float64(lowInto1)/float64(into1), 0.25*1.2; got > max || math.IsNaN(got) {
			t.Errorf("%v: %.2f of the windows into host 1 in low phases, want at most %.2f", m, got, max)
		}
	}
}

func TestCapacityRefused(t *testing.T) {
	ok := Capacity{Host: 1, Period: 10 * L, Low: 0.1, Burst: 100_000, Buffer: 4_400_000} // 0.9 × 4.6 + 0.1 = 4.24 ms
	if _, err := New(Config{N: N, SlotLen: L, Guard: G, Lead: lead, Mode: gate.Lease, LinkSpeed: 1e8, Capacity: []Capacity{ok}}, 0); err != nil {
		t.Fatalf("%+v: %v", ok, err)
	}
	for _, c := range []struct {
		mode gate.Discipline
		c    Capacity
	}{
		{gate.FreeRun, Capacity{Host: 1, Period: 10 * L, Low: 0.5}},
		{gate.Lease, Capacity{Host: N, Period: 10 * L, Low: 0.5}},
		{gate.Lease, Capacity{Host: 1, Period: L / 2, Low: 0.5}},
		{gate.Lease, Capacity{Host: 1, Period: 10 * L, Low: 1}},
		{gate.Lease, Capacity{Host: 1, Period: 10 * L, Low: 0}},
		// a window of 4.7 ms at 0.1 leaves 4.23 ms in the port: more
		// than a buffer of 4 ms
		{gate.Lease, Capacity{Host: 1, Period: 10 * L, Low: 0.1, Buffer: 4_000_000}},
	} {
		if _, err := New(Config{N: N, SlotLen: L, Guard: G, Lead: lead, Mode: c.mode, LinkSpeed: 1e8, Capacity: []Capacity{c.c}}, 0); err == nil {
			t.Errorf("%v %+v: accepted", c.mode, c.c)
		}
	}
}
