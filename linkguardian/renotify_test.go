package linkguardian_test

import (
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

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
