package lgpipe

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// defaultCellTxBuffer is each link's TX buffer (and reorder window) under
// the cells: 512 cells of up to 1.5 KB hold 6 ms at 1 Gbit/s, above the
// retransmission delays of a loaded machine (p99 ≈ 7 ms under TCP,
// defaultTxBuffer) spread over the bundle's links.
const defaultCellTxBuffer = 512

// cellLink is what runs under the cells on one link port with --cells-link-mode
// lg, lgnb or monitor: a LinkGuardian endpoint and the link session.
//
// Cells and the cell control frames keep their own link-header type; the
// endpoint sequences cells in place in the link fields their layout keeps
// for it (seqhdr.Stamp: no header inserted, no copy, no byte added, and
// its receiver hands them up whole), so the node above reads them as it
// reads cells on a bare link. Encapsulating them in a data header would
// cost 8 bytes of every cell and headroom or a copy, and the receiver
// would have to tell a cell from a host frame after stripping anyway.
//
// Cells are sequenced and held in the TX buffer until ACKed (retransmitted
// on loss); they wait in a queue of their own while the credit window is
// full. Credit and REACH frames go unsequenced (PassCarried: they carry
// an ACK) on the priority lane: they are refreshed on timers, so a lost one
// costs an interval, and sequencing them on a lane that overtakes the cells
// would make every one look like a hole.
//
// A link that leaves the node's usable set (interface down, the session
// leaves Up or its peer goes silent, REACHes missed, too much loss, its
// cells un-ACKed while the other links' are ACKed) hands every cell it
// holds back to the sprayer (Node.Respray): the queued ones, and copies of
// the un-ACKed ones not handed back before. The originals stay in the TX
// buffer, and the link layer goes on with them if the link comes back (a
// scheduling stall of the peer excludes links that are fine): nothing is
// reset, so nothing has to agree again. A session reset (the peer
// restarted) hands back what it would free. A cell that arrived twice is a
// duplicate the reassembly drops.
type cellLink struct {
	linkpipe.LayerSession

	ep          *linkguardian.Endpoint
	measure     bool // the link's loss goes to the node (monitor, loss classes)
	unprotected bool // monitor: its losses are for good (reportLost)

	// q holds cells waiting for the credit window.
	q link.Ring
	// Give-up: un-ACKed cells and no ACK progress for giveUp ns (the
	// peer's receiver gets nothing: a one-way failure REACH cannot see).
	acked      uint64
	progressAt int64 // last ACK progress, or nothing outstanding
	ackAt      int64 // last ACK progress
	giveUp     int64
	gaveUp     bool
	back       []link.Frame
	taken      []link.Frame
	handedTo   seqhdr.Seq // un-ACKed cells before it were handed back

	st linkpipe.CellLinkLG
}

// lgLink is the linksession.Link of a cell link: a reset hands the TX
// buffer back to the sprayer instead of freeing it.
type lgLink struct{ c *cellLink }

func (k lgLink) TxNext() seqhdr.Seq { return k.c.ep.TxNext() }

func (k lgLink) Reset(now int64, tx, rx seqhdr.Seq) {
	k.c.handBack(now)
	k.c.ep.Reset(now, tx, rx)
	k.c.st.Resets++
	k.c.handedTo = tx
}

func init() {
	for _, m := range []dataplane.Mode{ModeLG, ModeLGNB, ModeMonitor} {
		linkpipe.RegisterLayer(string(m), linkpipe.LayerSpec{Configure: ConfigureLayer, Frames: lgLayerFrames, Start: StartLayer, New: newCellLink})
	}
}

// ConfigureLayer fills LinkGuardian's defaults under the cells.
func ConfigureLayer(c *dataplane.Config) error {
	if err := Defaults(c, ModeLG); err != nil {
		return err
	}
	if ConfigOf(c).TxBuffer == 0 {
		ConfigOf(c).TxBuffer = min(defaultCellTxBuffer, int(max(c.RingSize, 2)))
	}
	return nil
}

// lgLayerFrames is the frames LinkGuardian holds under the cells.
func lgLayerFrames(c *dataplane.Config) (uint64, string, error) {
	b := ConfigOf(c).TxBuffer
	if b < 2 || b&(b-1) != 0 || b > int(c.RingSize) {
		return 0, "", fmt.Errorf("dataplane: --lg-tx-buffer %d: want a power of two from 2 to --ring-size %d for the link layer under the cells (default %d)", b, c.RingSize, defaultCellTxBuffer)
	}
	n := uint64(len(c.LinkPorts))
	return n * 3 * uint64(b), fmt.Sprintf(", each of %d links' TX buffer, reorder window and credit queue (3 × --lg-tx-buffer %d)", n, b), nil
}

// StartLayer sets the credit window.
func StartLayer(c *dataplane.Config) {
	ConfigOf(c).credit = CreditWindow(ConfigOf(c).TxBuffer, c.RingSize)
}

func newCellLink(e linkpipe.LayerEnv) (linkpipe.Layer, error) {
	d, cfg := e.W.Node(), e.W.Config()
	mac := d.Port(e.Port).MAC()
	c := &cellLink{LayerSession: linkpipe.NewLayerSession(e),
		q: link.NewRing(ConfigOf(cfg).TxBuffer), giveUp: e.GiveUp}
	ep, err := linkguardian.NewEndpoint(ConfigOf(cfg).core(dataplane.Mode(e.Mode), linkpipe.SessionConfigOf(cfg).Protect, mac, cfg.Link.PeerMAC), e.Cells)
	if err != nil {
		return nil, err
	}
	c.ep = ep
	rx, _ := linkguardian.ParseDelivery(e.Mode) // lg, lgnb or monitor (checked by defaults)
	prot := linksession.Protect{Tx: true, Rx: true, RxMode: uint8(rx)}
	if err := c.StartSession(ConfigOf(cfg).credit, prot, lgLink{c}); err != nil {
		return nil, err
	}
	c.measure = e.Mode == "monitor" || e.LossClasses
	c.unprotected = e.Mode == "monitor"
	return c, nil
}

// Up reports whether the link may carry cells: its session is Up and its
// cells are ACKed.
func (c *cellLink) Up() bool { return c.Sess.State() == linksession.Up && !c.gaveUp }

// watchAcks gives the link up when its cells have gone un-ACKed for
// giveUp while another link's were ACKed meanwhile, and takes it back when
// ACKs come again. (When no link gets an ACK, the peer is more likely kept
// from running than every link dead at once: REACH decides then. After
// such a stall the first link's ACKs can come before the others' and give
// them up: that costs copies of their un-ACKed cells, which the reassembly
// drops, and the links are back with their next ACK.)
func (c *cellLink) watchAcks(now int64) {
	s := c.ep.S
	switch {
	case s.Stats.Acked != c.acked:
		c.acked, c.progressAt, c.ackAt, c.gaveUp = s.Stats.Acked, now, now, false
	case s.Outstanding() == 0:
		c.progressAt, c.gaveUp = now, false
	case !c.gaveUp && now-c.progressAt > c.giveUp && c.Cells.AckedSince(c.L, c.progressAt+c.giveUp/2) &&
		c.Cells.Usable()&^(1<<c.L) != 0: // never the last usable link
		c.gaveUp = true
		c.st.GiveUps++
		c.W.Log().Warn("cells: no ACK from the other end of this link; it is taken out and its cells go over the other links",
			"dev", c.W.Node().Port(c.Port).Name, "unacked", s.Outstanding(), "waited", time.Duration(now-c.progressAt).String())
	}
}

// Receive takes frames from the link: session frames to the session, the
// rest through the endpoint once the session agreed; what the endpoint
// delivers goes to the node.
func (c *cellLink) Receive(now int64, f link.Frame, tx *dataplane.Tx) {
	ev, taken := c.TakeSession(now, f, c.W.Bytes(uint64(f.H), f.Len), tx, &c.st.NotAgreed)
	if !taken {
		c.ep.Receive(now, f)
	} else if ev&linksession.EvReset != 0 {
		// The endpoint's credit from the agreed window.
		a, _ := c.Sess.Agreed()
		c.ep.S.SetCredit(min(int(a.Window), ConfigOf(c.W.Config()).credit))
	}
}

// DeliverUp hands what the endpoint delivered to the node.
func (c *cellLink) DeliverUp(now int64) {
	o := &c.ep.Out
	for _, f := range o.Deliver {
		c.Cells.LinkRx(now, c.L, f)
	}
	o.Deliver = o.Deliver[:0]
}

// Poll runs the session (link state, HELLOs on the control lane) and the
// endpoint's timers, hands deliveries up and returns the next deadline.
func (c *cellLink) Poll(now int64, tx *dataplane.Tx) int64 {
	next := c.SessionPoll(now, tx)
	c.ep.Poll(now, c.q.Len() == 0)
	c.DeliverUp(now)
	c.watchAcks(now)
	if c.measure {
		if rate, ok := c.LossRate(now, c.ep.R.Stats.DataRx, c.ep.R.Stats.LostDetected); ok {
			c.st.LossRate = rate
		}
	}
	if c.unprotected {
		// monitor: a gap is a cell lost for good.
		c.ReportLost(now, c.ep.R.Stats.LostDetected)
	}
	return min(next, c.ep.NextDeadline(now, c.q.Len() == 0))
}

// Pump moves queued cells into the endpoint as its credit window and the
// TX ring allow, then places the endpoint's output.
func (c *cellLink) Pump(now int64, tx *dataplane.Tx) {
	if c.Up() {
		budget := tx.Space(c.Port, dataplane.LaneData) - c.W.Batch()
		for c.q.Len() > 0 && budget > 0 && c.ep.CanSend(now) {
			f := c.q.Pop()
			c.ep.SendCarried(now, f)
			budget--
		}
	}
	c.flush(now, tx)
}

// flush places the endpoint's transmit lists (recovery on the control
// lane, cells and ACKs on the data lane) and releases what it freed.
func (c *cellLink) flush(now int64, tx *dataplane.Tx) {
	o := &c.ep.Out
	ctrl := c.CtrlLane()
	for _, list := range [][]link.Frame{o.Pause, o.Urgent, o.Retx} {
		for _, f := range list {
			tx.Send(c.Port, ctrl, uint64(f.H), f.Len)
			c.Cells.Pending(c.Port, f.Len)
		}
	}
	for _, list := range [][]link.Frame{o.Normal, o.Low} {
		for _, f := range list {
			tx.Send(c.Port, dataplane.LaneData, uint64(f.H), f.Len)
			c.Cells.Pending(c.Port, f.Len)
		}
	}
	for _, f := range o.Free {
		c.Cells.Release(tx, f)
	}
	c.DeliverUp(now) // none expected here; the node takes them in its next drain
	o.Reset()
}

// Failover hands the cells of a link that left the usable set back to the
// sprayer.
func (c *cellLink) Failover(now int64) {
	unacked, n := c.handBack(now)
	c.W.Log().Info("cells: link left the usable set; its cells go over the other links",
		"dev", c.W.Node().Port(c.Port).Name, "handed_back", n, "unacked", unacked)
}

// handBack gives the node's sprayer the link's queued cells and copies of
// its un-ACKed ones not handed back before; it returns how many were
// un-ACKed copies, and how many it gave in all.
func (c *cellLink) handBack(now int64) (unacked, n int) {
	c.taken, c.handedTo = c.ep.Unacked(c.handedTo, c.taken[:0])
	c.back = c.back[:0]
	for _, f := range c.taken {
		c.back = append(c.back, c.Cells.CopyFrame(f))
	}
	for c.q.Len() > 0 {
		c.back = append(c.back, c.q.Pop()) // never on a TX ring: no copy needed
	}
	// With no other usable link the cells wait in this link's own queue
	// (sent when its session is up again) instead of finding no route;
	// so do those with no other link of their loss class (a strict
	// class's only link), instead of crossing a worse one.
	others := c.Cells.Usable()&^(1<<c.L) != 0
	kept := c.back[:0]
	for _, f := range c.back {
		if f.Len > 0 && (others && c.Cells.ClassRoute(c.L, f) || !c.q.Push(f)) {
			kept = append(kept, f)
		}
	}
	if len(kept) > 0 {
		c.Cells.Respray(now, c.L, kept)
	}
	c.st.HandedBack += uint64(len(kept))
	return len(c.taken), len(kept)
}

// Held is how many frames the link holds between calls.
func (c *cellLink) Held() int {
	n := c.q.Len()
	if c.ep.S != nil {
		n += c.ep.S.Outstanding()
	}
	if c.ep.R != nil && c.ep.R.Delivery() == linkguardian.InOrder {
		f, _ := c.ep.R.Buffered()
		n += f
	}
	return n
}

// Snapshot fills s from the endpoint and session.
func (c *cellLink) Snapshot(s *linkpipe.CellLinkLG) {
	*s = c.st
	c.SessionSnapshot(s)
	s.Queued = c.q.Len()
	if ss := c.ep.S; ss != nil {
		s.Unacked = ss.Outstanding()
		s.Sent, s.RetxCopies = ss.Stats.DataSent, ss.Stats.RetxCopies
	}
	if rs := c.ep.R; rs != nil {
		s.LostSeen, s.Recovered, s.GaveUp = rs.Stats.LostDetected, rs.Stats.Recovered, rs.Stats.AckNoTimeouts+rs.Stats.ForcedSkips
	}
}

// ToLink takes the node's output for the link: control frames
// unsequenced on the control lane, cells to the credit queue (counted and
// dropped when it is full).
func (c *cellLink) ToLink(_ int64, lo *link.Out, tx *dataplane.Tx) {
	for _, f := range lo.Ctrl {
		if c.ep.PassCarried(f) {
			tx.Send(c.Port, c.CtrlLane(), uint64(f.H), f.Len)
			c.Cells.Pending(c.Port, f.Len)
		}
		c.Cells.Release(tx, f)
	}
	for _, f := range lo.Data {
		if !c.q.Push(f) {
			c.st.QueueDrops++
			c.Cells.Release(tx, f)
		}
	}
}

// Room is the credit queue's free places.
func (c *cellLink) Room() int { return c.q.Room() }

// QueuedBytes is what waits in the credit queue.
func (c *cellLink) QueuedBytes() int { return c.q.Bytes() }

// AckedAfter reports whether the link had an ACK after t.
func (c *cellLink) AckedAfter(t int64) bool { return c.ackAt > t }
