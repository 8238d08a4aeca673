package linkguardian

import (
	"encoding/binary"
	"errors"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// # The send fast path: the kernel numbers and sends host frames, Go the rest
//
// A Sender can share its numbering with a fast path in the kernel: the host
// port's XDP program numbers a host frame itself (it stamps the link header
// with the next sequence number and the ACK to piggyback), keeps a copy of
// the frame for retransmission in a memory-mapped ring, and redirects it to
// the link port, while it owns sending and the credit window and pause state
// that Go publishes allow. Every other host frame reaches the core through
// AF_XDP and is queued and sent as before. The state they share (FastSend):
//
//	State     bit 63       FastOwned: the kernel owns sending
//	          bits 0..16   the next sequence number to assign (seqhdr.Seq)
//	Limit     bit 63       FastLimitValid
//	          bit 62       FastPaused: a PFC pause is in force
//	          bits 0..16   the first serial the kernel may NOT assign
//	                       (base + credit); written only by Go
//	LastNs    the time of the kernel's last send (the worker's clock:
//	          CLOCK_MONOTONIC ns, bpf_ktime_get_ns)
//	PiggyAck  FastAckValid | the newest ACK the kernel piggybacked
//	WantWake  1: Go asks to be woken after the kernel's next send
//	Ring      Slots × SlotSize bytes; slot q&(Slots−1) holds the host frame
//	          of serial q as the host sent it (no link header): a 2-byte
//	          length (little endian) and the frame bytes
//	Sent, Declined, Missed, Wakeups: the kernel's counters
//	ToGo      the host frames the kernel passed to Go (AF_XDP), whatever
//	          the reason: counted by the kernel
//	Consumed  the frames of ToGo Go has taken in (read from the socket or
//	          dropped by it) and claimed sending for: written only by Go
//
// and the receive point (FastPoint.Point), whose serial − 1 is the ACK the
// kernel piggybacks (see "ACKs" below).
//
// The kernel's rule, for each host frame (Offer mirrors it step by step):
//
//  1. Load State. Not owned: pass the frame to Go (AF_XDP), nothing else.
//  2. The frame must be eligible: at least 14 bytes (MACs and EtherType),
//     not of the link EtherType, and at most SlotSize−2 bytes. Load Limit
//     and Credit: Limit must be valid, not paused, q (State's serial) less
//     than FastLead past base = Limit − Credit (the lead bound), and q
//     strictly before Limit (serial compare) or, with the receive state
//     shared, inside the window an ACK the link port read opens: PeerAck
//     valid, base − 1 ≤ a < q and q before a + 1 + Credit (see "Credit and
//     pause"). ToGo must equal Consumed: Go has taken in every frame passed
//     to it. If any of this fails: give sending to Go by
//     compare-and-swap {owned, q} → {not owned, q}, count Declined and pass
//     the frame to Go.
//  3. Copy the frame into slot q (length, then bytes) FIRST.
//  4. Compare-and-swap State {owned, q} → {owned, q+1}. If it fails (Go
//     claimed sending, or another CPU took q), count Missed and pass the
//     frame to Go; slot q holds garbage but belongs to a serial not
//     assigned by the kernel, whose frame Go keeps in its own memory.
//  5. Store LastNs = now; if the frame gets an ACK, store PiggyAck and, if
//     the receive point is the kernel's with Wake set and AckEvery is
//     published, move Wake to the ACK + AckEvery by one compare-and-swap
//     (see "ACKs"); count Sent; if WantWake is 1, swap it to 0 and, if the
//     swap won, wake the worker once (count Wakeups).
//  6. Stamp the link header (type data, Seq q, the original EtherType, the
//     ACK if any: exactly seqhdr.Insert's result) and redirect the frame to
//     the link port.
//
// Every frame passed to Go counts in ToGo (steps 1, 2 and 4). Only frames of
// the host port's first receive queue are offered (one CPU at a time); the
// others go to Go, which claims sending for them.
//
// What the core does. The sender keeps the frames the kernel sent as kernel
// slots in its TX buffer: a length, no frame memory. Before it assigns a
// sequence number (a host frame to send, a resync), before anything that
// lowers Limit (a pause, a smaller credit, a reset) and when the link
// session asks for TxNext, it claims sending: compare-and-swap {owned, q}
// → {not owned, q}, then adopts [next, q) as kernel slots. While the kernel
// owns sending it adopts the same way (sync) before it handles an ACK, a loss
// notification or a timer: ACKs release kernel slots (nothing to free), a
// loss notification for one materializes a copy (the slot's bytes in a
// fresh buffer, the header inserted with Retx and a fresh ACK: in Out.Retx
// and Out.Free in the same iteration), and the dummy timer runs from LastNs.
// It hands sending back (HandOffSend: publish Limit, store {owned, next})
// when it holds no host frame to send, the credit window has room, no pause
// is in force and ToGo equals Consumed; the integrator stores Consumed (the
// frames it read from the host port's first queue, plus those its socket
// dropped) after the core claimed sending for them, and adds that every
// data frame Go sent has left the link port's TX ring and that the link
// session is up.
//
// Why no sequence number is assigned twice. The kernel assigns q only by
// the swap {owned, q} → {owned, q+1}; Go assigns only while it holds sending
// (not owned), from next, after adopting everything before State's serial.
// A claim makes every later kernel swap fail; Go stores {owned, next} only at
// a hand-off, after which it assigns nothing until its next claim. A swap
// that loaded State before a claim and succeeds after Go handed back the
// same q is right: Go assigned nothing in between, or State would differ, and
// Go hands back only with q inside the credit window and no pause.
//
// Why frames leave for the link in sequence order. Go → kernel: Go hands
// back only once its data frames have left the link TX ring (the integrator's
// condition), and the kernel numbers after them. A host frame X the kernel
// passed to Go before a later frame Y of the same queue is never numbered
// after Y: X counted in ToGo before Y's program ran (one CPU runs a queue
// at a time), so if Y finds ToGo equal to Consumed, Go had taken X in and
// claimed sending for it before it stored Consumed; Y's swap then succeeds
// only if Go handed back afterwards, which it does only once X is numbered
// and on the link TX ring. Otherwise Y is declined and reaches Go after X.
// Go's own check (HandOffSend) only saves hand-offs the kernel would undo:
// it cannot see a frame that loaded State before the hand-off and counts
// in ToGo after it (the window the kernel's check closes; with a check of
// the AF_XDP ring instead, that frame, still in an unflushed NAPI batch,
// was numbered after Y: seen on veth as an out-of-order frame at the host
// and as TCP retransmissions). Kernel → Go: Go claims when
// it holds a host frame, which reached it through the host port's AF_XDP
// socket, and a NAPI poll flushes its redirects (the device map) before its
// AF_XDP sockets, so the kernel's frames before that one are on the link
// port's queue first. The one window left: a claim for a frame of an
// earlier poll made while a later poll has swapped State but not flushed;
// the next frame Go numbers can then overtake the kernel's last one. The
// receiver takes that for a hole and the late frame for its recovery (a
// spurious notification and copy, nothing lost or delivered twice). Go's
// dummies name a serial it adopted, at least DummyWait after LastNs, long
// after the kernel's frame left.
//
// Why nothing is lost. A frame the kernel does not send reaches Go (AF_XDP)
// in host order: the kernel gives sending away with it (step 2), so every
// later frame reaches Go too, until Go hands back with nothing left to read.
// A redirect that fails after the swap (the link port's queue full) loses a
// numbered frame like a corrupting link does: the receiver finds the hole
// and Go retransmits from the ring. A frame the kernel sent is in Go's TX
// buffer as a kernel slot from the
// moment Go next looks (every ACK, loss notification and Poll adopts), and
// its bytes stay in slot q until the kernel assigns q+Slots, which needs
// Limit past it, i.e. the peer's ACK of q: a loss notification always finds
// them. (This assumes the kernel's rule runs between its load of State and
// its copy in far less time than a link round trip, which an XDP program,
// run with preemption off, does.)
//
// Credit and pause. The kernel assigns q only if q is before Limit = base +
// credit ≤ base + TxBuffer ≤ base + Slots, so it never exceeds the credit
// window or overwrites an unacknowledged slot. Go publishes Limit whenever
// base, credit or pause change; it only ever lowers Limit, or sets the pause
// bit, while it holds sending (a pause, a smaller credit, a reset and a
// resync claim first), so a kernel swap that checked an older, larger Limit
// fails. A raise (an ACK) may be seen late: the kernel declines and Go
// sends.
//
// The kernel does not wait for Go to apply an ACK its own receive path
// read (PeerAck, written by the link port's program as it delivers): on a
// busy host the worker applies it late, and sending went to Go for every
// window's worth of frames. So it may assign q at or past Limit when PeerAck
// holds a valid a with base − 1 ≤ a < q and q before a + 1 + Credit: the
// peer acknowledged a, so [a+1, q] is within Credit ≤ TxBuffer ≤ Slots
// frames, and slot q's previous serial, q − Slots ≤ a, is acknowledged.
// Go reads the same word when it adopts, and PeerAck only moves forward
// (frames are delivered in sequence order, and each carries the ACK its
// sender had when it numbered it), so what Go reads covers what the kernel
// counted on: adopt takes in frames while its ring has room and applies
// PeerAck, as far as the frames taken in, when it has none. Go clears
// PeerAck once it is behind base (fastAck: Go's base covers more than it
// then), so an old ACK never reads as new when the numbering comes round
// to it (a peer sending no data writes no newer one); and an ACK of an
// older numbering never stays in it: Reset clears it (see Restart).
//
// The lead bound. Go adopts [next, kn) by serial difference (seqhdr.Diff),
// right only while kn is less than half the sequence space past next. The
// window an unapplied PeerAck opens is bounded by the peer's ACK, not by
// anything Go wrote since it last looked: with the peer acknowledging at
// once, a worker off its CPU would see the kernel run up to base − 1 +
// Half + Credit, and then adopt nothing and number again from next. So
// the kernel assigns q only while q − base < FastLead = Half/4, base being
// what Go last published (Limit − Credit, never ahead of Go's base, which
// never passes next): kn − next ≤ kn − base ≤ FastLead, and every Diff Go
// takes of State is of a lead in [0, FastLead]. Go's own window, Limit −
// base = Credit ≤ TxBuffer ≤ 16,384 = FastLead, is never cut by it; only
// the window an unapplied PeerAck opens is. A worker kept off its CPU for
// FastLead frames costs a hand-over.
//
// Restart. A session reset claims sending (TxNext, then Reset) before the
// numbering restarts; the integrator hands back only once the session is up
// again. Reset claims the receive point and sending first, then clears
// PeerAck and PiggyAck, which the kernel no longer writes: the new
// numberings may lie anywhere (Reset's tx and rx are the caller's), and an
// old ACK read in them would acknowledge frames never received and open a
// window past Limit. The point holds {not owned, rx} and State {not owned,
// tx} before Reset returns. A new process loads a new program and shares
// new state.
//
// Waking Go. While the kernel sends, the dummy timer runs from LastNs. Go
// learns of the kernel's sends in one of two ways. Either (WakeEvery 0)
// with frames outstanding Go's deadline (NextDeadline) brings it back in
// time, and moves the timer on if the kernel sent since; with nothing
// outstanding, after each Poll it sets WantWake (then looks at State again,
// so a send it raced with is adopted), and the kernel wakes the worker
// after the next send (step 5: a BPF ring buffer record, or any event the
// worker's poll waits on); Go then adopts the frame and the first dummy
// goes DummyWait after it. Or (WakeEvery > 0) Go looks at least every
// WakeEvery (each Poll looks, and moves the next look on), and the first
// dummy for frames the kernel sent goes at the first look from DummyWait
// after the last of them on, at most WakeEvery after that (nextTimer): a
// dummy of Go's own (after Go's frames, and the doubling dummies after the
// first) keeps its exact deadline. The first way keeps the dummy exact but
// wakes the worker at the moment the kernel sends, on the CPU and at the
// time the host's next packet needs: on the 2-core veth pair that cost
// 26 µs against 11-13 µs of ping round trip at p50 (forward's fast path:
// 10); the dataplane uses the second, with WakeEvery 1 ms (dataplane
// lgLookEvery says why).
//
// Looks back off while the kernel sends nothing and nothing is outstanding:
// each time the timed look finds nothing new, the next comes twice as far,
// up to fastLookMax (2 ms), and the next look that finds a send brings the
// gap back to WakeEvery. After WakeEvery without a send the first frame's
// dummy may come up to fastLookMax late. Without the back-off an idle
// link's workers woke 4,000 times a second each at WakeEvery 250 µs, 7-9 %
// of a CPU per switch on the 2-core veth pair.
//
// ACKs. The kernel piggybacks the receive point's serial − 1. While the
// kernel owns the point (receive fast path) that is its own point; while Go
// does, Go stores {not owned, ackNo} in the point word whenever ackNo moves
// (the kernel only swaps an owned word, so the store races with nothing).
// The receiver's lastAck and pendingAck, which a piggybacked ACK updates in
// Go, are brought up to date from PiggyAck at each Poll: an ACK owed for
// frames the kernel's ACK covered is no longer owed, and Wake moves on.
// The kernel moves Wake itself as it piggybacks (step 5): Wake is the frame
// that completes AckEvery frames after the last ACK sent, and Go learns of
// the kernel's ACK only at its next look, so under bulk traffic in both
// directions Wake came round every AckEvery frames and gave the receive
// point to Go. The swap is against the word it read the ACK from, and
// only on an owned word; a lost swap leaves the earlier Wake (a look by Go
// sooner than needed). The link port's program retries its own swap when
// only Wake changed under it.

// Bits of FastSend's words (FastOwned and FastAckValid as for FastPoint).
const (
	// FastLimitValid marks Limit as published.
	FastLimitValid = uint64(1) << 63
	// FastPaused marks a pause in force in Limit.
	FastPaused = uint64(1) << 62
	// FastSlotHeader is the length field at the start of a ring slot.
	FastSlotHeader = 2
)

// FastSend is the state a Sender shares with a kernel fast path that sends
// host frames (see the package's "send fast path" section). The dataplane
// points the words at the XDP program's memory-mapped maps; NewFastSend
// makes them in Go memory for the simulated link.
type FastSend struct {
	State    *atomic.Uint64
	Limit    *atomic.Uint64
	LastNs   *atomic.Int64
	PiggyAck *atomic.Uint64
	WantWake *atomic.Uint64
	// Credit is the credit window, written by Go before Limit: with the
	// receive state's PeerAck it lets the kernel send past Limit on an ACK
	// Go has not applied yet (Offer, step 2).
	Credit *atomic.Uint64
	// The kernel's counters: frames sent, hand-overs to Go (declined while
	// owning), lost swaps, wakeups of the worker, moves of the receive
	// state's Wake, frames sent at or past Limit on the receive state's
	// PeerAck.
	Sent, Declined, Missed, Wakeups, WakeMoves, Widened *atomic.Uint64
	// Of Declined: the frame was outside the window (Limit and PeerAck),
	// or Go had not taken in every frame passed on (ToGo ≠ Consumed).
	DeclinedWindow, DeclinedUnread *atomic.Uint64
	// ToGo counts the host frames passed to Go (the kernel's); Consumed
	// is how many of them Go took in (Go's).
	ToGo, Consumed *atomic.Uint64
	// WakeEvery > 0: while the kernel owns sending and nothing is
	// outstanding, the core looks at State every WakeEvery ns instead of
	// asking the kernel to wake it after its next send (WantWake stays 0;
	// see "Waking Go"). Set it before SetFastSend.
	WakeEvery int64
	// Ring holds Slots slots of SlotSize bytes.
	Ring           []byte
	Slots          int
	SlotSize       int
	mask           uint32
	maxFrame       int
	stateW, limitW atomic.Uint64
	lastW          atomic.Int64
	piggyW, wakeW  atomic.Uint64
	creditW        atomic.Uint64
	cnt            [10]atomic.Uint64
}

// NewFastSend returns a FastSend over fresh memory with slots ring slots
// (a power of two, at least the sender's TxBuffer) of slotSize bytes (the
// length field and the largest host frame the kernel sends), not owned.
func NewFastSend(slots, slotSize int) (*FastSend, error) {
	if slots < 2 || slots > seqhdr.Half || slots&(slots-1) != 0 {
		return nil, errors.New("linkguardian: FastSend slots must be a power of two in [2, 65536]")
	}
	if slotSize < FastSlotHeader+seqhdr.MACLen+2 || slotSize > FastSlotHeader+0xffff {
		return nil, errors.New("linkguardian: FastSend slotSize must hold a length and an Ethernet header")
	}
	fs := &FastSend{Ring: make([]byte, slots*slotSize), Slots: slots, SlotSize: slotSize}
	fs.State, fs.Limit, fs.LastNs, fs.PiggyAck, fs.WantWake = &fs.stateW, &fs.limitW, &fs.lastW, &fs.piggyW, &fs.wakeW
	fs.Sent, fs.Declined, fs.Missed, fs.Wakeups = &fs.cnt[0], &fs.cnt[1], &fs.cnt[2], &fs.cnt[3]
	fs.ToGo, fs.Consumed, fs.WakeMoves, fs.Widened = &fs.cnt[4], &fs.cnt[5], &fs.cnt[6], &fs.cnt[7]
	fs.DeclinedWindow, fs.DeclinedUnread = &fs.cnt[8], &fs.cnt[9]
	fs.Credit = &fs.creditW
	fs.init()
	return fs, nil
}

func (fs *FastSend) init() {
	fs.mask = uint32(fs.Slots - 1)
	fs.maxFrame = fs.SlotSize - FastSlotHeader
}

// slot returns serial q's slot.
func (fs *FastSend) slot(q seqhdr.Seq) []byte {
	i := int(uint32(q)&fs.mask) * fs.SlotSize
	return fs.Ring[i : i+fs.SlotSize : i+fs.SlotSize]
}

// Frame returns the host frame the kernel keeps in serial q's slot.
func (fs *FastSend) Frame(q seqhdr.Seq) []byte {
	s := fs.slot(q)
	n := min(int(binary.LittleEndian.Uint16(s)), fs.maxFrame)
	return s[FastSlotHeader : FastSlotHeader+n]
}

// Offer is the kernel's rule (the package's "send fast path" section, steps
// 1–5), for the simulated link and the tests: it reports whether the fast
// path sends host frame b itself, under sequence number q (the caller
// stamps the header, Seq q and, if rx is not nil, ACK ack, and transmits
// it; the core never sees the frame). rx is the receive state the kernel
// piggybacks from (nil: no ACK). now is the time of the send (LastNs).
func (fs *FastSend) Offer(b []byte, rx *FastPoint, now int64) (q, ack seqhdr.Seq, ok bool) {
	// 1. Only while the kernel owns sending.
	old := fs.State.Load()
	if old&FastOwned == 0 {
		fs.ToGo.Add(1)
		return 0, 0, false
	}
	q = seqhdr.Seq(old & FastSeqMask)
	// 2. An eligible frame, inside the published window (or the one an
	// ACK the kernel read opens), no pause; else sending goes to Go with
	// this frame.
	lim := fs.Limit.Load()
	var why *atomic.Uint64 // of Declined, why (nil: not counted apart)
	ok = false
	if len(b) >= seqhdr.MACLen+2 && len(b) <= fs.maxFrame && binary.BigEndian.Uint16(b[seqhdr.MACLen:]) != seqhdr.EtherType &&
		lim&FastLimitValid != 0 && lim&FastPaused == 0 {
		switch {
		case !fs.inWindow(q, lim, rx):
			why = fs.DeclinedWindow
		case fs.ToGo.Load() != fs.Consumed.Load():
			why = fs.DeclinedUnread
		default:
			ok = true
		}
	}
	if !ok {
		if fs.State.CompareAndSwap(old, old&^FastOwned) {
			fs.Declined.Add(1)
			if why != nil {
				why.Add(1)
			}
		}
		fs.ToGo.Add(1)
		return 0, 0, false
	}
	// 3. The copy first: once q is assigned Go may read it.
	s := fs.slot(q)
	binary.LittleEndian.PutUint16(s, uint16(len(b)))
	copy(s[FastSlotHeader:], b)
	// 4. Assign q.
	if !fs.State.CompareAndSwap(old, old&^FastSeqMask|uint64(q.Next())) {
		fs.Missed.Add(1)
		fs.ToGo.Add(1)
		return 0, 0, false
	}
	// 5. What Go reads at its next look; the ACK and its Wake.
	fs.LastNs.Store(now)
	if rx != nil {
		p := rx.Point.Load()
		ack = seqhdr.Seq(p & FastSeqMask).Add(-1)
		fs.PiggyAck.Store(FastAckValid | uint64(ack))
		if every := fs.ackEvery(rx); every != 0 && p&FastOwned != 0 && p&FastWakeOn != 0 {
			np := p&^wakeMask | wakeAt(ack, int(every))
			if np != p && rx.Point.CompareAndSwap(p, np) {
				fs.WakeMoves.Add(1)
			}
		}
	}
	fs.Sent.Add(1)
	if !seqhdr.Less(q, seqhdr.Seq(lim&FastSeqMask)) {
		fs.Widened.Add(1)
	}
	if fs.WantWake.Load() != 0 && fs.WantWake.CompareAndSwap(1, 0) {
		fs.Wakeups.Add(1)
	}
	return q, ack, true
}

// inWindow is step 2's window: q less than FastLead past base = Limit −
// Credit, and before Limit or, with an ACK in rx's PeerAck that Go has not
// applied (base − 1 ≤ a < q), before a + 1 + Credit.
func (fs *FastSend) inWindow(q seqhdr.Seq, lim uint64, rx *FastPoint) bool {
	l, c := seqhdr.Seq(lim&FastSeqMask), fs.Credit.Load()
	if (uint64(q)-(uint64(l)-c))&FastSeqMask >= FastLead {
		return false
	}
	if seqhdr.Less(q, l) {
		return true
	}
	if rx == nil {
		return false
	}
	pa := rx.PeerAck.Load()
	if pa&FastAckValid == 0 || c == 0 || c > seqhdr.Half {
		return false
	}
	a, base := seqhdr.Seq(pa&FastSeqMask), l.Add(-int(c))
	return !seqhdr.Less(a, base.Add(-1)) && seqhdr.Less(a, q) && seqhdr.Less(q, a.Add(1+int(c)))
}

func (fs *FastSend) ackEvery(rx *FastPoint) uint64 {
	if rx.AckEvery == nil {
		return 0
	}
	return rx.AckEvery.Load()
}

// SetFastSend connects the endpoint's sender to a kernel fast path that
// sends host frames (nil disconnects it, after claiming sending). State is
// set to {not owned, next}; the integrator hands sending over with
// HandOffSend. fs needs at least TxBuffer slots. The receiver, if any,
// keeps the receive point's word current for the kernel's ACK (SetFast
// connects one).
func (p *Endpoint) SetFastSend(fs *FastSend) error {
	if p.S == nil {
		return errors.New("linkguardian: SetFastSend needs a Sender")
	}
	s := p.S
	s.claim()
	if fs == nil {
		s.fs = nil
		return nil
	}
	if fs.Slots < s.cfg.TxBuffer || fs.Slots&(fs.Slots-1) != 0 || fs.SlotSize < FastSlotHeader+seqhdr.MACLen+2 || len(fs.Ring) < fs.Slots*fs.SlotSize {
		return errors.New("linkguardian: FastSend needs a power-of-two number of slots, at least the TxBuffer")
	}
	fs.init()
	s.fs = fs
	fs.State.Store(uint64(s.next))
	s.publishLimit()
	p.piggyAck = fs.PiggyAck.Load()
	return nil
}

// FastSendOwned reports whether the kernel owns sending.
func (s *Sender) FastSendOwned() bool { return s.handed }

// HandOffSend gives sending to the kernel if the core holds no host frame to
// send (queueEmpty), the credit window has room, no pause is in force and
// Go has taken in every frame the kernel passed on (ToGo equals Consumed,
// which the integrator stores first); the integrator calls it only when
// every data frame the core sent has left the link port's TX ring and the
// link session is up (see the package's "send fast path" section). It
// reports whether the kernel owns sending.
func (p *Endpoint) HandOffSend(now int64, queueEmpty bool) bool {
	s := p.S
	if s == nil || s.fs == nil {
		return false
	}
	if s.sync(); s.handed {
		return true
	}
	if !queueEmpty || s.Paused(now) || s.Outstanding() >= s.credit || s.fs.ToGo.Load() != s.fs.Consumed.Load() {
		return false
	}
	s.pausedUntil = 0 // over: Limit's pause bit goes
	s.publishLimit()
	s.fs.State.Store(FastOwned | uint64(s.next))
	s.handed = true
	s.Stats.FastSendHandOffs++
	s.fastCheckAt, s.lookGap = 0, 0
	s.wantWake(now)
	return true
}

// publishLimit writes Limit: base + credit, and a pause not yet over (one
// that ran out is cleared at the next hand-off).
func (s *Sender) publishLimit() {
	if s.fs == nil {
		return
	}
	v := FastLimitValid | uint64(s.base.Add(s.credit))
	if s.pausedUntil != 0 {
		v |= FastPaused
	}
	s.fs.Credit.Store(uint64(s.credit))
	s.fs.Limit.Store(v)
}

// claim takes sending back from the kernel and adopts what it sent.
func (s *Sender) claim() {
	if !s.handed {
		return
	}
	v := disown(s.fs.State)
	s.handed = false
	s.Stats.FastSendClaims++
	s.adopt(seqhdr.Seq(v & FastSeqMask))
}

// sync adopts what the kernel sent while it owns sending, and takes
// sending back if the kernel gave it away.
func (s *Sender) sync() {
	if !s.handed {
		return
	}
	if v := s.fs.State.Load(); v&FastOwned != 0 {
		s.adopt(seqhdr.Seq(v & FastSeqMask))
	} else {
		s.claim()
	}
}

// adopt takes the frames the kernel numbered [next, kn) into the TX buffer
// as kernel slots: a length each, no frame memory. O(1) per frame, no
// allocation.
func (s *Sender) adopt(kn seqhdr.Seq) {
	for n := seqhdr.Diff(kn, s.next); n > 0; n = seqhdr.Diff(kn, s.next) {
		if room := len(s.ring) - s.Outstanding(); room > 0 {
			s.adoptN(min(n, room))
			continue
		}
		// The TX buffer is full and the kernel sent more: it went past
		// Limit on an ACK its receive path read (PeerAck) that Go has
		// not applied. Apply it to the frames taken in so far, then take
		// in more. PeerAck only moves forward, so it covers at least
		// what the kernel counted on (see "Credit and pause").
		if a, ok := s.peerAckBefore(kn); ok && seqhdr.Diff(a, s.base) >= 0 {
			if seqhdr.Diff(a, s.next) >= 0 {
				a = s.next.Add(-1)
			}
			s.release(a)
			continue
		}
		// Cannot happen: the oldest frame is given up as if acknowledged
		// rather than overwritten unaccounted.
		s.Stats.FastOverrun++
		s.release(s.base)
	}
}

// peerAckBefore returns the ACK in the receive state's PeerAck if it names
// a frame in [base − 1, kn).
func (s *Sender) peerAckBefore(kn seqhdr.Seq) (seqhdr.Seq, bool) {
	if s.peerAck == nil {
		return 0, false
	}
	v := s.peerAck.Load()
	a := seqhdr.Seq(v & FastSeqMask)
	return a, v&FastAckValid != 0 && seqhdr.Diff(a, s.base) >= -1 && seqhdr.Diff(a, kn) < 0
}

// adoptN takes the kernel's next n frames into the TX buffer.
func (s *Sender) adoptN(n int) {
	if n <= 0 {
		return
	}
	for range n {
		l := int(binary.LittleEndian.Uint16(s.fs.slot(s.next))) + seqhdr.MaxOverhead
		*s.slot(s.next) = txSlot{f: link.Frame{Len: l}, kern: true}
		s.bytes += l
		s.next = s.next.Next()
	}
	s.Stats.DataSent += uint64(n)
	s.Stats.FastSent += uint64(n)
	s.Stats.TxBufFrames = uint64(s.Outstanding())
	s.Stats.TxBufBytes = uint64(s.bytes)
	s.Stats.TxBufPeakFrames = max(s.Stats.TxBufPeakFrames, s.Stats.TxBufFrames)
	s.Stats.TxBufPeakBytes = max(s.Stats.TxBufPeakBytes, s.Stats.TxBufBytes)
	s.lastSent, s.probed, s.kernLast = s.fs.LastNs.Load(), false, true
	s.nextDummy, s.dummyGap = s.lastSent+s.dummyWait, s.dummyWait
}

// wantWake makes sure the core looks again after the kernel's next send.
// With WakeEvery > 0 it sets the next look (nextTimer), outstanding frames
// or not, and the kernel wakes no one; with WakeEvery 0 and nothing
// outstanding (no deadline for the sender) it asks the kernel to wake the
// worker after that send, then looks at State again so that a send it raced
// with is adopted.
func (s *Sender) wantWake(now int64) {
	if !s.handed {
		return
	}
	if s.fs.WakeEvery > 0 {
		// This Poll looked (sync): the next look is due lookGap from now,
		// so a worker woken for anything else takes the check along. The
		// gap is WakeEvery after a look that found the kernel had sent
		// or frames outstanding, and doubles, up to fastLookMax, when the
		// look the gap timed found nothing new and nothing outstanding: a
		// whole gap idle (see "Waking Go"). A Poll for anything else
		// keeps the gap; doubling there too spread the looks while
		// traffic flowed and made the dummy for a lost last frame late
		// (143 B flows at 1e-3: p99.9 640 against 505 µs).
		switch {
		case s.lookGap == 0 || s.next != s.lookedNext || s.Outstanding() > 0:
			s.lookGap = s.fs.WakeEvery
		case s.fastCheckAt != 0 && now >= s.fastCheckAt:
			s.lookGap = min(2*s.lookGap, max(fastLookMax, s.fs.WakeEvery))
		}
		s.lookedNext = s.next
		s.fastCheckAt = now + s.lookGap
		return
	}
	if s.Outstanding() > 0 {
		s.fs.WantWake.Store(0)
		return
	}
	s.fs.WantWake.Store(1)
	s.sync()
	if s.Outstanding() > 0 {
		s.fs.WantWake.Store(0)
	}
}

// fastLookMax bounds the gap between the core's looks at the send state
// while the kernel sends and nothing is outstanding (WakeEvery > 0).
const fastLookMax = int64(2_000_000)

// materialize writes a retransmitted copy of kernel slot q into a fresh
// buffer: the host frame from the ring, the header inserted with Retx and
// ack. The caller lists it in Out.Retx and Out.Free. It returns false if no
// buffer was free.
func (s *Sender) materialize(q seqhdr.Seq, hasAck bool, ack seqhdr.Seq) (link.Frame, bool) {
	src := s.fs.Frame(q)
	h, ok := s.e.mem.Alloc(seqhdr.MaxOverhead + len(src))
	if !ok {
		s.e.stats.AllocFail++
		return link.Frame{}, false
	}
	b := s.e.mem.Bytes(h, seqhdr.MaxOverhead+len(src))
	copy(b[seqhdr.MaxOverhead:], src)
	hd := seqhdr.Header{Type: seqhdr.TypeData, Seq: q, Retx: true, HasAck: hasAck, Ack: ack}
	_, n, err := seqhdr.Insert(b, seqhdr.MaxOverhead, len(src), &hd)
	if err != nil {
		panic("linkguardian: kernel slot holds no frame the kernel could send: " + err.Error())
	}
	f := link.Frame{H: h, Len: n}
	s.e.out.Free = append(s.e.out.Free, f)
	return f, true
}

// fastPiggy applies the newest ACK the kernel piggybacked to the receiver's
// lastAck and pendingAck.
func (p *Endpoint) fastPiggy() {
	if p.S == nil || p.S.fs == nil {
		return
	}
	if a := p.S.fs.PiggyAck.Load(); a != p.piggyAck {
		p.piggyAck = a
		if a&FastAckValid != 0 && p.R != nil {
			p.R.kernelAcked(seqhdr.Seq(a & FastSeqMask))
		}
	}
}

// kernelAcked notes that the kernel sent ACK a on a data frame.
func (r *Receiver) kernelAcked(a seqhdr.Seq) {
	if seqhdr.Diff(a, r.lastAck) <= 0 || seqhdr.Diff(a, r.ackNo) >= 0 && !r.handed {
		return // older than the last ACK sent, or not an ACK of ours
	}
	r.lastAck = a
	r.Stats.FastPiggyAcks++
	if r.pendingAck && !seqhdr.Less(a, r.ackNo.Add(-1)) {
		r.pendingAck = false
		r.Stats.PiggyAcksSent++
	}
	if r.ackRepeatAt != 0 && !seqhdr.Less(a, r.ackRepeatOf) {
		r.ackRepeatAt = 0 // data carries the ACK
	}
	r.rewake()
}

// publishAck keeps the receive point's serial at ackNo while the core owns
// the point: the kernel's piggybacked ACK is its serial − 1.
func (r *Receiver) publishAck() {
	if r.fast != nil && !r.handed {
		r.fast.Point.Store(uint64(r.ackNo))
	}
}

// ClaimSend takes sending back from the kernel, as the integrator does when
// the link session leaves Up or the fast path is switched off; HandOffSend
// gives it back.
func (p *Endpoint) ClaimSend() {
	if p.S != nil {
		p.S.claim()
	}
}
