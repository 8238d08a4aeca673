package cellsim

// Stall keeps the node from running until the given time, as a machine
// that does not schedule the node's worker: the node is not polled, the
// frames arriving on its links wait for it (in order), its hosts hand it
// nothing and its host ports send nothing (the worker drives them); what
// it had already put on its links goes on. At the end it runs again with
// everything that waited.
func (n *Node) Stall(until int64) {
	s := n.sim
	if until <= s.Now {
		return
	}
	n.stallTo = max(n.stallTo, until)
	for _, d := range n.ports {
		in := d.Link.BA
		if d == in {
			in = d.Link.AB
		}
		in.Pause(max(in.pauseTo, n.stallTo))
	}
	s.At(until, n.resume)
}

func (n *Node) stalled() bool { return n.sim.Now < n.stallTo }

// resume runs the node again once its stall is over (a later Stall may
// have extended it: then its own resume does).
func (n *Node) resume() {
	if n.stalled() {
		return
	}
	for _, h := range n.hosts {
		h.reportEgress()
		h.startTx()
		h.startEgress()
	}
	n.sim.settle(n)
}
