package fec

import (
	"encoding/binary"
	"errors"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Parity frame layout (offsets from the start of the frame, big endian):
//
//	off len field
//	 0   6  destination MAC   (the link peer's)
//	 6   6  source MAC        (this end's)
//	12   2  EtherType = 0x88B5 (seqhdr.EtherType)
//	14   1  version (high nibble, 0) | type 14 (seqhdr.TypeFECParity)
//	15   1  flags: 0x02 era bit of First (as seqhdr.FlagEra); others zero
//	16   2  First   sequence number of the group's first data frame
//	18   1  Count   data frames in the group (1..MaxN)
//	19   1  reserved, zero
//	20   2  LenXor  XOR of the group's original frame lengths
//	22   …  XOR of the group's original frames (as the host sent them, MACs
//	        and EtherType included), each padded with zeros to the longest
//
// The group is the data frames First, First+1, …, First+Count-1. A parity
// frame is ParityOffset bytes longer than the longest frame of its group:
// MaxOverhead bytes above the host MTU's frame, against seqhdr.MaxOverhead
// for a data frame.
const (
	ParityHeaderLen = 8                                   // after the link EtherType
	ParityOffset    = seqhdr.MACLen + 2 + ParityHeaderLen // start of the XOR payload (22)
	MaxOverhead     = ParityOffset                        // a parity frame's bytes beyond its longest frame
	MaxN            = 255                                 // largest group (Count is one byte)
	MinFrame        = seqhdr.MACLen + 2                   // shortest host frame: an Ethernet header
)

// Errors of ParseParity.
var (
	ErrShort  = errors.New("fec: frame too short for a parity header")
	ErrNotFEC = errors.New("fec: not a parity frame (link EtherType 0x88B5, type 14)")
	ErrField  = errors.New("fec: parity header field out of range (flags, count, reserved or payload length)")
)

// Parity is a decoded parity header.
type Parity struct {
	First  seqhdr.Seq // first data frame of the group
	Count  int        // data frames in the group
	LenXor uint16     // XOR of their lengths
	// PayloadLen is the length of the XOR payload (the longest frame of
	// the group): the frame's length less ParityOffset.
	PayloadLen int
}

// PutParityHeader writes the MACs, link EtherType and parity header of p into
// b[:ParityOffset]; the payload after it is the caller's.
func PutParityHeader(b []byte, dst, src *[6]byte, p *Parity) error {
	if len(b) < ParityOffset {
		return ErrShort
	}
	if p.Count < 1 || p.Count > MaxN || p.First >= seqhdr.Space {
		return ErrField
	}
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
	b[14] = byte(seqhdr.TypeFECParity)
	b[15] = 0
	if p.First.Era() {
		b[15] = seqhdr.FlagEra
	}
	binary.BigEndian.PutUint16(b[16:], p.First.Num())
	b[18] = byte(p.Count)
	b[19] = 0
	binary.BigEndian.PutUint16(b[20:], p.LenXor)
	return nil
}

// ParseParity decodes the parity header of a whole frame. It checks the
// header's own fields and that the payload holds at least an Ethernet
// header; whether the payload agrees with the frames it covers is only
// known on recovery (Receiver checks it then).
func ParseParity(frame []byte) (Parity, error) {
	if len(frame) < ParityOffset {
		return Parity{}, ErrShort
	}
	if t, ok := seqhdr.FrameType(frame); !ok || t != seqhdr.TypeFECParity {
		return Parity{}, ErrNotFEC
	}
	if frame[15]&^seqhdr.FlagEra != 0 || frame[19] != 0 {
		return Parity{}, ErrField
	}
	p := Parity{
		First:      seqhdr.MakeSeq(binary.BigEndian.Uint16(frame[16:]), frame[15]&seqhdr.FlagEra != 0),
		Count:      int(frame[18]),
		LenXor:     binary.BigEndian.Uint16(frame[20:]),
		PayloadLen: len(frame) - ParityOffset,
	}
	if p.Count < 1 || p.PayloadLen < MinFrame {
		return Parity{}, ErrField
	}
	return p, nil
}
