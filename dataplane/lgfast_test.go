package dataplane_test

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)

// lgOnFastPath makes upLG start lg, lgnb and monitor with LinkGuardian's
// receive fast path (--fastpath xdp). TestLGFastPathSuite sets it.
var lgOnFastPath bool

// TestLGFastPathSuite runs the loss-recovery tests of the AF_XDP path with
// the kernel delivering in-order frames at both receivers and the core
// handling the rest: every frame once, in order (lg), losses detected and
// recovered as before, and the kernel carrying frames.
func TestLGFastPathSuite(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	runLossSuite(t)
}

// runLossSuite runs the loss-recovery veth tests as subtests (under the
// fast path the caller set up).
func runLossSuite(t *testing.T) {
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
	linkFlap(t, lgpipe.ModeLG)
}

// TestLGFastPathCarries: with 1 % loss on sw1→sw2, sw2's kernel delivers
// frames and its core the rest; the point changes hands with the holes and
// is the kernel's again at rest; the direction reports path xdp and what the
// kernel carried; nothing is missing, duplicated or out of order.
func TestLGFastPathCarries(t *testing.T) {
	lgOnFastPath = true
	defer func() { lgOnFastPath = false }()
	r, _, _, _ := runLG(t, lgpipe.ModeLG, lgpipe.Config{Copies: 3, AckTimeout: lgAckTimeout}, bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 21}, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	rs := checkKernelDelivered(t, r.bed.sw2)
	fp := r.bed.sw2.FastPath()
	if len(fp) != 2 || fp[0].Path != dataplane.FastPathXDP || fp[0].Frames != rs.FastDelivered ||
		fp[1].From != "host0" || fp[1].Path != dataplane.FastPathAFXDP || !strings.Contains(fp[1].Reason, "2 queues") {
		t.Errorf("sw2's fast path %+v; want link0 → host0 on xdp that carried %d frames, and host0 → link0 on afxdp for the link's 2 queues", fp, rs.FastDelivered)
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
	r, _, _ := runCorruption(t, linkcrc.CRC32C)
	checkKernelDelivered(t, r.bed.sw2)
}

// checkKernelDelivered waits until sw2's receiver is at rest with the
// kernel owning the in-order point again, and asserts that the kernel
// delivered frames and that the core claimed the point (at a hole) and
// handed it back every time: hand-offs = claims + 1. How much the kernel
// carries depends on the machine (the core keeps the point while it
// recovers a hole, a slow core for longer): logged, not asserted.
func checkKernelDelivered(t *testing.T, d *dataplane.Dataplane) *linkguardian.ReceiverStats {
	t.Helper()
	var rs *linkguardian.ReceiverStats
	waitFor(t, "sw2's kernel owns the in-order point again", func() bool {
		rs = lgpipe.StatsOf(d).Core().Receiver
		return rs != nil && rs.FastHandOffs == rs.FastClaims+1
	})
	t.Logf("sw2's kernel delivered %d of %d frames (%.0f %%); %d hand-offs, %d claims",
		rs.FastDelivered, rs.Delivered, 100*float64(rs.FastDelivered)/float64(max(rs.Delivered, 1)), rs.FastHandOffs, rs.FastClaims)
	if rs.FastDelivered == 0 || rs.FastClaims == 0 {
		t.Errorf("sw2's receiver %+v: want frames delivered by the kernel and the point claimed by the core at the holes", *rs)
	}
	return rs
}

// lgLinkQueues is the link's queue count for upLG and linkFlap: one with
// the send fast path, which runs on a link of one queue only
// (lgTxBlocked), else two (queue 1 the priority lane), on which the kernel
// path is the receive half alone.
func lgLinkQueues() int {
	if lgFastSend {
		return 1
	}
	return 2
}

// lgFastPathMode is the --fastpath of upLG and linkFlap with lgOnFastPath:
// xdp (both halves, or fail) on the one-queue link of lgFastSend, auto (the
// receive half, the send half falling back) on two queues.
func lgFastPathMode() dataplane.FastPath {
	if lgFastSend {
		return dataplane.FastPathXDP
	}
	return dataplane.FastPathAuto
}

// lgFastSend makes upLG and linkFlap (with lgOnFastPath) run
// LinkGuardian's send fast path too (a link of one queue): the kernel numbers,
// copies, stamps and sends host frames at each sender (lf_lg_tx).
var lgFastSend bool

// withFastSend runs f with both halves of the fast path (on a one-queue
// link: lgLinkQueues).
func withFastSend(t *testing.T, f func()) {
	t.Helper()
	lgOnFastPath, lgFastSend = true, true
	defer func() { lgOnFastPath, lgFastSend = false, false }()
	f()
}

// TestLGFastSendSuite runs the loss-recovery tests with both halves of the
// fast path at both ends: every frame once, in order (lg), losses detected
// and recovered, and bulk TCP through lg at 10⁻³ without retransmissions
// (HidesLossFromTCP: a host frame numbered out of its order at a hand-off
// shows there, as it did before the exact count of frames passed to Go).
func TestLGFastSendSuite(t *testing.T) {
	withFastSend(t, func() { runLossSuite(t) })
}

// TestLGFastSendCarries: with 1 % loss on sw1→sw2 and both halves on,
// sw1's kernel numbers and sends host frames (the losses retransmitted by
// its core from the ring), sw2's kernel delivers frames and its core the
// rest; both directions report path xdp and what the kernel carried, and are
// the kernel's again at rest; nothing is missing, duplicated or out of order.
// (How much each kernel carries depends on the machine's speed: logged.)
func TestLGFastSendCarries(t *testing.T) {
	withFastSend(t, func() {
		r, s1, _, _ := runLG(t, lgpipe.ModeLG, lgpipe.Config{Copies: 3, AckTimeout: lgAckTimeout}, bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 21}, lgFrameSize, lgRate)
		checkDelivery(t, r, true)
		rs := checkKernelDelivered(t, r.bed.sw2)
		fp := r.bed.sw2.FastPath()
		if len(fp) != 2 || fp[0].Path != dataplane.FastPathXDP || fp[0].Frames != rs.FastDelivered || fp[1].Path != dataplane.FastPathXDP || fp[1].From != "host0" {
			t.Errorf("sw2's fast path %+v; want link0 → host0 on xdp that carried %d frames, then host0 → link0 on xdp", fp, rs.FastDelivered)
		}
		checkFastSend(t, r, s1)
	})
}

// TestLGFastSendCorruption: TestLGFastPathCorruption with both halves, with
// each integrity trailer: sw1's kernel seals what it sends (lf_crc32c or
// lf_csum), every frame that reaches sw2 unflipped passes the check and
// every flipped one fails it.
func TestLGFastSendCorruption(t *testing.T) {
	for _, m := range []linkcrc.Integrity{linkcrc.CRC32C, linkcrc.Csum} {
		t.Run(m.String(), func(t *testing.T) {
			withFastSend(t, func() {
				r, s1, _ := runCorruption(t, m)
				checkFastSend(t, r, s1)
			})
		})
	}
}

// runCorruption sends lgFrames frames through lg, the link's frames
// carrying the integrity trailer of mode m, with 10⁻³ loss and 1 % bit
// flips on sw1→sw2: everything delivered once and in order, and sw2
// counted exactly the flipped frames as corrupt.
func runCorruption(t *testing.T, m linkcrc.Integrity) (r *lgRun, s1, s2 lgpipe.Core) {
	t.Helper()
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-3, FlipProb: 1e-2, Seed: 22}
	r, s1, s2, st := runLGLink(t, lgpipe.ModeLG, dataplane.LinkConfig{Integrity: m}, lgpipe.Config{Copies: 2, AckTimeout: lgAckTimeout}, imp, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	corrupt := lgpipe.StatsOf(r.bed.sw2).Integrity.Corrupt.Load()
	if st.Flipped == 0 || corrupt != st.Flipped {
		t.Errorf("the impairment flipped a bit in %d frames; sw2 counted %d corrupt: every flipped frame must fail the check, no other", st.Flipped, corrupt)
	}
	return r, s1, s2
}

// TestLGFastSendLinkFlap runs TestLGLinkFlap's lg case (iperf3 --bidir
// across a 2 s outage of sw1's link0) with both halves: the session leaving
// Up takes sending back from the kernel, which gets it again once the
// session is up; TCP resumes both ways.
func TestLGFastSendLinkFlap(t *testing.T) {
	withFastSend(t, func() { linkFlap(t, lgpipe.ModeLG) })
}

// checkFastSend checks sw1's send half after a run: its kernel numbered
// and sent data frames, the core adopted every one of them, the direction
// host0 → link0 reports path xdp and the kernel's count, and the kernel
// lost no numbered frame for want of head- or tailroom.
func checkFastSend(t *testing.T, r *lgRun, _ lgpipe.Core) {
	t.Helper()
	// At rest the kernel owns sending again (every claim was followed by a
	// hand-off). How much it sent depends on the machine: logged.
	var ss *linkguardian.SenderStats
	waitFor(t, "sw1's kernel owns sending again", func() bool {
		ss = lgpipe.StatsOf(r.bed.sw1).Core().Sender
		return ss != nil && ss.FastSendHandOffs == ss.FastSendClaims+1
	})
	t.Logf("sw1's kernel sent %d of %d data frames (%.0f %%); %d hand-offs, %d claims",
		ss.FastSent, ss.DataSent, 100*float64(ss.FastSent)/float64(max(ss.DataSent, 1)), ss.FastSendHandOffs, ss.FastSendClaims)
	if ss.FastSent == 0 {
		t.Errorf("sw1's sender %+v: want data frames sent by the kernel", *ss)
		return
	}
	fp := r.bed.sw1.FastPath()
	if len(fp) != 2 || fp[1].From != "host0" || fp[1].Path != dataplane.FastPathXDP || fp[1].Frames != ss.FastSent {
		t.Errorf("sw1's fast path %+v; want host0 → link0 on xdp that carried the %d frames the core adopted", fp, ss.FastSent)
	}
	if tx, err := r.bed.sw1.Host().Program().LGTx(); err != nil {
		t.Error(err)
	} else if c := tx.Counters(); c.StampErr != 0 || c.WakeErr != 0 || c.Sent != ss.FastSent {
		t.Errorf("sw1's send path counters %+v; core adopted %d", c, ss.FastSent)
	}
}
