package linkguardian

import "github.com/linkfabric/linkfabric/seqhdr"

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
// ACKed (or given back by TakeUnacked). A frame that is not of a carried
// type is dropped (Out.Free, Stats.TxBad). Without a Sender it goes
// unsequenced, as PassCarried sends it (and is dropped without a Receiver
// either).
func (p *Endpoint) SendCarried(now int64, f Frame) bool {
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
func (p *Endpoint) PassCarried(f Frame) bool {
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

// TakeUnacked removes every frame from the TX buffer, oldest first, and
// appends them to dst: the caller owns them again (a cell node sends them
// over other links when this one died). The sender's numbering goes on
// from where it was; nothing it held will be retransmitted. Use it before
// a Reset that would otherwise free them.
func (p *Endpoint) TakeUnacked(dst []Frame) []Frame {
	s := p.S
	if s == nil {
		return dst
	}
	for q := s.base; q != s.next; q = q.Next() {
		sl := s.slot(q)
		if sl.f.Len > 0 {
			dst = append(dst, sl.f)
		}
		*sl = txSlot{}
	}
	s.base, s.bytes = s.next, 0
	s.Stats.TxBufFrames, s.Stats.TxBufBytes = 0, 0
	return dst
}

// sendCarried stamps and buffers a carried frame in place.
func (s *Sender) sendCarried(now int64, f Frame) bool {
	if s.Paused(now) {
		s.Stats.PausedRefusals++
		return false
	}
	if s.Outstanding() >= s.credit {
		s.Stats.TxFull++
		return false
	}
	h := seqhdr.Header{Seq: s.next}
	if s.ackSrc != nil {
		h.HasAck, h.Ack = true, s.ackSrc.takeAck()
	}
	if seqhdr.Stamp(s.e.mem.Bytes(f.H, f.Len), &h) != nil {
		s.e.stats.TxBad++
		s.e.out.Free = append(s.e.out.Free, f)
		return true
	}
	s.buffer(now, f)
	return true
}

// receiveCarried handles a received carried frame: its ACK, then the
// receiver (sequenced) or straight delivery (unsequenced, or no receiver).
func (p *Endpoint) receiveCarried(now int64, f Frame, b []byte) {
	h, err := seqhdr.ParseCarried(b)
	if err != nil {
		p.Stats.RxBad++
		p.Out.Free = append(p.Out.Free, f)
		return
	}
	if h.HasAck && p.S != nil {
		p.S.onAck(h.Ack)
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
