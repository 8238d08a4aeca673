// Package scenario is the form the simulators' scenarios share: a named
// run that measures figures, each with the range it must fall in, so one
// command prints and checks every simulator's suite alike.
package scenario

import (
	"fmt"
	"math"
	"time"
)

// Figure is one measured value of a scenario and the range it must fall in
// for the scenario to pass (NaN: that side is open).
type Figure struct {
	Name     string // snake_case
	Value    float64
	Min, Max float64
	Why      string // what the range stands for
}

// OK reports whether the value is within its range.
func (f *Figure) OK() bool {
	return !math.IsNaN(f.Value) && (math.IsNaN(f.Min) || f.Value >= f.Min) && (math.IsNaN(f.Max) || f.Value <= f.Max)
}

// Range renders the accepted range.
func (f *Figure) Range() string {
	switch {
	case math.IsNaN(f.Min) && math.IsNaN(f.Max):
		return "(reported)"
	case math.IsNaN(f.Min):
		return fmt.Sprintf("≤ %g", f.Max)
	case math.IsNaN(f.Max):
		return fmt.Sprintf("≥ %g", f.Min)
	case f.Min == f.Max:
		return fmt.Sprintf("= %g", f.Min)
	}
	return fmt.Sprintf("[%g, %g]", f.Min, f.Max)
}

// Result is what a scenario measured.
type Result struct {
	Scenario string
	Seed     uint64
	Figures  []Figure
	SimNs    int64  // simulated time, all runs
	Events   uint64 // events, all runs
	Wall     time.Duration
}

// Add records a figure that must fall in [lo, hi] (NaN: that side open).
func (r *Result) Add(name string, v, lo, hi float64, why string) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: v, Min: lo, Max: hi, Why: why})
}

// Report records a figure without a range.
func (r *Result) Report(name string, v float64, why string) {
	r.Add(name, v, math.NaN(), math.NaN(), why)
}

// Pass reports whether every figure is within its range.
func (r *Result) Pass() bool {
	for i := range r.Figures {
		if !r.Figures[i].OK() {
			return false
		}
	}
	return true
}

// Get returns the named figure's value (NaN if absent).
func (r *Result) Get(name string) float64 {
	for _, f := range r.Figures {
		if f.Name == name {
			return f.Value
		}
	}
	return math.NaN()
}

// Scenario is a named experiment on simulated fabrics.
type Scenario struct {
	Name  string
	Brief string
	Slow  bool // takes more than ~10 s of wall time
	Run   func(seed uint64) (*Result, error)
}

// Find returns the scenario of that name in list.
func Find(list []Scenario, name string) (Scenario, bool) {
	for _, sc := range list {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}
