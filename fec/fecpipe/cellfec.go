package fecpipe

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// cellFEC is what runs under the cells on one link port with --cells-link-mode
// fec: RAIL's XOR coding (package fec, through fecCtl as mode fec runs it)
// and the link session.
//
// Cells are numbered in place (fec.Sender.SendCarried: the link fields of
// the cell's own header, as lg does; no byte added, no copy) and a parity
// frame follows every n of them (or a group open for --fec-flush); the
// receiver de-duplicates, rebuilds any single lost cell of a group from the
// parity, and hands every cell to the node as it arrives or is rebuilt:
// out of order (fec.ReceiverConfig.Immediate). The reassembly orders each
// stream's cells anyway (they come over several links in any order), so
// in-order delivery per link would only add a bounded wait behind every
// loss, for nothing. Credit and REACH frames go uncoded, as they are, on
// the control lane (refreshed on timers, a lost one costs an interval).
//
// The receiver keeps each cell it delivered until its group is resolved
// (a later loss in the group is rebuilt from it), and the node may change
// a cell in place (a fabric node decrements its hops and sprays it on) or
// release it at once, so the node is given a copy of each delivered cell
// (in a new UMEM frame; without one the cell is lost and counted, as
// CopyFails).
//
// n: --fec-n fixed, --fec-loss given, or (default) chosen by the link
// policy from the loss this link's receiver at the other end measures and
// reports in its session frames, exactly as in mode fec (fecCtl). This
// end's measured loss (the raw loss of what it receives, before recovery)
// is also the link's loss rate for the node (Node.SetLoss: exclusion above
// ReachConfig.LossFaulty).
//
// The session (LayerSession) makes the two ends agree before cells flow and
// again when either restarts: a reset restarts the numbering both ways
// (the sender's open group is dropped, the receiver's window released). A
// link that is not up carries no cell; the node takes it out of its
// routes. Nothing is held for retransmission, so nothing is handed back on
// Failover: what was on the link is lost, as without a link layer.
type cellFEC struct {
	linkpipe.LayerSession

	fecCtl

	obsAt    int64
	st       linkpipe.CellLinkLG
	snap     Snapshot
	changes  atomic.Uint64
	maxFrame int
}

// cellFECWindow is each link's receiver window, the least fec takes (a
// power of two above two groups of fec.MaxN): UMEM frames it may hold.
const cellFECWindow = 512

func init() {
	linkpipe.RegisterLayer(string(ModeFEC), linkpipe.LayerSpec{
		Configure: func(c *dataplane.Config) error { return ConfigOf(c).defaults() },
		Frames: func(c *dataplane.Config) (uint64, string, error) {
			n := uint64(len(c.LinkPorts))
			return n * (cellFECWindow + 1), fmt.Sprintf(", each of %d links' FEC receiver window and parity frame (%d + 1)", n, cellFECWindow), nil
		},
		Overhead: fec.MaxOverhead, // a parity frame is this much longer than its longest cell
		// The links' measured loss is the raw loss (before recovery), and
		// coding is there to carry cells over lossy links: a link is
		// faulty only from where the link policy stops coding (10 % by
		// default), not from the bare default meant for unprotected links.
		LossFaulty: func(c *dataplane.Config) float64 { return ConfigOf(c).codingLimit() },
		New:        newCellFEC})
}

func newCellFEC(e linkpipe.LayerEnv) (linkpipe.Layer, error) {
	d, cfg := e.W.Node(), e.W.Config()
	c := ConfigOf(cfg)
	port, cellFrame := e.Port, e.Cells.CellFrame()
	k := &cellFEC{LayerSession: linkpipe.NewLayerSession(e), maxFrame: cellFrame}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // as the cells: the peer's MAC is not known
	err := k.fecCtl.init(c,
		fec.SenderConfig{Flush: int64(c.Flush), MaxFrame: cellFrame, BufLen: e.Cells.MaxAlloc(), LocalMAC: d.Port(port).MAC(), PeerMAC: bcast},
		fec.ReceiverConfig{Window: cellFECWindow, Wait: int64(c.Wait), Immediate: true, Carried: true},
		e.Cells, cfg.Logger, d.Port(port).Name, "under the cells a lossy link leaves the routes by its measured loss (--loss-faulty); lg is --cells-link-mode lg", &k.changes)
	if err != nil {
		return nil, err
	}
	if err := k.StartSession(cellFECWindow, linksession.Protect{Tx: true, Rx: true, FEC: true}, &k.fecCtl); err != nil {
		return nil, err
	}
	if e.L == 0 {
		cfg.Logger.Info("cells: fec under the cells", "protection", k.inForce().String(), "basis", k.basis, "target", c.Target,
			"flush", c.Flush.String(), "max_cell_frame", cellFrame)
	}
	return k, nil
}

// Up reports whether the link may carry cells: its session is Up.
func (k *cellFEC) Up() bool { return k.Sess.State() == linksession.Up }

// Receive takes a frame from the link: session frames to the session;
// once the session agreed, cells and parity to the receiver, the rest
// (credit, REACH, anything else) to the node as it is.
func (k *cellFEC) Receive(now int64, f link.Frame, tx *dataplane.Tx) {
	b := k.W.Bytes(uint64(f.H), f.Len)
	if _, taken := k.TakeSession(now, f, b, tx, &k.st.NotAgreed); taken {
		return
	}
	if t, ok := seqhdr.FrameType(b); ok && (t == seqhdr.TypeCell || t == seqhdr.TypeFECParity) {
		k.rcv.Receive(now, f)
		return
	}
	k.Cells.LinkRx(now, k.L, f)
}

// DeliverUp hands copies of what the receiver delivered to the node and
// releases what it is done with.
func (k *cellFEC) DeliverUp(now int64) {
	o := &k.rcv.Out
	for _, f := range o.Deliver {
		if c := k.Cells.CopyFrame(f); c.Len > 0 {
			k.Cells.LinkRx(now, k.L, c)
		}
	}
	for _, f := range o.Free {
		k.Cells.Release(k.Cells.Tx(), f)
	}
	o.Reset()
}

// Poll runs the session, the monitors and policy (every fecObserve: the
// measured loss goes to the node), the sender's flush and the receiver's
// hold; it places what they produced and returns the next deadline.
func (k *cellFEC) Poll(now int64, tx *dataplane.Tx) int64 {
	next := k.SessionPoll(now, tx)
	if now >= k.obsAt {
		k.obsAt = now + ObserveInterval
		k.observe(now, k.Sess)
	}
	rs := &k.rcv.Stats
	if rate, ok := k.LossRate(now, rs.DataRx, rs.Gaps-min(rs.Filled, rs.Gaps)); ok {
		k.st.LossRate = rate
	}
	k.ReportLost(now, rs.Lost)
	next = min(next, k.obsAt, k.snd.Poll(now), k.rcv.Poll(now))
	k.Pump(now, tx)
	k.DeliverUp(now)
	return next
}

// ToLink takes the node's output for the link: control frames as they
// are on the control lane; cells to the sender (dropped and counted while
// the session is not up: the node stops spraying onto the link).
func (k *cellFEC) ToLink(now int64, lo *link.Out, tx *dataplane.Tx) {
	for _, f := range lo.Ctrl {
		k.Cells.SendRelease(tx, k.Port, k.CtrlLane(), f)
		k.Cells.Pending(k.Port, f.Len)
	}
	up := k.Up()
	for _, f := range lo.Data {
		if !up {
			k.st.QueueDrops++
			k.Cells.Release(tx, f)
			continue
		}
		k.snd.SendCarried(now, f)
	}
}

// Pump places the sender's frames (cells, copies, parity) on the data
// lane and releases what it freed.
func (k *cellFEC) Pump(_ int64, tx *dataplane.Tx) {
	o := &k.snd.Out
	for _, f := range o.Send {
		tx.Send(k.Port, dataplane.LaneData, uint64(f.H), f.Len)
		k.Cells.Pending(k.Port, f.Len)
	}
	for _, f := range o.Free {
		k.Cells.Release(tx, f)
	}
	o.Reset()
}

// TxNext is the sequence number the link's next cell gets.
func (k *cellFEC) TxNext() seqhdr.Seq { return k.snd.Next() }

// Failover: nothing is held for retransmission, nothing to hand back.
func (k *cellFEC) Failover(int64) {}

func (k *cellFEC) QueuedBytes() int      { return 0 }
func (k *cellFEC) Room() int             { return math.MaxInt } // it queues nothing
func (k *cellFEC) AckedAfter(int64) bool { return false }
func (k *cellFEC) Held() int             { return k.rcv.Held() + k.snd.Held() }

// Snapshot fills s from the coding and the session.
func (k *cellFEC) Snapshot(s *linkpipe.CellLinkLG) {
	*s = k.st
	k.SessionSnapshot(s)
	k.fecCtl.snapshot(&k.snap)
	k.snap.RxHeld = k.rcv.Held()
	k.snap.WaitNs = 0 // delivered at once
	ss, rs := &k.snd.Stats, &k.rcv.Stats
	s.Sent, s.RetxCopies = ss.Data, ss.Copies
	s.LostSeen, s.Recovered, s.GaveUp = rs.Gaps, rs.Recovered, rs.Lost
	s.Resets = ss.Resets
	s.FEC = &k.snap
}
