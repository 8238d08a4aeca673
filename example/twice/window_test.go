package twice

import (
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Every sequence number is first once, in any order within the window, and
// across the wrap of the sequence space.
func TestWindowFindsSecondCopies(t *testing.T) {
	for _, start := range []seqhdr.Seq{0, seqhdr.Space - 10} {
		var w Window
		for i := range 300 {
			s := start.Add(i)
			// Copies arrive as a link reorders them: s, then s−1's copy
			// late, then s's own second copy.
			if !w.First(s) {
				t.Fatalf("start %d: seq %d (frame %d) not first", start, s, i)
			}
			if i > 0 && w.First(s.Add(-1)) {
				t.Fatalf("start %d: seq %d's second copy taken as first", start, s.Add(-1))
			}
			if w.First(s) {
				t.Fatalf("start %d: seq %d taken twice", start, s)
			}
		}
	}
}

// A copy up to WindowLen−1 behind the highest is still found; a jump ahead
// of the window forgets what it held.
func TestWindowEdges(t *testing.T) {
	var w Window
	w.First(100)
	w.First(100 + WindowLen - 1)
	if w.First(100) {
		t.Fatal("a copy WindowLen−1 behind the highest was taken as first")
	}
	w.First(100 + 3*WindowLen)
	if !w.First(100 + 2*WindowLen + 10) {
		t.Fatal("after a jump, a sequence number never received was taken as a copy")
	}
}

// A restarted sender starts anywhere: a sequence number far behind the
// highest starts the window again instead of being dropped as old.
func TestWindowRestartedSender(t *testing.T) {
	var w Window
	for i := range 1000 {
		w.First(seqhdr.Seq(5000 + i))
	}
	for i := range 10 {
		if !w.First(seqhdr.Seq(7 + i)) {
			t.Fatalf("a restarted sender's seq %d was dropped", 7+i)
		}
	}
}

// The receiving half allocates nothing per frame.
func TestWindowAllocatesNothing(t *testing.T) {
	var w Window
	s := seqhdr.Seq(0)
	if n := testing.AllocsPerRun(1000, func() { w.First(s); w.First(s); s = s.Next() }); n != 0 {
		t.Fatalf("Window.First: %v allocations per call", n)
	}
}
