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
