package cellify

import (
	"encoding/binary"
	"errors"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Wire layout shared by the four cell-family frames (types 9–12 of the link
// header, see package seqhdr). Offsets are from the start of the frame; all
// multi-byte fields are big endian.
//
//	off len
//	 0  12  MACs (the caller's)
//	12   2  EtherType 0x88B5
//	14   1  version 0 | type (9 cell, 10 credit-req, 11 credit-grant, 12 reach)
//	15   7  the link layer's (LinkGuardian's flags, Seq, Aux, Ack when it
//	        sequences the frame); encoders write zeros, decoders ignore them
//	22   -  the frame's own header (Off)
//
// A CELL's header (CellHeaderLen bytes):
//
//	22  2  dst edge (nonzero)
//	24  2  src edge (nonzero)
//	26  1  class (3 bits) | FCI (1) | hops (4, ≥ 1)
//	27  1  dst port
//	28  4  cell seq (per stream = per VOQ)
//	32  2  payload length (≥ 1)
//	34  2  first record: offset in the payload of the first record that
//	       starts in this cell, or NoRecord
//	36  2  record number (mod 2^16) of the record holding payload byte 0
//	38  2  epoch: the source edge's per-boot nonce (nonzero; 0: none), so
//	       that the egress edge resets the stream of a restarted source
//	40  1  entropy: 8 bits of the flow hash of the record at payload byte 0
//	       (what hash-mode spraying in the fabric picks a link by); any value
//	41  1  header checksum: CRC-8, polynomial 0x4D (x^8+x^6+x^3+x^2+1), init
//	       0xFF, MSB first, no final XOR, over bytes 22..40
//	42  -  payload, then zero padding up to seqhdr.MinFrameLen
//
// Over the 20-byte header this CRC detects every 1- and 2-bit error and every
// burst of up to 8 bits (the ATM polynomial 0x07 misses some 2-bit errors at
// this length).
//
// The payload is a byte stream of records [length 2][host frame] cut at cell
// boundaries (a Node's records hold the source host port before the frame). The record number lets the receiver count exactly how many
// records a skipped hole took with it.

// Off is the offset of the cell-family header in a frame: right after the
// 8-byte link header (seqhdr.DataOffset).
const Off = seqhdr.DataOffset

// Cell sizes.
const (
	CellHeaderLen     = 20
	CellPayloadOffset = Off + CellHeaderLen // 42
	NoRecord          = 0xFFFF              // first record: none starts in this cell
	MaxHops           = 15
	MaxCellPayload    = 0xFFFF // payload length field
)

// Record bounds: a record is [length 2][frame] with MinRecordFrame ≤ length ≤
// MaxRecordFrame.
const (
	RecordHeaderLen = 2
	MinRecordFrame  = 14 // an Ethernet header
	MaxRecordFrame  = 16384
)

// Errors of the decoders.
var (
	ErrShort    = errors.New("cellify: frame too short")
	ErrType     = errors.New("cellify: not a link frame of the expected type")
	ErrChecksum = errors.New("cellify: header checksum mismatch")
	ErrLength   = errors.New("cellify: payload length zero or beyond the frame")
	ErrFirst    = errors.New("cellify: first-record offset beyond the payload")
	ErrHops     = errors.New("cellify: hop count zero or above 15")
	ErrClass    = errors.New("cellify: class out of range")
	ErrEdge     = errors.New("cellify: edge id zero")
	ErrField    = errors.New("cellify: reserved field nonzero or field out of range")
)

// CellHeader is a decoded CELL header.
type CellHeader struct {
	Dst, Src EdgeID
	Class    Class
	FCI      bool  // fabric congestion seen
	Hops     uint8 // hops left, 1..MaxHops
	Port     uint8 // host port at Dst
	Seq      uint32
	Len      uint16 // payload length
	First    uint16 // offset of the first record start, or NoRecord
	RecNo    uint16 // record number of payload byte 0
	Entropy  uint8  // flow hash bits for hash-mode spraying
	Epoch    uint16 // the source's per-boot nonce; 0: none
}

// Offsets in the cell header (from Off) of the fields changed in place.
const (
	cellFlagsAt   = 4
	cellEntropyAt = CellHeaderLen - 2
	cellSumAt     = CellHeaderLen - 1
)

// Key is the reassembly stream the cell belongs to.
func (h *CellHeader) Key() StreamKey { return StreamKey{Src: h.Src, Port: h.Port, Class: h.Class} }

func (h *CellHeader) check() error {
	switch {
	case h.Dst == 0 || h.Src == 0:
		return ErrEdge
	case h.Class >= Classes:
		return ErrClass
	case h.Hops == 0 || h.Hops > MaxHops:
		return ErrHops
	case h.Len == 0:
		return ErrLength
	case h.First != NoRecord && h.First >= h.Len:
		return ErrFirst
	}
	return nil
}

// CellFrameLen is the length of a cell frame with payloadLen bytes of payload.
func CellFrameLen(payloadLen int) int {
	return max(CellPayloadOffset+payloadLen, seqhdr.MinFrameLen)
}

// PutCellHeader writes bytes 12..39 of a cell frame (EtherType, type, zeroed
// link fields, the cell header with its checksum). The payload, h.Len bytes at
// CellPayloadOffset, and the padding up to CellFrameLen are the caller's.
func PutCellHeader(frame []byte, h *CellHeader) error {
	if err := h.check(); err != nil {
		return err
	}
	if len(frame) < CellFrameLen(int(h.Len)) {
		return ErrShort
	}
	putLink(frame, seqhdr.TypeCell)
	b := frame[Off:CellPayloadOffset]
	binary.BigEndian.PutUint16(b[0:], uint16(h.Dst))
	binary.BigEndian.PutUint16(b[2:], uint16(h.Src))
	b[4] = byte(h.Class)<<5 | h.Hops
	if h.FCI {
		b[4] |= 0x10
	}
	b[5] = h.Port
	binary.BigEndian.PutUint32(b[6:], h.Seq)
	binary.BigEndian.PutUint16(b[10:], h.Len)
	binary.BigEndian.PutUint16(b[12:], h.First)
	binary.BigEndian.PutUint16(b[14:], h.RecNo)
	binary.BigEndian.PutUint16(b[16:], h.Epoch)
	b[cellEntropyAt] = h.Entropy
	b[cellSumAt] = crc8(b[:cellSumAt])
	return nil
}

// PutCell writes a whole cell frame but its MACs: the header for h (h.Len is
// set to len(payload)), the payload and the padding. It returns the frame length.
func PutCell(frame []byte, h *CellHeader, payload []byte) (int, error) {
	if len(payload) > MaxCellPayload {
		return 0, ErrLength
	}
	h.Len = uint16(len(payload))
	if err := PutCellHeader(frame, h); err != nil {
		return 0, err
	}
	n := CellPayloadOffset + copy(frame[CellPayloadOffset:], payload)
	return pad(frame, n), nil
}

// ParseCell decodes the cell header of a whole frame; the payload is
// frame[CellPayloadOffset:][:h.Len]. Bytes beyond it (padding) are ignored.
func ParseCell(frame []byte) (CellHeader, error) {
	var h CellHeader
	if t, ok := seqhdr.FrameType(frame); !ok || t != seqhdr.TypeCell {
		return h, ErrType
	}
	if len(frame) < CellPayloadOffset {
		return h, ErrShort
	}
	b := frame[Off:CellPayloadOffset]
	if crc8(b[:cellSumAt]) != b[cellSumAt] {
		return h, ErrChecksum
	}
	h.Dst = EdgeID(binary.BigEndian.Uint16(b[0:]))
	h.Src = EdgeID(binary.BigEndian.Uint16(b[2:]))
	h.Class = Class(b[4] >> 5)
	h.FCI = b[4]&0x10 != 0
	h.Hops = b[4] & 0x0f
	h.Port = b[5]
	h.Seq = binary.BigEndian.Uint32(b[6:])
	h.Len = binary.BigEndian.Uint16(b[10:])
	h.First = binary.BigEndian.Uint16(b[12:])
	h.RecNo = binary.BigEndian.Uint16(b[14:])
	h.Epoch = binary.BigEndian.Uint16(b[16:])
	h.Entropy = b[cellEntropyAt]
	if err := h.check(); err != nil {
		return CellHeader{}, err
	}
	if CellPayloadOffset+int(h.Len) > len(frame) {
		return CellHeader{}, ErrLength
	}
	return h, nil
}

// DecHops decrements the hop count of a parsed cell frame in place and fixes
// the checksum. It returns false, leaving the frame as it was, when the cell
// may not take another hop (hops would reach 0: drop and count it) or the
// frame is too short.
func DecHops(frame []byte) bool {
	if len(frame) < CellPayloadOffset {
		return false
	}
	b := frame[Off:CellPayloadOffset]
	if b[cellFlagsAt]&0x0f <= 1 {
		return false
	}
	b[cellFlagsAt]--
	b[cellSumAt] = crc8(b[:cellSumAt])
	return true
}

// SetFCI sets the congestion bit of a parsed cell frame in place and fixes
// the checksum; false if the frame is too short.
func SetFCI(frame []byte) bool {
	if len(frame) < CellPayloadOffset {
		return false
	}
	b := frame[Off:CellPayloadOffset]
	if b[cellFlagsAt]&0x10 == 0 {
		b[cellFlagsAt] |= 0x10
		b[cellSumAt] = crc8(b[:cellSumAt])
	}
	return true
}

// SetEntropy sets the entropy byte of a parsed cell frame in place and fixes
// the checksum; false if the frame is too short.
func SetEntropy(frame []byte, e uint8) bool {
	if len(frame) < CellPayloadOffset {
		return false
	}
	b := frame[Off:CellPayloadOffset]
	if b[cellEntropyAt] != e {
		b[cellEntropyAt] = e
		b[cellSumAt] = crc8(b[:cellSumAt])
	}
	return true
}

// putLink writes the EtherType, the type byte and zeros over the link
// layer's bytes 15..21.
func putLink(frame []byte, t seqhdr.Type) {
	binary.BigEndian.PutUint16(frame[seqhdr.MACLen:], seqhdr.EtherType)
	frame[seqhdr.MACLen+2] = byte(t)
	clear(frame[seqhdr.MACLen+3 : Off])
}

// pad zeroes frame[n:MinFrameLen] and returns the padded length.
func pad(frame []byte, n int) int {
	if n >= seqhdr.MinFrameLen {
		return n
	}
	clear(frame[n:seqhdr.MinFrameLen])
	return seqhdr.MinFrameLen
}

const crc8Poly = 0x4D

var crc8Table = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		for range 8 {
			if c&0x80 != 0 {
				c = c<<1 ^ crc8Poly
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc8(b []byte) byte {
	c := byte(0xFF)
	for _, x := range b {
		c = crc8Table[c^x]
	}
	return c
}
