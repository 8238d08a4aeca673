package dataplane

import (
	"sync/atomic"

	"github.com/linkfabric/linkfabric/linkcrc"
	"github.com/linkfabric/linkfabric/xdp"
)

// Integrity check of link frames (modes lg, lgnb, monitor; package linkcrc).
//
// With LGConfig.Integrity = linkcrc.CRC32C (the default) every frame the link
// port transmits gets a CRC32C trailer, computed when the frame is placed on
// the TX ring (sealTx, from flushTx): a retransmitted copy has its retx flag
// and ACK rewritten before each send, so each transmission is sealed anew.
// Every frame received on the link port is verified before anything reads it
// (checkRx, first thing in the receive loop); one that fails is counted in
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

// checkRx verifies the integrity trailer of the link frame d and removes it
// (d.Len shrinks). A frame that fails is counted, freed, and false returned:
// the caller drops it.
func (w *lgWorker) checkRx(d *xdp.Desc) bool {
	if w.d.cfg.LG.Integrity == linkcrc.Off {
		return true
	}
	n, ok := linkcrc.Check(w.umem.Bytes(d.Addr, d.Len))
	if !ok {
		w.lgs.Integrity.Corrupt.Add(1)
		w.release(d.Addr)
		return false
	}
	d.Len = uint32(n)
	return true
}

// sealTx appends the integrity trailer to every frame of the TX batch w.tx
// for socket s, unless s is the host port's (frames to the host carry none).
func (w *lgWorker) sealTx(s *xdp.Socket) {
	if s == w.hostSock || w.d.cfg.LG.Integrity == linkcrc.Off {
		return
	}
	for i := range w.tx {
		d := &w.tx[i]
		if n, ok := linkcrc.Seal(w.umem.Frame(d.Addr), int(d.Len)); ok {
			d.Len = uint32(n)
		} else {
			w.lgs.Integrity.NoRoom.Add(1)
		}
	}
}
