package dataplane

import (
	"sync/atomic"

	"github.com/linkfabric/linkfabric/xdp"
)

// Integrity check of link frames (modes lg, lgnb, monitor; package linkcrc).
//
// With LGConfig.Integrity = linkcrc.CRC32C (the default) or linkcrc.Csum
// every frame the link port transmits gets that trailer, computed when the
// worker places the frame on the TX ring (sealTx): a retransmitted copy has
// its retx flag and ACK rewritten before each send, so each transmission is
// sealed anew.
// Every frame received on the link port is verified before the pipeline
// sees it (checkRx, in the worker's receive loop); one that fails is counted in
// IntegrityStats.Corrupt and freed, so to the LinkGuardian core it is a lost
// frame, which it repairs. That is what a real link does with a frame that
// fails its FCS.
//
// The trailer covers every frame on the link, whether it carries a link
// header or not (a direction this end does not protect sends host frames as
// they are, "passthrough"; PFC frames have no link header either): the
// receiver checks whatever arrives, so nothing crosses a checked link
// unchecked, and no frame needs to be encapsulated for the check.
//
// Both ends must agree (run --integrity): a frame without a trailer fails the
// check. A link port's MTU must have room for the trailer: link MTU ≥ host
// MTU + seqhdr.MaxOverhead + linkcrc.TrailerLen (the testbed gives 16).

// IntegrityStats count the integrity check on the link port.
type IntegrityStats struct {
	// Corrupt counts frames received on the link port that failed the check
	// (dropped; the core sees them as lost).
	Corrupt atomic.Uint64
	// NoRoom counts frames sent without a trailer because their UMEM frame
	// had no 4 bytes left after them (a host frame of the UMEM frame's
	// maximum length); the peer drops them as corrupt. Give the UMEM larger
	// frames (--frame-size) or the hosts a smaller MTU.
	NoRoom atomic.Uint64
}

// checkRx verifies and removes the integrity trailer of every frame of
// descs, received on port, if the port's frames carry one. A frame that
// fails is counted and released, and left out: checkRx returns the frames
// that passed (descs compacted in place).
func (w *worker) checkRx(port int, descs []xdp.Desc) []xdp.Desc {
	if !w.sealed[port] {
		return descs
	}
	ok := descs[:0]
	for _, d := range descs {
		n, good := w.check.Check(w.umem.Bytes(d.Addr, d.Len))
		if !good {
			w.integrity.Corrupt.Add(1)
			w.refs.release(d.Addr)
			continue
		}
		d.Len = uint32(n)
		ok = append(ok, d)
	}
	return ok
}

// sealTx appends the integrity trailer to every frame of list, to be sent on
// port, if the port's frames carry one.
func (w *worker) sealTx(port int, list []xdp.Desc) {
	if !w.sealed[port] {
		return
	}
	for i := range list {
		d := &list[i]
		if n, ok := w.check.Seal(w.umem.Frame(d.Addr), int(d.Len)); ok {
			d.Len = uint32(n)
		} else {
			w.integrity.NoRoom.Add(1)
		}
	}
}
