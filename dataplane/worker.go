package dataplane

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/xdp"
)

// worker is the loop that owns every ring of both ports. One goroutine, locked
// to its OS thread; nothing in it allocates per frame.
type worker struct {
	d      *Dataplane
	umem   *xdp.Umem
	free   *xdp.FreeList
	descs  []xdp.Desc
	addrs  []uint64
	poller *xdp.Poller
	all    []*xdp.Socket
	// Frames received on a host socket leave on linkTx and vice versa.
	hostTx, linkTx *xdp.Socket
	busy           bool
}

func newWorker(d *Dataplane) *worker {
	w := &worker{
		d:      d,
		umem:   d.umem,
		free:   d.umem.NewFreeList(),
		descs:  make([]xdp.Desc, d.cfg.Batch),
		addrs:  make([]uint64, d.cfg.Batch),
		hostTx: d.host.socks[0],
		linkTx: d.link.socks[0],
		busy:   d.cfg.BusyPoll,
	}
	w.all = append(append(w.all, d.host.socks...), d.link.socks...)
	w.poller = xdp.NewPoller(w.all...)
	return w
}

func (w *worker) run(ctx context.Context) error {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	nhost := len(w.d.host.socks)
	st := &w.d.stats
	for _, s := range w.all {
		w.refill(s)
	}
	for !stop.Load() {
		st.Loops.Add(1)
		moved := 0
		for i, s := range w.all {
			n := s.Receive(w.descs)
			if n == 0 {
				continue
			}
			moved += n
			if i < nhost {
				w.forward(w.descs[:n], &st.Host, w.linkTx, &st.Link)
			} else {
				w.forward(w.descs[:n], &st.Link, w.hostTx, &st.Host)
			}
		}
		pending := 0
		for _, s := range []*xdp.Socket{w.hostTx, w.linkTx} {
			if s.TxPending() > 0 {
				if err := s.Kick(); err != nil {
					return err
				}
				pending += s.TxPending()
			}
		}
		for _, s := range w.all {
			w.reclaim(s)
			w.refill(s)
		}
		if moved > 0 || pending > 0 {
			continue
		}
		if err := w.idle(w.d.cfg.PollTimeout); err != nil {
			return err
		}
	}
	return nil
}

// idle waits for work. In busy-poll mode it wakes every socket (which
// busy-polls the device) and returns at once; otherwise it sleeps in ppoll
// until a socket is readable or timeout passes.
func (w *worker) idle(timeout time.Duration) error {
	if w.busy {
		for _, s := range w.all {
			if err := s.Wake(); err != nil {
				return err
			}
		}
		return nil
	}
	w.d.stats.Polls.Add(1)
	_, err := w.poller.Wait(timeout)
	return err
}

// forward moves a received batch unchanged to the TX ring of out.
func (w *worker) forward(descs []xdp.Desc, in *PortCounters, out *xdp.Socket, outc *PortCounters) {
	bytes := countRx(in, descs)
	sent := w.transmit(out, descs)
	outc.TX.Frames.Add(uint64(sent))
	if sent < len(descs) {
		outc.TX.Dropped.Add(uint64(len(descs) - sent))
		for _, d := range descs[sent:] {
			bytes -= uint64(d.Len)
		}
	}
	outc.TX.Bytes.Add(bytes)
}

// countRx counts a received batch on c and returns its bytes.
func countRx(c *PortCounters, descs []xdp.Desc) uint64 {
	var bytes uint64
	for i := range descs {
		bytes += uint64(descs[i].Len)
	}
	c.RX.Frames.Add(uint64(len(descs)))
	c.RX.Bytes.Add(bytes)
	return bytes
}

// transmit places descs on out's TX ring, returning what did not fit to the
// free list. It returns how many were placed.
func (w *worker) transmit(out *xdp.Socket, descs []xdp.Desc) int {
	sent := out.Transmit(descs)
	for _, d := range descs[sent:] {
		w.free.Push(w.umem.FrameBase(d.Addr))
	}
	return sent
}

// reclaim returns frames the kernel finished transmitting to the free list.
func (w *worker) reclaim(s *xdp.Socket) {
	for {
		n := s.Complete(w.addrs)
		if n == 0 {
			return
		}
		for _, a := range w.addrs[:n] {
			w.free.Push(w.umem.FrameBase(a))
		}
	}
}

// refill tops up s's fill ring from the free list.
func (w *worker) refill(s *xdp.Socket) {
	for {
		want := min(s.FillFree(), len(w.addrs))
		if want == 0 {
			return
		}
		n := w.free.PopN(w.addrs[:want])
		if n == 0 {
			w.d.stats.FramesExhausted.Add(1)
			return
		}
		s.Fill(w.addrs[:n])
	}
}
