package fecpipe

import (
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/pfc"
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
// Loss and policy: fecCtl (fecctl.go).
type fecPipeline struct {
	w     *dataplane.Worker
	d     *dataplane.Dataplane
	queue dataplane.ClassQueues
	st    *Stats
	linkpipe.LinkSess

	fecCtl

	pfcSpeed uint64
	snap     Snapshot
	obsAt    int64
	maxFrame int
}

func newFECPipeline(w *dataplane.Worker) (dataplane.Pipeline, error) {
	d, cfg := w.Node(), w.Config()
	c := ConfigOf(cfg)
	pl := &fecPipeline{
		w: w, d: d, st: StatsOf(d),
		queue:    dataplane.NewClassQueues(d),
		pfcSpeed: cfg.Link.Speed,
	}
	bufLen := w.FrameLen()
	trailer := cfg.Link.Integrity.Overhead()
	// The longest host frame whose parity fits the link (checkMTU made sure
	// a host MTU frame does) and a UMEM frame with the trailer after it.
	pl.maxFrame = min(d.LinkMTU()+dataplane.EthHeaderLen, bufLen) - fec.MaxOverhead - trailer
	err := pl.fecCtl.init(c,
		fec.SenderConfig{Flush: int64(c.Flush), MaxFrame: pl.maxFrame, BufLen: bufLen - trailer, LocalMAC: d.LinkMAC(), PeerMAC: cfg.Link.PeerMAC},
		fec.ReceiverConfig{Window: fecWindow, Wait: int64(c.Wait), Immediate: c.Immediate},
		pl, cfg.Logger, cfg.LinkPort, "run --mode lg for lg; exclusion needs a bundle", &pl.st.PolicyChanges)
	if err != nil {
		return nil, err
	}
	prot := linksession.Protect{Tx: true, Rx: true, FEC: true}
	if err := pl.StartSession(w, *linkpipe.SessionConfigOf(cfg), &pl.fecCtl, fecWindow, prot, false, &pl.queue, &pl.st.Session, "fec"); err != nil {
		return nil, err
	}
	cfg.Logger.Info("fec: sender protection", "dev", cfg.LinkPort, "protection", pl.inForce().String(), "basis", pl.basis,
		"target", c.Target, "wait", c.Wait.String(), "immediate", c.Immediate, "flush", c.Flush.String(), "max_frame", pl.maxFrame)
	pl.publish(0)
	return pl, nil
}

// Bytes implements link.Memory.
func (pl *fecPipeline) Bytes(h link.Handle, n int) []byte { return pl.w.Bytes(uint64(h), n) }

// Alloc implements link.Memory: a free UMEM frame for a parity frame (the
// sender's BufLen says every UMEM frame holds one).
func (pl *fecPipeline) Alloc(int) (link.Handle, bool) {
	a, ok := pl.w.Tx().Alloc()
	return link.Handle(a), ok
}

// Room implements Pipeline: host frames up to the queue's free space.
func (pl *fecPipeline) Room(port int) int { return pl.queue.PortRoom(port) }

// Receive implements Pipeline: host frames to the class queues; link
// frames to the session (HELLO), the class queues' gate (PFC) or the
// Receiver (once the session agreed with their sender).
func (pl *fecPipeline) Receive(now int64, port, _ int, descs []xdp.Desc, tx *dataplane.Tx) {
	if port == dataplane.PortHost {
		pl.queue.Push(pl.w, now, descs)
		return
	}
	pl.ReceiveLink(now, descs, tx, pl)
}

// OnPFC gates the class queues by a PAUSE/PFC frame from the link
// (linkpipe.LinkRx).
func (pl *fecPipeline) OnPFC(now int64, b []byte) {
	var f pfc.Frame
	if pl.queue.ApplyPFC(now, b, pl.pfcSpeed, &f) {
		pl.st.PFCRx.Add(1)
	}
}

// OnSession: the session's events need nothing of fec (linkpipe.LinkRx).
func (pl *fecPipeline) OnSession(int64, linksession.Event) {}

// OnCore hands a link frame to the Receiver (linkpipe.LinkRx).
func (pl *fecPipeline) OnCore(now int64, f link.Frame) {
	pl.rcv.Receive(now, f)
}

// Poll implements Pipeline: statistics, monitors and policy; the session;
// host frames from the queues to the Sender as the link's TX ring allows;
// both cores' timers; then the Sender's frames on the link's data lane and
// the Receiver's deliveries on the host port.
func (pl *fecPipeline) Poll(now int64, tx *dataplane.Tx) int64 {
	if now >= pl.obsAt {
		pl.obsAt = now + ObserveInterval
		pl.observe(now, pl.Sess)
		pl.publish(now)
	}
	next := pl.SessionPoll(now, tx)
	admit, wait := pl.AdmitHost(now, tx)
	next = min(next, wait)
	// Each frame takes Copies descriptors and may close a group (parity);
	// a few stay free for the session's frames.
	// On a rate-limited link port the egress queue's bytes bound it too
	// (the frame's copies, with its link header, and a parity frame).
	per := pl.snd.Copies() + 1
	budget := tx.Space(dataplane.PortLink, dataplane.LaneData) - 4
	bytes, over := tx.ByteSpace(dataplane.PortLink), pl.w.Config().LinkOverhead()
	for admit && budget >= per {
		class, ok := pl.queue.Head(now)
		if !ok {
			break
		}
		f := pl.queue.Front(class)
		if per*(f.Len+over) > bytes {
			break
		}
		pl.queue.Pop(class)
		pl.snd.Send(now, f)
		budget -= per
		bytes -= per * (f.Len + over)
	}
	next = min(next, pl.snd.Poll(now), pl.rcv.Poll(now))
	for _, f := range pl.snd.Out.Send {
		tx.Send(dataplane.PortLink, dataplane.LaneData, uint64(f.H), f.Len)
	}
	for _, f := range pl.snd.Out.Free {
		tx.Release(uint64(f.H))
	}
	for _, f := range pl.rcv.Out.Deliver {
		tx.Send(dataplane.PortHost, dataplane.LaneData, uint64(f.H), f.Len)
	}
	for _, f := range pl.rcv.Out.Free {
		tx.Release(uint64(f.H))
	}
	pl.snd.Out.Reset()
	pl.rcv.Out.Reset()
	next = min(next, pl.queue.Signal(now, tx))
	if !pl.queue.Empty() {
		if r, ok := pl.queue.Gate.NextResume(now); ok {
			next = min(next, r)
		}
	}
	return min(next, pl.obsAt)
}

// Stop implements Pipeline.
func (pl *fecPipeline) Stop() { pl.publish(pl.w.Now()) }

// publish copies the state for /stats.json.
func (pl *fecPipeline) publish(now int64) {
	v := &pl.snap
	pl.fecCtl.snapshot(v)
	v.RxHeld, v.HostQueued, v.UmemFree = pl.rcv.Held(), pl.queue.Len(), pl.w.FreeFrames()
	pl.st.store(v)
	pl.PublishSession()
}
