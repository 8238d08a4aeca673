package linkguardian

import (
	"errors"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// SenderConfig configures the sending side of a protected direction.
type SenderConfig struct {
	// TxBuffer is the TX buffer size in frames (power of two, 2..2^14). It
	// bounds the unacknowledged frames; the peer receiver's Window must be at
	// least as large.
	TxBuffer int
	// Credit, if nonzero, bounds the unacknowledged frames below TxBuffer
	// (the credit window: what the peer can hold unprocessed).
	Credit int
	// Copies is N, the number of retransmitted copies per lost frame (≥ 1;
	// Equation 2, computed by the integrator).
	Copies int
	// DummyInterval is the minimum time between dummy emissions while frames
	// are unacknowledged and the normal queue is empty.
	DummyInterval int64
	// DummyWaitMax, if nonzero, lets the first dummy after a data frame wait
	// for that frame's ACK: a dummy sent before the ACK could be back tells
	// the receiver nothing the ACK would not, and costs a frame and a
	// wakeup at both ends. The wait is learned from the ACK latency of the
	// newest frame (see ackSample), at least DummyInterval and at most
	// DummyWaitMax: a tail loss is found within DummyWaitMax. 0: the first
	// dummy goes DummyInterval after the last data frame.
	DummyWaitMax int64
	// DummyCopies is K, the number of dummies sent per emission (≥ 1).
	DummyCopies int
	// RetxHoldoff: a loss notification for a frame retransmitted less than
	// RetxHoldoff ago is a duplicate and ignored. Set it below the receiver's
	// RenotifyInterval.
	RetxHoldoff int64
	// MaxRetxRounds caps how many notifications one frame is retransmitted for
	// (each round sends Copies copies). The receiver's re-notifications back
	// off exponentially, so about log2(AckNoTimeout/RenotifyInterval)+3 of
	// them fit before it gives up: the default 16 covers them.
	MaxRetxRounds int
}

// DefaultSenderConfig returns software defaults (see Params for tuning).
func DefaultSenderConfig() SenderConfig {
	return SenderConfig{
		TxBuffer:      4096,
		Copies:        1,
		DummyInterval: 10_000,
		DummyWaitMax:  500_000,
		DummyCopies:   1,
		RetxHoldoff:   50_000,
		MaxRetxRounds: 16,
	}
}

func (c *SenderConfig) check() error {
	if c.TxBuffer < 2 || c.TxBuffer > 1<<14 || c.TxBuffer&(c.TxBuffer-1) != 0 {
		return errors.New("linkguardian: SenderConfig.TxBuffer must be a power of two in [2, 16384]")
	}
	if c.Credit < 0 || c.Credit > c.TxBuffer {
		return errors.New("linkguardian: SenderConfig.Credit must be in [0, TxBuffer] (0 means TxBuffer)")
	}
	if c.Copies < 1 || c.DummyCopies < 1 || c.MaxRetxRounds < 1 || c.MaxRetxRounds > 255 {
		return errors.New("linkguardian: SenderConfig.Copies, DummyCopies must be ≥ 1 and MaxRetxRounds in [1, 255]")
	}
	if c.DummyInterval < 0 || c.RetxHoldoff < 0 || c.DummyWaitMax < 0 {
		return errors.New("linkguardian: SenderConfig intervals must not be negative")
	}
	return nil
}

type txSlot struct {
	f      link.Frame
	retxAt int64
	rounds uint8
	kern   bool // sent by the kernel fast path: f.Len only, the bytes in its ring
}

// Sender is the sending side of a protected direction (the paper's sender
// switch): it numbers frames, keeps them in the TX buffer until the peer's
// cumulative ACK passes them, retransmits on loss notifications and sends
// dummies to expose tail losses.
type Sender struct {
	cfg         SenderConfig
	e           *env
	ackSrc      *Receiver // receiver of the opposite direction on the same port
	ring        []txSlot
	mask        uint32
	credit      int        // most unacknowledged frames
	base, next  seqhdr.Seq // oldest unacknowledged, next to assign
	bytes       int
	pausedUntil int64 // pause in force while now < pausedUntil
	// Dummies: the first goes dummyWait after the last data frame if the
	// queue stays empty; while no ACK releases the buffer, further ones back
	// off exponentially (a software link's ACK round trip is tens of µs, and
	// every dummy costs a frame each way).
	nextDummy   int64
	dummyGap    int64
	invalidAcks int // ACKs beyond next in a row (see onAck)
	// The ACK latency of the newest frame (DummyWaitMax): when it was
	// sent, whether a dummy followed it before its ACK came, the smoothed
	// latency and its mean deviation (0: no sample yet), and the wait
	// they give.
	lastSent       int64
	probed         bool
	ackRTT, ackVar int64
	dummyWait      int64
	// The kernel fast path (fasttx.go): its shared state and whether it
	// owns sending.
	fs     *FastSend
	handed bool
	// peerAck is the receive fast path's PeerAck (FastPoint), nil without
	// one: the kernel may send past Limit on an ACK in it (adopt).
	peerAck *atomic.Uint64
	// fastCheckAt is when the core looks at State next while the kernel
	// owns sending and nothing is outstanding (FastSend.WakeEvery > 0);
	// lookGap is the gap to it (doubling while looks find no send) and
	// lookedNext what next was at the last look (wantWake).
	fastCheckAt, lookGap int64
	lookedNext           seqhdr.Seq
	// kernLast: the newest frame is one the kernel sent (with WakeEvery,
	// its first dummy waits for a look: nextTimer).
	kernLast bool
	Stats    SenderStats
}

func newSender(cfg SenderConfig, e *env) *Sender {
	credit := cfg.Credit
	if credit == 0 {
		credit = cfg.TxBuffer
	}
	return &Sender{cfg: cfg, e: e, ring: make([]txSlot, cfg.TxBuffer), mask: uint32(cfg.TxBuffer - 1), credit: credit,
		dummyGap: cfg.DummyInterval, dummyWait: cfg.DummyInterval}
}

// DummyWait returns how long after a data frame the first dummy goes if
// the queue stays empty and no ACK of the frame comes back.
func (s *Sender) DummyWait() int64 { return s.dummyWait }

// ackSample learns from an ACK that released the newest frame, at now,
// how long the first dummy should wait for an ACK (DummyWaitMax).
//
// Without a dummy in between, the ACK's latency is a sample: the wait is
// the smoothed latency plus four mean deviations (TCP's RTO estimator,
// RFC 6298), between DummyInterval and DummyWaitMax. When a dummy went
// first, the latency is no sample (the dummy may have hastened the ACK,
// and would make the wait feed on itself); the wait doubles instead, like
// an RTO after a timeout, until an ACK comes back before the dummy.
func (s *Sender) ackSample(now int64) {
	lo, hi := s.cfg.DummyInterval, max(s.cfg.DummyWaitMax, s.cfg.DummyInterval)
	if s.probed {
		s.dummyWait = min(max(2*s.dummyWait, lo), hi)
		return
	}
	m := now - s.lastSent
	if m < 0 {
		return
	}
	if s.ackRTT == 0 {
		s.ackRTT, s.ackVar = max(m, 1), m/2
	} else {
		d := s.ackRTT - m
		if d < 0 {
			d = -d
		}
		s.ackVar += (d - s.ackVar) / 4
		s.ackRTT += (m - s.ackRTT) / 8
	}
	s.dummyWait = min(max(s.ackRTT+4*s.ackVar, lo), hi)
}

// Outstanding returns the number of unacknowledged frames in the TX buffer.
func (s *Sender) Outstanding() int { return seqhdr.Diff(s.next, s.base) }

// Next returns the sequence number the next normal frame will get (while
// the kernel owns sending, after the frames it sent so far).
func (s *Sender) Next() seqhdr.Seq {
	s.sync()
	return s.next
}

// Paused reports whether a PFC pause is in force at now.
func (s *Sender) Paused(now int64) bool { return now < s.pausedUntil }

// CanSend reports whether a normal frame would be accepted at now.
func (s *Sender) CanSend(now int64) bool {
	s.sync()
	return !s.Paused(now) && s.Outstanding() < s.credit
}

// Pause stops normal frames for d nanoseconds from now (a PFC pause with
// d = quanta × 512 bit times). A new pause replaces the old one; d ≤ 0 resumes.
func (s *Sender) Pause(now, d int64) {
	if d <= 0 {
		s.Resume(now)
		return
	}
	s.Stats.PausesRx++
	s.claim() // the kernel stops before the pause is published
	s.pausedUntil = now + d
	s.publishLimit()
}

// Resume ends a pause (a PFC frame with zero quanta).
func (s *Sender) Resume(now int64) {
	s.Stats.ResumesRx++
	s.pausedUntil = 0
	s.publishLimit()
}

func (s *Sender) slot(q seqhdr.Seq) *txSlot { return &s.ring[uint32(q)&s.mask] }

// send stamps and buffers a normal frame; false if paused or the TX buffer is full.
func (s *Sender) send(now int64, f link.Frame) bool {
	h, ok := s.admit(now, seqhdr.TypeData)
	if !ok {
		return false
	}
	b := s.e.mem.Bytes(f.H-seqhdr.MaxOverhead, f.Len+seqhdr.MaxOverhead)
	_, n, err := seqhdr.Insert(b, seqhdr.MaxOverhead, f.Len, &h)
	if err != nil {
		// Not a frame we can protect (runt or already 0x88B5): drop it.
		s.refuse(f)
		return true
	}
	s.buffer(now, link.Frame{H: f.H - seqhdr.MaxOverhead, Len: n})
	return true
}

// admit takes a frame for sending: false (counted) if paused or the TX
// buffer is full, else the header to stamp it with: type typ, the next
// sequence number and the ACK to piggyback, if any.
func (s *Sender) admit(now int64, typ seqhdr.Type) (seqhdr.Header, bool) {
	s.claim()
	if s.Paused(now) {
		s.Stats.PausedRefusals++
		return seqhdr.Header{}, false
	}
	if s.Outstanding() >= s.credit {
		s.Stats.TxFull++
		return seqhdr.Header{}, false
	}
	h := seqhdr.Header{Type: typ, Seq: s.next}
	if s.ackSrc != nil {
		h.HasAck, h.Ack = true, s.ackSrc.takeAck()
	}
	return h, true
}

// refuse drops a frame the sender cannot stamp (counted as TxBad).
func (s *Sender) refuse(f link.Frame) {
	s.e.stats.TxBad++
	s.e.out.Free = append(s.e.out.Free, f)
}

// buffer keeps a stamped frame in the TX buffer under the next sequence
// number and lists it for transmission.
func (s *Sender) buffer(now int64, f link.Frame) {
	s.nextDummy, s.dummyGap = now+s.dummyWait, s.dummyWait
	s.lastSent, s.probed, s.kernLast = now, false, false
	*s.slot(s.next) = txSlot{f: f}
	s.next = s.next.Next()
	s.bytes += f.Len
	s.Stats.DataSent++
	s.Stats.TxBufFrames = uint64(s.Outstanding())
	s.Stats.TxBufBytes = uint64(s.bytes)
	s.Stats.TxBufPeakFrames = max(s.Stats.TxBufPeakFrames, s.Stats.TxBufFrames)
	s.Stats.TxBufPeakBytes = max(s.Stats.TxBufPeakBytes, s.Stats.TxBufBytes)
	s.e.out.Normal = append(s.e.out.Normal, f)
}

// resyncAcks is the number of ACKs beyond the latest frame sent, in a row,
// after which the sender takes the receiver's word for it (resync).
const resyncAcks = 3

// onAck releases every buffered frame up to and including ack.
//
// An ACK of a frame never sent is impossible from a receiver in step with
// this sender: the receiver has moved past frames the sender never sent (a
// forged or corrupted frame moved it, or one end restarted). It is ignored
// and counted (AckInvalid); after resyncAcks of them with no ACK in step in
// between, the receiver, which waits for ack+1 and drops everything before it
// as duplicates, would never accept a frame again: the sender gives up its
// unacknowledged frames and continues at ack+1 (resync).
func (s *Sender) onAck(now int64, ack seqhdr.Seq) {
	s.sync()
	if seqhdr.Diff(ack, s.next) >= 0 {
		s.Stats.AckInvalid++
		if s.invalidAcks++; s.invalidAcks >= resyncAcks {
			s.resync(ack.Next())
		}
		return
	}
	if seqhdr.Diff(ack, s.base) < -1 {
		return // stale: reordered behind a newer ACK
	}
	s.invalidAcks = 0
	if seqhdr.Diff(ack, s.base) < 0 {
		return
	}
	s.release(ack)
	if s.base == s.next && s.cfg.DummyWaitMax > 0 {
		s.ackSample(now)
	}
}

// release frees the TX buffer's frames [base, ack], which the peer
// acknowledged (base ≤ ack < next).
func (s *Sender) release(ack seqhdr.Seq) {
	for q := s.base; seqhdr.LessEq(q, ack); q = q.Next() {
		sl := s.slot(q)
		s.bytes -= sl.f.Len
		if !sl.kern {
			s.e.out.Free = append(s.e.out.Free, sl.f)
		}
		*sl = txSlot{}
		s.Stats.Acked++
	}
	s.base = ack.Next()
	s.publishLimit()
	s.Stats.TxBufFrames = uint64(s.Outstanding())
	s.Stats.TxBufBytes = uint64(s.bytes)
}

// resync drops every unacknowledged frame and numbers the next one q.
func (s *Sender) resync(q seqhdr.Seq) {
	s.claim()
	s.Stats.Resyncs++
	for ; s.base != s.next; s.base = s.base.Next() {
		sl := s.slot(s.base)
		if !sl.kern {
			s.e.out.Free = append(s.e.out.Free, sl.f)
		}
		*sl = txSlot{}
		s.Stats.ResyncDropped++
	}
	s.base, s.next, s.bytes, s.invalidAcks = q, q, 0, 0
	s.Stats.TxBufFrames, s.Stats.TxBufBytes = 0, 0
	if s.fs != nil {
		s.fs.State.Store(uint64(q))
		s.publishLimit()
	}
}

// onLoss retransmits count frames from first, Copies copies each.
//
// A notification is checked against the TX buffer [base, next) with plain
// integer offsets from base (the serial difference is taken once, so nothing
// wraps): one that names a frame never sent (at or beyond next) or more frames
// than the TX buffer holds is invalid (a corrupted or forged frame) and dropped
// whole, counted in LossInvalid. Frames before base were already acknowledged
// (a stale notification reordered behind the ACK): they are skipped and
// counted in RetxUnknown.
func (s *Sender) onLoss(now int64, first seqhdr.Seq, count int) {
	s.sync()
	s.Stats.LossNotifsRx++
	out := s.Outstanding()
	lo := seqhdr.Diff(first, s.base)
	hi := lo + count // exclusive, as an offset from base
	if count < 1 || count > len(s.ring) || hi > out {
		s.Stats.LossInvalid++
		return
	}
	if lo < 0 {
		skip := min(-lo, count)
		s.Stats.RetxUnknown += uint64(skip)
		lo += skip
	}
	for i := lo; i < hi; i++ {
		sl := s.slot(s.base.Add(i))
		if sl.f.Len < seqhdr.DataOffset {
			// Cannot happen inside [base, next); never touch an empty slot.
			s.Stats.LossInvalid++
			return
		}
		if sl.rounds > 0 && now-sl.retxAt < s.cfg.RetxHoldoff || int(sl.rounds) >= s.cfg.MaxRetxRounds {
			s.Stats.RetxSuppressed++
			continue
		}
		f := sl.f
		if sl.kern {
			// A frame the kernel sent: a copy from its ring, freed once sent.
			var ack seqhdr.Seq
			if s.ackSrc != nil {
				ack = s.ackSrc.takeAck()
			}
			var ok bool
			if f, ok = s.materialize(s.base.Add(i), s.ackSrc != nil, ack); !ok {
				continue // no buffer: the receiver notifies again
			}
		} else {
			b := s.e.mem.Bytes(sl.f.H, sl.f.Len)
			seqhdr.SetRetx(b, true)
			if s.ackSrc != nil {
				seqhdr.SetAck(b, s.ackSrc.takeAck())
			}
		}
		sl.rounds++
		sl.retxAt = now
		s.Stats.RetxRequests++
		for c := 0; c < s.cfg.Copies; c++ {
			s.e.out.Retx = append(s.e.out.Retx, f)
		}
		s.Stats.RetxCopies += uint64(s.cfg.Copies)
	}
}

// maxDummyBackoff bounds the dummy interval's growth (×DummyInterval).
const maxDummyBackoff = 64

// creditBound reports whether the credit window is full: no normal frame can
// go until an ACK arrives, so the sender probes as if idle.
func (s *Sender) creditBound() bool { return s.Outstanding() >= s.credit }

// poll sends dummies: only while frames are unacknowledged, the normal queue
// is empty (idle) or the credit window is full (no data frame can carry the
// news that the peer's last ACK was lost), and no pause is in force; the first
// DummyWait after the last data frame, then at doubling intervals (up to 64×
// DummyInterval, or DummyWait if longer) until new data is sent. Each
// emission is DummyCopies dummies.
func (s *Sender) poll(now int64, idle bool) {
	s.sync()
	defer s.wantWake(now)
	if !(idle || s.creditBound()) || s.Outstanding() == 0 || s.Paused(now) || now < s.nextDummy {
		return
	}
	h := seqhdr.Header{Type: seqhdr.TypeDummy, Seq: s.next.Add(-1)}
	if s.ackSrc != nil {
		h.HasAck, h.Ack = true, s.ackSrc.takeAck()
	}
	for i := 0; i < s.cfg.DummyCopies; i++ {
		f, ok := s.e.control(&h)
		if !ok {
			return
		}
		s.e.out.Low = append(s.e.out.Low, f)
		s.Stats.DummiesSent++
	}
	s.probed = true
	s.dummyGap = min(2*s.dummyGap, max(maxDummyBackoff*s.cfg.DummyInterval, s.dummyWait))
	s.nextDummy = now + s.dummyGap
}

// nextTimer is when poll next has work (a dummy) if the queue stays idle or
// the credit window stays full.
func (s *Sender) nextTimer(now int64, idle bool) int64 {
	switch {
	case s.Outstanding() == 0:
		if s.handed && s.fs.WakeEvery > 0 {
			return s.fastCheckAt
		}
		return maxTime
	case s.Paused(now):
		return s.pausedUntil
	case idle || s.creditBound():
		if s.handed && s.fs.WakeEvery > 0 && s.kernLast && !s.probed {
			// The first dummy for the kernel's frames goes at the
			// first look from nextDummy on, WakeEvery after it at
			// the latest: no wakeup of its own while looks come.
			return min(s.fastCheckAt, s.nextDummy+s.fs.WakeEvery)
		}
		return s.nextDummy
	}
	return maxTime
}

// SetRetxHoldoff sets the duplicate-notification holdoff. Keep it below the
// peer receiver's RenotifyInterval when that changes (Timers returns both).
func (s *Sender) SetRetxHoldoff(d int64) { s.cfg.RetxHoldoff = max(d, 0) }
