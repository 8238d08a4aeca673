package linkguardian

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidPolicy is wrapped by Policy.Validate errors.
var ErrInvalidPolicy = errors.New("linkguardian: invalid policy")

// Decision is what a link should run: the receiver's Delivery and, when
// that protects the link (InOrder or NonBlocking), Copies ≥ 1, the number of
// copies to retransmit per lost frame. Protection off is Delivery Monitor
// with Copies 0: the link stays sequenced, so that its receiver keeps
// measuring the loss rate, but nothing lost is asked for again. A Decision
// without copies, such as the zero Decision, is off too.
type Decision struct {
	Delivery Delivery
	Copies   int
}

// Protected reports whether d protects the link: InOrder or NonBlocking
// delivery with at least one copy.
func (d Decision) Protected() bool {
	return (d.Delivery == InOrder || d.Delivery == NonBlocking) && d.Copies >= 1
}

func (d Decision) String() string {
	if !d.Protected() {
		return "off"
	}
	return fmt.Sprintf("%s×%d", d.Delivery, d.Copies)
}

// Policy maps a measured loss rate to a Decision, with hysteresis on every
// boundary so that a rate hovering near a threshold does not flap.
//
// Thresholds are loss rates (fractions, not percent) and must satisfy
//
//	0 < ProtectOff ≤ ProtectOn ≤ NBOff ≤ NBOn and ProtectOn < DisableOff ≤ DisableOn,
//
// with NBOn and DisableOn allowed to be +Inf to switch that rule off.
//
// From off:       protect when ProtectOn ≤ rate < DisableOff, in lgnb if rate ≥ NBOn else lg.
// From protected: go off when rate < ProtectOff or rate ≥ DisableOn;
//
//	lg → lgnb when rate ≥ NBOn; lgnb → lg when rate < NBOff.
//
// Decide keeps no state: the hysteresis comes from the current Decision. One
// consequence: a link that is off because its rate was low and whose rate
// jumps straight into [DisableOff, DisableOn) stays off, as if it had been
// disabled for high loss; both are "too lossy or not lossy enough to help".
type Policy struct {
	// Target is the effective loss rate that Copies aims for (e.g. 1e-8).
	Target float64
	// MaxCopies bounds Decision.Copies; 0 means the package's MaxCopies.
	MaxCopies int

	// ProtectOn: switch protection on at or above this rate. The paper's
	// corruptd activates LinkGuardian at L ≥ 1e-8.
	ProtectOn float64
	// ProtectOff: switch protection off below this rate.
	ProtectOff float64
	// NBOn: fall back from lg to lgnb at or above this rate (+Inf: never).
	NBOn float64
	// NBOff: return from lgnb to lg below this rate.
	NBOff float64
	// DisableOn: disable protection at or above this rate (+Inf: never).
	DisableOn float64
	// DisableOff: a link disabled for high loss may be protected again below this rate.
	DisableOff float64
}

// DefaultPolicy returns a starting point: target and activation at 1e-8 as
// in the paper, off again below 1e-9, lgnb from 1e-2 (back to lg below
// 5e-3), disabled from 1e-1 (back below 5e-2). Only the 1e-8 values come
// from the paper; the fallback thresholds are this project's guesses, to be
// tuned with measurements of lg against lgnb on the link in question.
func DefaultPolicy() Policy {
	return Policy{
		Target:     1e-8,
		MaxCopies:  MaxCopies,
		ProtectOn:  1e-8,
		ProtectOff: 1e-9,
		NBOn:       1e-2,
		NBOff:      5e-3,
		DisableOn:  1e-1,
		DisableOff: 5e-2,
	}
}

// Validate reports a threshold ordering that would make Decide flap or never
// protect.
func (p Policy) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...)
	}
	switch {
	case !(p.Target > 0 && p.Target < 1):
		return bad("Target %g must be in (0, 1)", p.Target)
	case p.MaxCopies < 0:
		return bad("MaxCopies %d must be ≥ 0 (0 means %d)", p.MaxCopies, MaxCopies)
	case !(p.ProtectOff > 0):
		return bad("ProtectOff %g must be > 0", p.ProtectOff)
	case !(p.ProtectOff <= p.ProtectOn):
		return bad("ProtectOff %g must be ≤ ProtectOn %g", p.ProtectOff, p.ProtectOn)
	case !(p.ProtectOn <= p.NBOff):
		return bad("ProtectOn %g must be ≤ NBOff %g", p.ProtectOn, p.NBOff)
	case !(p.NBOff <= p.NBOn):
		return bad("NBOff %g must be ≤ NBOn %g", p.NBOff, p.NBOn)
	case !(p.ProtectOn < p.DisableOff):
		return bad("ProtectOn %g must be < DisableOff %g, or protection can never switch on", p.ProtectOn, p.DisableOff)
	case !(p.DisableOff <= p.DisableOn):
		return bad("DisableOff %g must be ≤ DisableOn %g", p.DisableOff, p.DisableOn)
	case math.IsInf(p.ProtectOn, 0) || math.IsInf(p.DisableOff, 0) && !math.IsInf(p.DisableOn, 1):
		return bad("ProtectOn and DisableOff must be finite (DisableOff may be +Inf only with DisableOn +Inf)")
	}
	return nil
}

// Decide returns the Decision for a measured loss rate given the current
// one. A NaN rate (no measurement) keeps the current decision. Copies are
// recomputed from rate on every call (they carry no hysteresis: changing
// them is harmless). A current Decision that is not Protected is off.
func (p Policy) Decide(rate float64, current Decision) Decision {
	if math.IsNaN(rate) {
		return current
	}
	off := Decision{Delivery: Monitor}
	var mode Delivery
	if !current.Protected() {
		if rate < p.ProtectOn || rate >= p.DisableOff {
			return off
		}
		mode = InOrder
		if rate >= p.NBOn {
			mode = NonBlocking
		}
	} else {
		if rate < p.ProtectOff || rate >= p.DisableOn {
			return off
		}
		mode = current.Delivery
		if mode == InOrder && rate >= p.NBOn {
			mode = NonBlocking
		} else if mode == NonBlocking && rate < p.NBOff {
			mode = InOrder
		}
	}
	max := p.MaxCopies
	if max == 0 {
		max = MaxCopies
	}
	return Decision{Delivery: mode, Copies: CopiesLimit(p.Target, rate, max)}
}
