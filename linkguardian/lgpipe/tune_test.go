package lgpipe

import (
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/linkguardian"
)

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

// TestUntunedThresholds: until a flight time is measured the receiver
// starts at initialResume, or with the kernel's send path at the highest
// threshold tune may set (what the credit window can put in the reorder
// buffer), pause = resume + 2 frames; thresholds given are kept.
func TestUntunedThresholds(t *testing.T) {
	const mtu, credit = 1500, 3584
	frame := mtu + 18
	for _, c := range []struct {
		name       string
		given      int // --lg-resume-threshold (0: none)
		fastSend   bool
		wantResume int
	}{
		{"worker path", 0, false, initialResume},
		{"kernel send path", 0, true, credit*frame - 2*frame},
		{"kernel send path, threshold given", 100 << 10, true, 100 << 10},
	} {
		lc := Config{MTU: mtu, ResumeThreshold: c.given}
		if err := lc.defaults(ModeLG); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		lc.credit = credit
		lc.untunedThresholds(c.fastSend)
		if lc.ResumeThreshold != c.wantResume || lc.PauseThreshold != linkguardian.PauseThreshold(c.wantResume, frame) {
			t.Errorf("%s: resume %d, pause %d; want %d and %d", c.name, lc.ResumeThreshold, lc.PauseThreshold, c.wantResume, linkguardian.PauseThreshold(c.wantResume, frame))
		}
		if got := tunedResume(int64(time.Hour), 1e12, frame, credit); c.fastSend && c.given == 0 && lc.ResumeThreshold != got {
			t.Errorf("%s: untuned resume %d is not the most tune sets (%d)", c.name, lc.ResumeThreshold, got)
		}
	}
}

// The tuned ACK delay is the p99 retransmission delay, kept between
// minAckDelay and half the longest dummy wait (the ACK must be back before
// the peer probes for it), which it is until a delay is measured.
func TestTunedAckDelay(t *testing.T) {
	for _, c := range []struct{ retx, wait, want int64 }{
		{150_000, 500_000, 150_000},
		{5_000, 500_000, minAckDelay},
		{2_000_000, 500_000, 250_000},
		{2_000_000, 10_000, minAckDelay},
	} {
		if got := tunedAckDelay(c.retx, c.wait); got != c.want {
			t.Errorf("tunedAckDelay(%d, %d) = %d, want %d", c.retx, c.wait, got, c.want)
		}
	}
	// The receiver ACKs at once a quarter of the credit window, and the
	// core's configuration carries it.
	c := Config{credit: 1792}
	if err := c.defaults(ModeLG); err != nil {
		t.Fatal(err)
	}
	r := c.core(ModeLG, "both", [6]byte{}, [6]byte{}).Receiver
	if r.AckEvery != 448 {
		t.Errorf("AckEvery %d for a credit of 1792, want 448", r.AckEvery)
	}
	if want := linkguardian.DefaultSenderConfig().DummyWaitMax / 2; r.AckDelay != want {
		t.Errorf("AckDelay %d before any measurement, want half the default DummyWaitMax, %d", r.AckDelay, want)
	}
	c.DummyWaitMax, c.AckDelay = time.Millisecond, 0
	if r := c.core(ModeLG, "both", [6]byte{}, [6]byte{}).Receiver; r.AckDelay != 500_000 {
		t.Errorf("AckDelay %d with --lg-dummy-wait-max 1ms, want 500µs", r.AckDelay)
	}
	c.AckDelay = 7 * time.Microsecond
	if r := c.core(ModeLG, "both", [6]byte{}, [6]byte{}).Receiver; r.AckDelay != 7000 {
		t.Errorf("AckDelay %d with --lg-ack-delay 7µs", r.AckDelay)
	}
}

// TestDefaultTxBuffer: the credit window is the whole ring when the link
// has a priority lane (or the kernel sends), half of it when copies and
// notifications share it.
func TestDefaultTxBuffer(t *testing.T) {
	for _, c := range []struct {
		ring      uint32
		wholeRing bool
		want      int
	}{{2048, true, 2048}, {2048, false, 1024}, {4096, false, 2048}, {4096, true, 4096}, {2, false, 2}, {1, true, 2}} {
		if got := DefaultTxBuffer(c.ring, c.wholeRing); got != c.want {
			t.Errorf("defaultTxBuffer(ring %d, whole ring %v) = %d; want %d", c.ring, c.wholeRing, got, c.want)
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
		if got := CreditWindow(c.txBuffer, c.ring); got != c.want {
			t.Errorf("creditWindow(TX buffer %d, ring %d) = %d; want %d", c.txBuffer, c.ring, got, c.want)
		}
	}
}

// TestAutoNeedsEvidenceToSwitchOff: --lg-auto may switch protection off for a
// low loss rate only once the window holds enough frames to tell a rate at
// which protection is on (ProtectOn, 1e-8 by default) from 0: with no loss,
// more than 3/ProtectOn frames (the "rule of three" 95% bound). A loss-free
// window of 10^4..10^7 frames says nothing about 1e-8. Switching on, to
// lgnb, and off for a high rate need no such wait.
func TestAutoNeedsEvidenceToSwitchOff(t *testing.T) {
	pol := linkguardian.DefaultPolicy()
	need := uint64(3 / pol.ProtectOn)
	for _, cur := range []linkguardian.Delivery{linkguardian.InOrder, linkguardian.NonBlocking} {
		for _, n := range []uint64{10_000, 1_000_000, 10_000_000, need / 2} {
			if got := autoMode(pol, n, 0, cur); got != cur {
				t.Errorf("from %s, %d frames and no loss: %s; want %s (too few frames to tell %g from 0)", cur, n, got, cur, pol.ProtectOn)
			}
		}
		if got := autoMode(pol, 2*need, 0, cur); got != linkguardian.Monitor {
			t.Errorf("from %s, %d frames and no loss: %s; want monitor", cur, 2*need, got)
		}
		// One loss in 2·need frames: the point rate (≈1.7e-9) is above ProtectOff
		// (1e-9): stays protected (lg: below NBOff).
		if got := autoMode(pol, 2*need, 1, cur); got != linkguardian.InOrder {
			t.Errorf("from %s, 1 loss in %d frames: %s; want lg", cur, 2*need, got)
		}
		// Disabled for a high rate at once.
		if got := autoMode(pol, 10_000, 2_000, cur); got != linkguardian.Monitor {
			t.Errorf("from %s, loss 0.17: %s; want monitor (disabled)", cur, got)
		}
	}
	if got := autoMode(pol, 10_000, 1, linkguardian.Monitor); got != linkguardian.InOrder {
		t.Errorf("from monitor, 1 loss in 10^4: %s; want lg", got)
	}
	if got := autoMode(pol, 10_000, 0, linkguardian.Monitor); got != linkguardian.Monitor {
		t.Errorf("from monitor, no loss: %s; want monitor", got)
	}
	if got := autoMode(pol, 10_000, 200, linkguardian.InOrder); got != linkguardian.NonBlocking {
		t.Errorf("from lg, loss 2e-2: %s; want lgnb", got)
	}
}
