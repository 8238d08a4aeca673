package dataplane

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/lg"
	"github.com/linkfabric/linkfabric/lossmon"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// lgWorker runs LinkGuardian on the link port: host frames are sequenced and
// kept in the TX buffer, link frames go through the receiver (reorder or
// de-duplication) before they reach the host port.
//
// Frame lifetime. A UMEM frame may be on a TX ring several times at once (a
// frame in the TX buffer is sent, then retransmitted N times) while the core
// has already released it (ACKed). So every frame has a count of TX
// descriptors outstanding and a flag "released"; it returns to the free list
// only when released and with nothing outstanding.
//
// Lanes. When the link port has a second queue, it is the priority lane:
// PFC frames, loss notifications and retransmitted copies leave on its
// socket, and it is read before the data lane. On veth, a frame sent on
// queue i arrives on the peer's queue i, so recovery never waits behind the
// data in either end's rings (the switch's high-priority queue). Explicit
// ACKs and dummies stay on the data lane: a dummy must not overtake the data
// it follows.
type lgWorker struct {
	*worker
	port     *lg.Port
	hostSock *xdp.Socket
	linkSock *xdp.Socket // data lane: link queue 0
	prioSock *xdp.Socket // priority lane: link queue 1, or linkSock
	linkRx   []*xdp.Socket
	txSocks  []*xdp.Socket

	outstanding []uint16 // TX descriptors in flight, per UMEM frame index
	released    []bool   // the core (or host path) is done with the frame

	queue lgQueue // host frames waiting for the link (PFC pause, TX buffer full)

	tx []xdp.Desc // one TX batch being assembled

	pfcClass int
	pfcSpeed uint64
	local    [6]byte

	// Peak rate of frames delivered to the host port (bit/s), sampled at
	// every publish: the reorder buffer's drain rate for the thresholds.
	peakRate          float64
	rateBytes, rateAt int64
	prioFrames        uint64 // frames placed on the priority lane
	// Host frames held: since when (0: not held), and by what.
	heldSince, heldCredit, heldPause int64
	heldByPause                      bool

	lgs *LGStats
}

// hostQueueLen is how many host frames may wait for the link (a power of two).
const hostQueueLen = 1024

// lgQueue is a fixed ring of host frames waiting for the link.
type lgQueue struct {
	buf        []lg.Frame
	head, tail uint32 // tail-head = length
}

func (q *lgQueue) len() int          { return int(q.tail - q.head) }
func (q *lgQueue) free() int         { return len(q.buf) - q.len() }
func (q *lgQueue) push(f lg.Frame)   { q.buf[q.tail&uint32(len(q.buf)-1)] = f; q.tail++ }
func (q *lgQueue) front() lg.Frame   { return q.buf[q.head&uint32(len(q.buf)-1)] }
func (q *lgQueue) pop()              { q.head++ }
func newLGQueue(n int) lgQueue       { return lgQueue{buf: make([]lg.Frame, n)} }
func (q *lgQueue) empty() bool       { return q.head == q.tail }
func (w *lgWorker) idx(a uint64) int { return w.umem.FrameIndex(a) }

// Bytes implements lg.Memory.
func (w *lgWorker) Bytes(h lg.Handle, n int) []byte { return w.umem.Bytes(uint64(h), uint32(n)) }

// Alloc implements lg.Memory: a free UMEM frame for a control frame.
func (w *lgWorker) Alloc() (lg.Handle, bool) {
	a, ok := w.free.Pop()
	if !ok {
		return 0, false
	}
	w.released[w.idx(a)] = false
	return lg.Handle(a + uint64(w.umem.DataOffset())), true
}

// LGStats are the LinkGuardian statistics of a dataplane: the core's counters
// (copied by the worker every few milliseconds) and live histograms.
type LGStats struct {
	mu   sync.Mutex
	core LGCore

	// RetxDelay is the time from loss detection to the retransmission's
	// arrival, ns (Appendix B.1), measured on the receiver; RetxDelayFirst
	// only for frames recovered by the first notification's copies (the
	// timers are tuned from it: a frame recovered after re-notification
	// took about one re-notification interval, which would feed back).
	RetxDelay, RetxDelayFirst metrics.Histogram
	// TxBuf and Reorder sample the TX buffer (frames) and reorder buffer
	// (bytes) occupancy once per busy loop iteration.
	TxBuf, Reorder metrics.Histogram
	// LinkTxRingFull counts link frames that found the TX ring full (they are
	// then recovered like losses); HostTxRingFull counts delivered frames
	// dropped for the same reason on the host port.
	LinkTxRingFull, HostTxRingFull atomic.Uint64
	// PFCRx counts PFC frames received from the peer; PFCTx counts pause and
	// resume frames sent.
	PFCRx, PFCTx atomic.Uint64
	// LossRate is the link's loss rate as the sender sees it (frames reported
	// lost / frames sent, moving window), ×1e12 for atomic storage.
	lossRate atomic.Uint64
	// Copies is the N in force.
	Copies atomic.Int64
	// RxLossRate is the loss rate of the incoming direction measured by this
	// end's receiver from sequence gaps (moving window), ×1e12; RxMode is the
	// receiver's mode (lg.Mode) and ModeChanges how often the policy changed it.
	rxLossRate  atomic.Uint64
	RxMode      atomic.Int64
	ModeChanges atomic.Uint64
	// Integrity counts the link frames' integrity check (integrity.go).
	Integrity IntegrityStats
}

// RxLossRate is the incoming direction's loss rate measured from gaps.
func (s *LGStats) RxLossRate() float64 { return float64(s.rxLossRate.Load()) / 1e12 }

// LGCore is a copy of the core's counters.
type LGCore struct {
	Port     lg.PortStats      `json:"port"`
	Sender   *lg.SenderStats   `json:"sender,omitempty"`
	Receiver *lg.ReceiverStats `json:"receiver,omitempty"`
	// Timers in force (ns), N, and the reorder-buffer thresholds (bytes).
	AckNoTimeout    int64 `json:"ack_no_timeout_ns,omitempty"`
	Renotify        int64 `json:"renotify_ns,omitempty"`
	Copies          int   `json:"copies,omitempty"`
	ResumeThreshold int   `json:"resume_threshold_bytes,omitempty"`
	PauseThreshold  int   `json:"pause_threshold_bytes,omitempty"`
	// TxBuffer and Credit (frames): the TX buffer and the credit window.
	TxBuffer int `json:"tx_buffer_frames,omitempty"`
	Credit   int `json:"credit_window_frames,omitempty"`
	// PriorityLane is whether the link has a priority lane (queue 1), and
	// PriorityFrames the frames sent on it.
	PriorityLane   bool   `json:"priority_lane"`
	PriorityFrames uint64 `json:"priority_lane_frames"`
	// HeldByCreditNs and HeldByPauseNs are the time host frames waited
	// because the TX buffer was full (no ACK yet) or a PFC pause was in force.
	HeldByCreditNs int64 `json:"held_by_credit_ns,omitempty"`
	HeldByPauseNs  int64 `json:"held_by_pause_ns,omitempty"`
}

// Core returns a copy of the core's counters as last published.
func (s *LGStats) Core() LGCore {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.core
	if c.Sender != nil {
		v := *c.Sender
		c.Sender = &v
	}
	if c.Receiver != nil {
		v := *c.Receiver
		c.Receiver = &v
	}
	return c
}

// LossRate is the measured loss rate of the protected outgoing direction.
func (s *LGStats) LossRate() float64 { return float64(s.lossRate.Load()) / 1e12 }

func newLGWorker(d *Dataplane) (*lgWorker, error) {
	w := &lgWorker{
		worker:      newWorker(d),
		hostSock:    d.host.socks[0],
		linkSock:    d.link.socks[0],
		prioSock:    d.link.socks[0],
		outstanding: make([]uint16, d.umem.FrameCount()),
		released:    make([]bool, d.umem.FrameCount()),
		queue:       newLGQueue(hostQueueLen),
		tx:          make([]xdp.Desc, 0, 4*d.cfg.Batch),
		pfcClass:    d.cfg.LG.PFCClass,
		pfcSpeed:    d.cfg.LG.LinkSpeed,
		lgs:         d.lgStats,
	}
	for i := range w.released {
		w.released[i] = true
	}
	if len(d.link.socks) > 1 {
		w.prioSock = d.link.socks[1]
	}
	w.linkRx = []*xdp.Socket{w.prioSock}
	for _, s := range d.link.socks {
		if s != w.prioSock {
			w.linkRx = append(w.linkRx, s)
		}
	}
	// Kicked in this order: in copy mode a kick does the receiving side's
	// work too (the peer's XDP program, or the host's whole TCP receive),
	// so a loss notification or a copy kicked after 256 deliveries to the
	// host waited for them.
	if w.prioSock != w.linkSock {
		w.txSocks = append(w.txSocks, w.prioSock)
	}
	w.txSocks = append(w.txSocks, w.linkSock, w.hostSock)
	cfg := d.cfg.LG.core(d.cfg.Mode, d.linkMAC)
	w.local = d.linkMAC
	p, err := lg.NewPort(cfg, w)
	if err != nil {
		return nil, err
	}
	w.port = p
	if p.S != nil {
		w.lgs.Copies.Store(int64(d.cfg.LG.Copies))
	}
	return w, nil
}

func (w *lgWorker) run(ctx context.Context) error {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	st := &w.d.stats
	epoch := time.Now()
	for _, s := range w.all {
		w.refill(s)
	}
	p := w.port
	var publishAt, monitorAt, rmonAt int64
	var mon *lossmon.Monitor
	if p.S != nil && !w.d.cfg.LG.fixedCopies {
		mon, _ = lossmon.New(lossmon.Config{Window: int64(10 * time.Second), MinSamples: 10000})
	}
	var rmon *lossmon.Monitor
	if p.R != nil {
		rmon, _ = lossmon.New(lossmon.Config{Window: int64(w.d.cfg.LG.MonitorWindow), MinSamples: 10000})
		w.lgs.RxMode.Store(int64(p.R.Mode()))
	}
	for !stop.Load() {
		st.Loops.Add(1)
		now := int64(time.Since(epoch))
		moved := 0

		// 1. Link → core, priority lane first.
		for _, s := range w.linkRx {
			n := s.Receive(w.descs)
			if n == 0 {
				continue
			}
			moved += n
			countRx(&st.Link, w.descs[:n])
			for _, d := range w.descs[:n] {
				if !w.checkRx(&d) { // integrity.go: corrupt frames are dropped (lost)
					continue
				}
				b := w.umem.Bytes(d.Addr, d.Len)
				if pfc.IsMACControl(b) {
					w.onPFC(now, b)
					w.release(d.Addr)
					continue
				}
				w.released[w.idx(d.Addr)] = false
				p.Receive(now, lg.Frame{H: lg.Handle(d.Addr), Len: int(d.Len)})
			}
		}
		// 2. Host → queue → core.
		for _, s := range w.d.host.socks {
			room := min(w.queue.free(), len(w.descs))
			if room == 0 {
				break
			}
			n := s.Receive(w.descs[:room])
			if n == 0 {
				continue
			}
			moved += n
			countRx(&st.Host, w.descs[:n])
			for _, d := range w.descs[:n] {
				w.released[w.idx(d.Addr)] = false
				w.queue.push(lg.Frame{H: lg.Handle(d.Addr), Len: int(d.Len)})
			}
		}
		// Leave room on the link TX ring for control frames and copies.
		budget := w.linkSock.TxFree() - 2*len(w.descs)
		for budget > 0 && !w.queue.empty() && p.CanSend(now) {
			if !p.Send(now, w.queue.front()) {
				break
			}
			w.queue.pop()
			budget--
		}
		w.trackHeld(now, p)
		p.Poll(now, w.queue.empty())

		// 3. Transmit in priority order: PFC, loss notifications and
		// retransmissions on the priority lane; normal, explicit ACKs and
		// dummies on the data lane.
		w.tx = w.tx[:0]
		for _, ev := range p.Out.Events {
			switch ev.Kind {
			case lg.EvPause:
				w.sendPFC(ev.Nanos)
			case lg.EvResume:
				w.sendPFC(0)
			case lg.EvRecovered:
				w.lgs.RetxDelay.Record(uint64(ev.Nanos))
				if ev.Count == 0 {
					w.lgs.RetxDelayFirst.Record(uint64(ev.Nanos))
				}
			}
		}
		w.queueTx(p.Out.Urgent)
		w.queueTx(p.Out.Retx)
		if w.prioSock != w.linkSock {
			w.prioFrames += uint64(w.flushTx(w.prioSock, &st.Link, &w.lgs.LinkTxRingFull))
			w.tx = w.tx[:0]
		}
		w.queueTx(p.Out.Normal)
		w.queueTx(p.Out.Low)
		w.flushTx(w.linkSock, &st.Link, &w.lgs.LinkTxRingFull)
		w.tx = w.tx[:0]
		w.queueTx(p.Out.Deliver)
		w.flushTx(w.hostSock, &st.Host, &w.lgs.HostTxRingFull)
		// Delivered frames belong to the host path now: those on the TX ring
		// return after completion, those that did not fit (counted) at once.
		for _, f := range p.Out.Deliver {
			w.releaseFrame(uint64(f.H))
		}
		for _, f := range p.Out.Free {
			w.releaseFrame(uint64(f.H))
		}
		busy := moved > 0 || len(p.Out.Normal) > 0 || len(p.Out.Retx) > 0
		p.Out.Reset()

		pending := 0
		for _, s := range w.txSocks {
			n, err := w.kick(s)
			if err != nil {
				return err
			}
			pending += n
		}
		for _, s := range w.all {
			w.reclaimLG(s)
			w.refill(s)
		}

		if busy {
			w.sample(p)
		}
		if now >= publishAt {
			publishAt = now + int64(20*time.Millisecond)
			w.sampleRate(now, int64(st.Host.TX.Bytes.Load()))
			w.publish(p)
			w.tune(p)
		}
		if mon != nil && now >= monitorAt {
			monitorAt = now + int64(10*time.Millisecond)
			// Frames sent vs frames the peer reported lost (once per
			// notification round: lost copies count again, as they should).
			mon.ObserveTotals(now, p.S.Stats.DataSent, p.S.Stats.RetxRequests)
			if rate, ok := mon.Rate(now); ok {
				w.lgs.lossRate.Store(uint64(rate * 1e12))
				n := lossmon.CopiesLimit(w.d.cfg.LG.TargetLoss, rate, w.d.cfg.LG.MaxCopies)
				if int64(n) != w.lgs.Copies.Load() {
					p.S.SetCopies(n)
					w.lgs.Copies.Store(int64(n))
				}
			}
		}

		if rmon != nil && now >= rmonAt {
			rmonAt = now + int64(100*time.Millisecond)
			rmon.ObserveTotals(now, p.R.Stats.DataRx, p.R.Stats.LostDetected)
			if rate, ok := rmon.Rate(now); ok {
				w.lgs.rxLossRate.Store(uint64(rate * 1e12))
				if w.d.cfg.LG.Auto {
					received, lost := rmon.Totals(now)
					w.applyPolicy(now, p, rate, received, lost)
				}
			}
		}

		if busy || pending > 0 {
			continue
		}
		// A full queue takes no more host frames: do not wake for them
		// (the host socket stays readable, so polling it would spin while
		// the sender waits for ACKs or a PFC resume).
		for i := range w.d.host.socks {
			w.poller.WantRead(i, w.queue.free() > 0)
		}
		// Idle: sleep until a frame arrives or the core's next timer (an
		// explicit ACK, a dummy, a re-notification, a pause refresh or end)
		// is due. Spinning instead would starve the other processes of a
		// two-core machine.
		timeout := w.downTimeout(w.d.cfg.PollTimeout)
		if dl := p.NextDeadline(now, w.queue.empty()); dl != math.MaxInt64 {
			timeout = min(timeout, max(time.Duration(dl-now), minTimerSleep))
		}
		if err := w.idle(timeout); err != nil {
			return err
		}
	}
	w.publish(p)
	return nil
}

// trackHeld accounts the time host frames wait for the link with the reason
// that held them first.
func (w *lgWorker) trackHeld(now int64, p *lg.Port) {
	held := !w.queue.empty() && !p.CanSend(now)
	switch {
	case held && w.heldSince == 0:
		w.heldSince, w.heldByPause = now, p.S.Paused(now)
	case !held && w.heldSince != 0:
		if w.heldByPause {
			w.heldPause += now - w.heldSince
		} else {
			w.heldCredit += now - w.heldSince
		}
		w.heldSince = 0
	}
}

// applyPolicy switches the receiver's mode as the policy decides for the
// measured loss rate of the incoming direction.
func (w *lgWorker) applyPolicy(now int64, p *lg.Port, rate float64, received, lost uint64) {
	cur := p.R.Mode()
	want := autoMode(w.d.cfg.LG.Policy, received, lost, cur)
	if want == cur {
		return
	}
	if p.R.SetMode(now, want) {
		w.lgs.RxMode.Store(int64(want))
		w.lgs.ModeChanges.Add(1)
		w.d.cfg.Logger.Info("protection policy changed the receiving mode",
			"dev", w.d.cfg.LinkPort, "from", cur.String(), "to", want.String(), "loss_rate", rate)
	}
}

func (w *lgWorker) queueTx(fs []lg.Frame) {
	for _, f := range fs {
		w.tx = append(w.tx, xdp.Desc{Addr: uint64(f.H), Len: uint32(f.Len)})
	}
}

// flushTx places w.tx on s's TX ring, counting each frame as outstanding. It
// returns how many were placed; the rest are counted in full (they are not
// sent; the core recovers link frames as losses).
func (w *lgWorker) flushTx(s *xdp.Socket, c *PortCounters, full *atomic.Uint64) int {
	if len(w.tx) == 0 {
		return 0
	}
	w.sealTx(s) // integrity.go: the trailer on every link frame
	n := s.Transmit(w.tx)
	var bytes uint64
	for _, d := range w.tx[:n] {
		w.outstanding[w.idx(d.Addr)]++
		bytes += uint64(d.Len)
	}
	c.TX.Frames.Add(uint64(n))
	c.TX.Bytes.Add(bytes)
	if n < len(w.tx) {
		c.TX.Dropped.Add(uint64(len(w.tx) - n))
		full.Add(uint64(len(w.tx) - n))
	}
	return n
}

// releaseFrame records that the core or the host path is done with the frame
// holding address a; it goes back to the free list once no TX descriptor
// refers to it.
func (w *lgWorker) releaseFrame(a uint64) {
	i := w.idx(a)
	if w.released[i] {
		return // already released (a frame listed twice in one iteration)
	}
	w.released[i] = true
	if w.outstanding[i] == 0 {
		w.free.Push(w.umem.FrameBase(a))
	}
}

// release returns a frame the worker itself consumed (e.g. a PFC frame).
func (w *lgWorker) release(a uint64) {
	w.released[w.idx(a)] = false
	w.releaseFrame(a)
}

// reclaimLG processes TX completions with the outstanding counts.
func (w *lgWorker) reclaimLG(s *xdp.Socket) {
	for {
		n := s.Complete(w.addrs)
		if n == 0 {
			return
		}
		for _, a := range w.addrs[:n] {
			i := w.idx(a)
			w.outstanding[i]--
			if w.outstanding[i] == 0 && w.released[i] {
				w.free.Push(w.umem.FrameBase(a))
			}
		}
	}
}

// onPFC applies a PFC (or 802.3x PAUSE) frame from the peer to the sender.
func (w *lgWorker) onPFC(now int64, b []byte) {
	var f pfc.Frame
	if pfc.Decode(b, &f) != nil {
		return
	}
	w.lgs.PFCRx.Add(1)
	q := f.Quanta[0]
	if f.Opcode == pfc.OpPFC {
		if f.ClassEnable&(1<<w.pfcClass) == 0 {
			return
		}
		q = f.Quanta[w.pfcClass]
	}
	if q == 0 {
		w.port.Resume(now)
		return
	}
	w.port.Pause(now, pfc.QuantaToNanos(q, w.pfcSpeed))
}

// sendPFC puts a PFC frame pausing (d > 0) or resuming (d == 0) the
// protected class at the head of the link TX batch.
func (w *lgWorker) sendPFC(d int64) {
	h, ok := w.Alloc()
	if !ok {
		return
	}
	var quanta [pfc.NumClasses]uint16
	quanta[w.pfcClass] = pfc.NanosToQuanta(d, w.pfcSpeed)
	if d > 0 && quanta[w.pfcClass] == 0 {
		quanta[w.pfcClass] = 1
	}
	f := pfc.NewPFC(w.local, 1<<w.pfcClass, quanta)
	n, err := f.Encode(w.umem.Bytes(uint64(h), pfc.FrameLen))
	if err != nil {
		w.releaseFrame(uint64(h))
		return
	}
	w.tx = append(w.tx, xdp.Desc{Addr: uint64(h), Len: uint32(n)})
	w.lgs.PFCTx.Add(1)
	// Free once transmitted: flushTx counts it outstanding first.
	w.port.Out.Free = append(w.port.Out.Free, lg.Frame{H: h, Len: n})
}

func (w *lgWorker) sample(p *lg.Port) {
	if p.S != nil {
		w.lgs.TxBuf.Record(uint64(p.S.Outstanding()))
	}
	if p.R != nil {
		_, b := p.R.Buffered()
		w.lgs.Reorder.Record(uint64(b))
	}
}

func (w *lgWorker) publish(p *lg.Port) {
	s := w.lgs
	s.mu.Lock()
	s.core.Port = p.Stats
	s.core.PriorityLane = w.prioSock != w.linkSock
	s.core.PriorityFrames = w.prioFrames
	s.core.HeldByCreditNs, s.core.HeldByPauseNs = w.heldCredit, w.heldPause
	if p.S != nil {
		if s.core.Sender == nil {
			s.core.Sender = new(lg.SenderStats)
		}
		*s.core.Sender = p.S.Stats
		s.core.Copies = p.S.Copies()
		s.core.TxBuffer, s.core.Credit = w.d.cfg.LG.TxBuffer, w.d.cfg.LG.credit
	}
	if p.R != nil {
		if s.core.Receiver == nil {
			s.core.Receiver = new(lg.ReceiverStats)
		}
		*s.core.Receiver = p.R.Stats
		s.core.Renotify, s.core.AckNoTimeout = p.R.Timers()
		s.core.ResumeThreshold, s.core.PauseThreshold = p.R.Thresholds()
	}
	s.mu.Unlock()
}

// minTimerSleep is the shortest sleep of an idle worker whose next timer is
// due (or overdue: a control frame found no free UMEM frame).
const minTimerSleep = 2 * time.Microsecond

// minRetxStep and maxRetxStep bound the re-notification interval derived
// from measured retransmission delays.
const (
	minRetxStep = int64(100 * time.Microsecond)
	maxRetxStep = int64(20 * time.Millisecond)
)

// sampleRate updates the peak rate of frames delivered to the host port from
// its byte counter.
func (w *lgWorker) sampleRate(now, bytes int64) {
	if w.rateAt > 0 && now > w.rateAt {
		w.peakRate = max(w.peakRate, float64(bytes-w.rateBytes)*8e9/float64(now-w.rateAt))
	}
	w.rateBytes, w.rateAt = bytes, now
}

// tune sets the receiver's timers and thresholds from the retransmission
// delays measured so far (first-round recoveries; Appendix B.1) once there
// are enough of them.
func (w *lgWorker) tune(p *lg.Port) {
	c := &w.d.cfg.LG
	if p.R == nil || (c.AckTimeout > 0 && c.fixedThresholds) {
		return // nothing to tune
	}
	var snap metrics.Snapshot
	w.lgs.RetxDelayFirst.SnapshotInto(&snap)
	if snap.Count < 20 {
		return
	}
	if c.AckTimeout == 0 {
		w.tuneTimers(p, &snap)
	}
	if !c.fixedThresholds && w.peakRate > 0 {
		resume := tunedResume(int64(snap.Quantile(0.99)), w.peakRate, c.MTU+18, c.credit)
		p.R.SetThresholds(resume, lg.PauseThreshold(resume, c.MTU+18))
	}
}

// tunedResume is Appendix B.1's resume threshold for a measured flight time
// (ns) and drain rate (bit/s), kept between minResume and what the credit
// window of credit frames of frameLen bytes can put in the reorder buffer,
// less the 2-MTU hysteresis.
func tunedResume(flight int64, rate float64, frameLen, credit int) int {
	resume := lg.ResumeThreshold(flight, rate, 1)
	return max(min(resume, credit*frameLen-2*frameLen), minResume)
}

// tuneTimers sets the receiver's timers from the largest retransmission delay
// measured so far (Appendix B.1): renotify after 1.5× it, skip the hole after
// three such intervals but never before minAckNoTimeout.
func (w *lgWorker) tuneTimers(p *lg.Port, snap *metrics.Snapshot) {
	renotify, ackNo, _ := lg.Timers(int64(snap.Max), 1.5, 2)
	if renotify < minRetxStep || renotify > maxRetxStep {
		renotify = min(max(renotify, minRetxStep), maxRetxStep)
		ackNo = 3 * renotify
	}
	p.R.SetTimers(renotify, max(ackNo, minAckNoTimeout))
}
