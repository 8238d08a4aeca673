package cellify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Loss classes are RAIL's virtual topologies (NSDI '17, §3), kept per link
// rather than per path: every link has a class from its measured loss
// rate, every traffic class (the cell header's class: the host frame's
// 802.1p priority or DSCP class selector) is bound to a loss class, and a
// cell crosses only links of its loss class or better, at every hop. The
// edges learn what a fabric node reaches in each class from its REACH
// messages (one bitmap per class), so the choice holds end to end: a cell
// of class 1 is never sent to a fabric node that could reach its edge only
// over a gray link.
//
// A link's class is the worse of the two ends' measurements (each end
// measures the direction it receives and sends its class in its REACH);
// a link not yet measured counts as the loosest class, so traffic bound
// to a strict class waits for its links to be measured clean rather than
// risk a gray one.

// LossClass is a link's or a traffic class's loss class: 1 (the strictest)
// .. MaxLossClasses; 0 on a link: not measured.
type LossClass uint8

// MaxLossClasses is the loss classes a REACH can carry.
const MaxLossClasses = 3

// DefaultLossBounds are the default classes' bounds on a link's loss rate:
// class 1 ≤ 10⁻⁶, class 2 ≤ 10⁻³, class 3 ≤ 10⁻¹ (above the last: the link
// is excluded, ReachConfig.LossFaulty).
var DefaultLossBounds = []float64{1e-6, 1e-3, 1e-1}

// DefaultClassClear is the fraction of a class's bound a link's loss must
// fall to before the link returns to that class (hysteresis).
const DefaultClassClear = 0.5

// DefaultClassHold is how long every measurement of a link's loss must
// allow a better class before the link moves up to it. One window without
// a loss is weak evidence: a window of an idle link holds a few hundred
// REACHes, and a 1 %-loss link shows none lost in about one window in
// eight; three seconds of windows in a row (about 800 REACHes) happen for
// it once in 3,000 tries.
const DefaultClassHold = int64(3e9)

// LossClasses configures loss classes. The zero value is off: every link
// is one class and REACH carries one bitmap.
type LossClasses struct {
	// Bounds[k-1] is class k's bound on a link's measured loss rate,
	// ascending, 1..MaxLossClasses of them. nil: classes off.
	Bounds []float64
	// Clear: a link returns to a better class k once its loss is at or
	// below Clear × Bounds[k-1] (0: DefaultClassClear); it moves to a
	// worse one as soon as its loss is above its class's bound.
	Clear float64
	// Hold: a link moves up to a better class only once every loss
	// measured for Hold (ns) has allowed it, to the worst class they
	// allowed (0: DefaultClassHold; negative: at once). A link not yet
	// measured starts in the loosest class, so it earns a strict one the
	// same way. Moving down is at once.
	Hold int64
	// Of[tc] is the loss class of traffic class tc (0: the loosest).
	Of [8]LossClass
}

// hold returns Hold with its default.
func (c *LossClasses) hold() int64 {
	if c.Hold == 0 {
		return DefaultClassHold
	}
	return max(c.Hold, 0)
}

// Exclude returns the loss rate above which a link serves no class: the
// loosest bound (ReachConfig.LossFaulty with classes), 0 when off.
func (c *LossClasses) Exclude() float64 {
	if !c.On() {
		return 0
	}
	return c.Bounds[len(c.Bounds)-1]
}

// On reports whether loss classes are configured.
func (c *LossClasses) On() bool { return len(c.Bounds) > 0 }

// N is the number of loss classes (1 when off).
func (c *LossClasses) N() LossClass { return LossClass(max(len(c.Bounds), 1)) }

// For returns the loss class of traffic class tc.
func (c *LossClasses) For(tc Class) LossClass {
	k := c.Of[tc&7]
	if k == 0 || k > c.N() {
		return c.N()
	}
	return k
}

// Classify returns the class of a link whose loss rate is loss and whose
// class was cur (0: none yet): the worst class whose bound loss exceeds
// moves it down at once; it moves up to class k only once loss ≤ Clear ×
// Bounds[k-1]. A loss above the last bound keeps the loosest class (the
// link's exclusion is ReachConfig.LossFaulty's).
func (c *LossClasses) Classify(cur LossClass, loss float64) LossClass {
	n := c.N()
	if !c.On() {
		return 1
	}
	k := n
	for i, b := range c.Bounds {
		if loss <= b {
			k = LossClass(i + 1)
			break
		}
	}
	if cur == 0 || k >= cur {
		return k
	}
	// Better than cur: move up only as far as the clear margin allows.
	clr := c.Clear
	if clr == 0 {
		clr = DefaultClassClear
	}
	for j := k; j < cur; j++ {
		if loss <= clr*c.Bounds[j-1] {
			return j
		}
	}
	return cur
}

func (c *LossClasses) check() error {
	if len(c.Bounds) > MaxLossClasses {
		return fmt.Errorf("cellify: at most %d loss classes", MaxLossClasses)
	}
	for i, b := range c.Bounds {
		if !(b >= 0 && b <= 1) || i > 0 && b <= c.Bounds[i-1] {
			return errors.New("cellify: loss class bounds must ascend within [0, 1]")
		}
	}
	if !(c.Clear >= 0 && c.Clear <= 1) {
		return errors.New("cellify: LossClasses.Clear must be in [0, 1]")
	}
	for _, k := range c.Of {
		if k > c.N() {
			return fmt.Errorf("cellify: a traffic class is bound to loss class %d of %d", k, c.N())
		}
	}
	return nil
}

// ParseClassMap parses traffic class bindings "tc=k,tc=k,..." (tc 0..7, k
// a loss class 1..n) into of; traffic classes not named keep their value.
func ParseClassMap(s string, n int, of *[8]LossClass) error {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(kv), "=")
		tc, err1 := strconv.Atoi(strings.TrimSpace(a))
		k, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || tc < 0 || tc > 7 || k < 1 || k > n {
			return fmt.Errorf("cellify: class binding %q: want tc=k with traffic class tc in 0..7 and loss class k in 1..%d", kv, n)
		}
		of[tc] = LossClass(k)
	}
	return nil
}
