// Package linkguardian is the LinkGuardian protocol core (SIGCOMM'23 §3, Appendix A)
// for a software dataplane: link-local retransmission with in-order (LG) or
// non-blocking (LGNB) delivery.
//
// The core is pure logic. It does no I/O, starts no goroutines, uses no Go
// timers and does not allocate in steady state. Frames are link.Frame: a
// link.Handle (a byte address in the caller's frame memory, e.g. a UMEM
// address) and a length; time is a monotonic nanosecond clock passed in on
// every call. The core reads and writes the bytes [H-seqhdr.MaxOverhead,
// H+Len) of a frame it was given, so frames handed to Send need
// seqhdr.MaxOverhead bytes of headroom (XDP gives 256). It asks its
// link.Memory for seqhdr.MinFrameLen bytes for a control frame.
//
// # One Endpoint per link end
//
// An Endpoint is one end of a link. It holds an optional Sender (this end protects
// the frames it sends onto the link) and an optional Receiver (this end
// protects the frames it receives). Protecting both directions of a link means
// both ends have both; ACKs for the incoming direction then ride on the
// outgoing data frames. An Endpoint with a Receiver and no Sender piggybacks ACKs on
// outgoing host frames with an "unsequenced" data header.
//
// # Worker loop
//
// Per iteration, with now read once from a monotonic clock:
//
//  1. For every frame received from the link: p.Receive(now, f). PAUSE and
//     RESUME link-header frames act on the sender there; an integrator that
//     still exchanges 802.1Qbb frames for LinkGuardian calls p.Pause /
//     p.Resume for them.
//  2. While the host-to-link queue is not empty and p.CanSend(now): if
//     !p.Send(now, f) stop (the frame stays queued; retry next iteration).
//  3. p.Poll(now, queueEmpty): timers (ackNoTimeout, re-notification,
//     explicit ACK and its repeats, dummy, pause refresh). When nothing
//     arrives, sleep no longer than p.NextDeadline(now, queueEmpty).
//  4. Transmit, in this order: p.Out.Pause (PAUSE/RESUME control frames,
//     one for each EvPause/EvResume in p.Out.Events; the peer's Receive
//     applies them), then p.Out.Urgent (loss notifications), p.Out.Retx
//     (retransmitted copies), p.Out.Normal (protected host frames), p.Out.Low
//     (explicit ACKs, dummies).
//  5. Hand p.Out.Deliver to the host side (in order, link header removed).
//  6. Release p.Out.Free (see ownership below). Record p.Out.Events
//     (EvRecovered delays, EvLoss counts) as needed.
//  7. p.Out.Reset().
//
// # Frame ownership
//
// Every frame handed to the core (Receive, Send) or allocated by it
// (Memory.Alloc, for control frames) comes back exactly once, either in
// Out.Deliver (ownership passes to the host path) or in Out.Free (the core is
// done with it). The transmit lists are not ownership transfers: they only ask
// for the bytes to be sent. A frame in the TX buffer is transmitted once in
// Normal and again in Retx for every retransmitted copy (the same Handle,
// possibly several times in one batch) and is released in Out.Free once the
// peer's cumulative ACK passes it. Control frames and pass-through frames are
// in Out.Free in the same iteration they are transmitted. The caller must
// therefore not reuse a freed frame's memory while transmit descriptors that
// refer to it are still outstanding (count submissions and completions per
// frame). The Handle of a frame changes when the core inserts (H-MaxOverhead)
// or strips (H+MaxOverhead) the link header; the caller must map any address
// inside a frame buffer back to its buffer when freeing.
package linkguardian

import (
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EvPause: the receiver's reorder buffer reached pauseThreshold; send a
	// PFC pause of Nanos nanoseconds to the peer (re-sent every Nanos/2 while
	// the condition holds).
	EvPause EventKind = iota + 1
	// EvResume: the reorder buffer fell to resumeThreshold; send a PFC resume
	// (pause with zero quanta) to the peer.
	EvResume
	// EvLoss: a gap of Count frames starting at Seq was detected (loss monitor input).
	EvLoss
	// EvRecovered: lost frame Seq arrived Nanos after its loss was detected
	// (the retransmission delay of Appendix B.1). Count is 0 if it answered
	// the first loss notification, 1 if the frame had to be notified again
	// (every copy of the first round was lost too).
	EvRecovered
	// EvSkipped: ackNoTimeout (or reorder-window overflow) gave up on Seq.
	EvSkipped
)

func (k EventKind) String() string {
	switch k {
	case EvPause:
		return "pause"
	case EvResume:
		return "resume"
	case EvLoss:
		return "loss"
	case EvRecovered:
		return "recovered"
	case EvSkipped:
		return "skipped"
	}
	return "invalid"
}

// Event is an output of the core that is not a frame.
type Event struct {
	Kind  EventKind
	Seq   seqhdr.Seq
	Count int
	Nanos int64
}

// Output collects what one worker iteration must do. The slices keep their
// capacity across Reset, so steady state does not allocate.
type Output struct {
	// Pause holds LinkGuardian's backpressure as PAUSE/RESUME link-header
	// control frames (one per EvPause/EvResume): transmit them first, on
	// the priority lane. They replace the 802.1Qbb frames an integrator
	// sent for the events; one that still does so may ignore this list
	// (the frames are in Free like every control frame).
	Pause   []link.Frame
	Urgent  []link.Frame // loss notifications: transmit first
	Retx    []link.Frame // retransmitted copies: before any normal frame
	Normal  []link.Frame // host frames, protected or passed through
	Low     []link.Frame // explicit ACKs and dummies: transmit last
	Deliver []link.Frame // frames for the host, in order, link header removed
	Free    []link.Frame // frames the core has released
	Events  []Event
}

// Reset empties all lists, keeping their capacity.
func (o *Output) Reset() {
	o.Pause = o.Pause[:0]
	o.Urgent = o.Urgent[:0]
	o.Retx = o.Retx[:0]
	o.Normal = o.Normal[:0]
	o.Low = o.Low[:0]
	o.Deliver = o.Deliver[:0]
	o.Free = o.Free[:0]
	o.Events = o.Events[:0]
}

func newOutput(n int) Output {
	return Output{
		Pause:   make([]link.Frame, 0, 4),
		Urgent:  make([]link.Frame, 0, n),
		Retx:    make([]link.Frame, 0, n),
		Normal:  make([]link.Frame, 0, n),
		Low:     make([]link.Frame, 0, n),
		Deliver: make([]link.Frame, 0, n),
		Free:    make([]link.Frame, 0, 2*n),
		Events:  make([]Event, 0, n),
	}
}

// env is what a Sender and a Receiver of one Endpoint share.
type env struct {
	mem   link.Memory
	out   *Output
	local [6]byte
	peer  [6]byte
	stats *PortStats
}

// control allocates and writes a control frame; it returns false if no
// buffer was available.
func (e *env) control(h *seqhdr.Header) (link.Frame, bool) {
	a, ok := e.mem.Alloc(seqhdr.MinFrameLen)
	if !ok {
		e.stats.AllocFail++
		return link.Frame{}, false
	}
	n, err := seqhdr.PutControl(e.mem.Bytes(a, seqhdr.MinFrameLen), &e.peer, &e.local, h)
	if err != nil {
		panic("linkguardian: invalid control header: " + err.Error())
	}
	f := link.Frame{H: a, Len: n}
	e.out.Free = append(e.out.Free, f)
	return f, true
}
