package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"
)

// Median is the median of v, the mean of the middle two values for an
// even count (so not always an observed value, unlike Percentile(v, 50));
// 0 for an empty v. v is sorted in place.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// MedianBy returns the element of v whose key is the nearest-rank median:
// the lower middle one for an even count, ties in v's order. It is always
// an element of v (a whole run, say, rather than a mean of two); false for
// an empty v. v is not reordered.
func MedianBy[T any](v []T, key func(T) float64) (T, bool) {
	if len(v) == 0 {
		var zero T
		return zero, false
	}
	s := slices.Clone(v)
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return s[(len(s)-1)/2], true
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of
// sorted (ascending): the value at 1-based rank ceil(p/100 * n). It is
// always one of the observed values; ranks are computed in integer
// arithmetic (p in parts per million) so e.g. p99.99 of 10,000 values is
// exactly the 9,999th value. It returns the zero value for an empty slice.
func Percentile[T cmp.Ordered](sorted []T, p float64) T {
	n := int64(len(sorted))
	if n == 0 {
		var zero T
		return zero
	}
	ppm := int64(math.Round(p * 1e4))
	ppm = min(max(ppm, 1), 1e6)
	rank := (ppm*n + 1e6 - 1) / 1e6
	return sorted[max(rank, 1)-1]
}

// PercentileAbove returns the smallest value of sorted (ascending) with
// more than p percent (0 <= p < 100) of the sample at or below it: the
// value at 1-based rank floor(p/100 * n) + 1, capped at n. Where p/100 * n
// is a whole number it is one rank above Percentile's (p99 of 100 values
// is the largest, not the 99th); elsewhere the two agree. Ranks are in
// integer arithmetic as Percentile's. It returns the zero value for an
// empty slice.
func PercentileAbove[T cmp.Ordered](sorted []T, p float64) T {
	n := int64(len(sorted))
	if n == 0 {
		var zero T
		return zero
	}
	ppm := min(max(int64(math.Round(p*1e4)), 0), 1e6)
	return sorted[min(ppm*n/1e6, n-1)]
}

// Quantiles sorts v in place and returns its nearest-rank percentiles
// (Percentile) at ps, in percent: Quantiles(v, 50, 99, 100) is the median,
// p99 and maximum. It returns nil for an empty v.
func Quantiles[T cmp.Ordered](v []T, ps ...float64) []T {
	if len(v) == 0 {
		return nil
	}
	slices.Sort(v)
	q := make([]T, len(ps))
	for i, p := range ps {
		q[i] = Percentile(v, p)
	}
	return q
}

// Micros formats d in µs with one decimal ("1500.0" for 1.5 ms), as the
// tables print durations.
func Micros(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

// Ratio is a/b, 0 when b is 0 (a rate of nothing reads as none).
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// RatioNaN is a/b, NaN when b is 0 (a target checked on it is then missed).
func RatioNaN(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
