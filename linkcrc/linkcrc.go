// Package linkcrc is the integrity check of frames on a linkfabric link: a
// CRC32C (Castagnoli) trailer that the sending link port appends to every
// frame it transmits and the receiving link port verifies and removes before
// the frame reaches the LinkGuardian core.
//
// Why. On a real link a corrupted frame fails its Ethernet FCS and the
// receiving MAC drops it: corruption looks like loss, and LinkGuardian
// repairs loss. On veth (and under tc netem corrupt) there is no FCS and the
// frame arrives with a bit flipped. Without a check of its own, a flipped
// sequence number or loss notification misleads the core, and a flipped
// payload is delivered to the host. With the trailer, a corrupted frame is
// counted and dropped, and so treated as lost.
//
// # Wire format
//
// When the check is on, every frame a link port sends (sequenced data and
// retransmitted copies, unsequenced data carrying only an ACK, explicit
// ACKs, loss notifications, dummies, PFC frames, and frames that cross the
// link without a link header because this direction is not protected) ends
// with 4 bytes:
//
//	frame[0:n]     the frame as the link protocol built it
//	frame[n:n+4]   CRC32C of frame[0:n], little endian
//
// The trailer protects the whole frame, MAC addresses included, and is
// independent of the link header: a frame without a link header is checked
// the same way, so no frame crosses a checked link unchecked. Both ends of a
// link must agree that the check is on (run --integrity); a frame from an
// end without it fails the check and is dropped.
//
// CRC32C detects every error of up to 3 bits and every burst of up to 32 bits
// in frames of the sizes used here; other errors pass with probability 2^-32.
// hash/crc32 computes it with SSE4.2 (amd64) or the CRC32 instructions of
// arm64.
package linkcrc

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// TrailerLen is the number of bytes the check adds to a frame.
const TrailerLen = 4

// MinFrameLen is the shortest frame Check accepts: an Ethernet header (MACs
// and EtherType) plus the trailer.
const MinFrameLen = 14 + TrailerLen

var table = crc32.MakeTable(crc32.Castagnoli)

// Sum is the CRC32C of b.
func Sum(b []byte) uint32 { return crc32.Update(0, table, b) }

// Seal writes the trailer of the frame buf[:n] into buf[n:n+TrailerLen] and
// returns the sealed length n+TrailerLen. It returns false, writing nothing,
// when buf has no room for the trailer. It does not allocate.
func Seal(buf []byte, n int) (int, bool) {
	if n < 0 || n > len(buf)-TrailerLen {
		return 0, false
	}
	binary.LittleEndian.PutUint32(buf[n:], Sum(buf[:n]))
	return n + TrailerLen, true
}

// Check verifies the trailer of the sealed frame b and returns the length of
// the frame without it. It returns false for a frame whose trailer does not
// match its bytes, or that is too short to carry one (shorter than
// MinFrameLen). It does not allocate and never panics.
func Check(b []byte) (int, bool) {
	n := len(b) - TrailerLen
	if len(b) < MinFrameLen {
		return 0, false
	}
	if binary.LittleEndian.Uint32(b[n:]) != Sum(b[:n]) {
		return 0, false
	}
	return n, true
}

// Integrity says whether a link's frames carry the check.
type Integrity uint8

// Modes.
const (
	// CRC32C appends and verifies the CRC32C trailer (the default).
	CRC32C Integrity = iota
	// Off sends frames as they are: for a link whose NICs check the
	// Ethernet FCS and drop frames that fail it.
	Off
)

func (m Integrity) String() string {
	switch m {
	case CRC32C:
		return "crc32c"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Overhead is the number of bytes the mode adds to every frame on the link.
func (m Integrity) Overhead() int {
	if m == CRC32C {
		return TrailerLen
	}
	return 0
}

// ParseMode parses "crc32c" or "off" (the values of run --integrity).
func ParseMode(s string) (Integrity, error) {
	switch s {
	case "crc32c", "":
		return CRC32C, nil
	case "off", "none":
		return Off, nil
	}
	return 0, fmt.Errorf("--integrity %q: want crc32c (a CRC32C trailer on every link frame, for links without an FCS check such as veth) or off (the NICs' MACs check the Ethernet FCS)", s)
}
