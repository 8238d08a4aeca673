package linkguardian

import (
	"github.com/linkfabric/linkfabric/seqhdr"
)

// # The catch-up queue
//
// Under a stream faster than the core (the AF_XDP path on veth copies each
// frame twice more than the kernel), HandOff's condition that the core has
// taken in every frame the kernel passed on does not come until the stream
// pauses: after every hole the core keeps the point, and delivers at its
// own speed, for as long as the flow keeps the link busy. The kernel's
// catch-up queue ends that (bpf/c/port.c, lf_lg_rx's queue mode and
// lf_lg_drain; FastPoint.OfferFrame models them):
//
//   - The core, clean (Receiver.Clean) but with frames still waiting for it
//     or deliveries still on their way to the host, asks for queue mode
//     (FastReq in the point it owns) instead of handing the point back.
//   - The kernel starts it at the next in-order data frame q it judges: it
//     takes the point ({owned, FastQueue, q}), keeps q (stripped, as
//     delivered) in its queue, and every next frame at the queue's tail
//     after it. The frames before q are the core's, as always.
//   - The core finishes them: once it has taken in every frame the kernel
//     handed it before q (KernelQueue.QToGo), it knows the sender sent every
//     frame before q (QueuedFrom: one it has not seen was lost, as a dummy
//     naming q−1 would say). Data frames at or after q and dummies naming
//     one that reach it meanwhile (the kernel gave the point back, below)
//     are kept from the receiver (Keep: held, or dropped past HeldMax).
//   - Clean with ackNo q and its deliveries gone, the core takes the point
//     as the kernel's (Receiver.HandOffQueued; handed) and delivers the
//     queue in the kernel (KernelQueue.Drain), after everything it delivered
//     itself; the held frames go to the receiver then, in order, after it.
//     When the queue is empty it swaps {owned, FastQueue, t} for {owned,
//     t}: the usual fast path.
//   - A frame the queue cannot take (out of order: a hole, a duplicate; a
//     full queue) makes the kernel give the point to the core with
//     FastQueue kept, like any other hand-over. The receiver claims as
//     always and adopts the tail t (the queued frames count as delivered:
//     they will be, before anything after them); the core delivers the
//     queue to t (BeforeDeliver) before anything it delivers itself, then
//     clears FastQueue.
//
// ACKs: in queue mode the kernel's send path piggybacks QAck instead of the
// point's serial − 1: the core's ackNo − 1 while it finishes (the queue's
// tail would acknowledge frames before q the core may still miss), then
// (QAck 0) the tail's, once every frame before the queue is delivered.
//
// Why nothing is delivered twice or out of order: the frames before q are
// the core's alone and all delivered before HandOffQueued; those from q to
// the tail are the queue's alone (the kernel took them instead of passing
// them on; a copy of one reaching the core after the claim is before the
// point, a duplicate); those after the tail are the core's again after a
// claim, delivered only once the queue is empty. The drain's deliveries
// reach the host before the drain returns (the kernel flushes a run's
// redirects before it ends), so the kernel's direct deliveries after the
// swap, and the core's after a settle, come after them.

// KernelQueue is the kernel's catch-up queue as the core uses it: the words
// the kernel keeps and the drain. The dataplane maps the XDP program's
// (package bpf); QueueModel is the simulated link's.
type KernelQueue interface {
	// QStart is the serial queue mode last started at.
	QStart() seqhdr.Seq
	// QHead is the serial the drain delivers next.
	QHead() seqhdr.Seq
	// QToGo is how many frames the kernel had handed the core (on the
	// queue it judges) when queue mode last started.
	QToGo() uint64
	// Drain delivers up to n queued frames to the host, in order, and
	// returns how many it delivered.
	Drain(n int) (int, error)
	// SkipTo moves the drain's next serial to q without delivering what
	// is before it (frames the core delivered itself). Only while no
	// drain runs.
	SkipTo(q seqhdr.Seq)
}

// CatchUpEnv is what the integrator tells CatchUp.Step about its side.
type CatchUpEnv struct {
	// Live: the kernel judges the link's frames and the link session
	// accepts the peer's; Reset: the session is being reset (it accepts
	// nothing).
	Live, Reset bool
	// Wait: the core's deliveries must not be handed over yet (the
	// dataplane's host gate holds some).
	Wait bool
	// DeliveriesOut: frames the core delivered have not all left for the
	// host; RxWaiting: frames the kernel handed the core wait unread.
	DeliveriesOut, RxWaiting bool
	// TakenIn is how many frames of those the kernel handed it the core
	// has taken in (read or seen dropped), to compare with QToGo; only
	// read while Active.
	TakenIn uint64
}

// CatchUpStats are the catch-up queue's counters on the core's side.
type CatchUpStats struct {
	Reqs           uint64 `json:"requests"`        // queue mode asked for
	Withdrawn      uint64 `json:"withdrawn"`       // requests taken back (the usual hand-over came first)
	Starts         uint64 `json:"starts"`          // queue mode started (as the core saw it)
	HandOffs       uint64 `json:"handoffs"`        // the point taken as the kernel's after finishing (HandOffQueued)
	Settles        uint64 `json:"settles"`         // queue mode ended by a claim or a reset, the queue drained
	Held           uint64 `json:"held"`            // frames kept from the receiver while it finished
	HeldDropped    uint64 `json:"held_dropped"`    // frames beyond HeldMax (recovered as losses)
	DummiesDropped uint64 `json:"dummies_dropped"` // dummies naming a queued frame, dropped while finishing
	Drains         uint64 `json:"drain_runs"`      // Drain calls
	Drained        uint64 `json:"drained"`         // frames they delivered
	DrainErrs      uint64 `json:"drain_errors"`    // Drain calls that delivered nothing or failed (must stay 0)
	Skipped        uint64 `json:"skipped"`         // starts behind frames the core had delivered itself (reconcile)
}

// States of a CatchUp.
const (
	catchOff    = iota // the usual hand-over
	catchReq           // FastReq set: the kernel starts at its next frame
	catchFinish        // the kernel queues from start; the core finishes before it
	catchHanded        // the receiver is handed: the queue is being delivered
)

// Defaults of a CatchUp's bounds.
const (
	// DefaultCatchUpHeld bounds the frames held while the core finishes.
	DefaultCatchUpHeld = 2048
	// DefaultCatchUpBatch is the most frames one Drain call asks for.
	DefaultCatchUpBatch = 256
	// DefaultCatchUpEvery is how soon the core looks again while the
	// kernel queues (queued frames wake nobody).
	DefaultCatchUpEvery = int64(50_000)
)

// CatchUp runs the core's side of the catch-up queue for an endpoint whose
// receiver has a fast path (SetFast). The integrator calls Keep for each
// link frame before Receive, BeforeDeliver before it hands the endpoint's
// deliveries to the host, and Step where it would call Receiver.HandOff.
type CatchUp struct {
	p *Endpoint
	q KernelQueue
	// HeldMax, Batch and Every: DefaultCatchUp* unless set.
	HeldMax, Batch int
	Every          int64
	Stats          CatchUpStats

	state int
	start seqhdr.Seq
	noted bool // the receiver was told start (QueuedFrom)
	held  []Frame
}

// NewCatchUp returns the catch-up driver of p's receiver over queue q.
func NewCatchUp(p *Endpoint, q KernelQueue) *CatchUp {
	return &CatchUp{p: p, q: q, HeldMax: DefaultCatchUpHeld, Batch: DefaultCatchUpBatch, Every: DefaultCatchUpEvery}
}

// Active reports whether queue mode is asked for or on: the integrator
// looks again within Every (queued frames wake nobody).
func (c *CatchUp) Active() bool { return c.state != catchOff }

// point is the receiver's fast path point.
func (c *CatchUp) point() *FastPoint { return c.p.R.fast }

// request asks the kernel for queue mode if the point is the core's and
// carries no request or queue yet.
func (c *CatchUp) request() {
	fp := c.point()
	v := fp.Point.Load()
	if v&(FastOwned|FastReq|FastQueue) != 0 {
		return
	}
	c.ackBound()
	if fp.Point.CompareAndSwap(v, v|FastReq) {
		c.state = catchReq
		c.Stats.Reqs++
	}
}

// ackBound keeps the ACK the kernel piggybacks in queue mode at the core's.
func (c *CatchUp) ackBound() {
	if fp := c.point(); fp.QAck != nil {
		fp.QAck.Store(FastAckValid | uint64(c.p.R.ackNo.Add(-1)))
	}
}

// clearAck lets the kernel piggyback the tail's ACK again.
func (c *CatchUp) clearAck() {
	if fp := c.point(); fp.QAck != nil {
		fp.QAck.Store(0)
	}
}

// withdraw takes a request back; false if the kernel started queue mode.
func (c *CatchUp) withdraw() bool {
	pt := c.point().Point
	for {
		v := pt.Load()
		if v&FastReq == 0 && v&FastQueue != 0 {
			return false
		}
		if v&FastReq == 0 || pt.CompareAndSwap(v, v&^FastReq) {
			c.state = catchOff
			c.clearAck()
			c.Stats.Withdrawn++
			return true
		}
	}
}

// started reports whether the kernel started queue mode and, the first time
// it sees it, notes the start.
func (c *CatchUp) started(now int64) bool {
	if c.state != catchReq {
		return c.state >= catchFinish
	}
	if c.point().Point.Load()&FastQueue == 0 {
		return false
	}
	c.state, c.start, c.noted = catchFinish, c.q.QStart(), false
	c.Stats.Starts++
	c.reconcile(now)
	return true
}

// reconcile makes the receiver and the queue agree on where the queue
// starts. Frames reach the core out of the order the sender numbered them
// (on veth the worker's frames overtake the kernel's redirects, which leave
// only at the end of their NAPI poll): before it saw queue mode start, the
// core may have heard of frames at or after the start (a dummy, a frame
// overtaking), buffered some, even delivered some (retransmitted copies
// overtaking their originals, which the kernel then queued). What the core
// delivered is skipped in the queue (the tail moved up to it if the kernel
// has not queued that far: the originals then reach the core as
// duplicates); what it buffered at or after the start waits with the held
// frames; what it missed there is forgotten (the queue has it, or will, or
// the kernel gives the point back at the hole).
func (c *CatchUp) reconcile(now int64) {
	r := c.p.R
	if seqhdr.Diff(r.ackNo, c.start) > 0 {
		pt := c.point().Point
		for {
			v := pt.Load()
			if seqhdr.Diff(r.ackNo, seqhdr.Seq(v&FastSeqMask)) <= 0 ||
				pt.CompareAndSwap(v, v&^FastSeqMask|uint64(r.ackNo)) {
				break
			}
		}
		c.q.SkipTo(r.ackNo)
		c.start = r.ackNo
		c.Stats.Skipped++
	}
	c.held = r.truncateAt(c.start, c.held)
	r.backpressure(now)
}

// Keep reports whether link frame f (bytes b) is kept from the receiver
// (held: it goes to the receiver after the hand-over) or dropped (freed on
// p.Out.Free), while the core finishes before the queue: a data frame at
// or after the start, a dummy naming one.
func (c *CatchUp) Keep(now int64, f Frame, b []byte) bool {
	if c.state == catchOff || !c.started(now) || c.state != catchFinish {
		return false
	}
	h, err := seqhdr.ParseFrame(b)
	if err != nil || seqhdr.Diff(h.Seq, c.start) < 0 {
		return false
	}
	switch {
	case h.Type == seqhdr.TypeData && !h.Unseq:
		if len(c.held) < c.HeldMax {
			c.held = append(c.held, f)
			c.Stats.Held++
			return true
		}
		c.Stats.HeldDropped++
	case h.Type == seqhdr.TypeDummy:
		c.Stats.DummiesDropped++
	default:
		return false
	}
	c.p.Out.Free = append(c.p.Out.Free, f)
	return true
}

// drain delivers the queue toward its tail in at most runs Drain calls; it
// reports whether the queue is empty.
func (c *CatchUp) drain(runs int) bool {
	pt := c.point().Point
	for range runs {
		v := pt.Load()
		n := seqhdr.Diff(seqhdr.Seq(v&FastSeqMask), c.q.QHead())
		if v&FastQueue == 0 || n <= 0 {
			return true
		}
		got, err := c.q.Drain(min(n, c.Batch))
		c.Stats.Drains++
		c.Stats.Drained += uint64(got)
		if err != nil || got == 0 {
			c.Stats.DrainErrs++
			return false
		}
	}
	return false
}

// settle ends queue mode after a claim (the kernel queues nothing more: it
// does not own the point): the queue is delivered to its tail and
// FastQueue cleared. A queue that cannot be delivered stays (DrainErrs) and
// settle reports false.
func (c *CatchUp) settle() bool {
	if !c.drain(1 << 20) {
		return false
	}
	pt := c.point().Point
	for {
		v := pt.Load()
		if v&FastOwned != 0 || pt.CompareAndSwap(v, v&^(FastQueue|FastReq)) {
			break
		}
	}
	c.state = catchOff
	c.clearAck()
	c.Stats.Settles++
	return true
}

// BeforeDeliver delivers what is left of the queue if the receiver claimed
// the point back (its deliveries come after the queue). It reports false
// if the queue could not be delivered: the caller must not deliver.
func (c *CatchUp) BeforeDeliver() bool {
	if c.state != catchHanded || c.p.R.handed {
		return true
	}
	return c.settle()
}

// Step moves the catch-up queue on, or gives the point back the usual way
// (Receiver.HandOff) when the conditions allow: the integrator calls it
// where it would call HandOff, with env as it stands.
func (c *CatchUp) Step(now int64, env CatchUpEnv) {
	r := c.p.R
	if c.state == catchReq || c.state == catchFinish {
		c.ackBound()
	}
	switch {
	case c.state == catchOff:
		if env.Wait || r.handed || !env.Live {
			return
		}
		if env.DeliveriesOut || env.RxWaiting {
			// Under a stream faster than the core this lasts until
			// the stream pauses: ask for the queue instead (in mode
			// lg: lgnb delivers out of order, monitor gives up).
			if r.Clean() && r.cfg.Mode == ModeLG {
				c.request()
			}
			return
		}
		r.HandOff(now)
	case c.state == catchReq && !c.started(now):
		// Not started: take the request back when the usual hand-over
		// is possible, or the kernel path went away.
		if !env.Live || (!env.Wait && !env.DeliveriesOut && !env.RxWaiting && r.Clean()) {
			if c.withdraw() && env.Live {
				r.HandOff(now)
			}
		}
	case c.state == catchFinish:
		if env.Reset {
			// The receiver is reset: its frames before start are
			// forgotten; the queue is delivered as it is.
			pt := c.point().Point
			for v := pt.Load(); v&FastOwned != 0 && !pt.CompareAndSwap(v, v&^FastOwned); v = pt.Load() {
			}
			c.p.Out.Free = append(c.p.Out.Free, c.held...)
			c.Stats.HeldDropped += uint64(len(c.held))
			c.held = c.held[:0]
			c.settle()
			return
		}
		if !c.noted && int64(env.TakenIn-c.q.QToGo()) >= 0 {
			c.noted = true
			r.QueuedFrom(now, c.start)
		}
		if !c.noted || env.Wait || r.ackNo != c.start || env.DeliveriesOut || !r.HandOffQueued(now) {
			return
		}
		c.state = catchHanded
		c.clearAck() // every frame before the queue is delivered: the tail's ACK holds
		c.Stats.HandOffs++
		held := c.held
		c.held = c.held[:0]
		for _, f := range held {
			c.p.Receive(now, f)
		}
	case c.state == catchHanded:
		if !r.handed {
			c.settle()
			return
		}
		if c.drain(4) {
			c.finish()
		}
	}
}

// finish swaps queue mode for the usual fast path once the queue is empty;
// a frame queued meanwhile fails the swap and is delivered at the next Step.
func (c *CatchUp) finish() {
	pt := c.point().Point
	v := pt.Load()
	if v&FastOwned == 0 || v&FastQueue == 0 || seqhdr.Seq(v&FastSeqMask) != c.q.QHead() {
		return
	}
	if pt.CompareAndSwap(v, v&^FastQueue) {
		c.state = catchOff
	}
}
