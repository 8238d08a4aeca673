package tdmasim

import (
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
)

// faultConfig is the default star with fixed delays (the grant's the
// hosts' estimate, so no frame leaves its slot of its own) and a fault.
func faultConfig(f Fault) Config {
	c := Default()
	c.Shuffle = 1 << 20
	c.CtlDelay, c.Wake, c.Timer = Const(MeasuredCtlDelay.Min()), Const(MeasuredWake.Min()), Const(0)
	c.Fault = f
	return c
}

// TestFaultAttribution injects each misbehaviour into one host's window
// and checks what its receivers report: the first frame found outside its
// slot (the root) and every one of the faulty window's frames is named by
// the injected cause, from that host, in that window, late. The collisions
// that follow are other frames the root delayed (held behind it in a port,
// or a grant queued behind it), each under its own cause. The faulty frames
// make two senders meet at a port, except an early one here (its host's
// line is busy to the end of its previous window, so the frame cannot
// reach the port before the previous slot's sender is done) and a late
// grant's: the gate compares the grant with the ones before it and closes
// its window by the slot's end plus the guard, so its last frames reach
// their receiver late (the switch stores a frame before it sends it on)
// but meet no other sender's.
func TestFaultAttribution(t *testing.T) {
	const by = 1_000_000
	for _, c := range []struct {
		kind FaultKind
		by   int64
		want gate.Cause
		meet bool
	}{
		{OpenEarly, by, gate.OpenedEarly, false},
		{CloseLate, by, gate.ClosedLate, true},
		{AfterLease, 5_000_000 + by, gate.AfterLease, true},
		{GrantLate, by, gate.GrantLate, false},
		{HostQueue, by, gate.KernelQueue, true},
		{SwitchQueue, by, gate.SwitchQueue, true},
	} {
		t.Run(c.want.String(), func(t *testing.T) {
			const host, slot = 1, 6
			r, err := Run(faultConfig(Fault{Kind: c.kind, Host: host, Slot: slot, By: c.by}))
			if err != nil {
				t.Fatal(err)
			}
			if r.FaultRound == 0 {
				t.Fatal("the fault never struck")
			}
			if c.meet && r.Collisions == 0 {
				t.Errorf("no two senders met at a port")
			}
			if (r.Collisions == 0) != (r.Causes.Met() == 0) || r.MetInSlot != 0 {
				t.Errorf("%d meetings at the ports; the receivers found %d laid on a cause (%v) and %d of frames inside their slots",
					r.Collisions, r.Causes.Met(), metCounts(&r.Causes), r.MetInSlot)
			}
			if len(r.CollSample) == 0 {
				t.Fatalf("no frame found outside its slot: %+v", r.Causes)
			}
			faulty := func(s gate.Collision) bool { return s.Src == host && s.Round == r.FaultRound && s.Slot == r.FaultSlot }
			if s := r.CollSample[0]; !faulty(s) || s.Cause != c.want {
				t.Errorf("first collision %+v: want %s from h%d in %d/%d", s, c.want, host, r.FaultRound, r.FaultSlot)
			}
			for _, s := range r.CollSample {
				if faulty(s) && s.Cause != c.want {
					t.Errorf("collision %+v: want %s", s, c.want)
				}
				if s.LateUs <= 0 {
					t.Errorf("collision %+v: not late", s)
				}
			}
			t.Logf("%d met at a port; outside their slot by cause: %v; meetings the receivers found by cause: %v", r.Collisions, causeCounts(&r.Causes), metCounts(&r.Causes))
		})
	}
}

// metCounts and causeCounts name the causes with meetings or frames.
func metCounts(c *gate.Causes) map[string]uint64 {
	return counts(c, func(s gate.CauseStats) uint64 { return s.Met })
}
func causeCounts(c *gate.Causes) map[string]uint64 {
	return counts(c, func(s gate.CauseStats) uint64 { return s.Frames })
}

func counts(c *gate.Causes, of func(gate.CauseStats) uint64) map[string]uint64 {
	m := map[string]uint64{}
	for k, s := range c {
		if n := of(s); n > 0 {
			m[gate.Cause(k).String()] = n
		}
	}
	return m
}

// TestNoFaultNoCollision: the same star without a fault: no port holds two
// senders, and no receiver finds a frame outside its slot.
func TestNoFaultNoCollision(t *testing.T) {
	r, err := Run(faultConfig(Fault{}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Collisions != 0 || r.Causes.Total() != 0 || r.Causes.Met() != 0 || r.MetInSlot != 0 || r.FaultRound != 0 {
		t.Fatalf("%d collisions, %d frames outside their slot (%+v), %d meetings inside, fault round %d", r.Collisions, r.Causes.Total(), r.Causes, r.MetInSlot, r.FaultRound)
	}
}
