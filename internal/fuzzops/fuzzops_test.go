package fuzzops

import (
	"bytes"
	"testing"
)

func TestReadsAndEnd(t *testing.T) {
	o := &Ops{B: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}}
	if v := o.U8(); v != 1 {
		t.Fatalf("U8 %d, want 1", v)
	}
	if v := o.U16(); v != 0x0203 {
		t.Fatalf("U16 %#x, want 0x0203", v)
	}
	if v := o.U32(); v != 0x04050607 {
		t.Fatalf("U32 %#x, want 0x04050607", v)
	}
	if v := o.Bytes(5); !bytes.Equal(v, []byte{8, 9}) {
		t.Fatalf("Bytes(5) %v, want the two left", v)
	}
	if o.More() || o.U8() != 0 || o.U16() != 0 {
		t.Fatal("reads past the end must give zero")
	}
	o = &Ops{B: []byte{1, 2, 3}}
	if v := o.U32(); v != 0 || o.More() {
		t.Fatalf("U32 of three bytes: %d, %d left; want 0, none", v, len(o.B))
	}
	o = &Ops{B: []byte{7}}
	if v := o.U16(); v != 0x0700 {
		t.Fatalf("U16 of one byte %#x, want 0x0700", v)
	}
}
