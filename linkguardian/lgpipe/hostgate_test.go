package lgpipe

import (
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link"
)

func gateFrames(hs ...int) []link.Frame {
	fs := make([]link.Frame, len(hs))
	for i, h := range hs {
		fs[i] = link.Frame{H: link.Handle(h), Len: 100}
	}
	return fs
}

func gateHandles(fs []link.Frame) []int {
	hs := make([]int, len(fs))
	for i, f := range fs {
		hs[i] = int(f.H)
	}
	return hs
}

// TestHostGate: after a claim the core's deliveries wait until the wait
// after the kernel's last delivery, then leave in order ahead of newer ones;
// without a claim, or when the kernel's last delivery is long past, they
// leave at once.
func TestHostGate(t *testing.T) {
	const us = int64(1000)
	g := hostGate{wait: 100 * us}
	now := 1000 * us

	// No claim yet: frames pass.
	g.claimed(now, 0, now-us)
	if out := g.pass(now, gateFrames(1, 2)); !slices.Equal(gateHandles(out), []int{1, 2}) {
		t.Fatalf("without a claim: passed %v, want [1 2]", gateHandles(out))
	}
	// A claim 10 µs after the kernel's last delivery: wait until 90 µs on.
	g.claimed(now, 1, now-10*us)
	if held, until := g.holding(); held || until != now+90*us {
		t.Fatalf("after a claim: holding %v until %d, want nothing held yet, until %d", held, until, now+90*us)
	}
	if out := g.pass(now, gateFrames(3, 4)); len(out) != 0 {
		t.Fatalf("during the wait: passed %v", gateHandles(out))
	}
	if out := g.pass(now+50*us, gateFrames(5)); len(out) != 0 {
		t.Fatalf("during the wait: passed %v", gateHandles(out))
	}
	if held, _ := g.holding(); !held {
		t.Fatal("frames held during the wait are not reported")
	}
	// The same claim count again changes nothing.
	g.claimed(now+60*us, 1, now+50*us)
	if _, until := g.holding(); until != now+90*us {
		t.Fatalf("an unchanged claim count moved the wait to %d", until)
	}
	out := g.pass(now+90*us, gateFrames(6))
	if !slices.Equal(gateHandles(out), []int{3, 4, 5, 6}) {
		t.Fatalf("after the wait: passed %v, want [3 4 5 6] (held first, in order)", gateHandles(out))
	}
	if held, _ := g.holding(); held {
		t.Fatal("still holding after the wait")
	}
	if g.Waits != 1 || g.Held != 3 {
		t.Fatalf("waits %d held %d, want 1 and 3", g.Waits, g.Held)
	}
	// A claim long after the kernel's last delivery: no wait.
	now += 10_000 * us
	g.claimed(now, 2, now-500*us)
	if out := g.pass(now, gateFrames(7)); !slices.Equal(gateHandles(out), []int{7}) {
		t.Fatalf("a claim long after the kernel's last delivery: passed %v, want [7]", gateHandles(out))
	}
	if g.Waits != 1 {
		t.Fatalf("waits %d, want 1", g.Waits)
	}
}

// TestHostGateNoAlloc: holding and releasing reuse the gate's memory.
func TestHostGateNoAlloc(t *testing.T) {
	g := hostGate{wait: 100}
	fs := gateFrames(1, 2, 3, 4)
	now, claims := int64(1000), uint64(0)
	cycle := func() {
		claims++
		g.claimed(now, claims, now)
		g.pass(now, fs)
		g.pass(now+100, fs)
		now += 1000
	}
	cycle()
	if a := testing.AllocsPerRun(100, cycle); a != 0 {
		t.Fatalf("%v allocations per hold and release", a)
	}
}
