package linkguardian

import (
	"errors"

	"github.com/linkfabric/linkfabric/seqhdr"
)

// FastVerdict is what the kernel's receive path does with a frame
// (FastPoint.OfferFrame).
type FastVerdict int

const (
	// FastToCore: the frame goes on to the core (AF_XDP).
	FastToCore FastVerdict = iota
	// FastDelivered: the kernel delivers it to the host itself.
	FastDelivered
	// FastQueued: the kernel keeps it in its catch-up queue.
	FastQueued
)

// QueueModel is the kernel's catch-up queue in Go memory (lg_rx_queue and
// its words in bpf/c/port.c) for the simulated link: FastPoint.OfferFrame,
// with Queue set, keeps frames in it as lf_lg_rx's queue mode does, and
// Drain hands them to Deliver as lf_lg_drain does. It implements
// KernelQueue.
type QueueModel struct {
	// Deliver takes a drained frame, link header stripped.
	Deliver func(b []byte)
	slots   [][]byte
	start   seqhdr.Seq
	head    seqhdr.Seq
	toGo    uint64 // frames OfferFrame passed to the core
	qToGo   uint64
	// Queued, Drained and Full count as the kernel's counters do.
	Queued, Drained, Full uint64
}

// NewQueueModel returns a queue of n slots (a power of two).
func NewQueueModel(n int, deliver func([]byte)) (*QueueModel, error) {
	if n < 2 || n&(n-1) != 0 || n > seqhdr.Space/4 {
		return nil, errors.New("linkguardian: queue slots must be a power of two from 2 to a quarter of the sequence space")
	}
	return &QueueModel{Deliver: deliver, slots: make([][]byte, n)}, nil
}

// QStart implements KernelQueue.
func (m *QueueModel) QStart() seqhdr.Seq { return m.start }

// QHead implements KernelQueue.
func (m *QueueModel) QHead() seqhdr.Seq { return m.head }

// QToGo implements KernelQueue.
func (m *QueueModel) QToGo() uint64 { return m.qToGo }

// SkipTo implements KernelQueue.
func (m *QueueModel) SkipTo(q seqhdr.Seq) { m.head = q }

// ToGo is how many frames OfferFrame passed to the core.
func (m *QueueModel) ToGo() uint64 { return m.toGo }

// Drain implements KernelQueue for point fp's queue: lf_lg_drain run n
// times.
func (m *QueueModel) drain(fp *FastPoint, n int) (int, error) {
	got := 0
	for range n {
		v := fp.Point.Load()
		if v&FastQueue == 0 || seqhdr.Seq(v&FastSeqMask) == m.head {
			continue // drain_idle
		}
		b := m.slots[int(m.head)&(len(m.slots)-1)]
		m.head = m.head.Next()
		m.Drained++
		got++
		if m.Deliver != nil {
			m.Deliver(b)
		}
	}
	return got, nil
}

// modelQueue binds a QueueModel to its point for KernelQueue.
type modelQueue struct {
	*QueueModel
	fp *FastPoint
}

func (q modelQueue) Drain(n int) (int, error) { return q.drain(q.fp, n) }

// KernelQueue returns the point's queue model as the core uses it (nil
// without one).
func (fp *FastPoint) KernelQueue() KernelQueue {
	if fp.Queue == nil {
		return nil
	}
	return modelQueue{fp.Queue, fp}
}

// OfferFrame is the kernel's rule (bpf/c/port.c, lf_lg_rx with its queue
// mode, and lf_port's count of what goes to the core) for the simulated
// link: what the kernel does with link frame b. Without Queue it is Offer.
func (fp *FastPoint) OfferFrame(b []byte) FastVerdict {
	m := fp.Queue
	if m == nil {
		if fp.Offer(b) {
			return FastDelivered
		}
		return FastToCore
	}
	toCore := func() FastVerdict {
		m.toGo++ // lf_port's count of what reaches the core
		return FastToCore
	}
	q, flags, ok := fastDataFrame(b)
	if !ok {
		return toCore()
	}
	old := fp.Point.Load()
	if old&FastOwned != 0 && old&FastQueue == 0 {
		if fp.Offer(b) {
			return FastDelivered
		}
		return toCore()
	}
	if old&FastOwned == 0 {
		// Q1: start queue mode at this frame, if asked.
		if old&FastReq == 0 || old&FastQueue != 0 {
			return toCore()
		}
		m.start, m.head, m.qToGo = q, q, m.toGo
		n := FastOwned | FastQueue | uint64(q)
		if !fp.Point.CompareAndSwap(old, n) {
			return toCore()
		}
		old = n
	}
	// Q2 / Q3.
	t := seqhdr.Seq(old & FastSeqMask)
	full := seqhdr.Diff(t, m.head) >= len(m.slots)
	var body []byte
	if t == q && !full {
		c := append([]byte(nil), b...)
		if _, off, n, err := seqhdr.Strip(c, 0, len(c)); err == nil {
			body = c[off : off+n]
		}
	}
	if body == nil {
		if fp.Point.CompareAndSwap(old, old&^FastOwned) && full {
			m.Full++
		}
		return toCore()
	}
	m.slots[int(t)&(len(m.slots)-1)] = body
	if !fp.Point.CompareAndSwap(old, old&^FastSeqMask|uint64(t.Next())) {
		return toCore()
	}
	fp.storePeerAck(b, flags)
	m.Queued++
	return FastQueued
}
