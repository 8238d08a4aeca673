package linkguardian

import (
	"errors"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Config configures one end of a link.
type Config struct {
	// LocalMAC and PeerMAC are the source and destination MACs of the control
	// frames (ACK, loss notification, dummy) this end generates.
	LocalMAC, PeerMAC [6]byte
	// Sender protects the frames this end sends; nil sends them unprotected.
	Sender *SenderConfig
	// Receiver protects the frames this end receives; nil delivers them as they come.
	Receiver *ReceiverConfig
	// Batch is the initial capacity of the Output lists (default 256). Lists
	// grow if an iteration needs more, and keep the capacity afterwards.
	Batch int
}

// Endpoint is one end of a link: an optional Sender for the outgoing direction
// and an optional Receiver for the incoming direction. See the package
// documentation for the worker loop and ownership rules.
type Endpoint struct {
	S     *Sender   // nil if the outgoing direction is not protected
	R     *Receiver // nil if the incoming direction is not protected
	Out   Output
	Stats PortStats
	e     env
	// The kernel fast path (fastrx.go) and the last PeerAck applied.
	fast    *FastPoint
	peerAck uint64
	// The last PiggyAck of the send fast path applied (fasttx.go).
	piggyAck uint64
}

// NewEndpoint returns an Endpoint using mem for frame bytes and control frame buffers.
func NewEndpoint(cfg Config, mem link.Memory) (*Endpoint, error) {
	if mem == nil {
		return nil, errors.New("linkguardian: NewPort needs a Memory")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	p := &Endpoint{Out: newOutput(cfg.Batch)}
	p.e = env{mem: mem, out: &p.Out, local: cfg.LocalMAC, peer: cfg.PeerMAC, stats: &p.Stats}
	if cfg.Receiver != nil {
		if err := cfg.Receiver.check(); err != nil {
			return nil, err
		}
		p.R = newReceiver(*cfg.Receiver, &p.e)
	}
	if cfg.Sender != nil {
		if err := cfg.Sender.check(); err != nil {
			return nil, err
		}
		p.S = newSender(*cfg.Sender, &p.e)
		p.S.ackSrc = p.R
	}
	return p, nil
}

// Receive processes a frame received from the link. The core takes ownership.
func (p *Endpoint) Receive(now int64, f link.Frame) {
	b := p.e.mem.Bytes(f.H, f.Len)
	if !seqhdr.IsLink(b) {
		p.Stats.RxPassthrough++
		p.Out.Deliver = append(p.Out.Deliver, f)
		return
	}
	if t, ok := seqhdr.FrameType(b); ok && t.IsCarried() {
		p.receiveCarried(now, f, b)
		return
	}
	h, err := seqhdr.ParseFrame(b)
	if !p.parsed(now, f, &h, err) {
		return
	}
	switch h.Type {
	case seqhdr.TypeData:
		if p.R == nil || h.Unseq {
			if h.Unseq {
				p.Stats.RxUnseq++
			} else {
				p.Stats.RxUnprotected++
			}
			_, off, n, err := seqhdr.Strip(b, 0, f.Len)
			if err != nil {
				p.Stats.RxBad++
				p.Out.Free = append(p.Out.Free, f)
				return
			}
			p.Out.Deliver = append(p.Out.Deliver, link.Frame{H: f.H + link.Handle(off), Len: n})
			return
		}
		p.R.onData(now, f, &h)
		return
	case seqhdr.TypeAck:
		if p.S != nil {
			p.S.Stats.AcksRx++
		}
	case seqhdr.TypeLoss:
		if p.S != nil {
			p.S.onLoss(now, h.Seq, int(h.Count))
		}
	case seqhdr.TypeDummy:
		if p.R != nil {
			p.R.onDummy(now, h.Seq)
		}
	case seqhdr.TypePause:
		p.Pause(now, int64(h.Pause))
	case seqhdr.TypeResume:
		p.Resume(now)
	}
	p.Out.Free = append(p.Out.Free, f)
}

// CanSend reports whether Send would accept a frame at now.
func (p *Endpoint) CanSend(now int64) bool { return p.S == nil || p.S.CanSend(now) }

// Send offers a host frame for the link. It returns false if the frame was
// not accepted (PFC pause in force, or TX buffer full): the caller keeps it
// and offers it again later. On true the core owns the frame; it appears in
// Out.Normal for transmission and later in Out.Free. Frames need
// seqhdr.MaxOverhead bytes of headroom.
func (p *Endpoint) Send(now int64, f link.Frame) bool {
	if p.S != nil {
		return p.S.send(now, f)
	}
	if p.R != nil && p.R.pendingAck {
		last := p.R.lastAck
		h := seqhdr.Header{Type: seqhdr.TypeData, Unseq: true, HasAck: true, Ack: p.R.takeAck()}
		b := p.e.mem.Bytes(f.H-seqhdr.MaxOverhead, f.Len+seqhdr.MaxOverhead)
		if _, n, err := seqhdr.Insert(b, seqhdr.MaxOverhead, f.Len, &h); err == nil {
			f = link.Frame{H: f.H - seqhdr.MaxOverhead, Len: n}
		} else {
			p.R.pendingAck, p.R.lastAck = true, last
		}
	}
	p.Stats.TxPassthrough++
	p.Out.Normal = append(p.Out.Normal, f)
	p.Out.Free = append(p.Out.Free, f)
	return true
}

// Poll runs timers: ackNoTimeout, re-notification and explicit ACKs of the
// receiver; dummies of the sender (only if queueEmpty: no host frame is
// waiting for this link, or if the credit window is full). Call it once per
// loop iteration after Send.
func (p *Endpoint) Poll(now int64, queueEmpty bool) {
	p.fastAck(now)
	p.fastPiggy()
	if p.R != nil {
		p.R.poll(now)
	}
	if p.S != nil {
		p.S.poll(now, queueEmpty)
	}
}

// Pause applies a PFC pause of d nanoseconds received from the peer.
func (p *Endpoint) Pause(now, d int64) {
	if p.S != nil {
		p.S.Pause(now, d)
	}
}

// Resume applies a PFC resume received from the peer.
func (p *Endpoint) Resume(now int64) {
	if p.S != nil {
		p.S.Resume(now)
	}
}

// Quiet reports whether the port holds no frames and owes no ACK: the TX buffer
// and the reorder buffer are empty, nothing is missing and no ACK is pending.
func (p *Endpoint) Quiet() bool {
	if p.S != nil {
		if p.S.sync(); p.S.Outstanding() > 0 {
			return false
		}
	}
	if p.R != nil && (p.R.buffered > 0 || p.R.missing > 0 || p.R.pendingAck || p.R.ackRepeatAt != 0 || p.R.fastBehind()) {
		return false
	}
	return true
}

// TxNext returns the sequence number the sender's next frame gets (0 without
// a sender). A link session advertises it as this end's initial sequence
// number when it agrees again after the peer restarted: every frame still on
// the wire from before then is behind it and dropped as a duplicate. It
// takes sending back from a kernel fast path (the number must stay the next
// one until the Reset that follows).
func (p *Endpoint) TxNext() seqhdr.Seq {
	if p.S == nil {
		return 0
	}
	p.S.claim()
	return p.S.next
}

// Reset restarts the port's sequence state, as a link session does when the
// peer's epoch changes (the peer restarted) or on the first agreement: the
// sender's next frame gets sequence number tx and the receiver expects rx
// next. Every frame the port holds (TX buffer, reorder buffer) is released in
// Out.Free exactly once; holes, timers, a pause in force and a pending ACK
// are forgotten. Frames received before the reset and not yet delivered are
// lost to the host, as on a restart of the peer.
func (p *Endpoint) Reset(now int64, tx, rx seqhdr.Seq) {
	p.Stats.Resets++
	// The kernel first: with the receive point (back for good; the reset
	// forgets the ACK it owes) and sending claimed, it writes no word of
	// the old numbering any more, and the ACKs of it that it wrote are
	// forgotten. tx and rx may lie anywhere: an old ACK read in the new
	// numbering would acknowledge frames never received and open the
	// kernel's window past Limit.
	if p.R != nil {
		p.R.claim(now)
	}
	if p.S != nil {
		p.S.claim()
	}
	if p.fast != nil {
		p.peerAck = forgetAck(p.fast.PeerAck)
	}
	if s := p.S; s != nil {
		for q := s.base; q != s.next; q = q.Next() {
			sl := s.slot(q)
			if sl.f.Len > 0 && !sl.kern {
				p.Out.Free = append(p.Out.Free, sl.f)
			}
			*sl = txSlot{}
		}
		s.base, s.next = tx&(seqhdr.Space-1), tx&(seqhdr.Space-1)
		s.bytes = 0
		s.pausedUntil = 0
		s.nextDummy, s.dummyGap = 0, s.dummyWait
		s.probed = false
		s.invalidAcks = 0
		s.Stats.TxBufFrames, s.Stats.TxBufBytes = 0, 0
		if s.fs != nil {
			s.fs.State.Store(uint64(s.next))
			s.publishLimit()
			p.piggyAck = forgetAck(s.fs.PiggyAck)
		}
	}
	if r := p.R; r != nil {
		for i := range r.slots {
			if sl := &r.slots[i]; sl.f.Len > 0 {
				p.Out.Free = append(p.Out.Free, sl.f)
			}
			r.slots[i] = rxSlot{}
		}
		r.ackNo = rx & (seqhdr.Space - 1)
		r.latest = r.ackNo.Add(-1)
		r.missing, r.buffered, r.bytes = 0, 0, 0
		r.nextCheck = 0
		r.pendingAck, r.pendingSince = false, 0
		r.lastAck = r.ackNo.Add(-1)
		r.paused, r.lastPause = false, 0
		r.ackRepeatAt, r.ackRepeats = 0, 0
		r.Stats.ReorderFrames, r.Stats.ReorderBytes = 0, 0
		r.publishAck()
	}
}

// forgetAck clears a word of ACKs the kernel writes (PeerAck, PiggyAck)
// once it no longer writes it: a write still under way when it stopped
// (one XDP run) is cleared too. It returns the word's new value, 0.
func forgetAck(w *atomic.Uint64) uint64 {
	for {
		if v := w.Load(); v == 0 || w.CompareAndSwap(v, 0) {
			return 0
		}
	}
}

// SetCredit bounds the sender's unacknowledged frames to n (at most the TX
// buffer; n ≤ 0 means the whole TX buffer): the window a link session agreed.
func (s *Sender) SetCredit(n int) {
	if n <= 0 || n > s.cfg.TxBuffer {
		n = s.cfg.TxBuffer
	}
	if n < s.credit {
		s.claim() // Limit goes down only while the core holds sending
	}
	s.credit = n
	s.publishLimit()
}

// Credit returns the credit window in force.
func (s *Sender) Credit() int { return s.credit }

// backpressureEvent emits a pause (d > 0) or resume (d == 0) to the peer: the
// Event for the integrator's statistics and a PAUSE/RESUME link-header control
// frame in Out.Pause (the priority lane), which the peer's Endpoint.Receive
// applies to its sender; no 802.1Qbb frame is needed.
func (r *Receiver) backpressureEvent(d int64) {
	if d > 0 {
		r.e.out.Events = append(r.e.out.Events, Event{Kind: EvPause, Nanos: d})
	} else {
		r.e.out.Events = append(r.e.out.Events, Event{Kind: EvResume})
	}
	h := seqhdr.Header{Type: seqhdr.TypeResume}
	if d > 0 {
		h = seqhdr.Header{Type: seqhdr.TypePause, Pause: uint32(min(d, 1<<32-1))}
	}
	if f, ok := r.e.control(&h); ok {
		r.e.out.Pause = append(r.e.out.Pause, f)
	}
}

// parsed counts and frees a received frame whose header did not parse
// (false); else it hands the header's piggybacked ACK to the sender.
func (p *Endpoint) parsed(now int64, f link.Frame, h *seqhdr.Header, err error) bool {
	if err != nil {
		p.Stats.RxBad++
		p.Out.Free = append(p.Out.Free, f)
		return false
	}
	if h.HasAck && p.S != nil {
		p.S.onAck(now, h.Ack)
	}
	return true
}
