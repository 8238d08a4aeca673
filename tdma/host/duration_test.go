package host

import (
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// TestDurationFromFirstGrant: --duration counts from the first control
// frame heard, so an agent whose FM starts late (the first round waits for
// every agent) still runs its whole duration in windows.
func TestDurationFromFirstGrant(t *testing.T) {
	g, err := gate.New(gate.Config{Mode: gate.Lease, Rate: 1e8, LeaseSlots: 3})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Duration: time.Second}, g: g}
	const start = int64(1e9) // the agent starts
	if a.over(start + 3e9) {
		t.Fatal("over before any grant was heard")
	}
	var gr wire.Grant
	wire.LeaseGrant(&gr, [6]byte{}, [6]byte{}, 0, 5_000_000, 1e8, wire.Trailer{Round: 1, Seq: 1, OpenNs: 5_000_000})
	first := start + 4e9 // the FM's first grant, 4 s after the start
	g.OnGrant(first, first, &gr)
	if a.over(first) || a.over(first+9e8) {
		t.Fatal("over within the duration of the first grant")
	}
	if !a.over(first + 1e9) {
		t.Fatal("not over a duration after the first grant")
	}
	if (&Agent{g: g}).over(first + 1e12) {
		t.Fatal("over without a duration")
	}
}
