package pfc

import (
	"errors"
	"math"
	"testing"
)

func TestStatePFC(t *testing.T) {
	var s State
	if s.PausedMask(0) != 0 {
		t.Fatal("zero State must have every class running")
	}
	// 1 Gb/s: one quantum = 512 ns. Pause class 1 for 100 quanta and class 5 for 10.
	f := NewPFC(srcA, 1<<1|1<<5, [8]uint16{1: 100, 5: 10, 2: 999 /* not enabled */})
	if err := s.Apply(&f, 1000, Speed1G); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		now  int64
		mask uint8
	}{
		{1000, 1<<1 | 1<<5},
		{1000 + 5120 - 1, 1<<1 | 1<<5},
		{1000 + 5120, 1 << 1}, // class 5 expires exactly at its resume time
		{1000 + 51200 - 1, 1 << 1},
		{1000 + 51200, 0},
	}
	for _, st := range steps {
		if m := s.PausedMask(st.now); m != st.mask {
			t.Errorf("PausedMask(%d) = %08b, want %08b", st.now, m, st.mask)
		}
		for c := 0; c < NumClasses; c++ {
			if got, want := s.Paused(c, st.now), st.mask&(1<<c) != 0; got != want {
				t.Errorf("Paused(%d, %d) = %v, want %v", c, st.now, got, want)
			}
		}
	}
	if r := s.ResumeAt(1); r != 1000+51200 {
		t.Errorf("ResumeAt(1) = %d", r)
	}
	if r := s.ResumeAt(2); r != 0 {
		t.Errorf("ResumeAt(2) = %d for a never-paused class", r)
	}
	if next, ok := s.NextResume(1000); !ok || next != 1000+5120 {
		t.Errorf("NextResume(1000) = %d, %v", next, ok)
	}
	if next, ok := s.NextResume(1000 + 5120); !ok || next != 1000+51200 {
		t.Errorf("NextResume after class 5 expiry = %d, %v", next, ok)
	}
	if _, ok := s.NextResume(1000 + 51200); ok {
		t.Error("NextResume reports a pause after all expired")
	}
}

func TestStateRefreshAndResume(t *testing.T) {
	var s State
	pause := NewPFC(srcA, 1<<3, [8]uint16{3: 1000})
	s.Apply(&pause, 0, Speed1G) // until 512000
	// A shorter pause restarts the timer: it is not max(old, new).
	short := NewPFC(srcA, 1<<3, [8]uint16{3: 1})
	s.Apply(&short, 100, Speed1G)
	if s.ResumeAt(3) != 612 || s.Paused(3, 612) || !s.Paused(3, 611) {
		t.Fatalf("restart with shorter pause: resume at %d", s.ResumeAt(3))
	}
	// Refresh before expiry extends.
	s.Apply(&pause, 600, Speed1G)
	if !s.Paused(3, 100000) {
		t.Fatal("refresh did not extend the pause")
	}
	// Quanta 0 resumes at once.
	resume := NewPFC(srcA, 1<<3, [8]uint16{})
	s.Apply(&resume, 700, Speed1G)
	if s.Paused(3, 700) || s.PausedMask(700) != 0 {
		t.Fatal("resume (quanta 0) did not resume class 3")
	}
}

func TestStatePause8023x(t *testing.T) {
	var s State
	other := NewPFC(srcA, 1<<6, [8]uint16{6: 0xFFFF})
	s.Apply(&other, 0, Speed100G)
	p := NewPause(srcA, 10) // 51.2 ns at 100G → 52
	if err := s.Apply(&p, 50, Speed100G); err != nil {
		t.Fatal(err)
	}
	if s.PausedMask(50) != 0xFF || s.PausedMask(101) != 0xFF || s.PausedMask(102) != 0 {
		t.Fatalf("PAUSE must pause all classes for 52 ns: %08b %08b %08b", s.PausedMask(50), s.PausedMask(101), s.PausedMask(102))
	}
	s.Apply(&other, 200, Speed100G)
	s.Reset()
	if s.PausedMask(200) != 0 {
		t.Fatal("Reset left classes paused")
	}
}

func TestStateErrors(t *testing.T) {
	var s State
	f := NewPFC(srcA, 0xFF, [8]uint16{1, 1, 1, 1, 1, 1, 1, 1})
	if err := s.Apply(&f, 0, 0); !errors.Is(err, ErrLinkSpeed) {
		t.Fatalf("speed 0: %v", err)
	}
	f.Opcode = 7
	if err := s.Apply(&f, 0, Speed10G); !errors.Is(err, ErrOpcode) {
		t.Fatalf("opcode 7: %v", err)
	}
	if s.PausedMask(0) != 0 {
		t.Fatal("failed Apply changed the state")
	}
	if s.Paused(-1, 0) || s.Paused(8, 0) || s.ResumeAt(99) != 0 {
		t.Fatal("out-of-range class")
	}
	// Saturation near the end of the clock.
	f.Opcode = OpPFC
	s.Apply(&f, math.MaxInt64-1, Speed1G)
	if !s.Paused(0, math.MaxInt64-1) || s.ResumeAt(0) != math.MaxInt64 {
		t.Fatal("resume time must saturate, not wrap")
	}
}
