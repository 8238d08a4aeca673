package fec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// FuzzParseParity: ParseParity never panics, and a header it accepts
// re-encodes to the bytes it was parsed from.
func FuzzParseParity(f *testing.F) {
	b := make([]byte, ParityOffset+MinFrame)
	_ = PutParityHeader(b, &[6]byte{1}, &[6]byte{2}, &Parity{First: 77, Count: 14, LenXor: 60})
	f.Add(b)
	f.Add(b[:ParityOffset])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseParity(in)
		if err != nil {
			return
		}
		out := make([]byte, ParityOffset)
		var dst, src [6]byte
		copy(dst[:], in[0:6])
		copy(src[:], in[6:12])
		if err := PutParityHeader(out, &dst, &src, &p); err != nil {
			t.Fatalf("re-encode of %+v: %v", p, err)
		}
		if !bytes.Equal(out, in[:ParityOffset]) {
			t.Fatalf("re-encode %x != input %x", out, in[:ParityOffset])
		}
		if p.PayloadLen != len(in)-ParityOffset || p.Count < 1 {
			t.Fatalf("accepted %+v for %d bytes", p, len(in))
		}
	})
}

// FuzzReceiver drives a Receiver with a real sender's frames (some dropped)
// mixed with hostile ones: parity frames with wrong lengths, length XORs and
// payloads, for groups behind, across or far beyond the window, across the
// sequence wrap; data frames far ahead or behind; garbage. Each input byte
// pair is an operation. Whatever comes, the Receiver must not panic, must
// release every frame exactly once, and what it delivers must be a frame
// (at least an Ethernet header, not a link frame). Without hostile
// operations, every delivered frame is one the sender sent.
func FuzzReceiver(f *testing.F) {
	f.Add(uint16(65530), []byte{0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 6, 200})
	f.Add(uint16(65535), []byte{0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 2, 3, 0, 0, 7, 255})
	f.Add(uint16(0), []byte{3, 1, 0, 0, 5, 9, 0, 0, 2, 40, 6, 1})
	f.Fuzz(func(t *testing.T, init uint16, ops []byte) {
		start := seqhdr.Seq(init) * 2 % seqhdr.Space // even and odd eras
		sent := map[string]bool{}
		g := newRxRig(t, SenderConfig{N: 4, Flush: 1e9, InitSeq: start},
			ReceiverConfig{Window: 512, Wait: 50, Hold: 100, Immediate: init&1 == 1, InitSeq: start},
			func(fb []byte, hostile bool) {
				if seqhdr.IsLink(fb) {
					t.Fatalf("delivered a link frame %x", fb)
				}
				if !hostile && !sent[string(fb)] {
					t.Fatalf("delivered a frame never sent: %x", fb)
				}
			})
		id := 0
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, ops[i+1]
			switch op {
			case 0, 1: // a real frame; arg bit 0: drop it
				n := MinFrame + int(arg)*5
				h, _ := g.a.Alloc(n)
				fr := hostFrame(id, n)
				id++
				copy(g.a.Bytes(h, n), fr)
				sent[string(fr)] = true
				g.s.Send(g.now, link.Frame{H: h, Len: n})
				g.forward(arg&1 == 0 || op == 1)
			case 2: // time passes
				g.now += int64(arg)
			case 3, 4: // hostile parity near the window (op 4: far)
				first := g.r.base.Add(int(int8(arg)))
				if op == 4 {
					first = g.r.base.Add(int(arg) << 8)
				}
				g.hostileParity(first, 1+int(arg)%MaxN, arg)
			case 5: // hostile data: a sequence number jump, or behind
				g.hostile = true
				fr := make([]byte, seqhdr.DataOffset+MinFrame)
				h := seqhdr.Header{Type: seqhdr.TypeData, Seq: g.r.high.Add(int(int8(arg)) * 37)}
				binary.BigEndian.PutUint16(fr[12:], 0x0800)
				if _, _, err := seqhdr.Insert(fr, seqhdr.MaxOverhead, len(fr)-seqhdr.MaxOverhead, &h); err != nil {
					t.Fatal(err)
				}
				g.put(fr)
			case 6: // garbage of arg bytes, or a truncated parity
				g.garbage(arg, byte(arg%16))
			case 7: // the sender flushes its group
				g.flush(arg)
			}
			g.step()
		}
		g.finish()
	})
}

// rxRig is the receiver fuzz targets' bench: a Sender on pool a feeding a
// Receiver on pool b, with the operations both targets share. check sees
// every delivered frame (after the length check every target makes) and
// whether a hostile operation has run.
type rxRig struct {
	*pair
	now     int64
	hostile bool
	check   func(fb []byte, hostile bool)
}

func newRxRig(t *testing.T, sc SenderConfig, rc ReceiverConfig, check func(fb []byte, hostile bool)) *rxRig {
	return &rxRig{pair: newPairPools(t, 64, 2048, sc, rc), check: check}
}

// put hands a copy of frame to the receiver.
func (g *rxRig) put(frame []byte) {
	h, ok := g.b.Alloc(len(frame))
	if !ok {
		g.t.Skip("pool exhausted")
	}
	copy(g.b.Bytes(h, len(frame)), frame)
	g.r.Receive(g.now, link.Frame{H: h, Len: len(frame)})
}

// drain checks and releases what the receiver delivered.
func (g *rxRig) drain() {
	for _, d := range g.r.Out.Deliver {
		fb := g.b.Bytes(d.H, d.Len)
		if d.Len < MinFrame {
			g.t.Fatalf("delivered a %d-byte frame %x", d.Len, fb)
		}
		g.check(fb, g.hostile)
	}
	for _, d := range g.r.Out.Free {
		g.b.Free(d.H)
	}
	g.r.Out.Reset()
}

// forward passes the sender's output to the receiver (or loses it unless
// deliver) and releases it.
func (g *rxRig) forward(deliver bool) {
	for _, o := range g.s.Out.Send {
		if deliver {
			g.put(g.a.Bytes(o.H, o.Len))
		}
	}
	for _, o := range g.s.Out.Free {
		g.a.Free(o.H)
	}
	g.s.Out.Reset()
}

// hostileParity puts a parity frame for count frames from first, its
// length XOR, length and payload made from arg.
func (g *rxRig) hostileParity(first seqhdr.Seq, count int, arg byte) {
	g.hostile = true
	pl := MinFrame + int(arg)%64
	fr := make([]byte, ParityOffset+pl)
	_ = PutParityHeader(fr, &[6]byte{}, &[6]byte{}, &Parity{First: first, Count: count, LenXor: uint16(arg) * 7})
	for k := ParityOffset; k < len(fr); k++ {
		fr[k] = byte(k * int(arg))
	}
	g.put(fr)
}

// garbage puts arg%80 bytes (at least one) that claim the link EtherType and
// the given type where they are long enough to.
func (g *rxRig) garbage(arg, typ byte) {
	g.hostile = true
	fr := make([]byte, int(arg)%80)
	if len(fr) >= 16 {
		binary.BigEndian.PutUint16(fr[12:], seqhdr.EtherType)
		fr[14] = typ
	}
	if len(fr) == 0 {
		fr = []byte{0}
	}
	g.put(fr)
}

// flush has the sender flush its group; arg bit 0 loses what it sends.
func (g *rxRig) flush(arg byte) {
	g.s.Poll(g.now + 2e9)
	g.forward(arg&1 == 0)
}

// step polls the receiver and collects after an operation.
func (g *rxRig) step() {
	g.r.Poll(g.now)
	g.drain()
}

// finish lets the receiver time out and reset, then checks that it holds no
// frame and released each exactly once.
func (g *rxRig) finish() {
	g.now += 1e6
	g.step()
	g.r.Reset(g.now, 0)
	g.drain()
	if n := g.b.InUse(); n != 0 {
		g.t.Fatalf("receiver holds %d frames after Reset", n)
	}
	if e := g.b.Errors(); len(e) > 0 {
		g.t.Fatalf("ownership: %v", e)
	}
}
