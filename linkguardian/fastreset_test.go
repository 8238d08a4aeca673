package linkguardian_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// TestFastResetAfterHandOver: a reset while the kernel owns the receive
// point and sending (it delivered and sent frames the core never looked
// at, and read an ACK of the old numbering) restarts both numberings in
// the shared words before anything else runs: the point is {not owned,
// rx}, State {not owned, tx}; the kernel delivers no frame of the old
// numbering, piggybacks the new numbering's ACK, and the old PeerAck
// (which, with tx far away, names a serial of the new numbering) opens no
// window past Limit and releases nothing.
func TestFastResetAfterHandOver(t *testing.T) {
	e := newFastEnd(t, 64, true)
	p, pt := e.p, e.pt
	if !p.R.HandOff(0) || !e.handOff(0) {
		t.Fatal("no hand-over")
	}
	// The old numbering: the kernel sends 40 frames and delivers 20 from
	// the peer, the last of them acknowledging up to 30.
	for id := range 40 {
		if _, ok := e.kernel(int64(1+id), id); !ok {
			t.Fatalf("kernel send %d", id)
		}
	}
	for q := range seqhdr.Seq(20) {
		if !pt.Offer(e.dataFrameAck(q, 30)) {
			t.Fatalf("kernel delivery %v", q)
		}
	}
	if pt.PeerAck.Load() != linkguardian.FastAckValid|30 {
		t.Fatalf("setup: PeerAck %#x", pt.PeerAck.Load())
	}
	// A new peer: our numbering restarts far away (the other half), so
	// the old ACK 30 lies inside the new window; the peer's at 40000.
	tx, rx := seqhdr.Seq(seqhdr.Space-20), seqhdr.Seq(40000)
	p.Reset(100, tx, rx)
	if v, s := pt.Point.Load(), e.fs.State.Load(); v != uint64(rx) || s != uint64(tx) {
		t.Fatalf("after Reset: point %#x (want %#x), State %#x (want %#x)", v, uint64(rx), s, uint64(tx))
	}
	if pt.Offer(e.dataFrameAck(20, 30)) || pt.Offer(e.dataFrameAck(rx, 0)) {
		t.Fatal("the kernel delivered after the reset, before the hand-back")
	}
	e.release(t)
	// Handed back: new frames only (the peer's first carries no ACK).
	if !p.R.HandOff(101) || !pt.Offer(e.dataFrame(rx)) || pt.Offer(e.dataFrameAck(21, 30)) {
		t.Fatal("after the hand-back: want the new numbering's next frame delivered, the old one not")
	}
	p.R.HandOff(102) // the old frame gave the point away (a duplicate for the core)
	if !e.handOff(102) {
		t.Fatal("no send hand-back")
	}
	sent := 0
	for id := range 200 {
		q, ack, ok := e.fs.Offer(e.hostFrame(id, 100), pt, int64(103+id))
		if !ok {
			break
		}
		if q != tx.Add(id) || ack != rx {
			t.Fatalf("kernel send %d: serial %v ACK %v; want %v and %v (the new numberings)", id, q, ack, tx.Add(id), rx)
		}
		sent++
	}
	credit := linkguardian.DefaultSenderConfig().TxBuffer
	credit = min(credit, 64)
	next := p.TxNext()
	if sent != credit || e.fs.Widened.Load() != 0 || next != tx.Add(credit) || p.S.Stats.Acked != 0 || p.S.Outstanding() != credit {
		t.Fatalf("after the reset the kernel sent %d (credit %d, %d past Limit); next %v (want %v), %d acknowledged, %d outstanding: an old ACK counted in the new numbering",
			sent, credit, e.fs.Widened.Load(), next, tx.Add(credit), p.S.Stats.Acked, p.S.Outstanding())
	}
}

// dataFrameAck is dataFrame with a piggybacked ACK.
func (e *fastEnd) dataFrameAck(q, ack seqhdr.Seq) []byte {
	buf := make([]byte, seqhdr.MaxOverhead+100)
	copy(buf[seqhdr.MaxOverhead:], e.hostFrame(int(q), 100))
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: q, HasAck: true, Ack: ack}
	off, n, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, 100, &h)
	if err != nil {
		panic(err)
	}
	return buf[off : off+n]
}

// TestFastSetFastClaims: disconnecting the fast path (SetFast(nil)) while
// the kernel owns the point takes the point back first, as SetFastSend
// does for sending: the kernel delivers nothing more, and the core, which
// adopted what the kernel delivered, takes a late copy of one of those
// frames for a duplicate.
func TestFastSetFastClaims(t *testing.T) {
	e := newFastEnd(t, 64, true)
	p, pt := e.p, e.pt
	if !p.R.HandOff(0) {
		t.Fatal("no hand-off")
	}
	for q := range seqhdr.Seq(10) {
		if !pt.Offer(e.dataFrame(q)) {
			t.Fatalf("kernel delivery %v", q)
		}
	}
	p.SetFast(nil)
	if pt.Offer(e.dataFrame(10)) {
		t.Fatal("the kernel delivered after the fast path was disconnected")
	}
	if v := pt.Point.Load(); v&linkguardian.FastOwned != 0 || p.R.AckNo() != 10 || p.R.FastOwned() {
		t.Fatalf("after SetFast(nil): point %#x, ackNo %v (want 10), handed %v", v, p.R.AckNo(), p.R.FastOwned())
	}
	e.core(t, 1, e.dataFrame(5))
	if st := p.R.Stats; st.DupDropped != 1 || st.Delivered != 10 {
		t.Fatalf("a late copy of a frame the kernel delivered: %d duplicates dropped (want 1), %d delivered (want 10)", st.DupDropped, st.Delivered)
	}
}
