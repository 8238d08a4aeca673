package linkguardian_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// Reset releases every frame held in the TX buffer and the reorder buffer
// exactly once and restarts both directions' numbering where it is told, in
// either half of the serial space; traffic afterwards is delivered in order.
func TestPortReset(t *testing.T) {
	for _, q := range []seqhdr.Seq{7, seqhdr.Half + 5, seqhdr.Space - 3} {
		cfg := oneWay(linkguardian.InOrder, 1)
		// The hole stays open until the reset (at 200 µs). (The link is
		// quiet only 7 × AckNoTimeout after the reset: 700 ms of
		// simulated time at 100 ms, 36 s under the race detector.)
		cfg.B.Receiver.AckNoTimeout = 1e6
		cfg.B.Receiver.RenotifyInterval = 0
		cfg.AB.Rules = []*lgsim.Rule{lgsim.DropID(10, 100)}
		s := newSim(t, cfg)
		s.Send(lgsim.A, 100, 0)
		s.Run(200 * us)
		a, b := s.Port(lgsim.A), s.Port(lgsim.B)
		if fr, _ := b.R.Buffered(); fr == 0 || a.S.Outstanding() == 0 {
			t.Fatalf("setup: want frames held; reorder %d, TX buffer %d", fr, a.S.Outstanding())
		}
		n := len(s.Delivered(lgsim.B))
		a.Reset(s.Now(), q, 0)
		b.Reset(s.Now(), 0, q)
		if a.TxNext() != q || b.R.AckNo() != q || a.S.Outstanding() != 0 || b.Stats.Resets != 1 {
			t.Fatalf("after Reset: next %v ackNo %v outstanding %d", a.TxNext(), b.R.AckNo(), a.S.Outstanding())
		}
		s.Send(lgsim.A, 100, 0)
		finish(t, s)
		got := s.Delivered(lgsim.B)
		if n != 10 || len(got) != n+100 || got[n] != 100 || got[len(got)-1] != 199 {
			t.Fatalf("seq %v: delivered %d before the reset (want 10), then %v", q, n, head(got[n:]))
		}
	}
}
