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
//
// # The cheaper check: csum
//
// CRC32C is cheap in Go but not in XDP, which has no CRC instruction: the
// fast path's table-driven CRC costs about 0.75 µs per 1514-byte frame at
// each end, in the softirq that carries the frame (docs/results.md). Mode
// Csum trades strength for speed:
//
//	frame[n:n+2]   the Internet checksum (RFC 1071) of frame[0:n], network byte order
//	frame[n+2:n+4] n mod 2^16, little endian
//
// The kernel computes the sum with the bpf_csum_diff helper (the kernel's
// csum_partial). It detects every single-bit error and every burst of up
// to 15 bits, and the length catches zero bytes added or removed at the
// end, which leave the sum as it is. It misses errors that cancel in the
// sum: two flips of the same bit of two 16-bit words in opposite
// directions, words swapped, and about 2^-16 of random corruption. It is
// as strong as the TCP and UDP checksums that the hosts check anyway.
package linkcrc

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"

	"github.com/linkfabric/linkfabric/internal/enum"
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

// InternetChecksum is the Internet checksum (RFC 1071) of b: the ones' complement of
// the ones'-complement sum of b's big-endian 16-bit words (an odd last byte
// padded with a zero byte).
func InternetChecksum(b []byte) uint16 {
	var sum, carry uint64
	for len(b) >= 32 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[8:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[16:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[24:]), carry)
		b = b[32:]
	}
	for len(b) >= 8 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), carry)
		b = b[8:]
	}
	var tail [8]byte
	copy(tail[:], b)
	sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(tail[:]), carry)
	sum, carry = bits.Add64(sum, 0, carry)
	sum += carry
	// Fold 64 bits to 16 (the end-around carry at each step).
	s := (sum >> 32) + (sum & 0xFFFFFFFF)
	s = (s >> 32) + (s & 0xFFFFFFFF)
	s = (s >> 16) + (s & 0xFFFF)
	s = (s >> 16) + (s & 0xFFFF)
	return ^uint16(s)
}

// Seal writes the trailer of mode m (CRC32C or Csum) of the frame buf[:n]
// into buf[n:n+TrailerLen] and returns the sealed length n+TrailerLen. It
// returns false, writing nothing, when buf has no room for the trailer, or
// m is Off. It does not allocate.
func (m Integrity) Seal(buf []byte, n int) (int, bool) {
	switch m {
	case CRC32C:
		return Seal(buf, n)
	case Csum:
		if n < 0 || n > len(buf)-TrailerLen {
			return 0, false
		}
		binary.BigEndian.PutUint16(buf[n:], InternetChecksum(buf[:n]))
		binary.LittleEndian.PutUint16(buf[n+2:], uint16(n))
		return n + TrailerLen, true
	}
	return 0, false
}

// Check verifies the trailer of mode m (CRC32C or Csum) of the sealed frame
// b and returns the length of the frame without it, like the package's
// Check. It returns false when m is Off. It does not allocate and never
// panics.
func (m Integrity) Check(b []byte) (int, bool) {
	switch m {
	case CRC32C:
		return Check(b)
	case Csum:
		n := len(b) - TrailerLen
		if len(b) < MinFrameLen || binary.BigEndian.Uint16(b[n:]) != InternetChecksum(b[:n]) ||
			binary.LittleEndian.Uint16(b[n+2:]) != uint16(n) {
			return 0, false
		}
		return n, true
	}
	return 0, false
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
	// Csum appends and verifies the Internet checksum and the length
	// (see "The cheaper check"): about a fifth of CRC32C's cost in XDP,
	// and weaker.
	Csum
	// Auto is what the port needs, decided where the ports are known
	// (the dataplane): Off on a port whose MAC checks the Ethernet FCS,
	// Csum on a virtual link that has none (veth). Seal and Check treat it
	// as Off (they refuse it): resolve it first.
	Auto
)

var integrityNames = [...]string{Auto: "auto", CRC32C: "crc32c", Off: "off", Csum: "csum"}

func (m Integrity) String() string { return enum.Name(m, "Mode", integrityNames[:]) }

// Overhead is the number of bytes the mode adds to every frame on the link
// (Auto: the most it may resolve to).
func (m Integrity) Overhead() int {
	if m == Off {
		return 0
	}
	return TrailerLen
}

// ParseMode parses "auto", "crc32c", "csum" or "off" (the values of run
// --integrity; "" is CRC32C, the zero value).
func ParseMode(s string) (Integrity, error) {
	switch s {
	case "auto":
		return Auto, nil
	case "crc32c", "":
		return CRC32C, nil
	case "csum":
		return Csum, nil
	case "off", "none":
		return Off, nil
	}
	return 0, fmt.Errorf("--integrity %q: want auto (off where the port's MAC checks the Ethernet FCS, csum on virtual links such as veth), crc32c (a CRC32C trailer on every link frame, for links without an FCS check such as veth), csum (the Internet checksum and the length: cheaper in the kernel's fast path, weaker) or off (the NICs' MACs check the Ethernet FCS)", s)
}
