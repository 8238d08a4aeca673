package linkguardian_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// TestLossNotificationOutsideWindow: a loss notification naming frames that
// were never sent, or more frames than the TX buffer holds, is counted and
// dropped. Before the fix, Loss{Seq: next+10, Count: 65535} with 5 frames
// outstanding wrapped the clamp in the 17-bit serial space and retransmitted
// empty TX buffer slots (a panic in seqhdr.SetRetx).
func TestLossNotificationOutsideWindow(t *testing.T) {
	p, pool := newSender(t, 1, 8, 0)
	now := int64(1000)
	for range 5 {
		if !p.Send(now, hostFrame(t, pool)) {
			t.Fatal("frame refused")
		}
	}
	release(p, pool)
	next := p.S.Next() // 5: frames 0..4 outstanding
	bad := []seqhdr.Header{
		{Type: seqhdr.TypeLoss, Seq: next.Add(10), Count: 65535},
		{Type: seqhdr.TypeLoss, Seq: next, Count: 1},         // never sent
		{Type: seqhdr.TypeLoss, Seq: next.Add(-2), Count: 3}, // runs past next
		{Type: seqhdr.TypeLoss, Seq: 0, Count: 9},            // longer than the TX buffer
		{Type: seqhdr.TypeLoss, Seq: next.Add(-70000), Count: 65535},
		{Type: seqhdr.TypeLoss, Seq: next.Add(60000), Count: 65535},
	}
	for i, h := range bad {
		now += 100 * us
		p.Receive(now, control(t, pool, h))
		if len(p.Out.Retx) != 0 {
			t.Fatalf("notification %d %+v retransmitted %d frames", i, h, len(p.Out.Retx))
		}
		release(p, pool)
	}
	if got := p.S.Stats.LossInvalid; got != uint64(len(bad)) {
		t.Fatalf("LossInvalid = %d, want %d", got, len(bad))
	}
	// A notification inside [base, next) still retransmits.
	now += 100 * us
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 3, Count: 2}))
	if len(p.Out.Retx) != 2 {
		t.Fatalf("valid notification: %d copies, want 2", len(p.Out.Retx))
	}
	release(p, pool)
	// One that starts before base (stale, reordered behind an ACK) is
	// clamped to base, not rejected.
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 1}))
	release(p, pool)
	now += 100 * us
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 0, Count: 3}))
	if len(p.Out.Retx) != 1 || p.S.Stats.RetxUnknown != 2 || p.S.Stats.LossInvalid != uint64(len(bad)) {
		t.Fatalf("stale notification: %d copies, stats %+v", len(p.Out.Retx), p.S.Stats)
	}
	release(p, pool)
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 4}))
	release(p, pool)
	if pool.InUse() != 0 || len(pool.Errors()) != 0 {
		t.Fatalf("frames in use %d, errors %v", pool.InUse(), pool.Errors())
	}
}

// TestReceiverAheadResync: a forged (or corrupted) dummy naming a frame far
// beyond what the sender has sent makes the receiver count the frames up to
// it lost and, after ackNoTimeout, skip them: its ackNo is then ahead of the
// sender, which it tells in every ACK. Before the fix the sender ignored
// those ACKs as invalid forever and the receiver dropped every new frame as
// a duplicate: the direction was dead. Now the sender resynchronises at the
// receiver's ACK and delivery resumes.
func TestReceiverAheadResync(t *testing.T) {
	for _, ahead := range []int{1, 500, 5000, 60000} {
		t.Run(fmt.Sprint(ahead), func(t *testing.T) {
			s := newSim(t, oneWay(linkguardian.InOrder, 1))
			s.Send(lgsim.A, 100, 0)
			finish(t, s)
			h := seqhdr.Header{Type: seqhdr.TypeDummy, Seq: s.Port(lgsim.A).S.Next().Add(ahead)}
			b := make([]byte, seqhdr.MinFrameLen)
			if _, err := seqhdr.PutControl(b, &[6]byte{2}, &[6]byte{2, 1}, &h); err != nil {
				t.Fatal(err)
			}
			s.Inject(lgsim.B, b)
			s.Send(lgsim.A, 100, 1000)
			finish(t, s)
			got := len(s.Delivered(lgsim.B))
			s.Send(lgsim.A, 100, 0)
			finish(t, s)
			if d := s.Delivered(lgsim.B)[got:]; !slices.Equal(d, seqIDs(200, 100)) {
				t.Fatalf("after the forged dummy, fresh frames delivered: %d %v; sender %+v", len(d), head(d), s.Port(lgsim.A).S.Stats)
			}
			// One frame ahead, the next real frames fill the "lost" ones;
			// further, ackNoTimeout skips past the sender, which resyncs
			// (twice when the window first forced the receiver forward).
			ss := s.Port(lgsim.A).S.Stats
			if ahead >= 500 && ss.Resyncs == 0 {
				t.Fatalf("no resync: %+v", ss)
			}
			t.Logf("resyncs %d, frames given up %d", ss.Resyncs, ss.ResyncDropped)
		})
	}
}
