package wire

import (
	"encoding/binary"
	"fmt"
	"math"
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
	// DataReturned: a gate sent the frame back to its sender (set by the
	// gates in the kernel, cleared by the exit gate on a frame it passes).
	DataReturned = 1 << 4
	// DataHeld: of those, one the arrival gate held at its receiver's end:
	// it entered the switch in its slot and reached the receiver after it.
	DataHeld = 1 << 5
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
	if err := putHead(b, "data header", DataHdrLen, DataMagic, noVersion); err != nil {
		return 0, err
	}
	be := binary.BigEndian
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
	if err := checkHead(b, "data header", DataHdrLen, DataMagic, noVersion); err != nil {
		return err
	}
	be := binary.BigEndian
	*h = DataHdr{Src: be.Uint16(b[2:]), Dst: be.Uint16(b[4:]), Class: b[6], Flags: b[7], Round: be.Uint32(b[8:]),
		Slot: b[12], Seq: be.Uint64(b[13:]), Offset: be.Uint64(b[21:]), SendTS: int64(be.Uint64(b[29:]))}
	return nil
}

// WinTrailerLen is the encoded length of a WinTrailer, which follows the
// DataHdr in every raw data frame.
const WinTrailerLen = 28

// WinUnknown marks a WinTrailer time the sender did not know (the FM's
// slot end of a paper-mode window, the lease end outside lease modes).
const WinUnknown = math.MinInt32

// WinTrailer is the sender's view of the window a data frame was released
// into, as offsets in ns from the header's SendTS (all hosts and the FM
// read one clock here): with it the receiver tells why a frame arrived
// outside its slot.
type WinTrailer struct {
	Due     int32 // the sender's estimate of the slot's end plus the guard
	Close   int32 // the sender's close of the window
	FMEnd   int32 // the slot's end on the FM's timeline (its grant's send time + open, moved by the receiver's stagger); WinUnknown
	Line    int32 // when the frame's last byte leaves the sender's line (the shaper model)
	Lease   int32 // when the sender's lease runs out; WinUnknown: no lease
	SlotUs  uint16
	GuardUs uint16
	// Entry is when the frame entered the switch, written by the exit
	// gate on its way (the sender writes WinUnknown).
	Entry int32
}

// WinDelta returns t − base as a WinTrailer offset, clamped to int32 (a
// time ≤ 0 is unknown).
func WinDelta(t, base int64) int32 {
	if t <= 0 || t == math.MaxInt64 {
		return WinUnknown
	}
	d := t - base
	return int32(max(min(d, math.MaxInt32), math.MinInt32+1))
}

// Encode writes t into b[:WinTrailerLen].
func (t *WinTrailer) Encode(b []byte) (int, error) {
	if len(b) < WinTrailerLen {
		return 0, fmt.Errorf("%w: window trailer needs %d bytes, have %d", ErrShort, WinTrailerLen, len(b))
	}
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(t.Due))
	be.PutUint32(b[4:], uint32(t.Close))
	be.PutUint32(b[8:], uint32(t.FMEnd))
	be.PutUint32(b[12:], uint32(t.Line))
	be.PutUint32(b[16:], uint32(t.Lease))
	be.PutUint16(b[20:], t.SlotUs)
	be.PutUint16(b[22:], t.GuardUs)
	be.PutUint32(b[24:], uint32(t.Entry))
	return WinTrailerLen, nil
}

// DecodeWinTrailer parses the trailer at the start of b.
func DecodeWinTrailer(b []byte, t *WinTrailer) error {
	if len(b) < WinTrailerLen {
		return fmt.Errorf("%w: window trailer of %d bytes, need %d", ErrShort, len(b), WinTrailerLen)
	}
	be := binary.BigEndian
	*t = WinTrailer{Due: int32(be.Uint32(b[0:])), Close: int32(be.Uint32(b[4:])), FMEnd: int32(be.Uint32(b[8:])),
		Line: int32(be.Uint32(b[12:])), Lease: int32(be.Uint32(b[16:])), SlotUs: be.Uint16(b[20:]), GuardUs: be.Uint16(b[22:]), Entry: int32(be.Uint32(b[24:]))}
	return nil
}
