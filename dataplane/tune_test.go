package dataplane

import "testing"

// The tuned resume threshold is flight time × drain rate (Appendix B.1),
// raised to minResume and capped where the credit window could no longer
// reach the pause threshold.
func TestTunedResume(t *testing.T) {
	const frame, window = 1518, 1024
	for _, c := range []struct {
		flight int64
		rate   float64
		want   int
	}{
		{200_000, 2e9, minResume},                 // 200 µs at 2 Gbit/s = 50 kB: raised to minResume
		{1_000_000, 2e9, 250_000},                 // 1 ms at 2 Gbit/s
		{10_000_000, 2e9, window*frame - 2*frame}, // 2.5 MB: beyond the window
	} {
		if got := tunedResume(c.flight, c.rate, frame, window); got != c.want {
			t.Errorf("tunedResume(%d ns, %g bit/s) = %d, want %d", c.flight, c.rate, got, c.want)
		}
	}
}
