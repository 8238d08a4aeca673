package bpf

import (
	"math"
	"testing"
)

func TestLoss(t *testing.T) {
	b := Loss(1e-2, 0, 7)
	if b.Model != Bernoulli || b.Loss != 1e-2 || b.Seed != 7 || b.Validate() != nil {
		t.Fatalf("Bernoulli: %+v", b)
	}
	g := Loss(1e-2, 3, 7)
	if g.Model != GilbertElliott || g.Seed != 7 || g.Validate() != nil ||
		math.Abs(g.ExpectedLoss()-1e-2) > 1e-9 || math.Abs(g.ExpectedMeanBurst()-3) > 1e-9 {
		t.Fatalf("bursty: %+v (loss %g, mean burst %g)", g, g.ExpectedLoss(), g.ExpectedMeanBurst())
	}
	if z := Loss(0, 3, 1); z.Model != Bernoulli || z.Loss != 0 {
		t.Fatalf("no loss with a burst length is no impairment: %+v", z)
	}
}
