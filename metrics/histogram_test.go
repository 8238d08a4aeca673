package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestBucketMapping(t *testing.T) {
	check := func(v uint64) {
		i := bucketOf(v)
		if i < 0 || i >= NumBuckets {
			t.Fatalf("bucketOf(%d) = %d out of range", v, i)
		}
		lo, w := bucketBounds(i)
		if v < lo || v-lo >= w {
			t.Fatalf("v=%d in bucket %d = [%d, +%d)", v, i, lo, w)
		}
		if lo >= subCount && float64(w)/float64(lo) > 1.0/subCount {
			t.Fatalf("bucket %d width %d / lower %d exceeds 1/%d", i, w, lo, subCount)
		}
	}
	for v := uint64(0); v < 1<<16; v++ {
		check(v)
	}
	for e := 0; e < 64; e++ {
		for _, d := range []int64{-2, -1, 0, 1, 2} {
			check(uint64(int64(1)<<e + d))
		}
	}
	check(math.MaxUint64)
	// Buckets tile the value space with no gap or overlap.
	for i := 1; i < NumBuckets; i++ {
		plo, pw := bucketBounds(i - 1)
		lo, _ := bucketBounds(i)
		if plo+pw != lo {
			t.Fatalf("gap/overlap between bucket %d and %d", i-1, i)
		}
	}
	if lo, w := bucketBounds(NumBuckets - 1); lo+(w-1) != math.MaxUint64 {
		t.Fatal("last bucket does not end at MaxUint64")
	}
}

func exactQuantile(sorted []uint64, q float64) uint64 {
	if q <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// Quantile estimates are within MaxRelativeError of the exact nearest-rank
// quantile, on several distributions.
func TestQuantileAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() uint64{
		"uniform 0..1e6":     func() uint64 { return rng.Uint64N(1_000_000) },
		"lognormal latency":  func() uint64 { return uint64(math.Exp(rng.NormFloat64()*1.5 + 10)) },
		"exponential":        func() uint64 { return uint64(rng.ExpFloat64() * 5000) },
		"small ints":         func() uint64 { return rng.Uint64N(40) },
		"bimodal frames":     func() uint64 { return []uint64{64, 1514, 9000}[rng.IntN(3)] + rng.Uint64N(10) },
		"full uint64 range":  func() uint64 { return rng.Uint64() >> rng.UintN(64) },
		"pareto heavy tail":  func() uint64 { return uint64(1000 / math.Pow(rng.Float64()+1e-12, 1/1.2)) },
		"constant":           func() uint64 { return 123456789 },
		"powers of two only": func() uint64 { return 1 << rng.UintN(63) },
	}
	qs := []float64{0, 0.001, 0.01, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1}
	for name, gen := range dists {
		var h Histogram
		vals := make([]uint64, 200_000)
		var sum uint64
		for i := range vals {
			vals[i] = gen()
			h.Record(vals[i])
			sum += vals[i]
		}
		slices.Sort(vals)
		s := h.Snapshot()
		if s.Count != uint64(len(vals)) || s.Min != vals[0] || s.Max != vals[len(vals)-1] || s.Sum != sum {
			t.Errorf("%s: count/min/max/sum = %d/%d/%d/%d, want %d/%d/%d/%d", name, s.Count, s.Min, s.Max, s.Sum, len(vals), vals[0], vals[len(vals)-1], sum)
		}
		worst := 0.0
		for _, q := range qs {
			exact := exactQuantile(vals, q)
			got := s.Quantile(q)
			var rel float64
			if exact != got {
				rel = math.Abs(float64(got)-float64(exact)) / float64(exact)
			}
			if exact < subCount && got != exact {
				t.Errorf("%s: q=%g: small value %d estimated %d (must be exact)", name, q, exact, got)
			}
			if rel > MaxRelativeError {
				t.Errorf("%s: q=%g: estimate %d vs exact %d, relative error %.4f > %.4f", name, q, got, exact, rel, MaxRelativeError)
			}
			worst = max(worst, rel)
		}
		t.Logf("%-20s worst relative error %.5f (bound %.5f)", name, worst, MaxRelativeError)
	}
}

func TestSnapshotEdgeCases(t *testing.T) {
	var h Histogram
	s := h.Snapshot()
	if s.Count != 0 || s.Min != 0 || s.Max != 0 || s.Mean() != 0 || s.Quantile(0.5) != 0 {
		t.Fatalf("empty snapshot: %+v", s)
	}
	h.Record(0)
	h.Record(math.MaxUint64)
	s = h.Snapshot()
	if s.Min != 0 || s.Max != math.MaxUint64 || s.Quantile(0) != 0 || s.Quantile(1) != math.MaxUint64 || s.Quantile(0.5) != 0 {
		t.Fatalf("extremes: %+v q0=%d q.5=%d q1=%d", s, s.Quantile(0), s.Quantile(0.5), s.Quantile(1))
	}
	if s.Quantile(math.NaN()) != 0 || s.Quantile(-1) != 0 || s.Quantile(2) != math.MaxUint64 {
		t.Fatal("out-of-range q")
	}
	h.Reset()
	if h.Snapshot().Count != 0 {
		t.Fatal("Reset")
	}
	h.RecordN(100, 5)
	h.RecordN(7, 0)
	s = h.Snapshot()
	if s.Count != 5 || s.Sum != 500 || s.Min != 100 || s.Max != 100 {
		t.Fatalf("RecordN: %+v", s)
	}
	var n int
	s.Buckets(func(lo, up, c uint64) {
		n++
		if lo > 100 || up < 100 || c != 5 {
			t.Fatalf("bucket [%d,%d] count %d", lo, up, c)
		}
	})
	if n != 1 {
		t.Fatal("Buckets")
	}
}

func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, all Histogram
	for i := 0; i < 10000; i++ {
		v := rng.Uint64N(1 << 30)
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	var empty Histogram
	a.Merge(&empty)
	sa, sb := a.Snapshot(), b.Snapshot()
	sa.Merge(sb)
	sa.Merge(empty.Snapshot())
	if *sa != *all.Snapshot() {
		t.Fatal("Snapshot.Merge differs from recording everything in one histogram")
	}
	a.Merge(&b)
	if *a.Snapshot() != *all.Snapshot() {
		t.Fatal("Histogram.Merge differs from recording everything in one histogram")
	}
	var c Histogram
	c.Merge(&all)
	if *c.Snapshot() != *all.Snapshot() {
		t.Fatal("Merge into empty histogram")
	}
}

// Many writers and a concurrent reader (go test -race ./metrics/).
func TestConcurrentRecord(t *testing.T) {
	var h Histogram
	const writers, per = 4, 50_000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		var s Snapshot
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.SnapshotInto(&s)
			_ = s.Quantile(0.99)
		}
	}()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				h.Record(uint64(w*per + i + 1))
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	<-readerDone
	s := h.Snapshot()
	n := uint64(writers * per)
	if s.Count != n || s.Min != 1 || s.Max != n || s.Sum != n*(n+1)/2 {
		t.Fatalf("after concurrent writes: %+v", s)
	}
}

func TestRecordNoAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(1000, func() { h.Record(12345) }); n != 0 {
		t.Fatalf("Record allocates %v", n)
	}
	var s Snapshot
	if n := testing.AllocsPerRun(10, func() { h.SnapshotInto(&s); _ = s.Quantile(0.99) }); n != 0 {
		t.Fatalf("SnapshotInto+Quantile allocates %v", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	v := uint64(1)
	b.ReportAllocs()
	for b.Loop() {
		v = v*6364136223846793005 + 1442695040888963407
		h.Record(v >> 40)
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := uint64(1)
		for pb.Next() {
			v = v*6364136223846793005 + 1442695040888963407
			h.Record(v >> 40)
		}
	})
}
