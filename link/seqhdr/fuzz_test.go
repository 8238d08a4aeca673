package seqhdr

import (
	"bytes"
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts re-encodes to exactly
// the bytes it was parsed from.
func FuzzParse(f *testing.F) {
	for _, h := range sampleHeaders() {
		b := make([]byte, 16)
		n, _ := h.Put(b)
		f.Add(b[:n])
	}
	f.Add([]byte{0x88, 0xB5})
	f.Add([]byte{0x88, 0xB5, 0x03, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		out := make([]byte, h.WireLen())
		n, err := h.Put(out)
		if err != nil {
			t.Fatalf("Put of parsed header %+v: %v", h, err)
		}
		if !bytes.Equal(out[:n], b[:n]) {
			t.Fatalf("re-encode %x != input %x", out[:n], b[:n])
		}
	})
}

// FuzzStrip: Strip never panics on any frame; when it accepts a frame, Insert
// of the returned header reproduces the input byte for byte.
func FuzzStrip(f *testing.F) {
	for _, h := range sampleHeaders()[:3] {
		buf := testFrame(64+MaxOverhead, 0x0800)
		off, n, err := Insert(buf, MaxOverhead, 64, &h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(buf[off : off+n])
	}
	f.Add(make([]byte, DataOffset))
	f.Fuzz(func(t *testing.T, frame []byte) {
		in := append([]byte(nil), frame...)
		buf := append([]byte(nil), frame...)
		h, off, n, err := Strip(buf, 0, len(buf))
		if err != nil {
			if !bytes.Equal(buf, in) {
				t.Fatal("Strip modified the frame on error")
			}
			return
		}
		if IsLink(buf[off : off+n]) {
			// The original EtherType was 0x88B5: Insert refuses such frames.
			return
		}
		h2 := h
		off2, n2, err := Insert(buf, off, n, &h2)
		if err != nil {
			t.Fatalf("Insert after Strip (%+v): %v", h, err)
		}
		if off2 != 0 || n2 != len(in) || !bytes.Equal(buf, in) {
			t.Fatalf("Insert(Strip(x)) != x:\n%x\n%x", buf, in)
		}
	})
}

// FuzzInsert: for any frame with headroom, Insert then Strip restores it.
func FuzzInsert(f *testing.F) {
	f.Add(testFrame(60, 0x0800), uint32(5), true, uint32(7))
	f.Add(testFrame(14, 0x86DD), uint32(0x1ffff), false, uint32(0))
	f.Fuzz(func(t *testing.T, frame []byte, seq uint32, hasAck bool, ack uint32) {
		buf := append(make([]byte, MaxOverhead), frame...)
		h := Header{Type: TypeData, Seq: Seq(seq) & (Space - 1), HasAck: hasAck}
		if hasAck {
			h.Ack = Seq(ack) & (Space - 1)
		}
		off, n, err := Insert(buf, MaxOverhead, len(frame), &h)
		if err != nil {
			return
		}
		got, off2, n2, err := Strip(buf, off, n)
		if err != nil {
			t.Fatalf("Strip after Insert: %v", err)
		}
		if got != h || off2 != MaxOverhead || n2 != len(frame) || !bytes.Equal(buf[off2:], frame) {
			t.Fatalf("Strip(Insert(x)) != x: %+v vs %+v", got, h)
		}
	})
}

// FuzzParseHello: ParseHello never panics, rejects every non-session type,
// and whatever it accepts re-encodes to the same header bytes.
func FuzzParseHello(f *testing.F) {
	src, dst := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	for _, h := range []Hello{
		{Epoch: 1, InitSeq: 5, Window: 4096, Lanes: 2, Protect: ProtectTx | ProtectRx, MTU: 1500, Speed: 10000},
		{Ack: true, Epoch: 0xdeadbeefcafe, Echo: 7, InitSeq: Space - 1, Window: 1, Lanes: 1, Protect: ProtectRx | 0x10, MTU: 9000, Speed: 100000, Node: 7},
		{Epoch: 3, Echo: 4, InitSeq: 9, Window: 1024, Lanes: 2, Protect: ProtectTx | ProtectRx | ProtectFEC, MTU: 1500, Speed: 10000,
			HasReport: true, Report: Report{RxLoss: 3_000_000, RxBurst: 300, TxN: 14, TxCopies: 1}},
		{Epoch: 5, InitSeq: 6, Window: 64, Lanes: 1, Protect: ProtectTx | ProtectRx, MTU: 1500, Speed: 1000, Caps: CapsSet | 2 | CapsFastSend},
		{Epoch: 3, Echo: 4, InitSeq: 9, Window: 1024, Lanes: 2, Protect: ProtectTx | ProtectRx | ProtectFEC, MTU: 1500, Speed: 10000,
			HasReport: true, Report: Report{RxLoss: 3_000_000, RxBurst: 300, TxN: 14, TxCopies: 1}, Caps: CapsSet | 1},
	} {
		b := make([]byte, MinFrameLen)
		if _, err := PutHello(b, &dst, &src, &h); err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(make([]byte, MinFrameLen))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHello(b)
		if err != nil {
			return
		}
		if ty, ok := FrameType(b); !ok || !ty.IsSession() {
			t.Fatalf("ParseHello accepted type %v", ty)
		}
		out := make([]byte, MinFrameLen)
		var d, s [6]byte
		copy(d[:], b[0:6])
		copy(s[:], b[6:12])
		if _, err := PutHello(out, &d, &s, &h); err != nil {
			t.Fatalf("PutHello of parsed %+v: %v", h, err)
		}
		n := MACLen + HelloLen
		if h.HasReport {
			n += ReportLen
		}
		if !bytes.Equal(out[:n], b[:n]) {
			t.Fatalf("re-encode %x != input %x", out[:n], b[:n])
		}
		if c := MACLen + capsOff; len(b) >= c+2 && !bytes.Equal(out[c:c+2], b[c:c+2]) {
			t.Fatalf("Caps re-encode %x != input %x", out[c:c+2], b[c:c+2])
		}
		if _, err := Parse(b[MACLen:]); err == nil {
			t.Fatal("Parse accepted a session frame")
		}
	})
}
