package cellsim

import "github.com/linkfabric/linkfabric/cellify"

// Topo lists what a topology builder made.
type Topo struct {
	Edges  []*Node
	Fabric []*Node // tier 1, then tier 2
	Hosts  []*Host
	Links  []*Link
	Up     []*Link // edge uplinks (edge to tier 1, or edge to edge in a bundle)
}

// creditsLeft sums over the edges the bytes left in VOQs and the bytes
// requested but not sent.
func (t *Topo) creditsLeft() (backlog, unsent uint64) {
	for _, e := range t.Edges {
		c := e.Credits()
		backlog += c.Backlog
		if c.Sent < c.Requested {
			unsent += c.Requested - c.Sent
		}
	}
	return backlog, unsent
}

// Bundle is two edges e1, e2 joined by k parallel links, one host each.
func Bundle(s *Sim, k int, lc LinkConfig, hc HostConfig) *Topo {
	t := &Topo{}
	e1, e2 := s.AddEdge("e1"), s.AddEdge("e2")
	t.Edges = []*Node{e1, e2}
	for range k {
		l := s.Connect(e1, e2, lc)
		t.Links = append(t.Links, l)
		t.Up = append(t.Up, l)
	}
	t.Hosts = []*Host{s.AddHost(e1, hc), s.AddHost(e2, hc)}
	return t
}

// Fabric3 is three edges e1–e3 and two fabric nodes f1, f2, each edge with
// two links to each fabric node; hosts[i] hosts on edge i (e3 usually two:
// the ports A and B of Stardust's push-vs-pull case).
func Fabric3(s *Sim, lc LinkConfig, hc HostConfig, hosts [3]int) *Topo {
	return Clos(s, ClosConfig{Edges: 3, Uplinks: 4, Tier1: 2, Link: lc, Host: hc, HostsPerEdge: hosts[:]})
}

// ClosConfig describes a generated fabric. One tier (Spines 0): every edge
// has Uplinks links spread evenly over the Tier1 fabric nodes. Two tiers:
// edges are in pods of PodEdges; each pod has Uplinks tier-1 nodes, every
// edge one link to each; each tier-1 node has as many links up as down
// (PodEdges), spread evenly over the Spines tier-2 nodes.
type ClosConfig struct {
	Edges, Uplinks int
	Tier1          int // one tier: fabric nodes
	PodEdges       int // two tiers: edges per pod
	Spines         int // two tiers: tier-2 nodes (0: one tier)
	Link           LinkConfig
	Host           HostConfig
	HostsPerEdge   []int // per edge (default 1)
}

// Clos builds a one- or two-tier fabric.
func Clos(s *Sim, c ClosConfig) *Topo {
	t := &Topo{}
	for i := range c.Edges {
		e := s.AddEdge("e" + itoa(i+1))
		t.Edges = append(t.Edges, e)
		k := 1
		if i < len(c.HostsPerEdge) {
			k = c.HostsPerEdge[i]
		}
		for range k {
			t.Hosts = append(t.Hosts, s.AddHost(e, c.Host))
		}
	}
	connect := func(a, b *Node, up bool) {
		l := s.Connect(a, b, c.Link)
		t.Links = append(t.Links, l)
		if up {
			t.Up = append(t.Up, l)
		}
	}
	if c.Spines == 0 {
		for j := range c.Tier1 {
			t.Fabric = append(t.Fabric, s.AddFabric("f"+itoa(j+1), 1))
		}
		for _, e := range t.Edges {
			for u := range c.Uplinks {
				connect(e, t.Fabric[u%c.Tier1], true)
			}
		}
		return t
	}
	pods := (c.Edges + c.PodEdges - 1) / c.PodEdges
	var leaves [][]*Node
	for p := range pods {
		var pod []*Node
		for u := range c.Uplinks {
			f := s.AddFabric("p"+itoa(p+1)+"f"+itoa(u+1), 1)
			pod = append(pod, f)
			t.Fabric = append(t.Fabric, f)
		}
		leaves = append(leaves, pod)
	}
	var spines []*Node
	for j := range c.Spines {
		sp := s.AddFabric("s"+itoa(j+1), 2)
		spines = append(spines, sp)
		t.Fabric = append(t.Fabric, sp)
	}
	for i, e := range t.Edges {
		for _, f := range leaves[i/c.PodEdges] {
			connect(e, f, true)
		}
	}
	for _, pod := range leaves {
		for _, f := range pod {
			for k := range c.PodEdges {
				connect(f, spines[k%c.Spines], false)
			}
		}
	}
	return t
}

// Tier1Links returns the links between tier-1 and tier-2 nodes.
func (t *Topo) Tier1Links() []*Link {
	var ls []*Link
	for _, l := range t.Links {
		if l.AB.From.Tier == 1 && l.AB.To.Tier == 2 {
			ls = append(ls, l)
		}
	}
	return ls
}

// FabricDirs returns every direction leaving a fabric node.
func (t *Topo) FabricDirs() []*Dir {
	var ds []*Dir
	for _, l := range t.Links {
		for _, d := range []*Dir{l.AB, l.BA} {
			if d.From.Tier != cellify.TierEdge {
				ds = append(ds, d)
			}
		}
	}
	return ds
}
