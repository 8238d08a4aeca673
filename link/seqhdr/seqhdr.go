// Package seqhdr defines the wire format of the link header that linkfabric
// puts on frames crossing a LinkGuardian-protected link, and the serial-number
// arithmetic of its sequence numbers.
//
// # Frame layout
//
// A protected frame keeps its Ethernet destination and source MAC addresses,
// replaces the EtherType by EtherType (0x88B5, IEEE 802 local experimental
// EtherType 1) and moves the original EtherType into the link header. All
// multi-byte fields are big endian. Offsets are from the start of the frame.
//
//	off len field
//	 0   6  destination MAC                  (unchanged)
//	 6   6  source MAC                       (unchanged)
//	12   2  EtherType = 0x88B5
//	14   1  version (high nibble, 0) | type (low nibble), see "Type space"
//	15   1  flags:
//	          0x01 Retx      data: retransmitted copy
//	          0x02 Era       era bit of Seq
//	          0x04 HasAck    Ack field is valid (piggybacked / explicit ACK)
//	          0x08 AckEra    era bit of Ack
//	          0x10 LatestEra loss: era bit of Latest
//	          0x20 Unseq     data: frame carries no sequence number, only an ACK
//	                         (reverse traffic of a link protected in one direction)
//	          0x40, 0x80     reserved, must be zero
//	16   2  Seq   data: the frame's sequence number; dummy: the sender's latest
//	              assigned sequence number; loss: first lost sequence number;
//	              ACK and Unseq data: zero
//	18   2  Aux   data: the frame's original EtherType; loss: number of
//	              consecutive lost frames (hole size, ≥ 1); others: zero
//	20   2  Ack   if HasAck: the receiver's latest in-order sequence number
//	              (ackNo-1: every frame up to and including Ack was delivered
//	              or given up on); otherwise zero
//	22   2  Latest  loss notification only: receiver's latestRxSeqNo
//
// A pause (LinkGuardian backpressure) uses the data header's length with Seq
// zero, no ACK and bytes 18..21 holding the pause duration in nanoseconds
// (uint32, ≥ 1); a resume is all zero after the type byte.
//
// Data, ACK and dummy headers are HeaderLen (8) bytes after the link
// EtherType; a loss notification is LossHeaderLen (10). A data frame grows by
// exactly MaxOverhead (8) bytes: the 2 bytes of the link EtherType replace the
// original EtherType, which moves into Aux. The ACK field is always present in a
// data header so that a core can refresh a piggybacked ACK in place, also on a
// retransmitted copy, without moving bytes.
//
// Control frames (ACK, loss notification, dummy) are padded with zeros to
// MinFrameLen (60 bytes, the Ethernet minimum without FCS).
//
// # Type space
//
// One link EtherType carries every mechanism; the 4-bit type partitions it so
// that no mechanism needs a second EtherType or a second parser. Parse decodes
// the LinkGuardian family; ParseHello the session family; package cellify the
// cell family (its headers start at DataOffset, after a link header whose
// bytes 15..21 LinkGuardian fills as for a data frame when it sequences the
// frame in place: Stamp, ParseCarried); package fec the parity frame (FEC's
// data frames are data frames: Seq and the original EtherType, no flags, no
// ACK); the reserved
// numbers have no decoder yet and every decoder rejects them (ErrType), so a
// caller counts them as bad frames until their mechanism exists.
//
//	type  name          family        decoder      lane
//	 0    -             invalid       -            -
//	 1    data          LinkGuardian  Parse/Strip  normal
//	 2    ack           LinkGuardian  Parse        low
//	 3    loss          LinkGuardian  Parse        priority
//	 4    dummy         LinkGuardian  Parse        low
//	 5    pause         LinkGuardian  Parse        priority (replaces 802.1Qbb for LG)
//	 6    resume        LinkGuardian  Parse        priority
//	 7    hello         session       ParseHello   priority
//	 8    hello-ack     session       ParseHello   priority
//	 9    cell          cells         cellify.ParseCell    normal
//	10    credit-req    credit        cellify.ParseCredit  priority
//	11    credit-grant  credit        cellify.ParseCredit  priority
//	12    reach         reachability  cellify.ParseReach   priority
//	13    tdma          TDMA          reserved
//	14    fec-parity    FEC           fec.ParseParity      normal
//	15    -             reserved for an extended type byte
//
// # Session frames
//
// HELLO and HELLO-ACK (package linksession) are HelloLen bytes after the link
// EtherType, padded to MinFrameLen:
//
//	off len field
//	14   1  version | type (7 hello, 8 hello-ack)
//	15   1  flags: 0x01 Report (bytes 50..57 hold a report); others zero
//	16   8  Epoch  sender's epoch (random per process start, nonzero)
//	24   8  Echo   the peer epoch the sender knows (0: none yet)
//	32   4  InitSeq  first sequence number the sender's LG sender uses
//	             towards the peer epoch Echo (< Space)
//	36   4  Window  receive window / credit, frames (≥ 1)
//	40   1  Lanes   transmit lanes (queues) (≥ 1)
//	41   1  Protect bit 0: the sender sequences what it sends; bit 1: it
//	             sequences what it receives; bits 4-5: its receive mode
//	             (0 lg, 1 lgnb, 2 monitor); bit 6: FEC; other bits zero
//	42   2  MTU     largest host frame, bytes (≥ 64)
//	44   4  Speed   link speed, Mbit/s (the PFC quanta unit, 512 bit times)
//	48   2  Node    the sender's cell node id (mode cells), 0 otherwise
//
// Protect bit 6 (ProtectFEC) says the sequenced frames are FEC's (mode
// fec): an end that codes and one that retransmits never agree. The
// report (mode fec: what the peer's link policy needs) follows:
//
//	50   4  RxLoss   loss rate of the frames the sender receives, per
//	             transmission, in 1e-9 (0xFFFFFFFF: not measured yet)
//	54   2  RxBurst  their mean loss run, 1/256 frames (0: none seen)
//	56   1  TxN      the sender's data frames per parity frame (0: none)
//	57   1  TxCopies the sender's transmissions per frame (≥ 1)
//
// Bytes 58 and 59 are there with or without a report:
//
//	58   1  Caps     what the sender runs besides its offer (Hello.Caps):
//	             bit 7 (CapsSet): the byte is set; bits 0-1: its link
//	             frames' integrity check (linkcrc.Integrity: 0 crc32c,
//	             1 off, 2 csum; 3 is invalid); bit 2 (CapsFastSend): its
//	             host frames may go out by the kernel's send fast path;
//	             other bits zero
//	59   1  reserved, zero
//
// A sender from before Caps existed leaves byte 58 zero (Caps unknown); it
// also checked bytes 58 and 59 to be zero when a report is carried, so it
// refuses a HELLO with both a report and Caps (mode fec): both ends of a
// fec link must run a build that knows Caps.
//
// # Sequence numbers
//
// The paper (LinkGuardian, SIGCOMM'23, §3.5) uses a 16-bit seqNo and an era
// bit that toggles on every wrap. Seq holds both as one (SeqBits+1)-bit serial
// number era<<SeqBits | seqNo and compares with RFC 1982 arithmetic over that
// space, which is the paper's era correction: comparisons are correct while the
// two numbers are less than 2^SeqBits apart.
package seqhdr

import (
	"encoding/binary"
	"errors"
)

// EtherType is the link EtherType of protected frames (IEEE 802 local
// experimental EtherType 1).
const EtherType = 0x88B5

// Sizes.
const (
	MACLen        = 12                           // destination + source MAC
	HeaderLen     = 8                            // data/ACK/dummy header after the link EtherType
	LossHeaderLen = 10                           // loss notification header after the link EtherType
	MaxOverhead   = HeaderLen                    // bytes a data frame grows by
	DataOffset    = MACLen + 2 + HeaderLen       // offset of the payload in a data frame (22)
	MinFrameLen   = 60                           // control frames are padded to this length
	ctrlNeed      = MACLen + 2 + LossHeaderLen   // largest control frame before padding
	_             = uint(MinFrameLen - ctrlNeed) // compile-time check: control frames fit
)

// Type is the frame type.
type Type uint8

// Frame types (see the package comment's type space).
const (
	TypeData        Type = 1
	TypeAck         Type = 2
	TypeLoss        Type = 3
	TypeDummy       Type = 4
	TypePause       Type = 5
	TypeResume      Type = 6
	TypeHello       Type = 7
	TypeHelloAck    Type = 8
	TypeCell        Type = 9  // package cellify
	TypeCreditReq   Type = 10 // package cellify
	TypeCreditGrant Type = 11 // package cellify
	TypeReach       Type = 12 // package cellify
	TypeTDMA        Type = 13 // reserved
	TypeFECParity   Type = 14 // package fec
	// NumTypes bounds the type field (4 bits): arrays indexed by Type use it.
	NumTypes = 16
)

var typeNames = [NumTypes]string{"invalid", "data", "ack", "loss", "dummy", "pause", "resume",
	"hello", "hello-ack", "cell", "credit-req", "credit-grant", "reach", "tdma", "fec-parity", "reserved"}

func (t Type) String() string {
	if t < NumTypes {
		return typeNames[t]
	}
	return "invalid"
}

// IsLG reports whether t is a LinkGuardian type (decoded by Parse).
func (t Type) IsLG() bool { return t >= TypeData && t <= TypeResume }

// IsSession reports whether t is a session type (decoded by ParseHello).
func (t Type) IsSession() bool { return t == TypeHello || t == TypeHelloAck }

// FrameType returns the link header type of a whole frame without decoding
// the rest, for dispatch; ok is false for a frame that is not a link frame,
// too short or of another version.
func FrameType(frame []byte) (t Type, ok bool) {
	if len(frame) < MACLen+4 || binary.BigEndian.Uint16(frame[MACLen:]) != EtherType || frame[MACLen+2]>>4 != 0 {
		return 0, false
	}
	return Type(frame[MACLen+2] & 0x0f), true
}

// Flag bits (byte 15 of the frame).
const (
	FlagRetx      = 0x01
	FlagEra       = 0x02
	FlagHasAck    = 0x04
	FlagAckEra    = 0x08
	FlagLatestEra = 0x10
	FlagUnseq     = 0x20
	flagReserved  = 0xC0
)

// Errors returned by the decoders.
var (
	ErrShort     = errors.New("seqhdr: frame too short for its link header")
	ErrNotLink   = errors.New("seqhdr: EtherType is not 0x88B5 (not a link-protected frame)")
	ErrVersion   = errors.New("seqhdr: unsupported link header version")
	ErrType      = errors.New("seqhdr: unknown link header type")
	ErrFlags     = errors.New("seqhdr: flags invalid for this header type")
	ErrField     = errors.New("seqhdr: field must be zero or in range for this header type")
	ErrHeadroom  = errors.New("seqhdr: not enough headroom before the frame to insert the link header")
	ErrNotData   = errors.New("seqhdr: only data headers can be inserted into or stripped from a frame")
	ErrEtherType = errors.New("seqhdr: frame is already link-protected (EtherType 0x88B5)")
)

// Header is a decoded link header.
type Header struct {
	Type      Type
	Retx      bool   // data: retransmitted copy
	Unseq     bool   // data: carries only a piggybacked ACK, no sequence number
	Seq       Seq    // see the package comment
	EtherType uint16 // data: original EtherType of the frame
	Count     uint16 // loss: number of consecutive lost frames starting at Seq
	HasAck    bool   // Ack is valid
	Ack       Seq    // receiver's latest in-order sequence number
	Latest    Seq    // loss: receiver's latestRxSeqNo
	Pause     uint32 // pause: duration in nanoseconds (≥ 1)
}

// Len returns the encoded length of h after the link EtherType.
func (h *Header) Len() int {
	if h.Type == TypeLoss {
		return LossHeaderLen
	}
	return HeaderLen
}

// WireLen returns the number of bytes Put writes: link EtherType plus header.
func (h *Header) WireLen() int { return 2 + h.Len() }

func (h *Header) validate() error {
	if !h.Type.IsLG() {
		return ErrType
	}
	if h.Type == TypePause || h.Type == TypeResume {
		if h.Seq != 0 || h.HasAck || h.Ack != 0 || h.Retx || h.Unseq || h.EtherType != 0 || h.Count != 0 || h.Latest != 0 {
			return ErrField
		}
		if (h.Type == TypePause) != (h.Pause != 0) {
			return ErrField
		}
		return nil
	}
	if h.Pause != 0 {
		return ErrField
	}
	if h.Seq >= Space || h.Ack >= Space || h.Latest >= Space {
		return ErrField
	}
	if !h.HasAck && h.Ack != 0 {
		return ErrField
	}
	if h.Type != TypeData && (h.Retx || h.Unseq || h.EtherType != 0) {
		return ErrFlags
	}
	if h.Type != TypeLoss && (h.Count != 0 || h.Latest != 0) {
		return ErrField
	}
	switch h.Type {
	case TypeData:
		if h.Unseq && (h.Retx || !h.HasAck || h.Seq != 0) {
			return ErrFlags
		}
	case TypeAck:
		if !h.HasAck || h.Seq != 0 {
			return ErrField
		}
	case TypeLoss:
		if h.Count == 0 {
			return ErrField
		}
	}
	return nil
}

// Put encodes the link EtherType and h into b and returns the number of bytes
// written (h.WireLen()). It does not allocate.
func (h *Header) Put(b []byte) (int, error) {
	if err := h.validate(); err != nil {
		return 0, err
	}
	n := h.WireLen()
	if len(b) < n {
		return 0, ErrShort
	}
	var flags byte
	if h.Retx {
		flags |= FlagRetx
	}
	if h.Seq.Era() {
		flags |= FlagEra
	}
	if h.HasAck {
		flags |= FlagHasAck
		if h.Ack.Era() {
			flags |= FlagAckEra
		}
	}
	if h.Type == TypePause || h.Type == TypeResume {
		binary.BigEndian.PutUint16(b[0:], EtherType)
		b[2] = byte(h.Type)
		clear(b[3:n])
		binary.BigEndian.PutUint32(b[6:], h.Pause)
		return n, nil
	}
	if h.Type == TypeLoss && h.Latest.Era() {
		flags |= FlagLatestEra
	}
	if h.Unseq {
		flags |= FlagUnseq
	}
	binary.BigEndian.PutUint16(b[0:], EtherType)
	b[2] = byte(h.Type)
	b[3] = flags
	binary.BigEndian.PutUint16(b[4:], h.Seq.Num())
	aux := h.EtherType
	if h.Type == TypeLoss {
		aux = h.Count
	}
	binary.BigEndian.PutUint16(b[6:], aux)
	var ack uint16
	if h.HasAck {
		ack = h.Ack.Num()
	}
	binary.BigEndian.PutUint16(b[8:], ack)
	if h.Type == TypeLoss {
		binary.BigEndian.PutUint16(b[10:], h.Latest.Num())
	}
	return n, nil
}

// Parse decodes a link header from b, which starts at the link EtherType
// (offset 12 of a frame). Every successfully parsed header re-encodes with Put
// to exactly the bytes it was parsed from.
func Parse(b []byte) (Header, error) {
	var h Header
	if len(b) < 4 {
		return h, ErrShort
	}
	if binary.BigEndian.Uint16(b) != EtherType {
		return h, ErrNotLink
	}
	if b[2]>>4 != 0 {
		return h, ErrVersion
	}
	h.Type = Type(b[2] & 0x0f)
	if !h.Type.IsLG() {
		return h, ErrType
	}
	if len(b) < h.WireLen() {
		return h, ErrShort
	}
	flags := b[3]
	if h.Type == TypePause || h.Type == TypeResume {
		if flags != 0 || binary.BigEndian.Uint16(b[4:]) != 0 {
			return Header{}, ErrField
		}
		h.Pause = binary.BigEndian.Uint32(b[6:])
		if err := h.validate(); err != nil {
			return Header{}, err
		}
		return h, nil
	}
	if flags&flagReserved != 0 {
		return h, ErrFlags
	}
	if h.Type != TypeData && flags&(FlagRetx|FlagUnseq) != 0 {
		return h, ErrFlags
	}
	if h.Type != TypeLoss && flags&FlagLatestEra != 0 {
		return h, ErrFlags
	}
	if flags&FlagHasAck == 0 && flags&FlagAckEra != 0 {
		return h, ErrFlags
	}
	seq := binary.BigEndian.Uint16(b[4:])
	aux := binary.BigEndian.Uint16(b[6:])
	ack := binary.BigEndian.Uint16(b[8:])
	if uint32(seq) >= SeqMod || uint32(ack) >= SeqMod {
		return h, ErrField
	}
	h.Retx = flags&FlagRetx != 0
	h.Unseq = flags&FlagUnseq != 0
	h.Seq = MakeSeq(seq, flags&FlagEra != 0)
	h.HasAck = flags&FlagHasAck != 0
	if h.HasAck {
		h.Ack = MakeSeq(ack, flags&FlagAckEra != 0)
	} else if ack != 0 {
		return h, ErrField
	}
	switch h.Type {
	case TypeData:
		h.EtherType = aux
	case TypeLoss:
		h.Count = aux
		latest := binary.BigEndian.Uint16(b[10:])
		if uint32(latest) >= SeqMod {
			return h, ErrField
		}
		h.Latest = MakeSeq(latest, flags&FlagLatestEra != 0)
	default:
		if aux != 0 {
			return h, ErrField
		}
	}
	if err := h.validate(); err != nil {
		return Header{}, err
	}
	return h, nil
}

// ParseFrame decodes the link header of a whole Ethernet frame.
func ParseFrame(frame []byte) (Header, error) {
	if len(frame) < MACLen+2 {
		return Header{}, ErrShort
	}
	return Parse(frame[MACLen:])
}

// IsLink reports whether frame carries the link EtherType.
func IsLink(frame []byte) bool {
	return len(frame) >= MACLen+2 && binary.BigEndian.Uint16(frame[MACLen:]) == EtherType
}

// Insert turns the frame buf[off:off+n] into a protected data frame in place:
// it moves the 12 MAC bytes MaxOverhead bytes towards the start of buf, writes
// the link EtherType and the data header h (h.EtherType is taken from the
// frame) and returns the new offset and length (off-MaxOverhead, n+MaxOverhead).
// off must be at least MaxOverhead. h.Type must be TypeData.
func Insert(buf []byte, off, n int, h *Header) (newOff, newLen int, err error) {
	if h.Type != TypeData {
		return 0, 0, ErrNotData
	}
	if off < MaxOverhead {
		return 0, 0, ErrHeadroom
	}
	if n < MACLen+2 || off+n > len(buf) {
		return 0, 0, ErrShort
	}
	et := binary.BigEndian.Uint16(buf[off+MACLen:])
	if et == EtherType {
		return 0, 0, ErrEtherType
	}
	h.EtherType = et
	if err := h.validate(); err != nil {
		return 0, 0, err
	}
	newOff = off - MaxOverhead
	copy(buf[newOff:newOff+MACLen], buf[off:off+MACLen])
	if _, err := h.Put(buf[newOff+MACLen : off+MACLen+2]); err != nil {
		return 0, 0, err
	}
	return newOff, n + MaxOverhead, nil
}

// Strip reverses Insert on the data frame buf[off:off+n]: it restores the
// original EtherType, moves the MAC bytes forward and returns the decoded
// header and the new offset and length (off+MaxOverhead, n-MaxOverhead). The
// bytes of the returned frame are exactly the frame given to Insert.
func Strip(buf []byte, off, n int) (h Header, newOff, newLen int, err error) {
	if off < 0 || n < DataOffset || off+n > len(buf) {
		return h, 0, 0, ErrShort
	}
	h, err = Parse(buf[off+MACLen : off+n])
	if err != nil {
		return h, 0, 0, err
	}
	if h.Type != TypeData {
		return h, 0, 0, ErrNotData
	}
	newOff = off + MaxOverhead
	binary.BigEndian.PutUint16(buf[newOff+MACLen:], h.EtherType)
	copy(buf[newOff:newOff+MACLen], buf[off:off+MACLen])
	return h, newOff, n - MaxOverhead, nil
}

// SetAck writes a piggybacked ACK into the data header of frame (a whole
// protected frame), in place. It does not check the rest of the header.
func SetAck(frame []byte, ack Seq) {
	f := frame[MACLen+3]
	f |= FlagHasAck
	if ack.Era() {
		f |= FlagAckEra
	} else {
		f &^= FlagAckEra
	}
	frame[MACLen+3] = f
	binary.BigEndian.PutUint16(frame[MACLen+8:], ack.Num())
}

// SetRetx sets or clears the retransmitted-copy flag of the data frame, in place.
func SetRetx(frame []byte, retx bool) {
	if retx {
		frame[MACLen+3] |= FlagRetx
	} else {
		frame[MACLen+3] &^= FlagRetx
	}
}

// PutControl writes a complete control frame (ACK, loss notification or dummy;
// or any header) into b: dst and src MACs, the link header and zero padding up
// to MinFrameLen. It returns the frame length.
func PutControl(b []byte, dst, src *[6]byte, h *Header) (int, error) {
	if len(b) < MinFrameLen {
		return 0, ErrShort
	}
	copy(b[0:6], dst[:])
	copy(b[6:12], src[:])
	n, err := h.Put(b[MACLen:])
	if err != nil {
		return 0, err
	}
	clear(b[MACLen+n : MinFrameLen])
	return MinFrameLen, nil
}
