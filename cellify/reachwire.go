package cellify

import (
	"encoding/binary"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// REACH (type 12, every link, every interval) after the link header:
//
//	22  2  sender node id (nonzero)
//	24  1  role: the sender's tier + 1 (1 edge, 2 fabric tier 1, 3 fabric
//	       tier 2, ... up to MaxRole)
//	25  1  flags: 0x01 FAULTY; 0x06 the link's loss class as the sender
//	       measures it (bits 1-2: 0 not measured, 1..MaxLossClasses);
//	       0x08 CLASSES; other bits zero
//	26  4  counter: REACHes the sender sent on this link (a gap is a
//	       REACH lost: the receiver measures an idle link's loss by it)
//	30  2  edges covered by the bitmap, 0..MaxReachEdges
//	32  4  CRC-32C over bytes 22..31 and the bitmaps
//	36  -  bitmap, ceil(edges/8) bytes: edge e is reachable through the sender
//	       if byte e/8 has bit 1<<(e%8); edge 0 and bits ≥ edges are zero.
//	       With CLASSES, MaxLossClasses bitmaps follow one another, one per
//	       loss class k = 1, 2, ...: the edges the sender reaches over links
//	       of class k or better only (RAIL's virtual topologies, per link);
//	       without, the one bitmap stands for every class.
//
// Frames shorter than seqhdr.MinFrameLen are zero-padded.

// Reach frame sizes.
const (
	reachHeadLen  = 14
	reachSumAt    = reachHeadLen - 4 // the CRC-32C, over the header before it and the bitmaps
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

// REACH flags.
const (
	ReachFaulty     = 0x01 // the sender excludes this link itself
	reachClassShift = 1    // the sender's measured loss class of the link
	reachClassMask  = 0x06
	ReachClasses    = 0x08 // MaxLossClasses bitmaps, one per loss class
)

// Reach is a REACH message. Bitmap holds ceil(Edges/8) bytes, or
// MaxLossClasses times that with Classes; a parsed Reach's Bitmap stays
// in the frame it was parsed from.
type Reach struct {
	Node   EdgeID
	Role   Role
	Faulty bool
	// Class is the loss class of the link as the sender measures its
	// receiving direction (0: not measured).
	Class   LossClass
	Classes bool
	Seq     uint32
	Edges   int // edge ids 0..Edges-1 are covered
	Bitmap  []byte
}

// Reachable reports whether edge e is in the bitmap (of the loosest class
// with Classes).
func (r *Reach) Reachable(e EdgeID) bool {
	return r.ReachableIn(MaxLossClasses, e)
}

// ReachableIn reports whether edge e is reachable in loss class k
// (1..MaxLossClasses): in bitmap k with Classes, in the one bitmap without.
func (r *Reach) ReachableIn(k LossClass, e EdgeID) bool {
	b := r.ClassBitmap(k)
	return int(e) < r.Edges && int(e/8) < len(b) && b[e/8]&(1<<(e%8)) != 0
}

// ClassBitmap returns the bitmap of loss class k (1..MaxLossClasses) with
// Classes, else the one bitmap.
func (r *Reach) ClassBitmap(k LossClass) []byte {
	return classBitmap(r.Bitmap, r.Classes, (r.Edges+7)/8, k)
}

func classBitmap(b []byte, classes bool, nb int, k LossClass) []byte {
	if !classes || k < 1 || k > MaxLossClasses {
		return b
	}
	lo, hi := min(int(k-1)*nb, len(b)), min(int(k)*nb, len(b))
	return b[lo:hi]
}

// ReachFrameLen is the length of a REACH frame covering edges edge ids
// with one bitmap, or one per loss class if classes.
func ReachFrameLen(edges int, classes bool) int {
	return max(Off+reachHeadLen+reachBitmaps(classes)*((edges+7)/8), seqhdr.MinFrameLen)
}

// reachBitmaps is the bitmaps a REACH carries.
func reachBitmaps(classes bool) int {
	if classes {
		return MaxLossClasses
	}
	return 1
}

func (r *Reach) check() error {
	if r.Node == 0 {
		return ErrEdge
	}
	if r.Role < RoleEdge || r.Role > MaxRole || r.Edges < 0 || r.Edges > MaxReachEdges || r.Class > MaxLossClasses {
		return ErrField
	}
	nb := (r.Edges + 7) / 8
	if len(r.Bitmap) < nb*reachBitmaps(r.Classes) {
		return ErrShort
	}
	// Edge 0 does not exist; bits beyond Edges are zero.
	for k := range reachBitmaps(r.Classes) {
		b := r.Bitmap[k*nb : (k+1)*nb]
		if nb > 0 && b[0]&1 != 0 || r.Edges%8 != 0 && b[nb-1]>>(r.Edges%8) != 0 {
			return ErrField
		}
	}
	return nil
}

// PutReach writes a whole REACH frame but its MACs and returns its length.
func PutReach(frame []byte, r *Reach) (int, error) {
	if err := r.check(); err != nil {
		return 0, err
	}
	if len(frame) < ReachFrameLen(r.Edges, r.Classes) {
		return 0, ErrShort
	}
	putLink(frame, seqhdr.TypeReach)
	b := frame[Off:]
	binary.BigEndian.PutUint16(b[0:], uint16(r.Node))
	b[2] = byte(r.Role)
	b[3] = byte(r.Class) << reachClassShift
	if r.Faulty {
		b[3] |= ReachFaulty
	}
	if r.Classes {
		b[3] |= ReachClasses
	}
	binary.BigEndian.PutUint32(b[4:], r.Seq)
	binary.BigEndian.PutUint16(b[8:], uint16(r.Edges))
	end := reachHeadLen + copy(b[reachHeadLen:], r.Bitmap[:reachBitmaps(r.Classes)*((r.Edges+7)/8)])
	binary.BigEndian.PutUint32(b[reachSumAt:], sum2(b[:reachSumAt], b[reachHeadLen:end]))
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
	r.Classes = b[3]&ReachClasses != 0
	end := reachHeadLen + reachBitmaps(r.Classes)*((r.Edges+7)/8)
	if len(b) < end {
		return Reach{}, ErrShort
	}
	if sum2(b[:reachSumAt], b[reachHeadLen:end]) != binary.BigEndian.Uint32(b[reachSumAt:]) {
		return Reach{}, ErrChecksum
	}
	if b[3]&^(ReachFaulty|reachClassMask|ReachClasses) != 0 {
		return Reach{}, ErrField
	}
	r.Node = EdgeID(binary.BigEndian.Uint16(b[0:]))
	r.Role = Role(b[2])
	r.Faulty = b[3]&ReachFaulty != 0
	r.Class = LossClass(b[3] & reachClassMask >> reachClassShift)
	r.Seq = binary.BigEndian.Uint32(b[4:])
	r.Bitmap = b[reachHeadLen:end]
	if err := r.check(); err != nil {
		return Reach{}, err
	}
	return r, nil
}
