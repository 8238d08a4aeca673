package scenario

import (
	"math"
	"testing"
)

func TestFigureRange(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		f   Figure
		ok  bool
		rng string
	}{
		{Figure{Value: 3, Min: nan, Max: nan}, true, "(reported)"},
		{Figure{Value: 3, Min: nan, Max: 2}, false, "≤ 2"},
		{Figure{Value: 3, Min: 3, Max: nan}, true, "≥ 3"},
		{Figure{Value: 0, Min: 0, Max: 0}, true, "= 0"},
		{Figure{Value: 1.5, Min: 1, Max: 2}, true, "[1, 2]"},
		{Figure{Value: nan, Min: nan, Max: nan}, false, "(reported)"},
	} {
		if c.f.OK() != c.ok || c.f.Range() != c.rng {
			t.Errorf("%+v: OK %v Range %q, want %v %q", c.f, c.f.OK(), c.f.Range(), c.ok, c.rng)
		}
	}
}

func TestResult(t *testing.T) {
	r := &Result{Scenario: "s"}
	r.Report("seen", 7, "reported only")
	r.Add("kept", 1, 0, 2, "in range")
	if !r.Pass() || r.Get("seen") != 7 || r.Get("kept") != 1 || !math.IsNaN(r.Get("absent")) {
		t.Fatalf("%+v: pass %v", r, r.Pass())
	}
	r.Add("over", 3, 0, 2, "out of range")
	if r.Pass() {
		t.Error("a figure out of range passed")
	}
	list := []Scenario{{Name: "a"}, {Name: "b", Brief: "second"}}
	if sc, ok := Find(list, "b"); !ok || sc.Brief != "second" {
		t.Errorf("Find b: %+v %v", sc, ok)
	}
	if _, ok := Find(list, "c"); ok {
		t.Error("Find found a scenario not in the list")
	}
}
