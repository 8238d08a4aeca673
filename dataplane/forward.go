package dataplane

import (
	"math"

	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// forwardPipeline is mode forward: every frame leaves on the other port,
// unchanged (the baseline bump in the wire). With --pfc (queue not nil)
// host frames wait in class queues gated by the PAUSE/PFC frames the link
// port receives (consumed here, as a MAC consumes them), and a class over
// XOFF sends PFC toward the host (hostpfc.go).
type forwardPipeline struct {
	host, link int
	queue      *classQueues
	speed      uint64 // the link's, for received quanta
	w          *worker
	frame      pfc.Frame
}

func newForwardPipeline(w *worker) (Pipeline, error) {
	ps := w.d.Ports()
	f := &forwardPipeline{host: ps.Host, link: ps.Links[0], w: w}
	if w.d.cfg.PFC.Enabled {
		q := newHostQueues(w.d)
		f.queue, f.speed = &q, w.d.cfg.pfcLinkSpeed()
	}
	return f, nil
}

func (f *forwardPipeline) Room(port int) int {
	if f.queue == nil {
		return math.MaxInt
	}
	return f.queue.portRoom(port)
}

func (f *forwardPipeline) Receive(now int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	if f.queue != nil {
		if port == f.host {
			f.queue.pushHost(f.w, now, descs)
			return
		}
		for _, d := range descs {
			if b := f.w.Bytes(d.Addr, int(d.Len)); pfc.IsMACControl(b) && f.queue.applyPFC(now, b, f.speed, &f.frame) {
				tx.Release(d.Addr)
				continue
			}
			tx.Send(f.host, laneData, d.Addr, int(d.Len))
			tx.Release(d.Addr)
		}
		return
	}
	out := f.link
	if port == f.link {
		out = f.host
	}
	for _, d := range descs {
		tx.Send(out, laneData, d.Addr, int(d.Len))
		tx.Release(d.Addr)
	}
}

// Poll sends queued host frames of classes not paused, highest class
// first, as the link port takes them, then PFC toward the host.
func (f *forwardPipeline) Poll(now int64, tx *Tx) int64 {
	q := f.queue
	if q == nil {
		return math.MaxInt64
	}
	// A rate-limited link port takes what its egress queue holds, frames
	// and bytes: the rest waits here, where PFC can pause its class.
	bytes := tx.ByteSpace(f.link)
	for budget := tx.Space(f.link, laneData); budget > 0; budget-- {
		class, ok := q.head(now)
		if !ok {
			break
		}
		fr := q.front(class)
		if fr.Len > bytes {
			break
		}
		bytes -= fr.Len
		q.pop(class)
		tx.Send(f.link, laneData, uint64(fr.H), fr.Len)
		tx.Release(uint64(fr.H))
	}
	next := q.signalHost(now, tx)
	if !q.empty() {
		if r, ok := q.Gate.NextResume(now); ok {
			next = min(next, r)
		}
	}
	return next
}

func (*forwardPipeline) Stop() {}
