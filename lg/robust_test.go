package lg_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/lg"
	"github.com/linkfabric/linkfabric/seqhdr"
	"github.com/linkfabric/linkfabric/simlink"
)

// TestLossNotificationOutsideWindow: a loss notification naming frames that
// were never sent, or more frames than the TX buffer holds, is counted and
// dropped. Before the fix, Loss{Seq: next+10, Count: 65535} with 5 frames
// outstanding wrapped the clamp in the 17-bit serial space and retransmitted
// empty TX buffer slots (a panic in seqhdr.SetRetx).
func TestLossNotificationOutsideWindow(t *testing.T) {
	pool := simlink.NewPool(64, 2048, 256)
	sc := *senderCfg(1)
	sc.TxBuffer = 8
	p, err := lg.NewPort(lg.Config{Sender: &sc}, pool)
	if err != nil {
		t.Fatal(err)
	}
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
