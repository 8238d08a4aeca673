package linkguardian

import "math"

// MaxCopies is the upper bound Copies applies.
const MaxCopies = 8

// copiesEpsilon absorbs floating-point error in Equation 2 before the ceil:
// math.Log10(1e-8)/math.Log10(1e-4) is not exactly 2 in binary floating
// point, and ceil(1.0000000000000002) would give 2 copies where the paper
// gives 1. A genuine fractional part below 1e-9 does not exist for loss
// rates a link can measure.
const copiesEpsilon = 1e-9

// Copies returns N, the number of copies of a lost frame to retransmit so
// that actual^(N+1) ≤ target (paper §3.4, Equations 1 and 2):
//
//	N = ceil(log10(target)/log10(actual) − 1), clamped to [1, MaxCopies].
//
// Examples with target 1e-8: actual 1e-5 → 1, 1e-4 → 1, 1e-3 → 2 (the
// paper's §4.1 choices), 1e-2 → 3.
//
// Edge cases (the result is always in [1, MaxCopies]):
//   - actual ≤ 0 or NaN (no loss measured): 1, the least a protected link sends;
//   - target ≥ actual (the link already meets the target): 1;
//   - target ≥ 1: 1;
//   - actual ≥ 1 (every frame lost): MaxCopies, no finite N reaches the target;
//   - target ≤ 0 or NaN (zero loss wanted): MaxCopies;
//   - an N above MaxCopies is clamped to MaxCopies, so the target is then not met.
func Copies(target, actual float64) int { return CopiesLimit(target, actual, MaxCopies) }

// CopiesLimit is Copies with a caller-chosen upper bound max (values below 1
// are treated as 1).
func CopiesLimit(target, actual float64, max int) int {
	if max < 1 {
		max = 1
	}
	switch {
	case !(actual > 0):
		return 1
	case actual >= 1:
		return max
	case !(target > 0):
		return max
	case target >= 1 || target >= actual:
		return 1
	}
	n := math.Log10(target)/math.Log10(actual) - 1
	c := math.Ceil(n - copiesEpsilon)
	if c < 1 {
		return 1
	}
	if c > float64(max) { // also catches +Inf from subnormal inputs
		return max
	}
	return int(c)
}
