package tdmasim

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// Dist is a delay distribution: an inverse CDF given by quantile points,
// linear in between. P runs from 0 to 1; V (ns) is non-decreasing.
type Dist struct {
	Name string
	P    []float64
	V    []int64
}

// Const is a fixed delay.
func Const(v int64) Dist {
	return Dist{Name: fmt.Sprintf("const %d µs", v/1000), P: []float64{0, 1}, V: []int64{v, v}}
}

// Uniform is a delay uniform in [lo, hi].
func Uniform(lo, hi int64) Dist {
	return Dist{Name: fmt.Sprintf("uniform %d–%d µs", lo/1000, hi/1000), P: []float64{0, 1}, V: []int64{lo, hi}}
}

// MeasuredCtlDelay is the FM-send → host-kernel-receive delay of a grant
// measured on this machine's kind (design §2.3: 4 hosts on a Linux bridge,
// RT hybrid FM, one sendmmsg, SO_TIMESTAMPNS): ~9 µs for the first host
// served, p50 42–46 µs, p99 118 µs, p99.9 191 µs (the spread's); the
// maximum of 260 µs is an assumption that bounds the tail.
var MeasuredCtlDelay = Dist{Name: "measured ctl delay (§2.3)", P: []float64{0, 0.5, 0.99, 0.999, 1}, V: []int64{9_000, 42_000, 118_000, 191_000, 260_000}}

// MeasuredWake is the host agent's wake-up after the kernel time stamp
// (design §2.2–2.3, RT receivers): ~40 µs base wake of a halted vCPU, p50
// 75 µs and p99 171 µs (process-wake rows minus kernel-time-stamp rows);
// the 300 µs maximum is an assumption.
var MeasuredWake = Dist{Name: "measured wake (§2.3)", P: []float64{0, 0.5, 0.99, 1}, V: []int64{40_000, 75_000, 171_000, 300_000}}

// MeasuredTimer is the lateness of a locked-thread hybrid timer (RT, design
// §2.2, 1 ms slots): p50 0, p99 45 µs, p99.9 137 µs, max 180 µs.
var MeasuredTimer = Dist{Name: "measured timer (§2.2)", P: []float64{0, 0.5, 0.99, 0.999, 1}, V: []int64{0, 100, 45_000, 137_000, 180_000}}

// MeasuredOpenLate is how late the raw agents' first frame left after
// their window opened, measured on the 4-host star (tdma shuffle, 40 MiB
// flows, window_fill and open_late_*: p50 31–67 µs, p99 0.9–1.1 ms, 1.5–2.2 %
// of the windows' open time); p95 and the 1.5 ms maximum are assumptions
// that give that mean. Four agents share two CPUs there and all open at
// once. As Timer it delays every host's open.
var MeasuredOpenLate = Dist{Name: "measured open lateness (star, shared CPUs)", P: []float64{0, 0.5, 0.95, 0.99, 1}, V: []int64{0, 65_000, 150_000, 1_000_000, 1_500_000}}

// Check reports a malformed distribution.
func (d Dist) Check() error {
	if len(d.P) < 2 || len(d.P) != len(d.V) || d.P[0] != 0 || d.P[len(d.P)-1] != 1 {
		return fmt.Errorf("distribution %q: want quantile points from p=0 to p=1", d.Name)
	}
	for i := 1; i < len(d.P); i++ {
		if d.P[i] < d.P[i-1] || d.V[i] < d.V[i-1] || d.V[0] < 0 {
			return fmt.Errorf("distribution %q: quantiles must be non-decreasing and ≥ 0", d.Name)
		}
	}
	return nil
}

// Min is the smallest value.
func (d Dist) Min() int64 { return d.V[0] }

// Max is the largest value.
func (d Dist) Max() int64 { return d.V[len(d.V)-1] }

// Jitter is Max − Min.
func (d Dist) Jitter() int64 { return d.Max() - d.Min() }

// Sample draws a value.
func (d Dist) Sample(r *rand.Rand) int64 {
	u := r.Float64()
	i := sort.SearchFloat64s(d.P, u)
	if i == 0 {
		return d.V[0]
	}
	if i >= len(d.P) {
		return d.V[len(d.V)-1]
	}
	p0, p1 := d.P[i-1], d.P[i]
	if p1 == p0 {
		return d.V[i]
	}
	return d.V[i-1] + int64(float64(d.V[i]-d.V[i-1])*(u-p0)/(p1-p0))
}

// Scaled returns d with its spread above the minimum multiplied by f.
func (d Dist) Scaled(f float64) Dist {
	out := Dist{Name: fmt.Sprintf("%s ×%.2g", d.Name, f), P: d.P, V: make([]int64, len(d.V))}
	for i, v := range d.V {
		out.V[i] = d.V[0] + int64(float64(v-d.V[0])*f)
	}
	return out
}
