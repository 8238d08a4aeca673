package fec

import (
	"errors"
	"math"
	"testing"
)

func TestLinkTableRows(t *testing.T) {
	tb := DefaultLinkTable(1e-3)
	if err := tb.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rate, burst float64
		want        LinkChoice
	}{
		{1e-5, 1, LinkChoice{Action: ActNone}},
		{3e-3, 1, LinkChoice{Action: ActFEC, N: 14}}, // RAIL's example
		{1e-2, 1, LinkChoice{Action: ActFEC, N: 4}},
		{1e-2, 3, LinkChoice{Action: ActLG}},
		{5e-2, 1, LinkChoice{Action: ActReplicate, Copies: 3}},
		{5e-2, 4, LinkChoice{Action: ActLG}},
		{0.2, 1, LinkChoice{Action: ActLG}}, // fec table: lg meets the target at 10 % and 20 %
		{0.2, 5, LinkChoice{Action: ActLG}},
		{0.3, 1, LinkChoice{Action: ActExclude}},
		{0.3, 5, LinkChoice{Action: ActExclude}},
	}
	for _, c := range cases {
		// From a fresh state, moving up needs no hysteresis.
		got := tb.Decide(c.rate, c.burst, LinkState{}).Choice
		if got != c.want {
			t.Errorf("rate %g burst %g: %v, want %v", c.rate, c.burst, got, c.want)
		}
	}
}

// A link that worsens and heals walks up the table and back down, and
// switches back to no protection once healed.
func TestLinkPolicyHeals(t *testing.T) {
	tb := DefaultLinkTable(1e-3)
	var s LinkState
	steps := []struct {
		rate float64
		want Action
	}{{1e-5, ActNone}, {5e-3, ActFEC}, {5e-2, ActReplicate}, {0.3, ActExclude}, {5e-2, ActReplicate}, {5e-3, ActFEC}, {1e-5, ActNone}}
	for i, st := range steps {
		s = tb.Decide(st.rate, 1, s)
		if s.Choice.Action != st.want {
			t.Fatalf("step %d, rate %g: %v, want %v", i, st.rate, s.Choice, st.want)
		}
	}
}

// A rate hovering around a row's bound (±5 %, inside the 20 % margin) does
// not flap: one switch up, none back; FEC's n may shrink to what the worst
// rate needs but never grows back.
func TestLinkPolicyNoFlap(t *testing.T) {
	tb := DefaultLinkTable(1e-3)
	for _, bound := range []float64{1e-3, 3e-2, 1e-1} {
		var s LinkState
		s = tb.Decide(bound*0.5, 1, s)
		changes := 0
		for i := range 200 {
			rate := bound * (1 + 0.05*math.Sin(float64(i)))
			n := tb.Decide(rate, 1, s)
			if n.Choice.Action != s.Choice.Action {
				changes++
			} else if n.Choice.N > s.Choice.N {
				t.Errorf("around %g: n grew back from %d to %d at rate %g", bound, s.Choice.N, n.Choice.N, rate)
			}
			s = n
		}
		if changes != 1 {
			t.Errorf("around %g: %d changes of choice, want 1 (up once)", bound, changes)
		}
	}
	// Bursty: on at 1.5, off below 1.25.
	s := tb.Decide(1e-2, 1.6, LinkState{})
	if s.Choice.Action != ActLG {
		t.Fatalf("burst 1.6: %v", s.Choice)
	}
	if s = tb.Decide(1e-2, 1.4, s); s.Choice.Action != ActLG {
		t.Fatalf("burst 1.4 after 1.6: %v, want lg (hysteresis)", s.Choice)
	}
	if s = tb.Decide(1e-2, math.NaN(), s); s.Choice.Action != ActLG {
		t.Fatalf("no run measured: %v, want lg kept", s.Choice)
	}
	if s = tb.Decide(1e-2, 1.1, s); s.Choice.Action != ActFEC {
		t.Fatalf("burst 1.1: %v, want fec", s.Choice)
	}
	if s2 := tb.Decide(math.NaN(), 5, s); s2 != s {
		t.Fatalf("NaN rate changed the state: %+v", s2)
	}
}

// FEC's n shrinks as soon as the rate needs it and grows only past the margin.
func TestLinkPolicyGroupSize(t *testing.T) {
	tb := DefaultLinkTable(1e-3)
	s := tb.Decide(3e-3, 1, LinkState{})
	if s.Choice.N != 14 {
		t.Fatalf("n %d, want 14", s.Choice.N)
	}
	s = tb.Decide(3.3e-3, 1, s)
	if want := GroupSize(3.3e-3, 1e-3); s.Choice.N != want || want >= 14 {
		t.Fatalf("worse rate: n %d, want %d (< 14)", s.Choice.N, want)
	}
	n := s.Choice.N
	if s = tb.Decide(3.1e-3, 1, s); s.Choice.N != n {
		t.Fatalf("slightly better rate: n %d, want %d kept", s.Choice.N, n)
	}
	if s = tb.Decide(1.5e-3, 1, s); s.Choice.N != GroupSize(1.5e-3/0.8, 1e-3) || s.Choice.N <= n {
		t.Fatalf("much better rate: n %d, want %d", s.Choice.N, GroupSize(1.5e-3/0.8, 1e-3))
	}
}

// A band where parity cannot reach the target replicates instead, with the
// fewest copies that do.
func TestLinkPolicyFECFallsBack(t *testing.T) {
	tb := DefaultLinkTable(1e-4) // at 2 %, p² = 4e-4 misses 1e-4
	got := tb.Decide(2e-2, 1, LinkState{}).Choice
	if got.Action != ActReplicate || got.Copies != 3 {
		t.Fatalf("%v, want replicate×3", got)
	}
}

func TestLinkTableValidate(t *testing.T) {
	mod := func(f func(*LinkTable)) LinkTable { tb := DefaultLinkTable(1e-3); f(&tb); return tb }
	for name, tb := range map[string]LinkTable{
		"target":    mod(func(tb *LinkTable) { tb.Target = 0 }),
		"no rows":   mod(func(tb *LinkTable) { tb.Rows = nil }),
		"no inf":    mod(func(tb *LinkTable) { tb.Rows = tb.Rows[:3] }),
		"order":     mod(func(tb *LinkTable) { tb.Rows[1].Below = 1e-4 }),
		"burst":     mod(func(tb *LinkTable) { tb.BurstOff = 2 }),
		"margin":    mod(func(tb *LinkTable) { tb.Margin = 1 }),
		"action":    mod(func(tb *LinkTable) { tb.Rows[0].Action = 9 }),
		"copies":    mod(func(tb *LinkTable) { tb.Rows[2].Copies = 99 }),
		"target 5%": DefaultLinkTable(5e-2),
	} {
		if err := tb.Validate(); !errors.Is(err, ErrInvalidLinkTable) {
			t.Errorf("%s: %v, want ErrInvalidLinkTable", name, err)
		}
	}
	if !math.IsNaN(MeanBurst(3, 0)) || MeanBurst(6, 3) != 2 {
		t.Error("MeanBurst")
	}
}

// A rate measured from few losses swings beyond the margin (here ±40 %
// around the target, as 50 losses in a window do at 3σ): with a Dwell of
// one window, DecideAt weakens the protection at most once per window,
// takes stronger protection at once, and returns to none once the link
// has healed for a whole window.
func TestLinkPolicyDwell(t *testing.T) {
	const ms = int64(1e6)
	tb := DefaultLinkTable(1e-3)
	tb.Dwell = 2000 * ms
	noisy := func(i int) float64 { return 1e-3 * (1 + 0.4*math.Sin(float64(i)*1.7)) }
	for _, dwell := range []int64{0, tb.Dwell} {
		tb.Dwell = dwell
		s := tb.DecideAt(0, 5e-4, 1, LinkState{})
		changes, weaker := 0, 0
		for i := range 400 { // 4 s, a report every 10 ms
			n := tb.DecideAt(int64(i)*10*ms, noisy(i), 1, s)
			if n.Choice != s.Choice {
				changes++
				if n.Choice.strength() < s.Choice.strength() {
					weaker++
				}
			}
			s = n
		}
		if dwell == 0 && changes < 20 {
			t.Fatalf("without a dwell the noisy rate made only %d changes: the test does not test", changes)
		}
		if dwell > 0 && weaker > 2 {
			t.Errorf("dwell %d ms: %d weaker choices in 4 s (%d changes), want at most one per window", dwell/ms, weaker, changes)
		}
		t.Logf("dwell %d ms: %d changes, %d of them weaker", dwell/ms, changes, weaker)
	}
	// A link that gets worse is protected at once; when it heals, the
	// protection stays for the dwell and then goes.
	tb.Dwell = 2000 * ms
	s := tb.DecideAt(0, 5e-4, 1, LinkState{})
	if s = tb.DecideAt(10*ms, 1e-2, 1, s); s.Choice.Action != ActFEC || s.Since != 10*ms {
		t.Fatalf("loss 1e-2: %+v, want fec at once", s)
	}
	if s = tb.DecideAt(1000*ms, 1e-5, 1, s); s.Choice.Action != ActFEC {
		t.Fatalf("healed after 1 s: %+v, want fec kept for the dwell", s)
	}
	if s = tb.DecideAt(2100*ms, 1e-5, 1, s); s.Choice.Action != ActNone || s.Since != 2100*ms {
		t.Fatalf("healed after the dwell: %+v, want none", s)
	}
	bad := DefaultLinkTable(1e-3)
	bad.Dwell = -1
	if bad.Validate() == nil {
		t.Fatal("a negative dwell validated")
	}
}
