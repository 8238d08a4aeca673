package seqhdr

import (
	"encoding/binary"
	"errors"
)

// HelloLen is the length of a HELLO/HELLO-ACK after the link EtherType
// (see "Session frames" in the package comment).
const HelloLen = 2 + 2 + 8 + 8 + 4 + 4 + 1 + 1 + 2 + 4 + 2

const _ = uint(MinFrameLen - (MACLen + HelloLen)) // compile-time check: fits a minimum frame

// ReportLen is the length of the report a HELLO may carry after its
// HelloLen bytes (FlagReport; mode fec), with the Caps byte and the
// reserved byte that follow it in every HELLO of MinFrameLen bytes.
const ReportLen = 4 + 2 + 1 + 1 + 2

const _ = uint(MinFrameLen - (MACLen + HelloLen + ReportLen)) // compile-time check: fits a minimum frame

// Protect bits of Hello.Protect.
const (
	ProtectTx       = 0x01 // the sender sequences the frames it sends
	ProtectRx       = 0x02 // the sender sequences the frames it receives
	ProtectModeMask = 0x30 // its receive mode << 4: 0 lg, 1 lgnb, 2 monitor
	ProtectFEC      = 0x40 // its sequenced frames are FEC's (parity, replication), not LinkGuardian's
	protectReserved = 0x8C
)

// Caps bits of Hello.Caps: what the sender runs besides its offer, for the
// peer to check (see "Session frames"). Zero: not said (a sender from
// before Caps existed).
const (
	CapsSet           = 0x80 // the byte is set
	CapsIntegrityMask = 0x03 // the sender's integrity check: linkcrc.Integrity (0 crc32c, 1 off, 2 csum)
	CapsFastSend      = 0x04 // its host frames may go out by the kernel's send fast path
	capsReserved      = 0x78
)

// capsOff is the offset of Caps after the link EtherType's MACs (frame
// byte 58); the byte after it is reserved.
const capsOff = HelloLen + 8

// FlagReport (flags byte of a HELLO) says the HELLO carries a Report.
const FlagReport = 0x01

// RxLossUnknown is Report.RxLoss before anything was measured.
const RxLossUnknown = 0xFFFFFFFF

// Report is what a FEC end measured and runs, carried by its HELLOs and
// HELLO-ACKs (FlagReport): its peer's link policy decides from it.
type Report struct {
	// RxLoss is the loss rate of the link frames this end receives, per
	// transmission (copies corrected for), in units of 1e-9 (at most 1e9;
	// RxLossUnknown: not measured yet).
	RxLoss uint32
	// RxBurst is their mean loss run in 1/256 frames (0: no run seen).
	RxBurst uint16
	// TxN and TxCopies are this end's sender: data frames per parity
	// frame (0: none) and transmissions per frame (≥ 1).
	TxN, TxCopies uint8
}

// ErrHello reports a session frame whose fields are out of range.
var ErrHello = errors.New("seqhdr: HELLO field out of range (zero epoch or window/lanes/MTU/speed, sequence number beyond the serial space, reserved bits set)")

// Hello is a decoded HELLO or HELLO-ACK (package linksession).
type Hello struct {
	Ack     bool   // HELLO-ACK (type 8) rather than HELLO (type 7)
	Epoch   uint64 // sender's epoch, nonzero
	Echo    uint64 // the peer epoch the sender knows, 0 if none
	InitSeq Seq    // sender's first sequence number towards epoch Echo
	Window  uint32 // receive window / credit, frames
	Lanes   uint8
	Protect uint8 // Protect* bits
	MTU     uint16
	Speed   uint32 // link speed, Mbit/s
	// Node is the sender's cell node id (mode cells; 0: not a cell node).
	// Neighbours must differ: see linksession.Config.Node.
	Node uint16
	// HasReport says Report is carried (FlagReport).
	HasReport bool
	Report    Report
	// Caps is what the sender runs besides its offer (Caps* bits; 0:
	// not said).
	Caps uint8
}

func (h *Hello) valid() bool {
	return h.Epoch != 0 && h.InitSeq < Space && h.Window != 0 && h.Lanes != 0 && h.MTU >= 64 &&
		h.Speed != 0 && h.Protect&protectReserved == 0 && h.Protect&ProtectModeMask != ProtectModeMask &&
		(!h.HasReport || h.Report.valid()) &&
		(h.Caps == 0 || h.Caps&CapsSet != 0 && h.Caps&capsReserved == 0 && h.Caps&CapsIntegrityMask != CapsIntegrityMask)
}

func (r *Report) valid() bool {
	return (r.RxLoss <= 1e9 || r.RxLoss == RxLossUnknown) && r.TxCopies >= 1
}

// PutHello writes a complete HELLO or HELLO-ACK frame into b (MACs, header,
// zero padding to MinFrameLen) and returns its length. It does not allocate.
func PutHello(b []byte, dst, src *[6]byte, h *Hello) (int, error) {
	if !h.valid() {
		return 0, ErrHello
	}
	if len(b) < MinFrameLen {
		return 0, ErrShort
	}
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	p := b[MACLen:]
	binary.BigEndian.PutUint16(p[0:], EtherType)
	p[2] = byte(TypeHello)
	if h.Ack {
		p[2] = byte(TypeHelloAck)
	}
	p[3] = 0
	if h.HasReport {
		p[3] = FlagReport
	}
	binary.BigEndian.PutUint64(p[4:], h.Epoch)
	binary.BigEndian.PutUint64(p[12:], h.Echo)
	binary.BigEndian.PutUint32(p[20:], uint32(h.InitSeq))
	binary.BigEndian.PutUint32(p[24:], h.Window)
	p[28] = h.Lanes
	p[29] = h.Protect
	binary.BigEndian.PutUint16(p[30:], h.MTU)
	binary.BigEndian.PutUint32(p[32:], h.Speed)
	binary.BigEndian.PutUint16(p[36:], h.Node)
	clear(b[MACLen+HelloLen : MinFrameLen])
	if h.HasReport {
		r := p[HelloLen:]
		binary.BigEndian.PutUint32(r[0:], h.Report.RxLoss)
		binary.BigEndian.PutUint16(r[4:], h.Report.RxBurst)
		r[6], r[7] = h.Report.TxN, h.Report.TxCopies
	}
	p[capsOff] = h.Caps
	return MinFrameLen, nil
}

// ParseHello decodes the HELLO or HELLO-ACK of a whole frame (an integrity
// trailer after it is ignored). Every successfully parsed Hello re-encodes
// with PutHello to the same header, report and Caps bytes.
func ParseHello(frame []byte) (Hello, error) {
	var h Hello
	if len(frame) < MACLen+4 {
		return h, ErrShort
	}
	p := frame[MACLen:]
	if binary.BigEndian.Uint16(p) != EtherType {
		return h, ErrNotLink
	}
	if p[2]>>4 != 0 {
		return h, ErrVersion
	}
	switch Type(p[2] & 0x0f) {
	case TypeHello:
	case TypeHelloAck:
		h.Ack = true
	default:
		return h, ErrType
	}
	if len(p) < HelloLen {
		return h, ErrShort
	}
	if p[3]&^FlagReport != 0 {
		return h, ErrFlags
	}
	h.Epoch = binary.BigEndian.Uint64(p[4:])
	h.Echo = binary.BigEndian.Uint64(p[12:])
	seq := binary.BigEndian.Uint32(p[20:])
	h.InitSeq = Seq(seq)
	h.Window = binary.BigEndian.Uint32(p[24:])
	h.Lanes = p[28]
	h.Protect = p[29]
	h.MTU = binary.BigEndian.Uint16(p[30:])
	h.Speed = binary.BigEndian.Uint32(p[32:])
	h.Node = binary.BigEndian.Uint16(p[36:])
	if p[3]&FlagReport != 0 {
		if len(p) < HelloLen+ReportLen {
			return Hello{}, ErrShort
		}
		r := p[HelloLen:]
		h.HasReport = true
		h.Report = Report{RxLoss: binary.BigEndian.Uint32(r[0:]), RxBurst: binary.BigEndian.Uint16(r[4:]), TxN: r[6], TxCopies: r[7]}
	}
	if len(p) >= capsOff+2 { // a frame cut shorter has no Caps
		h.Caps = p[capsOff]
		if p[capsOff+1] != 0 {
			return Hello{}, ErrHello
		}
	}
	if !h.valid() {
		return Hello{}, ErrHello
	}
	return h, nil
}
