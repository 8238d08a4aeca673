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

// TestDefaultTxBuffer: the credit window is the whole ring when the link
// has a priority lane, half of it when copies and notifications share it.
func TestDefaultTxBuffer(t *testing.T) {
	for _, c := range []struct {
		ring   uint32
		queues int
		want   int
	}{{2048, 2, 2048}, {2048, 4, 2048}, {2048, 1, 1024}, {4096, 1, 2048}, {2, 1, 2}} {
		if got := defaultTxBuffer(c.ring, c.queues); got != c.want {
			t.Errorf("defaultTxBuffer(ring %d, %d queues) = %d; want %d", c.ring, c.queues, got, c.want)
		}
	}
}

// TestCreditWindow: the credit window is the TX buffer but leaves the peer's
// RX ring an eighth for frames that take no credit.
func TestCreditWindow(t *testing.T) {
	for _, c := range []struct {
		txBuffer int
		ring     uint32
		want     int
	}{{2048, 2048, 1792}, {1024, 2048, 1024}, {4096, 2048, 1792}, {2048, 4096, 2048}, {2, 2, 2}} {
		if got := creditWindow(c.txBuffer, c.ring); got != c.want {
			t.Errorf("creditWindow(TX buffer %d, ring %d) = %d; want %d", c.txBuffer, c.ring, got, c.want)
		}
	}
}
