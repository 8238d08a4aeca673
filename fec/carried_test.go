package fec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// carriedFrame returns a frame of a carried type (a cell, type 9) of n
// bytes, its link fields zero, its payload varying with id (id in bytes
// 22..23).
func carriedFrame(id, n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
	b[14] = byte(seqhdr.TypeCell)
	if n < seqhdr.DataOffset+2 {
		return b
	}
	binary.BigEndian.PutUint16(b[seqhdr.DataOffset:], uint16(id))
	for k := seqhdr.DataOffset + 2; k < n; k++ {
		b[k] = byte(id*7 + k)
	}
	return b
}

// carriedID checks a delivered carried frame against the frame sent (link
// fields aside) and returns its id.
func carriedID(t *testing.T, b []byte, lens map[int]int) int {
	t.Helper()
	id := int(binary.BigEndian.Uint16(b[seqhdr.DataOffset:]))
	want := carriedFrame(id, lens[id])
	if len(b) != len(want) || !bytes.Equal(b[:seqhdr.MACLen+3], want[:seqhdr.MACLen+3]) || !bytes.Equal(b[seqhdr.DataOffset:], want[seqhdr.DataOffset:]) {
		t.Fatalf("delivered carried frame %d (%d bytes) differs from the frame sent (%d bytes)", id, len(b), len(want))
	}
	return id
}

// TestCarriedRecover: cells sequenced in place (SendCarried) with a parity
// after every 4; one frame lost per group (the parity's group too, where
// the parity itself is lost) is rebuilt whole, link header included, and
// every cell is delivered once, at once (Immediate), whatever the order.
func TestCarriedRecover(t *testing.T) {
	p := newPair(t, SenderConfig{N: 4}, ReceiverConfig{Immediate: true, Carried: true})
	lens := map[int]int{}
	const groups = 10
	for g := range groups {
		for k := range 4 {
			id := g*4 + k
			lens[id] = 60 + (id*37)%900
			h, _ := p.a.Alloc(lens[id])
			copy(p.a.Bytes(h, lens[id]), carriedFrame(id, lens[id]))
			p.s.SendCarried(int64(id), link.Frame{H: h, Len: lens[id]})
		}
		p.flushSender()
		if len(p.wire) != 5 {
			t.Fatalf("group %d: %d frames on the wire; want 4 cells and a parity", g, len(p.wire))
		}
		p.deliver(int64(g), g%5) // the cell at g%5 lost, or (4) the parity
	}
	seen := map[int]bool{}
	for _, b := range p.got {
		id := carriedID(t, b, lens)
		if seen[id] {
			t.Fatalf("cell %d delivered twice", id)
		}
		seen[id] = true
		h, err := seqhdr.ParseCarried(b)
		if err != nil || h.Seq != seqhdr.Seq(id) || h.Unseq {
			t.Fatalf("cell %d: link fields %+v, %v; want sequenced as %d", id, h, err, id)
		}
	}
	if len(seen) != groups*4 {
		t.Fatalf("delivered %d cells of %d", len(seen), groups*4)
	}
	want := uint64(groups - groups/5) // groups that lost a cell, not the parity
	if st := p.r.Stats; st.Recovered != want || st.BadRecovery != 0 || st.BadData != 0 || st.Lost != 0 {
		t.Fatalf("receiver %+v; want %d recovered and nothing bad", st, want)
	}
	p.quiet()
}

// TestCarriedRefused: without Carried, a receiver takes cells for bad data;
// an unsequenced cell passes with Carried; a sender drops a frame that is
// not of a carried type; a parity that would rebuild a cell under another
// number than the one missing is refused.
func TestCarriedRefused(t *testing.T) {
	p := newPair(t, SenderConfig{N: 2}, ReceiverConfig{Immediate: true})
	h, _ := p.a.Alloc(100)
	copy(p.a.Bytes(h, 100), carriedFrame(1, 100))
	p.s.SendCarried(0, link.Frame{H: h, Len: 100})
	p.flushSender()
	p.deliver(0)
	if p.r.Stats.BadData != 1 || len(p.got) != 0 {
		t.Fatalf("a cell to a receiver without Carried: %+v, %d delivered", p.r.Stats, len(p.got))
	}
	h, _ = p.a.Alloc(100)
	copy(p.a.Bytes(h, 100), hostFrame(3, 100))
	p.s.SendCarried(0, link.Frame{H: h, Len: 100})
	if p.s.Stats.Bad != 1 || len(p.s.Out.Send) != 0 {
		t.Fatalf("SendCarried of a host frame: %+v", p.s.Stats)
	}
	p.flushSender()
	p.s.Poll(1e12) // close the open group
	p.flushSender()
	p.deliver(0)
	p.quiet()

	// Unsequenced (a control frame sent uncoded) and a forged rebuild.
	q := newPair(t, SenderConfig{N: 2}, ReceiverConfig{Immediate: true, Carried: true})
	un := carriedFrame(9, 80)
	if err := seqhdr.Stamp(un, &seqhdr.Header{Unseq: true, HasAck: true}); err != nil {
		t.Fatal(err)
	}
	put := func(b []byte) {
		h, _ := q.b.Alloc(len(b))
		copy(q.b.Bytes(h, len(b)), b)
		q.r.Receive(0, link.Frame{H: h, Len: len(b)})
		q.collect()
	}
	put(un)
	if q.r.Stats.Passthrough != 1 || len(q.got) != 1 {
		t.Fatalf("unsequenced cell: %+v", q.r.Stats)
	}
	// Cells 0 and 1; 1 lost; a parity that rebuilds a cell numbered 5.
	c0, c1 := carriedFrame(0, 80), carriedFrame(1, 80)
	_ = seqhdr.Stamp(c0, &seqhdr.Header{Seq: 0})
	_ = seqhdr.Stamp(c1, &seqhdr.Header{Seq: 5})
	par := make([]byte, ParityOffset+80)
	_ = PutParityHeader(par, &[6]byte{}, &[6]byte{}, &Parity{First: 0, Count: 2, LenXor: 80 ^ 80})
	for k := range 80 {
		par[ParityOffset+k] = c0[k] ^ c1[k]
	}
	put(c0)
	put(par)
	if q.r.Stats.BadRecovery != 1 || q.r.Stats.Recovered != 0 || len(q.got) != 2 {
		t.Fatalf("forged rebuild: %+v, %d delivered", q.r.Stats, len(q.got))
	}
	q.quiet()
}

// FuzzReceiverCarried is FuzzReceiver for cells (Carried): a real sender's
// cells (some lost) mixed with hostile parity, sequenced and unsequenced
// cells with any link fields, and garbage. The Receiver must not panic,
// must release every frame exactly once, and deliver only whole frames;
// without hostile operations, only the cells sent, each at most once.
func FuzzReceiverCarried(f *testing.F) {
	f.Add(uint16(65530), []byte{0, 0, 0, 1, 1, 0, 0, 0, 4, 0, 6, 200})
	f.Add(uint16(3), []byte{0, 2, 1, 0, 0, 0, 0, 0, 5, 9, 0, 4, 7, 1})
	f.Add(uint16(0), []byte{3, 1, 0, 0, 5, 9, 0, 0, 2, 40, 6, 1, 4, 3})
	f.Fuzz(func(t *testing.T, init uint16, ops []byte) {
		start := seqhdr.Seq(init) * 2 % seqhdr.Space
		delivered := map[int]bool{}
		lens := map[int]int{}
		g := newRxRig(t, SenderConfig{N: 1 + int(init%5), Flush: 1e9, InitSeq: start},
			ReceiverConfig{Window: 512, Wait: 50, Hold: 100, Immediate: true, Carried: true, InitSeq: start},
			func(fb []byte, hostile bool) {
				if hostile {
					return
				}
				id := carriedID(t, fb, lens)
				if delivered[id] {
					t.Fatalf("cell %d delivered twice", id)
				}
				delivered[id] = true
			})
		id := 0
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, ops[i+1]
			switch op {
			case 0, 1: // a real cell; arg bit 0: lose it (op 0)
				n := seqhdr.DataOffset + 2 + int(arg)*5
				h, _ := g.a.Alloc(n)
				lens[id] = n
				copy(g.a.Bytes(h, n), carriedFrame(id, n))
				id++
				g.s.SendCarried(g.now, link.Frame{H: h, Len: n})
				g.forward(arg&1 == 0 || op == 1)
			case 2:
				g.now += int64(arg)
			case 3: // hostile parity near the window
				g.hostileParity(g.r.base.Add(int(int8(arg))), 1+int(arg)%6, arg)
			case 4, 5: // hostile cell: any link fields (op 5: near the window)
				g.hostile = true
				fr := carriedFrame(int(arg), seqhdr.DataOffset+int(arg)%40)
				if len(fr) < 20 {
					fr = append(fr, make([]byte, 20)...)
				}
				fr[15], fr[16], fr[17] = arg, arg*3, arg*5
				if op == 5 {
					_ = seqhdr.Stamp(fr, &seqhdr.Header{Seq: g.r.high.Add(int(int8(arg)) % 9)})
				}
				fr[18], fr[19] = arg&1, 0
				g.put(fr)
			case 6: // garbage of arg bytes, the cell type family
				g.garbage(arg, byte(9+arg%4))
			case 7:
				g.flush(arg)
			}
			g.step()
		}
		g.finish()
	})
}
