package dataplane

import (
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/xdp"
)

// Integrity check of link frames (modes lg, lgnb, monitor; package linkcrc).
//
// With LinkConfig.Integrity = linkcrc.CRC32C (the default) or linkcrc.Csum
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
// check. So that a difference is named rather than looking like a dead
// link, a session frame (HELLO, HELLO-ACK) that fails this end's check
// still reaches the link session if it verifies under another check and
// says, as a HELLO (seqhdr.Hello.Caps), that its sender runs that check
// (IntegrityStats.OtherCheck; "off" verifies anything, hence the HELLO's
// word). The session then sees the peer's --integrity, stays in mismatch
// and says which; nothing else from that peer is delivered. A link port's
// MTU must have room for the trailer: link MTU ≥ host MTU +
// seqhdr.MaxOverhead + linkcrc.TrailerLen (the testbed gives 16).

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
	// OtherCheck counts session frames that failed the check but carry
	// another integrity check's trailer (or none) and say their sender
	// runs it: passed to the link session, which names the mismatch.
	OtherCheck atomic.Uint64
}

// checkRx verifies and removes the integrity trailer of every frame of
// descs, received on port, if the port's frames carry one. A frame that
// fails is counted and released, and left out: checkRx returns the frames
// that passed (descs compacted in place).
func (w *Worker) checkRx(port int, descs []xdp.Desc) []xdp.Desc {
	if !w.sealed[port] {
		return descs
	}
	ok := descs[:0]
	for _, d := range descs {
		b := w.umem.Bytes(d.Addr, d.Len)
		n, good := w.check.Check(b)
		if !good {
			if n, good = otherCheck(w.check, b); good {
				w.integrity.OtherCheck.Add(1)
			}
		}
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

// otherChecks are the integrity checks otherCheck tries, "off" last.
var otherChecks = [...]linkcrc.Integrity{linkcrc.CRC32C, linkcrc.Csum, linkcrc.Off}

// otherCheck reports whether b, a frame that failed the local check, is a
// session frame sealed with another integrity check (or, exactly
// seqhdr.MinFrameLen bytes long, none) whose HELLO says its sender runs
// that check, and returns its length without that check's trailer.
func otherCheck(local linkcrc.Integrity, b []byte) (int, bool) {
	if t, ok := seqhdr.FrameType(b); !ok || !t.IsSession() {
		return 0, false
	}
	for _, m := range otherChecks {
		if m == local {
			continue
		}
		n := len(b)
		if m == linkcrc.Off && n != seqhdr.MinFrameLen {
			// An end without a check sends its HELLOs as they are.
			// Nothing verifies them: a longer frame is a sealed one,
			// corrupted (a flip turning its word into "off").
			continue
		}
		if m != linkcrc.Off {
			var good bool
			if n, good = m.Check(b); !good {
				continue
			}
		}
		h, err := seqhdr.ParseHello(b[:n])
		if err == nil && h.Caps&seqhdr.CapsSet != 0 && linkcrc.Integrity(h.Caps&seqhdr.CapsIntegrityMask) == m {
			return n, true
		}
	}
	return 0, false
}

// sealTx appends the integrity trailer to every frame of list, to be sent on
// port, if the port's frames carry one.
func (w *Worker) sealTx(port int, list []xdp.Desc) {
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
