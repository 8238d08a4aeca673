package dataplane

import (
	"time"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/lossmon"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// cellLayer is what runs under the cells on one link port (every
// --cells-link-mode but none): lg, lgnb or monitor (cellLink, celllink.go) or fec
// (cellFEC, cellfec.go). The pipeline hands it the link's received frames
// and the node's output for the link, polls it, and asks it for link state
// and statistics; it hands the node what it delivers.
type cellLayer interface {
	// receive takes a frame from the link; deliverUp hands what the layer
	// delivered to the node.
	receive(now int64, f link.Frame, tx *Tx)
	deliverUp(now int64)
	// poll runs the session and the layer's timers; next deadline.
	poll(now int64, tx *Tx) int64
	// up: the link may carry cells.
	up() bool
	// toLink takes the node's output for the link; pump places what the
	// layer has to send.
	toLink(now int64, lo *link.Out, tx *Tx)
	pump(now int64, tx *Tx)
	// failover: the link left the node's usable set (hand back what it holds).
	failover(now int64)
	// queuedBytes waits in the layer to be sent; held is the frames it
	// holds between calls.
	queuedBytes() int
	held() int
	// ackedAfter: the link's peer acknowledged cells after t (lg).
	ackedAfter(t int64) bool
	snapshot(s *CellLinkLG)
}

// cellSess is the link session of one link port under the cells (both
// kinds of cellLayer): started with the node id, it follows the port's
// state, sends its HELLOs on the control lane and logs what the peer's
// offers mean.
type cellSess struct {
	pl   *cellPipeline
	l    int
	port int
	sess *linksession.Session
	scfg linksession.Config
	link linksession.Link

	lanes        int   // agreed lanes (1: no priority lane at the peer)
	oneLaneSaid  bool  // sayOneLane logged
	collisionLog int64 // last node-id collision logged
	collisions   uint64

	// The link's loss for the node (lossRate).
	lmon   *lossmon.Monitor
	lmonAt int64
	// lost: the layer's count of cells lost for good at the last report.
	lost uint64
}

// reportLost tells the node how many cells were lost for good since the
// last call, from the layer's running count total (a count that went
// back, e.g. after a reset, starts over): the reassembly skips their holes
// without waiting for its timeout.
func (c *cellSess) reportLost(now int64, total uint64) {
	if total > c.lost {
		c.pl.node.CellsLost(now, c.l, int(min(total-c.lost, 1<<20)))
	}
	c.lost = total
}

// lossRate measures the link's raw loss for the node (Node.SetLoss:
// exclusion, loss classes) every 100 ms over a 1 s window: rx cells
// received and lost missing, as the layer counts them, plus the peer's
// REACHes by their counter, so that an idle link is measured too (200
// REACHes a second at 5 ms). It reports the rate to the node and returns
// it when the window holds enough frames.
func (c *cellSess) lossRate(now int64, rx, lost uint64) (float64, bool) {
	if now < c.lmonAt {
		return 0, false
	}
	if c.lmon == nil {
		c.lmon, _ = lossmon.New(lossmon.Config{Window: int64(time.Second), MinSamples: 200})
	}
	c.lmonAt = now + int64(100*time.Millisecond)
	lr := c.pl.node.Reach().Link(c.l)
	c.lmon.ObserveTotals(now, rx+lr.ReachRx, lost+lr.ReachLost)
	rate, ok := c.lmon.Rate(now)
	if ok {
		c.pl.node.SetLoss(now, c.l, rate)
	}
	return rate, ok
}

// startSession configures and starts the session: window frames offered,
// prot the link layer's protection, link what a reset resets.
func (c *cellSess) startSession(window int, prot linksession.Protect, link linksession.Link) error {
	d, cfg := c.pl.w.Node(), c.pl.w.Config()
	c.link = link
	c.scfg = linksession.Config{
		LocalMAC: d.Port(c.port).MAC(),
		PeerMAC:  cfg.Link.PeerMAC,
		Offer: linksession.Offer{
			Window:    uint32(window),
			Lanes:     uint8(max(c.lanes, 1)), // a port without sockets: tests in memory
			MTU:       uint16(min(c.pl.cellFrame, 1<<16-1)),
			Speed:     uint32(max(cfg.Link.Speed/1_000_000, 1)),
			Protect:   prot,
			Integrity: cfg.Link.Integrity,
		},
		Node: cfg.cells().NodeID,
	}
	s, err := linksession.New(c.scfg, link)
	if err != nil {
		return err
	}
	c.sess = s
	if c.pl.w.Port(c.port).DownSince() != 0 {
		s.LinkDown(0)
	}
	return nil
}

// ctrlLane is the lane of link control.
func (c *cellSess) ctrlLane() int {
	if c.lanes < 2 {
		return LaneData
	}
	return c.pl.prio[c.l]
}

// sessionRx hands a session frame to the session, logs what it means and
// returns the session's events.
func (c *cellSess) sessionRx(now int64, b []byte) linksession.Event {
	ev := c.sess.Receive(now, b)
	log := c.pl.w.Log()
	name := c.pl.w.Node().Port(c.port).Name
	if ev&linksession.EvNodeCollision != 0 {
		c.collisions++
		if c.collisionLog == 0 || now-c.collisionLog > int64(time.Second) {
			c.collisionLog = now
			log.Error("link session refused: the node at the other end of this link has this node's --cells-node-id; give one of them another --cells-node-id (unique in the fabric); the link carries nothing until then",
				"dev", name, "node_id", c.scfg.Node)
		}
	}
	a, _ := c.sess.Agreed()
	if ev&linksession.EvReset != 0 {
		c.lanes = int(a.Lanes)
		sayOneLane(log, name, c.pl.w.Port(c.port).Lanes(), c.lanes, &c.oneLaneSaid)
	}
	if ev&linksession.EvMismatch != 0 {
		if a.Conflict&linksession.ConflictProtect != 0 {
			log.Error("link session: "+linkModeConflict(a)+": the link layers do not fit; run both ends with the same --cells-link-mode", "dev", name)
		}
		if a.Conflict&linksession.ConflictIntegrity != 0 {
			sayMismatch(log, name, linksession.Agreed{Conflict: linksession.ConflictIntegrity, LocalCaps: a.LocalCaps, PeerCaps: a.PeerCaps})
		}
	}
	if ev&linksession.EvUp != 0 {
		log.Info("cells: link session up", "dev", name, "peer_node", a.PeerNode, "window", a.Window, "lanes", a.Lanes)
	}
	return ev
}

// cellMismatchText is mismatchText for a link under the cells, whose
// protect mode is its --cells-link-mode.
func cellMismatchText(a linksession.Agreed) string {
	if a.Conflict&linksession.ConflictProtect == 0 {
		return mismatchText(a)
	}
	t := linkModeConflict(a)
	if a.Conflict&linksession.ConflictIntegrity != 0 {
		a.Conflict = linksession.ConflictIntegrity
		t += "; " + mismatchText(a)
	}
	return t
}

// linkModeConflict names the two ends' --cells-link-mode.
func linkModeConflict(a linksession.Agreed) string {
	return "--cells-link-mode " + cellLinkMode(a.Local) + " here, " + cellLinkMode(a.Peer) + " at the peer"
}

// cellLinkMode is the --cells-link-mode an end's protect mode says.
func cellLinkMode(p linksession.Protect) string {
	if p.FEC {
		return "fec"
	}
	return [...]string{"lg", "lgnb", "monitor", "?"}[min(p.RxMode, 3)]
}

// sessionPoll follows the port's state (down: the session waits; up: it
// agrees again), runs the session's timers, sends its frames on the
// control lane and returns its next deadline.
func (c *cellSess) sessionPoll(now int64, tx *Tx) int64 {
	pl := c.pl
	down := pl.w.Port(c.port).DownSince() != 0
	switch st := c.sess.State(); {
	case down && st != linksession.Down:
		c.sess.LinkDown(now)
	case !down && st == linksession.Down:
		c.sess.LinkUp(now)
	}
	next := c.sess.Poll(now)
	for next <= now {
		h, ok := pl.Alloc(seqhdr.MinFrameLen)
		if !ok {
			next = now + int64(MinTimerSleep)
			break
		}
		f := link.Frame{H: h, Len: seqhdr.MinFrameLen}
		n := c.sess.Frame(now, pl.w.Bytes(uint64(h), f.Len))
		if n == 0 {
			pl.release(tx, f)
			break
		}
		tx.Send(c.port, c.ctrlLane(), uint64(h), n)
		pl.release(tx, f)
		next = c.sess.Poll(now)
	}
	return next
}

// sessionSnapshot fills the session's part of s.
func (c *cellSess) sessionSnapshot(s *CellLinkLG) {
	s.Session = c.sess.State().String()
	a, ok := c.sess.Agreed()
	if ok {
		s.PeerNode = a.PeerNode
	}
	s.Mismatch = ""
	if a.Conflict != 0 {
		s.Mismatch = cellMismatchText(a)
	}
	s.NodeCollisions = c.collisions
}
