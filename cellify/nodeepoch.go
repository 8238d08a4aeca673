package cellify

// peerEpoch is what an edge knows of another edge's boots: the epoch it
// heard last and the one before (whose frames still in flight are stale).
type peerEpoch struct {
	cur, old uint16
	// bound (as a source): it sent a credit request naming this boot, so
	// its requests naming none are older ones overtaken.
	bound bool
}

// Epoch returns this boot's nonce.
func (n *Node) Epoch() uint16 { return n.epoch }

// newEpoch draws a nonzero epoch.
func newEpoch(c *NodeConfig) uint16 {
	e := c.Epoch
	for e == 0 {
		e = uint16(c.Rng.Uint32())
	}
	return e
}

// sourceEpoch checks epoch e of a cell or credit request from edge src:
// false if it is of an earlier boot (counted). A new boot restarts src's
// totals in every egress scheduler; its streams restart in the reassembly
// on their first cell of the new boot. Epoch 0 and ids beyond the table
// are not tracked.
func (n *Node) sourceEpoch(src EdgeID, e uint16) bool {
	if e == 0 || int(src) >= len(n.srcEp) {
		return true
	}
	p := &n.srcEp[src]
	switch {
	case e == p.cur:
	case e == p.old:
		n.Stats.StaleEpoch++
		return false
	case p.cur == 0:
		p.cur = e
	default:
		p.old, p.cur, p.bound = p.cur, e, false
		n.Stats.PeerRestarts++
		for _, s := range n.sched {
			s.ResetSource(src)
		}
	}
	return true
}

// destEpoch checks epoch e of a grant from edge dst: false if it is of an
// earlier boot (counted). A new boot after another restarts the totals of
// every VOQ toward dst (their backlog is requested anew).
func (n *Node) destEpoch(dst EdgeID, e uint16) bool {
	if e == 0 || int(dst) >= len(n.dstEp) {
		return true
	}
	p := &n.dstEp[dst]
	switch {
	case e == p.cur:
	case e == p.old:
		n.Stats.StaleEpoch++
		return false
	case p.cur == 0:
		p.cur = e
	default:
		p.old, p.cur = p.cur, e
		n.Stats.PeerRestarts++
		for _, q := range n.list {
			if q.cc != nil && q.v.Key.Dst == dst {
				q.cc.Reset()
				n.serve(q)
				n.request(q)
			}
		}
	}
	return true
}

// requestSession checks that a credit request from src counts its totals
// in a session with this boot: it names this boot, or none while src has
// named none. A request naming another boot of this edge restarts src's
// totals here and is answered with grants of the pre-credit, which tell
// src this boot (it restarts its totals too). Returns false if the request
// is to be dropped.
func (n *Node) requestSession(c *CreditFrame) bool {
	x := c.Epochs.Dst
	var p *peerEpoch
	if int(c.Src) < len(n.srcEp) {
		p = &n.srcEp[c.Src]
	}
	switch {
	case x == n.epoch:
		if p != nil {
			p.bound = true
		}
		return true
	case x == 0 && (p == nil || !p.bound):
		return true
	}
	n.Stats.StaleSession++
	if x == 0 || p != nil && p.bound {
		return false
	}
	n.Stats.SessionResets++
	for _, s := range n.sched {
		s.ResetSource(c.Src)
	}
	for i := range c.N {
		e := c.Entry(i)
		if int(e.Port) < len(n.sched) {
			e.Total = n.cfg.Sched.PreCredit
			n.sendCredit(true, c.Src, n.cfg.Self, e)
		}
	}
	return false
}

// creditEpochs are the epochs of a credit frame this edge sends: a request
// to dst, or a grant to src.
func (n *Node) creditEpochs(grant bool, src, dst EdgeID) CreditEpochs {
	if grant {
		ep := CreditEpochs{Dst: n.epoch}
		if int(src) < len(n.srcEp) {
			ep.Src = n.srcEp[src].cur
		}
		return ep
	}
	ep := CreditEpochs{Src: n.epoch}
	if int(dst) < len(n.dstEp) {
		ep.Dst = n.dstEp[dst].cur
	}
	return ep
}
