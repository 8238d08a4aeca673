package linkguardian_test

import (
	"fmt"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// Control-frame economy: explicit ACKs and dummies on a software-like link
// (25 µs each way: a worker wakeup per crossing) with the default
// configuration.

const swDelay = 25 * us

// softwareLink is a link with the default sender and receiver at each end
// that has them: one-way (A→B protected) or both ways.
func softwareLink(both bool) lgsim.Config {
	sc, rc := linkguardian.DefaultSenderConfig(), linkguardian.DefaultReceiverConfig()
	cfg := lgsim.Config{
		A:  linkguardian.Config{Sender: &sc},
		B:  linkguardian.Config{Receiver: &rc},
		AB: lgsim.DirConfig{Delay: swDelay, Rate: rate},
		BA: lgsim.DirConfig{Delay: swDelay, Rate: rate},
	}
	if both {
		sc2, rc2 := sc, rc
		cfg.A.Receiver, cfg.B.Sender = &rc2, &sc2
	}
	return cfg
}

// controlFrames is the explicit ACKs and dummies sent both ways so far.
func controlFrames(s *lgsim.Sim) uint64 {
	n := uint64(0)
	for _, side := range []lgsim.Side{lgsim.A, lgsim.B} {
		d := s.Dir(side)
		n += d.SentByType[seqhdr.TypeAck] + d.SentByType[seqhdr.TypeDummy]
	}
	return n
}

// TestLowRateControlFrames: a frame every millisecond, one way, no reverse
// data to carry ACKs. Each frame needs one explicit ACK; once the sender has
// learned how long that ACK takes, nothing else: no dummy ahead of the ACK
// (and no second ACK answering it), no repeats of the ACK. Before the
// economy, each frame cost a dummy, two ACKs and three repeats.
func TestLowRateControlFrames(t *testing.T) {
	s := newSim(t, softwareLink(false))
	const warm, n = 10, 40
	s.Send(lgsim.A, warm, 1_000*us)
	s.Run(warm * 1_000 * us)
	learning := controlFrames(s)
	s.Send(lgsim.A, n, 1_000*us)
	s.Run(n * 1_000 * us)
	steady := controlFrames(s) - learning
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, warm+n))
	if learning > 3*warm {
		t.Errorf("%d control frames for the first %d data frames (learning); want at most %d", learning, warm, 3*warm)
	}
	if steady > n {
		t.Errorf("%d control frames for %d data frames at a low rate; want at most one (the explicit ACK) each: %+v %+v",
			steady, n, s.Port(lgsim.A).S.Stats, s.Port(lgsim.B).R.Stats)
	}
	if acks := s.Port(lgsim.A).S.Stats.Acked; acks != warm+n {
		t.Fatalf("sender saw %d frames acknowledged, want %d", acks, warm+n)
	}
}

// TestLowRateRequestResponse: A sends a frame every millisecond and B answers
// each one 60 µs after it arrived, within B's AckDelay: the answer carries
// the ACK, and only B's answers need explicit ACKs (nothing follows them for
// a millisecond). Half a control frame per data frame, none of them dummies.
func TestLowRateRequestResponse(t *testing.T) {
	s := newSim(t, softwareLink(true))
	const n = 50
	s.Send(lgsim.A, n, 1_000*us)
	s.Run(swDelay + 60*us)
	s.Send(lgsim.B, n, 1_000*us)
	s.Run(10 * 1_000 * us)
	learning, bAcks := controlFrames(s), s.Dir(lgsim.B).SentByType[seqhdr.TypeAck]
	s.Run((n - 10) * 1_000 * us)
	steady := controlFrames(s) - learning
	bAcks = s.Dir(lgsim.B).SentByType[seqhdr.TypeAck] - bAcks
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, n))
	wantDelivered(t, s, lgsim.A, seqIDs(0, n))
	if data := uint64(2 * (n - 10)); 2*steady > data+2 {
		t.Errorf("%d control frames for %d data frames; want about one per answer", steady, data)
	}
	if bAcks > 0 {
		t.Errorf("B sent %d explicit ACKs though every request was answered within AckDelay", bAcks)
	}
}

// TestCoalescedAcksKeepCredit: however long AckDelay is, an explicit ACK
// goes as soon as AckEvery frames are unacknowledged, so a sender whose
// credit lasts while those ACKs cross never runs out of it.
func TestCoalescedAcksKeepCredit(t *testing.T) {
	const n, window = 5000, 1024
	cfg := softwareLink(false)
	cfg.A.Sender.TxBuffer, cfg.B.Receiver.Window = window, window
	cfg.B.Receiver.AckDelay = 1_000_000 // far longer than the transfer of a window
	s := newSim(t, cfg)
	s.Send(lgsim.A, n, 0)
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, n))
	ss, rs := s.Port(lgsim.A).S.Stats, s.Port(lgsim.B).R.Stats
	every := s.Port(lgsim.B).R.AckEvery()
	if every != window/4 {
		t.Fatalf("AckEvery %d, want Window/4 = %d", every, window/4)
	}
	if ss.TxBufPeakFrames >= window {
		t.Errorf("the sender's TX buffer held %d frames: it ran out of credit waiting for coalesced ACKs", ss.TxBufPeakFrames)
	}
	if want := uint64(n / every); rs.ExplicitAcksSent < want || rs.ExplicitAcksSent > want+2 {
		t.Errorf("%d explicit ACKs for %d frames, want about one per AckEvery (%d)", rs.ExplicitAcksSent, n, want)
	}
}

// TestCoalescedAcksLostUnderCredit: with the default (coalescing) receiver
// and a credit-bound sender, losing explicit ACKs does not stall the link:
// the sender's probes, which the receiver answers at once, replace the
// repeats the default receiver no longer sends.
func TestCoalescedAcksLostUnderCredit(t *testing.T) {
	const n = 2000
	bound := func(w int) lgsim.Config {
		cfg := softwareLink(false)
		cfg.A.Sender.TxBuffer, cfg.B.Receiver.Window = w, max(w, 2)
		return cfg
	}
	sc := linkguardian.DefaultSenderConfig()
	// A lost ACK costs at most one probe interval (they back off up to the
	// larger of 64 × DummyInterval and DummyWaitMax), and the answer to
	// the probe is the next ACK.
	maxGap := max(64*sc.DummyInterval, sc.DummyWaitMax)
	for _, w := range []int{4, 64, 1024} {
		s := newSim(t, bound(w))
		s.Send(lgsim.A, n, 0)
		runBounded(t, s, n, 1e10)
		base := s.Now()
		for _, c := range []struct {
			name string
			lose func(k int) bool
		}{
			{"first", func(k int) bool { return k == 0 }},
			{"fifth", func(k int) bool { return k == 4 }},
			{"every3rd", func(k int) bool { return k%3 == 2 }},
			{"all-but-every10th", func(k int) bool { return k%10 != 9 && k < 100 }},
		} {
			t.Run(fmt.Sprintf("w%d/%s", w, c.name), func(t *testing.T) {
				s := ackLossRun(t, bound(w), c.lose, n, 1e10)
				lost := int64(s.Dir(lgsim.B).DroppedByType[seqhdr.TypeAck])
				if limit := 2*base + (lost+2)*maxGap; s.Now() > limit {
					t.Errorf("%d lost ACKs: done after %d µs, want within %d µs", lost, s.Now()/us, limit/us)
				}
			})
		}
	}
}

// TestTailLossFoundWithinDummyWaitMax: at a low rate, after the sender has
// learned to wait for ACKs, a lost tail frame (nothing follows it for a
// millisecond) is still found by a dummy within DummyWaitMax and recovered
// one retransmission round trip later, long before ackNoTimeout.
func TestTailLossFoundWithinDummyWaitMax(t *testing.T) {
	s := tailLoss(t, softwareLink(false))
	if w := s.Port(lgsim.A).S.DummyWait(); w < 2*swDelay {
		t.Fatalf("learned dummy wait %d ns; want at least the ACK round trip %d", w, 2*swDelay)
	}
	wantTailRecovered(t, s)
}

// tailLossFrame is the frame tailLoss loses.
const tailLossFrame = 20

// tailLoss sends 30 frames from A a millisecond apart and loses the 21st,
// a tail frame: nothing follows it for a millisecond. All are delivered.
func tailLoss(t testing.TB, cfg lgsim.Config) *lgsim.Sim {
	t.Helper()
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropNthData(tailLossFrame)}
	s := newSim(t, cfg)
	s.Send(lgsim.A, 30, 1_000*us)
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 30))
	return s
}

// wantTailRecovered: tailLoss's lost frame reached B within the longest
// dummy wait and three crossings (the dummy crosses, the notification
// returns, the copy crosses) and a microsecond of polling at each end on
// the way, recovered through the dummy rather than an ACK-no timeout.
func wantTailRecovered(t testing.TB, s *lgsim.Sim) {
	t.Helper()
	const lost = tailLossFrame
	sent, del := s.SentAt(lgsim.A, lost), s.DeliveredAt(lgsim.B)[lost]
	maxWait := linkguardian.DefaultSenderConfig().DummyWaitMax
	if limit := maxWait + 3*swDelay + 10*us; del-sent > limit {
		t.Errorf("tail frame delivered %d µs after it was sent; want within %d µs", (del-sent)/us, limit/us)
	}
	if r := s.Port(lgsim.B).R.Stats; r.AckNoTimeouts != 0 || r.Recovered != 1 {
		t.Fatalf("receiver %+v", r)
	}
}
