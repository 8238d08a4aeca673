package fmcore

import (
	"fmt"
)

// Capacity is a host whose receive capacity alternates, from Start on,
// between the line rate (high, the first Period) and Low times it (the
// next Period), and so on: a forwarder whose rate oscillates (the paper's
// §6.4), emulated by its switch port's rate (tdma oscillate). Before Start
// it is high.
type Capacity struct {
	Host   int     // the host's index (0-based)
	Start  int64   // ns, on the FM's clock
	Period int64   // ns, > 0
	Low    float64 // 0 < Low < 1
	// Burst is how far ahead of the line rate a window's first bytes may
	// reach the port (the senders' TBF burst), in ns of the line rate:
	// what a window may leave in the port at its end, at any rate.
	Burst int64
	// Buffer is the port's buffer in ns of the line rate (0: not known).
	// A window whole in a low phase leaves in it up to its Burst and
	// (1 − Low) of the rest of its open part: New refuses a slot whose
	// window would not fit.
	Buffer int64
}

// Check validates c for n hosts, slot length slot and guard guard (as
// New does).
func (c Capacity) Check(n int, slot, guard int64) error {
	switch {
	case c.Host < 0 || c.Host >= n:
		return fmt.Errorf("fmcore: capacity of host %d: want 0..%d", c.Host, n-1)
	case c.Period < slot:
		return fmt.Errorf("fmcore: capacity period %d ns shorter than a slot (%d ns)", c.Period, slot)
	case !(c.Low > 0 && c.Low < 1):
		return fmt.Errorf("fmcore: capacity low %g: want more than 0 and less than 1", c.Low)
	case c.Burst < 0:
		return fmt.Errorf("fmcore: capacity burst %d ns: want at least 0", c.Burst)
	}
	if left := c.left(slot - guard); c.Buffer > 0 && left > float64(c.Buffer) {
		return fmt.Errorf("fmcore: a window of %d ns in a low phase (%g of the line rate) leaves %.0f ns of the line rate in host %d's port, more than its buffer (%d ns): shorter slots, or a larger buffer",
			slot-guard, c.Low, left, c.Host, c.Buffer)
	}
	return nil
}

// left is what a window open for open ns, whole in a low phase, leaves in
// the port at its end, in ns of the line rate.
func (c Capacity) left(open int64) float64 {
	return (1-c.Low)*float64(open-min(c.Burst, open)) + float64(min(c.Burst, open))
}

// phase is the phase number of time t: negative before Start, then 0
// (high), 1 (low), 2 (high), ...
func (c Capacity) phase(t int64) int64 {
	if t < c.Start {
		return -1
	}
	return (t - c.Start) / c.Period
}

// low says whether phase p is a low one.
func low(p int64) bool { return p >= 0 && p%2 == 1 }

// capGate opens windows into one Capacity's host, slot by slot in time
// order, by a model of the host's port: a queue of line-rate time (q) fed
// by the windows it opened (a window's first Burst at its open, the rest
// at the line rate until its open part has passed) and drained at the
// line rate in high phases, at Low times it in low ones. A window that
// lies whole in high phases opens: it drains as fast as it comes, and
// what it leaves drains in the guard after it. Any other, in a low phase
// or across a boundary, opens only once the port has drained every window
// before it (q is 0 at its open). So the port holds at most one window
// (and what a high phase left) from the windows the FM opened, and over
// any stretch of low phases they carry at most one window more than the
// low rate does.
type capGate struct {
	c                 Capacity
	slot, guard, open int64   // slot length, guard, open part (slot − guard)
	q                 float64 // ns of the line rate the port holds
	at                int64   // the time q is for
}

func newCapGate(c Capacity, slot, guard int64) *capGate {
	return &capGate{c: c, slot: slot, guard: guard, open: slot - guard}
}

// advance moves q to time to, with bytes arriving at in times the line
// rate meanwhile.
func (g *capGate) advance(to int64, in float64) {
	for g.at < to {
		end, rate := to, 1.0
		if p := g.c.phase(g.at); p < 0 {
			end = min(end, g.c.Start)
		} else {
			end = min(end, g.c.Start+(p+1)*g.c.Period)
			if low(p) {
				rate = g.c.Low
			}
		}
		g.q = max(g.q+(in-rate)*float64(end-g.at), 0)
		g.at = end
	}
}

// allow says whether the window of the slot that starts at s may open.
// The window is taken as [s+guard, s+slot+guard]: its open part, and as
// much later as a staggered window may close.
func (g *capGate) allow(s int64) bool {
	a, b := s+g.guard, s+g.slot+g.guard
	g.advance(a, 0)
	// A window is a slot long, a phase at least as long: no low phase
	// lies between two high ones.
	if (low(g.c.phase(a)) || low(g.c.phase(b))) && g.q > 0 {
		return false
	}
	burst := min(g.c.Burst, g.open)
	g.q += float64(burst)
	g.advance(a+g.open-burst, 1)
	return true
}
