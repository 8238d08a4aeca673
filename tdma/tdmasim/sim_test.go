package tdmasim

import (
	"reflect"
	"testing"

	"github.com/linkfabric/linkfabric/tdma/gate"
)

func TestDeterministicForSeed(t *testing.T) {
	c := Default()
	c.Shuffle, c.CtlLoss = 1<<20, 0.02
	a, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(c)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs of one seed differ:\n%+v\n%+v", a, b)
	}
	c.Seed = 2
	d, _ := Run(c)
	if d.Completion == a.Completion && d.CtlLost == a.CtlLost {
		t.Fatal("another seed gave the same run")
	}
}

// TestOverrunDetector: the paper's gate with the default 300 µs guard,
// shorter than its reaction (control delay + wake-up up to ~560 µs), sends
// past its slots even without loss; the same delays in lease mode do not.
// This shows the simulator's overrun and collision checks can fire.
func TestOverrunDetector(t *testing.T) {
	c := Default()
	c.Shuffle = 1 << 20
	c.Mode = gate.Paper
	p, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Mode = gate.Lease
	l, _ := Run(c)
	if p.OverrunBytes == 0 {
		t.Errorf("paper mode with a guard below its reaction: no overrun counted")
	}
	if l.OverrunBytes != 0 || l.Collisions != 0 {
		t.Errorf("lease mode: %d overrun bytes, %d collisions", l.OverrunBytes, l.Collisions)
	}
}

func TestRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{
		{Hosts: 1}, {Hosts: 9}, {MTU: 20}, {CtlLoss: 1}, {SwitchBuf: 100}, {Scheduler: "fifo"},
		{CtlDelay: Dist{P: []float64{0.5, 1}, V: []int64{1, 2}}},
	} {
		if _, err := Run(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestDist(t *testing.T) {
	d := MeasuredCtlDelay
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	c := Default()
	s, _ := newSim(c)
	below := 0
	const n = 20000
	for i := 0; i < n; i++ {
		v := d.Sample(s.rng)
		if v < d.Min() || v > d.Max() {
			t.Fatalf("sample %d outside [%d, %d]", v, d.Min(), d.Max())
		}
		if v <= 42_000 {
			below++
		}
	}
	if f := float64(below) / n; f < 0.48 || f > 0.52 {
		t.Fatalf("%.3f of samples at or below the p50 of 42 µs", f)
	}
}

// TestTinyLastPiece: a flow whose last piece is shorter than the minimum
// frame still completes (the frame is padded).
func TestTinyLastPiece(t *testing.T) {
	c := Default()
	c.Shuffle = 50*int64(c.MTU-HdrLen) + 4
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Unfinished != 0 {
		t.Fatalf("%d flows unfinished", r.Unfinished)
	}
}
