package cellify

// peerEpoch is what an edge knows of another edge's epochs: the one heard
// last, the one before it and when it changed (frames of the one before
// are stale for EpochHold after that, and new again beyond).
type peerEpoch struct {
	cur, old uint16
	at       int64
}

// Epoch returns this boot's nonce.
func (n *Node) Epoch() uint16 { return n.epoch }

// draw returns a nonzero epoch from the node's random source.
func (n *Node) draw() uint16 {
	for {
		if e := uint16(n.cfg.Rng.Uint32()); e != 0 {
			return e
		}
	}
}

// heard checks epoch e of a frame from a peer: stale (false) if it is the
// one before the current within EpochHold of the change; changed if it is
// new (a first one is not a change).
func (p *peerEpoch) heard(now, hold int64, e uint16) (ok, changed bool) {
	switch {
	case e == p.cur:
		return true, false
	case e == p.old && now-p.at < hold:
		return false, false
	}
	changed = p.cur != 0
	p.old, p.cur, p.at = p.cur, e, now
	return true, changed
}

// sourceEpoch checks epoch e of a cell or credit request from edge src:
// false if it is of src's boot before the current (counted). A new boot
// restarts src's totals in every egress scheduler, under a new session
// nonce that the next grant tells src; its streams restart in the
// reassembly on their first cell of the new boot. Epoch 0 and ids beyond
// the table are not tracked.
func (n *Node) sourceEpoch(src EdgeID, e uint16) bool {
	ok, changed := n.epochHeard(n.srcEp, src, e)
	if changed {
		n.Stats.PeerRestarts++
		n.resetSource(src)
	}
	return ok
}

// epochHeard has tab[id] hear epoch e (ids beyond tab and epoch 0 pass,
// untracked): whether it is current or new (a stale one is counted), and
// whether it is new.
func (n *Node) epochHeard(tab []peerEpoch, id EdgeID, e uint16) (ok, changed bool) {
	if e == 0 || int(id) >= len(tab) {
		return true, false
	}
	if ok, changed = tab[id].heard(n.now, n.cfg.EpochHold, e); !ok {
		n.Stats.StaleEpoch++
	}
	return
}

// resetSource restarts src's totals in every egress scheduler under a new
// session nonce.
func (n *Node) resetSource(src EdgeID) {
	for _, s := range n.sched {
		s.ResetSource(src)
	}
	n.sess[src] = n.draw()
}

// session returns the session nonce of this edge's schedulers with source
// src (0 for ids beyond the table).
func (n *Node) session(src EdgeID) uint16 {
	if int(src) >= len(n.sess) {
		return 0
	}
	if n.sess[src] == 0 {
		n.sess[src] = n.draw()
	}
	return n.sess[src]
}

// destSession checks session nonce e of a grant from edge dst: false if it
// is the one before the current within EpochHold (counted). A new one
// after another (dst restarted, or restarted this edge's totals) restarts
// the totals of every VOQ toward dst: their backlog is requested anew.
func (n *Node) destSession(dst EdgeID, e uint16) bool {
	ok, changed := n.epochHeard(n.dstEp, dst, e)
	if changed {
		n.Stats.SessionResets++
		for _, q := range n.list {
			if q.cc != nil && q.v.Key.Dst == dst {
				n.claim(q)
				q.cc.Reset()
				n.serve(q)
				n.request(q)
			}
		}
	}
	return ok
}

// requestSession checks that a credit request from src counts its totals
// in the current session with src: it names the session's nonce, or none
// (src has had no grant yet, so its grant total is the pre-credit, as in a
// new session). A request naming another (this edge restarted, or
// restarted src's totals, and src has not heard) is dropped and answered
// with grants of the current totals under the current nonce: src restarts
// its totals on them.
func (n *Node) requestSession(c *CreditFrame) bool {
	x := c.Epochs.Dst
	if x == 0 || x == n.session(c.Src) || int(c.Src) >= len(n.sess) {
		return true
	}
	n.Stats.StaleSession++
	for i := range c.N {
		e := c.Entry(i)
		if int(e.Port) >= len(n.sched) {
			continue
		}
		_, g, ok := n.sched[e.Port].Totals(c.Src, e.Class)
		if !ok {
			g = n.cfg.Sched.PreCredit
		}
		e.Total = g
		n.sendCredit(true, c.Src, n.cfg.Self, e)
	}
	return false
}

// creditEpochs are the epochs of a credit frame this edge sends: a request
// to dst, or a grant to src.
func (n *Node) creditEpochs(grant bool, src, dst EdgeID) CreditEpochs {
	if grant {
		ep := CreditEpochs{Dst: n.session(src)}
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
