package dataplane

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/linkcrc"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// Pipeline is what a link's mode does with frames: forward, lg/lgnb/monitor,
// and later cells and FEC. The worker owns every ring, the kick order,
// completion, refill, idling and the clock; a pipeline owns no loop, no
// socket and no timer. Everything is called from the worker's one goroutine.
//
// Ports are numbered as in the node: the host port first (portHost), then
// the link ports (portLink is the first; modes with one link use only it). A
// lane is one of a port's AF_XDP sockets (its receive queue). On a link port
// with two or more queues, lane 1 is the priority lane (lanePrio): it is
// read first and kicked first, at both ends.
type Pipeline interface {
	// Room is how many frames the pipeline takes from port now. The worker
	// receives no more, and does not wake for a port without room.
	Room(port int) int
	// Receive takes a batch received on a lane of port. The pipeline owns
	// each frame: it sends it (tx.Send) and releases it (tx.Release), now
	// or later.
	Receive(now int64, port, lane int, descs []xdp.Desc, tx *Tx)
	// Poll runs the pipeline's queues and timers at now and returns when its
	// next timer is due (math.MaxInt64: none).
	Poll(now int64, tx *Tx) (next int64)
	// Stop is called once when the worker ends (final statistics).
	Stop()
}

// Port numbers of a node, and lanes of a port.
const (
	portHost = 0
	portLink = 1

	laneData = 0
	lanePrio = 1
)

// Tx collects what a pipeline sends and releases in one loop iteration; the
// worker places it on the TX rings (priority lanes of link ports first, the
// host port last) and frees what is released once no descriptor refers to it.
type Tx struct {
	w     *worker
	lists [][][]xdp.Desc // per port, per lane
	rel   []uint64
	n     int // descriptors queued this iteration
}

// Send queues frame (addr, n bytes) for port's lane. A lane the port does
// not have falls back to its data lane.
func (t *Tx) Send(port, lane int, addr uint64, n int) {
	l := t.lists[port]
	if lane >= len(l) {
		lane = laneData
	}
	l[lane] = append(l[lane], xdp.Desc{Addr: addr, Len: uint32(n)})
	t.n++
}

// Release ends the pipeline's hold on a frame (see frameRefs).
func (t *Tx) Release(addr uint64) { t.rel = append(t.rel, addr) }

// Space is how many more descriptors port's lane can take this iteration.
func (t *Tx) Space(port, lane int) int {
	l := t.lists[port]
	if lane >= len(l) {
		lane = laneData
	}
	return t.w.ports[port].socks[lane].TxFree() - len(l[lane])
}

// Lanes is the number of lanes of port.
func (t *Tx) Lanes(port int) int { return len(t.lists[port]) }

// Alloc takes a free UMEM frame for a frame the pipeline builds (a control
// frame); it returns the address to write at, or false if none is free.
func (t *Tx) Alloc() (uint64, bool) {
	a, ok := t.w.refs.alloc()
	if !ok {
		return 0, false
	}
	return a + uint64(t.w.umem.DataOffset()), true
}

// worker is the loop that owns every ring of the node's ports. One
// goroutine, locked to its OS thread; nothing in it allocates per frame.
type worker struct {
	d        *Dataplane
	umem     *xdp.Umem
	refs     *frameRefs
	ports    []*Port
	counters []*PortCounters
	// rx is the receive order (link priority lane first); kick the kick
	// order (link priority lane, link data lane, host port). all holds rx's
	// sockets in the same order: the poller's socket i is rx[i]'s.
	rx     []lane
	kick   []lane
	all    []*xdp.Socket
	poller *xdp.Poller
	descs  []xdp.Desc
	addrs  []uint64
	tx     Tx
	busy   bool
	// laneFrames counts the frames placed on each lane's TX ring (read by
	// pipelines for their statistics, in the worker's goroutine).
	laneFrames [][]uint64
	// sealed says which ports' frames carry the integrity trailer
	// (integrity.go), counted in integrity.
	sealed    []bool
	integrity *IntegrityStats
	epoch     time.Time // the worker clock's zero
}

type lane struct {
	port, lane int
	s          *xdp.Socket
}

func newWorker(d *Dataplane) *worker {
	w := &worker{
		d:        d,
		umem:     d.umem,
		refs:     newFrameRefs(d.umem),
		ports:    []*Port{d.host, d.link},
		counters: []*PortCounters{&d.stats.Host, &d.stats.Link},
		descs:    make([]xdp.Desc, d.cfg.Batch),
		addrs:    make([]uint64, d.cfg.Batch),
		busy:     d.cfg.BusyPoll,
		epoch:    time.Now(),
	}
	n := len(w.ports)
	w.sealed = make([]bool, n)
	if d.cfg.Mode != ModeForward && d.cfg.LG.Integrity != linkcrc.Off {
		for p := portLink; p < n; p++ {
			w.sealed[p] = true
		}
		w.integrity = &d.lgStats.Integrity
	}
	w.tx.w = w
	w.tx.lists = make([][][]xdp.Desc, n)
	w.laneFrames = make([][]uint64, n)
	for p, port := range w.ports {
		w.tx.lists[p] = make([][]xdp.Desc, len(port.socks))
		w.laneFrames[p] = make([]uint64, len(port.socks))
		for l := range port.socks {
			w.tx.lists[p][l] = make([]xdp.Desc, 0, 4*d.cfg.Batch)
		}
	}
	add := func(list []lane, p, l int) []lane {
		return append(list, lane{port: p, lane: l, s: w.ports[p].socks[l]})
	}
	// Priority lanes of every link port first, then their other lanes, the
	// host port last.
	for p := portLink; p < n; p++ {
		if len(w.ports[p].socks) > 1 {
			w.rx = add(w.rx, p, lanePrio)
			w.kick = add(w.kick, p, lanePrio)
		}
	}
	for p := portLink; p < n; p++ {
		for l := range w.ports[p].socks {
			if l != lanePrio || len(w.ports[p].socks) == 1 {
				w.rx = add(w.rx, p, l)
			}
		}
		w.kick = add(w.kick, p, laneData)
	}
	for l := range w.ports[portHost].socks {
		w.rx = add(w.rx, portHost, l)
	}
	w.kick = add(w.kick, portHost, laneData)
	for _, r := range w.rx {
		w.all = append(w.all, r.s) // the poller's socket i is w.rx[i]'s
	}
	w.poller = xdp.NewPoller(w.all...)
	return w
}

// Bytes returns n bytes of UMEM at address a.
func (w *worker) Bytes(a uint64, n int) []byte { return w.umem.Bytes(a, uint32(n)) }

func (w *worker) run(ctx context.Context, p Pipeline) error {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	defer p.Stop()
	st := &w.d.stats
	for _, s := range w.all {
		w.refill(s)
	}
	for !stop.Load() {
		st.Loops.Add(1)
		now := w.now()
		moved := 0
		for _, r := range w.rx {
			room := min(p.Room(r.port), len(w.descs))
			if room <= 0 {
				continue
			}
			n := r.s.Receive(w.descs[:room])
			if n == 0 {
				continue
			}
			moved += n
			countRx(w.counters[r.port], w.descs[:n])
			for _, d := range w.descs[:n] {
				w.refs.hold(d.Addr)
			}
			if got := w.checkRx(r.port, w.descs[:n]); len(got) > 0 {
				p.Receive(now, r.port, r.lane, got, &w.tx)
			}
		}
		next := p.Poll(now, &w.tx)
		queued := w.tx.n
		w.flush()

		pending := 0
		for _, k := range w.kick {
			n, err := w.kickLane(k)
			if err != nil {
				return err
			}
			pending += n
		}
		for _, s := range w.all {
			w.reclaim(s)
			w.refill(s)
		}
		if moved > 0 || queued > 0 || pending > 0 {
			continue
		}
		// A port without room takes no frames: do not wake for it (its
		// socket stays readable, so polling it would spin while the
		// pipeline waits for ACKs or a resume).
		for i, r := range w.rx {
			w.poller.WantRead(i, p.Room(r.port) > 0)
		}
		// Idle: sleep until a frame arrives or the pipeline's next timer is
		// due. Spinning instead would starve the other processes of a
		// two-core machine.
		timeout := w.downTimeout(w.d.cfg.PollTimeout)
		if next != math.MaxInt64 {
			timeout = min(timeout, max(time.Duration(next-now), minTimerSleep))
		}
		if err := w.idle(timeout); err != nil {
			return err
		}
	}
	return nil
}

// minTimerSleep is the shortest sleep of an idle worker whose next timer is
// due (or overdue: a control frame found no free UMEM frame).
const minTimerSleep = 2 * time.Microsecond

// flush places the queued descriptors on their TX rings, counting each
// placed one as outstanding and what did not fit as dropped (a link frame
// is then recovered like a loss), then applies the releases.
func (w *worker) flush() {
	for _, k := range w.kick {
		lists := w.tx.lists[k.port]
		// The host port and a link port without a priority lane send
		// on lane 0 only; other lanes of a port fall back to it in Send.
		list := lists[k.lane]
		if len(list) == 0 {
			continue
		}
		w.sealTx(k.port, list)
		n := k.s.Transmit(list)
		var bytes uint64
		for _, d := range list[:n] {
			w.refs.sent(d.Addr)
			bytes += uint64(d.Len)
		}
		w.laneFrames[k.port][k.lane] += uint64(n)
		c := w.counters[k.port]
		c.TX.Frames.Add(uint64(n))
		c.TX.Bytes.Add(bytes)
		if n < len(list) {
			c.TX.Dropped.Add(uint64(len(list) - n))
		}
		lists[k.lane] = list[:0]
	}
	for _, a := range w.tx.rel {
		w.refs.release(a)
	}
	w.tx.rel = w.tx.rel[:0]
	w.tx.n = 0
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

// reclaim uncounts the descriptors the kernel finished transmitting.
func (w *worker) reclaim(s *xdp.Socket) {
	for {
		n := s.Complete(w.addrs)
		if n == 0 {
			return
		}
		for _, a := range w.addrs[:n] {
			w.refs.completed(a)
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
		n := w.refs.free.PopN(w.addrs[:want])
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

// kickLane makes the kernel transmit what is on a lane's TX ring and returns
// how many frames are still pending there. An interface that is down (a
// link flap, a NIC reset) is link state, not an error: the port is marked
// down and counted, its frames wait on its TX ring (what does not fit is
// counted as TX dropped; LinkGuardian recovers it), and only every downRetry
// is a transmission tried, until one succeeds and the port is up again.
// Frames pending on a down port are not reported, so the worker can sleep.
func (w *worker) kickLane(k lane) (int, error) {
	s := k.s
	if s.TxPending() == 0 {
		return 0, nil
	}
	p, c := w.ports[k.port], w.counters[k.port]
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
	for _, p := range w.ports {
		if p.downSince != 0 {
			return min(timeout, downRetry)
		}
	}
	return timeout
}
