// Package fuzzops reads a fuzzer's byte string as operations and their
// arguments: each read takes bytes from the front, and reads past the end
// give zero, so that every byte string is a valid program.
package fuzzops

import "encoding/binary"

// Ops is the unread rest of a fuzzer's input.
type Ops struct{ B []byte }

// More reports whether any byte is left.
func (o *Ops) More() bool { return len(o.B) > 0 }

// U8 takes one byte (0 when none is left).
func (o *Ops) U8() byte {
	if len(o.B) == 0 {
		return 0
	}
	v := o.B[0]
	o.B = o.B[1:]
	return v
}

// U16 takes two bytes, big-endian, each 0 when none is left.
func (o *Ops) U16() uint16 { return uint16(o.U8())<<8 | uint16(o.U8()) }

// U32 takes four bytes, big-endian; with fewer left it takes them all
// and gives 0.
func (o *Ops) U32() uint32 {
	if len(o.B) < 4 {
		o.B = nil
		return 0
	}
	v := binary.BigEndian.Uint32(o.B)
	o.B = o.B[4:]
	return v
}

// Bytes takes up to n bytes.
func (o *Ops) Bytes(n int) []byte {
	n = min(n, len(o.B))
	v := o.B[:n]
	o.B = o.B[n:]
	return v
}
