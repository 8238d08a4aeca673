package linkguardian

import (
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Carried frames (the cell family, seqhdr types 9–12) have their own link
// header type and keep bytes 15..21 of it for the link layer. The core
// sequences them in place (seqhdr.Stamp): no header is inserted, the frame
// keeps its handle and length, and the receiver delivers it whole, type
// and all, so that the cell node above reads its own header. Everything
// else is as for a data frame: TX buffer, ACKs, loss notifications,
// retransmitted copies, reorder or de-duplication, credit.

// SendCarried offers a carried frame for the link, sequenced. Like Send it
// returns false (the caller keeps the frame) when paused or the credit
// window is full; on true the frame is in Out.Normal, and in Out.Free once
// ACKed. A frame that is not of a carried
// type is dropped (Out.Free, Stats.TxBad). Without a Sender it goes
// unsequenced, as PassCarried sends it (and is dropped without a Receiver
// either).
func (p *Endpoint) SendCarried(now int64, f link.Frame) bool {
	if p.S == nil {
		if p.PassCarried(f) {
			p.Out.Normal = append(p.Out.Normal, f)
		}
		p.Out.Free = append(p.Out.Free, f)
		return true
	}
	return p.S.sendCarried(now, f)
}

// PassCarried marks a carried frame unsequenced, with the receiver's ACK
// if one is pending, for the caller to transmit as it is (control frames
// that need no retransmission: they are refreshed on timers). The caller
// keeps the frame. It returns false, leaving the frame as it was, for a
// frame that is not of a carried type.
func (p *Endpoint) PassCarried(f link.Frame) bool {
	if p.R == nil {
		p.Stats.TxBad++ // an unsequenced frame carries an ACK: it needs a receiver
		return false
	}
	ack := p.R.ackNo.Add(-1)
	if p.R.pendingAck {
		ack = p.R.takeAck()
	}
	h := seqhdr.Header{Unseq: true, HasAck: true, Ack: ack}
	if seqhdr.Stamp(p.e.mem.Bytes(f.H, f.Len), &h) != nil {
		p.Stats.TxBad++
		return false
	}
	p.Stats.TxPassthrough++
	return true
}

// Unacked appends to dst the frames in the TX buffer from sequence number
// from on (from the oldest if from is before it), oldest first, and
// returns dst and the sequence number after the last one. The frames stay
// in the buffer: a cell node sends copies of them over other links when
// this one left its routes, and the link layer carries on with the
// originals if the link comes back.
func (p *Endpoint) Unacked(from seqhdr.Seq, dst []link.Frame) ([]link.Frame, seqhdr.Seq) {
	s := p.S
	if s == nil {
		return dst, from
	}
	q := s.base
	if d := seqhdr.Diff(from, s.base); d > 0 && d <= s.Outstanding() {
		q = from
	}
	for ; q != s.next; q = q.Next() {
		if sl := s.slot(q); sl.f.Len > 0 && !sl.kern {
			dst = append(dst, sl.f)
		}
	}
	return dst, s.next
}

// sendCarried stamps and buffers a carried frame in place.
func (s *Sender) sendCarried(now int64, f link.Frame) bool {
	h, ok := s.admit(now, 0)
	if !ok {
		return false
	}
	if seqhdr.Stamp(s.e.mem.Bytes(f.H, f.Len), &h) != nil {
		s.refuse(f)
		return true
	}
	s.buffer(now, f)
	return true
}

// receiveCarried handles a received carried frame: its ACK, then the
// receiver (sequenced) or straight delivery (unsequenced, or no receiver).
func (p *Endpoint) receiveCarried(now int64, f link.Frame, b []byte) {
	h, err := seqhdr.ParseCarried(b)
	if !p.parsed(now, f, &h, err) {
		return
	}
	if h.Unseq || p.R == nil {
		if h.Unseq {
			p.Stats.RxUnseq++
		} else {
			p.Stats.RxUnprotected++
		}
		p.Out.Deliver = append(p.Out.Deliver, f)
		return
	}
	p.R.onData(now, f, &h)
}
