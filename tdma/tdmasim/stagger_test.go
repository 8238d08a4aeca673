package tdmasim

import (
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
)

// TestStaggeredShuffle: with the windows to each destination moved by its
// share of the guard (the FM's default, which its schedules announce and
// every gate follows), the shuffle runs on the FM's real timeline and the
// measured grant delays, wake-ups and timers with no frame meeting another
// sender's in a switch port, no byte outside its sender's slot plus the
// guard or before its slot's guard has passed (a gate not on the FM's
// stagger), no drop, and finishes as soon as with every window of a slot
// opening at once, in lease and free-run modes.
func TestStaggeredShuffle(t *testing.T) {
	for _, m := range []gate.Discipline{gate.Lease, gate.FreeRun} {
		for seed := uint64(1); seed <= 3; seed++ {
			var ratio [2]float64
			for i, stagger := range []bool{false, true} {
				c := Default()
				c.Mode, c.Seed, c.Margin, c.Stagger = m, seed, 50_000, stagger
				r, err := Run(c)
				if err != nil {
					t.Fatal(err)
				}
				if r.Unfinished > 0 || r.Collisions > 0 || r.OverrunBytes > 0 || r.EarlyBytes > 0 || r.Drops > 0 {
					t.Errorf("%s seed %d stagger %v: %d flows unfinished, %d collisions, %d bytes overrun, %d early, %d drops", m, seed, stagger,
						r.Unfinished, r.Collisions, r.OverrunBytes, r.EarlyBytes, r.Drops)
				}
				ratio[i] = r.Ratio()
			}
			if ratio[1] > ratio[0]+0.002 {
				t.Errorf("%s seed %d: %.4f × ideal staggered, %.4f aligned", m, seed, ratio[1], ratio[0])
			}
			t.Logf("%s seed %d: %.4f × ideal staggered, %.4f aligned", m, seed, ratio[1], ratio[0])
		}
	}
}
