package dataplane

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
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
	epoch          time.Time // the worker clock's zero
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
		epoch:  time.Now(),
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
			n, err := w.kick(s)
			if err != nil {
				return err
			}
			pending += n
		}
		for _, s := range w.all {
			w.reclaim(s)
			w.refill(s)
		}
		if moved > 0 || pending > 0 {
			continue
		}
		if err := w.idle(w.downTimeout(w.d.cfg.PollTimeout)); err != nil {
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
			if err := s.Wake(); err != nil && !isDown(err) {
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

// downRetry is how often the worker tries to transmit on a port whose
// interface is down, to notice that it is up again.
const downRetry = time.Millisecond

// isDown reports whether err from a socket operation means its interface is
// down (ENETDOWN) or gone (ENXIO): link state, not a reason to stop.
func isDown(err error) bool {
	return errors.Is(err, unix.ENETDOWN) || errors.Is(err, unix.ENXIO)
}

// now is the worker clock (ns since the worker started).
func (w *worker) now() int64 { return int64(time.Since(w.epoch)) }

// portOf is the port s belongs to, with its counters.
func (w *worker) portOf(s *xdp.Socket) (*Port, *PortCounters) {
	if s.Ifname() == w.d.host.Name {
		return w.d.host, &w.d.stats.Host
	}
	return w.d.link, &w.d.stats.Link
}

// kick makes the kernel transmit what is on s's TX ring and returns how
// many frames are still pending there. An interface that is down (a link
// flap, a NIC reset) is link state, not an error: the port is marked down
// and counted, its frames wait on its TX ring (what does not fit is counted
// as TX ring full; LinkGuardian recovers it), and only every downRetry is a
// transmission tried, until one succeeds and the port is up again. Frames
// pending on a down port are not reported, so the worker can sleep.
func (w *worker) kick(s *xdp.Socket) (int, error) {
	if s.TxPending() == 0 {
		return 0, nil
	}
	p, c := w.portOf(s)
	if p.downSince != 0 {
		now := w.now()
		if now < p.retryAt {
			return 0, nil
		}
		p.retryAt = now + int64(downRetry)
	}
	if err := s.Kick(); err != nil {
		if !isDown(err) {
			return 0, err
		}
		if p.downSince == 0 {
			now := w.now()
			p.downSince, p.retryAt = now, now+int64(downRetry)
			c.DownEvents.Add(1)
			c.Down.Store(true)
			w.d.cfg.Logger.Warn("interface down: holding its frames and retrying until it is up again",
				"dev", p.Name, "err", err)
		}
		return 0, nil
	}
	if p.downSince != 0 {
		down := w.now() - p.downSince
		c.DownNs.Add(down)
		c.Down.Store(false)
		p.downSince = 0
		w.d.cfg.Logger.Info("interface up again", "dev", p.Name, "down_for", time.Duration(down).String())
	}
	return s.TxPending(), nil
}

// downTimeout bounds an idle sleep so that a port that is down is retried.
func (w *worker) downTimeout(timeout time.Duration) time.Duration {
	if w.d.host.downSince != 0 || w.d.link.downSince != 0 {
		return min(timeout, downRetry)
	}
	return timeout
}
