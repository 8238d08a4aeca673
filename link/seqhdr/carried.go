package seqhdr

import "encoding/binary"

// Carried frames: the cell family (types 9–12) keeps bytes 15..21 of its
// link header for the link layer, laid out as a data header's (flags, Seq,
// Aux, Ack). LinkGuardian sequences such a frame in place: Stamp writes
// those bytes, ParseCarried reads them back, and the frame keeps its type,
// length and everything after DataOffset. Aux is zero (there is no
// original EtherType to keep); Unseq marks a frame sent unsequenced with
// only a piggybacked ACK.

// IsCarried reports whether frames of type t carry LinkGuardian's fields
// in place (the cell family).
func (t Type) IsCarried() bool { return t >= TypeCell && t <= TypeReach }

// Stamp writes h's flags, Seq and Ack into bytes 15..21 of frame, a whole
// frame of a carried type whose type byte it keeps (h.Type is ignored). h
// must hold what a data header may (no Count, Latest, Pause or EtherType;
// Unseq only with an ACK and Seq 0, never with Retx).
func Stamp(frame []byte, h *Header) error {
	t, ok := FrameType(frame)
	if !ok || !t.IsCarried() {
		return ErrType
	}
	if len(frame) < DataOffset {
		return ErrShort
	}
	d := *h
	d.Type = TypeData
	if d.EtherType != 0 {
		return ErrField
	}
	if err := d.validate(); err != nil {
		return err
	}
	var b [2 + HeaderLen]byte
	if _, err := d.Put(b[:]); err != nil {
		return err
	}
	copy(frame[MACLen+3:DataOffset], b[3:])
	return nil
}

// ParseCarried decodes the link fields of a whole frame of a carried type:
// Type is the frame's, the rest as Parse decodes a data header (EtherType
// zero). Every frame it accepts re-stamps with Stamp to the same bytes.
func ParseCarried(frame []byte) (Header, error) {
	t, ok := FrameType(frame)
	if !ok {
		if IsLink(frame) && len(frame) >= MACLen+3 {
			return Header{}, ErrVersion
		}
		return Header{}, ErrNotLink
	}
	if !t.IsCarried() {
		return Header{}, ErrType
	}
	if len(frame) < DataOffset {
		return Header{}, ErrShort
	}
	if binary.BigEndian.Uint16(frame[MACLen+6:]) != 0 {
		return Header{}, ErrField
	}
	var b [2 + HeaderLen]byte
	copy(b[:], frame[MACLen:DataOffset])
	b[2] = byte(TypeData)
	h, err := Parse(b[:])
	if err != nil {
		return Header{}, err
	}
	h.Type = t
	return h, nil
}
