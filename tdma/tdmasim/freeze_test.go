package tdmasim

import (
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
