package linkguardian

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// # The receive fast path: the kernel delivers in-order frames, Go the rest
//
// A Receiver can share its in-order point with a fast path in the kernel:
// the link port's XDP program (bpf/c/port.c, lf_lg_rx) delivers a data frame
// itself, header stripped and redirected to the host port, when it is the
// next one expected and nothing else needs the core; every other frame
// (holes, duplicates, retransmitted copies, control frames) reaches the core
// through AF_XDP as before. The state they share is a 64-bit word, Point:
//
//	bit 63       FastOwned: the kernel owns the in-order point
//	bit 62       FastWakeOn: bits 32..48 hold Wake
//	bits 32..48  Wake: the serial number of a frame the kernel passes on
//	             (with the point) instead of delivering it
//	bits 0..16   the next expected serial number (seqhdr.Seq: era<<16 | seqNo)
//
// PeerAck, the newest ACK piggybacked on a frame the kernel delivered
// (FastAckValid | ack), which this end's Sender applies at its next Poll,
// and Adopted, the serial the core last took as its ackNo (written only by
// the core: at HandOff, before the point, and at every adopt).
//
// Ownership. Whoever owns the point is the only one that may deliver a data
// frame, and it delivers exactly the frame whose number is the point:
//
//   - The kernel delivers frame q only by one compare-and-swap of
//     {owned, q} to {owned, q+1} (Offer mirrors its rule; the other bits are
//     kept). Any other data frame it may judge (in sequence, no flags but
//     era and ACK) that is not q, frame q when it is Wake, and frame q when
//     q − Adopted ≥ FastLead (the lead bound), make it give the point
//     away, {owned, q} to {not owned, q}, before it passes the frame on;
//     retransmitted copies, dummies and control frames it passes on without
//     touching the point.
//   - The core takes the point back (claim: compare-and-swap to {not owned,
//     q}) before it handles any data frame or dummy, resets, or changes its
//     mode; it then starts from q, which it takes as its ackNo (adopt): the
//     frames before q were delivered by the kernel. While it owns the point
//     it is the Receiver this package always had.
//   - The core gives the point back (HandOff: a store of {owned, ackNo})
//     only when it holds nothing and waits for nothing: no frame missing,
//     none buffered, latestRxSeqNo = ackNo−1, no pause. The integrator
//     calls HandOff only once every frame the core delivered has left for
//     the host (the host port's transmit ring holds none of them) and while
//     its link session accepts the peer's frames.
//
// Why nothing is delivered twice. A frame q is delivered by the kernel only
// through the swap {owned, q} → {owned, q+1}, which fails once the core has
// claimed, and by the core only while it owns the point and ackNo ≤ q; after
// a claim, ackNo is the point, past everything the kernel delivered. The core
// never delivers after a HandOff before its next claim. (A swap that read the
// point before a claim and succeeds after the core handed back the same q is
// right: the core delivered nothing in between, or the point would differ.)
//
// Why nothing is delivered out of order. By the core, in sequence order as
// always. Between the two: (1) the kernel → the core: the core claims only
// when it handles a frame the kernel passed on (or resets); the kernel's
// redirects of one NAPI poll reach the host port's queue at the end of that
// poll (xdp_do_flush flushes the device map before the AF_XDP sockets), so
// before the core can read the frame that made it claim; and a data frame
// the core will deliver after a claim was passed on by the kernel either
// while the core owned the point or with a hand-over, after which the kernel
// delivers nothing more. (2) the core → the kernel: HandOff waits until the
// core's deliveries have left its transmit ring, and the kernel delivers
// only the frame after them.
//
// Why nothing is lost to the hand-over. A frame the kernel passes on reaches
// the core, which claims and handles it as before: a frame ahead of the point
// opens a hole (the core notifies, recovers, skips on ackNoTimeout), one
// behind it is a duplicate. Only frames on the link port's first queue are
// judged, so one CPU at a time updates the point.
//
// The lead bound. The core compares the kernel's point with its ackNo by
// serial difference (seqhdr.Diff), which is right only while the two are
// less than half the sequence space (seqhdr.Half) apart; a core that did
// not look for that long would otherwise take the kernel's progress for
// none and drop every new frame as a duplicate. The kernel delivers q only
// while q − Adopted < FastLead = Half/4, and Adopted is the core's ackNo
// from the hand-off on (written before the point, so a kernel that sees
// the owned point sees it; an older value only makes the lead look
// larger), so the point is never more than FastLead past the core's ackNo:
// every Diff the core takes of it (adopt, lateForKernel, kernelAcked) is
// of a lead in [0, FastLead], well inside Half. A quarter of the space is
// 16,384 frames, four times the largest credit window the dataplane uses:
// under traffic the core adopts every AckDelay and at each Wake, so the
// bound is met only by a worker kept off its CPU for that many frames, and
// then costs one hand-over.
//
// Restart. A session reset claims the point before the receiver is reset
// and leaves {not owned, rx} in it (the ACK the kernel's send path
// piggybacks is of the new numbering from then on), and clears PeerAck;
// the core hands the point back only after the new agreement (the
// integrator's condition), and the peer sends data only after that
// agreement, so no frame of an old epoch is delivered by either.
//
// ACKs. While the kernel owns the point the core's ackNo is a copy: it is
// refreshed before an ACK is sent (piggybacked or explicit) and at a check
// every AckDelay (or FastPoint.LookEvery, if longer) while the point moves
// (backing off to fastCheckMax while it does not), and frames the kernel
// delivered owe an ACK as if the core had delivered them (AckDelay from the
// check that found them). AckEvery, the bound that keeps the peer's credit
// open, needs the core at once: Wake is the frame that completes AckEvery
// frames since the last ACK sent, and the kernel leaves it to the core,
// which delivers it and ACKs. The peer's dummy, if it comes first, reaches
// the core and is answered at once.

// Bits of FastPoint's words.
const (
	// FastOwned marks the point as the kernel's.
	FastOwned = uint64(1) << 63
	// FastAckValid marks PeerAck as holding an ACK.
	FastAckValid = uint64(1) << 63
	// FastSeqMask selects the serial number.
	FastSeqMask = uint64(seqhdr.Space - 1)
	// FastWakeOn marks the Wake bits (FastWakeShift) as valid.
	FastWakeOn = uint64(1) << 62
	// FastWakeShift is where Wake sits in the point.
	FastWakeShift = 32
)

// disown clears FastOwned in w, which the kernel may be changing, and
// returns w's value as it took it.
func disown(w *atomic.Uint64) uint64 {
	for {
		v := w.Load()
		if v&FastOwned == 0 || w.CompareAndSwap(v, v&^FastOwned) {
			return v
		}
	}
}

// FastLead bounds the kernel's lead over Go on both fast paths, in
// serials: it delivers frame q only while q − Adopted < FastLead, and
// assigns q only while q − base < FastLead (see "The receive fast path"
// and "The send fast path"). A quarter of the sequence space.
const FastLead = seqhdr.Half / 4

// fastCheckMax bounds the interval of the core's checks of a point the
// kernel owns while it does not move: the first frames after a pause owe
// their ACK at most this late (the peer's dummy asks sooner).
const fastCheckMax = int64(2_000_000)

// FastPoint is the state a Receiver shares with a kernel fast path: the
// in-order point, the newest piggybacked ACK the kernel saw and the
// receiver's last adopted ackNo (see the package's "receive fast path"
// section). The dataplane points both at the
// XDP program's memory-mapped map; NewFastPoint makes them in Go memory for
// the simulated link.
type FastPoint struct {
	Point   *atomic.Uint64
	PeerAck *atomic.Uint64
	// Adopted is the serial the receiver last took as its ackNo (the
	// receiver writes it; required): the kernel delivers frame q only
	// while q − Adopted < FastLead.
	Adopted *atomic.Uint64
	// AckEvery is the receiver's AckEvery (the receiver writes it): a
	// kernel send path that piggybacks ACK a moves Wake to a + AckEvery
	// (FastSend.Offer). nil or 0: Wake is Go's alone.
	AckEvery *atomic.Uint64
	// LookEvery > AckDelay spaces the core's looks at the point the kernel
	// owns further apart than AckDelay (each look is a wakeup of the
	// worker): the ACK the kernel's frames owe goes up to that much later,
	// the peer's dummy asking for it sooner. Set it before SetFast.
	LookEvery int64
}

// NewFastPoint returns a FastPoint over fresh memory, the point not owned.
func NewFastPoint() *FastPoint {
	return &FastPoint{Point: new(atomic.Uint64), PeerAck: new(atomic.Uint64), Adopted: new(atomic.Uint64), AckEvery: new(atomic.Uint64)}
}

// fastFlags are the flags a frame the kernel delivers may carry.
const fastFlags = seqhdr.FlagEra | seqhdr.FlagHasAck | seqhdr.FlagAckEra

// Offer is the kernel's rule (bpf/c/port.c), for the simulated link and the
// tests: it reports whether the fast path delivers frame b itself (the
// caller strips its link header and hands it to the host; the core never
// sees it). A data frame it may judge that is not the next one, is Wake,
// or is FastLead or more past Adopted gives the point to the core. The kernel also declines when it cannot redirect to the
// host port; the model's host port always takes frames.
func (fp *FastPoint) Offer(b []byte) bool {
	q, flags, ok := fastDataFrame(b)
	if !ok {
		return false
	}
	old := fp.Point.Load()
	if old&FastOwned == 0 {
		return false
	}
	if old&FastSeqMask != uint64(q) || (old&FastWakeOn != 0 && old>>FastWakeShift&FastSeqMask == uint64(q)) ||
		(uint64(q)-fp.Adopted.Load())&FastSeqMask >= FastLead {
		fp.Point.CompareAndSwap(old, old&^FastOwned)
		return false
	}
	if !fp.Point.CompareAndSwap(old, old&^FastSeqMask|uint64(q.Next())) {
		return false
	}
	fp.storePeerAck(b, flags)
	return true
}

// fastDataFrame reports whether b is a data frame the kernel judges (step
// 1: the link EtherType, type data, no flag but era and ACK) and returns
// its serial and flags.
func fastDataFrame(b []byte) (q seqhdr.Seq, flags byte, ok bool) {
	if len(b) < seqhdr.DataOffset || binary.BigEndian.Uint16(b[seqhdr.MACLen:]) != seqhdr.EtherType ||
		b[seqhdr.MACLen+2] != byte(seqhdr.TypeData) || b[seqhdr.MACLen+3]&^fastFlags != 0 {
		return 0, 0, false
	}
	flags = b[seqhdr.MACLen+3]
	q = seqhdr.Seq(binary.BigEndian.Uint16(b[seqhdr.MACLen+4:]))
	if flags&seqhdr.FlagEra != 0 {
		q |= seqhdr.SeqMod
	}
	return q, flags, true
}

// storePeerAck keeps the ACK data frame b (flags) piggybacks in PeerAck.
func (fp *FastPoint) storePeerAck(b []byte, flags byte) {
	if flags&seqhdr.FlagHasAck != 0 {
		a := uint64(binary.BigEndian.Uint16(b[seqhdr.MACLen+8:]))
		if flags&seqhdr.FlagAckEra != 0 {
			a |= seqhdr.SeqMod
		}
		fp.PeerAck.Store(FastAckValid | a)
	}
}

// SetFast connects the endpoint to a kernel fast path's state (nil
// disconnects it): the receiver hands its in-order point over with HandOff
// and the sender applies the ACKs the kernel saw. A point the kernel owns is
// taken back first (what it delivered owes an ACK at once), as SetFastSend
// takes sending back. The point must not be owned by the kernel when it is
// connected.
func (p *Endpoint) SetFast(fp *FastPoint) {
	if p.R != nil {
		p.R.claim(0)
	}
	p.fast = fp
	if fp != nil {
		p.peerAck = fp.PeerAck.Load()
	}
	if p.R != nil {
		p.R.fast, p.R.handed = fp, false
		p.R.publishAck()
		p.R.publishAckEvery()
	}
	if p.S != nil {
		p.S.peerAck = nil
		if fp != nil {
			p.S.peerAck = fp.PeerAck
		}
	}
}

// publishAckEvery writes AckEvery for the kernel's send path.
func (r *Receiver) publishAckEvery() {
	if r.fast != nil && r.fast.AckEvery != nil {
		r.fast.AckEvery.Store(uint64(r.ackEvery))
	}
}

// fastAck applies the newest ACK the kernel saw on frames it delivered,
// then clears PeerAck if it is behind base: applied, it opens nothing
// more, and left there while the numbering goes on (a peer that sends no
// data writes no newer one) it would read as new half the sequence space
// later, to the kernel's window and to adopt. Between two looks base moves
// less than half the space (the lead bound and the credit), so at every
// look PeerAck is 0 or at least base − 1. A compare-and-swap: an ACK the
// kernel wrote since stays.
func (p *Endpoint) fastAck(now int64) {
	if p.fast == nil || p.S == nil {
		return
	}
	if a := p.fast.PeerAck.Load(); a != p.peerAck {
		p.peerAck = a
		if a&FastAckValid != 0 {
			p.S.onAck(now, seqhdr.Seq(a&FastSeqMask))
		}
	}
	if a := p.peerAck; a&FastAckValid != 0 && seqhdr.Diff(seqhdr.Seq(a&FastSeqMask), p.S.base) < 0 && p.fast.PeerAck.CompareAndSwap(a, 0) {
		p.peerAck = 0
	}
}

// FastOwned reports whether the kernel owns the receiver's in-order point.
func (r *Receiver) FastOwned() bool { return r.handed }

// HandOff gives the in-order point to the kernel if the receiver holds
// nothing and waits for nothing (see the package's "receive fast path"
// section for the integrator's conditions). It reports whether the kernel
// owns the point.
func (r *Receiver) HandOff(now int64) bool {
	if r.fast == nil {
		return false
	}
	if r.handed {
		return true
	}
	if !r.Clean() {
		return false
	}
	r.fast.Adopted.Store(uint64(r.ackNo)) // before the point: the lead bound
	r.fast.Point.Store(FastOwned | r.wakeBits() | uint64(r.ackNo))
	r.handed = true
	r.Stats.FastHandOffs++
	r.fastGap = r.fastCheckBase()
	r.fastCheckAt = now + r.fastGap
	return true
}

// wakeBits is Wake for the point: the frame that completes AckEvery frames
// since the last ACK sent.
func (r *Receiver) wakeBits() uint64 { return wakeAt(r.lastAck, r.ackEvery) }

// wakeMask selects Wake and its on bit in the point.
const wakeMask = FastWakeOn | FastSeqMask<<FastWakeShift

// wakeAt is the point's Wake bits for the frame that completes every frames
// after ACK ack (the receiver's, and the kernel's as it piggybacks: Offer).
func wakeAt(ack seqhdr.Seq, every int) uint64 {
	return FastWakeOn | uint64(ack.Add(every))<<FastWakeShift
}

// rewake moves Wake after an ACK was sent while the kernel owns the point.
func (r *Receiver) rewake() {
	if !r.handed {
		return
	}
	for {
		v := r.fast.Point.Load()
		if v&FastOwned == 0 || r.fast.Point.CompareAndSwap(v, v&^wakeMask|r.wakeBits()) {
			return
		}
	}
}

// lateForKernel reports whether a data frame q that reached the core while
// the kernel owns the point is one the kernel already moved past: a late
// copy (a retransmission's second copy, a frame the sender thought lost).
// The core drops it without claiming the point, which would send the frames
// after it through the core (hand-overs cost the host's order a wait: see
// linkguardian/lgpipe/hostgate.go). Not in Monitor delivery, whose frames given up on may
// still be delivered late.
func (r *Receiver) lateForKernel(q seqhdr.Seq) bool {
	if !r.handed || r.cfg.Delivery == Monitor {
		return false
	}
	v := r.fast.Point.Load()
	return v&FastOwned != 0 && seqhdr.Less(q, seqhdr.Seq(v&FastSeqMask))
}

// fastCheckBase is the check interval while the point moves: AckDelay, the
// time an ACK may wait anyway, or LookEvery if longer.
func (r *Receiver) fastCheckBase() int64 { return max(r.cfg.AckDelay, r.fast.LookEvery, 1000) }

// claim takes the in-order point back from the kernel before the core
// handles a frame for the receiver, resets it or changes its mode.
func (r *Receiver) claim(now int64) {
	if !r.handed {
		return
	}
	v := disown(r.fast.Point)
	r.handed = false
	r.Stats.FastClaims++
	r.adopt(now, seqhdr.Seq(v&FastSeqMask), true)
}

// adopt takes next, the kernel's point, as ackNo: the frames before it were
// delivered by the kernel. If owe, they owe an ACK as frames the core
// delivered do. It reports whether the point had moved.
func (r *Receiver) adopt(now int64, next seqhdr.Seq, owe bool) bool {
	n := seqhdr.Diff(next, r.ackNo)
	if n <= 0 {
		return false // the kernel only moves the point forward
	}
	r.Stats.FastDelivered += uint64(n)
	r.Stats.DataRx += uint64(n)
	r.Stats.Delivered += uint64(n)
	// Slots of the frames the kernel delivered say nothing: a late copy of
	// one is a duplicate (Monitor delivery's "gone" marks from a Window ago too).
	for i := range min(n, len(r.slots)) {
		*r.slot(r.ackNo.Add(i)) = rxSlot{}
	}
	r.ackNo, r.latest = next, next.Add(-1)
	// The kernel's lead is counted from here again.
	r.fast.Adopted.Store(uint64(next))
	r.ackRepeatAt = 0 // the sender is sending
	// An ACK the kernel's send path piggybacked may cover them already.
	if owe && seqhdr.Diff(next.Add(-1), r.lastAck) > 0 {
		r.setPending(now)
	}
	return true
}

// refreshFast brings the copy of the point up to date before an ACK is
// sent while the kernel owns it.
func (r *Receiver) refreshFast() {
	if r.handed {
		r.adopt(0, seqhdr.Seq(r.fast.Point.Load()&FastSeqMask), false)
	}
}

// checkFast is the core's periodic look at a point the kernel owns: frames
// it delivered owe an ACK; a point the kernel gave away is claimed.
func (r *Receiver) checkFast(now int64) {
	if !r.handed || now < r.fastCheckAt {
		return
	}
	v := r.fast.Point.Load()
	if v&FastOwned == 0 {
		r.claim(now)
		return
	}
	if r.adopt(now, seqhdr.Seq(v&FastSeqMask), true) {
		r.fastGap = r.fastCheckBase()
	} else {
		r.fastGap = min(2*r.fastGap, fastCheckMax)
	}
	r.fastCheckAt = now + r.fastGap
}

// fastBehind reports whether the kernel delivered frames the core has not
// adopted yet (an ACK is owed for them).
func (r *Receiver) fastBehind() bool {
	return r.handed && seqhdr.Seq(r.fast.Point.Load()&FastSeqMask) != r.ackNo
}

// Clean reports whether the receiver holds nothing and waits for nothing
// (HandOff's condition).
func (r *Receiver) Clean() bool {
	return r.missing == 0 && r.buffered == 0 && !r.paused && r.latest == r.ackNo.Add(-1)
}
