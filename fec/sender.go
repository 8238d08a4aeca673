package fec

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	// N is the number of data frames per parity frame (0: no parity).
	N int
	// Copies is how many times each data frame is transmitted (0 or 1:
	// once; k > 1: replication ×k).
	Copies int
	// Flush is the longest a group stays open (ns): its parity is sent this
	// long after its first frame even if it has fewer than N frames, so a
	// receiver waiting on a hole hears within about Flush plus the link's
	// delay. 0 means DefaultFlush.
	Flush int64
	// MaxFrame is the longest host frame protected (bytes, default 1514).
	// Longer frames are dropped and counted (TooLong).
	MaxFrame int
	// BufLen is how many bytes a buffer from Memory.Alloc holds from its
	// handle; a parity frame needs ParityOffset+MaxFrame (what the Sender
	// asks Alloc for).
	BufLen int
	// LocalMAC and PeerMAC are the source and destination of parity frames.
	LocalMAC, PeerMAC [6]byte
	// InitSeq is the sequence number of the first data frame.
	InitSeq seqhdr.Seq
}

// DefaultFlush is SenderConfig.Flush's default.
const DefaultFlush = 200_000 // 200 µs

// MaxCopies bounds SenderConfig.Copies.
const MaxCopies = 8

// ErrConfig is wrapped by configuration errors.
var ErrConfig = errors.New("fec: invalid configuration")

// orDefault sets *v to d where it is zero (unset in a configuration).
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (c *SenderConfig) check() error {
	orDefault(&c.MaxFrame, 1514)
	orDefault(&c.Flush, DefaultFlush)
	orDefault(&c.Copies, 1)
	switch {
	case c.N < 0 || c.N > MaxN:
		return fmt.Errorf("%w: N %d: want 0 (no parity) to %d", ErrConfig, c.N, MaxN)
	case c.Copies < 1 || c.Copies > MaxCopies:
		return fmt.Errorf("%w: Copies %d: want 1 to %d", ErrConfig, c.Copies, MaxCopies)
	case c.Flush < 0:
		return fmt.Errorf("%w: Flush %d ns: want > 0", ErrConfig, c.Flush)
	case c.MaxFrame < MinFrame || c.MaxFrame > math.MaxUint16:
		return fmt.Errorf("%w: MaxFrame %d: want %d to %d", ErrConfig, c.MaxFrame, MinFrame, math.MaxUint16)
	case c.N > 0 && c.BufLen < ParityOffset+c.MaxFrame:
		return fmt.Errorf("%w: BufLen %d cannot hold a parity frame of %d bytes (ParityOffset %d + MaxFrame %d)",
			ErrConfig, c.BufLen, ParityOffset+c.MaxFrame, ParityOffset, c.MaxFrame)
	case c.InitSeq >= seqhdr.Space:
		return fmt.Errorf("%w: InitSeq %d beyond the sequence space", ErrConfig, c.InitSeq)
	}
	return nil
}

// SenderStats counts what a Sender did.
type SenderStats struct {
	Data       uint64 `json:"data"`        // host frames sequenced
	DataBytes  uint64 `json:"data_bytes"`  // their bytes as the host sent them
	Copies     uint64 `json:"copies"`      // transmissions beyond the first (replication)
	Parity     uint64 `json:"parity"`      // parity frames sent
	Partial    uint64 `json:"partial"`     // of which closed by Flush or a change of N before N frames
	WireBytes  uint64 `json:"wire_bytes"`  // bytes put on the link (data copies and parity)
	TooLong    uint64 `json:"too_long"`    // host frames longer than MaxFrame, dropped
	Bad        uint64 `json:"bad"`         // host frames shorter than an Ethernet header or already link frames, dropped
	AllocFail  uint64 `json:"alloc_fail"`  // groups sent without parity: no buffer for it
	Unprotect  uint64 `json:"unprotected"` // data frames in such groups
	Resets     uint64 `json:"resets"`
	LastGroupN int    `json:"n"` // N in force
}

// SenderOut is what a Sender asks the caller to do after a call: transmit
// Send on the link, in order (the same frame several times under
// replication), then release Free. Lists keep their capacity across Reset.
type SenderOut struct {
	Send []link.Frame
	Free []link.Frame
}

// Reset empties the lists.
func (o *SenderOut) Reset() { o.Send, o.Free = o.Send[:0], o.Free[:0] }

// Sender sequences host frames, sends each Copies times and, after every N,
// a parity frame. It does no I/O and does not allocate per frame: the parity
// accumulates in a buffer from Memory, which is sent as the parity frame.
type Sender struct {
	cfg   SenderConfig
	mem   link.Memory
	Out   SenderOut
	Stats SenderStats

	next seqhdr.Seq
	// The open group: first sequence number, frames so far, when it
	// opened; the parity buffer (ok: one was allocated), its payload
	// length so far (longest frame) and the XOR of the lengths.
	first   seqhdr.Seq
	count   int
	openAt  int64
	par     link.Handle
	parOK   bool
	parLen  int
	lenXor  uint16
	pending int // N to apply at the next group
}

// NewSender returns a Sender over mem.
func NewSender(cfg SenderConfig, mem link.Memory) (*Sender, error) {
	if mem == nil {
		return nil, fmt.Errorf("%w: NewSender needs a Memory", ErrConfig)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := &Sender{cfg: cfg, mem: mem, next: cfg.InitSeq, pending: cfg.N}
	s.Out.Send = make([]link.Frame, 0, 256)
	s.Out.Free = make([]link.Frame, 0, 256)
	s.Stats.LastGroupN = cfg.N
	return s, nil
}

// N returns the group size in force for new groups.
func (s *Sender) N() int { return s.pending }

// Copies returns the transmissions per data frame.
func (s *Sender) Copies() int { return s.cfg.Copies }

// Held returns the buffers the Sender holds between calls: the open
// group's parity frame (0 or 1).
func (s *Sender) Held() int {
	if s.count > 0 && s.parOK {
		return 1
	}
	return 0
}

// Next returns the sequence number the next data frame gets.
func (s *Sender) Next() seqhdr.Seq { return s.next }

// SetN changes the group size (0: no parity). An open group is closed at
// once with a parity of what it has, so groups never mix sizes.
func (s *Sender) SetN(n int) error {
	if n < 0 || n > MaxN {
		return fmt.Errorf("%w: N %d: want 0 to %d", ErrConfig, n, MaxN)
	}
	if n > 0 && s.cfg.BufLen < ParityOffset+s.cfg.MaxFrame {
		return fmt.Errorf("%w: BufLen %d cannot hold a parity frame", ErrConfig, s.cfg.BufLen)
	}
	if n != s.pending && s.count > 0 {
		s.close(true)
	}
	s.pending = n
	s.Stats.LastGroupN = n
	return nil
}

// SetCopies changes the transmissions per data frame (1: no replication).
func (s *Sender) SetCopies(k int) error {
	if k < 1 || k > MaxCopies {
		return fmt.Errorf("%w: Copies %d: want 1 to %d", ErrConfig, k, MaxCopies)
	}
	s.cfg.Copies = k
	return nil
}

// Send sequences a host frame and queues it for the link. The Sender takes
// ownership: the frame is in Out.Send (Copies times) and Out.Free. It needs
// seqhdr.MaxOverhead bytes of headroom before f.H.
func (s *Sender) Send(now int64, f link.Frame) {
	if f.Len > s.cfg.MaxFrame {
		s.Stats.TooLong++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	if f.Len < MinFrame {
		s.Stats.Bad++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	b := s.mem.Bytes(f.H-seqhdr.MaxOverhead, f.Len+seqhdr.MaxOverhead)
	orig := b[seqhdr.MaxOverhead:]
	if binary.BigEndian.Uint16(orig[seqhdr.MACLen:]) == seqhdr.EtherType {
		s.Stats.Bad++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	s.join(now, orig)
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: s.next}
	off, n, err := seqhdr.Insert(b, seqhdr.MaxOverhead, f.Len, &h)
	if err != nil { // cannot happen: length, headroom and EtherType were checked
		s.Stats.Bad++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	s.emit(link.Frame{H: f.H - seqhdr.MaxOverhead + link.Handle(off), Len: n}, f.Len)
}

// SendCarried sequences a frame of a carried type (the cell family,
// seqhdr.Type.IsCarried) in place, as LinkGuardian does (seqhdr.Stamp: no
// header inserted, no headroom needed), and queues it for the link like
// Send. Its group's parity covers the whole stamped frame, so that the
// Receiver rebuilds it, link header and all, and checks the rebuilt frame
// by the sequence number in it. Frames of other types are dropped (Bad).
func (s *Sender) SendCarried(now int64, f link.Frame) {
	if f.Len > s.cfg.MaxFrame {
		s.Stats.TooLong++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	b := s.mem.Bytes(f.H, f.Len)
	h := seqhdr.Header{Seq: s.next}
	if t, ok := seqhdr.FrameType(b); !ok || !t.IsCarried() || f.Len < seqhdr.DataOffset || seqhdr.Stamp(b, &h) != nil {
		s.Stats.Bad++
		s.Out.Free = append(s.Out.Free, f)
		return
	}
	s.join(now, b)
	s.emit(f, f.Len)
}

// join adds a frame (its bytes as the Receiver will rebuild them) to the
// open group, opening one if needed.
func (s *Sender) join(now int64, orig []byte) {
	if s.pending == 0 {
		return
	}
	if s.count == 0 {
		s.open(now)
	}
	if s.parOK {
		s.accumulate(orig)
	} else {
		s.Stats.Unprotect++
	}
	s.lenXor ^= uint16(len(orig))
	s.count++
}

// emit queues the sequenced frame w (orig bytes before sequencing) Copies
// times and closes the group when it is full.
func (s *Sender) emit(w link.Frame, orig int) {
	n := w.Len
	s.next = s.next.Next()
	s.Stats.Data++
	s.Stats.DataBytes += uint64(orig)
	for range s.cfg.Copies {
		s.Out.Send = append(s.Out.Send, w)
	}
	s.Stats.Copies += uint64(s.cfg.Copies - 1)
	s.Stats.WireBytes += uint64(s.cfg.Copies * n)
	s.Out.Free = append(s.Out.Free, w)
	if s.count >= s.pending && s.count > 0 {
		s.close(false)
	}
}

// open starts a group at the next sequence number.
func (s *Sender) open(now int64) {
	s.first, s.count, s.openAt = s.next, 0, now
	s.parLen, s.lenXor = 0, 0
	s.par, s.parOK = s.mem.Alloc(ParityOffset + s.cfg.MaxFrame)
	if !s.parOK {
		s.Stats.AllocFail++
	}
}

// accumulate XORs a frame's original bytes into the parity payload, zeroing
// the payload first where the frame is longer than every earlier one.
func (s *Sender) accumulate(orig []byte) {
	pay := s.mem.Bytes(s.par+ParityOffset, max(len(orig), s.parLen))
	if len(orig) > s.parLen {
		clear(pay[s.parLen:len(orig)])
		s.parLen = len(orig)
	}
	subtle.XORBytes(pay, pay[:len(orig)], orig)
}

// close ends the open group and sends its parity (if it has a buffer).
func (s *Sender) close(partial bool) {
	if s.count == 0 {
		return
	}
	if s.parOK {
		p := Parity{First: s.first, Count: s.count, LenXor: s.lenXor}
		b := s.mem.Bytes(s.par, ParityOffset)
		if err := PutParityHeader(b, &s.cfg.PeerMAC, &s.cfg.LocalMAC, &p); err != nil {
			panic("fec: parity header: " + err.Error()) // count and first are the Sender's own
		}
		f := link.Frame{H: s.par, Len: ParityOffset + s.parLen}
		s.Out.Send = append(s.Out.Send, f)
		s.Out.Free = append(s.Out.Free, f)
		s.Stats.Parity++
		s.Stats.WireBytes += uint64(f.Len)
		if partial {
			s.Stats.Partial++
		}
	}
	s.count, s.parOK = 0, false
}

// Poll closes a group that has been open for Flush and returns when the
// open group's Flush ends (math.MaxInt64: no group open).
func (s *Sender) Poll(now int64) int64 {
	if s.count == 0 {
		return math.MaxInt64
	}
	if now-s.openAt >= s.cfg.Flush {
		s.close(true)
		return math.MaxInt64
	}
	return s.openAt + s.cfg.Flush
}

// Reset restarts numbering at seq (a new link session): an open group is
// dropped without parity and its buffer released.
func (s *Sender) Reset(seq seqhdr.Seq) {
	if s.count > 0 && s.parOK {
		s.Out.Free = append(s.Out.Free, link.Frame{H: s.par, Len: ParityOffset})
	}
	s.count, s.parOK = 0, false
	s.next = seq & (seqhdr.Space - 1)
	s.Stats.Resets++
}
