package fec

import "math"

// GroupFail is RAIL's post-recovery loss (NSDI'17 §5.3): the probability that
// a group of n data frames and its parity frame, each lost independently
// with probability p, loses two or more of its n+1 frames, so that XOR
// parity cannot restore it:
//
//	1 − (1 − p)^(n+1) − (n + 1)·p·(1 − p)^n
func GroupFail(n int, p float64) float64 {
	if n < 1 || !(p > 0) {
		return 0
	}
	if p >= 1 {
		return 1
	}
	// log1p/expm1 keep the small differences exact at p ≪ 1.
	q := math.Log1p(-p)
	one := float64(n+1) * p * math.Exp(float64(n)*q)
	return max(0, -math.Expm1(float64(n+1)*q)-one)
}

// Residual is the loss rate of data frames after recovery with groups of n
// under independent loss p: a data frame is lost and so is at least one of
// the n other frames of its group (n−1 data frames and the parity):
//
//	p·(1 − (1 − p)^n)
//
// It is what a host sees. GroupFail counts failed groups instead and is
// about (n+1)/2 times larger at small p, so choosing n by GroupFail < t
// leaves the hosts' loss well below t.
func Residual(n int, p float64) float64 {
	if !(p > 0) {
		return 0
	}
	if n < 1 {
		return min(p, 1)
	}
	if p >= 1 {
		return 1
	}
	return p * -math.Expm1(float64(n)*math.Log1p(-p))
}

// GroupSize returns RAIL's n for loss rate p and target t: the largest n ≤
// MaxN with GroupFail(n, p) < t. It returns 0 when p < t (no coding: the
// link already meets the target) and when even n = 1 misses the target
// (parity cannot reach it: replicate or exclude). GroupFail grows with n,
// so the answer is found by bisection.
func GroupSize(p, t float64) int {
	if !(p >= t) || !(t > 0) || GroupFail(1, p) >= t {
		return 0
	}
	lo, hi := 1, MaxN // GroupFail(lo) < t
	if GroupFail(hi, p) < t {
		return hi
	}
	for hi-lo > 1 { // invariant: GroupFail(lo) < t ≤ GroupFail(hi)
		mid := (lo + hi) / 2
		if GroupFail(mid, p) < t {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// ReplicaResidual is the loss rate of data frames sent k times over
// independent loss p: p^k.
func ReplicaResidual(k int, p float64) float64 {
	if k < 1 {
		k = 1
	}
	return math.Pow(min(max(p, 0), 1), float64(k))
}
