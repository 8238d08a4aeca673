package twice

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// The mode's receiving half on a simulated link with a virtual clock: each
// frame's two copies leave 10 ns apart, the loss model drops some and a
// delay of up to 500 ns reorders them (up to 50 frames, inside the window).
// Against the oracle of what the link let through: a frame is delivered
// exactly once if a copy of it arrived, and never if none did.
func TestTwiceSimulatedLink(t *testing.T) {
	for _, c := range []struct {
		name string
		loss linksim.LossModel
	}{
		{"bernoulli 0.3", &linksim.Bernoulli{P: 0.3}},
		{"bursty 0.1, bursts of 4", &linksim.Bursty{P: 0.1, MeanBurst: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			const frames = 100_000
			type arrival struct {
				at  int64
				seq seqhdr.Seq
				id  int
			}
			var wire []arrival
			arrived := make([]bool, frames)
			start := seqhdr.Seq(r.Uint32N(seqhdr.Space))
			for i := range frames {
				for k := range 2 {
					now := int64(i*20 + k*10)
					if c.loss.Drop(r, now) {
						continue
					}
					arrived[i] = true
					wire = append(wire, arrival{now + r.Int64N(500), start.Add(i), i})
				}
			}
			slices.SortStableFunc(wire, func(a, b arrival) int { return int(a.at - b.at) })
			var w Window
			delivered := make([]int, frames)
			for _, a := range wire {
				if w.First(a.seq) {
					delivered[a.id]++
				}
			}
			lost := 0
			for i := range frames {
				want := 0
				if arrived[i] {
					want = 1
				} else {
					lost++
				}
				if delivered[i] != want {
					t.Fatalf("frame %d delivered %d times, want %d (a copy arrived: %v)", i, delivered[i], want, arrived[i])
				}
			}
			t.Logf("%d of %d frames lost both copies", lost, frames)
		})
	}
}
