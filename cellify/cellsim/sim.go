// Package cellsim is a deterministic simulated cell fabric on a virtual
// clock: nodes run the real cellify.Node, links have a rate, a propagation
// delay, a bounded FIFO per direction with tail drop, loss models, up/down
// and optionally an abstract LinkGuardian; hosts have a port rate and an
// egress buffer and run traffic sources. One event queue, one seeded
// random source: a run is reproducible for its seed.
//
// Build a topology (AddEdge, AddFabric, Connect, AddHost, or Bundle,
// Fabric3, Clos), Start it (nodes are made, REACH converges), add flows and
// scripted events, Run.
package cellsim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link"
)

// Config configures a simulation.
type Config struct {
	Seed uint64
	// Node adjusts a node's configuration before it is built (from
	// cellify.DefaultNodeConfig with this package's defaults).
	Node func(n *Node, c *cellify.NodeConfig)
	// NoStaticMACs: edges learn host MACs only from traffic (flooding
	// first); otherwise every edge is taught every host at Start.
	NoStaticMACs bool
	// Overhead is the wire bytes per frame beyond the frame itself
	// (preamble, inter-frame gap, FCS); 0: 24.
	Overhead int
	// LossReport, if > 0, is the period at which each monitored link
	// direction's measured loss rate is reported to its receiving node
	// (SetLoss); see Link.Monitor.
	LossReport int64
	// ReachInterval: 0 keeps cellify's default (100 µs).
	ReachInterval int64
	// WarmUp: Start runs this long for REACH to converge; 0: 12 intervals.
	WarmUp int64
}

// Sim is a simulated fabric.
type Sim struct {
	cfg   Config
	Now   int64
	Rng   *rand.Rand
	Mem   *Mem
	ev    eventHeap
	seq   uint64
	Nodes []*Node
	Links []*Link
	dirs  []*Dir
	Hosts []*Host
	Flows []*Flow
	calls []func()

	started bool
	edges   int
	fabrics int
	// Events counts the events run.
	Events uint64
}

// FabricIDBase is the first node id of fabric nodes (edges count from 1).
const FabricIDBase = 1000

// Node is a simulated node: the cellify.Node with its wiring.
type Node struct {
	*cellify.Node
	Name  string
	ID    cellify.EdgeID
	Tier  cellify.Tier
	sim   *Sim
	idx   int
	ports []*Dir  // outgoing direction per link port
	hosts []*Host // per host port
	spare cellify.Output
	wake  int64
	cfg   cellify.NodeConfig // as built (Epoch 0: drawn)
	boots uint64
	dead  bool // restarting: frames to it are lost, it sends nothing
	// stallTo: the node is kept from running until then (Stall).
	stallTo int64
	// Lost counts the frames that reached the node while it was down.
	Lost uint64
}

// Ports returns the outgoing link directions, per link port.
func (n *Node) Ports() []*Dir { return n.ports }

// HostsOf returns the hosts on the node's host ports.
func (n *Node) HostsOf() []*Host { return n.hosts }

// New returns an empty simulation.
func New(cfg Config) *Sim {
	if cfg.Overhead == 0 {
		cfg.Overhead = 24
	}
	return &Sim{cfg: cfg, Rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), Mem: newMem()}
}

// AddEdge adds an edge; ids are 1, 2, ... in order.
func (s *Sim) AddEdge(name string) *Node {
	s.edges++
	return s.addNode(name, cellify.EdgeID(s.edges), cellify.TierEdge)
}

// AddFabric adds a fabric node of the given tier (≥ 1).
func (s *Sim) AddFabric(name string, tier cellify.Tier) *Node {
	s.fabrics++
	return s.addNode(name, cellify.EdgeID(FabricIDBase+s.fabrics), tier)
}

func (s *Sim) addNode(name string, id cellify.EdgeID, tier cellify.Tier) *Node {
	n := &Node{Name: name, ID: id, Tier: tier, sim: s, idx: len(s.Nodes), wake: math.MaxInt64}
	s.Nodes = append(s.Nodes, n)
	return n
}

// At runs fn at time t (a scripted event: a link's death, a loss change).
func (s *Sim) At(t int64, fn func()) {
	s.calls = append(s.calls, fn)
	s.push(event{at: max(t, s.Now), kind: evCall, i: int32(len(s.calls) - 1)})
}

func (s *Sim) push(e event) {
	s.seq++
	e.seq = s.seq
	s.ev.push(e)
}

// Start builds the nodes, teaches the MACs (unless NoStaticMACs) and runs
// the warm-up; it fails if some edge does not reach every other edge then.
func (s *Sim) Start() error {
	if s.started {
		return errors.New("cellsim: started twice")
	}
	s.started = true
	for _, n := range s.Nodes {
		rate := 0.0
		if len(n.hosts) > 0 {
			rate = n.hosts[0].cfg.Rate
		}
		c := cellify.DefaultNodeConfig(n.ID, n.Tier, len(n.hosts), len(n.ports), rate, s.Mem,
			rand.New(rand.NewPCG(s.cfg.Seed, uint64(n.idx)+1)))
		for p, h := range n.hosts {
			c.HostRate[p] = h.cfg.Rate
		}
		c.FlowSeed ^= s.cfg.Seed * 0x2545f4914f6cdd1d
		if s.cfg.ReachInterval > 0 {
			c.Reach.Interval = s.cfg.ReachInterval
		}
		c.Reach.MaxEdges = max(c.Reach.MaxEdges, s.edges+1)
		dirs := n.ports
		c.LinkBacklog = func(l int) int { return dirs[l].qBytes }
		if s.cfg.Node != nil {
			s.cfg.Node(n, &c)
		}
		n.cfg = c
		if err := s.build(n); err != nil {
			return err
		}
	}
	for _, n := range s.Nodes {
		s.settle(n)
	}
	if s.cfg.LossReport > 0 {
		s.push(event{at: s.cfg.LossReport, kind: evLossReport})
	}
	warm := s.cfg.WarmUp
	if warm == 0 {
		iv := s.cfg.ReachInterval
		if iv == 0 {
			iv = cellify.DefaultReachConfig(1, 0, 1).Interval
		}
		warm = 12 * iv
	}
	s.Run(warm)
	for _, a := range s.Nodes {
		if a.Tier != cellify.TierEdge {
			continue
		}
		for _, b := range s.Nodes {
			if b.Tier == cellify.TierEdge && a != b && a.Reach().Routes(b.ID) == 0 {
				return fmt.Errorf("cellsim: after the warm-up %s has no route to %s", a.Name, b.Name)
			}
		}
	}
	return nil
}

// build makes n's cellify.Node from n.cfg and teaches it the hosts' MACs
// (unless NoStaticMACs).
func (s *Sim) build(n *Node) error {
	cn, err := cellify.NewNode(n.cfg)
	if err != nil {
		return fmt.Errorf("cellsim: node %s: %w", n.Name, err)
	}
	n.Node = cn
	n.spare = cn.Out
	n.spare.Link = make([]link.Out, len(cn.Out.Link))
	n.spare.Deliver = make([][]link.Frame, len(cn.Out.Deliver))
	n.spare.Free = nil
	if !s.cfg.NoStaticMACs && n.Tier == cellify.TierEdge {
		for _, h := range s.Hosts {
			n.Learn(s.Now, h.MAC, h.Edge.ID, uint8(h.Port))
		}
	}
	return nil
}

// Run runs events until time until (inclusive) and sets Now to it.
func (s *Sim) Run(until int64) {
	for len(s.ev) > 0 && s.ev[0].at <= until {
		e := s.ev.pop()
		s.Now = e.at
		s.Events++
		s.dispatch(&e)
	}
	s.Now = max(s.Now, until)
}

// RunFor runs for d more nanoseconds.
func (s *Sim) RunFor(d int64) { s.Run(s.Now + d) }

func (s *Sim) dispatch(e *event) {
	switch e.kind {
	case evWake:
		n := s.Nodes[e.i]
		if n.wake != e.at {
			return // superseded
		}
		n.wake = math.MaxInt64
		s.settle(n)
	case evTxDone:
		s.dirs[e.i].txDone(e.c)
	case evArrive:
		s.dirs[e.i].arrive(e.c)
	case evLGRetx:
		s.dirs[e.i].retxDue(e.c)
	case evHostTx:
		s.Hosts[e.i].txDone()
	case evEgressTx:
		s.Hosts[e.i].egressDone()
	case evFlow:
		s.Flows[e.i].tick()
	case evAck:
		s.Flows[e.i].ack(int(e.a))
	case evCall:
		s.calls[e.i]()
		s.calls[e.i] = nil
	case evLossReport:
		s.reportLoss()
		s.push(event{at: s.Now + s.cfg.LossReport, kind: evLossReport})
	}
}

// settle hands the node's output to the wires and hosts, polls it and
// schedules its next wake-up.
func (s *Sim) settle(n *Node) {
	if n.dead || n.stalled() {
		return // a stalled node runs again at its resume
	}
	s.flush(n)
	d := n.Poll(s.Now)
	s.flush(n)
	if d < n.wake {
		n.wake = d
		s.push(event{at: d, kind: evWake, i: int32(n.idx)})
	}
}

// flush processes the node's Output until it is empty (handling it may
// make more: an egress queue falling releases grants).
func (s *Sim) flush(n *Node) {
	for {
		o := n.Out
		if o.Active == 0 && len(o.Free) == 0 && !hasDeliver(&o) {
			return
		}
		n.Out = n.spare
		for m := o.Active; m != 0; m &= m - 1 {
			l := bits.TrailingZeros64(m)
			lo := &o.Link[l]
			d := n.ports[l]
			for _, f := range lo.Ctrl {
				d.enqueue(f, true)
			}
			for _, f := range lo.Data {
				d.enqueue(f, false)
			}
		}
		for p, list := range o.Deliver {
			for _, f := range list {
				n.hosts[p].egress(f)
			}
		}
		for _, f := range o.Free {
			s.Mem.Free(f)
		}
		o.Reset()
		n.spare = o
	}
}

func hasDeliver(o *cellify.Output) bool {
	for _, l := range o.Deliver {
		if len(l) > 0 {
			return true
		}
	}
	return false
}

// reportLoss reports each monitored direction's loss rate to its
// receiving node.
func (s *Sim) reportLoss() {
	for _, d := range s.dirs {
		if d.mon != nil && d.mon.n > 0 && !d.To.dead {
			d.To.SetLoss(s.Now, d.ToPort, d.mon.rate())
			s.settle(d.To)
		}
	}
}

// serNs is the time to serialize n frame bytes at rate bits/s.
func (s *Sim) serNs(n int, rate float64) int64 {
	return int64(math.Round(float64(n+s.cfg.Overhead) * 8e9 / rate))
}

// Leaked reports, as an error of the scenario named name, buffers in use
// beyond the frames the simulation holds.
func (s *Sim) Leaked(name string) error {
	if s.Mem.InUse() != s.InFlight() {
		return fmt.Errorf("%s: %d buffers in use, %d frames held", name, s.Mem.InUse(), s.InFlight())
	}
	return nil
}

// InFlight counts the frames the simulation holds (queues, wires, hosts,
// LinkGuardian copies): with Mem.InUse it shows that no frame leaked.
func (s *Sim) InFlight() int {
	k := 0
	for _, d := range s.dirs {
		k += d.ctrl.len() + d.data.len() + d.fly.len() + d.held.len() + d.retx.len()
		if d.busy {
			k++
		}
	}
	for _, h := range s.Hosts {
		k += h.txq.len() + h.egq.len()
	}
	return k
}
