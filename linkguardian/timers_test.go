package linkguardian_test

import (
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// While no ACK comes back, dummies back off exponentially instead of going
// out every DummyInterval: a few dozen in a millisecond, not hundreds. Once
// an ACK gets through, the link goes quiet and recovers the tail loss.
func TestDummyBackoff(t *testing.T) {
	cfg := oneWay(linkguardian.InOrder, 1)
	// Lose the only data frame (a tail loss, found by the first dummy) and
	// every explicit ACK for the first millisecond.
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropNthData(0)}
	cfg.BA.Rules = []*lgsim.Rule{lgsim.DropType(seqhdr.TypeAck, 1<<30)}
	s := newSim(t, cfg)
	s.Send(lgsim.A, 1, 0)
	s.Run(1_000_000) // 1 ms
	dummies := s.Port(lgsim.A).S.Stats.DummiesSent
	// DummyInterval 2 µs: 500 without backoff; with doubling up to 64× (128 µs)
	// 7 emissions reach 254 µs, then one per 128 µs: about 13.
	if dummies < 5 || dummies > 20 {
		t.Fatalf("%d dummies in 1 ms with no ACK coming back; want about 13 (backoff)", dummies)
	}
	cfg.BA.Rules[0].Count = 0 // the reverse path heals
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 1))
}

// NextDeadline names the next timer: the first dummy DummyInterval after the
// last frame sent, the explicit ACK AckDelay after the frame arrived, and
// nothing once everything is acknowledged.
func TestNextDeadline(t *testing.T) {
	s := newSim(t, oneWay(linkguardian.InOrder, 1))
	a, b := s.Port(lgsim.A), s.Port(lgsim.B)
	if d := a.NextDeadline(s.Now(), true); d != math.MaxInt64 {
		t.Fatalf("quiet sender: deadline %d", d)
	}
	s.Send(lgsim.A, 1, 0)
	s.Run(100) // the frame is sent, still on the wire (1 µs delay)
	sent := s.Now()
	if d := a.NextDeadline(s.Now(), true); d <= sent || d > sent+2*us {
		t.Fatalf("sender with an unacknowledged frame: deadline %d, want within DummyInterval (2 µs) of %d", d, sent)
	}
	if d := a.NextDeadline(s.Now(), false); d != math.MaxInt64 {
		t.Fatalf("sender with host frames queued: no dummy is due, got deadline %d", d)
	}
	s.Run(1100) // the frame has arrived at B; its ACK is pending for AckDelay (1 µs)
	if !b.R.PendingAck() {
		t.Fatal("setup: no ACK pending at the receiver")
	}
	if d := b.NextDeadline(s.Now(), true); d == math.MaxInt64 || d > s.Now()+1*us {
		t.Fatalf("receiver owing an ACK: deadline %d, now %d", d, s.Now())
	}
	finish(t, s)
	for _, p := range []*linkguardian.Endpoint{a, b} {
		if d := p.NextDeadline(s.Now(), true); d != math.MaxInt64 {
			t.Fatalf("quiet link: deadline %d", d)
		}
	}
}

// TestRenotifyBacksOff: a lost frame whose retransmitted copies are lost too
// for longer than MaxRetxRounds re-notification intervals (a peer whose RX
// ring overflows for a few milliseconds on a busy machine drops every copy
// sent meanwhile) is still recovered before ackNoTimeout: re-notifications
// of one hole back off exponentially, so the sender's rounds last until the
// receiver would give up, instead of being spent in the first intervals.
// (Seen on veth under load: renotify tuned to 100 µs, retransmission delay
// up to 35 ms, 8 rounds spent in 1 ms, holes skipped after ackNoTimeout.)
func TestRenotifyBacksOff(t *testing.T) {
	cfg := oneWay(linkguardian.InOrder, 1)
	cfg.B.Receiver.AckNoTimeout = 100 * 10 * us // 100 renotify intervals
	const q = 5
	outage := int64(30 * 10 * us) // copies lost for 30 intervals after the loss
	var s *lgsim.Sim
	var lostAt int64 = -1
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropIf(math.MaxInt, func(i *lgsim.Info) bool {
		if !i.IsData() || i.Hdr.Seq != seqhdr.Seq(q) {
			return false
		}
		if lostAt < 0 {
			lostAt = s.Now()
		}
		return s.Now()-lostAt < outage
	})}
	s = newSim(t, cfg)
	s.Send(lgsim.A, 20, 0)
	finish(t, s)
	rs, ss := s.Port(lgsim.B).R.Stats, s.Port(lgsim.A).S.Stats
	t.Logf("receiver %+v", rs)
	t.Logf("sender %+v", ss)
	if rs.AckNoTimeouts != 0 || rs.Recovered != 1 {
		t.Fatalf("frame %d: recovered %d, given up %d (ackNoTimeout): the re-notifications were spent during the outage (%d requests, %d suppressed)",
			q, rs.Recovered, rs.AckNoTimeouts, ss.RetxRequests, ss.RetxSuppressed)
	}
	wantDelivered(t, s, lgsim.B, seqIDs(0, 20))
	// Backing off, the hole is re-notified about log2(outage/interval)+1
	// times during the outage, not once per interval.
	if rs.Renotifies > 10 {
		t.Errorf("%d re-notifications for one hole over %d intervals: no backoff", rs.Renotifies, outage/(10*us))
	}
}
