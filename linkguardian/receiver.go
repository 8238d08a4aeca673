package linkguardian

import (
	"errors"
	"fmt"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Delivery is how a receiver hands frames on: in order (LG), non-blocking
// (LGNB) or unprotected (monitor). Its names, "lg", "lgnb" and "monitor"
// (String, MarshalText), are also the dataplane's mode names; its values are
// carried on the wire (linksession.Protect.RxMode), so their order is fixed.
type Delivery uint8

// Deliveries.
const (
	// InOrder holds out-of-order frames in the reorder buffer and delivers in
	// sequence order (Algorithm 1), with backpressure (Algorithm 2).
	InOrder Delivery = iota
	// NonBlocking delivers frames as they arrive and only removes duplicates.
	NonBlocking
	// Monitor is sequenced but unprotected: frames are delivered as they
	// arrive and losses are counted from the gaps (the loss monitor's input),
	// but nothing is asked for again. A policy can switch protection on.
	Monitor
)

var deliveryNames = [...]string{InOrder: "lg", NonBlocking: "lgnb", Monitor: "monitor"}

func (m Delivery) String() string {
	if int(m) < len(deliveryNames) {
		return deliveryNames[m]
	}
	return "lg"
}

// ParseDelivery returns the Delivery named name ("lg", "lgnb" or "monitor").
func ParseDelivery(name string) (Delivery, error) {
	for i, n := range deliveryNames {
		if n == name {
			return Delivery(i), nil
		}
	}
	return InOrder, fmt.Errorf("linkguardian: delivery %q: want lg, lgnb or monitor", name)
}

// MarshalText returns the Delivery's name.
func (m Delivery) MarshalText() ([]byte, error) {
	if int(m) >= len(deliveryNames) {
		return nil, fmt.Errorf("linkguardian: delivery %d unknown", uint8(m))
	}
	return []byte(deliveryNames[m]), nil
}

// UnmarshalText parses a Delivery's name.
func (m *Delivery) UnmarshalText(b []byte) error {
	d, err := ParseDelivery(string(b))
	if err == nil {
		*m = d
	}
	return err
}

// ReceiverConfig configures the receiving side of a protected direction.
type ReceiverConfig struct {
	Delivery Delivery
	// Window is the reorder (LG) or de-duplication (LGNB) window in frames, a
	// power of two in [2, 16384]; at least the peer sender's TxBuffer. A frame
	// further than Window ahead of ackNo forces ackNo forward (counted).
	Window int
	// AckNoTimeout: a hole at ackNo is skipped once it has been missing this
	// long (§3.5 "Preventing transmission stalls"; Params.Timers).
	AckNoTimeout int64
	// RenotifyInterval: a loss notification is sent again for frames still
	// missing this long after the first notification, then at doubling
	// intervals (up to 1024× it, and at most AckNoTimeout/4). A software
	// link has no lossless high-priority path, so a lost notification (or a
	// lost set of copies) is recovered this way. Set it above the maximum
	// retransmission delay and below AckNoTimeout; 0 disables
	// re-notification.
	RenotifyInterval int64
	// NotifyCopies is the number of copies of each loss notification (first
	// and repeated), default 1. Extra copies protect recovery against loss of
	// the notification on a lossy reverse direction; the sender ignores the
	// duplicates (SenderConfig.RetxHoldoff).
	NotifyCopies int
	// AckDelay: an explicit ACK is sent only if an ACK has been pending this
	// long without a reverse data frame carrying it.
	AckDelay int64
	// AckEvery bounds the coalescing: once this many frames have been
	// received in order since the last ACK sent, the explicit ACK goes at
	// once, whatever AckDelay says, so that a long AckDelay never leaves
	// the peer sender short of credit. 0 means Window/4 (at least 1); set
	// it to a quarter of the peer sender's credit window (SetAckEvery).
	AckEvery int
	// AckRepeats is how many times an explicit ACK that no data follows is
	// sent again, at RenotifyInterval, then 2×, 4×... (0 means 3; negative,
	// none). A sender bound by its credit also probes with dummies, which
	// the receiver answers at once, so repeats only shorten the recovery
	// from a lost ACK; at low rates, where no data follows any ACK, each
	// costs a frame and a wakeup at both ends.
	AckRepeats int
	// PauseThreshold and ResumeThreshold (bytes of the reorder buffer) drive
	// Algorithm 2; PauseThreshold = ResumeThreshold + 2 MTU (Params). A zero
	// PauseThreshold disables backpressure.
	PauseThreshold, ResumeThreshold int
	// PauseDuration is the time a pause event asks for (the PFC quanta time).
	// While the reorder buffer stays above ResumeThreshold the pause is
	// re-issued every PauseDuration/2.
	PauseDuration int64
}

// DefaultReceiverConfig returns software defaults (see Params for tuning).
func DefaultReceiverConfig() ReceiverConfig {
	return ReceiverConfig{
		Delivery:         InOrder,
		Window:           4096,
		AckNoTimeout:     400_000,
		RenotifyInterval: 100_000,
		NotifyCopies:     1,
		AckDelay:         100_000,
		AckRepeats:       -1,
		ResumeThreshold:  64 << 10,
		PauseThreshold:   64<<10 + 2*1522,
		PauseDuration:    200_000,
	}
}

func (c *ReceiverConfig) check() error {
	if c.Window < 2 || c.Window > 1<<14 || c.Window&(c.Window-1) != 0 {
		return errors.New("linkguardian: ReceiverConfig.Window must be a power of two in [2, 16384]")
	}
	if c.NotifyCopies < 0 || c.NotifyCopies > 16 {
		return errors.New("linkguardian: ReceiverConfig.NotifyCopies must be in [0, 16] (0 means 1)")
	}
	if c.Delivery > Monitor {
		return errors.New("linkguardian: ReceiverConfig.Delivery must be InOrder, NonBlocking or Monitor")
	}
	if c.AckNoTimeout <= 0 {
		return errors.New("linkguardian: ReceiverConfig.AckNoTimeout must be positive (use Params.Timers)")
	}
	if c.AckEvery < 0 {
		return errors.New("linkguardian: ReceiverConfig.AckEvery must not be negative (0 means Window/4)")
	}
	if c.RenotifyInterval < 0 || c.AckDelay < 0 || c.PauseDuration < 0 {
		return errors.New("linkguardian: ReceiverConfig intervals must not be negative")
	}
	if c.PauseThreshold > 0 && (c.ResumeThreshold < 0 || c.ResumeThreshold >= c.PauseThreshold || c.PauseDuration == 0) {
		return errors.New("linkguardian: ReceiverConfig needs 0 ≤ ResumeThreshold < PauseThreshold and PauseDuration > 0 for backpressure")
	}
	return nil
}

const (
	slotEmpty   = 0 // beyond latestRxSeqNo
	slotPresent = 1 // LG: frame buffered; LGNB: frame delivered
	slotMissing = 2 // detected lost, not yet recovered
	// Monitor delivery only, behind ackNo: counted lost, not delivered; a late
	// copy is delivered.
	slotGone = 3
)

type rxSlot struct {
	f          link.Frame
	state      uint8
	renotified uint8 // re-notifications sent for this missing frame
	detectedAt int64
	notifiedAt int64
}

// maxRenotifyShift bounds the backoff of re-notifications of one missing
// frame: the interval doubles with each one, up to RenotifyInterval << 10
// and never beyond a quarter of AckNoTimeout.
const maxRenotifyShift = 10

// renotifyAfter is how long after its last notification a missing frame
// is notified again: RenotifyInterval, doubling with each re-notification
// (capped), so that the sender's retransmission rounds (MaxRetxRounds)
// last until the receiver would give up on the frame, however long the
// retransmissions are delayed or lost in a burst, instead of being spent in
// the first few intervals.
func (r *Receiver) renotifyAfter(sl *rxSlot) int64 {
	ri := r.cfg.RenotifyInterval
	d := ri << min(sl.renotified, maxRenotifyShift)
	return max(ri, min(d, r.cfg.AckNoTimeout/4))
}

// Receiver is the receiving side of a protected direction (the paper's
// receiver switch).
type Receiver struct {
	cfg          ReceiverConfig
	e            *env
	slots        []rxSlot
	mask         uint32
	ackNo        seqhdr.Seq // next expected
	latest       seqhdr.Seq // latestRxSeqNo
	missing      int
	buffered     int
	bytes        int
	nextCheck    int64
	pendingAck   bool
	pendingSince int64
	lastAck      seqhdr.Seq // the last ACK sent (explicit or carried)
	ackEvery     int        // AckEvery in force
	paused       bool
	lastPause    int64
	// Repeat of an unconfirmed explicit ACK: armed when one is sent, off
	// (ackRepeatAt 0) once data arrives or the ACK changes, or after
	// maxAckRepeats repeats at doubling intervals.
	ackRepeatAt  int64
	ackRepeatGap int64
	ackRepeats   int
	ackRepeatOf  seqhdr.Seq
	// The kernel fast path (fastrx.go): its shared state, whether it owns
	// the in-order point, and the core's next look at it.
	fast                 *FastPoint
	handed               bool
	fastCheckAt, fastGap int64
	Stats                ReceiverStats
}

func newReceiver(cfg ReceiverConfig, e *env) *Receiver {
	r := &Receiver{
		cfg:     cfg,
		e:       e,
		slots:   make([]rxSlot, cfg.Window),
		mask:    uint32(cfg.Window - 1),
		latest:  seqhdr.Seq(0).Add(-1),
		lastAck: seqhdr.Seq(0).Add(-1),
	}
	r.SetAckEvery(cfg.AckEvery)
	return r
}

// SetAckEvery sets AckEvery (n ≤ 0: Window/4), as a link session does when
// it agrees the peer sender's credit window (pass a quarter of it).
func (r *Receiver) SetAckEvery(n int) {
	if n <= 0 {
		n = len(r.slots) / 4
	}
	r.ackEvery = max(n, 1)
	r.publishAckEvery()
}

// AckEvery returns the AckEvery in force.
func (r *Receiver) AckEvery() int { return r.ackEvery }

// AckNo returns the next expected sequence number.
func (r *Receiver) AckNo() seqhdr.Seq { return r.ackNo }

// Latest returns latestRxSeqNo.
func (r *Receiver) Latest() seqhdr.Seq { return r.latest }

// Missing returns the number of frames currently known lost and not recovered.
func (r *Receiver) Missing() int { return r.missing }

// Buffered returns the frames and bytes held in the reorder buffer.
func (r *Receiver) Buffered() (frames, bytes int) { return r.buffered, r.bytes }

// PendingAck reports whether an ACK is waiting to be sent.
func (r *Receiver) PendingAck() bool { return r.pendingAck }

func (r *Receiver) slot(q seqhdr.Seq) *rxSlot { return &r.slots[uint32(q)&r.mask] }

// takeAck returns the cumulative ACK (latest in-order sequence number) and
// marks it sent.
func (r *Receiver) takeAck() seqhdr.Seq {
	r.refreshFast()
	if r.pendingAck {
		r.pendingAck = false
		r.Stats.PiggyAcksSent++
	}
	r.lastAck = r.ackNo.Add(-1)
	r.rewake()
	return r.lastAck
}

// setPending notes that ackNo moved: an ACK is owed, due AckDelay from the
// first frame it covers, or at once when it covers AckEvery frames.
func (r *Receiver) setPending(now int64) {
	if !r.pendingAck {
		r.pendingAck = true
		r.pendingSince = now
	}
	if seqhdr.Diff(r.ackNo.Add(-1), r.lastAck) >= r.ackEvery {
		r.pendingSince = min(r.pendingSince, now-r.cfg.AckDelay)
	}
	r.publishAck()
}

// deliver strips the link header of a data frame and outputs it to the host;
// a carried frame (carried.go) goes out whole.
func (r *Receiver) deliver(f link.Frame) {
	b := r.e.mem.Bytes(f.H, f.Len)
	r.Stats.Delivered++
	if t, _ := seqhdr.FrameType(b); t.IsCarried() {
		r.e.out.Deliver = append(r.e.out.Deliver, f)
		return
	}
	_, off, n, err := seqhdr.Strip(b, 0, f.Len)
	if err != nil {
		panic("linkguardian: buffered frame lost its header: " + err.Error())
	}
	r.e.out.Deliver = append(r.e.out.Deliver, link.Frame{H: f.H + link.Handle(off), Len: n})
}

func (r *Receiver) free(f link.Frame) { r.e.out.Free = append(r.e.out.Free, f) }

// advanceHead moves ackNo over one slot that is present (delivering it in LG)
// or missing (giving up on it).
func (r *Receiver) advanceHead(now int64) {
	sl := r.slot(r.ackNo)
	switch sl.state {
	case slotPresent:
		if r.cfg.Delivery == InOrder {
			r.deliver(sl.f)
			r.buffered--
			r.bytes -= sl.f.Len
		}
	case slotMissing:
		r.missing--
		r.e.out.Events = append(r.e.out.Events, Event{Kind: EvSkipped, Seq: r.ackNo, Nanos: now - sl.detectedAt})
	}
	*sl = rxSlot{}
	r.ackNo = r.ackNo.Next()
	r.setPending(now)
}

// drain advances ackNo over consecutive present slots (Algorithm 1 applied to
// the buffered frames).
func (r *Receiver) drain(now int64) {
	for r.slot(r.ackNo).state == slotPresent && seqhdr.LessEq(r.ackNo, r.latest) {
		r.advanceHead(now)
	}
}

// forceTo moves ackNo to target, delivering what is buffered and skipping what
// is missing: the window cannot hold a frame further ahead.
func (r *Receiver) forceTo(now int64, target seqhdr.Seq) {
	for seqhdr.Less(r.ackNo, target) {
		if seqhdr.Less(r.latest, r.ackNo) {
			r.Stats.ForcedSkips += uint64(seqhdr.Diff(target, r.ackNo))
			r.ackNo = target
			r.latest = target.Add(-1)
			r.setPending(now)
			break
		}
		if r.slot(r.ackNo).state == slotMissing {
			r.Stats.ForcedSkips++
		}
		r.advanceHead(now)
	}
	r.drain(now)
	r.backpressure(now)
}

// gap records the frames from latestRxSeqNo+1 up to q as lost (q itself
// only if qLost: a dummy names the sender's latest frame; a data frame q was
// received), makes q latestRxSeqNo and notifies the sender.
func (r *Receiver) gap(now int64, q seqhdr.Seq, qLost bool) {
	first := r.latest.Next()
	count := seqhdr.Diff(q, first)
	if qLost {
		count++
	}
	r.latest = q
	if count <= 0 {
		return
	}
	if r.cfg.Delivery == Monitor {
		// Unprotected: the frames are gone. Nothing is held before the gap
		// in this mode, so ackNo == first; move it past the gap.
		r.Stats.HolesDetected++
		r.Stats.LostDetected += uint64(count)
		r.Stats.LostUnprotected += uint64(count)
		r.e.out.Events = append(r.e.out.Events, Event{Kind: EvLoss, Seq: first, Count: count})
		// Remember the last Window of them: if one arrives late (the link
		// reordered it) it is delivered, not taken for a duplicate.
		for i := max(0, count-len(r.slots)); i < count; i++ {
			*r.slot(first.Add(i)) = rxSlot{state: slotGone}
		}
		r.ackNo = first.Add(count)
		r.setPending(now)
		return
	}
	for i := 0; i < count; i++ {
		*r.slot(first.Add(i)) = rxSlot{state: slotMissing, detectedAt: now, notifiedAt: now}
	}
	r.missing += count
	r.Stats.HolesDetected++
	r.Stats.LostDetected += uint64(count)
	r.e.out.Events = append(r.e.out.Events, Event{Kind: EvLoss, Seq: first, Count: count})
	r.notify(first, count)
	r.Stats.LossNotifsSent++
	d := r.cfg.AckNoTimeout
	if ri := r.cfg.RenotifyInterval; ri > 0 && ri < d {
		d = ri
	}
	if r.missing == count || now+d < r.nextCheck {
		r.nextCheck = now + d
	}
}

func (r *Receiver) notify(first seqhdr.Seq, count int) {
	h := seqhdr.Header{Type: seqhdr.TypeLoss, Seq: first, Count: uint16(count), Latest: r.latest, HasAck: true, Ack: r.takeAck()}
	for i := 0; i < max(1, r.cfg.NotifyCopies); i++ {
		if f, ok := r.e.control(&h); ok {
			r.e.out.Urgent = append(r.e.out.Urgent, f)
		}
	}
}

// onData handles a sequenced data frame (Algorithm 1, or LGNB de-duplication).
func (r *Receiver) onData(now int64, f link.Frame, h *seqhdr.Header) {
	if h.Retx {
		r.Stats.RetxRx++
	} else {
		r.Stats.DataRx++
	}
	if r.lateForKernel(h.Seq) {
		r.Stats.DupDropped++
		r.free(f)
		return
	}
	r.claim(now)
	q := h.Seq
	d := seqhdr.Diff(q, r.ackNo)
	if d < 0 {
		if sl := r.slot(q); r.cfg.Delivery == Monitor && d >= -len(r.slots) && sl.state == slotGone {
			*sl = rxSlot{}
			r.Stats.LateDelivered++
			r.deliver(f)
			return
		}
		r.Stats.DupDropped++
		r.free(f)
		return
	}
	if d >= len(r.slots) && r.cfg.Delivery != Monitor {
		r.forceTo(now, q.Add(1-len(r.slots)))
	}
	if seqhdr.Less(r.latest, q) {
		r.gap(now, q, false)
	} else {
		switch sl := r.slot(q); sl.state {
		case slotPresent:
			r.Stats.DupDropped++
			r.free(f)
			return
		case slotMissing:
			r.missing--
			r.Stats.Recovered++
			if !h.Retx {
				r.Stats.RecoveredLate++
			}
			again := 0
			if sl.notifiedAt != sl.detectedAt {
				again = 1
			}
			r.e.out.Events = append(r.e.out.Events, Event{Kind: EvRecovered, Seq: q, Count: again, Nanos: now - sl.detectedAt})
		}
	}
	r.ackRepeatAt = 0 // the sender is sending: the next ACK is pending anyway
	sl := r.slot(q)
	if r.cfg.Delivery != InOrder {
		r.deliver(f)
		sl.state = slotPresent
		if q == r.ackNo {
			r.advanceHead(now)
			r.drain(now)
		}
		return
	}
	if q == r.ackNo {
		r.deliver(f)
		*sl = rxSlot{}
		r.ackNo = r.ackNo.Next()
		r.setPending(now)
		r.drain(now)
	} else {
		*sl = rxSlot{f: f, state: slotPresent}
		r.buffered++
		r.bytes += f.Len
		r.Stats.ReorderPeakFrames = max(r.Stats.ReorderPeakFrames, uint64(r.buffered))
		r.Stats.ReorderPeakBytes = max(r.Stats.ReorderPeakBytes, uint64(r.bytes))
	}
	r.backpressure(now)
}

// onDummy handles a dummy carrying the sender's latest sequence number.
func (r *Receiver) onDummy(now int64, q seqhdr.Seq) {
	r.claim(now)
	r.Stats.DummiesRx++
	if seqhdr.Less(r.latest, q) {
		if seqhdr.Diff(q, r.ackNo) >= len(r.slots) && r.cfg.Delivery != Monitor {
			r.forceTo(now, q.Add(1-len(r.slots)))
		}
		r.gap(now, q, true)
		return
	}
	if seqhdr.Less(q, r.ackNo) {
		// Everything the sender has sent was received, yet it still has
		// unacknowledged frames: our last ACK was lost. ACK again now.
		r.setPending(now)
		r.pendingSince = now - r.cfg.AckDelay
	}
}

// backpressure is Algorithm 2 on the reorder buffer bytes.
func (r *Receiver) backpressure(now int64) {
	r.Stats.ReorderFrames = uint64(r.buffered)
	r.Stats.ReorderBytes = uint64(r.bytes)
	if r.cfg.PauseThreshold <= 0 {
		return
	}
	if !r.paused && r.bytes >= r.cfg.PauseThreshold {
		r.paused = true
		r.lastPause = now
		r.Stats.PausesSent++
		r.backpressureEvent(r.cfg.PauseDuration)
	} else if r.paused && r.bytes <= r.cfg.ResumeThreshold {
		r.paused = false
		r.Stats.ResumesSent++
		r.backpressureEvent(0)
	}
}

// poll runs the receiver's timers.
func (r *Receiver) poll(now int64) {
	r.checkFast(now)
	if r.missing > 0 && now >= r.nextCheck {
		r.scan(now)
	}
	if r.pendingAck && now-r.pendingSince >= r.cfg.AckDelay {
		if r.explicitAck() {
			r.pendingAck = false
			r.ackRepeatOf, r.ackRepeats = r.ackNo.Add(-1), 0
			r.ackRepeatGap = r.ackRepeatBase()
			r.ackRepeatAt = 0
			if r.maxAckRepeats() > 0 {
				r.ackRepeatAt = now + r.ackRepeatGap
			}
		}
	}
	if r.ackRepeatAt != 0 && now >= r.ackRepeatAt {
		r.repeatAck(now)
	}
	if r.paused && r.bytes <= r.cfg.ResumeThreshold {
		r.backpressure(now) // the threshold was raised (SetThresholds)
	}
	if r.paused && now-r.lastPause >= r.cfg.PauseDuration/2 {
		r.lastPause = now
		r.Stats.PausesSent++
		r.backpressureEvent(r.cfg.PauseDuration)
	}
}

// explicitAck sends an explicit ACK of ackNo-1; false if no buffer was free.
func (r *Receiver) explicitAck() bool {
	r.refreshFast()
	h := seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: r.ackNo.Add(-1)}
	f, ok := r.e.control(&h)
	if ok {
		r.e.out.Low = append(r.e.out.Low, f)
		r.Stats.ExplicitAcksSent++
		r.lastAck = h.Ack
		r.rewake()
	}
	return ok
}

// defaultAckRepeats is AckRepeats' default; a sender whose credit window
// stays full after the repeats probes with dummies until an ACK gets through.
const defaultAckRepeats = 3

// maxAckRepeats is the number of repeats of one explicit ACK (AckRepeats).
func (r *Receiver) maxAckRepeats() int {
	switch n := r.cfg.AckRepeats; {
	case n == 0:
		return defaultAckRepeats
	case n < 0:
		return 0
	default:
		return n
	}
}

// ackRepeatBase is the first repeat interval: a re-notification interval (a
// retransmission round trip), else ackNoTimeout.
func (r *Receiver) ackRepeatBase() int64 {
	if ri := r.cfg.RenotifyInterval; ri > 0 {
		return ri
	}
	return max(r.cfg.AckNoTimeout, 1)
}

// repeatAck sends the last explicit ACK again if it may have been lost: no
// data has arrived since and the ACK has not changed. A sender whose credit
// window that ACK would have opened sends nothing until it arrives, and the
// receiver cannot tell that from a sender with nothing more to send, so the
// repeats are few and back off (base, 2×, 4×).
func (r *Receiver) repeatAck(now int64) {
	if r.pendingAck || r.ackNo.Add(-1) != r.ackRepeatOf || r.ackRepeats >= r.maxAckRepeats() {
		r.ackRepeatAt = 0 // superseded by a newer ACK, or done
		return
	}
	if !r.explicitAck() {
		return // no buffer: try again at the next poll
	}
	r.Stats.AckRepeats++
	r.ackRepeats++
	if r.ackRepeats >= r.maxAckRepeats() {
		r.ackRepeatAt = 0
		return
	}
	r.ackRepeatGap *= 2
	r.ackRepeatAt = now + r.ackRepeatGap
}

// scan handles ackNoTimeout at the head and re-notification of frames still
// missing; it runs only when the earliest such deadline has passed.
func (r *Receiver) scan(now int64) {
	to := r.cfg.AckNoTimeout
	for r.missing > 0 {
		sl := r.slot(r.ackNo)
		if sl.state != slotMissing || now-sl.detectedAt < to {
			break
		}
		r.Stats.AckNoTimeouts++
		r.advanceHead(now)
		r.drain(now)
	}
	r.backpressure(now)
	next := int64(1<<63 - 1)
	ri := r.cfg.RenotifyInterval
	runStart, runLen := seqhdr.Seq(0), 0
	flush := func() {
		if runLen > 0 {
			r.notify(runStart, runLen)
			r.Stats.Renotifies++
			runLen = 0
		}
	}
	seen := 0
	for q := r.ackNo; seen < r.missing && seqhdr.LessEq(q, r.latest); q = q.Next() {
		sl := r.slot(q)
		if sl.state != slotMissing {
			flush()
			continue
		}
		seen++
		next = min(next, sl.detectedAt+to)
		if ri > 0 && ri < to {
			if now-sl.notifiedAt >= r.renotifyAfter(sl) {
				if runLen == 0 {
					runStart = q
				}
				runLen++
				sl.notifiedAt = now
				sl.renotified = min(sl.renotified+1, 255)
			} else {
				flush()
			}
			next = min(next, sl.notifiedAt+r.renotifyAfter(sl))
		}
	}
	flush()
	r.nextCheck = next
}
