package cellify

import (
	"math/bits"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// withRoom returns the links of mask whose transmit queue takes another
// cell now (NodeConfig.LinkRoom, less the cells listed for it in Out): all
// of mask without LinkRoom.
//
// A VOQ's cells are cut only for a link that takes them. A link layer
// under the cells holds what it sent until its peer acknowledges it and
// queues the rest, a bounded number; a grant's burst cut at once beyond
// that was dropped at the queue. A traffic class bound to a strict loss
// class may have one link to spread over: after a stall of either end
// (the peer's acknowledgements held up, or the credit granted meanwhile
// arriving at once) its queue overflowed on a busy machine while the
// looser classes spread over every link. Held in the VOQ, the bytes wait
// for room, and the VOQ's own bound (counted at the ingress) is the only
// place they can be dropped.
func (n *Node) withRoom(mask uint64) uint64 {
	if n.cfg.LinkRoom == nil {
		return mask
	}
	for m := mask; m != 0; m &= m - 1 {
		l := bits.TrailingZeros64(m)
		if n.cfg.LinkRoom(l) <= len(n.Out.Link[l].Data) {
			mask &^= 1 << l
		}
	}
	return mask
}

// ClassRoute reports whether a frame link port l holds would find, handed
// back (Respray), another usable link of its own loss class toward its
// edge: always for a frame that is not a cell (Respray decides), never for
// a cell it cannot parse.
//
// A link layer keeps the cells that would not (sent on their own link
// when it carries cells again) rather than handing them to Respray,
// whose only choice for them is a looser class: a stall of the peer
// takes the one link of a strict class out of the usable set while the
// looser ones come back first, and its cells would cross a gray link.
func (n *Node) ClassRoute(l int, f link.Frame) bool {
	b := n.mem.Bytes(f.H, f.Len)
	if t, ok := seqhdr.FrameType(b); !ok || t != seqhdr.TypeCell {
		return true
	}
	h, err := ParseCell(b)
	if err != nil {
		return false
	}
	mask := n.reach.RoutesIn(n.cfg.Reach.Classes.For(h.Class), h.Dst)
	if l >= 0 && l < 64 {
		mask &^= 1 << l
	}
	return mask != 0
}
