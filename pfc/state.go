package pfc

import (
	"fmt"
	"math"
)

// State is the pause state of the NumClasses traffic classes of one
// transmitter, driven by the PAUSE/PFC frames it receives.
//
// Each class has an absolute resume time on the caller's monotonic clock
// (nanoseconds, ≥ 0). A class is paused while now < its resume time. A
// pause frame restarts a class's timer with the new value (longer or
// shorter, as 802.1Qbb specifies); quanta 0 resumes the class at once.
//
// The zero State has every class running. State is not safe for concurrent
// use; it belongs to the one worker that owns the port's transmit side.
type State struct {
	until [NumClasses]int64
}

// Apply updates the state from a decoded frame received at time now on a
// link of linkSpeed bits/s. A PFC frame affects the classes whose
// class-enable bit is set; a PAUSE frame affects every class. Apply returns
// ErrLinkSpeed for linkSpeed 0 and ErrOpcode for an unknown opcode; in both
// cases the state is unchanged. It does not allocate on success.
func (s *State) Apply(f *Frame, now int64, linkSpeed uint64) error {
	if linkSpeed == 0 {
		return ErrLinkSpeed
	}
	switch f.Opcode {
	case OpPause:
		u := resumeTime(now, f.Quanta[0], linkSpeed)
		for c := range s.until {
			s.until[c] = u
		}
	case OpPFC:
		for c := range s.until {
			if f.ClassEnable&(1<<c) != 0 {
				s.until[c] = resumeTime(now, f.Quanta[c], linkSpeed)
			}
		}
	default:
		return fmt.Errorf("%w: apply opcode %#04x", ErrOpcode, f.Opcode)
	}
	return nil
}

func resumeTime(now int64, q uint16, linkSpeed uint64) int64 {
	if q == 0 {
		return 0
	}
	d := QuantaToNanos(q, linkSpeed)
	if now > math.MaxInt64-d {
		return math.MaxInt64
	}
	return now + d
}

// Paused reports whether class (0..7) is paused at time now. A class out of
// range is reported as not paused.
func (s *State) Paused(class int, now int64) bool {
	if uint(class) >= NumClasses {
		return false
	}
	return now < s.until[class]
}

// PausedMask returns a bit vector with bit c set for every class paused at
// time now: one call per poll-loop iteration answers every class.
func (s *State) PausedMask(now int64) uint8 {
	var m uint8
	for c, u := range s.until {
		if now < u {
			m |= 1 << c
		}
	}
	return m
}

// ResumeAt returns the time at which class resumes: a time > now while it is
// paused, or a time ≤ now (0 if it was never paused or was resumed
// explicitly) when it is running. A class out of range returns 0.
func (s *State) ResumeAt(class int) int64 {
	if uint(class) >= NumClasses {
		return 0
	}
	return s.until[class]
}

// NextResume returns the earliest resume time after now among the paused
// classes, and false if no class is paused at now. A poll loop can use it to
// know when to look at its queues again.
func (s *State) NextResume(now int64) (int64, bool) {
	next, ok := int64(math.MaxInt64), false
	for _, u := range s.until {
		if now < u && u <= next {
			next, ok = u, true
		}
	}
	return next, ok
}

// Reset resumes every class (for example when the link goes down or its mode changes).
func (s *State) Reset() { s.until = [NumClasses]int64{} }
