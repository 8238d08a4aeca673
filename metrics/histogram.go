// Package metrics holds allocation-free, lock-free statistics for the hot
// path (Histogram, plus plain sync/atomic counters and gauges) and a small
// Registry that names them for export as JSON (this package) and to
// Prometheus (package metrics/prom), read from the atomic values only when
// someone asks: nothing on the per-frame path calls into an exporter.
package metrics

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Histogram layout: log-linear, HDR-like. Values below 2^subBits land in a
// bucket of their own (exact). Above that, each power-of-two range
// [2^e, 2^(e+1)) is split into 2^subBits equal sub-buckets, so a bucket's
// width is at most 1/16 of its lower bound and the midpoint reported by
// Quantile is within 1/32 (3.125%) of any value in the bucket.
const (
	subBits  = 4
	subCount = 1 << subBits // 16 sub-buckets per power of two
	// NumBuckets is the number of buckets covering all of uint64.
	NumBuckets = (64-subBits)*subCount + subCount // 976

	// MaxRelativeError bounds |Quantile(q) − exact| / exact for the value at
	// the rank Quantile looks up (nearest-rank definition).
	MaxRelativeError = 1.0 / (2 * subCount)
)

// bucketOf returns the bucket index of v.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - 1 // 2^e ≤ v < 2^(e+1), e ≥ subBits
	sub := int(v>>(e-subBits)) & (subCount - 1)
	return (e-subBits+1)*subCount + sub
}

// bucketBounds returns the smallest value of bucket i and its width.
func bucketBounds(i int) (lower, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	e := i/subCount + subBits - 1
	sub := uint64(i % subCount)
	shift := uint(e - subBits)
	return (subCount + sub) << shift, 1 << shift
}

// Histogram records uint64 values (nanoseconds, bytes, batch sizes) into
// fixed log-linear buckets. Record is lock-free and allocation-free and safe
// for any number of concurrent writers; for the hottest paths give each
// worker its own Histogram and Merge them when reading, which avoids
// cache-line contention. The zero Histogram is empty and ready to use. It is
// about 7.8 KB; do not copy it after first use.
type Histogram struct {
	counts [NumBuckets]atomic.Uint64
	sum    atomic.Uint64 // wraps after 2^64 total (584 years of nanoseconds)
	max    atomic.Uint64
	minInv atomic.Uint64 // ^min, so that the zero value means "no minimum yet"
}

// Record adds one value.
func (h *Histogram) Record(v uint64) { h.RecordN(v, 1) }

// RecordN adds n occurrences of the value v (for example a batch of
// same-sized frames).
func (h *Histogram) RecordN(v, n uint64) {
	if n == 0 {
		return
	}
	h.counts[bucketOf(v)].Add(n)
	h.sum.Add(v * n)
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
	inv := ^v
	for {
		m := h.minInv.Load()
		if inv <= m || h.minInv.CompareAndSwap(m, inv) {
			break
		}
	}
}

// Merge adds every value recorded in o to h (atomically per bucket; o may be
// written concurrently, in which case the values recorded meanwhile may or
// may not be included).
func (h *Histogram) Merge(o *Histogram) {
	any := false
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
			any = true
		}
	}
	if !any {
		return
	}
	h.sum.Add(o.sum.Load())
	if v := o.max.Load(); v > 0 {
		for {
			m := h.max.Load()
			if v <= m || h.max.CompareAndSwap(m, v) {
				break
			}
		}
	}
	inv := o.minInv.Load()
	for {
		m := h.minInv.Load()
		if inv <= m || h.minInv.CompareAndSwap(m, inv) {
			break
		}
	}
}

// Reset empties the histogram. Values recorded concurrently with Reset may
// be partly kept.
func (h *Histogram) Reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.sum.Store(0)
	h.max.Store(0)
	h.minInv.Store(0)
}

// Snapshot returns a copy of the histogram's state. It allocates one
// Snapshot and is meant for readers (exporters, tests, end-of-run reports),
// not for the hot path. Taken while writers run, it is not an atomic cut:
// Count, Sum, Min and Max may disagree by the few values recorded while it
// was being copied.
func (h *Histogram) Snapshot() *Snapshot {
	s := &Snapshot{}
	h.SnapshotInto(s)
	return s
}

// SnapshotInto is Snapshot into caller-owned storage (no allocation).
func (h *Histogram) SnapshotInto(s *Snapshot) {
	s.Count = 0
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.Count += c
	}
	s.Sum = h.sum.Load()
	s.Max = h.max.Load()
	s.Min = ^h.minInv.Load()
	if s.Count == 0 {
		s.Min, s.Max, s.Sum = 0, 0, 0
	}
}

// Snapshot is a point-in-time copy of a Histogram. Its methods are not
// safe to call concurrently with Merge on the same Snapshot.
type Snapshot struct {
	Count uint64 // number of values
	Sum   uint64 // sum of values (wrapping)
	Min   uint64 // smallest value (0 when Count is 0)
	Max   uint64 // largest value (0 when Count is 0)

	counts [NumBuckets]uint64
}

// Mean returns Sum/Count, or 0 when empty.
func (s *Snapshot) Mean() float64 {
	if s.Count == 0 {
		return 0
	}
	return float64(s.Sum) / float64(s.Count)
}

// Quantile returns an estimate of the q-quantile (0 ≤ q ≤ 1) using the
// nearest-rank definition: the value at rank ceil(q·Count) (rank 1 for
// q = 0) of the sorted values. The estimate is the midpoint of the bucket
// holding that rank, clamped to [Min, Max], so it is within
// MaxRelativeError of the exact value (exact below 16). Quantile(0) is Min
// and Quantile(1) is Max. An empty snapshot returns 0; q outside [0, 1] is
// clamped; NaN returns 0.
func (s *Snapshot) Quantile(q float64) uint64 {
	if s.Count == 0 || math.IsNaN(q) {
		return 0
	}
	if q <= 0 {
		return s.Min
	}
	if q >= 1 {
		return s.Max
	}
	rank := uint64(math.Ceil(q * float64(s.Count)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			lower, width := bucketBounds(i)
			v := lower + (width-1)/2
			if v < s.Min {
				v = s.Min
			}
			if v > s.Max {
				v = s.Max
			}
			return v
		}
	}
	return s.Max
}

// Merge adds o's values into s.
func (s *Snapshot) Merge(o *Snapshot) {
	if o.Count == 0 {
		return
	}
	if s.Count == 0 || o.Min < s.Min {
		s.Min = o.Min
	}
	if o.Max > s.Max {
		s.Max = o.Max
	}
	s.Count += o.Count
	s.Sum += o.Sum
	for i, c := range o.counts {
		s.counts[i] += c
	}
}

// Buckets calls fn for every non-empty bucket in increasing order with the
// bucket's value range [lower, upper] (inclusive) and its count. It lets an
// exporter build any coarser histogram it needs.
func (s *Snapshot) Buckets(fn func(lower, upper, count uint64)) {
	for i, c := range s.counts {
		if c != 0 {
			lower, width := bucketBounds(i)
			fn(lower, lower+(width-1), c)
		}
	}
}
