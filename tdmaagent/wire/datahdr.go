package wire

import (
	"encoding/binary"
	"fmt"
)

// Raw data frames: ethertype 0x88B5 (IEEE local experimental), then DataHdr.
const (
	DataEtherType = 0x88B5
	DataMagic     = 0x5458 // "TX"
	// DataHdrLen is the encoded header length (after the Ethernet header).
	DataHdrLen = 37
)

// DataHdr.Flags bits.
const (
	DataFreeRun  = 1 << 0 // sent in a window the host opened by its own timer
	DataPing     = 1 << 1 // an RPC request: Seq is its id, Offset its offset index; no payload
	DataPong     = 1 << 2 // the answer to the request with id Seq
	DataDeferred = 1 << 3 // a Pong the server could not send at once (it waited for a window)
)

// DataHdr heads every raw TDMA data frame; with it a receiver counts loss
// and reordering per sender and checks that a frame arrived inside its
// sender's window.
type DataHdr struct {
	Src, Dst uint16
	Class    uint8
	Flags    uint8
	Round    uint32
	Slot     uint8
	Seq      uint64 // per src → dst
	Offset   uint64 // byte offset in the src → dst stream
	SendTS   int64  // sender clock, ns
}

// Encode writes h into b[:DataHdrLen].
func (h *DataHdr) Encode(b []byte) (int, error) {
	if len(b) < DataHdrLen {
		return 0, fmt.Errorf("%w: data header needs %d bytes, have %d", ErrShort, DataHdrLen, len(b))
	}
	be := binary.BigEndian
	be.PutUint16(b[0:], DataMagic)
	be.PutUint16(b[2:], h.Src)
	be.PutUint16(b[4:], h.Dst)
	b[6] = h.Class
	b[7] = h.Flags
	be.PutUint32(b[8:], h.Round)
	b[12] = h.Slot
	be.PutUint64(b[13:], h.Seq)
	be.PutUint64(b[21:], h.Offset)
	be.PutUint64(b[29:], uint64(h.SendTS))
	return DataHdrLen, nil
}

// DecodeDataHdr parses the header at the start of b (the bytes after the
// Ethernet header).
func DecodeDataHdr(b []byte, h *DataHdr) error {
	if len(b) < DataHdrLen {
		return fmt.Errorf("%w: data header of %d bytes, need %d", ErrShort, len(b), DataHdrLen)
	}
	be := binary.BigEndian
	if m := be.Uint16(b); m != DataMagic {
		return fmt.Errorf("%w: data magic %#04x", ErrMagic, m)
	}
	*h = DataHdr{Src: be.Uint16(b[2:]), Dst: be.Uint16(b[4:]), Class: b[6], Flags: b[7], Round: be.Uint32(b[8:]),
		Slot: b[12], Seq: be.Uint64(b[13:]), Offset: be.Uint64(b[21:]), SendTS: int64(be.Uint64(b[29:]))}
	return nil
}
