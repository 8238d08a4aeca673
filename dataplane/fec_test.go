package dataplane_test

// Mode fec on veth: in-process dataplanes on sw1 and sw2 of a pair testbed
// whose link ports have room for parity frames (LinkHeaderLen 26), loss
// injected by sw2's link port program on sw1→sw2.

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/traffic"
	"golang.org/x/sys/unix"
)

// fecLinkHeader is the testbed's link MTU above the hosts' for mode fec.
const fecLinkHeader = fec.MaxOverhead + linkcrc.TrailerLen

// upFEC brings up a pair testbed (prefix base lfr) with room for parity
// frames and runs mode fec with fc on both switches.
func upFEC(t *testing.T, fc fecpipe.Config) (*netns.Testbed, *dataplane.RunningSwitch, *dataplane.RunningSwitch) {
	t.Helper()
	tb := netns.TestUp(t, "lfr", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkHeaderLen: fecLinkHeader})
	cfg := withFEC(dataplane.Config{Mode: fecpipe.ModeFEC}, fc)
	sw1, sw2 := dataplane.StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), cfg)
	return tb, sw1, sw2
}

// fecSnap returns d's fec statistics once published after now (the worker
// publishes every 20 ms).
func fecSnap(t *testing.T, d *dataplane.Dataplane) fecpipe.Snapshot {
	t.Helper()
	time.Sleep(3 * time.Duration(fecpipe.ObserveInterval))
	return fecpipe.StatsOf(d).Snapshot()
}

// waitFECUp waits until both ends' link sessions are up.
func waitFECUp(t *testing.T, ds ...*dataplane.Dataplane) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		up := true
		for _, d := range ds {
			up = up && fecpipe.StatsOf(d).Session.Snapshot().State == "up"
		}
		if up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fec link session not up after 5 s: %+v", fecpipe.StatsOf(ds[0]).Session.Snapshot())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFECUDPBernoulli: UDP h1→h2 through --mode fec --fec-n 4 with
// Bernoulli loss 1e-2 on sw1→sw2 (the project's impairer in sw2's link
// port program). The hosts see a residual loss well below the link's (the
// formula: p·(1−(1−p)^4) ≈ 4·10⁻⁴), in order, with no checksum error (a
// frame rebuilt from parity is the frame sent); the receiver rebuilt most
// of the numbers it found missing, and the sender sent one parity frame
// per 4 data frames.
func TestFECUDPBernoulli(t *testing.T) {
	fc := fecpipe.Config{Fixed: true, N: 4, MinFrames: 2000}
	if w := os.Getenv("LF_FEC_WAIT"); w != "" { // for measuring the recovery delay
		fc.Wait, _ = time.ParseDuration(w)
	}
	tb, sw1, sw2 := upFEC(t, fc)
	if err := sw2.D.Link().Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-2, Seed: 31}); err != nil {
		t.Fatal(err)
	}
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	fields := []string{"InDatagrams", "RcvbufErrors", "InCsumErrors"}
	before := dataplane.SNMPFields(t, h2, "Udp", fields...)
	packets, lost, ooo := dataplane.IperfUDP(t, h1, h2, dataplane.UDPRun{Port: 5311, Rate: "50M", Secs: 3})
	after := dataplane.SNMPFields(t, h2, "Udp", fields...)
	s1, s2 := fecSnap(t, sw1.D), fecSnap(t, sw2.D)
	imp, err := sw2.D.Link().Program().ImpairStats()
	if err != nil {
		t.Fatal(err)
	}
	rcvbuf, csum := after["RcvbufErrors"]-before["RcvbufErrors"], after["InCsumErrors"]-before["InCsumErrors"]
	t.Logf("iperf3 UDP 50 Mbit/s 3 s at loss 1e-2 through fec(4): %d datagrams, %d lost, %d out of order, h2 rcvbuf errors %d, checksum errors %d; impairment %+v",
		packets, lost, ooo, rcvbuf, csum, imp)
	t.Logf("sw1 sender %+v", s1.Sender)
	t.Logf("sw1 dataplane %+v; sw2 dataplane %+v; sw2 link socket drops %d, corrupt %d", sw1.D.Stats(), sw2.D.Stats(), socketDrops(t, sw2.D.Link()), fecpipe.StatsOf(sw2.D).Integrity.Corrupt.Load())
	t.Logf("sw2 receiver %+v; rx loss %.4g (measured %v), burst %.2f; sw1 policy %+v", s2.Receiver, s2.RxLoss, s2.RxMeasured, s2.RxBurst, s1.Policy)
	if imp.Dropped == 0 || imp.LossRate() < 5e-3 {
		t.Fatalf("the impairer dropped %d of %d frames: no loss to recover", imp.Dropped, imp.Seen)
	}
	// Frames the machine dropped (a worker not scheduled while its ring
	// filled) are not the link's loss.
	busy := socketDrops(t, sw1.D.Host()) + socketDrops(t, sw2.D.Link()) + rcvbuf
	if busy > 0 {
		t.Logf("note: %d datagrams dropped at sockets (machine busy); not counted against the link", busy)
	}
	residual := float64(lost-min(lost, busy)) / float64(packets)
	if residual > 2e-3 {
		t.Errorf("residual loss %.4g (%d of %d, less %d lost at sockets) through fec(4) at 1e-2; want well below 1e-2 (formula %.2g)",
			residual, lost, packets, busy, fec.Residual(4, 1e-2))
	}
	if ooo != 0 {
		t.Errorf("%d datagrams out of order through fec in order", ooo)
	}
	if csum != 0 {
		t.Errorf("%d UDP checksum errors at h2: a rebuilt frame differs from the one sent", csum)
	}
	r := s2.Receiver
	if r.Recovered == 0 || r.Recovered < r.Gaps*8/10 || r.BadRecovery != 0 || r.BadParity != 0 || r.BadData != 0 {
		t.Errorf("sw2 receiver: %d numbers missing, %d rebuilt, %d bad recoveries, %d bad parity, %d bad data", r.Gaps, r.Recovered, r.BadRecovery, r.BadParity, r.BadData)
	}
	if sd := s1.Sender; sd.Parity < sd.Data/4 || sd.Parity > sd.Data/4+sd.Partial+1 {
		t.Errorf("sw1 sent %d parity frames for %d data frames (%d groups closed early); want one per 4", sd.Parity, sd.Data, sd.Partial)
	}
	if !s2.RxMeasured || math.Abs(s2.RxLoss-imp.LossRate()) > 0.5*imp.LossRate() {
		t.Errorf("sw2 measured loss %.4g (measured %v); the impairer's rate %.4g", s2.RxLoss, s2.RxMeasured, imp.LossRate())
	}
	if s1.Policy.Decision == "" || s1.Policy.Applied || s1.N != 4 {
		t.Errorf("sw1 policy %+v, n %d: want a decision from sw2's report, not applied (--fec-n 4 fixed)", s1.Policy, s1.N)
	}
}

// fecParity is a parity frame from src with header fields as given and a
// payload of n zero bytes, sealed with the integrity trailer.
func fecParity(src []byte, first seqhdr.Seq, count int, reserved byte, n int) []byte {
	b := make([]byte, fec.ParityOffset+n, fec.ParityOffset+n+linkcrc.TrailerLen)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:], src)
	binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
	b[14] = byte(seqhdr.TypeFECParity)
	binary.BigEndian.PutUint16(b[16:], first.Num())
	if first.Era() {
		b[15] = seqhdr.FlagEra
	}
	b[18], b[19] = byte(count), reserved
	binary.BigEndian.PutUint16(b[20:], uint16(n))
	return b
}

func sealed(b []byte) []byte {
	out := append(append([]byte(nil), b...), 0, 0, 0, 0)
	n, _ := linkcrc.Seal(out, len(b))
	return out[:n]
}

// TestFECHostileFrames: frames written raw onto the link with the peer's
// source MAC (so the XDP program's peer check lets them through to the
// receiver, as a corrupted or malicious peer's would) are counted by what
// is wrong with them and dropped: parity shorter than its header, with no
// frames, a reserved byte set, a payload shorter than an Ethernet header,
// for groups anywhere in the sequence space; data frames with flags
// LinkGuardian sets, too short; an unknown type; frames without the
// integrity trailer. The dataplane keeps running, holds no frame after,
// every UMEM frame comes back, and h1 still reaches h2.
func TestFECHostileFrames(t *testing.T) {
	tb, sw1, sw2 := upFEC(t, fecpipe.Config{Fixed: true, N: 4})
	waitFECUp(t, sw1.D, sw2.D)
	src := macOf(t, tb.NS("sw1"), "link0")
	fd := dataplane.RawSender(t, tb.NS("sw1"), "link0")
	dataWith := func(flags byte, n int) []byte {
		b := dataplane.LinkFrame(byte(seqhdr.TypeData), n)
		copy(b[6:], src)
		b[15] = flags
		clear(b[16:min(n, 24)])
		b[18], b[19] = 0x08, 0x00
		return b
	}
	unknown := dataplane.LinkFrame(15, 80)
	copy(unknown[6:], src)
	const n = 40
	// away spreads groups over the half of the sequence space opposite
	// sw2's window (a parity inside it could rebuild a frame: a peer's
	// right, forged or not).
	agreed := fecpipe.StatsOf(sw2.D).Session.Snapshot().Agreed
	if agreed == nil {
		t.Fatal("sw2's session has no agreement")
	}
	away := func(i int) seqhdr.Seq {
		return (seqhdr.Seq(agreed.RxSeq) + seqhdr.Half/2 + seqhdr.Seq(i*3271)%(seqhdr.Half/2)) & (seqhdr.Space - 1)
	}
	kinds := []struct {
		name   string
		frame  func(i int) []byte
		sealed bool
	}{
		{"parity shorter than its header", func(int) []byte { return fecParity(src, 0, 4, 0, 60)[:20] }, true},
		{"parity of no frames", func(int) []byte { return fecParity(src, 0, 0, 0, 60) }, true},
		{"parity reserved byte", func(int) []byte { return fecParity(src, 0, 4, 1, 60) }, true},
		{"parity payload below an Ethernet header", func(int) []byte { return fecParity(src, 0, 4, 0, 10) }, true},
		{"parity anywhere", func(i int) []byte { return fecParity(src, away(i), 1+i%200, 0, 200) }, true},
		{"data with an ACK", func(int) []byte { return dataWith(seqhdr.FlagHasAck, 100) }, true},
		{"data too short", func(int) []byte { return dataWith(0, seqhdr.DataOffset-2) }, true},
		{"unknown type", func(int) []byte { return unknown }, true},
		{"no trailer", func(int) []byte { return fecParity(src, 0, 4, 0, 60) }, false},
	}
	before := fecSnap(t, sw2.D)
	rx0 := sw2.D.Stats().Link.RX.Frames
	corrupt0 := fecpipe.StatsOf(sw2.D).Integrity.Corrupt.Load()
	for i := range n {
		for _, k := range kinds {
			b := k.frame(i)
			if k.sealed {
				b = sealed(b)
			}
			if _, err := unix.Write(fd, b); err != nil {
				t.Fatalf("%s: write: %v", k.name, err)
			}
		}
	}
	want := uint64(n * len(kinds))
	for deadline := time.Now().Add(10 * time.Second); sw2.D.Stats().Link.RX.Frames-rx0 < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	// Let the holes a parity opened ahead of the window be given up and
	// released (Hold).
	time.Sleep(50 * time.Millisecond)
	after := fecSnap(t, sw2.D)
	sw2.CheckRunning(t, "sw2")
	a, b := after.Receiver, before.Receiver
	checkCounted(t, []counted{
		{"integrity failures (no trailer)", fecpipe.StatsOf(sw2.D).Integrity.Corrupt.Load() - corrupt0, n},
		{"bad parity (short, no frames, reserved, payload)", a.BadParity - b.BadParity, 4 * n},
		{"parity decoded (the groups anywhere)", a.Parity - b.Parity, n},
		{"bad data (ACK flag, too short, unknown type)", a.BadData - b.BadData, 3 * n},
		{"delivered to the host", a.Delivered - b.Delivered, 0},
	})
	if after.RxHeld != 0 {
		t.Errorf("the receiver holds %d frames after the hostile ones", after.RxHeld)
	}
	if d := after.UmemFree - before.UmemFree; d < -8 || d > 8 {
		t.Errorf("free UMEM frames %d before, %d after %d hostile frames", before.UmemFree, after.UmemFree, want)
	}
	t.Logf("after %d hostile frames: receiver %+v; free UMEM frames %d → %d", want, a, before.UmemFree, after.UmemFree)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Errorf("h1 cannot reach h2 after the hostile frames: %v", err)
	}
}

// TestFECRestart: numbered frames h1→h2 through fec(4) at loss 1e-2 while
// first sw2's dataplane, then sw1's, is replaced by a new process (a new
// epoch). The ends agree again each time and frames flow after; nothing is
// delivered twice or out of order (frames of the old numbering still on the
// wire or in a receiver's window are dropped), and the survivor's session
// saw each peer restart.
func TestFECRestart(t *testing.T) {
	fc := fecpipe.Config{Fixed: true, N: 4}
	tb := netns.TestUp(t, "lfr", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkHeaderLen: fecLinkHeader})
	imp := bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-2, Seed: 5}
	start := func(sw string) *dataplane.RunningSwitch {
		s := dataplane.StartWatched(t, tb.NS(sw), withFEC(dataplane.Config{Mode: fecpipe.ModeFEC}, fc))
		if err := s.D.Link().Program().SetImpair(imp); err != nil {
			t.Fatal(err)
		}
		return s
	}
	sws := map[string]*dataplane.RunningSwitch{"sw1": start("sw1"), "sw2": start("sw2")}
	waitFECUp(t, sws["sw1"].D, sws["sw2"].D)
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	const count = 400_000 // at most: h1 sends until h2 got frames after the last restart
	sink := netns.TestIn(t, h2, func() (*traffic.Sink, error) { return traffic.NewSink("eth0", 1, count) })
	defer sink.Close()
	tmpl := traffic.Template{Dst: macOf(t, h2, "eth0"), Src: macOf(t, h1, "eth0"), Stream: 1, Size: 300}
	gen := netns.TestIn(t, h1, func() (*traffic.Generator, error) { return traffic.NewGenerator("eth0", tmpl) })
	defer gen.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sctx, scancel := context.WithCancel(ctx)
	sunk := make(chan struct{})
	go func() { defer close(sunk); sink.Run(sctx, 0) }()
	gctx, gstop := context.WithCancel(ctx)
	defer gstop()
	sent := make(chan uint64)
	go func() { sent <- gen.Run(gctx, 0, count, 0, 10_000) }()
	restarts := map[string]uint64{}
	var atLast uint64 // frames the sink had when the last restart was done
	for _, sw := range []string{"sw2", "sw1"} {
		time.Sleep(800 * time.Millisecond)
		other := map[string]string{"sw1": "sw2", "sw2": "sw1"}[sw]
		before := fecpipe.StatsOf(sws[other].D).Session.Snapshot().Counters.PeerRestarts
		sws[sw].Stop(t)
		sws[sw] = start(sw)
		waitFECUp(t, sws["sw1"].D, sws["sw2"].D)
		restarts[other] = fecpipe.StatsOf(sws[other].D).Session.Snapshot().Counters.PeerRestarts - before
		atLast = sink.Received()
	}
	eventually(func() bool { return sink.Received() >= atLast+1000 })
	gstop()
	n := <-sent
	time.Sleep(500 * time.Millisecond)
	scancel()
	<-sunk
	r := sink.Report()
	t.Logf("across two restarts: h1 sent %d, h2 got %+v (%d after the last restart); sw2 receiver now %+v",
		n, r, r.Received-atLast, fecpipe.StatsOf(sws["sw2"].D).Snapshot().Receiver)
	if r.Duplicates != 0 || r.OutOfOrder != 0 || r.Other != 0 {
		t.Errorf("across two restarts: %d duplicates, %d out of order, %d foreign frames delivered to h2", r.Duplicates, r.OutOfOrder, r.Other)
	}
	if restarts["sw1"] != 1 || restarts["sw2"] != 1 {
		t.Errorf("peer restarts seen by the survivor: %v; want 1 each", restarts)
	}
	if r.Received-atLast < 1000 {
		t.Errorf("h2 got %d frames after the last restart: the link did not come back", r.Received-atLast)
	}
}

// TestFECPolicyHeals: --mode fec --fec-target 1e-3 on veth. Under loss 1e-2
// (sw1→sw2) the link policy protects sw1's sending with parity; once the
// link heals it goes back to none, but only after the dwell (one monitor
// window, here 500 ms) has measured the healed link: the hysteresis.
func TestFECPolicyHeals(t *testing.T) {
	const window = 500 * time.Millisecond
	tb, sw1, sw2 := upFEC(t, fecpipe.Config{Target: 1e-3, MinFrames: 2000, Window: window})
	prog := sw2.D.Link().Program()
	if err := prog.SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-2, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	waitFECUp(t, sw1.D, sw2.D)
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	dataplane.IperfUDP(t, h1, h2, dataplane.UDPRun{Port: 5312, Rate: "50M", Secs: 3})
	lossy := fecSnap(t, sw1.D)
	t.Logf("under loss 1e-2: n %d, policy %+v", lossy.N, lossy.Policy)
	if lossy.N == 0 || !strings.HasPrefix(lossy.Policy.Decision, "fec") {
		t.Fatalf("under loss 1e-2 sw1 sends with n %d, policy %+v: want parity", lossy.N, lossy.Policy)
	}
	if err := prog.SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		dataplane.IperfUDP(t, h1, h2, dataplane.UDPRun{Port: 5313, Rate: "50M", Secs: 4})
	}()
	var back time.Duration
	for back == 0 {
		select {
		case <-done:
			back = -1
		case <-time.After(50 * time.Millisecond):
			if s := fecpipe.StatsOf(sw1.D).Snapshot(); s.N == 0 && s.Policy.Decision == "none" {
				back = time.Since(healed)
			}
		}
	}
	<-done
	s := fecSnap(t, sw1.D)
	t.Logf("healed: back to none after %v; policy %+v", back, s.Policy)
	if back < 0 || s.N != 0 || s.Policy.Changes < 2 {
		t.Fatalf("after the link healed: back after %v, n %d, policy %+v: want none again", back, s.N, s.Policy)
	}
	if back < window {
		t.Errorf("back to none %v after the link healed: before the dwell (%v) could measure it", back, window)
	}
}
