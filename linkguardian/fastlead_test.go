package linkguardian_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// The kernel's lead over Go: a worker that does not look for longer than
// half the sequence space takes in frames, the kernel's fast paths still
// hand over cleanly (see "The receive fast path" and "The send fast path").

// leadFrames is more than half the sequence space.
const leadFrames = seqhdr.Half + 4464

// dataFrame is the link's data frame of serial q (a 100-byte host frame).
func (e *fastEnd) dataFrame(q seqhdr.Seq) []byte {
	buf := make([]byte, seqhdr.MaxOverhead+100)
	copy(buf[seqhdr.MaxOverhead:], e.hostFrame(int(q), 100))
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: q}
	off, n, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, 100, &h)
	if err != nil {
		panic(err)
	}
	return buf[off : off+n]
}

// core hands data frame b to the endpoint and polls it, freeing what it
// delivered and released.
func (e *fastEnd) core(t *testing.T, now int64, b []byte) {
	t.Helper()
	a, ok := e.pool.Alloc(len(b))
	if !ok {
		t.Fatal("pool empty")
	}
	copy(e.pool.Bytes(a, len(b)), b)
	e.p.Receive(now, link.Frame{H: a, Len: len(b)})
	e.p.Poll(now, true)
	for _, f := range e.p.Out.Deliver {
		e.pool.Free(f.H)
	}
	e.release(t)
}

// TestFastLeadReceive: the kernel delivers more than half the sequence
// space of in-order frames while the core does not look (the kernel's send
// path piggybacking ACKs keeps moving Wake, as under traffic both ways).
// The kernel gives the point to the core before its lead reaches
// FastLead; every frame is delivered once, and the frame after a hole at
// the end is taken as ahead of the point, not as a duplicate.
func TestFastLeadReceive(t *testing.T) {
	e := newFastEnd(t, 64, true)
	p, pt := e.p, e.pt
	if !p.R.HandOff(0) {
		t.Fatal("no hand-off")
	}
	every := pt.AckEvery.Load()
	var kernel, core, handOffs int
	now := int64(1)
	for i := range leadFrames {
		q := seqhdr.Seq(i & (seqhdr.Space - 1))
		b := e.dataFrame(q)
		if pt.Offer(b) {
			kernel++
			// The kernel's send path piggybacks ACK q on a frame of its
			// own, moving Wake on (FastSend.Offer, step 5).
			if v := pt.Point.Load(); v&linkguardian.FastOwned != 0 && v&linkguardian.FastWakeOn != 0 {
				w := linkguardian.FastWakeOn | uint64(q.Add(int(every)))<<linkguardian.FastWakeShift
				pt.Point.CompareAndSwap(v, v&^(linkguardian.FastWakeOn|linkguardian.FastSeqMask<<linkguardian.FastWakeShift)|w)
			}
			continue
		}
		// The kernel passed the frame on: the core handles it and, clean,
		// hands the point back.
		core++
		now++
		e.core(t, now, b)
		if p.R.HandOff(now) {
			handOffs++
		}
	}
	t.Logf("kernel delivered %d, core %d, %d hand-offs", kernel, core, handOffs)
	// A hole at leadFrames: the next frame reaches the core.
	last := seqhdr.Seq(leadFrames & (seqhdr.Space - 1))
	now++
	b := e.dataFrame(last.Next())
	if pt.Offer(b) {
		t.Fatal("the kernel delivered a frame after a hole")
	}
	e.core(t, now, b)
	st := p.R.Stats
	if p.R.AckNo() != last || st.DupDropped != 0 || st.Delivered != leadFrames {
		t.Fatalf("after %d in-order frames and a hole: ackNo %v (want %v), %d duplicates dropped, %d delivered (kernel %d, core %d)",
			leadFrames, p.R.AckNo(), last, st.DupDropped, st.Delivered, kernel, core)
	}
}

// TestFastLeadSend: the kernel sends while the peer acknowledges every
// frame at once through frames the kernel's receive path reads (PeerAck),
// and the core does not look. The kernel gives sending to the core before
// its lead over the core's base reaches FastLead; the core then adopts
// every frame the kernel numbered and numbers on after them.
func TestFastLeadSend(t *testing.T) {
	e := newHandedEnd(t, 64, true)
	p := e.p
	n := 0
	for ; n < leadFrames; n++ {
		q, ok := e.kernel(int64(n+1), n)
		if !ok {
			break
		}
		e.pt.PeerAck.Store(linkguardian.FastAckValid | uint64(q))
	}
	kn := seqhdr.Seq(e.fs.State.Load() & linkguardian.FastSeqMask)
	next := p.TxNext() // claims and adopts
	t.Logf("the kernel sent %d frames, gave sending away at %v; the core's next %v, %+v", n, kn, next, p.S.Stats)
	if n > linkguardian.FastLead || next != kn || p.S.Stats.FastSent != uint64(n) || p.S.Stats.FastOverrun != 0 {
		t.Fatalf("the kernel sent %d frames (bound %d) up to %v; the core's next is %v, it adopted %d (%d overruns)",
			n, linkguardian.FastLead, kn, next, p.S.Stats.FastSent, p.S.Stats.FastOverrun)
	}
}

// TestFastStalePeerAck: the peer sent data once (its ACK of serial 5 is in
// PeerAck) and then only explicit ACKs, while the kernel sends more than
// the whole sequence space. The old ACK must never count again when the
// numbering comes round to it: nothing is sent past Limit on it, and the
// core's TX buffer holds exactly what the explicit ACKs left.
func TestFastStalePeerAck(t *testing.T) {
	e := newHandedEnd(t, 64, true)
	p := e.p
	now := int64(1)
	sent, unacked := 0, 0
	var widened uint64 // past Limit on the fresh ACK
	for id := 0; sent < seqhdr.Space+4000; id++ {
		now++
		if _, ok := e.kernel(now, id); ok {
			sent++
			unacked++
			if sent == 6 {
				// The peer's one data frame, acknowledging 0..5: the
				// kernel may go that far past Limit, once.
				e.pt.PeerAck.Store(linkguardian.FastAckValid | 5)
				unacked -= 6
			}
			continue
		}
		// The window is full: the core looks, then the peer's explicit
		// ACK of everything comes in.
		p.Poll(now, true)
		if out := p.S.Outstanding(); out != unacked {
			t.Fatalf("after %d frames: %d outstanding in the core, %d unacknowledged (%d past Limit): an old ACK counted",
				sent, out, unacked, e.fs.Widened.Load())
		}
		e.rx(now, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: p.S.Next().Add(-1)})
		p.Poll(now, true)
		e.release(t)
		unacked = 0
		if widened == 0 {
			widened = e.fs.Widened.Load()
		}
		if !e.handOff(now) {
			t.Fatalf("after %d frames: no hand-off", sent)
		}
	}
	if w := e.fs.Widened.Load(); w != widened {
		t.Fatalf("%d frames sent past Limit on an ACK the core had applied long before", w-widened)
	}
}
