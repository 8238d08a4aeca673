package pfc

import (
	"math"
	"testing"
)

// conversion is a case of a quanta/time conversion at a line speed.
type conversion[In, Out any] struct {
	in    In
	speed uint64
	want  Out
}

// checkConversions checks f (named name) on every case.
func checkConversions[In any, Out comparable](t *testing.T, name string, f func(In, uint64) Out, cases []conversion[In, Out]) {
	t.Helper()
	for _, c := range cases {
		if got := f(c.in, c.speed); got != c.want {
			t.Errorf("%s(%v, %d) = %v, want %v", name, c.in, c.speed, got, c.want)
		}
	}
}

func TestQuantaToNanos(t *testing.T) {
	checkConversions(t, "QuantaToNanos", QuantaToNanos, []conversion[uint16, int64]{
		{0, Speed10G, 0},
		{1, Speed1G, 512},           // 512 bits at 1 bit/ns
		{1, Speed10G, 52},           // 51.2 ns, rounded up
		{1, Speed100G, 6},           // 5.12 ns, rounded up
		{10, Speed100G, 52},         // 51.2 ns
		{100, Speed100G, 512},       // exact
		{0xFFFF, Speed1G, 33553920}, // 65535*512 ns ≈ 33.5 ms
		{0xFFFF, Speed10G, 3355392},
		{0xFFFF, Speed25G, 1342157}, // 1342156.8 rounded up
		{0xFFFF, Speed100G, 335540}, // 335539.2 rounded up
		{5, 0, 0},                   // unknown speed
	})
}

func TestNanosToQuanta(t *testing.T) {
	checkConversions(t, "NanosToQuanta", NanosToQuanta, []conversion[int64, uint16]{
		{0, Speed10G, 0},
		{-5, Speed10G, 0},
		{1, Speed10G, 1},            // any positive time needs ≥ 1 quantum
		{512, Speed1G, 1},           // exact
		{513, Speed1G, 2},           // rounded up
		{1000, Speed100G, 196},      // 195.3 → 196
		{3355392, Speed10G, 0xFFFF}, // exactly the max
		{3355393, Speed10G, 0xFFFF}, // saturates
		{math.MaxInt64, Speed100G, 0xFFFF},
		{math.MaxInt64, math.MaxUint64, 0xFFFF},
		{1, math.MaxUint64, 0xFFFF}, // absurd speed: 1 ns is many quanta; no overflow
		{100, 0, 0},
	})
}

// Both conversions round up (a pause never ends early, a requested pause is
// always covered), so a round trip may gain at most one quantum.
func TestQuantaConversionInverse(t *testing.T) {
	for _, speed := range []uint64{Speed1G, Speed10G, Speed25G, Speed40G, Speed100G, 1_234_567} {
		for q := 0; q <= MaxQuanta; q += 97 {
			ns := QuantaToNanos(uint16(q), speed)
			if back := NanosToQuanta(ns, speed); back != uint16(q) && int(back) != q+1 {
				t.Fatalf("speed %d: q=%d → %d ns → %d quanta", speed, q, ns, back)
			}
		}
		for ns := int64(1); ns < 10_000_000; ns = ns*3 + 1 {
			q := NanosToQuanta(ns, speed)
			if q < MaxQuanta && QuantaToNanos(q, speed) < ns {
				t.Fatalf("speed %d: %d ns → %d quanta covering only %d ns", speed, ns, q, QuantaToNanos(q, speed))
			}
		}
	}
}
