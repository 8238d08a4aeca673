package fmcore

import (
	"errors"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

const (
	L    = 5_000_000
	G    = 300_000
	lead = 50_000
	N    = 4
)

func uniform() [][]int { return sched.AllToAll(N) }

func newFM(t *testing.T, m gate.Discipline) *FM {
	f, err := New(Config{N: N, SlotLen: L, Guard: G, Lead: lead, Mode: m, LinkSpeed: 1e8, LeaseSlots: 3, PublishMargin: L}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run steps the FM through its deadlines up to end, publishing rotor rounds
// as soon as they are wanted, and returns every emission with its send time.
func run(t *testing.T, f *FM, end int64) (out []Emission, sent []int64) {
	rotor := &sched.Rotor{}
	for now := int64(0); now < end; now = f.NextDeadline() {
		if id, _, ok := f.Want(); ok {
			if err := f.Publish(now, sched.Make(rotor, id, uniform(), 100, L, G)); err != nil {
				t.Fatal(err)
			}
		}
		n := len(out)
		out = f.Emit(now, out)
		for range out[n:] {
			sent = append(sent, now)
		}
	}
	return out, sent
}

func TestLeaseTimeline(t *testing.T) {
	f := newFM(t, gate.Lease)
	out, sent := run(t, f, 3*3*L) // three rounds of three slots
	if len(out) != 3*3*N {
		t.Fatalf("%d grants, want %d (every host in every slot)", len(out), 9*N)
	}
	for i, e := range out {
		k := e.Due / L // global slot
		if want := k*L + G - lead; e.Due != want || sent[i] != want {
			t.Fatalf("grant %d due %d sent %d, want %d", i, e.Due, sent[i], want)
		}
		tr := e.Grant.Trailer
		if int64(tr.OpenNs) != (k+1)*L-sent[i] {
			t.Fatalf("grant %d open %d, want %d", i, tr.OpenNs, (k+1)*L-sent[i])
		}
		if tr.Round != uint16(k/3+1) || int64(tr.Slot) != k%3 {
			t.Fatalf("grant %d: round %d slot %d for global slot %d", i, tr.Round, tr.Slot, k)
		}
		if c := e.Grant.GrantClass(); c < 0 {
			t.Fatalf("grant %d opens no single class", i)
		}
	}
	if s := f.Stats(); s.IdleSlots != 0 || s.Rounds != 3 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPaperTimeline(t *testing.T) {
	f := newFM(t, gate.Paper)
	out, sent := run(t, f, 3*L)
	pauses, unpauses := 0, 0
	for i, e := range out {
		k := e.Due / L
		switch {
		case e.Grant.PFC.ClassEnable == 0xFF && e.Grant.PFC.Quanta[0] == 0xFFFF:
			pauses++
			if sent[i] != k*L {
				t.Fatalf("pause sent at %d, want the boundary %d", sent[i], k*L)
			}
		case e.Grant.PFC.Quanta == [8]uint16{}:
			unpauses++
			if sent[i] != k*L+G {
				t.Fatalf("unpause sent at %d, want %d (no lead in paper mode)", sent[i], k*L+G)
			}
		default:
			t.Fatalf("unexpected frame %+v", e.Grant.PFC)
		}
	}
	if pauses != 3*N || unpauses != 3*N {
		t.Fatalf("%d pauses, %d unpauses; want %d each", pauses, unpauses, 3*N)
	}
}

// TestOrderRotates: the host served first moves by one at every boundary.
func TestOrderRotates(t *testing.T) {
	f := newFM(t, gate.Lease)
	out, _ := run(t, f, 8*L)
	firsts := map[int64]int{}
	for _, e := range out {
		if _, ok := firsts[e.Due]; !ok {
			firsts[e.Due] = e.Host
		}
	}
	prev := -1
	for k := int64(0); k < 8; k++ {
		h, ok := firsts[k*L+G-lead]
		if !ok {
			t.Fatalf("no grants in slot %d", k)
		}
		if prev >= 0 && h != (prev+1)%N {
			t.Fatalf("slot %d starts with host %d after %d", k, h, prev)
		}
		prev = h
	}
}

// TestPipelining: round r+1 is wanted as soon as round r starts, by its
// end minus the margin; a late round is refused, the FM idles one slot and
// skips its number.
func TestPipelining(t *testing.T) {
	f := newFM(t, gate.Lease)
	rotor := &sched.Rotor{}
	if err := f.Publish(0, sched.Make(rotor, 1, uniform(), 100, L, G)); err != nil {
		t.Fatal(err)
	}
	f.Emit(0, nil)
	id, by, ok := f.Want()
	if !ok || id != 2 || by != 3*L-L {
		t.Fatalf("want %d by %d (%v), expected round 2 by %d", id, by, ok, 2*L)
	}
	if err := f.Publish(by+1, sched.Make(rotor, 2, uniform(), 100, L, G)); !errors.Is(err, ErrLate) {
		t.Fatalf("late publish accepted: %v", err)
	}
	var out []Emission
	for now := int64(0); now < 3*L; now = f.NextDeadline() {
		out = f.Emit(now, out)
	}
	if len(out) != 3*N {
		t.Fatalf("round 1 sent %d grants, want %d", len(out), 3*N)
	}
	out = f.Emit(3*L+G, out[:0])
	if r, _, _ := f.Current(); r != nil || len(out) != 0 {
		t.Fatalf("after a late round: current %v, %d grants", r, len(out))
	}
	if id, _, _ := f.Want(); id != 3 {
		t.Fatalf("after skipping round 2, want %d", id)
	}
	if s := f.Stats(); s.IdleSlots != 1 || s.LatePublic != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestLateWakeSkips: an FM that wakes after a slot's window has passed
// sends nothing for it.
func TestLateWakeSkips(t *testing.T) {
	f := newFM(t, gate.Lease)
	rotor := &sched.Rotor{}
	f.Publish(0, sched.Make(rotor, 1, uniform(), 100, L, G))
	out := f.Emit(2*L+L-G, nil) // slots 0 and 1 over, slot 2 within its last guard
	if len(out) != 0 {
		t.Fatalf("%d frames sent for windows already over", len(out))
	}
	if s := f.Stats(); s.Skipped != 3*N {
		t.Fatalf("skipped %d, want %d", s.Skipped, 3*N)
	}
}

// TestStall: an FM that wakes 100 ms late has skipped the grants of the
// slots in between, and says so: every host's windows ended with its last
// grant's slot (in free-run, the lease that grant gave it), and none
// opened up to the end of the last slot skipped (the rounds published
// end there; idle slots grant nothing). A later stall is a new
// one; paper mode has none (a host unpaused sends until it is paused).
func TestStall(t *testing.T) {
	for _, m := range []gate.Discipline{gate.Lease, gate.FreeRun, gate.Paper} {
		f := newFM(t, m)
		rotor := &sched.Rotor{}
		id := uint32(0)
		step := func(now int64) {
			f.Emit(now, nil)
			if w, _, ok := f.Want(); ok && w > id {
				id = w
				if err := f.Publish(now, sched.Make(rotor, w, uniform(), 100, L, G)); err != nil && !errors.Is(err, ErrLate) {
					t.Fatal(err)
				}
			}
		}
		for now := int64(0); now < 2*L; now = f.NextDeadline() {
			step(now)
		}
		if _, n := f.LastStall(); n != 0 {
			t.Fatalf("%v: %d stalls before any", m, n)
		}
		grant := int64(L + G - lead) // the last grants: slot 1's, round 1's first
		wake := int64(2*L + 100_000_000)
		step(wake)
		s, n := f.LastStall()
		if m == gate.Paper {
			if n != 0 {
				t.Errorf("paper: %d stalls", n)
			}
			continue
		}
		from := int64(2 * L)
		if m == gate.FreeRun {
			from = grant + 3*L // LeaseSlots 3
		}
		to := int64(L + 2*3*L) // an idle slot, then rounds 1 and 2 of three slots; idle slots after them
		if n != 1 || s.To != to {
			t.Fatalf("%v: stall %d %+v: want one up to %d", m, n, s, to)
		}
		for h, fr := range s.From {
			if fr != from {
				t.Errorf("%v: h%d's windows ended at %d, want %d", m, h, fr, from)
			}
		}
		for now := f.NextDeadline(); now < wake+3*L; now = f.NextDeadline() {
			step(now)
		}
		if _, n := f.LastStall(); n != 1 {
			t.Errorf("%v: %d stalls once the FM keeps time again", m, n)
		}
		step(wake + 3*L + 2*L)
		if s, n := f.LastStall(); n != 2 || s.From[0] <= to {
			t.Errorf("%v: a second stall: %d, %+v", m, n, s)
		}
	}
}

// TestScheduleForBudget: a round with slot budgets gives each host its
// own budgets in the slots it sends in, flagged (wire.ScheduleBudget) for
// every host alike, and encodes; one without gives none.
func TestScheduleForBudget(t *testing.T) {
	r := sched.Make(&sched.Rotor{}, 5, uniform(), 100, L, G)
	var s wire.Schedule
	ScheduleFor(r, 1, 3, true, &s)
	if s.Budgeted() || s.Budget != [wire.MaxSlots]uint32{} {
		t.Fatalf("a round without budgets: flags %#x", s.Flags)
	}
	r.Budget = make([][]int64, len(r.Slots))
	for k := range r.Budget {
		r.Budget[k] = make([]int64, N)
		r.Budget[k][1] = int64(1000 * (k + 1))
	}
	r.Budget[1][1] = 0 // no bound
	for h := 0; h < N; h++ {
		ScheduleFor(r, h, 3, true, &s)
		if !s.Budgeted() || !s.Staggered() {
			t.Fatalf("h%d: flags %#x, want budget and stagger", h, s.Flags)
		}
		for k := range r.Slots {
			if want := uint32(r.Budget[k][h]); s.Budget[k] != want {
				t.Errorf("h%d slot %d: budget %d, want %d", h, k, s.Budget[k], want)
			}
		}
		b := make([]byte, wire.MaxScheduleLen)
		n, err := s.Encode(b)
		var back wire.Schedule
		if err != nil || wire.DecodeSchedule(b[:n], &back) != nil || back != s {
			t.Fatalf("h%d: does not survive the round trip: %v", h, err)
		}
	}
}
