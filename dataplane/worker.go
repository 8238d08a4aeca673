package dataplane

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// Pipeline is what a link's mode does with frames: forward, lg/lgnb/monitor,
// and later cells and FEC. The worker owns every ring, the kick order,
// completion, refill, idling and the clock; a pipeline owns no loop, no
// socket and no timer. Everything is called from the worker's one goroutine.
//
// Ports are numbered as in the node: the host port first if there is one,
// then the link ports (Ports, from Tx.Ports or Dataplane.Ports). A lane is
// one of a port's AF_XDP sockets (its receive queue). On a link port with
// two or more queues (RX and TX), lane 1 is the priority lane (LanePrio):
// it is read first and placed first, at both ends, and kicked first except
// in mode cells (KickDeliveriesFirst). A port with a single TX queue sends
// on lane 0 only (Port.Lanes; Send falls back to it) and still receives on
// every queue.
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

// Lanes of a port.
const (
	LaneData = 0
	LanePrio = 1
)

// Tx collects what a pipeline sends and releases in one loop iteration; the
// worker places it on the TX rings (priority lanes of link ports first, the
// host port last), through the port's shaper if it has a rate limit, and
// frees what is released once no descriptor refers to it.
type Tx struct {
	w     *Worker
	lists [][][]xdp.Desc // per port, per lane
	rel   []uint64
	n     int // descriptors queued this iteration
}

// Send queues frame (addr, n bytes) for port's lane. A lane the port does
// not have falls back to its data lane.
func (t *Tx) Send(port, lane int, addr uint64, n int) {
	l := t.lists[port]
	if lane >= len(l) {
		lane = LaneData
	}
	l[lane] = append(l[lane], xdp.Desc{Addr: addr, Len: uint32(n)})
	t.n++
}

// Release ends the pipeline's hold on a frame (see frameRefs).
func (t *Tx) Release(addr uint64) { t.rel = append(t.rel, addr) }

// Space is how many more descriptors port's lane can take this iteration:
// room on its TX ring or, on a rate-limited port, in its egress queue
// (counted in frames; the queue's byte limit may still drop some).
func (t *Tx) Space(port, lane int) int {
	l := t.lists[port]
	if lane >= len(l) {
		lane = LaneData
	}
	if sh := t.w.shapers[port]; sh != nil {
		n := 0
		for i := range l {
			n += len(l[i])
		}
		return sh.room() - n
	}
	socks := t.w.ports[port].socks
	if len(socks) == 0 { // a pipeline driven in memory (tests): no ring bounds it
		return maxMemSpace - len(l[lane])
	}
	return t.w.txFrames(socks[lane]) - len(l[lane])
}

// ByteSpace is how many more bytes port can take this iteration: what its
// egress queue's byte limit leaves on a rate-limited port (frames sent this
// iteration counted), unbounded (math.MaxInt) elsewhere. With Space it
// keeps a pipeline that holds frames itself from overfilling the queue.
func (t *Tx) ByteSpace(port int) int {
	sh := t.w.shapers[port]
	if sh == nil {
		return math.MaxInt
	}
	n := sh.maxBytes - sh.bytes
	for _, l := range t.lists[port] {
		for _, d := range l {
			n -= int(d.Len)
		}
	}
	return n
}

// maxMemSpace is the room of a port without sockets (a pipeline driven in
// memory by tests and fuzzers).
const maxMemSpace = 1 << 16

// Queued is how many frames were sent to port this iteration (they reach
// its TX ring after the pipeline's Poll).
func (t *Tx) Queued(port int) int {
	n := 0
	for _, l := range t.lists[port] {
		n += len(l)
	}
	return n
}

// Lanes is the number of lanes of port.
func (t *Tx) Lanes(port int) int { return len(t.lists[port]) }

// Ports is the numbering of the node's ports (shared: do not modify).
func (t *Tx) Ports() Ports { return t.w.d.ports }

// Alloc takes a free UMEM frame for a frame the pipeline builds (a control
// frame); it returns the address to write at, or false if none is free.
func (t *Tx) Alloc() (uint64, bool) {
	a, ok := t.w.refs.alloc()
	if !ok {
		return 0, false
	}
	return a + uint64(t.w.umem.DataOffset()), true
}

// Worker is the loop that owns every ring of the node's ports. One
// goroutine, locked to its OS thread; nothing in it allocates per frame.
type Worker struct {
	d *Dataplane
	// idx is the worker's number: it owns queue idx of every port
	// (workers.go); wc are its own counters.
	idx      int
	wc       *WorkerCounters
	umem     *xdp.Umem
	refs     *frameRefs
	ports    []*Port
	counters []*PortCounters
	// shapers are the ports' rate limiters (nil: unlimited); shaped is the
	// scratch list of frames a shaper releases.
	shapers []*shaper
	shaped  []xdp.Desc
	// rx is the receive order (link priority lane first); kick the order
	// frames are placed in (link priority lane, link data lane, host port).
	// all holds rx's sockets in the same order: the poller's socket i is
	// rx[i]'s.
	rx   []lane
	kick []lane
	// kicks is the order the TX rings are kicked in: kick's unless the
	// pipeline reordered it (KickDeliveriesFirst).
	kicks  []lane
	all    []*xdp.Socket
	poller *xdp.Poller
	descs  []xdp.Desc
	addrs  []uint64
	tx     Tx
	busy   bool
	// laneFrames counts the frames placed on each lane's TX ring (read by
	// pipelines for their statistics, in the worker's goroutine).
	laneFrames [][]uint64
	// sealed says which ports' frames carry the integrity trailer of mode
	// check (integrity.go), counted in integrity.
	sealed    []bool
	check     linkcrc.Integrity
	integrity *IntegrityStats
	epoch     time.Time // the worker clock's zero
	// Multi-buffer UMEMs (jumbo frames, multibuf.go): each receive lane's
	// chain in progress (nil without multi-buffer), the scratch list of a
	// placement's descriptors, and the most descriptors a frame of the
	// ports' MTU takes (1 without multi-buffer).
	chains   []chainRx
	chain    []xdp.Desc
	maxChain int
}

type lane struct {
	port, lane int
	s          *xdp.Socket
}

// A pipeline reaches the engine through its Worker: these accessors are
// small enough to inline, so the hot path pays nothing for them.

// Node is the dataplane the worker belongs to.
func (w *Worker) Node() *Dataplane { return w.d }

// Config is the configuration in force (defaults filled in), shared by
// every worker: read it, never write it.
func (w *Worker) Config() *Config { return &w.d.cfg }

// Log is the dataplane's logger.
func (w *Worker) Log() *slog.Logger { return w.d.cfg.Logger }

// Index is the worker's number: it owns queue Index of every port.
func (w *Worker) Index() int { return w.idx }

// Wall is the wall-clock time of worker time now.
func (w *Worker) Wall(now int64) time.Time { return w.epoch.Add(time.Duration(now)) }

// FrameLen is the longest frame a UMEM frame holds.
func (w *Worker) FrameLen() int { return int(w.umem.MaxFrameLen()) }

// FreeFrames is how many of the worker's UMEM frames are free.
func (w *Worker) FreeFrames() int { return w.refs.free.Len() }

// Batch is the most frames the worker receives from a lane at once.
func (w *Worker) Batch() int { return len(w.descs) }

// Port is the worker's view of port number i: its own sockets (queue
// Index of the interface, and its priority queue) and lanes.
func (w *Worker) Port(i int) *Port { return w.ports[i] }

// Tx is the worker's Tx, the one passed to the pipeline's Receive and Poll.
func (w *Worker) Tx() *Tx { return &w.tx }

// LaneFrames is how many frames the worker placed on lane of port.
func (w *Worker) LaneFrames(port, lane int) uint64 { return w.laneFrames[port][lane] }

// TxCounters are port's transmit counters: the port's with one worker,
// this worker's own share with several.
func (w *Worker) TxCounters(port int) *DirCounters {
	if w.d.cfg.Workers > 1 {
		return &w.wc.Ports[port].TX
	}
	return &w.d.stats.Ports[port].TX
}

// ShapedBytes is how many bytes wait in port's egress queue (0 on a port
// without a rate limit).
func (w *Worker) ShapedBytes(port int) int {
	if sh := w.shapers[port]; sh != nil {
		return sh.bytes
	}
	return 0
}

// WatchFD makes the worker wake when fd is readable.
func (w *Worker) WatchFD(fd int) { w.poller.AddFD(fd) }

func newWorker(d *Dataplane, idx int) *Worker {
	w := &Worker{
		d:     d,
		idx:   idx,
		wc:    &d.stats.Workers[idx],
		umem:  d.umems[idx],
		refs:  newFrameRefs(d.umems[idx]),
		ports: d.workerPorts(idx),
		descs: make([]xdp.Desc, d.cfg.Batch),
		addrs: make([]uint64, d.cfg.Batch),
		busy:  d.cfg.BusyPoll,
		epoch: monoEpoch(),
	}
	n := len(w.ports)
	w.counters = make([]*PortCounters, n)
	w.shapers = make([]*shaper, n)
	for p := range w.ports {
		c := &d.stats.Ports[p]
		w.counters[p] = c
		if c.Egress != nil {
			lanes := min(w.ports[p].lanes, 2) // the kicked lanes
			w.shapers[p] = newShaper(c.Egress.Shape, lanes, int(d.cfg.RingSize), w.Now(), c.Egress)
			w.shaped = make([]xdp.Desc, 0, d.cfg.RingSize)
		}
	}
	w.sealed = make([]bool, n)
	w.check = d.cfg.Link.Integrity
	if d.cfg.spec().Wire && d.cfg.Link.Integrity != linkcrc.Off {
		for _, p := range d.ports.Links {
			w.sealed[p] = true
		}
		w.integrity = &IntegrityStats{} // a mode without its own counts
		if ic, ok := d.inst.(integrityCounter); ok {
			w.integrity = ic.Integrity(idx)
		}
	}
	w.tx.w = w
	w.tx.lists = make([][][]xdp.Desc, n)
	w.laneFrames = make([][]uint64, n)
	queues, lanes := make([]int, n), make([]int, n)
	for p, port := range w.ports {
		// Every socket receives; the first port.lanes transmit.
		queues[p], lanes[p] = len(port.socks), min(port.lanes, len(port.socks))
		w.tx.lists[p] = make([][]xdp.Desc, lanes[p])
		w.laneFrames[p] = make([]uint64, lanes[p])
		for l := range lanes[p] {
			w.tx.lists[p][l] = make([]xdp.Desc, 0, 4*d.cfg.Batch)
		}
	}
	rx, kick := laneOrder(d.ports, queues, lanes)
	for _, r := range rx {
		w.rx = append(w.rx, lane{port: r.port, lane: r.lane, s: w.ports[r.port].socks[r.lane]})
		w.all = append(w.all, w.ports[r.port].socks[r.lane]) // the poller's socket i is w.rx[i]'s
	}
	for _, k := range kick {
		w.kick = append(w.kick, lane{port: k.port, lane: k.lane, s: w.ports[k.port].socks[k.lane]})
	}
	w.kicks = w.kick
	w.poller = xdp.NewPoller(w.all...)
	w.maxChain = max(d.maxChain, 1)
	if w.umem.MultiBuffer() {
		w.chains = make([]chainRx, len(w.rx))
		w.chain = make([]xdp.Desc, 0, int(d.cfg.RingSize)+w.umem.MaxChain())
	}
	return w
}

// lanePos is a lane of a port.
type lanePos struct{ port, lane int }

// KickDeliveriesFirst reorders the kicks (not the placing: a rate-limited
// port's bucket still serves its priority lane first) of a pipeline whose
// control frames can wait for its data: host ports first, then the link
// ports' data lanes, their priority lanes last. In copy mode a kick runs
// the receiving end's path inside the sendto, so what is kicked first
// arrives first; on the bundle a cells edge kicked its credit grant (and,
// toward the link, its request) before the frame that asked for it.
func (w *Worker) KickDeliveriesFirst() {
	rank := func(k lane) int {
		switch _, host := w.d.ports.HostIndex(k.port); {
		case host:
			return 0
		case k.lane == LaneData:
			return 1
		}
		return 2
	}
	w.kicks = slices.Clone(w.kick)
	slices.SortStableFunc(w.kicks, func(a, b lane) int { return rank(a) - rank(b) })
}

// laneOrder is the receive and the kick order of ports numbered ps, port p
// receiving on queues[p] sockets and transmitting on the first lanes[p]:
// the priority lane (queue 1) of every link port first, then the other
// queues of every link port (kicked: the data lane), the host ports last.
// A link port with one transmitting lane (a single TX queue) has its
// queue 1 read first all the same, and only its data lane kicked.
func laneOrder(ps Ports, queues, lanes []int) (rx, kick []lanePos) {
	for _, p := range ps.Links {
		if queues[p] > 1 {
			rx = append(rx, lanePos{p, LanePrio})
		}
		if lanes[p] > 1 {
			kick = append(kick, lanePos{p, LanePrio})
		}
	}
	for _, p := range ps.Links {
		for l := 0; l < queues[p]; l++ {
			if l != LanePrio || queues[p] == 1 {
				rx = append(rx, lanePos{p, l})
			}
		}
		kick = append(kick, lanePos{p, LaneData})
	}
	for _, h := range ps.Hosts {
		for l := 0; l < queues[h]; l++ {
			rx = append(rx, lanePos{h, l})
		}
		kick = append(kick, lanePos{h, LaneData})
	}
	return rx, kick
}

// Bytes returns n bytes of UMEM at address a.
func (w *Worker) Bytes(a uint64, n int) []byte { return w.umem.Bytes(a, uint32(n)) }

func (w *Worker) run(ctx context.Context, p Pipeline) error {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	defer p.Stop()
	st := &w.d.stats
	if release, ok := rawSleep(); ok {
		defer release()
		w.poller.SetRaw(true)
	}
	for _, s := range w.all {
		w.refill(s)
	}
	for !stop.Load() {
		st.Loops.Add(1)
		w.wc.Loops.Add(1)
		now := w.Now()
		moved := 0
		for i, r := range w.rx {
			room := min(p.Room(r.port), len(w.descs))
			if room <= 0 {
				continue
			}
			n := r.s.Receive(w.descs[:room])
			if n == 0 {
				continue
			}
			moved += n
			got := w.descs[:n]
			for _, d := range got {
				w.refs.hold(d.Addr)
			}
			if w.chains != nil {
				got = w.gather(&w.chains[i], r.port, got)
			}
			countRx(w.counters[r.port], got, &w.wc.Ports[r.port].RX)
			if got = w.checkRx(r.port, got); len(got) > 0 {
				p.Receive(now, r.port, r.lane, got, &w.tx)
			}
		}
		next := p.Poll(now, &w.tx)
		queued := w.tx.n
		next = min(next, w.flush())

		pending := 0
		for _, k := range w.kicks {
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
			timeout = min(timeout, max(time.Duration(next-now), MinTimerSleep))
		}
		if err := w.idle(timeout); err != nil {
			return err
		}
	}
	return nil
}

// rawSleepers counts the workers of this process that sleep holding their
// P (xdp.Poller.SetRaw: no sysmon wakeups after every sleep; the worker
// runs on a locked thread).
var rawSleepers atomic.Int32

// rawSleep reports whether a worker may sleep holding its P: while at
// least one P stays for the rest of the process (the statistics server,
// the session, a test with two dataplanes in one process). release gives
// the place back.
func rawSleep() (release func(), ok bool) {
	if rawSleepers.Add(1) <= int32(runtime.GOMAXPROCS(0))-1 {
		return func() { rawSleepers.Add(-1) }, true
	}
	rawSleepers.Add(-1)
	return nil, false
}

// MinTimerSleep is the shortest sleep of an idle worker whose next timer is
// due (or overdue: a control frame found no free UMEM frame).
const MinTimerSleep = 2 * time.Microsecond

// flush places the queued descriptors on their TX rings, counting each
// placed one as outstanding and what did not fit as dropped (a link frame
// is then recovered like a loss), then applies the releases. A port with a
// rate limit queues its frames in its shaper instead and places what the
// bucket allows. It returns when a shaper can place its next frame
// (math.MaxInt64: none waits).
func (w *Worker) flush() (next int64) {
	next = math.MaxInt64
	var now int64
	if w.shaped != nil {
		now = w.Now()
		for _, sh := range w.shapers {
			if sh != nil {
				sh.fill(now)
			}
		}
	}
	for _, k := range w.kick {
		lists := w.tx.lists[k.port]
		// The host port and a link port without a priority lane send
		// on lane 0 only; other lanes of a port fall back to it in Send.
		list := lists[k.lane]
		if sh := w.shapers[k.port]; sh != nil {
			w.shape(sh, k, list)
		} else if len(list) > 0 {
			w.place(k, list, false)
		}
		lists[k.lane] = list[:0]
	}
	for _, a := range w.tx.rel {
		w.refs.release(a)
	}
	w.tx.rel = w.tx.rel[:0]
	w.tx.n = 0
	for _, sh := range w.shapers {
		if sh != nil {
			next = min(next, sh.next(now))
			sh.publish()
		}
	}
	return next
}

// place puts list on k's TX ring and counts it. A descriptor is counted as
// outstanding when placed, unless counted already (a shaper counts frames
// as they enter its queue); what does not fit is dropped and counted.
func (w *Worker) place(k lane, list []xdp.Desc, counted bool) {
	w.sealTx(k.port, list)
	var n int
	var bytes uint64
	if w.chains != nil {
		n, bytes = w.placeChains(k, list, counted)
	} else {
		n = k.s.Transmit(list)
		for _, d := range list[:n] {
			if !counted {
				w.refs.sent(d.Addr)
			}
			bytes += uint64(d.Len)
		}
	}
	if counted {
		for _, d := range list[n:] {
			w.refs.completed(d.Addr)
		}
	}
	w.laneFrames[k.port][k.lane] += uint64(n)
	c := w.counters[k.port]
	c.TX.Frames.Add(uint64(n))
	c.TX.Bytes.Add(bytes)
	if n < len(list) {
		c.TX.Dropped.Add(uint64(len(list) - n))
	}
	if w.wc != nil { // nil: a worker driven in memory (tests)
		wc := &w.wc.Ports[k.port].TX
		wc.Frames.Add(uint64(n))
		wc.Bytes.Add(bytes)
		wc.Dropped.Add(uint64(len(list) - n))
	}
}

// shape queues list in k's port's shaper (a frame in the queue counts as
// outstanding, so releasing it does not free it; one that finds the queue
// full is dropped), then places on k's TX ring what the bucket covers.
func (w *Worker) shape(sh *shaper, k lane, list []xdp.Desc) {
	drops := 0
	for _, d := range list {
		if sh.enqueue(k.lane, d) {
			w.refs.sent(d.Addr)
		} else {
			drops++
		}
	}
	if drops > 0 {
		w.counters[k.port].TX.Dropped.Add(uint64(drops))
	}
	if sh.queued(k.lane) == 0 {
		return
	}
	out := sh.dequeue(k.lane, w.txFrames(k.s), w.shaped[:0])
	if len(out) > 0 {
		w.place(k, out, true)
	}
}

// idle waits for work. In busy-poll mode it wakes every socket (which
// busy-polls the device) and returns at once; otherwise it sleeps in ppoll
// until a socket is readable or timeout passes.
func (w *Worker) idle(timeout time.Duration) error {
	if w.busy {
		for _, s := range w.all {
			if err := s.Wake(); err != nil && !isDown(err) {
				return err
			}
		}
		return nil
	}
	w.d.stats.Polls.Add(1)
	w.wc.Polls.Add(1)
	_, err := w.poller.Wait(timeout)
	return err
}

// countRx counts a received batch on c and on its worker's wc, and
// returns its bytes.
func countRx(c *PortCounters, descs []xdp.Desc, wc *DirCounters) uint64 {
	var bytes uint64
	for i := range descs {
		bytes += uint64(descs[i].Len)
	}
	c.RX.Frames.Add(uint64(len(descs)))
	c.RX.Bytes.Add(bytes)
	wc.Frames.Add(uint64(len(descs)))
	wc.Bytes.Add(bytes)
	return bytes
}

// reclaim uncounts the descriptors the kernel finished transmitting.
func (w *Worker) reclaim(s *xdp.Socket) {
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

// refill tops up s's fill ring from the free list. A zero-copy driver
// that ran out of fill frames with XDP_USE_NEED_WAKEUP sets the ring's flag
// and waits to be woken: refill wakes it (a syscall only then; in copy
// mode the kernel never sets the flag).
func (w *Worker) refill(s *xdp.Socket) {
	for {
		want := min(s.FillFree(), len(w.addrs))
		if want == 0 {
			break
		}
		n := w.refs.free.PopN(w.addrs[:want])
		if n == 0 {
			w.d.stats.FramesExhausted.Add(1)
			break
		}
		s.Fill(w.addrs[:n])
	}
	if s.FillNeedsWakeup() {
		s.Wake() // an error here shows on the next kick
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

// Now is the worker clock (ns since the worker started).
func (w *Worker) Now() int64 { return int64(time.Since(w.epoch)) }

// monoEpoch is the time at which CLOCK_MONOTONIC read 0, so that the
// worker's clock (time.Since(epoch): Go's monotonic clock, CLOCK_MONOTONIC
// on Linux) reads what CLOCK_MONOTONIC reads, the clock of the XDP
// programs' bpf_ktime_get_ns: LinkGuardian's send fast path stores the
// time of the kernel's last send there (FastSend.LastNs) and the core
// compares it with now.
func monoEpoch() time.Time {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return now
	}
	return now.Add(-time.Duration(ts.Nano()))
}

// kickLane makes the kernel transmit what is on a lane's TX ring and returns
// how many frames are still pending there. An interface that is down (a
// link flap, a NIC reset) is link state, not an error: the port is marked
// down and counted, its frames wait on its TX ring (what does not fit is
// counted as TX dropped; LinkGuardian recovers it), and only every downRetry
// is a transmission tried, until one succeeds and the port is up again.
// Frames pending on a down port are not reported, so the worker can sleep.
// A down port with nothing pending is found up again from its interface
// flags (a kick of an empty ring proves nothing): a pipeline that stops
// sending on a port it knows is down (cells) still learns it is up.
func (w *Worker) kickLane(k lane) (int, error) {
	s := k.s
	p, c := w.ports[k.port], w.counters[k.port]
	if s.TxPending() == 0 && p.downSince == 0 {
		return 0, nil
	}
	if p.downSince != 0 {
		now := w.Now()
		if now < p.retryAt {
			return 0, nil
		}
		p.retryAt = now + int64(downRetry)
		if s.TxPending() == 0 {
			if p.running() {
				w.portUp(p, c)
			}
			return 0, nil
		}
	}
	if err := s.Kick(); err != nil {
		if !isDown(err) {
			return 0, err
		}
		w.portDown(p, c, err)
		return 0, nil
	}
	w.portUp(p, c)
	return s.TxPending(), nil
}

// portDown marks a port down (err: what the kick said). With several
// workers, each with its own view of the port, the first to find it down
// counts the event and logs it.
func (w *Worker) portDown(p *Port, c *PortCounters, err error) {
	if p.downSince != 0 {
		return
	}
	now := w.Now()
	p.downSince, p.retryAt = now, now+int64(downRetry)
	if c.downWorkers.Add(1) == 1 {
		c.downAt.Store(now)
		c.DownEvents.Add(1)
		c.Down.Store(true)
		w.d.cfg.Logger.Warn("interface down: holding its frames and retrying until it is up again",
			"dev", p.Name, "err", err)
	}
}

// portUp records that a port marked down is up again: the last worker to
// find it up again counts the time it was down, from the first worker's
// finding, and logs it.
func (w *Worker) portUp(p *Port, c *PortCounters) {
	if p.downSince == 0 {
		return
	}
	p.downSince = 0
	if c.downWorkers.Add(-1) != 0 {
		return // another worker still finds it down
	}
	down := w.Now() - c.downAt.Load()
	c.DownNs.Add(down)
	c.Down.Store(false)
	w.d.cfg.Logger.Info("interface up again", "dev", p.Name, "down_for", time.Duration(down).String())
}

// downTimeout bounds an idle sleep so that a port that is down is retried.
func (w *Worker) downTimeout(timeout time.Duration) time.Duration {
	for _, p := range w.ports {
		if p.downSince != 0 {
			return min(timeout, downRetry)
		}
	}
	return timeout
}
