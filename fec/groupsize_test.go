package fec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// binomTail is P(X ≥ 2) for X ~ Binomial(n+1, p), summed term by term.
func binomTail(n int, p float64) float64 {
	sum, c := 0.0, 1.0 // c = C(n+1, k)
	for k := 0; k <= n+1; k++ {
		if k >= 2 {
			sum += c * math.Pow(p, float64(k)) * math.Pow(1-p, float64(n+1-k))
		}
		c = c * float64(n+1-k) / float64(k+1)
	}
	return sum
}

func TestGroupFailIsBinomialTail(t *testing.T) {
	for _, p := range []float64{1e-6, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.5} {
		for _, n := range []int{1, 2, 3, 4, 7, 14, 44, 100, 255} {
			got, want := GroupFail(n, p), binomTail(n, p)
			if math.Abs(got-want) > 1e-9*want+1e-300 {
				t.Errorf("GroupFail(%d, %g) = %.12g, binomial tail %.12g", n, p, got, want)
			}
		}
	}
	if GroupFail(4, 0) != 0 || GroupFail(4, 1) != 1 || GroupFail(0, 0.1) != 0 {
		t.Error("GroupFail edge cases")
	}
}

// RAIL §5.3's worked example: t = 0.1 %, p = 0.3 % gives n = 14, a
// post-recovery loss of 0.092 % and a bandwidth overhead of 7.1 %.
func TestGroupSizeRAILExample(t *testing.T) {
	n := GroupSize(3e-3, 1e-3)
	if n != 14 {
		t.Fatalf("GroupSize(0.3%%, 0.1%%) = %d, RAIL says 14", n)
	}
	if f := GroupFail(n, 3e-3); math.Round(f*1e5) != 92 {
		t.Errorf("GroupFail(14, 0.3%%) = %.5f%%, RAIL says 0.092%%", f*100)
	}
	if o := 1 / float64(n); math.Round(o*1000) != 71 {
		t.Errorf("overhead 1/n = %.4f, RAIL says 7.1%%", o)
	}
}

func TestGroupSizeEdges(t *testing.T) {
	cases := []struct {
		p, t float64
		n    int
	}{
		{5e-4, 1e-3, 0}, // p < t: no coding
		{3e-2, 1e-3, 1}, // p² = 9e-4 < t
		{5e-2, 1e-3, 0}, // p² > t: parity cannot reach the target
		{1e-2, 1e-3, 4},
		{1e-3, 1e-3, 44},
		{1e-9, 1e-9, MaxN}, // the bound
		{math.NaN(), 1e-3, 0},
		{1e-2, 0, 0},
	}
	for _, c := range cases {
		if got := GroupSize(c.p, c.t); got != c.n {
			t.Errorf("GroupSize(%g, %g) = %d, want %d", c.p, c.t, got, c.n)
		}
	}
}

// GroupSize is the largest n that meets the target: n meets it, n+1 does not.
func TestGroupSizeIsLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		tg := math.Pow(10, -1-5*r.Float64())
		p := tg * math.Pow(10, 2*r.Float64())
		n := GroupSize(p, tg)
		if n == 0 {
			if p >= tg && GroupFail(1, p) < tg {
				t.Fatalf("GroupSize(%g, %g) = 0 but n = 1 meets the target", p, tg)
			}
			continue
		}
		if GroupFail(n, p) >= tg || (n < MaxN && GroupFail(n+1, p) < tg) {
			t.Fatalf("GroupSize(%g, %g) = %d: fail(n) %g, fail(n+1) %g", p, tg, n, GroupFail(n, p), GroupFail(n+1, p))
		}
	}
}

// What a host loses is about 2/(n+1) of RAIL's group failure at small p.
func TestResidualAgainstGroupFail(t *testing.T) {
	for _, n := range []int{1, 4, 14, 44} {
		p := 1e-4
		ratio := Residual(n, p) / GroupFail(n, p)
		if want := 2 / float64(n+1); math.Abs(ratio-want) > 0.01*want {
			t.Errorf("n %d: Residual/GroupFail = %.4f, want ≈ 2/(n+1) = %.4f", n, ratio, want)
		}
	}
	if Residual(0, 0.1) != 0.1 || ReplicaResidual(3, 0.1) < 0.000999 || ReplicaResidual(3, 0.1) > 0.001001 {
		t.Error("Residual without parity / ReplicaResidual")
	}
}
