package fm

import (
	"testing"

	"github.com/linkfabric/linkfabric/tdma/sched"
)

// TestLastRounds: the FM keeps its last rounds with a slot, oldest first,
// with the slots each pair was given.
func TestLastRounds(t *testing.T) {
	var m Manager
	n := sched.AllToAll(3)
	for id := uint32(1); id <= keptRounds+3; id++ {
		d := sched.NewDemand(3)
		m.logRound(sched.Make(&sched.Rotor{}, id, n, 10, 5e6, 3e5), d)
		m.logRound(&sched.Round{ID: 1000 + id}, d) // empty: not kept
	}
	got := m.lastRounds()
	if len(got) != keptRounds {
		t.Fatalf("%d rounds kept, want %d", len(got), keptRounds)
	}
	for k, r := range got {
		if want := uint32(4 + k); r.ID != want || r.NSlots != 2 || r.Given[0][1] != 1 || r.Given[0][0] != 0 {
			t.Fatalf("round %d kept: %+v, want round %d with a slot per pair", k, r, want)
		}
	}
}
