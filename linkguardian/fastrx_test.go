package linkguardian_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// fastLag is how long the core runs behind the kernel in the fast path
// tests: frames the kernel passes on reach the core this much later, while
// the kernel keeps judging what arrives (five frames' time at the tests'
// 10 Gbit/s). The core hands the point back only once it has caught up, so
// the kernel takes over again only where the frames come further apart.
const fastLag = us / 2

// fastWakeEvery is how often the core looks at the send state while idle in
// TestFastBothSuite (FastSend.WakeEvery).
const fastWakeEvery = 20 * us

// suiteOnFastPath lists the simulated-link tests that must pass unchanged
// with the kernel fast path at both receivers: every scenario of loss,
// reordering, duplicates, wrap-around, backpressure, credit, mode changes
// and resets.
var suiteOnFastPath = []struct {
	name string
	f    func(*testing.T)
}{
	{"NoLoss", TestNoLoss},
	{"SingleLoss", TestSingleLoss},
	{"TailLossRecoveredByDummy", TestTailLossRecoveredByDummy},
	{"FiveConsecutiveLosses", TestFiveConsecutiveLosses},
	{"LongHole", TestLongHole},
	{"RetransmittedCopyLost", TestRetransmittedCopyLost},
	{"AckLostThenRecovered", TestAckLostThenRecovered},
	{"LossNotificationLost", TestLossNotificationLost},
	{"WrapAround", TestWrapAround},
	{"Backpressure", TestBackpressure},
	{"DuplicateNotifications", TestDuplicateNotifications},
	{"AckNoTimeoutSkipsHole", TestAckNoTimeoutSkipsHole},
	{"LGNB", TestLGNB},
	{"BothDirectionsPiggyback", TestBothDirectionsPiggyback},
	{"UnsequencedReverseCarriesAcks", TestUnsequencedReverseCarriesAcks},
	{"Soak", TestSoak},
	{"SoakPerFrameBursts", TestSoakPerFrameBursts},
	{"SetDeliveryLGToLGNBMidHole", TestSetDeliveryLGToLGNBMidHole},
	{"SetDeliveryMonitorAndBack", TestSetDeliveryMonitorAndBack},
	{"PortReset", TestPortReset},
	{"CreditBoundLostAck", TestCreditBoundLostAck},
	{"CoalescedAcksKeepCredit", TestCoalescedAcksKeepCredit},
	{"CoalescedAcksLostUnderCredit", TestCoalescedAcksLostUnderCredit},
	{"TailLossFoundWithinDummyWaitMax", TestTailLossFoundWithinDummyWaitMax},
}

// TestFastPathSuite runs the simulated-link suite with the kernel fast path
// (the model of the XDP program, FastPoint.Offer) at both receivers, the
// core FastLag behind it: whatever the hand-over does, every scenario
// delivers what it did without it, in order, once.
func TestFastPathSuite(t *testing.T) {
	simFast = true
	defer func() { simFast = false }()
	for _, tc := range suiteOnFastPath {
		t.Run(tc.name, tc.f)
	}
}

// fastSim is a one-way LG link with the fast path at B.
func fastSim(t *testing.T) *lgsim.Sim {
	cfg := oneWay(linkguardian.InOrder, 1)
	cfg.Fast, cfg.FastLag = true, fastLag
	return newSim(t, cfg)
}

// TestFastPathCarriesCommonCase: without loss the kernel delivers almost
// every frame; the core hands the point over once and takes it back only
// for what the kernel cannot judge.
func TestFastPathCarriesCommonCase(t *testing.T) {
	s := fastSim(t)
	s.Send(lgsim.A, 2000, 0)
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 2000))
	st := s.Port(lgsim.B).R.Stats
	if got := s.FastDelivered(lgsim.B); got < 1900 || uint64(got) != st.FastDelivered {
		t.Fatalf("fast path delivered %d (receiver counts %d) of 2000 frames, want nearly all", got, st.FastDelivered)
	}
	if st.Delivered != 2000 || st.DataRx != 2000 {
		t.Fatalf("receiver counts %d delivered, %d received; want 2000 (the kernel's included)", st.Delivered, st.DataRx)
	}
	if s.Port(lgsim.A).S.Outstanding() != 0 {
		t.Fatalf("sender still holds %d frames: the ACKs of the kernel's deliveries did not reach it", s.Port(lgsim.A).S.Outstanding())
	}
}

// TestFastPathHoleOpensAndCloses: a hole opens while frames keep arriving
// (the kernel hands the point over and passes everything on), closes with
// the retransmission, and the point goes back to the kernel, several times.
func TestFastPathHoleOpensAndCloses(t *testing.T) {
	s := fastSim(t)
	lost := []int{100, 101, 500, 900, 1500}
	for _, k := range lost {
		s.AddRule(lgsim.A, lgsim.DropNthData(k))
	}
	s.Send(lgsim.A, 2000, 300) // frames keep arriving while the core lags, with room to catch up
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 2000))
	st := s.Port(lgsim.B).R.Stats
	if st.Recovered != uint64(len(lost)) {
		t.Fatalf("recovered %d, want %d", st.Recovered, len(lost))
	}
	if st.FastHandOffs < 4 || st.FastClaims < 4 {
		t.Fatalf("hand-offs %d, claims %d: want the point to go back and forth with every hole", st.FastHandOffs, st.FastClaims)
	}
	if st.FastDelivered == 0 || st.Delivered == 0 {
		t.Fatalf("kernel delivered %d, core %d: both should have", st.FastDelivered, st.Delivered)
	}
}

// TestFastPathLateCopyAfterPointMoved: a retransmitted copy arrives after the
// in-order point moved past its frame (the original was only late): it is a
// duplicate, whoever owns the point.
func TestFastPathLateCopyAfterPointMoved(t *testing.T) {
	s := fastSim(t)
	s.Send(lgsim.A, 50, 0)
	finish(t, s)
	b := s.Port(lgsim.B).R
	if !b.FastOwned() {
		t.Fatal("the kernel does not own the point after a quiet run")
	}
	// A copy of frame 10 (Retx) and a plain duplicate of frame 20.
	for _, f := range []struct {
		q    int
		retx bool
	}{{10, true}, {20, false}} {
		claims := b.Stats.FastClaims
		frame := make([]byte, 128+seqhdr.MaxOverhead)
		h := seqhdr.Header{Type: seqhdr.TypeData, Seq: seqhdr.Seq(f.q), EtherType: 0x0800, Retx: f.retx}
		if _, err := h.Put(frame[seqhdr.MACLen:]); err != nil {
			t.Fatal(err)
		}
		s.Inject(lgsim.B, frame)
		finish(t, s)
		// The kernel passes a Retx copy on without giving the point away:
		// the core drops it as late without claiming the point.
		if f.retx && (b.Stats.FastClaims != claims || !b.FastOwned()) {
			t.Fatalf("a late copy of frame %d made the core claim the point (claims %d → %d)", f.q, claims, b.Stats.FastClaims)
		}
	}
	wantDelivered(t, s, lgsim.B, seqIDs(0, 50))
	if d := b.Stats.DupDropped; d != 2 {
		t.Fatalf("duplicates dropped %d, want 2", d)
	}
	if !b.FastOwned() {
		t.Fatal("the point did not go back to the kernel after the duplicates")
	}
}

// TestFastPathWrapAround: the point wraps the serial space in the kernel's
// hands and across hand-overs.
func TestFastPathWrapAround(t *testing.T) {
	s := fastSim(t)
	n := 2*seqhdr.Space + 1000
	for k := 1000; k < n; k += 50_000 {
		s.AddRule(lgsim.A, lgsim.DropNthData(k))
	}
	s.Send(lgsim.A, n, us)
	finish(t, s)
	got := s.Delivered(lgsim.B)
	if len(got) != n {
		t.Fatalf("delivered %d of %d", len(got), n)
	}
	t.Logf("kernel delivered %d, receiver %+v", s.FastDelivered(lgsim.B), s.Port(lgsim.B).R.Stats)
	for i, id := range got {
		if id != uint64(i) {
			t.Fatalf("delivery %d is frame %d: out of order or duplicated", i, id)
		}
	}
	if s.FastDelivered(lgsim.B) < n/2 {
		t.Fatalf("the kernel delivered only %d of %d", s.FastDelivered(lgsim.B), n)
	}
}

// TestFastPointOffer: the model of the XDP program moves the point by one
// on a delivery and otherwise at most gives it away; random frames never
// move it anywhere else.
func TestFastPointOffer(t *testing.T) {
	fp := linkguardian.NewFastPoint()
	rng := rand.New(rand.NewPCG(7, 7))
	fp.Point.Store(linkguardian.FastOwned | 5)
	frame := make([]byte, 64)
	mk := func(q seqhdr.Seq, flags byte) []byte {
		clear(frame)
		binary.BigEndian.PutUint16(frame[12:], seqhdr.EtherType)
		frame[14], frame[15] = byte(seqhdr.TypeData), flags
		if q.Era() {
			frame[15] |= seqhdr.FlagEra
		}
		binary.BigEndian.PutUint16(frame[16:], q.Num())
		return frame
	}
	if fp.Offer(mk(5, seqhdr.FlagRetx)) || fp.Point.Load() != linkguardian.FastOwned|5 {
		t.Fatal("a retransmitted copy was delivered or moved the point")
	}
	if !fp.Offer(mk(5, 0)) || fp.Point.Load() != linkguardian.FastOwned|6 {
		t.Fatal("the next frame was not delivered")
	}
	if fp.Offer(mk(8, 0)) || fp.Point.Load() != 6 {
		t.Fatalf("a frame ahead did not give the point away: %#x", fp.Point.Load())
	}
	fp.Point.Store(linkguardian.FastOwned | linkguardian.FastSeqMask)
	fp.Adopted.Store(linkguardian.FastSeqMask - 100) // the core's ackNo
	if !fp.Offer(mk(seqhdr.Seq(linkguardian.FastSeqMask), 0)) || fp.Point.Load() != linkguardian.FastOwned {
		t.Fatalf("no wrap: %#x", fp.Point.Load())
	}
	for range 200_000 {
		b := make([]byte, rng.IntN(80))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if len(b) > 22 && rng.IntN(2) == 0 {
			binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
			b[14] = byte(seqhdr.TypeData)
			b[15] &= 0x0f
		}
		old := fp.Point.Load()
		ok := fp.Offer(b)
		now := fp.Point.Load()
		switch {
		case ok && now != linkguardian.FastOwned|(old+1)&linkguardian.FastSeqMask:
			t.Fatalf("delivered but the point went %#x → %#x", old, now)
		case !ok && now != old && now != old&^linkguardian.FastOwned:
			t.Fatalf("declined but the point went %#x → %#x", old, now)
		case ok && (old-fp.Adopted.Load())&linkguardian.FastSeqMask >= linkguardian.FastLead:
			t.Fatalf("delivered %#x, FastLead or more past Adopted %#x", old, fp.Adopted.Load())
		}
		if rng.IntN(50) == 0 {
			// The core hands the point back (Adopted: its ackNo, or an
			// older one the lead bound may stop at).
			q := seqhdr.Seq(rng.IntN(seqhdr.Space))
			fp.Adopted.Store(uint64(q.Add(-rng.IntN(2) * (linkguardian.FastLead - 20))))
			fp.Point.Store(linkguardian.FastOwned | uint64(q))
		}
	}
}

// TestFastPointLookEvery: with LookEvery longer than AckDelay the core looks
// at the point the kernel owns LookEvery apart, not AckDelay (each look
// wakes the worker), and the frames a look finds delivered get their ACK
// AckDelay after it.
func TestFastPointLookEvery(t *testing.T) {
	const look = 1000 * us
	rc := receiverCfg(linkguardian.InOrder)
	rc.AckDelay = 50 * us
	p := newEndpoint(t, linkguardian.Config{Receiver: rc}, linksim.NewPool(64, 2048, 256))
	fp := linkguardian.NewFastPoint()
	fp.LookEvery = look
	p.SetFast(fp)
	if !p.R.HandOff(0) {
		t.Fatal("no hand-off")
	}
	fp.Point.Store(linkguardian.FastOwned | 5) // the kernel delivered 0-4
	if d := p.NextDeadline(0, true); d != look {
		t.Fatalf("first look at %d, want LookEvery %d", d, look)
	}
	p.Poll(look-us, true)
	if p.R.Stats.FastDelivered != 0 || len(p.Out.Urgent)+len(p.Out.Low)+len(p.Out.Normal) != 0 {
		t.Fatalf("a Poll before the look took in %d frames or sent something", p.R.Stats.FastDelivered)
	}
	p.Poll(look, true)
	if p.R.Stats.FastDelivered != 5 {
		t.Fatalf("the look took in %d of the kernel's 5 frames", p.R.Stats.FastDelivered)
	}
	if d := p.NextDeadline(look, true); d != look+rc.AckDelay {
		t.Fatalf("ACK deadline %d, want the look + AckDelay %d", d, look+rc.AckDelay)
	}
	p.Poll(look+rc.AckDelay, true)
	if p.R.Stats.ExplicitAcksSent != 1 {
		t.Fatalf("%d ACKs sent AckDelay after the look, want 1", p.R.Stats.ExplicitAcksSent)
	}
}
