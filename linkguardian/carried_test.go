package linkguardian_test

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// slabMem is frame memory of fixed-size buffers with a free list.
type slabMem struct {
	b    []byte
	free []link.Handle
	used map[link.Handle]bool
}

const slabFrame = 256

func newSlabMem(n int) *slabMem {
	m := &slabMem{b: make([]byte, n*slabFrame), used: map[link.Handle]bool{}}
	for i := n - 1; i >= 0; i-- {
		m.free = append(m.free, link.Handle(i*slabFrame))
	}
	return m
}

func (m *slabMem) Bytes(h link.Handle, n int) []byte { return m.b[h : int(h)+n] }

func (m *slabMem) Alloc(n int) (link.Handle, bool) {
	if n > slabFrame || len(m.free) == 0 {
		return 0, false
	}
	h := m.free[len(m.free)-1]
	m.free = m.free[:len(m.free)-1]
	m.used[h] = true
	return h, true
}

func (m *slabMem) release(t *testing.T, f link.Frame) {
	h := f.H - f.H%slabFrame
	if !m.used[h] {
		t.Fatalf("frame %d released twice or never allocated", h)
	}
	delete(m.used, h)
	m.free = append(m.free, h)
}

// carriedFrame writes a frame of carried type ty numbered id.
func carriedFrame(t *testing.T, m *slabMem, ty seqhdr.Type, id uint32) link.Frame {
	h, ok := m.Alloc(100)
	if !ok {
		t.Fatal("out of frames")
	}
	b := m.Bytes(h, 100)
	clear(b)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xB5, byte(ty)})
	binary.BigEndian.PutUint32(b[seqhdr.DataOffset:], id)
	for i := seqhdr.DataOffset + 4; i < 100; i++ {
		b[i] = byte(id) ^ byte(i)
	}
	return link.Frame{H: h, Len: 100}
}

func carriedPair(t *testing.T, mode linkguardian.Delivery) (a, b *linkguardian.Endpoint, ma, mb *slabMem) {
	ma, mb = newSlabMem(4096), newSlabMem(4096)
	mk := func(m *slabMem) *linkguardian.Endpoint {
		p := newEndpoint(t, linkguardian.Config{Sender: senderCfg(1), Receiver: receiverCfg(mode)}, m)
		return p
	}
	return mk(ma), mk(mb), ma, mb
}

// wire copies the frames of src's transmit lists into dst's memory and
// hands them to dst, dropping those drop says (by transmission number);
// it releases src's Free list and leaves its deliveries.
type wire struct {
	n    int
	drop func(n int, f []byte) bool
}

func (w *wire) carry(t *testing.T, now int64, src *linkguardian.Endpoint, ms *slabMem, dst *linkguardian.Endpoint, md *slabMem) {
	o := &src.Out
	for _, list := range [][]link.Frame{o.Pause, o.Urgent, o.Retx, o.Normal, o.Low} {
		for _, f := range list {
			w.n++
			b := ms.Bytes(f.H, f.Len)
			if w.drop != nil && w.drop(w.n, b) {
				continue
			}
			h, ok := md.Alloc(f.Len)
			if !ok {
				t.Fatal("receiver out of frames")
			}
			copy(md.Bytes(h, f.Len), b)
			dst.Receive(now, link.Frame{H: h, Len: f.Len})
		}
	}
	for _, f := range o.Free {
		ms.release(t, f)
	}
	d := o.Deliver
	o.Reset()
	o.Deliver = d // the caller takes them
}

// TestCarriedFrames: cells and control frames of the cell family cross a
// link whose A→B direction loses every fifth transmission: sequenced ones
// (SendCarried) arrive whole, once and in order, their bytes beyond the
// link fields unchanged; unsequenced ones (PassCarried) arrive as they
// are, carrying B's ACKs back the other way; every frame is released once.
func TestCarriedFrames(t *testing.T) {
	for _, mode := range []linkguardian.Delivery{linkguardian.InOrder, linkguardian.NonBlocking} {
		t.Run(mode.String(), func(t *testing.T) {
			a, b, ma, mb := carriedPair(t, mode)
			ab := &wire{drop: func(n int, _ []byte) bool { return n%5 == 0 }}
			ba := &wire{}
			var got []uint32
			ctrl := 0
			now := int64(0)
			const cells = 600
			sent := 0
			for step := 0; step < 100000 && (len(got) < cells || !a.Quiet()); step++ {
				now += 500
				for sent < cells && a.CanSend(now) {
					ty := seqhdr.TypeCell
					if sent%50 == 0 {
						ty = seqhdr.TypeCreditGrant
					}
					if !a.SendCarried(now, carriedFrame(t, ma, ty, uint32(sent))) {
						t.Fatal("SendCarried refused while CanSend")
					}
					sent++
				}
				if step%7 == 0 { // an unsequenced control frame B→A
					f := carriedFrame(t, mb, seqhdr.TypeReach, 1<<31|uint32(step))
					if !b.PassCarried(f) {
						t.Fatal("PassCarried refused a REACH frame")
					}
					b.Out.Low = append(b.Out.Low, f)
					b.Out.Free = append(b.Out.Free, f)
				}
				a.Poll(now, sent == cells)
				b.Poll(now, true)
				ab.carry(t, now, a, ma, b, mb)
				ba.carry(t, now, b, mb, a, ma)
				for _, side := range []struct {
					p *linkguardian.Endpoint
					m *slabMem
				}{{b, mb}, {a, ma}} {
					for _, f := range side.p.Out.Deliver {
						fb := side.m.Bytes(f.H, f.Len)
						ty, _ := seqhdr.FrameType(fb)
						id := binary.BigEndian.Uint32(fb[seqhdr.DataOffset:])
						if f.Len != 100 {
							t.Fatalf("delivered %d bytes; want the whole frame (100)", f.Len)
						}
						for i := seqhdr.DataOffset + 4; i < 100; i++ {
							if fb[i] != byte(id)^byte(i) {
								t.Fatalf("frame %d: byte %d changed", id, i)
							}
						}
						if ty == seqhdr.TypeReach {
							ctrl++
						} else {
							got = append(got, id)
						}
						side.m.release(t, f)
					}
				}
				b.Out.Deliver, a.Out.Deliver = b.Out.Deliver[:0], a.Out.Deliver[:0]
			}
			for _, f := range a.Out.Free { // freed by the last ACKs
				ma.release(t, f)
			}
			a.Out.Reset()
			if len(got) != cells {
				t.Fatalf("B delivered %d of %d cells", len(got), cells)
			}
			seen := map[uint32]bool{}
			for i, id := range got {
				if seen[id] {
					t.Fatalf("cell %d delivered twice", id)
				}
				seen[id] = true
				if mode == linkguardian.InOrder && id != uint32(i) {
					t.Fatalf("delivery %d is cell %d: out of order in mode lg", i, id)
				}
			}
			if ctrl == 0 || a.Stats.RxUnseq == 0 {
				t.Errorf("A received %d unsequenced control frames (RxUnseq %d)", ctrl, a.Stats.RxUnseq)
			}
			if b.R.Stats.LostDetected == 0 || a.S.Stats.RetxCopies == 0 {
				t.Errorf("no loss was recovered: %+v %+v", b.R.Stats, a.S.Stats)
			}
			if len(ma.used) != 0 || len(mb.used) != 0 {
				t.Errorf("frames held at the end: A %d, B %d", len(ma.used), len(mb.used))
			}
		})
	}
}

// TestUnacked: the frames of a link that died are listed oldest first,
// exactly as they were handed in, from any sequence number on; they stay
// in the TX buffer, and a later call from where the last one ended lists
// only what was sent since.
func TestUnacked(t *testing.T) {
	a, _, ma, _ := carriedPair(t, linkguardian.InOrder)
	var in []link.Frame
	send := func(n int) {
		for range n {
			f := carriedFrame(t, ma, seqhdr.TypeCell, uint32(len(in)))
			in = append(in, f)
			if !a.SendCarried(int64(len(in)), f) {
				t.Fatal("refused")
			}
		}
	}
	first := a.TxNext()
	send(10)
	got, next := a.Unacked(first, nil)
	if len(got) != 10 || next != a.TxNext() {
		t.Fatalf("listed %d frames up to %v; want 10 up to %v", len(got), next, a.TxNext())
	}
	for i := range got {
		if got[i] != in[i] {
			t.Fatalf("frame %d: %+v; sent %+v", i, got[i], in[i])
		}
	}
	if a.S.Outstanding() != 10 {
		t.Errorf("Unacked took frames out of the TX buffer: %d outstanding", a.S.Outstanding())
	}
	send(3)
	got, _ = a.Unacked(next, nil)
	if len(got) != 3 || got[0] != in[10] {
		t.Errorf("from %v: listed %d frames; want the 3 sent since", next, len(got))
	}
	if got, _ := a.Unacked(first.Add(-5), nil); len(got) != 13 {
		t.Errorf("from before the oldest: listed %d of 13", len(got))
	}
	// Not a carried type: dropped and counted, never buffered.
	a.Out.Reset()
	f := carriedFrame(t, ma, seqhdr.TypeData, 1)
	if !a.SendCarried(0, f) || a.Stats.TxBad != 1 || a.S.Outstanding() != 13 || len(a.Out.Free) != 1 {
		t.Errorf("a data frame to SendCarried: TxBad %d, outstanding %d, freed %d", a.Stats.TxBad, a.S.Outstanding(), len(a.Out.Free))
	}
}
