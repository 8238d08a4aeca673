package linkpipe

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/lossmon"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Layer is what runs under the cells on one link port (every
// --cells-link-mode but none): lg, lgnb or monitor (cellLink, celllink.go)
// or fec (cellFEC, cellfec.go), each registered by name (RegisterLayer).
// The pipeline hands it the link's received frames and the node's output
// for the link, polls it, and asks it for link state and statistics; it
// hands the node what it delivers (Cells).
type Layer interface {
	// Receive takes a frame from the link; DeliverUp hands what the layer
	// delivered to the node.
	Receive(now int64, f link.Frame, tx *dataplane.Tx)
	DeliverUp(now int64)
	// Poll runs the session and the layer's timers; next deadline.
	Poll(now int64, tx *dataplane.Tx) int64
	// Up: the link may carry cells.
	Up() bool
	// ToLink takes the node's output for the link; Pump places what the
	// layer has to send.
	ToLink(now int64, lo *link.Out, tx *dataplane.Tx)
	Pump(now int64, tx *dataplane.Tx)
	// Room is how many more cells ToLink takes now (it drops beyond):
	// the node cuts no more for the link meanwhile (NodeConfig.LinkRoom).
	Room() int
	// Failover: the link left the node's usable set (hand back what it holds).
	Failover(now int64)
	// QueuedBytes waits in the layer to be sent; Held is the frames it
	// holds between calls.
	QueuedBytes() int
	Held() int
	// AckedAfter: the link's peer acknowledged cells after t (lg).
	AckedAfter(t int64) bool
	Snapshot(s *CellLinkLG)
}

// Cells is what a Layer sees of the cells above it: their frames, their
// node and their other links.
type Cells interface {
	// Alloc and Bytes are the frames cells go in.
	link.Memory
	// Release ends the pipeline's hold on f; SendRelease sends f on port's
	// lane and releases it; CopyFrame copies f into a new frame (a zero
	// Frame, counted, if none is free); Pending counts n bytes listed on
	// port's TX lists; Tx is the worker's.
	Release(tx *dataplane.Tx, f link.Frame)
	SendRelease(tx *dataplane.Tx, port, lane int, f link.Frame)
	CopyFrame(f link.Frame) link.Frame
	Pending(port, n int)
	Tx() *dataplane.Tx
	// LinkRx hands the node a frame the layer of link l delivered;
	// Respray gives it cells to spray over the other links; CellsLost
	// says how many cells link l lost for good; SetLoss reports link l's
	// measured loss.
	LinkRx(now int64, l int, f link.Frame)
	Respray(now int64, l int, frames []link.Frame)
	CellsLost(now int64, l, n int)
	SetLoss(now int64, l int, loss float64)
	// ClassRoute: cell f, handed back by link l, would find another
	// usable link of its own loss class (else the layer keeps it).
	ClassRoute(l int, f link.Frame) bool
	// Usable is the node's usable links (bit l: link l); ReachCounts link
	// l's REACHes received and missed; AckedSince whether a link other
	// than l had an ACK after t.
	Usable() uint64
	ReachCounts(l int) (rx, lost uint64)
	AckedSince(l int, t int64) bool
	// CellFrame is the largest cell frame, MaxAlloc the largest frame
	// Alloc gives, PrioLane link l's control lane, NodeID the node's id.
	CellFrame() int
	MaxAlloc() int
	PrioLane(l int) int
	NodeID() uint16
}

// LayerEnv is where a Layer runs: link L of the cells above it, port
// number Port of worker W, and what the cells' configuration says to it.
type LayerEnv struct {
	W     *dataplane.Worker
	Cells Cells
	L     int
	Port  int
	// Mode is the layer's name (--cells-link-mode).
	Mode string
	// GiveUp is how long cells may go unacknowledged on a link before it
	// is given up (--cells-reach-interval × --cells-reach-th).
	GiveUp int64
	// LossClasses: the node sorts its links by their measured loss, which
	// every layer then reports (SetLoss).
	LossClasses bool
}

// LayerSpec is a link layer under the cells: --cells-link-mode NAME
// (RegisterLayer). A nil hook does nothing.
type LayerSpec struct {
	// Configure fills the layer's defaults and checks them (after the
	// cells' own).
	Configure func(c *dataplane.Config) error
	// Frames is the UMEM frames the layers of c's links hold, and what
	// holds them (said in the error of a --frames too small).
	Frames func(c *dataplane.Config) (n uint64, what string, err error)
	// Overhead is how much longer than its longest cell a frame of the
	// layer gets: the cells are that much shorter.
	Overhead int
	// LossFaulty, if not zero, is the measured loss from which a link is
	// faulty (the node's ReachConfig.LossFaulty; it is clear again below a
	// tenth of it).
	LossFaulty func(c *dataplane.Config) float64
	// Start completes c, the configuration in force, once the ports are
	// bound.
	Start func(c *dataplane.Config)
	// New makes the layer of one link.
	New func(e LayerEnv) (Layer, error)
}

// layers are the registered link layers under the cells.
var layers = map[string]*LayerSpec{}

// RegisterLayer makes --cells-link-mode name run s under the cells. It is
// called from init; a name registered twice panics.
func RegisterLayer(name string, s LayerSpec) {
	if _, ok := layers[name]; ok {
		panic(fmt.Sprintf("dataplane: link layer %q registered twice", name))
	}
	layers[name] = &s
}

// FindLayer is the layer of --cells-link-mode name (nil: none, or not
// registered).
func FindLayer(name string) *LayerSpec { return layers[name] }

// LayerSession is the link session of one link port under the cells
// (every Layer): started with the node id, it follows the port's state,
// sends its HELLOs on the control lane and logs what the peer's offers
// mean. A Layer embeds it.
type LayerSession struct {
	LayerEnv
	portSession
	scfg linksession.Config
	link linksession.Link

	collisionLog int64 // last node-id collision logged
	collisions   uint64

	// The link's loss for the node (lossRate).
	lmon   *lossmon.Monitor
	lmonAt int64
	// lost: the layer's count of cells lost for good at the last report.
	lost uint64
}

// NewLayerSession is the session of e's link, not started
// (StartSession).
func NewLayerSession(e LayerEnv) LayerSession {
	return LayerSession{LayerEnv: e}
}

// ReportLost tells the node how many cells were lost for good since the
// last call, from the layer's running count total (a count that went
// back, e.g. after a reset, starts over): the reassembly skips their holes
// without waiting for its timeout.
func (c *LayerSession) ReportLost(now int64, total uint64) {
	if total > c.lost {
		c.Cells.CellsLost(now, c.L, int(min(total-c.lost, 1<<20)))
	}
	c.lost = total
}

// LossRate measures the link's raw loss for the node (Node.SetLoss:
// exclusion, loss classes) every 100 ms over a 1 s window: rx cells
// received and lost missing, as the layer counts them, plus the peer's
// REACHes by their counter, so that an idle link is measured too (200
// REACHes a second at 5 ms). It reports the rate to the node and returns
// it when the window holds enough frames.
func (c *LayerSession) LossRate(now int64, rx, lost uint64) (float64, bool) {
	if now < c.lmonAt {
		return 0, false
	}
	if c.lmon == nil {
		c.lmon, _ = lossmon.New(lossmon.Config{Window: int64(time.Second), MinSamples: 200})
	}
	c.lmonAt = now + int64(100*time.Millisecond)
	reachRx, reachLost := c.Cells.ReachCounts(c.L)
	c.lmon.ObserveTotals(now, rx+reachRx, lost+reachLost)
	rate, ok := c.lmon.Rate(now)
	if ok {
		c.Cells.SetLoss(now, c.L, rate)
	}
	return rate, ok
}

// StartSession configures and starts the session: window frames offered,
// prot the link layer's protection, link what a reset resets.
func (c *LayerSession) StartSession(window int, prot linksession.Protect, link linksession.Link) error {
	d, cfg := c.W.Node(), c.W.Config()
	c.link = link
	c.scfg = linksession.Config{
		LocalMAC: d.Port(c.Port).MAC(),
		PeerMAC:  cfg.Link.PeerMAC,
		// max: a port without sockets (tests in memory) has no lanes.
		Offer: offer(&cfg.Link, window, max(d.Port(c.Port).Lanes(), 1), c.Cells.CellFrame(), prot),
		Node:  c.Cells.NodeID(),
	}
	if err := c.startPort(c.W, c.Port, c.Cells.PrioLane(c.L), c.scfg, link); err != nil {
		return err
	}
	if c.W.Port(c.Port).DownSince() != 0 {
		c.Sess.LinkDown(0)
	}
	return nil
}

// TakeSession takes what is the session's of frame f (bytes b) from the
// link: a session frame, to SessionRx (ev: its events), and any frame
// before the session agreed with its sender (counted in notAgreed). It
// releases them and says taken; a frame not taken is the layer's.
func (c *LayerSession) TakeSession(now int64, f link.Frame, b []byte, tx *dataplane.Tx, notAgreed *uint64) (ev linksession.Event, taken bool) {
	if t, ok := seqhdr.FrameType(b); ok && t.IsSession() {
		ev = c.SessionRx(now, b)
	} else if c.Sess.AcceptLink(now) {
		return 0, false
	} else {
		*notAgreed++
	}
	c.Cells.Release(tx, f)
	return ev, true
}

// SessionRx hands a session frame to the session, logs what it means and
// returns the session's events.
func (c *LayerSession) SessionRx(now int64, b []byte) linksession.Event {
	ev := c.Sess.Receive(now, b)
	log := c.W.Log()
	name := c.W.Node().Port(c.Port).Name
	if ev&linksession.EvNodeCollision != 0 {
		c.collisions++
		if c.collisionLog == 0 || now-c.collisionLog > int64(time.Second) {
			c.collisionLog = now
			log.Error("link session refused: the node at the other end of this link has this node's --cells-node-id; give one of them another --cells-node-id (unique in the fabric); the link carries nothing until then",
				"dev", name, "node_id", c.scfg.Node)
		}
	}
	a, _ := c.Sess.Agreed()
	if ev&linksession.EvReset != 0 {
		c.agreedLanes(a)
	}
	if ev&linksession.EvMismatch != 0 {
		if a.Conflict&linksession.ConflictProtect != 0 {
			log.Error("link session: "+linkModeConflict(a)+": the link layers do not fit; run both ends with the same --cells-link-mode", "dev", name)
		}
		if a.Conflict&linksession.ConflictIntegrity != 0 {
			SayMismatch(log, name, linksession.Agreed{Conflict: linksession.ConflictIntegrity, LocalCaps: a.LocalCaps, PeerCaps: a.PeerCaps})
		}
	}
	if ev&linksession.EvUp != 0 {
		log.Info("cells: link session up", "dev", name, "peer_node", a.PeerNode, "window", a.Window, "lanes", a.Lanes)
	}
	return ev
}

// CellMismatchText is mismatchText for a link under the cells, whose
// protect mode is its --cells-link-mode.
func CellMismatchText(a linksession.Agreed) string {
	if a.Conflict&linksession.ConflictProtect == 0 {
		return MismatchText(a)
	}
	t := linkModeConflict(a)
	if a.Conflict&linksession.ConflictIntegrity != 0 {
		a.Conflict = linksession.ConflictIntegrity
		t += "; " + MismatchText(a)
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

// SessionPoll follows the port's state (down: the session waits; up: it
// agrees again), runs the session's timers, sends its frames on the
// control lane and returns its next deadline.
func (c *LayerSession) SessionPoll(now int64, tx *dataplane.Tx) int64 {
	c.followPort(now)
	next := c.Sess.Poll(now)
	for next <= now {
		h, ok := c.Cells.Alloc(seqhdr.MinFrameLen)
		if !ok {
			next = now + int64(dataplane.MinTimerSleep)
			break
		}
		f := link.Frame{H: h, Len: seqhdr.MinFrameLen}
		n := c.Sess.Frame(now, c.W.Bytes(uint64(h), f.Len))
		if n == 0 {
			c.Cells.Release(tx, f)
			break
		}
		tx.Send(c.Port, c.CtrlLane(), uint64(h), n)
		c.Cells.Release(tx, f)
		next = c.Sess.Poll(now)
	}
	return next
}

// SessionSnapshot fills the session's part of s.
func (c *LayerSession) SessionSnapshot(s *CellLinkLG) {
	s.Session = c.Sess.State().String()
	a, ok := c.Sess.Agreed()
	if ok {
		s.PeerNode = a.PeerNode
	}
	s.Mismatch = ""
	if a.Conflict != 0 {
		s.Mismatch = CellMismatchText(a)
	}
	s.NodeCollisions = c.collisions
}
