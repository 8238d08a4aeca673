package fec

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
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
		a := linksim.NewPool(64, tBuf, tHead)
		b := linksim.NewPool(2048, tBuf, tHead)
		start := seqhdr.Seq(init) * 2 % seqhdr.Space // even and odd eras
		s, err := NewSender(SenderConfig{N: 4, BufLen: tBuf - tHead, Flush: 1e9, InitSeq: start}, a)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReceiver(ReceiverConfig{Window: 512, Wait: 50, Hold: 100, Immediate: init&1 == 1, InitSeq: start}, b)
		if err != nil {
			t.Fatal(err)
		}
		sent := map[string]bool{}
		var now int64
		hostile := false
		put := func(frame []byte) {
			h, ok := b.Alloc(len(frame))
			if !ok {
				t.Skip("pool exhausted")
			}
			copy(b.Bytes(h, len(frame)), frame)
			r.Receive(now, link.Frame{H: h, Len: len(frame)})
		}
		collect := func() {
			for _, d := range r.Out.Deliver {
				fb := b.Bytes(d.H, d.Len)
				if d.Len < MinFrame || seqhdr.IsLink(fb) {
					t.Fatalf("delivered a %d-byte frame %x", d.Len, fb)
				}
				if !hostile && !sent[string(fb)] {
					t.Fatalf("delivered a frame never sent: %x", fb)
				}
			}
			for _, d := range r.Out.Free {
				b.Free(d.H)
			}
			r.Out.Reset()
		}
		id := 0
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%8, ops[i+1]
			switch op {
			case 0, 1: // a real frame; arg bit 0: drop it
				n := MinFrame + int(arg)*5
				h, _ := a.Alloc(n)
				fr := hostFrame(id, n)
				id++
				copy(a.Bytes(h, n), fr)
				sent[string(fr)] = true
				s.Send(now, link.Frame{H: h, Len: n})
				for _, o := range s.Out.Send {
					if arg&1 == 0 || op == 1 {
						put(a.Bytes(o.H, o.Len))
					}
				}
				for _, o := range s.Out.Free {
					a.Free(o.H)
				}
				s.Out.Reset()
			case 2: // time passes
				now += int64(arg)
			case 3, 4: // hostile parity near the window (op 4: far)
				hostile = true
				first := r.base.Add(int(int8(arg)))
				if op == 4 {
					first = r.base.Add(int(arg) << 8)
				}
				pl := MinFrame + int(arg)%64
				fr := make([]byte, ParityOffset+pl)
				_ = PutParityHeader(fr, &[6]byte{}, &[6]byte{}, &Parity{First: first, Count: 1 + int(arg)%MaxN, LenXor: uint16(arg) * 7})
				for k := ParityOffset; k < len(fr); k++ {
					fr[k] = byte(k * int(arg))
				}
				put(fr)
			case 5: // hostile data: a sequence number jump, or behind
				hostile = true
				fr := make([]byte, seqhdr.DataOffset+MinFrame)
				h := seqhdr.Header{Type: seqhdr.TypeData, Seq: r.high.Add(int(int8(arg)) * 37)}
				binary.BigEndian.PutUint16(fr[12:], 0x0800)
				if _, _, err := seqhdr.Insert(fr, seqhdr.MaxOverhead, len(fr)-seqhdr.MaxOverhead, &h); err != nil {
					t.Fatal(err)
				}
				put(fr)
			case 6: // garbage of arg bytes, or a truncated parity
				hostile = true
				fr := make([]byte, int(arg)%80)
				if len(fr) >= 16 {
					binary.BigEndian.PutUint16(fr[12:], seqhdr.EtherType)
					fr[14] = byte(arg % 16)
				}
				if len(fr) == 0 {
					fr = []byte{0}
				}
				put(fr)
			case 7: // the sender flushes its group
				s.Poll(now + 2e9)
				for _, o := range s.Out.Send {
					if arg&1 == 0 {
						put(a.Bytes(o.H, o.Len))
					}
				}
				for _, o := range s.Out.Free {
					a.Free(o.H)
				}
				s.Out.Reset()
			}
			r.Poll(now)
			collect()
		}
		now += 1e6
		r.Poll(now)
		collect()
		r.Reset(now, 0)
		collect()
		if n := b.InUse(); n != 0 {
			t.Fatalf("receiver holds %d frames after Reset", n)
		}
		if e := b.Errors(); len(e) > 0 {
			t.Fatalf("ownership: %v", e)
		}
	})
}
