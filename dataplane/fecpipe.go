package dataplane

import (
	"fmt"
	"math"
	"time"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/linksession"
	"github.com/linkfabric/linkfabric/lossmon"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/seqhdr"
	"github.com/linkfabric/linkfabric/xdp"
)

// fecPipeline is mode fec: RAIL's coding (package fec) on the link port, in
// both directions. Host frames wait in the class queues until the link
// session is up, then the Sender numbers them, sends each Copies times and
// a parity frame after every N; link frames go through the Receiver, which
// de-duplicates, rebuilds a single loss per group and delivers in order
// (bounded wait) or at once. Frames are UMEM frames throughout: the
// Sender's parity accumulates in a frame it allocated, a recovered frame is
// rebuilt in its parity frame, and the worker's reference counts let a
// delivered frame stay in the Receiver's window for its group's recovery.
//
// Loss and policy. The Receiver's counters feed a loss monitor every 20
// ms: per transmission (copies corrected for, lossmon.PerTransmission) and
// loss runs. This end reports the rate, mean run and its own sender's n and
// copies in its session frames (seqhdr.Report); the peer's report is the
// loss of this end's outgoing direction, from which the link policy
// (lossmon.LinkTable) decides; the decision is logged when it changes and,
// unless n was fixed or given a loss, applied to the Sender.
type fecPipeline struct {
	w     *worker
	d     *Dataplane
	cfg   *FECConfig
	snd   *fec.Sender
	rcv   *fec.Receiver
	queue classQueues
	st    *FECStats
	linkSess

	auto     bool   // the policy's decisions are applied
	basis    string // FECSnapshot.Basis
	pfcSpeed uint64

	// The receiver's loss monitors: per transmission, and loss runs (a run
	// is a "received" sample, its missing numbers "lost" ones, so the
	// window's totals give the mean run). last is the Receiver's counters
	// at the last observation; peerCopies the peer sender's copies, from
	// its report.
	mon, runs  *lossmon.Monitor
	last       fec.ReceiverStats
	peerCopies int

	peer     seqhdr.Report // the peer's last report
	peerOK   bool
	policy   lossmon.LinkState
	decided  bool
	note     string
	snap     FECSnapshot
	obsAt    int64
	rxLoss   float64
	rxBurst  float64
	rxOK     bool
	maxFrame int
}

// fecObserve is how often the monitors are fed and the statistics published.
const fecObserve = int64(20 * time.Millisecond)

func newFECPipeline(w *worker) (Pipeline, error) {
	d := w.d
	c := &d.cfg.FEC
	pl := &fecPipeline{
		w: w, d: d, cfg: c, st: d.fecStats,
		queue:      newClassQueues(hostQueueLen),
		auto:       !c.Fixed && c.Loss == 0,
		pfcSpeed:   d.cfg.LG.LinkSpeed,
		peerCopies: 1,
		rxLoss:     math.NaN(),
		rxBurst:    math.NaN(),
	}
	switch {
	case c.Fixed:
		pl.basis = "fixed"
	case c.Loss > 0:
		pl.basis = "given loss"
	default:
		pl.basis = "measured loss"
	}
	bufLen := int(w.umem.MaxFrameLen())
	trailer := d.cfg.LG.Integrity.Overhead()
	// The longest host frame whose parity fits the link (checkMTU made sure
	// a host MTU frame does) and a UMEM frame with the trailer after it.
	pl.maxFrame = min(d.linkMTU+ethHeaderLen, bufLen) - fec.MaxOverhead - trailer
	start := c.initial()
	n, k := nCopies(start.Choice)
	var err error
	pl.snd, err = fec.NewSender(fec.SenderConfig{
		N: n, Copies: k, Flush: int64(c.Flush), MaxFrame: pl.maxFrame, BufLen: bufLen - trailer,
		LocalMAC: d.linkMAC, PeerMAC: d.cfg.LG.PeerMAC,
	}, pl)
	if err != nil {
		return nil, err
	}
	pl.rcv, err = fec.NewReceiver(fec.ReceiverConfig{Window: fecWindow, Wait: int64(c.Wait), Immediate: c.Immediate}, pl)
	if err != nil {
		return nil, err
	}
	if pl.mon, err = lossmon.New(lossmon.Config{Window: int64(c.Window), MinSamples: c.MinFrames}); err != nil {
		return nil, err
	}
	if pl.runs, err = lossmon.New(lossmon.Config{Window: int64(c.Window)}); err != nil {
		return nil, err
	}
	if c.Loss > 0 {
		pl.policy, pl.decided = start, true // the decision for the given rate
	}
	prot := linksession.Protect{Tx: true, Rx: true, FEC: true}
	if err := pl.startSession(w, fecLink{pl}, fecWindow, prot, &pl.queue, &pl.st.Session, "fec"); err != nil {
		return nil, err
	}
	d.cfg.Logger.Info("fec: sender protection", "dev", d.cfg.LinkPort, "protection", start.Choice.String(), "basis", pl.basis,
		"target", c.Target, "wait", c.Wait.String(), "immediate", c.Immediate, "flush", c.Flush.String(), "max_frame", pl.maxFrame)
	pl.publish(0)
	return pl, nil
}

// fecLink is the Sender and Receiver as the link session resets them.
type fecLink struct{ pl *fecPipeline }

func (l fecLink) TxNext() seqhdr.Seq { return l.pl.snd.Next() }

func (l fecLink) Reset(now int64, tx, rx seqhdr.Seq) {
	l.pl.snd.Reset(tx)
	l.pl.rcv.Reset(now, rx)
}

// Bytes implements fec.Memory.
func (pl *fecPipeline) Bytes(h fec.Handle, n int) []byte { return pl.w.Bytes(uint64(h), n) }

// Alloc implements fec.Memory: a free UMEM frame for a parity frame.
func (pl *fecPipeline) Alloc() (fec.Handle, bool) {
	a, ok := pl.w.tx.Alloc()
	return fec.Handle(a), ok
}

// Room implements Pipeline: host frames up to the queue's free space.
func (pl *fecPipeline) Room(port int) int { return pl.queue.portRoom(port) }

// Receive implements Pipeline: host frames to the class queues; link
// frames to the session (HELLO), the class queues' gate (PFC) or the
// Receiver (once the session agreed with their sender).
func (pl *fecPipeline) Receive(now int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	if port == portHost {
		pl.queue.pushHost(pl.w, now, descs)
		return
	}
	for _, d := range descs {
		b := pl.w.Bytes(d.Addr, int(d.Len))
		if pfc.IsMACControl(b) {
			var f pfc.Frame
			if pfc.Decode(b, &f) == nil {
				pl.st.PFCRx.Add(1)
				pl.queue.Gate.Apply(&f, now, pl.pfcSpeed)
			}
			tx.Release(d.Addr)
			continue
		}
		if t, ok := seqhdr.FrameType(b); ok {
			if t.IsSession() {
				pl.sessionRx(now, b)
				tx.Release(d.Addr)
				continue
			}
			if !pl.sess.AcceptLink(now) {
				tx.Release(d.Addr) // no agreement with its sender yet (counted by the session)
				continue
			}
		}
		pl.rcv.Receive(now, fec.Frame{H: fec.Handle(d.Addr), Len: int(d.Len)})
	}
}

// Poll implements Pipeline: statistics, monitors and policy; the session;
// host frames from the queues to the Sender as the link's TX ring allows;
// both cores' timers; then the Sender's frames on the link's data lane and
// the Receiver's deliveries on the host port.
func (pl *fecPipeline) Poll(now int64, tx *Tx) int64 {
	if now >= pl.obsAt {
		pl.obsAt = now + fecObserve
		pl.observe(now)
		pl.publish(now)
	}
	next := pl.sessionPoll(now, tx)
	admit, wait := pl.admitHost(now, tx)
	next = min(next, wait)
	// Each frame takes Copies descriptors and may close a group (parity);
	// a few stay free for the session's frames.
	per := pl.snd.Copies() + 1
	budget := tx.Space(portLink, laneData) - 4
	for admit && budget >= per {
		class, ok := pl.queue.head(now)
		if !ok {
			break
		}
		f := pl.queue.front(class)
		pl.queue.pop(class)
		pl.snd.Send(now, f)
		budget -= per
	}
	next = min(next, pl.snd.Poll(now), pl.rcv.Poll(now))
	for _, f := range pl.snd.Out.Send {
		tx.Send(portLink, laneData, uint64(f.H), f.Len)
	}
	for _, f := range pl.snd.Out.Free {
		tx.Release(uint64(f.H))
	}
	for _, f := range pl.rcv.Out.Deliver {
		tx.Send(portHost, laneData, uint64(f.H), f.Len)
	}
	for _, f := range pl.rcv.Out.Free {
		tx.Release(uint64(f.H))
	}
	pl.snd.Out.Reset()
	pl.rcv.Out.Reset()
	if !pl.queue.empty() {
		if r, ok := pl.queue.Gate.NextResume(now); ok {
			next = min(next, r)
		}
	}
	return min(next, pl.obsAt)
}

// Stop implements Pipeline.
func (pl *fecPipeline) Stop() { pl.publish(pl.w.now()) }

// observe feeds the Receiver's new counts to the monitors, puts the measured
// rate in this end's report, and runs the policy on the peer's report.
func (pl *fecPipeline) observe(now int64) {
	r := &pl.rcv.Stats
	rx, lost := lossmon.PerTransmission(pl.peerCopies, r.Span-pl.last.Span, r.Frames-pl.last.Frames)
	pl.mon.Observe(now, rx, lost)
	pl.runs.Observe(now, r.Holes-pl.last.Holes, r.Gaps-pl.last.Gaps)
	pl.last = *r
	pl.rxLoss, pl.rxOK = pl.mon.Rate(now)
	runs, missing := pl.runs.Totals(now)
	pl.rxBurst = lossmon.MeanBurst(missing, runs)
	rep := seqhdr.Report{RxLoss: seqhdr.RxLossUnknown, TxN: uint8(pl.snd.N()), TxCopies: uint8(pl.snd.Copies())}
	if pl.rxOK {
		rep.RxLoss = uint32(min(pl.rxLoss, 1) * 1e9)
	}
	if pl.rxBurst > 0 {
		rep.RxBurst = uint16(min(pl.rxBurst*256, math.MaxUint16))
	}
	pl.sess.SetReport(rep)

	peer, ok := pl.sess.PeerReport()
	if !ok || (pl.peerOK && peer == pl.peer) {
		return
	}
	pl.peer, pl.peerOK = peer, true
	pl.peerCopies = max(int(peer.TxCopies), 1)
	if peer.RxLoss != seqhdr.RxLossUnknown {
		burst := math.NaN()
		if peer.RxBurst > 0 {
			burst = float64(peer.RxBurst) / 256
		}
		pl.decide(now, float64(peer.RxLoss)/1e9, burst)
	}
}

// decide runs the link policy on the outgoing direction's measured loss,
// logs a change and applies it when the policy is in charge.
func (pl *fecPipeline) decide(now int64, rate, burst float64) {
	prev := pl.policy
	pl.policy = pl.cfg.Table.DecideAt(now, rate, burst, prev)
	ch := pl.policy.Choice
	changed := !pl.decided || ch != prev.Choice
	pl.decided = true
	pl.note = ""
	switch {
	case !pl.auto:
		pl.note = "not applied: the protection was fixed (--fec-n) or chosen for --fec-loss"
	case !applicable(ch):
		pl.note = fmt.Sprintf("not applied: mode fec cannot do %v; the sender keeps %v (run --mode lg for lg; exclusion needs a bundle)", ch, pl.inForce())
	default:
		n, k := nCopies(ch)
		if n != pl.snd.N() {
			pl.snd.SetN(n) // n ≤ fec.MaxN and the buffer was checked at NewSender
		}
		if k != pl.snd.Copies() {
			pl.snd.SetCopies(k)
		}
	}
	if changed {
		pl.st.PolicyChanges.Add(1)
		pl.d.cfg.Logger.Info("fec: link policy", "dev", pl.d.cfg.LinkPort, "from", prev.Choice.String(), "to", ch.String(),
			"tx_loss_rate", rate, "mean_burst", burst, "target", pl.cfg.Target, "in_force", pl.inForce(), "note", pl.note)
	}
}

// inForce is the Sender's protection as a policy choice would name it.
func (pl *fecPipeline) inForce() lossmon.LinkChoice {
	n, k := pl.snd.N(), pl.snd.Copies()
	switch {
	case n > 0:
		return lossmon.LinkChoice{Action: lossmon.ActFEC, N: n}
	case k > 1:
		return lossmon.LinkChoice{Action: lossmon.ActReplicate, Copies: k}
	}
	return lossmon.LinkChoice{Action: lossmon.ActNone}
}

// publish copies the state for /stats.json.
func (pl *fecPipeline) publish(now int64) {
	v := &pl.snap
	v.Sender, v.Receiver = pl.snd.Stats, pl.rcv.Stats
	v.N, v.Copies, v.Basis = pl.snd.N(), pl.snd.Copies(), pl.basis
	v.WaitNs = pl.rcv.Wait()
	if pl.cfg.Immediate {
		v.WaitNs = 0
	}
	v.RxLoss, v.RxMeasured = finite(pl.rxLoss), pl.rxOK
	v.RxBurst = finite(pl.rxBurst)
	v.TxMeasured = pl.peerOK && pl.peer.RxLoss != seqhdr.RxLossUnknown
	v.TxLoss, v.TxBurst = 0, 0
	if v.TxMeasured {
		v.TxLoss, v.TxBurst = float64(pl.peer.RxLoss)/1e9, float64(pl.peer.RxBurst)/256
	}
	v.Policy = FECPolicy{Target: pl.cfg.Target, State: pl.policy, Note: pl.note, Changes: pl.st.PolicyChanges.Load()}
	if pl.decided {
		v.Policy.Decision = pl.policy.Choice.String()
		v.Policy.Applied = pl.auto && applicable(pl.policy.Choice)
	}
	v.RxHeld, v.HostQueued, v.UmemFree = pl.rcv.Held(), pl.queue.n, pl.w.refs.free.Len()
	pl.st.store(v)
	pl.publishSession()
}

// finite is v, or 0 for NaN.
func finite(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
