package dataplane

// LinkGuardian on veth: in-process dataplanes in sw1 and sw2 of a pair
// testbed, loss injected by sw2's link port program (XDP on receive, so it
// hits sw1→sw2), numbered frames from h1 (traffic.Generator) checked on h2
// (traffic.Sink), and the counters of the impairment stage, the dataplanes
// and the LinkGuardian core cross-checked against what the sink saw.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/traffic"
	"github.com/vishvananda/netlink"
)

const (
	lgFrames    = 100_000 // numbered frames per run
	lgFrameSize = 500     // bytes, no FCS
	lgRate      = 50_000  // frames/s: well within what this 2-core machine sustains in lg mode
	lgLoss      = 1e-2
)

// lgBed is a pair testbed with a dataplane on each switch.
type lgBed struct {
	tb       *netns.Testbed
	sw1, sw2 *Dataplane
}

// upLG brings up a fresh pair testbed (prefix base lfq) and starts mode on
// both switches, with impairment imp (nil: none) on sw2's link port, that is
// on the sw1→sw2 direction.
func upLG(t *testing.T, mode Mode, lgc LGConfig, imp *bpf.ImpairConfig) *lgBed {
	t.Helper()
	tb := netns.TestUp(t, "lfq", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	b := &lgBed{tb: tb}
	b.sw1 = startSwitch(t, tb.NS("sw1"), Config{Mode: mode, LG: lgc})
	b.sw2 = startSwitch(t, tb.NS("sw2"), Config{Mode: mode, LG: lgc})
	if imp != nil {
		if err := b.sw2.Link().Program().SetImpair(*imp); err != nil {
			t.Fatalf("impairment on sw2 link0: %v", err)
		}
	}
	return b
}

// impairStats reads the impairment counters of sw2's link port.
func (b *lgBed) impairStats(t *testing.T) bpf.ImpairStats {
	t.Helper()
	s, err := b.sw2.Link().Program().ImpairStats()
	if err != nil {
		t.Fatalf("sw2 link0 impairment counters: %v", err)
	}
	return s
}

// ingressDrops counts frames h1 sent that sw1's dataplane never took (its
// host port's AF_XDP RX ring was full, or the kernel dropped them): losses
// that are not the link's.
func (b *lgBed) ingressDrops(t *testing.T) uint64 {
	t.Helper()
	var n uint64
	for _, s := range b.sw1.Host().Sockets() {
		st, err := s.Stats()
		if err != nil {
			t.Fatalf("sw1 host0 XDP statistics: %v", err)
		}
		n += st.RxRingFull + st.RxDropped
	}
	return n
}

func macOf(t *testing.T, ns, dev string) []byte {
	t.Helper()
	var hw []byte
	if err := netns.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return err
		}
		hw = l.Attrs().HardwareAddr
		return nil
	}); err != nil {
		t.Fatalf("%s in %s: %v", dev, ns, err)
	}
	return hw
}

// send sends count numbered frames of size bytes from h1 at rate frames/s
// and returns what the sink on h2 saw and how many frames the generator's
// kernel took. It waits (bounded) until every frame arrived and nothing more
// arrives for a while, so late duplicates are counted too.
func (b *lgBed) send(t *testing.T, count uint64, size int, rate float64) (traffic.Report, uint64) {
	t.Helper()
	h1, h2 := b.tb.NS("h1"), b.tb.NS("h2")
	src, dst := macOf(t, h1, "eth0"), macOf(t, h2, "eth0")
	var sink *traffic.Sink
	if err := netns.Do(h2, func() error {
		var err error
		sink, err = traffic.NewSink("eth0", 1, count)
		return err
	}); err != nil {
		t.Fatalf("sink on h2 eth0: %v", err)
	}
	defer sink.Close()
	var gen *traffic.Generator
	if err := netns.Do(h1, func() error {
		var err error
		gen, err = traffic.NewGenerator("eth0", traffic.Template{Dst: dst, Src: src, Stream: 1, Size: size})
		return err
	}); err != nil {
		t.Fatalf("generator on h1 eth0: %v", err)
	}
	defer gen.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sink.Run(sctx, 0)
	}()
	start := time.Now()
	sent := gen.Run(ctx, 0, count, 0, rate)
	genTime := time.Since(start)
	// Wait for the tail: until all arrived and 300 ms passed without a
	// frame, or 3 s without one (something is missing), at most 15 s.
	prev, last := sink.Received(), time.Now()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		time.Sleep(25 * time.Millisecond)
		n := sink.Received()
		if n != prev {
			prev, last = n, time.Now()
			continue
		}
		quiet := time.Since(last)
		if (n >= count && quiet > 300*time.Millisecond) || quiet > 3*time.Second {
			break
		}
	}
	scancel()
	wg.Wait()
	rep := sink.Report()
	t.Logf("sent %d/%d frames of %d B in %v (%.0f frames/s); sink: %+v",
		sent, count, size, genTime.Round(time.Millisecond), float64(sent)/genTime.Seconds(), rep)
	if sent != count {
		t.Fatalf("generator: the kernel took %d of %d frames", sent, count)
	}
	return rep, sent
}

// waitCore returns the LinkGuardian core counters of d once they are
// published and stable (the worker publishes every 20 ms).
func waitCore(t *testing.T, d *Dataplane) LGCore {
	t.Helper()
	var c LGCore
	for i := 0; i < 40; i++ {
		time.Sleep(25 * time.Millisecond)
		n := d.LGStats().Core()
		if i > 0 && n.Receiver != nil && c.Receiver != nil && *n.Receiver == *c.Receiver &&
			n.Sender != nil && c.Sender != nil && *n.Sender == *c.Sender {
			return n
		}
		c = n
	}
	return c
}

// logLG logs what both ends' LinkGuardian cores counted (for diagnosis).
func (b *lgBed) logLG(t *testing.T) (s1, s2 LGCore) {
	t.Helper()
	s1, s2 = waitCore(t, b.sw1), waitCore(t, b.sw2)
	t.Logf("sw1 sender: %+v", *s1.Sender)
	t.Logf("sw2 receiver: %+v", *s2.Receiver)
	t.Logf("sw1 dataplane: %+v; link tx ring full %d, PFC rx %d", b.sw1.Stats(), b.sw1.LGStats().LinkTxRingFull.Load(), b.sw1.LGStats().PFCRx.Load())
	t.Logf("sw2 dataplane: %+v; host tx ring full %d, PFC tx %d", b.sw2.Stats(), b.sw2.LGStats().HostTxRingFull.Load(), b.sw2.LGStats().PFCTx.Load())
	return s1, s2
}

// checkDelivery asserts that every frame h1 sent reached h2 exactly once,
// and in order when inOrder. Frames sw1 never took from its host port are
// reported separately: they are the machine's, not the link's.
func (b *lgBed) checkDelivery(t *testing.T, rep traffic.Report, sent uint64, inOrder bool) {
	t.Helper()
	if in := b.ingressDrops(t); in > 0 {
		t.Errorf("sw1 dropped %d frames on its host port before the dataplane took them (AF_XDP RX ring full): the machine did not sustain %d frames/s", in, lgRate)
	}
	if rep.Missing != 0 || rep.Unique != sent {
		t.Errorf("missing %d frames (delivered %d distinct of %d sent) through a protected link", rep.Missing, rep.Unique, sent)
	}
	if rep.Duplicates != 0 {
		t.Errorf("%d duplicates delivered to h2", rep.Duplicates)
	}
	if rep.Other != 0 {
		t.Errorf("h2 received %d frames that are not the test stream (link headers or control frames leaking?)", rep.Other)
	}
	if inOrder && rep.OutOfOrder != 0 {
		t.Errorf("%d frames delivered out of order in mode lg (in order by design)", rep.OutOfOrder)
	}
}

// checkLoss asserts that the impairment really dropped about want of the
// frames that crossed sw1→sw2 (data, retransmitted copies and dummies alike:
// the impairment does not tell them apart).
func checkLoss(t *testing.T, st bpf.ImpairStats, minSeen uint64, want, tol float64) {
	t.Helper()
	t.Logf("impairment on sw2 link0: %v", st)
	if st.Seen < minSeen {
		t.Errorf("impairment saw %d frames cross sw1→sw2; at least the %d data frames must have", st.Seen, minSeen)
	}
	if r := st.LossRate(); !(math.Abs(r-want) <= tol*want) {
		t.Errorf("impairment dropped %d of %d frames (%.4g); want %g ±%.0f%%", st.Dropped, st.Seen, r, want, tol*100)
	}
}

// checkRecovery asserts that the receiver's accounting agrees with a
// lossless delivery: losses were detected, each detected frame was
// recovered, none was given up on, and the detections match the drops.
func checkRecovery(t *testing.T, r *LGCore, st bpf.ImpairStats) {
	t.Helper()
	rs := r.Receiver
	if rs.LostDetected == 0 {
		t.Fatalf("receiver detected no loss, but the impairment dropped %d frames", st.Dropped)
	}
	if rs.AckNoTimeouts != 0 {
		t.Errorf("receiver gave up on %d frames (ackNoTimeout)", rs.AckNoTimeouts)
	}
	if rs.ForcedSkips != 0 {
		t.Errorf("receiver skipped %d frames (window overrun)", rs.ForcedSkips)
	}
	// Every frame detected missing came back (a frame detected missing
	// twice, e.g. a lost re-notified copy, is still one recovery).
	if rs.Recovered != rs.LostDetected {
		t.Errorf("receiver recovered %d frames of %d detected lost", rs.Recovered, rs.LostDetected)
	}
	// Detections are the dropped data frames: not more than the frames the
	// impairment dropped (those include lost copies and dummies), and
	// nearly all of them (copies are 3 per loss at 1%: few lost).
	if rs.LostDetected > st.Dropped || float64(rs.LostDetected) < 0.85*float64(st.Dropped) {
		t.Errorf("receiver detected %d frames lost; the impairment dropped %d frames on the link", rs.LostDetected, st.Dropped)
	}
}

// TestLGBernoulliLossRecovered: Bernoulli loss 1e-2 on sw1→sw2, LinkGuardian
// with N=3: all 10^5 frames reach h2 once and in order, while the impairment
// demonstrably dropped ~1% and the receiver recovered exactly what it
// detected.
func TestLGBernoulliLossRecovered(t *testing.T) {
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 11}
	b := upLG(t, ModeLG, LGConfig{Copies: 3}, &imp)
	before := b.impairStats(t)
	rep, sent := b.send(t, lgFrames, lgFrameSize, lgRate)
	_, s2 := b.logLG(t)
	st := b.impairStats(t).Sub(before)

	b.checkDelivery(t, rep, sent, true)
	checkLoss(t, st, sent, lgLoss, 0.25)
	checkRecovery(t, &s2, st)
}

// TestLGNBBernoulliLossRecovered: the same with LinkGuardianNB: nothing lost
// or duplicated, but recovered frames arrive after their successors
// (out-of-order > 0 shows the mode really differs from lg).
func TestLGNBBernoulliLossRecovered(t *testing.T) {
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 12}
	b := upLG(t, ModeLGNB, LGConfig{Copies: 3}, &imp)
	before := b.impairStats(t)
	rep, sent := b.send(t, lgFrames, lgFrameSize, lgRate)
	_, s2 := b.logLG(t)
	st := b.impairStats(t).Sub(before)

	b.checkDelivery(t, rep, sent, false)
	checkLoss(t, st, sent, lgLoss, 0.25)
	checkRecovery(t, &s2, st)
	// Each recovered frame comes after at least one later frame; a few
	// losses may be recovered by the tail dummy with nothing after them.
	if rep.OutOfOrder == 0 || float64(rep.OutOfOrder) < 0.5*float64(s2.Receiver.Recovered) {
		t.Errorf("lgnb delivered %d frames out of order with %d recovered; want about one per recovery", rep.OutOfOrder, s2.Receiver.Recovered)
	}
}

// TestLGBurstyLossRecovered: Gilbert-Elliott loss (1e-2, mean burst 3) with
// lg: consecutive losses are recovered too, in order.
func TestLGBurstyLossRecovered(t *testing.T) {
	imp := bpf.Bursty(lgLoss, 3)
	imp.Seed = 13
	b := upLG(t, ModeLG, LGConfig{Copies: 3}, &imp)
	before := b.impairStats(t)
	rep, sent := b.send(t, lgFrames, lgFrameSize, lgRate)
	_, s2 := b.logLG(t)
	st := b.impairStats(t).Sub(before)

	b.checkDelivery(t, rep, sent, true)
	// Bursts make the count noisier than Bernoulli's (≈7% relative sd).
	checkLoss(t, st, sent, lgLoss, 0.4)
	if mb := st.MeanBurst(); !(mb > 2) {
		t.Errorf("mean loss burst %.3g; Bursty(1e-2, 3) should give about 3 (Bernoulli would give ~1)", mb)
	}
	if s2.Receiver.AckNoTimeouts != 0 {
		t.Errorf("receiver gave up on %d frames (ackNoTimeout)", s2.Receiver.AckNoTimeouts)
	}
	if s2.Receiver.Recovered != s2.Receiver.LostDetected || s2.Receiver.LostDetected == 0 {
		t.Errorf("receiver recovered %d of %d frames detected lost", s2.Receiver.Recovered, s2.Receiver.LostDetected)
	}
}

// TestForwardLossIsVisible is the control: the same impairment without
// protection loses about 1% of the frames, exactly those the impairment
// dropped. It shows the checks above can fail.
func TestForwardLossIsVisible(t *testing.T) {
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 14}
	b := upLG(t, ModeForward, LGConfig{}, &imp)
	before := b.impairStats(t)
	rep, sent := b.send(t, lgFrames, lgFrameSize, lgRate)
	st := b.impairStats(t).Sub(before)
	in := b.ingressDrops(t)

	checkLoss(t, st, sent, lgLoss, 0.25)
	// In forward mode only data crosses the link: each missing frame is a
	// frame the impairment dropped (or one sw1 never took).
	if rep.Missing != st.Dropped+in {
		t.Errorf("forward: %d frames missing at h2; impairment dropped %d, sw1 ingress dropped %d", rep.Missing, st.Dropped, in)
	}
	if r := float64(rep.Missing) / float64(sent); math.Abs(r-lgLoss) > 0.25*lgLoss {
		t.Errorf("forward: %.4g of frames missing; want ≈ %g", r, lgLoss)
	}
	if rep.Duplicates != 0 || rep.OutOfOrder != 0 {
		t.Errorf("forward: %d duplicates, %d out of order; a veth path neither duplicates nor reorders", rep.Duplicates, rep.OutOfOrder)
	}
}

// tcpRetransSegs reads TcpRetransSegs of namespace ns from /proc/net/snmp
// as seen by a thread inside it.
func tcpRetransSegs(t *testing.T, ns string) uint64 {
	t.Helper()
	var b []byte
	if err := netns.Do(ns, func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}); err != nil {
		t.Fatalf("snmp of %s: %v", ns, err)
	}
	v, err := snmpField(b, "Tcp", "RetransSegs")
	if err != nil {
		t.Fatalf("snmp of %s: %v", ns, err)
	}
	return v
}

// snmpField finds proto's field in /proc/net/snmp (a header line of names
// followed by a line of values, both starting with "proto:").
func snmpField(b []byte, proto, field string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var names []string
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != proto+":" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == field && i < len(f) {
				return strconv.ParseUint(f[i], 10, 64)
			}
		}
		return 0, fmt.Errorf("no field %s:%s", proto, field)
	}
	return 0, fmt.Errorf("no %s lines", proto)
}

// iperfRetrans runs iperf3 -n 100M h1→h2 through mode with Bernoulli loss
// on sw1→sw2 and returns the TCP retransmissions h1 made.
func iperfRetrans(t *testing.T, mode Mode, loss float64) uint64 {
	t.Helper()
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: loss, Seed: 15}
	b := upLG(t, mode, LGConfig{Copies: 3}, &imp)
	h1, h2 := b.tb.NS("h1"), b.tb.NS("h2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("%s: ping h1→h2: %v", mode, err)
	}
	srv := netns.Command(ctx, h2, "iperf3", "-s", "-1", "-p", "5299")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	before := tcpRetransSegs(t, h1)
	before2 := b.impairStats(t)
	var out []byte
	var err error
	for i := 0; i < 20; i++ { // until the server listens
		out, err = netns.Command(ctx, h1, "iperf3", "-c", "10.0.0.2", "-p", "5299", "-n", "100M", "--connect-timeout", "3000").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Connection refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("%s: iperf3 -n 100M h1→h2 at loss %g: %v\n%s", mode, loss, err, out)
	}
	retx := tcpRetransSegs(t, h1) - before
	st := b.impairStats(t).Sub(before2)
	t.Logf("%s at loss %g: TcpRetransSegs %d; impairment %v\n%s", mode, loss, retx, st, lastLines(string(out), 4))
	if st.Dropped == 0 {
		t.Errorf("%s: the impairment dropped nothing of %d frames", mode, st.Seen)
	}
	if mode != ModeForward {
		if r := waitCore(t, b.sw2).Receiver; r.AckNoTimeouts != 0 || r.Recovered != r.LostDetected {
			t.Errorf("%s receiver: %+v", mode, *r)
		}
	}
	return retx
}

// TestLGHidesLossFromTCP: 100 MB of TCP through lg at loss 1e-3 needs (almost)
// no TCP retransmission, while forward with the same loss needs many.
func TestLGHidesLossFromTCP(t *testing.T) {
	netns.RequireRoot(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
	// One testbed per arm, each removed when its subtest ends.
	var lgRetx, fwdRetx uint64
	t.Run("lg", func(t *testing.T) { lgRetx = iperfRetrans(t, ModeLG, 1e-3) })
	t.Run("forward", func(t *testing.T) { fwdRetx = iperfRetrans(t, ModeForward, 1e-3) })
	if t.Failed() {
		return
	}
	if lgRetx > 10 {
		t.Errorf("lg: h1 retransmitted %d TCP segments at link loss 1e-3; want ≤ 10", lgRetx)
	}
	// 100 MB is ~72k segments: ~72 dropped at 1e-3, each retransmitted.
	if fwdRetx <= lgRetx || fwdRetx < 20 {
		t.Errorf("forward: h1 retransmitted %d TCP segments at link loss 1e-3 (lg: %d); want many more than lg", fwdRetx, lgRetx)
	}
}

// TestLGPFCBackpressure: a small resume threshold (8 KiB) and heavy loss
// (5e-2) at a high rate fill lg's reorder buffer: the receiver sends PFC
// pauses, the sender obeys them, and still nothing is lost end to end.
func TestLGPFCBackpressure(t *testing.T) {
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 5e-2, Seed: 16}
	b := upLG(t, ModeLG, LGConfig{Copies: 3, ResumeThreshold: 8 << 10}, &imp)
	const rate = 100_000
	rep, sent := b.send(t, lgFrames, 1000, rate)
	s1, s2 := b.logLG(t)
	st := b.impairStats(t)

	checkLoss(t, st, sent, 5e-2, 0.25)
	r, s := s2.Receiver, s1.Sender
	if r.PausesSent == 0 {
		t.Errorf("receiver sent no PFC pause (peak reorder %d B, pause threshold %d B)", r.ReorderPeakBytes, b.sw2.Config().LG.PauseThreshold)
	}
	if r.ResumesSent == 0 {
		t.Errorf("receiver never resumed after %d pauses", r.PausesSent)
	}
	if pfcTx := b.sw2.LGStats().PFCTx.Load(); pfcTx < r.PausesSent {
		t.Errorf("sw2 put %d PFC frames on the link for %d pauses", pfcTx, r.PausesSent)
	}
	if s.PausesRx == 0 || b.sw1.LGStats().PFCRx.Load() == 0 {
		t.Errorf("sender applied %d pauses, sw1 received %d PFC frames; the receiver sent %d pauses", s.PausesRx, b.sw1.LGStats().PFCRx.Load(), r.PausesSent)
	}
	if r.AckNoTimeouts != 0 || r.Recovered != r.LostDetected {
		t.Errorf("receiver recovered %d of %d detected lost, %d ackNo timeouts", r.Recovered, r.LostDetected, r.AckNoTimeouts)
	}
	if in := b.ingressDrops(t); in > 0 {
		t.Errorf("sw1 dropped %d frames at its host port while paused (RX ring full)", in)
	}
	if rep.Missing != 0 || rep.Duplicates != 0 || rep.OutOfOrder != 0 || rep.Unique != sent {
		t.Errorf("with PFC backpressure at loss 5e-2: %d missing, %d duplicates, %d out of order (delivered %d of %d)", rep.Missing, rep.Duplicates, rep.OutOfOrder, rep.Unique, sent)
	}
}
