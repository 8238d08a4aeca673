package dataplane

import (
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// ModeForward forwards every frame unchanged both ways (the baseline).
const ModeForward Mode = "forward"

func init() {
	Register(ModeForward, Spec{Hosts: [2]int{1, 1}, Links: [2]int{1, 1}, Workers: true, Default: true, Redirect: true,
		Frames: func(c *Config) (uint64, string, error) {
			if !c.PFC.Enabled {
				return 0, "", nil
			}
			return HostQueueLen, fmt.Sprintf(", the host class queues (%d)", HostQueueLen), nil
		},
		New: Stateless(newForwardPipeline)})
}

// forwardPipeline is mode forward: every frame leaves on the other port,
// unchanged (the baseline bump in the wire). With --pfc (queue not nil)
// host frames wait in class queues gated by the PAUSE/PFC frames the link
// port receives (consumed here, as a MAC consumes them), and a class over
// XOFF sends PFC toward the host (hostpfc.go).
type forwardPipeline struct {
	host, link int
	queue      *ClassQueues
	speed      uint64 // the link's, for received quanta
	w          *Worker
	frame      pfc.Frame
}

func newForwardPipeline(w *Worker) (Pipeline, error) {
	ps := w.Node().Ports()
	f := &forwardPipeline{host: ps.Host, link: ps.Links[0], w: w}
	if w.Config().PFC.Enabled {
		q := NewClassQueues(w.Node())
		f.queue, f.speed = &q, w.Config().PFCLinkSpeed()
	}
	return f, nil
}

func (f *forwardPipeline) Room(port int) int {
	if f.queue == nil {
		return math.MaxInt
	}
	return f.queue.PortRoom(port)
}

func (f *forwardPipeline) Receive(now int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	if f.queue != nil {
		if port == f.host {
			f.queue.Push(f.w, now, descs)
			return
		}
		for _, d := range descs {
			if b := f.w.Bytes(d.Addr, int(d.Len)); pfc.IsMACControl(b) && f.queue.ApplyPFC(now, b, f.speed, &f.frame) {
				tx.Release(d.Addr)
				continue
			}
			tx.Send(f.host, LaneData, d.Addr, int(d.Len))
			tx.Release(d.Addr)
		}
		return
	}
	out := f.link
	if port == f.link {
		out = f.host
	}
	for _, d := range descs {
		tx.Send(out, LaneData, d.Addr, int(d.Len))
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
	for budget := tx.Space(f.link, LaneData); budget > 0; budget-- {
		class, ok := q.Head(now)
		if !ok {
			break
		}
		fr := q.Front(class)
		if fr.Len > bytes {
			break
		}
		bytes -= fr.Len
		q.Pop(class)
		tx.Send(f.link, LaneData, uint64(fr.H), fr.Len)
		tx.Release(uint64(fr.H))
	}
	next := q.Signal(now, tx)
	if !q.Empty() {
		if r, ok := q.Gate.NextResume(now); ok {
			next = min(next, r)
		}
	}
	return next
}

func (*forwardPipeline) Stop() {}
