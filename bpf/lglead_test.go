package bpf

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// The lead bound (linkguardian.FastLead) in the programs themselves: the
// kernel delivers or assigns a serial only while it is less than FastLead
// past what Go last adopted or published, whatever else would allow it.

// TestLGRxLeadBound: with Adopted FastLead − 1 behind the point the frame
// at the point is delivered; at FastLead behind, the same in-order frame
// makes the program give the point to Go (handovers, lead) and pass the
// frame on; once Go has adopted, it delivers again. Across the era wrap.
func TestLGRxLeadBound(t *testing.T) {
	p, s := loadLGRx(t)
	adopted := seqhdr.Seq(LGSeqMask - 100)
	at := adopted.Add(linkguardian.FastLead - 1)
	s.Adopted().Store(uint64(adopted))
	s.Point().Store(owned(uint64(at)))
	f := lgData(t, at, false, 0, 30)
	if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, stripped(t, f)) {
		t.Fatalf("serial %#x, FastLead − 1 past Adopted: verdict %d, want it delivered", at, ret)
	}
	next := at.Next()
	f = lgData(t, next, false, 0, 30)
	if ret, out := runLG(t, p, f); ret != xdpPass || !bytes.Equal(out, f) {
		t.Fatalf("serial %#x, FastLead past Adopted: verdict %d (want XDP_PASS), changed %v", next, ret, !bytes.Equal(out, f))
	}
	if got, c := s.Point().Load(), s.Counters(); got != uint64(next) || c.Frames != 1 || c.Handovers != 1 || c.Lead != 1 {
		t.Fatalf("point %#x (want %#x, not owned), counters %+v: want one delivery, one handover for the lead", got, uint64(next), c)
	}
	// Go claims, adopts and hands back: the program delivers again.
	s.Adopted().Store(uint64(next))
	s.Point().Store(owned(uint64(next)))
	if ret, _ := runLG(t, p, f); ret != xdpRedirect || s.Point().Load() != owned(uint64(next.Next())) {
		t.Fatalf("after Go adopted: verdict %d, point %#x", ret, s.Point().Load())
	}
}

// TestLGTxLeadBound: the peer acknowledges each frame at once (peer_ack),
// which opens the window past Limit; the program numbers frames until the
// next one would be FastLead past base = Limit − Credit, then gives
// sending to Go (declined_window) with that frame.
func TestLGTxLeadBound(t *testing.T) {
	p, tx, rx := loadLGTx(t)
	if err := p.SetLGTxAck(true); err != nil {
		t.Fatal(err)
	}
	host := lgHostFrame(rand.New(rand.NewPCG(9, 9)), 80, 0x0800)
	base := seqhdr.Seq(LGSeqMask - 30)
	const credit = 8
	tx.Credit().Store(credit)
	tx.Limit().Store(LGLimitValid | uint64(base.Add(credit)))
	// The kernel is FastLead − 2 past base; the peer acknowledged all of it.
	q := base.Add(linkguardian.FastLead - 2)
	tx.State().Store(LGOwned | uint64(q))
	for i := 0; i < 3; i++ {
		rx.PeerAck().Store(LGAckValid | uint64(q.Add(-1)))
		ret, _ := runLG(t, p, host)
		if i < 2 && (ret != xdpRedirect || tx.State().Load() != LGOwned|uint64(q.Next())) {
			t.Fatalf("serial %#x (%d past base): verdict %d, state %#x; want it sent", q, seqhdr.Diff(q, base), ret, tx.State().Load())
		}
		if i == 2 {
			if ret != xdpPass || tx.State().Load() != uint64(q) {
				t.Fatalf("serial %#x (FastLead past base): verdict %d, state %#x; want sending given to Go at it", q, ret, tx.State().Load())
			}
			if c := tx.Counters(); c.Sent != 2 || c.Declined != 1 || c.DeclinedWindow != 1 {
				t.Fatalf("counters %+v: want 2 sent, 1 declined for the window", c)
			}
		}
		q = q.Next()
	}
}
