package linkguardian_test

import (
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
)

func TestCopies(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name           string
		target, actual float64
		want           int
	}{
		// Paper §3.4 example and §4.1 choices (target 1e-8).
		{"paper 1e-5", 1e-8, 1e-5, 1},
		{"paper 1e-4 (exact boundary, float trap)", 1e-8, 1e-4, 1},
		{"paper 1e-3", 1e-8, 1e-3, 2},
		{"1e-2 exact boundary", 1e-8, 1e-2, 3},
		{"1e-1 exact boundary", 1e-8, 1e-1, 7},
		{"1e-6 boundary 1e-12 target", 1e-12, 1e-6, 1},
		{"1e-3 boundary 1e-9 target", 1e-9, 1e-3, 2},
		{"1e-3 boundary 1e-12 target", 1e-12, 1e-3, 3},
		{"just above 1e-4", 1e-8, 1.0001e-4, 2},
		{"2e-3", 1e-8, 2e-3, 3}, // log(1e-8)/log(2e-3) = 2.96 → 1.96 → 2? see below
		// Edges.
		{"no loss measured", 1e-8, 0, 1},
		{"negative actual", 1e-8, -1, 1},
		{"NaN actual", 1e-8, nan, 1},
		{"target already met", 1e-3, 1e-4, 1},
		{"target equals actual", 1e-4, 1e-4, 1},
		{"target ≥ 1", 1, 0.5, 1},
		{"all lost", 1e-8, 1, linkguardian.MaxCopies},
		{"actual > 1", 1e-8, 2, linkguardian.MaxCopies},
		{"actual +Inf", 1e-8, inf, linkguardian.MaxCopies},
		{"zero target", 0, 1e-3, linkguardian.MaxCopies},
		{"NaN target", nan, 1e-3, linkguardian.MaxCopies},
		{"clamped at max", 1e-8, 0.5, linkguardian.MaxCopies}, // needs 26
		{"subnormal actual", 1e-8, 5e-324, 1},
	}
	for _, c := range cases {
		got := linkguardian.Copies(c.target, c.actual)
		if c.name == "2e-3" {
			// Check against Equation 1 directly rather than a hand value.
			c.want = minimalN(c.target, c.actual)
		}
		if got != c.want {
			t.Errorf("%s: Copies(%g, %g) = %d, want %d", c.name, c.target, c.actual, got, c.want)
		}
	}
}

// minimalN is the smallest N ≥ 1 with actual^(N+1) ≤ target, by brute force
// with a tiny relative tolerance for exact powers of ten.
func minimalN(target, actual float64) int {
	for n := 1; ; n++ {
		if math.Pow(actual, float64(n+1)) <= target*(1+1e-9) {
			return n
		}
	}
}

// Over a grid of rates, Copies is the least N meeting Equation 1 (or the clamp).
func TestCopiesMatchesEquation1(t *testing.T) {
	for _, target := range []float64{1e-6, 1e-8, 1e-9, 1e-10, 1e-12} {
		for e := -9.0; e < -0.05; e += 0.01 {
			actual := math.Pow(10, e)
			if actual >= target {
				want := minimalN(target, actual)
				if want > linkguardian.MaxCopies {
					want = linkguardian.MaxCopies
				}
				if got := linkguardian.Copies(target, actual); got != want {
					t.Fatalf("Copies(%g, %g) = %d, brute force %d", target, actual, got, want)
				}
			}
		}
		for k := 1; k <= 12; k++ { // exact powers of ten: no float off-by-one
			actual := math.Pow(10, -float64(k))
			if actual < target {
				continue
			}
			want := minimalN(target, actual)
			if want > linkguardian.MaxCopies {
				want = linkguardian.MaxCopies
			}
			if got := linkguardian.Copies(target, actual); got != want {
				t.Errorf("Copies(%g, 1e-%d) = %d, want %d", target, k, got, want)
			}
		}
	}
}

func TestCopiesLimit(t *testing.T) {
	if got := linkguardian.CopiesLimit(1e-8, 1e-1, 3); got != 3 {
		t.Errorf("CopiesLimit clamp = %d", got)
	}
	if got := linkguardian.CopiesLimit(1e-8, 1e-1, 0); got != 1 {
		t.Errorf("CopiesLimit max 0 = %d, want 1", got)
	}
	if got := linkguardian.CopiesLimit(1e-8, 1, 20); got != 20 {
		t.Errorf("CopiesLimit actual 1 = %d, want 20", got)
	}
}
