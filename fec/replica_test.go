package fec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPerTransmission: over a Bernoulli link at p, frames sent k times, the
// per-transmission rate is p for every k, while the sequence numbers that
// went missing altogether are about p^k.
func TestPerTransmission(t *testing.T) {
	const p, span = 0.03, 200_000
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{1, 2, 3} {
		var frames, missing uint64
		for range span {
			got := 0
			for range k {
				if rng.Float64() >= p {
					got++
				}
			}
			frames += uint64(got)
			if got == 0 {
				missing++
			}
		}
		rx, lost := PerTransmission(k, span, frames)
		rate := float64(lost) / float64(rx+lost)
		if math.Abs(rate-p) > 0.05*p {
			t.Errorf("k=%d: per-transmission rate %.4g, want %g", k, rate, p)
		}
		if seq := float64(missing) / span; k > 1 && seq > p*p*2 {
			t.Errorf("k=%d: %.4g of the sequence numbers missing: the replication did not work in the test", k, seq)
		}
	}
	if rx, lost := PerTransmission(2, 10, 25); rx != 25 || lost != 0 {
		t.Errorf("more frames than transmissions (late copies): %d received, %d lost; want 25, 0", rx, lost)
	}
}
