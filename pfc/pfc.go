// Package pfc encodes and decodes IEEE 802.3x PAUSE and IEEE 802.1Qbb
// priority-based flow control (PFC) frames, converts pause quanta to and
// from time at a link speed, and keeps the per-class pause state of a
// transmitter.
//
// Both frame kinds are MAC Control frames (ethertype 0x8808). On the wire,
// without the 4-byte FCS, they are padded to the 60-byte Ethernet minimum:
//
//	PAUSE (opcode 0x0001):
//	  dst(6) src(6) 0x8808(2) 0x0001(2) quanta(2) pad(42)
//	PFC (opcode 0x0101):
//	  dst(6) src(6) 0x8808(2) 0x0101(2) class-enable(2) quanta[0..7](16) pad(26)
//
// The class-enable vector's low octet has bit i set when the quanta for
// priority i are valid; its high octet is reserved (sent as zero, ignored on
// receipt). One quantum is 512 bit times at the link speed. Quanta 0 means
// "resume now".
//
// The package sends nothing itself and uses no Go timers: time is a
// caller-supplied monotonic clock in nanoseconds (int64, ≥ 0), as read by the
// dataplane's poll loop. Encode and Decode do not allocate.
package pfc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Wire constants.
const (
	// EtherType is the MAC Control ethertype.
	EtherType = 0x8808
	// OpPause is the 802.3x PAUSE opcode (one quanta value for the whole link).
	OpPause = 0x0001
	// OpPFC is the 802.1Qbb priority-based flow control opcode
	// (class-enable vector plus eight per-priority quanta).
	OpPFC = 0x0101

	// FrameLen is the length of an encoded frame: the Ethernet minimum
	// without FCS. Encode always writes exactly FrameLen bytes.
	FrameLen = 60
	// PauseLen is the number of meaningful bytes in a PAUSE frame (before padding).
	PauseLen = 18
	// PFCLen is the number of meaningful bytes in a PFC frame (before padding).
	PFCLen = 34

	// NumClasses is the number of 802.1p priorities / traffic classes.
	NumClasses = 8
	// QuantumBits is the length of one pause quantum in bit times.
	QuantumBits = 512
	// MaxQuanta is the largest pause value a frame can carry.
	MaxQuanta = 0xFFFF
)

// Link speeds in bits per second, for the quanta conversions.
const (
	Speed1G   uint64 = 1_000_000_000
	Speed10G  uint64 = 10_000_000_000
	Speed25G  uint64 = 25_000_000_000
	Speed40G  uint64 = 40_000_000_000
	Speed100G uint64 = 100_000_000_000
)

// MulticastAddr is the reserved destination address of MAC Control frames
// (01:80:C2:00:00:01).
var MulticastAddr = [6]byte{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}

// Errors returned (wrapped, with details) by Decode and Encode. Test with errors.Is.
var (
	// ErrShort: the buffer is too short for the frame's fields.
	ErrShort = errors.New("pfc: frame too short")
	// ErrEtherType: the frame is not a MAC Control frame (ethertype ≠ 0x8808).
	ErrEtherType = errors.New("pfc: not a MAC Control frame")
	// ErrOpcode: a MAC Control frame with an opcode other than PAUSE or PFC.
	ErrOpcode = errors.New("pfc: unsupported MAC Control opcode")
	// ErrLinkSpeed: a link speed of 0 bits/s was given.
	ErrLinkSpeed = errors.New("pfc: link speed must be > 0 bits/s")
)

// Frame is a decoded PAUSE or PFC frame.
//
// For OpPFC, ClassEnable bit i says whether Quanta[i] is valid.
// For OpPause, the single pause value is Quanta[0] and it applies to every
// class; ClassEnable and Quanta[1..7] are ignored by Encode and set to zero by
// Decode.
type Frame struct {
	Dst         [6]byte
	Src         [6]byte
	Opcode      uint16
	ClassEnable uint8
	Quanta      [NumClasses]uint16
}

// NewPFC returns a PFC frame to MulticastAddr from src that pauses (q > 0) or
// resumes (q == 0) the classes in enable with the given quanta.
func NewPFC(src [6]byte, enable uint8, quanta [NumClasses]uint16) Frame {
	return Frame{Dst: MulticastAddr, Src: src, Opcode: OpPFC, ClassEnable: enable, Quanta: quanta}
}

// NewPause returns an 802.3x PAUSE frame to MulticastAddr from src.
func NewPause(src [6]byte, quanta uint16) Frame {
	f := Frame{Dst: MulticastAddr, Src: src, Opcode: OpPause}
	f.Quanta[0] = quanta
	return f
}

// Encode writes f into b[:FrameLen], zero padding included, and returns
// FrameLen. It does not allocate on success. It fails with ErrShort if
// len(b) < FrameLen and ErrOpcode if f.Opcode is neither OpPause nor OpPFC.
func (f *Frame) Encode(b []byte) (int, error) {
	if f.Opcode != OpPause && f.Opcode != OpPFC {
		return 0, fmt.Errorf("%w: encode opcode %#04x (want %#04x PAUSE or %#04x PFC)", ErrOpcode, f.Opcode, OpPause, OpPFC)
	}
	if len(b) < FrameLen {
		return 0, fmt.Errorf("%w: encode needs a %d-byte buffer, got %d", ErrShort, FrameLen, len(b))
	}
	b = b[:FrameLen]
	copy(b[0:6], f.Dst[:])
	copy(b[6:12], f.Src[:])
	binary.BigEndian.PutUint16(b[12:14], EtherType)
	binary.BigEndian.PutUint16(b[14:16], f.Opcode)
	var n int
	if f.Opcode == OpPause {
		binary.BigEndian.PutUint16(b[16:18], f.Quanta[0])
		n = PauseLen
	} else {
		binary.BigEndian.PutUint16(b[16:18], uint16(f.ClassEnable))
		for i, q := range f.Quanta {
			binary.BigEndian.PutUint16(b[18+2*i:], q)
		}
		n = PFCLen
	}
	clear(b[n:])
	return FrameLen, nil
}

// IsMACControl reports whether b carries the MAC Control ethertype. It is a
// cheap pre-check for the receive path before calling Decode.
func IsMACControl(b []byte) bool {
	return len(b) >= 14 && b[12] == 0x88 && b[13] == 0x08
}

// Decode parses a PAUSE or PFC frame from b (starting at the destination
// MAC, no FCS) into f. It does not allocate on success.
//
// The destination address is reported in f.Dst but not checked: 802.3x
// allows PAUSE to the peer's unicast address too. Padding is not required:
// b need only hold the frame's fields (PauseLen or PFCLen bytes), since a
// software peer such as a veth may deliver an unpadded frame. The reserved
// high octet of the PFC class-enable vector is ignored, as 802.1Qbb
// requires. Errors wrap ErrShort, ErrEtherType or ErrOpcode.
func Decode(b []byte, f *Frame) error {
	if len(b) < 16 {
		return fmt.Errorf("%w: %d bytes, need at least 16 for addresses, ethertype and opcode", ErrShort, len(b))
	}
	if et := binary.BigEndian.Uint16(b[12:14]); et != EtherType {
		return fmt.Errorf("%w: ethertype %#04x, want %#04x", ErrEtherType, et, EtherType)
	}
	op := binary.BigEndian.Uint16(b[14:16])
	switch op {
	case OpPause:
		if len(b) < PauseLen {
			return fmt.Errorf("%w: PAUSE frame of %d bytes, need %d", ErrShort, len(b), PauseLen)
		}
		*f = Frame{Opcode: OpPause}
		f.Quanta[0] = binary.BigEndian.Uint16(b[16:18])
	case OpPFC:
		if len(b) < PFCLen {
			return fmt.Errorf("%w: PFC frame of %d bytes, need %d", ErrShort, len(b), PFCLen)
		}
		*f = Frame{Opcode: OpPFC, ClassEnable: b[17]}
		for i := range f.Quanta {
			f.Quanta[i] = binary.BigEndian.Uint16(b[18+2*i:])
		}
	default:
		return fmt.Errorf("%w: opcode %#04x (want %#04x PAUSE or %#04x PFC)", ErrOpcode, op, OpPause, OpPFC)
	}
	copy(f.Dst[:], b[0:6])
	copy(f.Src[:], b[6:12])
	return nil
}

// QuantaToNanos returns how long q pause quanta last at linkSpeed bits/s,
// in nanoseconds, rounded up (a pause never ends early). It returns 0 if
// linkSpeed is 0.
func QuantaToNanos(q uint16, linkSpeed uint64) int64 {
	if linkSpeed == 0 {
		return 0
	}
	// q*512*1e9 ≤ 65535*512*1e9 ≈ 3.4e16: no overflow in uint64.
	bits := uint64(q) * QuantumBits * 1_000_000_000
	return int64((bits + linkSpeed - 1) / linkSpeed)
}

// NanosToQuanta returns the number of quanta that cover at least ns
// nanoseconds at linkSpeed bits/s (rounded up), saturating at MaxQuanta.
// ns ≤ 0 gives 0 (resume). linkSpeed 0 gives 0.
func NanosToQuanta(ns int64, linkSpeed uint64) uint16 {
	if ns <= 0 || linkSpeed == 0 {
		return 0
	}
	// Longest representable pause at this speed; anything at or above it saturates.
	if ns >= QuantaToNanos(MaxQuanta, linkSpeed) {
		return MaxQuanta
	}
	// 128-bit product: exact for any linkSpeed.
	const perQuantum = QuantumBits * 1_000_000_000
	hi, lo := bits.Mul64(uint64(ns), linkSpeed)
	var carry uint64
	lo, carry = bits.Add64(lo, perQuantum-1, 0)
	hi += carry
	if hi >= perQuantum {
		return MaxQuanta
	}
	q, _ := bits.Div64(hi, lo, perQuantum)
	if q > MaxQuanta {
		return MaxQuanta
	}
	return uint16(q)
}
