package cellify

import "testing"

// A host's first frame to an unknown destination (its ARP request), sent
// before a fresh edge's links are usable, is held and flooded once they
// are, not lost.
func TestNodeFloodHeldUntilRoutes(t *testing.T) {
	n := newNodeNet(t)
	n.add(testEdge(1, 1, 2))
	n.add(testEdge(2, 1, 2))
	n.wire(0, 0, 1, 0, nodeUs)
	n.wire(0, 1, 1, 1, nodeUs)
	e1 := n.nodes[0]
	n.host(0, 0, hostFrame(1, 2, 0, 0, 200)) // before any REACH
	if e1.Reach().Routes(2) != 0 || e1.Stats.FloodHeld != 1 {
		t.Fatalf("routes %#b, held %d: want none and 1", e1.Reach().Routes(2), e1.Stats.FloodHeld)
	}
	n.run(200*nodeUs, nodeUs)
	if got := len(n.got[[2]int{1, 0}]); got != 1 || e1.Stats.FloodHeldDrop != 0 {
		t.Fatalf("host 2 got %d floods (want 1), held dropped %d", got, e1.Stats.FloodHeldDrop)
	}
	n.run(200*nodeUs, nodeUs) // released once
	if got := len(n.got[[2]int{1, 0}]); got != 1 {
		t.Fatalf("host 2 got %d floods, want 1", got)
	}
}

// A held flood that waits longer than the hold (no link ever comes up) is
// dropped and counted, and so is one that finds the hold full.
func TestNodeFloodHeldExpires(t *testing.T) {
	n := newNodeNet(t)
	n.add(testEdge(1, 1, 1))
	e1 := n.nodes[0]
	for i := range floodHoldFrames + 1 {
		n.host(0, 0, hostFrame(1, 2, 0, i, 100))
	}
	if e1.Stats.FloodHeld != floodHoldFrames || e1.Stats.FloodHeldDrop != 1 {
		t.Fatalf("held %d, dropped %d: want %d and 1", e1.Stats.FloodHeld, e1.Stats.FloodHeldDrop, floodHoldFrames)
	}
	n.run(e1.holdFor()+nodeUs, nodeUs)
	n.host(0, 0, hostFrame(1, 2, 0, 99, 100))
	if e1.Stats.FloodHeld != floodHoldFrames+1 || e1.Stats.FloodHeldDrop != floodHoldFrames+1 {
		t.Fatalf("after the hold: held %d, dropped %d", e1.Stats.FloodHeld, e1.Stats.FloodHeldDrop)
	}
}

// An edge whose table reaches one edge, and later a second one (its
// fabric node's link to it comes up after), floods a frame kept from the
// first time to the second edge too, and to each edge once.
func TestNodeFloodHeldConverging(t *testing.T) {
	n := newNodeNet(t)
	for i := range 3 {
		c := testEdge(EdgeID(i+1), 1, 1)
		c.Reach.Th = 10
		n.add(c)
	}
	f := n.add(testFabric(100, 3))
	n.wire(0, 0, f, 0, nodeUs)
	n.wire(1, 0, f, 1, nodeUs)
	e1 := n.nodes[0]
	for e1.Reach().Routes(2) == 0 {
		if n.now > 1000*nodeUs {
			t.Fatal("edge 1 never reached edge 2")
		}
		n.step(nodeUs)
	}
	n.host(0, 0, hostFrame(1, 3, 0, 0, 200))
	n.wire(2, 0, f, 2, nodeUs)
	n.run(400*nodeUs, nodeUs)
	if e1.Reach().Routes(3) == 0 {
		t.Fatal("edge 1 never reached edge 3")
	}
	if a, b := len(n.got[[2]int{1, 0}]), len(n.got[[2]int{2, 0}]); a != 1 || b != 1 || e1.Stats.FloodLate != 1 || e1.Stats.FloodHeldDrop != 0 {
		t.Fatalf("host 2 got %d, host 3 got %d (want 1 each); late %d, dropped %d", a, b, e1.Stats.FloodLate, e1.Stats.FloodHeldDrop)
	}
}

// Keeping floods allocates nothing.
func TestNodeFloodHeldNoAlloc(t *testing.T) {
	n := newNodeNet(t)
	n.add(testEdge(1, 1, 1))
	e1 := n.nodes[0]
	frame := hostFrame(1, 2, 0, 0, 100)
	if a := testing.AllocsPerRun(100, func() {
		n.host(0, 0, frame)
		n.now += e1.holdFor() / 4
		e1.Poll(n.now)
	}); a != 0 {
		t.Fatalf("%v allocations per kept flood", a)
	}
	if e1.Stats.FloodHeld == 0 || e1.Stats.FloodHeldDrop == 0 {
		t.Fatalf("held %d, dropped %d: the hold was not exercised", e1.Stats.FloodHeld, e1.Stats.FloodHeldDrop)
	}
}
