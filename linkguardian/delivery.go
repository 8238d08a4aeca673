package linkguardian

import (
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Delivery returns the receiver's delivery mode.
func (r *Receiver) Delivery() Delivery { return r.cfg.Delivery }

// SetDelivery switches the receiver's mode while frames flow: the automatic
// fallback of the paper's §5 (lg → lgnb when loss gets high), and switching
// protection on or off (monitor ⇄ lg/lgnb, Appendix C). It returns whether
// the mode is now m; when it is not, call again later (a switch waits for
// holes to close).
//
//   - to LGNB: frames waiting in the reorder buffer only for order are
//     delivered at once; holes stay open and are still recovered.
//   - to LG, or to monitor: takes effect only when nothing is missing (then
//     every frame up to latestRxSeqNo has been delivered and nothing is
//     held). From LG it first switches to LGNB, which releases the buffer.
func (r *Receiver) SetDelivery(now int64, m Delivery) bool {
	if m == r.cfg.Delivery {
		return true
	}
	r.claim(now)
	if m > Monitor {
		return false
	}
	if r.cfg.Delivery == Monitor {
		// Nothing is missing or held in monitor mode; forget the frames
		// counted lost, whose slots lg and lgnb take for empty.
		clear(r.slots)
	}
	if r.cfg.Delivery == InOrder {
		r.releaseBuffer(now)
		r.cfg.Delivery = NonBlocking
		r.Stats.ModeChanges++
		if m == NonBlocking {
			return true
		}
	}
	if m == NonBlocking {
		r.cfg.Delivery = NonBlocking
		r.Stats.ModeChanges++
		return true
	}
	if r.missing > 0 {
		return false
	}
	r.cfg.Delivery = m
	r.Stats.ModeChanges++
	return true
}

// releaseBuffer delivers every frame in the reorder buffer, leaving its slot
// marked present (the LGNB meaning: delivered, so a copy is a duplicate).
func (r *Receiver) releaseBuffer(now int64) {
	for q := r.ackNo; r.buffered > 0 && seqhdr.LessEq(q, r.latest); q = q.Next() {
		sl := r.slot(q)
		if sl.state == slotPresent && sl.f.Len > 0 {
			r.deliver(sl.f)
			sl.f = link.Frame{}
		}
	}
	r.buffered, r.bytes = 0, 0
	r.backpressure(now) // a pause in force is lifted
}
