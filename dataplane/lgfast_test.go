package dataplane

import (
	"testing"

	"github.com/linkfabric/linkfabric/bpf"
)

// lgOnFastPath makes upLG start lg, lgnb and monitor with LinkGuardian's
// receive fast path (--fastpath xdp). TestLGFastPathSuite sets it.
var lgOnFastPath bool

// TestLGFastPathSuite runs the loss-recovery tests of the AF_XDP path with
// the kernel delivering in-order frames at both receivers and the core
// handling the rest: every frame once, in order (lg), losses detected and
// recovered as before, and the kernel carrying most of the frames.
func TestLGFastPathSuite(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	for _, tc := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"BernoulliLossRecovered", TestLGBernoulliLossRecovered},
		{"NBBernoulliLossRecovered", TestLGNBBernoulliLossRecovered},
		{"BurstyLossRecovered", TestLGBurstyLossRecovered},
		{"HidesLossFromTCP", TestLGHidesLossFromTCP},
	} {
		t.Run(tc.name, tc.f)
	}
}

// TestLGFastPathLinkFlap is TestLGLinkFlap's lg case on the kernel receive
// path: link0 of sw1 down for 2 s under TCP both ways; TCP resumes, and the
// kernel delivers again after the flap.
func TestLGFastPathLinkFlap(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	linkFlap(t, ModeLG)
}

// TestLGFastPathCarries: with 1 % loss on sw1→sw2, sw2's kernel delivers
// most frames and its core the rest; the point changes hands with the holes;
// the direction reports path xdp; nothing is missing, duplicated or out of
// order.
func TestLGFastPathCarries(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	r, _, s2, _ := runLG(t, ModeLG, LGConfig{Copies: 3, AckTimeout: lgAckTimeout}, bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 21}, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	rs := s2.Receiver
	if rs.FastDelivered < rs.Delivered/2 || rs.FastHandOffs < 10 || rs.FastClaims < 10 {
		t.Errorf("kernel delivered %d of %d, hand-offs %d, claims %d: want most frames in the kernel and the point changing hands with the holes",
			rs.FastDelivered, rs.Delivered, rs.FastHandOffs, rs.FastClaims)
	}
	fp := r.bed.sw2.FastPath()
	if len(fp) != 1 || fp[0].Path != FastPathXDP || fp[0].Frames != rs.FastDelivered {
		t.Errorf("sw2's fast path %+v; want one direction link0 → host0 on xdp that carried %d frames", fp, rs.FastDelivered)
	}
	lg := r.bed.sw2.Link().Program()
	if c, _ := lg.LGRx(); c != nil {
		if cc := c.Counters(); cc.StripErr != 0 {
			t.Errorf("strip errors %d", cc.StripErr)
		}
	}
}

// TestLGFastPathCorruption: with one frame in 100 getting a bit flipped on
// sw1→sw2 (and loss 10⁻³), the kernel delivers only frames whose CRC
// trailer checks; every flipped frame reaches the worker, which counts and
// drops it, and LinkGuardian recovers it like a loss: everything reaches h2
// once and in order.
func TestLGFastPathCorruption(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-3, FlipProb: 1e-2, Seed: 22}
	r, _, s2, st := runLG(t, ModeLG, LGConfig{Copies: 2, AckTimeout: lgAckTimeout}, imp, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	corrupt := r.bed.sw2.LGStats().Integrity.Corrupt.Load()
	if st.Flipped == 0 || corrupt != st.Flipped {
		t.Errorf("the impairment flipped a bit in %d frames; sw2 counted %d corrupt: every flipped frame must fail the check", st.Flipped, corrupt)
	}
	if rs := s2.Receiver; rs.FastDelivered < rs.Delivered/2 {
		t.Errorf("kernel delivered %d of %d", rs.FastDelivered, rs.Delivered)
	}
}
