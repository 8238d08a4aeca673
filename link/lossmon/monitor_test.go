package lossmon

import (
	"math"
	"sync"
	"testing"
)

const ms = int64(1_000_000)

func newMon(t *testing.T, cfg Config) *Monitor {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewErrors(t *testing.T) {
	for _, cfg := range []Config{{Window: 0}, {Window: -1}, {Window: 10, Buckets: -1}, {Window: 10, Buckets: 11}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	m := newMon(t, Config{Window: 1000 * ms})
	if m.Window() != 1000*ms {
		t.Fatalf("default 16 buckets: window %d", m.Window())
	}
}

func TestRateWindow(t *testing.T) {
	// 10 buckets of 100 ms.
	m := newMon(t, Config{Window: 1000 * ms, Buckets: 10, MinSamples: 1000})
	if r, ok := m.Rate(0); ok || r != 0 {
		t.Fatalf("empty monitor: %g %v", r, ok)
	}
	// 1 s of traffic at 1e-3 loss, observed every ms in small batches.
	for now := int64(0); now < 1000*ms; now += ms {
		m.Observe(now, 999, 1)
	}
	r, ok := m.Rate(999 * ms)
	if !ok || math.Abs(r-1e-3) > 1e-12 {
		t.Fatalf("steady 1e-3: rate %g ok %v", r, ok)
	}
	// Then 0.5 s with no loss: the first half of the lossy second falls out.
	for now := 1000 * ms; now < 1500*ms; now += ms {
		m.Observe(now, 1000, 0)
	}
	rcv, lost := m.Totals(1499 * ms)
	if rcv != 500*999+500*1000 || lost != 500 {
		t.Fatalf("after slide: received %d lost %d", rcv, lost)
	}
	// Reading later without new observations: old buckets expire.
	if rcv, lost := m.Totals(1999 * ms); rcv != 500*1000 || lost != 0 {
		t.Fatalf("at 1999 ms: received %d lost %d", rcv, lost)
	}
	if rcv, lost := m.Totals(2500 * ms); rcv != 0 || lost != 0 {
		t.Fatalf("at 2500 ms everything expired: %d %d", rcv, lost)
	}
	// Long idle gap, then new traffic: no stale bucket survives ring reuse.
	m.Observe(10_000*ms, 10, 10)
	if r, ok := m.Rate(10_000 * ms); ok || r != 0.5 {
		t.Fatalf("after idle gap: %g %v (want 0.5, below MinSamples)", r, ok)
	}
}

func TestMinSamples(t *testing.T) {
	m := newMon(t, Config{Window: 100 * ms, Buckets: 4, MinSamples: 100})
	m.Observe(0, 98, 1) // 99 frames
	if r, ok := m.Rate(0); ok || r != 1.0/99 {
		t.Fatalf("99 samples: %g %v", r, ok)
	}
	m.Observe(1, 1, 0)
	if r, ok := m.Rate(1); !ok || r != 0.01 {
		t.Fatalf("100 samples: %g %v", r, ok)
	}
}

func TestTimeGoesBackwards(t *testing.T) {
	m := newMon(t, Config{Window: 100 * ms, Buckets: 4})
	m.Observe(50*ms, 10, 0)
	m.Observe(10*ms, 5, 1) // older than the current bucket: counted in it
	if rcv, lost := m.Totals(50 * ms); rcv != 15 || lost != 1 {
		t.Fatalf("got %d/%d", rcv, lost)
	}
}

func TestObserveTotals(t *testing.T) {
	m := newMon(t, Config{Window: 10_000 * ms, Buckets: 10})
	m.ObserveTotals(0, 1_000_000, 50) // baseline only
	if rcv, lost := m.Totals(0); rcv != 0 || lost != 0 {
		t.Fatalf("baseline counted: %d %d", rcv, lost)
	}
	m.ObserveTotals(1000*ms, 2_000_000, 60)
	m.ObserveTotals(2000*ms, 2_999_990, 70)
	if rcv, lost := m.Totals(2000 * ms); rcv != 1_999_990 || lost != 20 {
		t.Fatalf("deltas: %d %d", rcv, lost)
	}
	m.ObserveTotals(3000*ms, 5, 0) // NIC reset: re-baseline
	m.ObserveTotals(4000*ms, 1005, 1)
	if rcv, lost := m.Totals(4000 * ms); rcv != 1_999_990+1000 || lost != 21 {
		t.Fatalf("after reset: %d %d", rcv, lost)
	}
	if m.CounterResets() != 1 {
		t.Fatalf("CounterResets = %d", m.CounterResets())
	}
}

func TestObserveNoAllocs(t *testing.T) {
	m := newMon(t, Config{Window: 1000 * ms, Buckets: 16})
	now := int64(0)
	n := testing.AllocsPerRun(10000, func() {
		now += 7 * ms
		m.Observe(now, 64, 1)
	})
	if n != 0 {
		t.Fatalf("Observe allocates %v", n)
	}
}

// One writer, concurrent readers (run with -race). Readers must never see
// more frames than were written, and the final count is exact.
func TestConcurrentReaders(t *testing.T) {
	m := newMon(t, Config{Window: 1 << 40, Buckets: 8})
	const N = 200_000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rcv, lost := m.Totals(1 << 38)
				if rcv+lost > 2*N {
					t.Errorf("reader saw %d frames", rcv+lost)
					return
				}
			}
		}()
	}
	for i := int64(0); i < N; i++ {
		m.Observe(i<<20, 1, 1)
	}
	close(stop)
	wg.Wait()
	if rcv, lost := m.Totals(N << 20); rcv != N || lost != N {
		t.Fatalf("final %d %d", rcv, lost)
	}
}

func BenchmarkObserve(b *testing.B) {
	m, _ := New(Config{Window: 1000 * ms, Buckets: 16})
	now := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 100
		m.Observe(now, 32, 0)
	}
}
