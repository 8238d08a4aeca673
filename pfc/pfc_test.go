package pfc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var (
	srcA = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	srcB = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Known vectors, written out by hand from the 802.3 Annex 31B/31D layouts.
func TestEncodeKnownVectors(t *testing.T) {
	pad := func(n int) string { return strings.Repeat("00", n) }
	cases := []struct {
		name string
		f    Frame
		want string
	}{
		{
			name: "PFC pause classes 0 and 3",
			f:    NewPFC(srcA, 0x09, [8]uint16{0: 0xFFFF, 3: 0x1234}),
			want: "0180c2000001 020000000001 8808 0101 0009 ffff 0000 0000 1234 0000 0000 0000 0000" + pad(26),
		},
		{
			name: "PFC resume class 7",
			f:    NewPFC(srcA, 0x80, [8]uint16{}),
			want: "0180c2000001 020000000001 8808 0101 0080" + pad(16) + pad(26),
		},
		{
			name: "802.3x PAUSE 256 quanta",
			f:    NewPause(srcB, 0x0100),
			want: "0180c2000001 020000000002 8808 0001 0100" + pad(42),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := mustHex(t, c.want)
			if len(want) != FrameLen {
				t.Fatalf("test vector is %d bytes, want %d", len(want), FrameLen)
			}
			buf := bytes.Repeat([]byte{0xEE}, 100) // dirty buffer: padding must be zeroed
			n, err := c.f.Encode(buf)
			if err != nil {
				t.Fatal(err)
			}
			if n != FrameLen || !bytes.Equal(buf[:n], want) {
				t.Fatalf("Encode = %d bytes\n%x\nwant\n%x", n, buf[:n], want)
			}
			if buf[FrameLen] != 0xEE {
				t.Fatal("Encode wrote past FrameLen")
			}
			var got Frame
			if err := Decode(want, &got); err != nil {
				t.Fatal(err)
			}
			if got != c.f {
				t.Fatalf("Decode = %+v, want %+v", got, c.f)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	buf := make([]byte, FrameLen)
	for enable := 0; enable < 256; enable++ {
		var q [8]uint16
		for i := range q {
			if enable&(1<<i) != 0 {
				q[i] = uint16(enable*257 + i*4099)
			}
		}
		f := NewPFC(srcA, uint8(enable), q)
		f.Dst = srcB // unicast destinations are legal and must survive
		if _, err := f.Encode(buf); err != nil {
			t.Fatal(err)
		}
		var g Frame
		if err := Decode(buf, &g); err != nil {
			t.Fatal(err)
		}
		if g != f {
			t.Fatalf("round trip: got %+v want %+v", g, f)
		}
	}
	for _, q := range []uint16{0, 1, 0x7FFF, 0xFFFF} {
		f := NewPause(srcB, q)
		f.Quanta[5] = 99 // ignored for PAUSE
		if _, err := f.Encode(buf); err != nil {
			t.Fatal(err)
		}
		var g Frame
		if err := Decode(buf, &g); err != nil {
			t.Fatal(err)
		}
		want := NewPause(srcB, q)
		if g != want {
			t.Fatalf("PAUSE round trip: got %+v want %+v", g, want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := make([]byte, FrameLen)
	f := NewPFC(srcA, 0xFF, [8]uint16{1, 2, 3, 4, 5, 6, 7, 8})
	if _, err := f.Encode(good); err != nil {
		t.Fatal(err)
	}
	mod := func(fn func(b []byte)) []byte {
		b := bytes.Clone(good)
		fn(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrShort, "0 bytes"},
		{"header only", good[:14], ErrShort, "14 bytes"},
		{"PFC truncated", good[:PFCLen-1], ErrShort, "PFC frame of 33 bytes, need 34"},
		{"PAUSE truncated", mod(func(b []byte) { b[14] = 0x00 })[:PauseLen-1], ErrShort, "PAUSE frame of 17 bytes"},
		{"IPv4 ethertype", mod(func(b []byte) { b[12], b[13] = 0x08, 0x00 }), ErrEtherType, "ethertype 0x0800"},
		{"VLAN tagged", mod(func(b []byte) { b[12], b[13] = 0x81, 0x00 }), ErrEtherType, "0x8100"},
		{"GATE opcode", mod(func(b []byte) { b[14], b[15] = 0x00, 0x02 }), ErrOpcode, "opcode 0x0002"},
		{"opcode 0x0102", mod(func(b []byte) { b[15] = 0x02 }), ErrOpcode, "0x0102"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g Frame
			err := Decode(c.b, &g)
			if !errors.Is(err, c.want) {
				t.Fatalf("Decode err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q does not mention %q", err, c.msg)
			}
		})
	}
	// Unpadded frames are accepted; the reserved CEV octet is ignored.
	var g Frame
	if err := Decode(mod(func(b []byte) { b[16] = 0xAB })[:PFCLen], &g); err != nil || g != f {
		t.Fatalf("unpadded PFC with reserved bits: %v %+v", err, g)
	}
}

func TestEncodeErrors(t *testing.T) {
	f := NewPFC(srcA, 1, [8]uint16{1})
	if _, err := f.Encode(make([]byte, FrameLen-1)); !errors.Is(err, ErrShort) {
		t.Fatalf("short buffer: %v", err)
	}
	f.Opcode = 0x0002
	if _, err := f.Encode(make([]byte, FrameLen)); !errors.Is(err, ErrOpcode) {
		t.Fatalf("bad opcode: %v", err)
	}
}

func TestNoAllocs(t *testing.T) {
	buf := make([]byte, FrameLen)
	f := NewPFC(srcA, 0x0F, [8]uint16{1, 2, 3, 4})
	var g Frame
	var s State
	n := testing.AllocsPerRun(100, func() {
		if _, err := f.Encode(buf); err != nil {
			t.Fatal(err)
		}
		if err := Decode(buf, &g); err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(&g, 10, Speed10G); err != nil {
			t.Fatal(err)
		}
		_ = s.PausedMask(11)
	})
	if n != 0 {
		t.Fatalf("Encode/Decode/Apply allocate %v times per run", n)
	}
}

func TestIsMACControl(t *testing.T) {
	buf := make([]byte, FrameLen)
	f := NewPause(srcA, 1)
	f.Encode(buf)
	if !IsMACControl(buf) || IsMACControl(buf[:13]) {
		t.Fatal("IsMACControl wrong on PAUSE frame / short buffer")
	}
	buf[12] = 0x08
	if IsMACControl(buf) {
		t.Fatal("IsMACControl true for ethertype 0x0808")
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	buf := make([]byte, FrameLen)
	f := NewPFC(srcA, 0x0F, [8]uint16{1, 2, 3, 4})
	var g Frame
	b.ReportAllocs()
	for b.Loop() {
		f.Encode(buf)
		Decode(buf, &g)
	}
}
