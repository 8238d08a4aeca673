package sched

import (
	"math"
	"slices"
	"testing"
)

// TestPlannerTail: a shuffle's tail (two rounds' worth left) with one
// pair three slots behind the others is planned backward from its end:
// every slot a matching within the demand, the pair behind served first,
// every pair's last slot in the plan's last N−1 slots and the one before
// it in the N−1 before those (a pair planned a slot for a few bytes it no
// longer has still ends near the others); the round is the plan's first
// rotor cycle (N−1 slots: what is left fits in two rounds), and with
// three rounds' worth left its first MaxSlots.
func TestPlannerTail(t *testing.T) {
	const N, slotCap = 4, 50_000
	for _, c := range []struct{ maxSlots, want int }{{8, N - 1}, {5, 5}} {
		p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: c.maxSlots, SlotLen: 5e6, Guard: 3e5}
		d := tailDemand(N, slotCap)
		n := SlotDemand(d, slotCap)
		r := p.Next(1, 1, d, make([]int64, N))
		if err := Validate(r, n); err != nil {
			t.Fatal(err)
		}
		if len(r.Slots) != c.want || r.Slots[0][1] != 0 {
			t.Fatalf("%d slots a round at most, %d left: %d slots, first %v: want %d, h1 → h0 first", c.maxSlots, maxLine(n), len(r.Slots), r.Slots[0], c.want)
		}
	}
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 8, SlotLen: 5e6, Guard: 3e5}
	d := tailDemand(N, slotCap)
	n := SlotDemand(d, slotCap)
	r := &Round{Slots: tail{p: &p, rot: &Rotor{}, bytes: d.Bytes}.Build(n, 1000), Class: allClasses(N)}
	if err := Validate(r, n); err != nil || len(r.Slots) != maxLine(n) {
		t.Fatalf("whole tail: %v, %d slots for %d", err, len(r.Slots), maxLine(n))
	}
	last, before := make([][]int, N), make([][]int, N)
	for i := range last {
		last[i], before[i] = make([]int, N), make([]int, N)
	}
	for k, m := range r.Slots {
		for i, j := range m {
			if j >= 0 {
				before[i][j], last[i][j] = last[i][j], k
			}
		}
	}
	for i := range last {
		for j, k := range last[i] {
			if i != j && (k < len(r.Slots)-(N-1) || before[i][j] < len(r.Slots)-2*(N-1)) {
				t.Errorf("h%d → h%d's last two slots are %d and %d of %d", i, j, before[i][j], k, len(r.Slots))
			}
		}
	}
}

// TestPlannerTailSliver: in the tail of TestPlannerTail, a pair whose rest
// is whole slots and a sliver of one more (its last slot may find nothing
// left: its windows carried a little more than learned) is given its last
// slot first in the plan's last N−1 slots and the one before right before
// it, so that with its last slot empty it still ends a slot before the
// others' last at most, not a rotor cycle or more. Each pair in turn.
func TestPlannerTailSliver(t *testing.T) {
	const N, slotCap = 4, 50_000
	for a := 0; a < N; a++ {
		for b := 0; b < N; b++ {
			if a == b {
				continue
			}
			p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 8, SlotLen: 5e6, Guard: 3e5}
			d := tailDemand(N, slotCap)
			d.Bytes[a][b] = 2*slotCap + slotCap/20
			n := SlotDemand(d, slotCap)
			slots := tail{p: &p, rot: &Rotor{}, bytes: d.Bytes}.Build(n, 1000)
			if err := Validate(&Round{Slots: slots, Class: allClasses(N)}, n); err != nil {
				t.Fatal(err)
			}
			var ks []int
			for k, m := range slots {
				if int(m[a]) == b {
					ks = append(ks, k)
				}
			}
			L := len(slots)
			if k := ks[len(ks)-1]; k != L-(N-1) || ks[len(ks)-2] != k-1 {
				t.Errorf("h%d → h%d (2.05 slots left): slots %v of %d, want the last two %d and %d", a, b, ks, L, L-N, L-(N-1))
			}
		}
	}
}

// allClasses is a class map that gives every pair a class.
func allClasses(N int) [][]int8 {
	c := make([][]int8, N)
	for i := range c {
		c[i] = make([]int8, N)
		for j := range c[i] {
			c[i][j] = int8(j)
		}
	}
	return c
}

// tailDemand is a shuffle's tail: every pair four slots left but h2 → h1,
// seven.
func tailDemand(N int, slotCap int64) *Demand {
	d := NewDemand(N)
	for i := range d.Bytes {
		for j := range d.Bytes[i] {
			if i != j {
				d.Bytes[i][j] = 4 * slotCap
			}
		}
	}
	d.Bytes[1][0] = 7 * slotCap
	return d
}

// TestPlannerKeepsAReservedSlot: h1 and h2 send without end to h3, which
// reserves a slot a round for its answers to h4 as the RPC server does
// (it reports one byte), and h4 has a few requests for h3 in every
// report. Each host reports as a new schedule reaches it, so a report is
// a round old when it is used, and the rounds since gave both pairs their
// slots: each is still planned one slot in every round, and no more.
func TestPlannerKeepsAReservedSlot(t *testing.T) {
	const N, slotCap, slotLen = 4, 50_000, int64(5e6)
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 4 * N, SlotLen: slotLen, Guard: 3e5}
	rep := NewDemand(N)
	at := make([]int64, N)
	rep.Bytes[0][2], rep.Bytes[1][2] = 1<<50, 1<<50
	now, running := int64(0), slotLen // the round before the first: an idle slot
	for id := uint32(1); id <= 40; id++ {
		d := NewDemand(N)
		for i := range d.Bytes {
			copy(d.Bytes[i], rep.Bytes[i])
		}
		r := p.Next(id, now, d, at)
		got := served(r.Slots, N)
		if id > 2 && (got[2][3] < 1 || got[3][2] < 1 || got[0][2] < 1 || got[1][2] < 1) {
			t.Fatalf("round %d gives h3 → h4 %d slots, h4 → h3 %d, h1 → h3 %d, h2 → h3 %d: want every pair one at least",
				id, got[2][3], got[3][2], got[0][2], got[1][2])
		}
		if got[2][3] > 1 || got[3][2] > 1 {
			t.Errorf("round %d gives the reservation %d slots, the requests %d", id, got[2][3], got[3][2])
		}
		// The schedule reaches the hosts, which report; round id starts
		// once the one running now has run its slots.
		for i := range at {
			at[i] = now + 1000
		}
		rep.Bytes[2][3] = 1
		rep.Bytes[3][2] = 3 * 64
		now, running = now+running, int64(len(r.Slots))*slotLen
	}
}

// TestNearTail: a host reports at every grant only within three tails of
// full slots of its end (4 hosts, 100 Mbit/s, 5 ms slots: 62,500 bytes a
// slot, 3 a round, 12 rounds), and an endless demand never is.
func TestNearTail(t *testing.T) {
	const rate, slot = 100_000_000, 5_000_000
	limit := int64(3*tailRounds) * 3 * 62_500
	for _, c := range []struct {
		left int64
		want bool
	}{{0, true}, {1, true}, {limit, true}, {limit + 1, false}, {40 << 20, false}, {1 << 40, false}} {
		if got := NearTail(c.left, 4, rate, slot); got != c.want {
			t.Errorf("NearTail(%d) = %v, want %v", c.left, got, c.want)
		}
	}
}

// TestPlannerTailFillsUnderLoss: the tail of TestPlannerTail, h2 → h1
// three slots behind. Planned backward, the round's first slots serve the
// pairs behind alone, the others' senders idle. Once a host has lost
// windows the round gives every idle sender a destination idle in the
// same slot, wherever a pair of the two has slots of the plan left beyond
// the round's: every slot still a matching within the demand.
func TestPlannerTailFillsUnderLoss(t *testing.T) {
	const N, slotCap = 4, 50_000
	plan := func(lost int64) (*Round, [][]int) {
		p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 8, SlotLen: 5e6, Guard: 3e5}
		d := tailDemand(N, slotCap)
		d.Lost[2] = lost
		n := SlotDemand(d, slotCap)
		r := p.Next(1, 1, d, make([]int64, N))
		if err := Validate(r, n); err != nil {
			t.Fatal(err)
		}
		return r, n
	}
	// idle counts the senders idle in a slot beside a receiver idle in it
	// that they have slots of n left for beyond the round's.
	idle := func(r *Round, n [][]int) int {
		got, c := served(r.Slots, N), 0
		for _, m := range r.Slots {
			for i, j0 := range m {
				for j := 0; j < N && j0 < 0; j++ {
					if j != i && !receives(m, j) && got[i][j] < n[i][j] {
						c++
					}
				}
			}
		}
		return c
	}
	r, n := plan(0)
	if idle(r, n) == 0 {
		t.Fatalf("without loss no sender idles beside a receiver it has slots for: %v", r.Slots)
	}
	r, n = plan(1)
	if c := idle(r, n); c != 0 || r.Slots[0][1] != 0 {
		t.Errorf("with lost windows: %d idle senders beside idle receivers they have slots for, first slot %v (want h2 → h1 in it)", c, r.Slots[0])
	}
}

// TestPlannerLearnsFromWindowsHad: two hosts send to each other; a round
// of eight slots later h1 reports six slots' worth sent and two windows
// lost (their grants never came), h2 eight slots' worth and none lost. A
// slot of either still carries a full slot's worth: a lost window is not
// one that carried less.
func TestPlannerLearnsFromWindowsHad(t *testing.T) {
	const N, slotCap, slotLen = 2, 50_000, int64(5e6)
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 8, SlotLen: slotLen, Guard: 3e5}
	report := func(sent0, sent1, lost0 int64) *Demand {
		d := NewDemand(N)
		d.Bytes[0][1], d.Bytes[1][0] = (100-sent0)*slotCap, (100-sent1)*slotCap
		d.Lost[0] = lost0
		return d
	}
	at := []int64{1, 1}
	r1 := p.Next(1, 10, report(0, 0, 0), at)
	t1 := int64(1e6)
	p.Next(2, t1, report(0, 0, 0), at) // round 1 starts
	t2 := t1 + int64(len(r1.Slots))*slotLen
	at = []int64{t2 - 1, t2 - 1}
	p.Next(3, t2, report(6, 8, 2), at) // round 2 starts; the reports came as round 1 ended
	if pay := p.Payload(); pay[0] != slotCap || pay[1] != slotCap {
		t.Errorf("payload per slot %v after %d slots: want %d each", pay, len(r1.Slots), slotCap)
	}
}

// TestPlannerTailKeepsItsOrder: a tail's last round, whose plan leaves
// some host idle in its first slots, keeps every pair's last slot in the
// round's last N−1: a pair is not moved into an earlier slot beside its
// reverse (PairReciprocal, for RPC), which would end it a round early.
func TestPlannerTailKeepsItsOrder(t *testing.T) {
	const N, slotCap = 4, 50_000
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 16, SlotLen: 5e6, Guard: 3e5, tail: true}
	d := NewDemand(N)
	for i, row := range [N][N]int64{{0, 1, 1, 1}, {3, 0, 1, 1}, {2, 3, 0, 2}, {1, 4, 3, 0}} {
		for j, k := range row {
			if k > 0 {
				d.Bytes[i][j] = k*slotCap - slotCap/2
			}
		}
	}
	n := SlotDemand(d, slotCap)
	r := p.Next(1, 1, d, make([]int64, N))
	if err := Validate(r, n); err != nil {
		t.Fatal(err)
	}
	last := make([][]int, N)
	for i := range last {
		last[i] = make([]int, N)
	}
	for k, m := range r.Slots {
		for i, j := range m {
			if j >= 0 {
				last[i][j] = k
			}
		}
	}
	for i := range last {
		for j, k := range last[i] {
			if i != j && k < len(r.Slots)-(N-1) {
				t.Errorf("h%d → h%d's last slot is %d of %d: %v", i, j, k, len(r.Slots), r.Slots)
			}
		}
	}
}

// TestPlannerLevelsDriftedPairs: a shuffle eight rounds from its end with
// h1 → h0 some 24 slots ahead of the other pairs (its sender's and
// receiver's windows went to the others while theirs were lost), every
// slot carrying what it is planned for. The rotor alone gives every pair
// the same share, so h1 → h0 would end before the tail begins and the
// tail could not give the difference back; level rounds serve the pairs
// behind first, and every pair's last slot falls in the last N−1 slots.
func TestPlannerLevelsDriftedPairs(t *testing.T) {
	const N, slotCap, slots = 4, 50_000, 40
	p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 16, SlotLen: 5e6, Guard: 3e5}
	left := make([][]int64, N)
	for i := range left {
		left[i] = make([]int64, N)
		for j := range left[i] {
			if i != j {
				left[i][j] = slots * slotCap
			}
		}
	}
	left[1][0] = (slots - 24) * slotCap
	last := make([][]int, N)
	for i := range last {
		last[i] = make([]int, N)
	}
	at := make([]int64, N)
	var prev *Round
	now, k := int64(1), 0
	for id := uint32(1); id < 100; id++ {
		d := NewDemand(N)
		for i := range left {
			copy(d.Bytes[i], left[i])
			at[i] = now
		}
		r := p.Next(id, now, d, at)
		if err := Validate(r, SlotDemand(d, slotCap)); err != nil {
			t.Fatalf("round %d: %v", id, err)
		}
		if prev != nil {
			for _, m := range prev.Slots {
				for i, j := range m {
					if j >= 0 && left[i][j] > 0 {
						left[i][j] -= slotCap
						last[i][j] = k
					}
				}
				k++
			}
			now += int64(len(prev.Slots)) * p.SlotLen
		}
		prev = r
		var rest int64
		for i := range left {
			for _, b := range left[i] {
				rest += b
			}
		}
		if rest == 0 {
			break
		}
	}
	end := 0
	for i := range last {
		end = max(end, slices.Max(last[i]))
	}
	for i := range last {
		for j, k := range last[i] {
			if i != j && k < end-(N-1) {
				t.Errorf("h%d → h%d's last slot is %d, the last pair's %d: want within %d", i, j, k, end, N-1)
			}
		}
	}
}

// After a stall of the FM's own (round numbers skipped, so no plan is known
// to have started, or plans that came too late to run), every pair with
// bytes reported keeps a slot: its host, silent under its lease, sent none
// of what those plans gave it, and would get no grant to report that with.
func TestPlannerKeepsReportersAfterSkippedRounds(t *testing.T) {
	const N, slotCap = 4, 50_000
	at := []int64{1, 1, 1, 1} // the reports before the stall, never renewed
	report := func() *Demand {
		d := NewDemand(N)
		for i := 0; i < N; i++ {
			for j := 0; j < N; j++ {
				if i != j {
					d.Bytes[i][j] = 7 * slotCap // h0 and h1 behind
					if i >= 2 {
						d.Bytes[i][j] = 3 * slotCap // h2 and h3 ahead
					}
				}
			}
		}
		return d
	}
	for _, c := range []struct {
		name   string
		step   uint32
		forget bool
	}{
		{"numbers skipped", 2, false},          // no plan is known to have started
		{"plans too late, forgotten", 1, true}, // each plan came too late to run
	} {
		p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 3, SlotLen: 5e6, Guard: 3e5}
		var r *Round
		for id := uint32(1); id <= 9; id += c.step {
			r = p.Next(id, int64(id)*15e6, report(), at)
			if c.forget && id < 9 {
				p.Forget(id)
			}
		}
		sends := make([]int, N)
		for _, m := range r.Slots {
			for i, j := range m {
				if j >= 0 {
					sends[i]++
				}
			}
		}
		for i, k := range sends {
			if k == 0 {
				t.Errorf("%s: h%d, with bytes reported to every host, has no slot in round %d (%v)", c.name, i, r.ID, r.Slots)
			}
		}
	}
}

// TestPlannerAfterAStall follows a 1 MiB shuffle of four hosts through a
// 100 ms stall of the FM, as the FM and its hosts go through it: the FM
// stops 4 ms into a round of 16 slots, skips the grants of its next 20
// slots, and wakes with the reports from the round's start; the hosts sent
// only the windows their last grant gave them (the round's first slot
// under a lease, its first four in free-run). The first plan after it
// comes too late to run, but its schedules bring h1's and h2's reports,
// and the next plan is made before h0's and h3's come. Told of the stall,
// the Planner gives every host a slot in that round's first N−1 slots (it
// must send within a round of the FM's return) and keeps what a slot
// carries. Without it, the slots skipped are taken as had: h1's and h2's
// windows seem to have carried a fifth of what they did, the two look far
// more behind than they are, and the tail gives them the whole round, h0
// and h3 nothing.
func TestPlannerAfterAStall(t *testing.T) {
	const N, slotCap, L = 4, 58_750, int64(5e6)
	const carry = 56_000 // what a window carries
	for _, c := range []struct {
		mode    string
		lease   int64 // the windows a host had after its last grant
		stalled bool
	}{{"lease", 1, true}, {"free-run", 4, true}, {"lease", 1, false}, {"free-run", 4, false}} {
		p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: 4 * N, SlotLen: L, Guard: 3e5}
		left := make([][]int64, N)
		for i := range left {
			left[i] = make([]int64, N)
			for j := range left[i] {
				if i != j {
					left[i][j] = 1 << 20
				}
			}
		}
		rep, at := NewDemand(N), make([]int64, N)
		report := func(t int64, hosts ...int) {
			for _, i := range hosts {
				copy(rep.Bytes[i], left[i])
				at[i] = t
			}
		}
		plan := func(id uint32, now int64) *Round {
			d := NewDemand(N)
			for i := range d.Bytes {
				copy(d.Bytes[i], rep.Bytes[i])
			}
			return p.Next(id, now, d, at)
		}
		// send: the hosts send what the windows of a round that starts at
		// start carry, those that open by until
		send := func(r *Round, start, until int64) {
			for k, m := range r.Slots {
				for i, j := range m {
					if j >= 0 && start+int64(k)*L+p.Guard < until {
						left[i][j] = max(0, left[i][j]-carry)
					}
				}
			}
		}
		all := []int{0, 1, 2, 3}
		report(1e6, all...)
		r1 := plan(1, 1e6)
		s1 := int64(5e6)
		r2 := plan(2, s1) // round 1 starts; its schedules bring reports
		report(s1+5e5, all...)
		send(r1, s1, math.MaxInt64)
		s2 := s1 + int64(len(r1.Slots))*L
		plan(3, s2) // round 2 starts
		report(s2+5e5, all...)
		if len(r2.Slots) != 4*N {
			t.Fatalf("round 2 has %d slots: the test wants a full round, whose slots run past the stop", len(r2.Slots))
		}
		stop, thaw := s2+4e6, s2+104e6
		send(r2, s2, s2+c.lease*L) // the last grants came at s2
		if c.stalled {
			from := make([]int64, N)
			for i := range from {
				from[i] = s2 + c.lease*L
			}
			p.Stalled(from, stop-stop%L+20*L) // the slots skipped until the thaw
		}
		plan(9, thaw+1e5) // too late: forgotten
		p.Forget(9)
		report(thaw+1e6, 1, 2)
		r := plan(10, thaw+1.2e6)
		idle := 0
		for i := range N {
			k := slices.IndexFunc(r.Slots, func(m Matching) bool { return m[i] >= 0 })
			if k < 0 || k >= N-1 {
				idle++
				if c.stalled {
					t.Errorf("%s: h%d's first slot is slot %d of round %d (%v): want one in the first %d", c.mode, i, k, r.ID, r.Slots, N-1)
				}
			}
		}
		if !c.stalled && idle == 0 {
			t.Errorf("%s: without the stall every host has a slot in the round's first %d too: the test no longer shows what it did", c.mode, N-1)
		}
		for i, pay := range p.Payload() {
			if c.stalled && (pay < carry-carry/20 || pay > slotCap) {
				t.Errorf("%s: h%d's payload per slot %d after the stall: its windows carried %d", c.mode, i, pay, carry)
			}
		}
		t.Logf("%s, stall told %v: payload per slot %v, round %d: %v", c.mode, c.stalled, p.Payload(), r.ID, r.Slots)
	}
}

// TestPlannerTailBudget: in a tail's last turns (every pair a slot and a
// half left: two slots each), the round, the plan's first rotor cycle,
// gives every pair the first of its two slots, bounded at the payload per
// slot (Round.Budget), so that the second finds the half left; in the
// next round, planned from reports that leave each pair less than a slot,
// every pair's slot is its last, unbounded; without Budget no round has
// budgets.
func TestPlannerTailBudget(t *testing.T) {
	const N, slotCap, slotLen = 4, 50_000, int64(5e6)
	for _, budget := range []bool{true, false} {
		p := Planner{Sched: &Rotor{}, SlotCap: slotCap, MaxSlots: N, SlotLen: slotLen, Guard: 3e5, Budget: budget}
		at := make([]int64, N)
		for id, c := range []struct {
			left, want int64 // each pair's bytes, and its budget in the round
		}{{3 * slotCap / 2, slotCap}, {slotCap / 2, 0}} {
			d := NewDemand(N)
			for i := range d.Bytes {
				for j := range d.Bytes[i] {
					if i != j {
						d.Bytes[i][j] = c.left
					}
				}
			}
			now := int64(1 + id*N*int(slotLen))
			if id > 0 {
				for i := range at {
					at[i] = now + N*slotLen // after the round before, which starts now
				}
			}
			r := p.Next(uint32(id+1), now, d, at)
			if len(r.Slots) != N-1 {
				t.Fatalf("round %d: %d slots, want %d", id+1, len(r.Slots), N-1)
			}
			if !budget {
				if r.Budget != nil {
					t.Errorf("round %d without Budget: budgets %v", id+1, r.Budget)
				}
				continue
			}
			if len(r.Budget) != len(r.Slots) {
				t.Fatalf("round %d: budgets for %d slots of %d", id+1, len(r.Budget), len(r.Slots))
			}
			for k, m := range r.Slots {
				for i, j := range m {
					if j >= 0 && r.Budget[k][i] != c.want || j < 0 && r.Budget[k][i] != 0 {
						t.Errorf("round %d, %d left a pair: slot %d h%d → h%d budget %d, want %d", id+1, c.left, k, i, j, r.Budget[k][i], c.want)
					}
				}
			}
		}
	}
}
