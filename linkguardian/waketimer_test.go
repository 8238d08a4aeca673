package linkguardian_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/seqhdr"
)

// The core's side of the kernel's wake timers ("Wake timers" in
// fasttx.go): with WakeAfter the core publishes DummyWait (AckDelay) and
// keeps no deadline of its own for what the kernel's timer covers, only
// the fallback look; woken at the due time it sends the dummy (the ACK at
// once).

func TestFastSendWakeTimer(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	e.fs.WakeEvery = linkguardian.FastWakeFallback
	e.fs.WakeAfter = new(atomic.Uint64)
	if !e.handOff(0) {
		t.Fatal("no hand-off")
	}
	p.Poll(0, true)
	e.release(t)
	if w := e.fs.WakeAfter.Load(); w != uint64(p.S.DummyWait()) {
		t.Fatalf("WakeAfter %d, want DummyWait %d", w, p.S.DummyWait())
	}
	sent := 10 * us
	if _, ok := e.kernel(sent, 1); !ok {
		t.Fatal("the kernel did not send")
	}
	// A look for anything else adopts the frame: the first dummy is the
	// kernel timer's, so the deadline is the fallback, not LastNs + DummyWait.
	look := sent + p.S.DummyWait()/2
	p.Poll(look, true)
	e.release(t)
	if p.S.Outstanding() != 1 || p.S.Stats.DummiesSent != 0 {
		t.Fatalf("outstanding %d, %d dummies: want the kernel's frame, no dummy yet", p.S.Outstanding(), p.S.Stats.DummiesSent)
	}
	if d := p.NextDeadline(look, true); d != look+e.fs.WakeEvery {
		t.Fatalf("deadline %d with the kernel's frame outstanding, want the fallback %d (not LastNs + DummyWait = %d)",
			d, look+e.fs.WakeEvery, sent+p.S.DummyWait())
	}
	// Woken by the timer at LastNs + DummyWait: the dummy goes, and the
	// doubling dummies after it are the core's deadlines again.
	due := sent + p.S.DummyWait()
	p.Poll(due, true)
	if p.S.Stats.DummiesSent != 1 {
		t.Fatalf("%d dummies at the timer's wakeup, want 1", p.S.Stats.DummiesSent)
	}
	e.release(t)
	if d := p.NextDeadline(due, true); d <= due || d >= due+e.fs.WakeEvery {
		t.Fatalf("deadline %d after the first dummy at %d: want the next dummy's, before the fallback", d, due)
	}
	// A frame the core sent itself is not the kernel timer's: its dummy
	// is the core's deadline.
	p.ClaimSend()
	e.release(t)
	a, _ := e.pool.Alloc()
	n := copy(e.pool.Bytes(a, 1514), e.hostFrame(2, 100))
	if !p.Send(due+us, linkguardian.Frame{H: a, Len: n}) {
		t.Fatal("the core did not send")
	}
	e.release(t)
	if !e.handOff(due + 2*us) {
		t.Fatal("no hand-off")
	}
	if d := p.NextDeadline(due+2*us, true); d != due+us+p.S.DummyWait() {
		t.Fatalf("deadline %d after the core's own frame, want its dummy at %d", d, due+us+p.S.DummyWait())
	}
}

func TestFastPointWakeTimer(t *testing.T) {
	e := newFastEnd(t, 64, true)
	p := e.p
	e.pt.WakeAfter, e.pt.Woke = new(atomic.Uint64), new(atomic.Uint64)
	p.SetFast(e.pt)
	ackDelay := p.R.AckDelay()
	if w := e.pt.WakeAfter.Load(); w != uint64(max(ackDelay, 1000)) {
		t.Fatalf("WakeAfter %d, want AckDelay %d", w, ackDelay)
	}
	if !p.R.HandOff(0) {
		t.Fatal("no hand-off of the point")
	}
	frame := make([]byte, 64)
	binary.BigEndian.PutUint16(frame[12:], seqhdr.EtherType)
	frame[14] = byte(seqhdr.TypeData)
	if !e.pt.Offer(frame) { // serial 0, delivered by the kernel at 1 µs
		t.Fatal("the kernel did not deliver")
	}
	// Without a wakeup the core has no ACK deadline before the fallback.
	now := 1*us + 2*ackDelay
	p.Poll(now, true)
	if n := len(p.Out.Urgent) + len(p.Out.Low); n != 0 {
		t.Fatalf("%d control frames before the timer woke the core, want none", n)
	}
	if d := p.NextDeadline(now, true); d < 1_000*us {
		t.Fatalf("deadline %d: want only the fallback look", d)
	}
	// The timer woke it: the look adopts the point and the ACK goes at once.
	e.pt.Woke.Store(1)
	p.Poll(now+us, true)
	if p.R.Stats.FastDelivered != 1 || e.pt.Woke.Load() != 0 {
		t.Fatalf("adopted %d frames, Woke %d: want 1 and 0", p.R.Stats.FastDelivered, e.pt.Woke.Load())
	}
	if p.R.Stats.ExplicitAcksSent == 0 {
		t.Fatalf("no ACK at the timer's wakeup: %+v", p.R.Stats)
	}
	e.release(t)
}
