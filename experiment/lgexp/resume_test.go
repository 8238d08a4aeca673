package lgexp

import (
	"testing"
	"time"
)

// A flush of frames held during a fault is not a resumption: resumed waits
// for a share of the rate before, sustained over the window.
func TestResumedNeedsSustainedRate(t *testing.T) {
	s := &rxSampler{}
	end := time.Unix(1000, 0)
	var b uint64
	// 100 Mbit/s before = 12.5 kB per 10 ms sample. After end: a 1 MB
	// flush in one sample, 300 ms of nothing, then 50 Mbit/s.
	for i := -50; i < 300; i++ {
		switch {
		case i < 0:
			b += 125_000
		case i == 2:
			b += 1 << 20
		case i >= 32:
			b += 62_500
		}
		s.at = append(s.at, end.Add(time.Duration(i)*sampleEvery))
		s.bytes = append(s.bytes, [2]uint64{b, b})
	}
	got := s.resumed(end, [2]float64{100e6, 100e6}, 0.25, 500*time.Millisecond)
	// Flow starts in the sample interval ending at i=33 (320-330 ms).
	if got[0] != 310 || got[1] != 310 {
		t.Fatalf("resumed %v ms; want 310 (the sustained flow, not the flush at 20 ms)", got)
	}
	if got := s.resumed(end, [2]float64{1000e6, 1000e6}, 0.25, 500*time.Millisecond); got[0] != -1 {
		t.Fatalf("resumed %v ms at 50 of 1000 Mbit/s; want -1", got)
	}
	// The flush arrived in the interval ending at i=2.
	if got := s.first(end); got[0] != 20 || got[1] != 20 {
		t.Fatalf("first bytes after %v ms; want 20 (the flush)", got)
	}
}

// A late sampler (samples 30-50 ms apart instead of 10) still sees a
// sustained flow.
func TestResumedIrregularSamples(t *testing.T) {
	s := &rxSampler{}
	end := time.Unix(1000, 0)
	var b uint64
	at := end.Add(-time.Second)
	gaps := []time.Duration{30, 50, 40, 10, 30}
	for i := 0; at.Before(end.Add(time.Second)); i++ {
		g := gaps[i%len(gaps)] * time.Millisecond
		at = at.Add(g)
		b += uint64(g.Seconds() * 100e6 / 8) // 100 Mbit/s throughout
		s.at = append(s.at, at)
		s.bytes = append(s.bytes, [2]uint64{b, b})
	}
	got := s.resumed(end, [2]float64{100e6, 100e6}, 0.25, 500*time.Millisecond)
	if got[0] < 0 || got[0] > 50 {
		t.Fatalf("resumed %v ms with a steady flow sampled irregularly; want within the first gap", got)
	}
}
