// Package wire encodes and decodes the TDMA control and data formats: the
// grant (a standard 802.1Qbb PFC frame carrying a TDMA trailer in its
// padding), the round schedule, the demand report and the raw data header.
// Encoders and decoders do not allocate; decoders reject what they cannot
// parse with an error and never panic.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/linkfabric/linkfabric/pfc"
)

// Trailer layout, in the padding of a 60-byte PFC frame (offsets from the
// destination MAC).
const (
	TrailerOff = pfc.PFCLen // 34
	TrailerLen = pfc.FrameLen - pfc.PFCLen
	// TrailerMagic is "TD".
	TrailerMagic   = 0x5444
	TrailerVersion = 1
)

// Trailer flags (low 4 bits of byte 36).
const (
	// FlagClose: close every class now (explicit end of window).
	FlagClose = 1 << 0
	// FlagFreeRunOK: the host may open on its own timer from the round schedule.
	FlagFreeRunOK = 1 << 1
	// FlagSchedulePending: the next round's schedule is not published yet.
	FlagSchedulePending = 1 << 2
)

// Errors (wrapped with details). Test with errors.Is.
var (
	ErrShort   = errors.New("tdma wire: too short")
	ErrMagic   = errors.New("tdma wire: bad magic")
	ErrVersion = errors.New("tdma wire: unsupported version")
	ErrRange   = errors.New("tdma wire: field out of range")
)

// noVersion is checkHead's version of a message without one.
const noVersion = -1

// putHead starts the encoding of a message (what) of n bytes in b: it
// checks that b has room and writes the magic and, unless version is
// noVersion, the version.
func putHead(b []byte, what string, n int, magic uint16, version int) error {
	if len(b) < n {
		return fmt.Errorf("%w: %s needs %d bytes, have %d", ErrShort, what, n, len(b))
	}
	binary.BigEndian.PutUint16(b, magic)
	if version != noVersion {
		b[2] = byte(version)
	}
	return nil
}

// checkHead checks the head every message but the grant starts with: b
// holds at least need bytes, its first two are magic and, unless version
// is noVersion, its third is version. what names the message in the error.
func checkHead(b []byte, what string, need int, magic uint16, version int) error {
	if len(b) < need {
		return fmt.Errorf("%w: %s of %d bytes, need %d", ErrShort, what, len(b), need)
	}
	if m := binary.BigEndian.Uint16(b); m != magic {
		return fmt.Errorf("%w: %s magic %#04x", ErrMagic, what, m)
	}
	if version != noVersion && int(b[2]) != version {
		return fmt.Errorf("%w: %s version %d", ErrVersion, what, b[2])
	}
	return nil
}

// Trailer is the TDMA part of a grant.
type Trailer struct {
	Flags   uint8  // Flag* bits
	Slot    uint8  // slot index in the round
	Round   uint16 // round number mod 2^16
	Seq     uint32 // per-host sequence number of control frames
	OpenNs  uint32 // from this frame's send time to the close deadline
	GuardUs uint16 // guard time in µs
	FMTime  int64  // FM send time, CLOCK_MONOTONIC ns (diagnostics only)
}

// Grant is a control frame from the fabric manager: the PFC part any
// 802.1Qbb receiver understands, and the trailer when present.
type Grant struct {
	PFC        pfc.Frame
	HasTrailer bool
	Trailer
}

// Encode writes g into b[:pfc.FrameLen] and returns pfc.FrameLen. Without a
// trailer the padding stays zero (a plain PFC frame).
func (g *Grant) Encode(b []byte) (int, error) {
	n, err := g.PFC.Encode(b)
	if err != nil || !g.HasTrailer {
		return n, err
	}
	t := b[TrailerOff:pfc.FrameLen]
	binary.BigEndian.PutUint16(t[0:], TrailerMagic)
	t[2] = TrailerVersion<<4 | g.Flags&0x0f
	t[3] = g.Slot
	binary.BigEndian.PutUint16(t[4:], g.Round)
	binary.BigEndian.PutUint32(t[6:], g.Seq)
	binary.BigEndian.PutUint32(t[10:], g.OpenNs)
	binary.BigEndian.PutUint16(t[14:], g.GuardUs)
	binary.BigEndian.PutUint64(t[16:], uint64(g.FMTime))
	t[24], t[25] = 0, 0
	return n, nil
}

// DecodeGrant parses a MAC Control frame into g. A PFC frame whose padding
// lacks the magic, or a PAUSE frame, decodes as plain (HasTrailer false). A
// trailer with the magic but another version is an error (ErrVersion), so
// a future format is never misread.
func DecodeGrant(b []byte, g *Grant) error {
	if err := pfc.Decode(b, &g.PFC); err != nil {
		return err
	}
	g.HasTrailer = false
	g.Trailer = Trailer{}
	if g.PFC.Opcode != pfc.OpPFC || len(b) < pfc.FrameLen || binary.BigEndian.Uint16(b[TrailerOff:]) != TrailerMagic {
		return nil
	}
	t := b[TrailerOff:pfc.FrameLen]
	if v := t[2] >> 4; v != TrailerVersion {
		return fmt.Errorf("%w: trailer version %d, want %d", ErrVersion, v, TrailerVersion)
	}
	g.HasTrailer = true
	g.Flags = t[2] & 0x0f
	g.Slot = t[3]
	g.Round = binary.BigEndian.Uint16(t[4:])
	g.Seq = binary.BigEndian.Uint32(t[6:])
	g.OpenNs = binary.BigEndian.Uint32(t[10:])
	g.GuardUs = binary.BigEndian.Uint16(t[14:])
	g.FMTime = int64(binary.BigEndian.Uint64(t[16:]))
	return nil
}

// GrantClass returns the class a lease grant opens: the one enabled class
// with quanta 0 while every other class is enabled and paused. It returns
// -1 for any other PFC pattern (pause-all, several open classes, PAUSE).
func (g *Grant) GrantClass() int {
	f := &g.PFC
	if f.Opcode != pfc.OpPFC || f.ClassEnable != 0xFF {
		return -1
	}
	c := -1
	for i, q := range f.Quanta {
		if q == 0 {
			if c >= 0 {
				return -1
			}
			c = i
		}
	}
	return c
}

// LeaseGrant sets g to a lease grant for class c from src to the host's
// unicast MAC dst: class c resumes, every other class is paused for pauseNs
// at linkSpeed (so a NIC that honours only the standard part behaves).
func LeaseGrant(g *Grant, dst, src [6]byte, c int, pauseNs int64, linkSpeed uint64, t Trailer) {
	q := pfc.NanosToQuanta(pauseNs, linkSpeed)
	var quanta [pfc.NumClasses]uint16
	for i := range quanta {
		if i != c {
			quanta[i] = q
		}
	}
	*g = Grant{PFC: pfc.NewPFC(src, 0xFF, quanta), HasTrailer: true, Trailer: t}
	g.PFC.Dst = dst
}

// PauseAll sets g to the paper mode's pause of every class (quanta 0xFFFF).
func PauseAll(g *Grant, dst, src [6]byte, t Trailer) {
	var quanta [pfc.NumClasses]uint16
	for i := range quanta {
		quanta[i] = pfc.MaxQuanta
	}
	*g = Grant{PFC: pfc.NewPFC(src, 0xFF, quanta), HasTrailer: true, Trailer: t}
	g.PFC.Dst = dst
}

// Unpause sets g to the paper mode's resume of class c alone.
func Unpause(g *Grant, dst, src [6]byte, c int, t Trailer) {
	*g = Grant{PFC: pfc.NewPFC(src, 1<<c, [pfc.NumClasses]uint16{}), HasTrailer: true, Trailer: t}
	g.PFC.Dst = dst
}
