package linkpipe

import (
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linksession"
)

// portSession is the link session of one link port of a worker, what both
// adapters are built on: LinkSess (a pipeline with one link port: lg, fec,
// which adds the host frames' admission, the peer's MAC and the published
// statistics) and LayerSession (a layer under the cells, which adds the
// node id, the loss the node routes by and frames from the cells' memory).
// It follows the port's state, keeps the lanes agreed and the control lane
// they leave.
type portSession struct {
	w    *dataplane.Worker
	Sess *linksession.Session
	port int
	// prio is the port's control lane when the peer has a second one;
	// lanes the lanes agreed (1: the peer has no priority lane, everything
	// on lane 0).
	prio, lanes int
	// oneLaneSaid: sayOneLane logged.
	oneLaneSaid bool
}

// startPort starts the session of w's port over link with c, control on
// lane prio once agreed.
func (s *portSession) startPort(w *dataplane.Worker, port, prio int, c linksession.Config, link linksession.Link) error {
	sess, err := linksession.New(c, link)
	if err != nil {
		return err
	}
	*s = portSession{w: w, Sess: sess, port: port, prio: prio, lanes: w.Port(port).Lanes()}
	return nil
}

// offer is the session offer every link session makes from the engine's
// link configuration: window frames, lanes, the hosts' mtu and prot.
func offer(lc *dataplane.LinkConfig, window, lanes, mtu int, prot linksession.Protect) linksession.Offer {
	return linksession.Offer{
		Window:    uint32(window),
		Lanes:     uint8(lanes),
		MTU:       uint16(min(mtu, 1<<16-1)),
		Speed:     uint32(max(lc.Speed/1_000_000, 1)),
		Protect:   prot,
		Integrity: lc.Integrity,
	}
}

// CtrlLane is the lane for link control: the priority lane, unless the
// session agreed on one lane (the peer has no other queue to receive it on).
func (s *portSession) CtrlLane() int {
	if s.lanes < 2 {
		return dataplane.LaneData
	}
	return s.prio
}

// followPort follows the port's state: down, the session waits; up, it
// agrees again.
func (s *portSession) followPort(now int64) {
	down := s.w.Port(s.port).DownSince() != 0
	switch st := s.Sess.State(); {
	case down && st != linksession.Down:
		s.Sess.LinkDown(now)
	case !down && st == linksession.Down:
		s.Sess.LinkUp(now)
	}
}

// agreedLanes takes the lanes of a new agreement a (EvReset), and says
// once if they are fewer than the port's.
func (s *portSession) agreedLanes(a linksession.Agreed) {
	s.lanes = int(a.Lanes)
	p := s.w.Port(s.port)
	sayOneLane(s.w.Log(), p.Name, p.Lanes(), s.lanes, &s.oneLaneSaid)
}
