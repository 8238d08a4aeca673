package dataplane

import (
	"testing"

	"github.com/linkfabric/linkfabric/bpf"
)

// lgOnFastPath makes upLG start lg, lgnb and monitor with LinkGuardian's
// fast path (--fastpath xdp): both halves, the kernel numbering and sending
// host frames at the sender (lf_lg_tx) and delivering in-order frames at the
// receiver (lf_lg_rx). TestLGFastPathSuite sets it.
var lgOnFastPath bool

// TestLGFastPathSuite runs the loss-recovery tests of the AF_XDP path with
// the kernel sending host frames at both senders and delivering in-order
// frames at both receivers, and the core handling the rest: every frame once, in order (lg), losses detected and
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

// TestLGFastPathCarries: with 1 % loss on sw1→sw2, sw1's kernel numbers
// and sends most host frames (losses retransmitted by its core from the
// ring) and sw2's kernel delivers many frames and its core the rest; the
// point changes hands with the holes; both directions report path xdp and
// what the kernel carried; nothing is missing, duplicated or out of order.
//
// sw2's kernel delivers fewer frames with sw1's send half on (about 45 %
// against 89 % without it): veth puts a redirected frame on the peer's RX
// queue of the redirecting CPU (veth_select_rxq: smp_processor_id() %
// queues), so about half of what sw1's kernel sends reaches sw2's link0 on
// queue 1, which lf_lg_rx leaves to the core (one queue, one CPU: the
// order argument), and the point goes back and forth between the queues.
func TestLGFastPathCarries(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	r, s1, s2, _ := runLG(t, ModeLG, LGConfig{Copies: 3, AckTimeout: lgAckTimeout}, bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 21}, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	rs := s2.Receiver
	if rs.FastDelivered < rs.Delivered/4 || rs.FastHandOffs < 10 || rs.FastClaims < 10 {
		t.Errorf("kernel delivered %d of %d, hand-offs %d, claims %d: want many frames in the kernel and the point changing hands with the holes",
			rs.FastDelivered, rs.Delivered, rs.FastHandOffs, rs.FastClaims)
	}
	fp := r.bed.sw2.FastPath()
	if len(fp) != 2 || fp[0].Path != FastPathXDP || fp[0].Frames != rs.FastDelivered || fp[1].Path != FastPathXDP || fp[1].From != "host0" {
		t.Errorf("sw2's fast path %+v; want link0 → host0 on xdp that carried %d frames, then host0 → link0 on xdp", fp, rs.FastDelivered)
	}
	checkFastSend(t, r, s1)
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
	r, s1, s2, st := runLG(t, ModeLG, LGConfig{Copies: 2, AckTimeout: lgAckTimeout}, imp, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	corrupt := r.bed.sw2.LGStats().Integrity.Corrupt.Load()
	if st.Flipped == 0 || corrupt != st.Flipped {
		t.Errorf("the impairment flipped a bit in %d frames; sw2 counted %d corrupt: every flipped frame must fail the check", st.Flipped, corrupt)
	}
	if rs := s2.Receiver; rs.FastDelivered < rs.Delivered/4 {
		t.Errorf("kernel delivered %d of %d", rs.FastDelivered, rs.Delivered)
	}
	// sw1's kernel sealed what it sent: every frame that reached sw2
	// unflipped passed the check (corrupt == flipped above).
	checkFastSend(t, r, s1)
}

// checkFastSend checks sw1's send half after a run: its kernel numbered
// and sent most data frames, the core adopted every one of them, the
// direction host0 → link0 reports path xdp and the kernel's count, and the
// kernel lost no numbered frame for want of head- or tailroom.
func checkFastSend(t *testing.T, r *lgRun, s1 LGCore) {
	t.Helper()
	ss := s1.Sender
	if ss == nil || ss.FastSent < ss.DataSent/2 || ss.FastSendHandOffs == 0 {
		t.Errorf("sw1's sender %+v: want most data frames sent by the kernel", ss)
		return
	}
	fp := r.bed.sw1.FastPath()
	if len(fp) != 2 || fp[1].From != "host0" || fp[1].Path != FastPathXDP || fp[1].Frames != ss.FastSent || fp[1].Missed != 0 {
		t.Errorf("sw1's fast path %+v; want host0 → link0 on xdp that carried the %d frames the core adopted", fp, ss.FastSent)
	}
	if tx, err := r.bed.sw1.Host().Program().LGTx(); err != nil {
		t.Error(err)
	} else if c := tx.Counters(); c.StampErr != 0 || c.WakeErr != 0 || c.Sent != ss.FastSent {
		t.Errorf("sw1's send path counters %+v; core adopted %d", c, ss.FastSent)
	}
}

// TestLGFastPathLinkFlap runs TestLGLinkFlap's lg case (iperf3 --bidir
// across a 2 s outage of sw1's link0) with both halves of the fast path:
// the session leaving Up takes sending back from the kernel, and TCP
// resumes both ways once it is up again and the kernel sends again.
func TestLGFastPathLinkFlap(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	linkFlap(t, ModeLG)
}
