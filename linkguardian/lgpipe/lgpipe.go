package lgpipe

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/internal/ptr"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/lossmon"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// lgPipeline runs LinkGuardian on the link port: host frames are sequenced
// and kept in the TX buffer, link frames go through the receiver (reorder or
// de-duplication) before they reach the host port. The worker owns the rings
// and the frames' reference counts (a frame in the TX buffer is sent, then
// retransmitted N times, while the core may already have released it).
//
// Lanes. When the link port has a second queue, it is the priority lane:
// PFC frames, loss notifications and retransmitted copies leave on it, and
// the worker reads and kicks it first. On veth, a frame sent on queue i
// arrives on the peer's queue i, so recovery never waits behind the data in
// either end's rings (the switch's high-priority queue). Explicit ACKs and
// dummies stay on the data lane: a dummy must not overtake the data it
// follows.
type lgPipeline struct {
	w    *dataplane.Worker
	d    *dataplane.Dataplane
	port *linkguardian.Endpoint
	tx   *dataplane. // the worker's, valid during Receive and Poll
		Tx

	// Host frames waiting for the link (PFC pause of their class, LG
	// pause, credit window full), one queue per traffic class.
	queue dataplane.ClassQueues

	pfcClass int
	pfcSpeed uint64
	local    [6]byte

	// Peak rate of frames delivered to the host port (bit/s), sampled at
	// every publish: the reorder buffer's drain rate for the thresholds.
	peakRate          float64
	rateBytes, rateAt int64
	// Host frames held: since when (0: not held), and by what.
	heldSince, heldCredit, heldPause int64
	heldByPause                      bool

	publishAt, monitorAt, rmonAt int64
	mon, rmon                    *lossmon.Monitor
	// unpublished: the pipeline received or sent frames since its last
	// publish. Poll then wakes the worker at publishAt, so an idle
	// worker's statistics are at most 20 ms old (without it they stayed
	// as they were at the last publish before the worker went idle).
	unpublished bool

	// The link session (session.go).
	linkpipe.LinkSess

	// kernel is the instance's kernel path (lgfast.go); fast is its
	// receive fast path when the receiver uses it (nil: none): the kernel
	// judges the link's data frames while fast.rxLive.
	kernel, fast *lgFast
	// fastTx is its send fast path (nil: none): the kernel numbers and
	// sends host frames while fastTx.txLive and it owns sending.
	fastTx *lgFast
	// hostTaken counts what the host port's first socket took in, for
	// sendTakenIn.
	hostTaken sockTaken
	// gate holds the core's deliveries after it claimed the receive point
	// from the kernel (hostgate.go).
	gate hostGate

	lgs *Stats
}

// Bytes implements link.Memory.
func (pl *lgPipeline) Bytes(h link.Handle, n int) []byte { return pl.w.Bytes(uint64(h), n) }

// Alloc implements link.Memory: a free UMEM frame (for a control frame or a
// retransmitted copy, which every UMEM frame holds).
func (pl *lgPipeline) Alloc(int) (link.Handle, bool) {
	a, ok := pl.tx.Alloc()
	return link.Handle(a), ok
}

// Stats are the LinkGuardian statistics of a dataplane: the core's counters
// (copied by the worker every few milliseconds) and live histograms.
type Stats struct {
	Mu   sync.Mutex
	core Core

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
	// PFCRx counts PAUSE/PFC frames received on the link port (they gate
	// the host frames' classes); PauseTx counts LinkGuardian's PAUSE and
	// RESUME link-header frames sent (the receiver's backpressure).
	PFCRx, PauseTx atomic.Uint64
	// HostGateWaits counts the claims of the receive point after which the
	// core's deliveries waited for the kernel's to reach the host, and
	// HostGateHeld the frames that waited (hostgate.go).
	HostGateWaits, HostGateHeld atomic.Uint64
	// kernelTx is the send fast path's counters (bpf.LGTxCounters) as of
	// the last publish; read it with KernelTx.
	kernelTx bpf.LGTxCounters
	// Session is the link session (session.go).
	Session linkpipe.SessionStats
	// LossRate is the link's loss rate as the sender sees it (frames reported
	// lost / frames sent, moving window), ×1e12 for atomic storage.
	lossRate atomic.Uint64
	// Copies is the N in force.
	Copies atomic.Int64
	// RxLossRate is the loss rate of the incoming direction measured by this
	// end's receiver from sequence gaps (moving window), ×1e12; RxMode is the
	// receiver's mode (linkguardian.Delivery) and ModeChanges how often the policy changed it.
	rxLossRate  atomic.Uint64
	RxMode      atomic.Int64
	ModeChanges atomic.Uint64
	// Integrity counts the link frames' integrity check (integrity.go).
	Integrity dataplane.IntegrityStats
}

// RxLossRate is the incoming direction's loss rate measured from gaps.
func (s *Stats) RxLossRate() float64 { return float64(s.rxLossRate.Load()) / 1e12 }

// Core is a copy of the core's counters.
type Core struct {
	Port     linkguardian.PortStats      `json:"port"`
	Sender   *linkguardian.SenderStats   `json:"sender,omitempty"`
	Receiver *linkguardian.ReceiverStats `json:"receiver,omitempty"`
	// Timers in force (ns), N, and the reorder-buffer thresholds (bytes).
	AckNoTimeout    int64 `json:"ack_no_timeout_ns,omitempty"`
	Renotify        int64 `json:"renotify_ns,omitempty"`
	Copies          int   `json:"copies,omitempty"`
	ResumeThreshold int   `json:"resume_threshold_bytes,omitempty"`
	PauseThreshold  int   `json:"pause_threshold_bytes,omitempty"`
	// TxBuffer and Credit (frames): the TX buffer and the credit window.
	TxBuffer int `json:"tx_buffer_frames,omitempty"`
	Credit   int `json:"credit_window_frames,omitempty"`
	// Control-frame economy in force: the receiver's AckDelay (ns) and
	// AckEvery (frames), the sender's learned wait before its first dummy.
	AckDelay  int64 `json:"ack_delay_ns,omitempty"`
	AckEvery  int   `json:"ack_every_frames,omitempty"`
	DummyWait int64 `json:"dummy_wait_ns,omitempty"`
	// PriorityLane is whether the link has a priority lane (queue 1), and
	// PriorityFrames the frames sent on it.
	PriorityLane   bool   `json:"priority_lane"`
	PriorityFrames uint64 `json:"priority_lane_frames"`
	// HeldByCreditNs and HeldByPauseNs are the time host frames waited
	// because the TX buffer was full (no ACK yet) or a PFC pause was in force.
	HeldByCreditNs int64 `json:"held_by_credit_ns,omitempty"`
	HeldByPauseNs  int64 `json:"held_by_pause_ns,omitempty"`
	// ClassFrames counts host frames queued per 802.1p class (VLAN PCP, or
	// the IP class selector); PausedClasses is the classes paused by PFC
	// frames from the link at the last publish (bit c: class c).
	ClassFrames   [pfc.NumClasses]uint64 `json:"class_frames"`
	PausedClasses uint8                  `json:"paused_classes"`
}

// KernelTx returns the send fast path's counters (lf_lg_tx) as of the last
// publish: Declined counts its hand-overs of sending to the worker (credit,
// a pause, a frame the worker had still to read), split by why into
// DeclinedWindow (outside the credit window) and DeclinedUnread (the
// worker had not taken in every frame passed to it); Widened its frames
// sent past the Limit the worker published, on an ACK the link port read
// first; WakeMoves the receive point's Wake moved by the ACKs it
// piggybacked (linkguardian/fasttx.go). All zero without the send fast
// path.
func (s *Stats) KernelTx() bpf.LGTxCounters {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.kernelTx
}

// Core returns a copy of the core's counters as last published.
func (s *Stats) Core() Core {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	c := s.core
	c.Sender = ptr.Copy(c.Sender)
	c.Receiver = ptr.Copy(c.Receiver)
	return c
}

// LossRate is the measured loss rate of the protected outgoing direction.
func (s *Stats) LossRate() float64 { return float64(s.lossRate.Load()) / 1e12 }

func newLGPipeline(w *dataplane.Worker, lgs *Stats, kernel *lgFast) (*lgPipeline, error) {
	d, cfg := w.Node(), w.Config()
	if ps := d.Ports(); ps.Host != dataplane.PortHost || len(ps.Links) != 1 || ps.Links[0] != dataplane.PortLink {
		return nil, fmt.Errorf("dataplane: mode %s runs on one host port and one link port; got ports %+v", cfg.Mode, ps)
	}
	pl := &lgPipeline{
		w:        w,
		d:        d,
		tx:       w.Tx(),
		queue:    dataplane.NewClassQueues(d),
		pfcClass: ConfigOf(cfg).PFCClass,
		pfcSpeed: cfg.Link.Speed,
		local:    d.LinkMAC(),
		lgs:      lgs, // its lane's (workers.go)
		kernel:   kernel,
	}
	p, err := linkguardian.NewEndpoint(ConfigOf(cfg).core(cfg.Mode, linkpipe.SessionConfigOf(cfg).Protect, d.LinkMAC(), cfg.Link.PeerMAC), pl)
	if err != nil {
		return nil, err
	}
	pl.port = p
	if err := pl.newSession(); err != nil {
		return nil, err
	}
	if p.S != nil {
		pl.lgs.Copies.Store(int64(ConfigOf(cfg).Copies))
		if !ConfigOf(cfg).fixedCopies {
			pl.mon, _ = lossmon.New(lossmon.Config{Window: int64(10 * time.Second), MinSamples: 10000})
		}
	}
	if p.R != nil {
		pl.rmon, _ = lossmon.New(lossmon.Config{Window: int64(ConfigOf(cfg).MonitorWindow), MinSamples: 10000})
		pl.lgs.RxMode.Store(int64(p.R.Delivery()))
		if fp := kernel.point(); fp != nil {
			fp.LookEvery = lgLookEvery
			p.SetFast(fp)
			pl.fast = kernel
			pl.gate.wait = hostGateWait
		}
	}
	if fs := kernel.send(); fs != nil && p.S != nil {
		// The core looks at the kernel's sends every lgLookEvery,
		// rather than being woken at the kernel's first send: that
		// wakeup lands on the CPU and at the moment the host's next packet
		// needs (linkguardian/fasttx.go, "Waking Go").
		fs.WakeEvery = lgLookEvery
		if err := p.SetFastSend(fs); err != nil {
			return nil, err
		}
		// The kernel piggybacks the receive point's serial - 1, which the
		// receiver keeps current once connected to it (SetFast above).
		if err := kernel.txAck(pl.fast != nil); err != nil {
			return nil, err
		}
		pl.fastTx = kernel
		w.WatchFD(kernel.tx.WakeFD()) // the kernel's answer to WantWake
	}
	return pl, nil
}

// newSession starts the link session of pl's port.
func (pl *lgPipeline) newSession() error {
	c := ConfigOf(pl.w.Config())
	p := pl.port
	window := c.credit
	if window == 0 {
		window = c.TxBuffer
	}
	prot := linksession.Protect{Tx: p.S != nil, Rx: p.R != nil}
	if p.R != nil {
		prot.RxMode = uint8(p.R.Delivery())
	}
	fastSend := p.S != nil && pl.kernel.sends() // as newLGPipeline connects it
	return pl.StartSession(pl.w, sessionConfig(pl.w.Config()), p, window, prot, fastSend, &pl.queue, &pl.lgs.Session, "lg, lgnb or monitor with a --lg-protect that fits this one")
}

// OnSession sets LinkGuardian's credit and explicit ACK batch from the
// window of a new agreement (linkpipe.LinkRx).
func (pl *lgPipeline) OnSession(now int64, ev linksession.Event) {
	a, _ := pl.Sess.Agreed()
	if ev&linksession.EvReset == 0 {
		return
	}
	if p := pl.port; p.S != nil {
		p.S.SetCredit(min(int(a.Window), ConfigOf(pl.w.Config()).credit))
	}
	if p := pl.port; p.R != nil {
		p.R.SetAckEvery(ackEvery(int(a.Window))) // the peer's credit is the agreed window
	}
}

// handOffSend gives sending to the kernel when the conditions of
// linkguardian's send hand-over hold on the dataplane's side: the kernel
// sends host frames now (its direction is on), the link session is up,
// every data frame the core sent has left the link port's TX ring (none
// placed this iteration, none not completed), the core has taken in every
// host frame the kernel passed on (sendTakenIn), and no PFC class is
// paused; the core adds that it holds no host frame, the credit window has
// room and no pause is in force. A session that is not up, or a direction
// switched off, takes sending back.
func (pl *lgPipeline) handOffSend(now int64) {
	f := pl.fastTx
	if f == nil {
		return
	}
	f.tx.DrainWake()
	p := pl.port
	if !f.txLive.Load() || pl.Sess.State() != linksession.Up {
		p.ClaimSend()
		return
	}
	if p.S.FastSendOwned() || pl.tx.Queued(dataplane.PortLink) > 0 || pl.queue.Gate.PausedMask(now) != 0 {
		return
	}
	for _, s := range pl.w.Port(dataplane.PortLink).Sockets() {
		if s.TxInFlight() > 0 {
			return
		}
	}
	if socks := pl.w.Port(dataplane.PortHost).Sockets(); len(socks) > 0 && !pl.sendTakenIn(now, socks[0]) {
		return
	}
	p.HandOffSend(now, pl.queue.Empty())
}

// lgLookEvery is how often the worker looks at what the kernel did while it
// owns a direction: FastSend.WakeEvery (its sends: while nothing is
// outstanding twice as far apart at each look that finds no send, up to
// 2 ms, about 500 wakeups a second idle; the first dummy for frames the
// kernel sent goes at the first look from DummyWait after the last of them
// on, WakeEvery after that at the latest) and FastPoint.LookEvery (the
// receive point: the ACK the kernel's deliveries owe goes up to that much
// later). Each look puts the worker on a CPU, and on the 2-core veth pair
// the wakeups of halted vCPUs were what lg's short flows paid over
// forward's: with looks every AckDelay and 250 µs (0.30 wakeups per data
// frame) lg-noloss's 143 B p50 was 182-191 µs, every millisecond (0.09-0.11)
// 155-163 µs, three runs each, interleaved (docs/results.md). 50 µs took so
// much of the machine that retransmissions slowed (TestLGFastSendCarries:
// p50 140-210 µs instead of 34-36, 20 % delivered by the kernel instead of
// 100 %).
const lgLookEvery = int64(time.Millisecond)

// hostDropsEvery is how often sockTaken reads a socket's drop counters (a
// syscall) while the kernel's count of frames passed on is ahead of what
// the worker read.
const hostDropsEvery = int64(time.Millisecond)

// sendTakenIn publishes how many host frames of the host port's first
// queue the core has taken in (FastSend.Consumed: read from socket s,
// every one passed to the pipeline before this Poll, plus those the socket
// dropped) and reports whether that is every frame the kernel passed on
// (ToGo). The kernel numbers nothing while they differ (lf_lg_tx step 2),
// so a frame it passed on while sending was handed back, still in an
// unflushed batch of the socket, cannot be numbered after a later one.
func (pl *lgPipeline) sendTakenIn(now int64, s *xdp.Socket) bool {
	t := pl.fastTx.tx
	taken := pl.hostTaken.count(now, s, t.ToGo().Load())
	t.Consumed().Store(taken)
	return t.ToGo().Load() == taken
}

// sockTaken counts the frames an AF_XDP socket took in of those its port's
// program handed it: read, or dropped by the socket (its XDP_STATISTICS, a
// syscall, read at most every hostDropsEvery while the count is short of
// what the program handed it).
type sockTaken struct {
	drops   uint64
	dropsAt int64
}

// count returns the frames socket s took in, want the program's count.
func (c *sockTaken) count(now int64, s *xdp.Socket, want uint64) uint64 {
	taken := s.RxFrames() + c.drops
	if int64(taken-want) < 0 && now-c.dropsAt >= hostDropsEvery {
		c.dropsAt = now
		if st, err := s.Stats(); err == nil {
			c.drops = st.RxDropped + st.RxRingFull
			taken = s.RxFrames() + c.drops
		}
	}
	return taken
}

// handOff gives the receiver's in-order point to the kernel when the
// conditions of linkguardian's hand-over hold on the dataplane's side: the
// kernel judges frames now (its direction is on), the session accepts
// the peer's frames, every frame the core delivered has left the host
// port's TX ring (none sent this iteration, none not completed), and no frame the kernel passed on waits on
// the link port's data lane (the kernel would give the point straight back).
func (pl *lgPipeline) handOff(now int64) {
	r := pl.port.R
	if pl.fast == nil {
		return
	}
	if held, _ := pl.gate.holding(); held || r.FastOwned() || !pl.fast.rxLive.Load() || !pl.Sess.Accepts() ||
		pl.deliveriesOut() || pl.linkRxWaiting() {
		return
	}
	r.HandOff(now)
}

// deliveriesOut reports whether frames the core delivered have not all
// left the host port's TX rings.
func (pl *lgPipeline) deliveriesOut() bool {
	if pl.tx.Queued(dataplane.PortHost) > 0 {
		return true
	}
	for _, s := range pl.w.Port(dataplane.PortHost).Sockets() {
		if s.TxInFlight() > 0 {
			return true
		}
	}
	return false
}

// linkRxWaiting reports whether frames wait on the link port's data lane.
func (pl *lgPipeline) linkRxWaiting() bool {
	socks := pl.w.Port(dataplane.PortLink).Sockets()
	return len(socks) > 0 && socks[dataplane.LaneData].RxReady() > 0
}

// Room implements Pipeline: host frames up to the queue's free space.
func (pl *lgPipeline) Room(port int) int { return pl.queue.PortRoom(port) }

// Receive implements Pipeline: link frames go to the core (PFC frames to the
// sender's pause state), host frames to the queue.
func (pl *lgPipeline) Receive(now int64, port, _ int, descs []xdp.Desc, tx *dataplane.Tx) {
	pl.unpublished = pl.unpublished || len(descs) > 0
	if port == dataplane.PortHost {
		pl.queue.Push(pl.w, now, descs)
		return
	}
	pl.ReceiveLink(now, descs, tx, pl)
}

// OnCore hands a link frame to the core (linkpipe.LinkRx).
func (pl *lgPipeline) OnCore(now int64, f link.Frame) { pl.port.Receive(now, f) }

// Poll implements Pipeline: host frames from the queue to the core as credit
// and pauses allow, the core's timers, then the core's output in priority
// order (PFC, loss notifications and retransmissions on the priority lane;
// normal frames, explicit ACKs and dummies on the data lane; deliveries to
// the host port), and the periodic statistics, monitors and tuning.
func (pl *lgPipeline) Poll(now int64, tx *dataplane.Tx) int64 {
	p := pl.port
	// Statistics first: everything sent before this call is on the TX
	// rings and counted per lane, so a published snapshot agrees with
	// itself (a keepalive made now would be counted by its session but not
	// yet by its lane).
	pl.periodic(now)
	next := pl.SessionPoll(now, tx)
	admit, wait := pl.AdmitHost(now, tx)
	next = min(next, wait)
	// Leave room on the link TX ring for control frames and copies. A
	// rate-limited link port takes what its egress queue holds in bytes
	// too: the rest waits in the class queues (where PFC sees it) rather
	// than be tail-dropped by the shaper and recovered as a loss.
	budget := tx.Space(dataplane.PortLink, dataplane.LaneData) - 2*pl.w.Batch()
	bytes, over := tx.ByteSpace(dataplane.PortLink), pl.w.Config().LinkOverhead()
	for admit && budget > 0 && p.CanSend(now) {
		class, ok := pl.queue.Head(now)
		if !ok {
			break
		}
		f := pl.queue.Front(class)
		if f.Len+over > bytes || !p.Send(now, f) {
			break
		}
		pl.queue.Pop(class)
		budget--
		bytes -= f.Len + over
	}
	pl.trackHeld(now, p)
	p.Poll(now, pl.queue.Empty())

	for _, ev := range p.Out.Events {
		switch ev.Kind {
		case linkguardian.EvRecovered:
			pl.lgs.RetxDelay.Record(uint64(ev.Nanos))
			if ev.Count == 0 {
				pl.lgs.RetxDelayFirst.Record(uint64(ev.Nanos))
			}
		}
	}
	prio := pl.CtrlLane()
	pl.send(tx, dataplane.PortLink, prio, p.Out.Pause)
	pl.lgs.PauseTx.Add(uint64(len(p.Out.Pause)))
	pl.send(tx, dataplane.PortLink, prio, p.Out.Urgent)
	pl.send(tx, dataplane.PortLink, prio, p.Out.Retx)
	pl.send(tx, dataplane.PortLink, dataplane.LaneData, p.Out.Normal)
	pl.send(tx, dataplane.PortLink, dataplane.LaneData, p.Out.Low)
	deliver := p.Out.Deliver
	if pl.fast != nil {
		if c := p.R.Stats.FastClaims; c != pl.gate.claims {
			pl.gate.claimed(now, c, int64(pl.fast.rx.LastNs()))
		}
		deliver = pl.gate.pass(now, deliver)
	}
	pl.send(tx, dataplane.PortHost, dataplane.LaneData, deliver)
	// Delivered frames belong to the host path now: those on the TX ring
	// return after completion, those that did not fit (counted) at once.
	for _, f := range deliver {
		tx.Release(uint64(f.H))
	}
	for _, f := range p.Out.Free {
		tx.Release(uint64(f.H))
	}
	if len(p.Out.Normal) > 0 || len(p.Out.Retx) > 0 {
		pl.sample(p)
	}
	if !pl.unpublished {
		o := &p.Out
		pl.unpublished = len(o.Pause)+len(o.Urgent)+len(o.Retx)+len(o.Normal)+len(o.Low)+len(deliver)+len(o.Free)+len(o.Events) > 0
	}
	p.Out.Reset()
	pl.handOff(now)
	pl.handOffSend(now)
	next = min(next, p.NextDeadline(now, pl.queue.Empty()), pl.queue.Signal(now, tx))
	if held, until := pl.gate.holding(); held {
		next = min(next, until)
	}
	if !pl.queue.Empty() {
		if r, ok := pl.queue.Gate.NextResume(now); ok {
			next = min(next, r)
		}
	}
	if pl.unpublished {
		next = min(next, pl.publishAt)
	}
	return next
}

// Stop implements Pipeline.
func (pl *lgPipeline) Stop() {
	pl.publish(pl.port)
	pl.PublishSession() // the session's final counters too, not those of up to 20 ms ago
}

func (pl *lgPipeline) send(tx *dataplane.Tx, port, lane int, fs []link.Frame) {
	for _, f := range fs {
		tx.Send(port, lane, uint64(f.H), f.Len)
	}
}

// periodic publishes statistics and tunes (every 20 ms), sets N from the
// measured loss of the outgoing direction (10 ms) and applies the protection
// policy to the incoming one (100 ms).
func (pl *lgPipeline) periodic(now int64) {
	p := pl.port
	if now >= pl.publishAt {
		pl.publishAt = now + int64(20*time.Millisecond)
		host, link := pl.w.TxCounters(dataplane.PortHost), pl.w.TxCounters(dataplane.PortLink) // this lane's own with several workers
		pl.sampleRate(now, int64(host.Bytes.Load()))
		pl.lgs.LinkTxRingFull.Store(link.Dropped.Load())
		pl.lgs.HostTxRingFull.Store(host.Dropped.Load())
		pl.publish(p)
		pl.unpublished = false
		pl.PublishSession()
		pl.tune(p)
	}
	if pl.mon != nil && now >= pl.monitorAt {
		pl.monitorAt = now + int64(10*time.Millisecond)
		// Frames sent vs frames the peer reported lost (once per
		// notification round: lost copies count again, as they should).
		pl.mon.ObserveTotals(now, p.S.Stats.DataSent, p.S.Stats.RetxRequests)
		if rate, ok := pl.mon.Rate(now); ok {
			pl.lgs.lossRate.Store(uint64(rate * 1e12))
			n := linkguardian.CopiesLimit(ConfigOf(pl.w.Config()).TargetLoss, rate, ConfigOf(pl.w.Config()).MaxCopies)
			if int64(n) != pl.lgs.Copies.Load() {
				p.S.SetCopies(n)
				pl.lgs.Copies.Store(int64(n))
			}
		}
	}
	if pl.rmon != nil && now >= pl.rmonAt {
		pl.rmonAt = now + int64(100*time.Millisecond)
		pl.rmon.ObserveTotals(now, p.R.Stats.DataRx, p.R.Stats.LostDetected)
		if rate, ok := pl.rmon.Rate(now); ok {
			pl.lgs.rxLossRate.Store(uint64(rate * 1e12))
			if ConfigOf(pl.w.Config()).Auto {
				received, lost := pl.rmon.Totals(now)
				pl.applyPolicy(now, p, rate, received, lost)
			}
		}
	}
}

// trackHeld accounts the time host frames wait for the link with the reason
// that held them first.
func (pl *lgPipeline) trackHeld(now int64, p *linkguardian.Endpoint) {
	held := !pl.queue.Empty() && !p.CanSend(now)
	switch {
	case held && pl.heldSince == 0:
		pl.heldSince, pl.heldByPause = now, p.S.Paused(now)
	case !held && pl.heldSince != 0:
		if pl.heldByPause {
			pl.heldPause += now - pl.heldSince
		} else {
			pl.heldCredit += now - pl.heldSince
		}
		pl.heldSince = 0
	}
}

// applyPolicy switches the receiver's mode as the policy decides for the
// measured loss rate of the incoming direction.
func (pl *lgPipeline) applyPolicy(now int64, p *linkguardian.Endpoint, rate float64, received, lost uint64) {
	cur := p.R.Delivery()
	want := autoMode(ConfigOf(pl.w.Config()).Policy, received, lost, cur)
	if want == cur {
		return
	}
	if p.R.SetDelivery(now, want) {
		pl.lgs.RxMode.Store(int64(want))
		pl.lgs.ModeChanges.Add(1)
		pl.w.Config().Logger.Info("protection policy changed the receiving mode",
			"dev", pl.w.Config().LinkPort, "from", cur.String(), "to", want.String(), "loss_rate", rate)
	}
}

// OnPFC applies a PFC (or 802.3x PAUSE) frame received on the link port: it
// gates the host frames of the classes it names, and a pause of the
// protected class pauses LinkGuardian's sender.
func (pl *lgPipeline) OnPFC(now int64, b []byte) {
	// Every PAUSE/PFC frame gates the host frames of the classes it names.
	var f pfc.Frame
	if !pl.queue.ApplyPFC(now, b, pl.pfcSpeed, &f) {
		return
	}
	pl.lgs.PFCRx.Add(1)
	// LinkGuardian's own backpressure (the peer's reorder buffer) pauses
	// the whole sender.
	q := f.Quanta[0]
	if f.Opcode == pfc.OpPFC {
		if f.ClassEnable&(1<<pl.pfcClass) == 0 {
			return
		}
		q = f.Quanta[pl.pfcClass]
	}
	if q == 0 {
		pl.port.Resume(now)
		return
	}
	pl.port.Pause(now, pfc.QuantaToNanos(q, pl.pfcSpeed))
}

func (pl *lgPipeline) sample(p *linkguardian.Endpoint) {
	if p.S != nil {
		pl.lgs.TxBuf.Record(uint64(p.S.Outstanding()))
	}
	if p.R != nil {
		_, b := p.R.Buffered()
		pl.lgs.Reorder.Record(uint64(b))
	}
}

func (pl *lgPipeline) publish(p *linkguardian.Endpoint) {
	s := pl.lgs
	s.Mu.Lock()
	s.core.Port = p.Stats
	s.core.PriorityLane = pl.CtrlLane() == dataplane.LanePrio
	if pl.tx.Lanes(dataplane.PortLink) > 1 {
		s.core.PriorityFrames = pl.w.LaneFrames(dataplane.PortLink, dataplane.LanePrio)
	}
	s.core.HeldByCreditNs, s.core.HeldByPauseNs = pl.heldCredit, pl.heldPause
	s.HostGateWaits.Store(pl.gate.Waits)
	s.HostGateHeld.Store(pl.gate.Held)
	if pl.fastTx != nil && pl.fastTx.tx != nil {
		s.kernelTx = pl.fastTx.tx.Counters()
	}
	s.core.ClassFrames = pl.queue.Frames
	s.core.PausedClasses = pl.queue.Gate.PausedMask(pl.publishAt)
	if p.S != nil {
		if s.core.Sender == nil {
			s.core.Sender = new(linkguardian.SenderStats)
		}
		*s.core.Sender = p.S.Stats
		s.core.Copies = p.S.Copies()
		s.core.TxBuffer, s.core.Credit = ConfigOf(pl.w.Config()).TxBuffer, p.S.Credit() // the credit in force (the session agrees it)
		s.core.DummyWait = p.S.DummyWait()
	}
	if p.R != nil {
		if s.core.Receiver == nil {
			s.core.Receiver = new(linkguardian.ReceiverStats)
		}
		*s.core.Receiver = p.R.Stats
		s.core.Renotify, s.core.AckNoTimeout = p.R.Timers()
		s.core.ResumeThreshold, s.core.PauseThreshold = p.R.Thresholds()
		s.core.AckDelay, s.core.AckEvery = p.R.AckDelay(), p.R.AckEvery()
	}
	s.Mu.Unlock()
}

// minRetxStep and maxRetxStep bound the re-notification interval derived
// from measured retransmission delays.
const (
	minRetxStep = int64(100 * time.Microsecond)
	maxRetxStep = int64(20 * time.Millisecond)
)

// sampleRate updates the peak rate of frames delivered to the host port from
// its byte counter.
func (pl *lgPipeline) sampleRate(now, bytes int64) {
	if pl.rateAt > 0 && now > pl.rateAt {
		pl.peakRate = max(pl.peakRate, float64(bytes-pl.rateBytes)*8e9/float64(now-pl.rateAt))
	}
	pl.rateBytes, pl.rateAt = bytes, now
}

// tune sets the receiver's timers and thresholds from the retransmission
// delays measured so far (first-round recoveries; Appendix B.1) once there
// are enough of them.
func (pl *lgPipeline) tune(p *linkguardian.Endpoint) {
	c := ConfigOf(pl.w.Config())
	if p.R == nil || (c.AckTimeout > 0 && c.fixedThresholds && c.AckDelay > 0) {
		return // nothing to tune
	}
	var snap metrics.Snapshot
	pl.lgs.RetxDelayFirst.SnapshotInto(&snap)
	if snap.Count < 20 {
		return
	}
	if c.AckTimeout == 0 {
		tuneTimers(p, &snap)
	}
	if c.AckDelay == 0 {
		p.R.SetAckDelay(tunedAckDelay(int64(snap.Quantile(0.99)), c.dummyWaitMax()))
	}
	if !c.fixedThresholds && pl.peakRate > 0 {
		resume := tunedResume(int64(snap.Quantile(0.99)), pl.peakRate, c.frameLen(), c.credit)
		p.R.SetThresholds(resume, linkguardian.PauseThreshold(resume, c.frameLen()))
	}
}

// minAckDelay is the least AckDelay tunedAckDelay sets.
const minAckDelay = int64(20 * time.Microsecond)

// tunedAckDelay is the explicit ACK's delay for a link whose p99
// retransmission delay (loss detected → copy received: a control frame to
// the peer's worker and a frame back, Appendix B.1) is retx. The sender's
// TX buffer holds frames that long anyway, for loss recovery (it is sized
// for it), so waiting as long for reverse data to carry the ACK leaves it
// at most about twice as full as recovery needs, and AckEvery bounds it by
// credit. It stays at or below half the peer's longest wait for an ACK
// before it probes with a dummy (dummyWaitMax, taken as this end's): a
// coalesced ACK must be back before the probe goes; until a delay is
// measured, it is that half.
func tunedAckDelay(retx, dummyWaitMax int64) int64 {
	return max(min(retx, dummyWaitMax/2), minAckDelay)
}

// tunedResume is Appendix B.1's resume threshold for a measured flight time
// (ns) and drain rate (bit/s), kept between minResume and what the credit
// window of credit frames of frameLen bytes can put in the reorder buffer,
// less the 2-MTU hysteresis (resumeCeiling).
func tunedResume(flight int64, rate float64, frameLen, credit int) int {
	resume := linkguardian.ResumeThreshold(flight, rate, 1)
	return max(min(resume, resumeCeiling(frameLen, credit)), minResume)
}

// resumeCeiling is the highest resume threshold: what the credit window of
// credit frames of frameLen bytes can put in the reorder buffer, less the
// 2-MTU hysteresis, and at least minResume.
func resumeCeiling(frameLen, credit int) int {
	return max(credit*frameLen-2*frameLen, minResume)
}

// tuneTimers sets the receiver's timers from the largest retransmission delay
// measured so far (Appendix B.1): renotify after 1.5× it, skip the hole after
// three such intervals but never before minAckNoTimeout.
func tuneTimers(p *linkguardian.Endpoint, snap *metrics.Snapshot) {
	renotify, ackNo, _ := linkguardian.Timers(int64(snap.Max), 1.5, 2)
	if renotify < minRetxStep || renotify > maxRetxStep {
		renotify = min(max(renotify, minRetxStep), maxRetxStep)
		ackNo = 3 * renotify
	}
	p.R.SetTimers(renotify, max(ackNo, minAckNoTimeout))
}

// The link session resets LinkGuardian's endpoint through linksession.Link.
var _ linksession.Link = (*linkguardian.Endpoint)(nil)
