package cellsim

import (
	"fmt"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/scenario"
	"github.com/linkfabric/linkfabric/link"
)

// missingFrom counts the frames of f from seq from on that were sent and
// not received.
func (f *Flow) missingFrom(from int) int {
	n := 0
	for q := from; q < f.seq; q++ {
		if w := q / 64; w >= len(f.seen) || f.seen[w]&(1<<(q%64)) == 0 {
			n++
		}
	}
	return n
}

// restartCase is one restart of a node mid-flow.
type restartCase struct {
	name     string
	node     func(t *Topo) *Node // the node restarted (nil: forge instead)
	forge    bool                // instead: one cell with a forged epoch of e1 reaches e2
	firstSeq uint32              // the cell seq the first boot's streams start at
	down     int64
}

// restartOut is what a restart case measured.
type restartOut struct {
	dup, reord    uint64
	missing       int     // frames sent after the resume bound and not received
	resumeUs      float64 // from the restart's end to the first frame received that was sent after it
	lost          uint64
	peerRestarts  uint64
	stale         uint64
	bound         int64
	recvAfterStop uint64
}

// restartRun runs a 0.5 Gbit/s flow from e1 to e2 over two fabric nodes
// (4 uplinks per edge) for 30 ms and restarts one node 10 ms in.
func restartRun(r *scenario.Result, seed uint64, c restartCase) (*restartOut, error) {
	s := New(Config{Seed: seed, Node: func(n *Node, nc *cellify.NodeConfig) {
		if n.Tier == cellify.TierEdge {
			nc.FirstSeq = c.firstSeq
		}
	}})
	t := Clos(s, ClosConfig{Edges: 2, Uplinks: 4, Tier1: 2, Link: LinkConfig{Rate: linkRate, Delay: linkDelay}, Host: HostConfig{Rate: hostRate}})
	if err := s.Start(); err != nil {
		return nil, err
	}
	e1 := t.Edges[0]
	rc, cc := e1.Reach().Config(), e1.Config()
	o := &restartOut{}
	// Back within: the restarted node's links usable (ThUp good intervals
	// and one to be heard), a credit request's refresh, and a reassembly
	// timeout (a restarted destination holds the first cells it sees for
	// the ones before them, which never come).
	timeout := cc.Reasm.Timeout
	if timeout == 0 {
		timeout = cellify.DefaultReasmTimeout
	}
	o.bound = int64(max(rc.ThUp, rc.Th)+2)*rc.Interval + 2*cc.Client.Refresh + timeout
	if o.bound <= 0 {
		return nil, fmt.Errorf("restart: bound %d", o.bound)
	}
	t0 := s.Now
	f := s.AddFlow(FlowConfig{Src: t.Hosts[0], Dst: t.Hosts[1], Size: 1500, Rate: 0.5e9, Stop: t0 + 30*ms})
	var n *Node
	if c.node != nil {
		n = c.node(t)
	}
	var fromSeq, boundSeq int
	var end int64
	if c.forge {
		o.bound += e1.Config().EpochHold
	}
	s.At(t0+10*ms, func() {
		end = s.Now + c.down
		if c.forge {
			forgeCell(s, t.Edges[1], e1)
			return
		}
		s.Restart(n, c.down, func(nc *cellify.NodeConfig) { nc.FirstSeq = 0 })
	})
	s.At(t0+10*ms+c.down, func() { fromSeq = f.seq })
	s.At(t0+10*ms+c.down+o.bound, func() { boundSeq = f.seq })
	var resumed int64
	var watch func()
	watch = func() {
		if f.Stats.LastR > end && f.expect > fromSeq {
			resumed = f.Stats.LastR
			return
		}
		s.At(s.Now+10*us, watch)
	}
	s.At(t0+10*ms+c.down, watch)
	s.RunFor(40 * ms)
	account(r, s)
	if err := s.Leaked("restart " + c.name); err != nil {
		return nil, err
	}
	o.dup, o.reord = f.Stats.Dup, f.Stats.Reordered
	o.missing = f.missingFrom(boundSeq)
	o.resumeUs = -1
	if resumed > 0 {
		o.resumeUs = float64(resumed-end) / 1e3
	}
	o.lost = f.Lost()
	for _, e := range t.Edges {
		o.peerRestarts += e.Stats.PeerRestarts + e.Stats.SessionResets
		o.stale += e.Stats.StaleEpoch + e.ReasmStats().StaleEpoch
	}
	return o, nil
}

// forgeCell hands to's first link a cell from src with a forged epoch, as a
// hostile or corrupted frame would: to takes it for a new boot of src.
func forgeCell(s *Sim, to, src *Node) {
	size := cellify.CellFrameLen(1)
	h, _ := s.Mem.Alloc(size)
	b := s.Mem.Bytes(h, size)
	clear(b[:12])
	ch := cellify.CellHeader{Dst: to.ID, Src: src.ID, Hops: 1, First: cellify.NoRecord, Seq: 7, Epoch: src.Epoch() ^ 0x5a5a}
	n, err := cellify.PutCell(b, &ch, []byte{0})
	if err != nil {
		panic(err)
	}
	to.LinkRx(s.Now, 0, link.Frame{H: h, Len: n})
	s.settle(to)
}

// Restart restarts nodes mid-flow (a 0.5 Gbit/s flow e1 → e2 over two
// fabric nodes) for 200 µs, under the REACH miss threshold: the source
// edge with its streams' seqs before the restart in the lower half of the
// space (the new boot's first cells fall behind the receiver's window), in
// the upper half (far), and just below the wrap (the new first cells fall
// ahead, inside the window); the destination edge; a fabric node, and one
// down for 1 ms (its links excluded and back). The new boot starts its
// streams at seq 0 with a new epoch. Nothing may be delivered twice or out
// of order, and every frame sent once the restarted node had time to come
// back (its links, a credit refresh, a reassembly timeout) must arrive. A
// cell with a forged epoch of the source costs EpochHold more, no stall.
func Restart(seed uint64) (*scenario.Result, error) {
	r, done := begin("restart", seed)
	src := func(t *Topo) *Node { return t.Edges[0] }
	dst := func(t *Topo) *Node { return t.Edges[1] }
	fab := func(t *Topo) *Node { return t.Fabric[0] }
	for _, c := range []restartCase{
		{name: "src_low", node: src, firstSeq: 100, down: 200 * us},
		{name: "src_high", node: src, firstSeq: 1<<31 + 1000, down: 200 * us},
		{name: "src_wrap", node: src, firstSeq: 1<<32 - 20, down: 200 * us},
		{name: "dst", node: dst, firstSeq: 100, down: 200 * us},
		{name: "dst_high", node: dst, firstSeq: 1<<31 + 1000, down: 200 * us},
		{name: "fabric", node: fab, firstSeq: 100, down: 200 * us},
		{name: "fabric_long", node: fab, firstSeq: 100, down: ms},
		{name: "forged", forge: true, firstSeq: 100},
	} {
		o, err := restartRun(r, seed, c)
		if err != nil {
			return nil, err
		}
		p := c.name + "_"
		r.Add(p+"stale", float64(o.dup+o.reord), 0, 0, "nothing delivered twice or out of order")
		r.Add(p+"missing", float64(o.missing), 0, 0, "every frame sent after the resume bound arrives: no wedge")
		r.Add(p+"resume_us", o.resumeUs, 0, float64(o.bound)/1e3, "the flow resumes within the bound after the restart")
		r.Report(p+"lost", float64(o.lost), "frames lost to the restart")
		if c.node == nil || c.name != "fabric" && c.name != "fabric_long" {
			r.Add(p+"peer_restarts", float64(o.peerRestarts), 1, nan, "the peer edge saw the new epoch")
		}
	}
	return done(), nil
}
