package tdmasim

import (
	"fmt"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
)

// TestFreezeStar: make soak's FM freeze in the simulator, a 1 MiB shuffle
// as the star runs it (starConfig: rounds of 4N slots, the measured late
// opens; a lease of N slots) with the FM stopped for 100 ms, at points
// through the first half of the shuffle, in lease and free-run mode. The
// FM tells its Planner of the stall and of when the round it returns into
// started: the Planner keeps what a slot carries (at least 0.85 of
// SlotCap, about what it learns without a stall; with the slots skipped
// taken as had, and that round placed at the FM's return, it fell to
// 0.4-0.6 of it), every host sends again within a round of N slots of the
// thaw, and every run is safe. (The simulated hosts' first reports after
// the thaw all come at once, so the plans for some hosts alone that the
// star saw, made between them, do not happen here: sched's
// TestPlannerAfterAStall follows those.)
func TestFreezeStar(t *testing.T) {
	for _, m := range []gate.Discipline{gate.Lease, gate.FreeRun} {
		worst := struct{ pay, resume int64 }{1 << 62, 0}
		for at := int64(20); at <= 150; at += 10 {
			c := starConfig(MeasuredOpenLate, 1)
			c.Mode, c.Shuffle, c.LeaseSlots = m, 1<<20, c.Hosts
			c.FreezeAt, c.FreezeFor = at*1_000_000+at*13_000, 100_000_000 // anywhere in a slot
			r, err := Run(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := unsafe(r); err != nil {
				t.Errorf("%s, frozen at %d ms: %v", m, at, err)
			}
			slotCap := sched.SlotBytes(c.Rate, c.Slot, c.Guard)
			if r.PayloadMin < slotCap*85/100 {
				t.Errorf("%s, frozen at %d ms: the FM planned slots of %d bytes, of %d", m, at, r.PayloadMin, slotCap)
			}
			round := int64(c.Hosts) * c.Slot
			if r.ResumeAllAfterThaw < 0 || r.ResumeAllAfterThaw > round {
				t.Errorf("%s, frozen at %d ms: the last host sent again %.1f ms after the thaw (a round: %.0f ms)", m, at, float64(r.ResumeAllAfterThaw)/1e6, float64(round)/1e6)
			}
			worst.pay, worst.resume = min(worst.pay, r.PayloadMin), max(worst.resume, r.ResumeAllAfterThaw)
		}
		t.Logf("%s: least payload per slot planned %d bytes, last host back %.1f ms after the thaw", m, worst.pay, float64(worst.resume)/1e6)
	}
}

// TestShuffleTailAfterAStall: the 40 MiB shuffle as the star runs it, the
// FM stalled for 20 ms a third of the way through (as a stolen vCPU holds
// it on the star: a wake-up 15-24 ms late), seeds 1-8. Once every host
// has reported after the stall the Planner's counts are as good as before
// it, and the tail ends the pairs together as without one: at most one run
// in eight with its pairs more than N−1 slots and one more apart. With the
// idle senders filled for the rest of a run after any stall the pairs
// ended 51-146 ms apart on the star.
func TestShuffleTailAfterAStall(t *testing.T) {
	if testing.Short() {
		t.Skip("40 MiB shuffles")
	}
	want := float64(0)
	var wide []string
	for seed := uint64(1); seed <= 8; seed++ {
		c := starConfig(MeasuredOpenLate, seed)
		c.FreezeAt, c.FreezeFor = 3_000_000_000+int64(seed)*1_700_000, 20_000_000
		want = float64(int64(c.Hosts)*c.Slot) / 1e6
		r, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := unsafe(r); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if s := float64(r.Completion-r.FirstFinish) / 1e6; s > want {
			wide = append(wide, fmt.Sprintf("seed %d: %.1f ms", seed, s))
		}
	}
	if len(wide) > 1 {
		t.Errorf("%d of 8 runs with a finish spread beyond %.0f ms: %v", len(wide), want, wide)
	}
}
