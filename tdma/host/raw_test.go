package host

import (
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// TestStoppedCounted: a frame the exit gate returned with its stamp is
// counted by its cause and sampled with its host, slot and lateness,
// without allocating; one without the stamp is not counted.
func TestStoppedCounted(t *testing.T) {
	a := &Agent{cfg: Config{Index: 2}}
	a.s.StopSample = make([]gate.Collision, 0, gate.MaxCollisionSample)
	const send = int64(1_000_000_000)
	h := wire.DataHdr{Src: 2, Dst: 0, Round: 9, Slot: 1, SendTS: send}
	// held by the host's queues 300 µs past the slot's end
	w := wire.WinTrailer{Due: 2_300_000, Close: 1_950_000, FMEnd: 2_000_000, Line: 100_000, Lease: 10_000_000, SlotUs: 5000, GuardUs: 300, Entry: 2_300_000}
	var b [wire.WinTrailerLen]byte
	w.Encode(b[:])
	if n := testing.AllocsPerRun(10, func() { a.stopped(b[:], 1514, &h) }); n != 0 {
		t.Errorf("%.0f allocations per stopped frame", n)
	}
	s := a.s.Stopped[gate.KernelQueue]
	if s.Frames != 11 || s.MaxLateUs != 300 || a.s.Stopped.Total() != 11 {
		t.Fatalf("stopped %+v", a.s.Stopped)
	}
	if c := a.s.StopSample[0]; c.Src != 2 || c.Dst != 0 || c.Round != 9 || c.Slot != 1 || c.Cause != gate.KernelQueue || c.LateUs != 300 {
		t.Fatalf("sample %+v", c)
	}
	w.Entry = wire.WinUnknown
	w.Encode(b[:])
	a.stopped(b[:], 1514, &h)
	if a.s.Stopped.Total() != 11 {
		t.Fatalf("a frame without the gate's stamp was counted: %+v", a.s.Stopped)
	}
}
