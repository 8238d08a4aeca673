package dataplane

import (
	"sync/atomic"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link"
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
// The session (cellSess) makes the two ends agree before cells flow and
// again when either restarts: a reset restarts the numbering both ways
// (the sender's open group is dropped, the receiver's window released). A
// link that is not up carries no cell; the node takes it out of its
// routes. Nothing is held for retransmission, so nothing is handed back on
// failover: what was on the link is lost, as without a link layer.
type cellFEC struct {
	cellSess
	fecCtl

	obsAt    int64
	st       CellLinkLG
	snap     FECSnapshot
	changes  atomic.Uint64
	maxFrame int
}

// cellFECWindow is each link's receiver window, the least fec takes (a
// power of two above two groups of fec.MaxN): UMEM frames it may hold.
const cellFECWindow = 512

func newCellFEC(pl *cellPipeline, l int) (*cellFEC, error) {
	d, cfg := pl.w.Node(), pl.w.Config()
	c := cfg.fec()
	port := pl.ps.Links[l]
	k := &cellFEC{cellSess: cellSess{pl: pl, l: l, port: port, lanes: d.Port(port).Lanes()}, maxFrame: pl.cellFrame}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // as the cells: the peer's MAC is not known
	err := k.fecCtl.init(c,
		fec.SenderConfig{Flush: int64(c.Flush), MaxFrame: pl.cellFrame, BufLen: pl.maxAlloc, LocalMAC: d.Port(port).MAC(), PeerMAC: bcast},
		fec.ReceiverConfig{Window: cellFECWindow, Wait: int64(c.Wait), Immediate: true, Carried: true},
		pl, cfg.Logger, d.Port(port).Name, "under the cells a lossy link leaves the routes by its measured loss (--loss-faulty); lg is --cells-link-mode lg", &k.changes)
	if err != nil {
		return nil, err
	}
	if err := k.startSession(cellFECWindow, linksession.Protect{Tx: true, Rx: true, FEC: true}, &k.fecCtl); err != nil {
		return nil, err
	}
	if l == 0 {
		cfg.Logger.Info("cells: fec under the cells", "protection", k.inForce().String(), "basis", k.basis, "target", c.Target,
			"flush", c.Flush.String(), "max_cell_frame", pl.cellFrame)
	}
	return k, nil
}

// up reports whether the link may carry cells: its session is Up.
func (k *cellFEC) up() bool { return k.sess.State() == linksession.Up }

// receive takes a frame from the link: session frames to the session;
// once the session agreed, cells and parity to the receiver, the rest
// (credit, REACH, anything else) to the node as it is.
func (k *cellFEC) receive(now int64, f link.Frame, tx *Tx) {
	pl := k.pl
	b := pl.w.Bytes(uint64(f.H), f.Len)
	t, ok := seqhdr.FrameType(b)
	if ok && t.IsSession() {
		k.sessionRx(now, b)
		pl.release(tx, f)
		return
	}
	if !k.sess.AcceptLink(now) {
		k.st.NotAgreed++
		pl.release(tx, f)
		return
	}
	if ok && (t == seqhdr.TypeCell || t == seqhdr.TypeFECParity) {
		k.rcv.Receive(now, f)
		return
	}
	pl.node.LinkRx(now, k.l, f)
}

// deliverUp hands copies of what the receiver delivered to the node and
// releases what it is done with.
func (k *cellFEC) deliverUp(now int64) {
	pl, o := k.pl, &k.rcv.Out
	for _, f := range o.Deliver {
		if c := pl.copyFrame(f); c.Len > 0 {
			pl.node.LinkRx(now, k.l, c)
		}
	}
	for _, f := range o.Free {
		pl.release(pl.tx, f)
	}
	o.Reset()
}

// poll runs the session, the monitors and policy (every fecObserve: the
// measured loss goes to the node), the sender's flush and the receiver's
// hold; it places what they produced and returns the next deadline.
func (k *cellFEC) poll(now int64, tx *Tx) int64 {
	next := k.sessionPoll(now, tx)
	if now >= k.obsAt {
		k.obsAt = now + fecObserve
		k.observe(now, k.sess)
	}
	rs := &k.rcv.Stats
	if rate, ok := k.lossRate(now, rs.DataRx, rs.Gaps-min(rs.Filled, rs.Gaps)); ok {
		k.st.LossRate = rate
	}
	k.reportLost(now, rs.Lost)
	next = min(next, k.obsAt, k.snd.Poll(now), k.rcv.Poll(now))
	k.pump(now, tx)
	k.deliverUp(now)
	return next
}

// toLink takes the node's output for the link: control frames as they
// are on the control lane; cells to the sender (dropped and counted while
// the session is not up: the node stops spraying onto the link).
func (k *cellFEC) toLink(now int64, lo *link.Out, tx *Tx) {
	pl := k.pl
	for _, f := range lo.Ctrl {
		pl.send(tx, k.port, k.ctrlLane(), f)
		pl.pend[k.port] += f.Len
	}
	up := k.up()
	for _, f := range lo.Data {
		if !up {
			k.st.QueueDrops++
			pl.release(tx, f)
			continue
		}
		k.snd.SendCarried(now, f)
	}
}

// pump places the sender's frames (cells, copies, parity) on the data
// lane and releases what it freed.
func (k *cellFEC) pump(_ int64, tx *Tx) {
	pl, o := k.pl, &k.snd.Out
	for _, f := range o.Send {
		tx.Send(k.port, LaneData, uint64(f.H), f.Len)
		pl.pend[k.port] += f.Len
	}
	for _, f := range o.Free {
		pl.release(tx, f)
	}
	o.Reset()
}

// failover: nothing is held for retransmission, nothing to hand back.
func (k *cellFEC) failover(int64) {}

func (k *cellFEC) queuedBytes() int      { return 0 }
func (k *cellFEC) ackedAfter(int64) bool { return false }
func (k *cellFEC) held() int             { return k.rcv.Held() + k.snd.Held() }

// snapshot fills s from the coding and the session.
func (k *cellFEC) snapshot(s *CellLinkLG) {
	*s = k.st
	k.sessionSnapshot(s)
	k.fecCtl.snapshot(&k.snap)
	k.snap.RxHeld = k.rcv.Held()
	k.snap.WaitNs = 0 // delivered at once
	ss, rs := &k.snd.Stats, &k.rcv.Stats
	s.Sent, s.RetxCopies = ss.Data, ss.Copies
	s.LostSeen, s.Recovered, s.GaveUp = rs.Gaps, rs.Recovered, rs.Lost
	s.Resets = ss.Resets
	s.FEC = &k.snap
}
