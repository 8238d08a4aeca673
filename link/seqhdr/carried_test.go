package seqhdr

import (
	"bytes"
	"testing"
)

// cellLike is a frame of carried type t with zeroed link fields and a
// recognisable body after DataOffset.
func cellLike(t Type, n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xB5, byte(t)})
	for i := DataOffset; i < n; i++ {
		b[i] = byte(i*13 + 1)
	}
	return b
}

// TestStampCarried: Stamp writes only bytes 15..21, ParseCarried reads
// back what it wrote for every carried type, and frames of other types,
// short frames and fields a data header may not hold are refused.
func TestStampCarried(t *testing.T) {
	hs := []Header{
		{Seq: MakeSeq(7, false)},
		{Retx: true, Seq: MakeSeq(0xffff, true), HasAck: true, Ack: MakeSeq(3, true)},
		{Unseq: true, HasAck: true, Ack: MakeSeq(65000, false)},
	}
	for ty := TypeCell; ty <= TypeReach; ty++ {
		for _, h := range hs {
			b := cellLike(ty, 80)
			orig := append([]byte(nil), b...)
			if err := Stamp(b, &h); err != nil {
				t.Fatalf("%v %+v: %v", ty, h, err)
			}
			if !bytes.Equal(b[:MACLen+3], orig[:MACLen+3]) || !bytes.Equal(b[DataOffset:], orig[DataOffset:]) {
				t.Fatalf("%v: Stamp wrote outside bytes 15..21", ty)
			}
			got, err := ParseCarried(b)
			want := h
			want.Type = ty
			if err != nil || got != want {
				t.Fatalf("%v: ParseCarried %+v, %v; want %+v", ty, got, err, want)
			}
		}
	}
	for _, ty := range []Type{TypeData, TypeAck, TypeHello, TypeTDMA, 15} {
		if err := Stamp(cellLike(ty, 80), &hs[0]); err != ErrType {
			t.Errorf("Stamp of type %v: %v; want ErrType", ty, err)
		}
		if _, err := ParseCarried(cellLike(ty, 80)); err != ErrType {
			t.Errorf("ParseCarried of type %v: %v; want ErrType", ty, err)
		}
	}
	if err := Stamp(cellLike(TypeCell, DataOffset-1), &hs[0]); err != ErrShort {
		t.Errorf("short frame: %v", err)
	}
	for _, h := range []Header{{EtherType: 0x800}, {Count: 1}, {Unseq: true}, {Unseq: true, Retx: true, HasAck: true}, {Seq: Space}} {
		if err := Stamp(cellLike(TypeCell, 80), &h); err == nil {
			t.Errorf("Stamp accepted %+v", h)
		}
	}
	b := cellLike(TypeCell, 80)
	b[MACLen+6] = 1 // Aux
	if _, err := ParseCarried(b); err != ErrField {
		t.Errorf("nonzero Aux: %v", err)
	}
}

// FuzzParseCarried: ParseCarried never panics, accepts only carried
// types, and what it accepts re-stamps to the same bytes.
func FuzzParseCarried(f *testing.F) {
	f.Add(cellLike(TypeCell, 60))
	f.Add(cellLike(TypeReach, 22))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0xB5, 0x09, 0x25, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseCarried(b)
		if err != nil {
			return
		}
		if !h.Type.IsCarried() {
			t.Fatalf("accepted type %v", h.Type)
		}
		out := append([]byte(nil), b...)
		clear(out[MACLen+3 : DataOffset])
		if err := Stamp(out, &h); err != nil {
			t.Fatalf("Stamp of parsed %+v: %v", h, err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-stamp %x != input %x", out, b)
		}
	})
}
