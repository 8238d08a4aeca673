package cellify

import (
	"encoding/binary"

	"github.com/linkfabric/linkfabric/seqhdr"
)

// REACH (type 12, every link, every interval) after the link header:
//
//	22  2  sender node id (nonzero)
//	24  1  role: the sender's tier + 1 (1 edge, 2 fabric tier 1, 3 fabric
//	       tier 2, ... up to MaxRole)
//	25  1  flags: 0x01 FAULTY; other bits zero
//	26  4  interval counter
//	30  2  edges covered by the bitmap, 0..MaxReachEdges
//	32  4  CRC-32C over bytes 22..31 and the bitmap
//	36  -  bitmap, ceil(edges/8) bytes: edge e is reachable through the sender
//	       if byte e/8 has bit 1<<(e%8); edge 0 and bits ≥ edges are zero
//
// Frames shorter than seqhdr.MinFrameLen are zero-padded.

// Reach frame sizes.
const (
	reachHeadLen  = 14
	MaxReachEdges = 1024
)

// Role of a node on the wire: its tier + 1.
type Role uint8

// Roles.
const (
	RoleEdge   Role = 1 // tier 0
	RoleFabric Role = 2 // a fabric node of tier 1; tier k is Role(k+1)
	MaxRole    Role = MaxHops + 1
)

// RoleOf returns the role of a node of tier t.
func RoleOf(t Tier) Role { return Role(t) + 1 }

// Tier returns the tier of a node of role r (r ≥ 1).
func (r Role) Tier() Tier { return Tier(r - 1) }

// ReachFaulty is the FAULTY flag: the sender excludes this link itself.
const ReachFaulty = 0x01

// Reach is a REACH message. Bitmap holds ceil(Edges/8) bytes; a parsed
// Reach's Bitmap stays in the frame it was parsed from.
type Reach struct {
	Node   EdgeID
	Role   Role
	Faulty bool
	Seq    uint32
	Edges  int // edge ids 0..Edges-1 are covered
	Bitmap []byte
}

// Reachable reports whether edge e is in the bitmap.
func (r *Reach) Reachable(e EdgeID) bool {
	return int(e) < r.Edges && int(e/8) < len(r.Bitmap) && r.Bitmap[e/8]&(1<<(e%8)) != 0
}

// ReachFrameLen is the length of a REACH frame covering edges edge ids.
func ReachFrameLen(edges int) int {
	return max(Off+reachHeadLen+(edges+7)/8, seqhdr.MinFrameLen)
}

func (r *Reach) check() error {
	if r.Node == 0 {
		return ErrEdge
	}
	if r.Role < RoleEdge || r.Role > MaxRole || r.Edges < 0 || r.Edges > MaxReachEdges {
		return ErrField
	}
	nb := (r.Edges + 7) / 8
	if len(r.Bitmap) < nb {
		return ErrShort
	}
	// Edge 0 does not exist; bits beyond Edges are zero.
	if nb > 0 && r.Bitmap[0]&1 != 0 || r.Edges%8 != 0 && r.Bitmap[nb-1]>>(r.Edges%8) != 0 {
		return ErrField
	}
	return nil
}

// PutReach writes a whole REACH frame but its MACs and returns its length.
func PutReach(frame []byte, r *Reach) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	if len(frame) < ReachFrameLen(r.Edges) {
		return 0, ErrShort
	}
	putLink(frame, seqhdr.TypeReach)
	b := frame[Off:]
	binary.BigEndian.PutUint16(b[0:], uint16(r.Node))
	b[2] = byte(r.Role)
	b[3] = 0
	if r.Faulty {
		b[3] = ReachFaulty
	}
	binary.BigEndian.PutUint32(b[4:], r.Seq)
	binary.BigEndian.PutUint16(b[8:], uint16(r.Edges))
	end := reachHeadLen + copy(b[reachHeadLen:], r.Bitmap[:(r.Edges+7)/8])
	binary.BigEndian.PutUint32(b[10:], sum2(b[:10], b[reachHeadLen:end]))
	return pad(frame, Off+end), nil
}

// ParseReach decodes a REACH frame.
func ParseReach(frame []byte) (Reach, error) {
	var r Reach
	if t, ok := seqhdr.FrameType(frame); !ok || t != seqhdr.TypeReach {
		return r, ErrType
	}
	if len(frame) < Off+reachHeadLen {
		return r, ErrShort
	}
	b := frame[Off:]
	r.Edges = int(binary.BigEndian.Uint16(b[8:]))
	if r.Edges > MaxReachEdges {
		return Reach{}, ErrField
	}
	end := reachHeadLen + (r.Edges+7)/8
	if len(b) < end {
		return Reach{}, ErrShort
	}
	if sum2(b[:10], b[reachHeadLen:end]) != binary.BigEndian.Uint32(b[10:]) {
		return Reach{}, ErrChecksum
	}
	if b[3]&^ReachFaulty != 0 {
		return Reach{}, ErrField
	}
	r.Node = EdgeID(binary.BigEndian.Uint16(b[0:]))
	r.Role = Role(b[2])
	r.Faulty = b[3]&ReachFaulty != 0
	r.Seq = binary.BigEndian.Uint32(b[4:])
	r.Bitmap = b[reachHeadLen:end]
	if err := r.check(); err != nil {
		return Reach{}, err
	}
	return r, nil
}
