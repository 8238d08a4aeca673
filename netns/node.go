package netns

import (
	"fmt"
	"iter"
	"slices"
	"sort"
)

// Role is what a switch port faces: a host, or a link to another switch.
type Role string

// Roles of a node's ports.
const (
	RoleHost Role = "host"
	RoleLink Role = "link"
)

// NodeRole is what a namespace is in a topology.
type NodeRole string

// Roles of a namespace. An edge node runs a dataplane between host ports
// and link ports, a fabric node one between link ports only.
const (
	NodeHost   NodeRole = "host"   // an end host: only host-class links, no dataplane
	NodeEdge   NodeRole = "edge"   // a switch with host ports and link ports
	NodeFabric NodeRole = "fabric" // a switch with link ports only
	NodeWire   NodeRole = "wire"   // the middle namespace of a wire (wire.go)
)

// NodePort is one interface of a namespace with the role the topology gives
// it: an end of a veth pair of MTU class "link" is a link port, any other a
// host port. Rate and Buffer are its link's (VethPair.Rate, Buffer).
type NodePort struct {
	Dev    string   `json:"dev"`
	Role   Role     `json:"role"`
	Rate   BitRate  `json:"rate_bps,omitempty"`
	Buffer ByteSize `json:"buffer,omitempty"`
}

// NodePorts lists the ports of namespace node (a short name) in topology
// order, with their roles: what `linkfabric run --node` runs the dataplane on.
func (t *Topology) NodePorts(node string) ([]NodePort, error) {
	if !slices.Contains(t.Namespaces, node) {
		return nil, fmt.Errorf("netns: topology %q has no namespace %q (namespaces: %v)", t.Name, node, t.Namespaces)
	}
	x, err := t.Expand()
	if err != nil {
		return nil, err
	}
	ports := x.nodePorts(node)
	if len(ports) == 0 {
		return nil, fmt.Errorf("netns: namespace %q of topology %q has no ports", node, t.Name)
	}
	return ports, nil
}

// nodePorts lists node's ports in an expanded topology.
func (t *Topology) nodePorts(node string) []NodePort {
	var ports []NodePort
	for l, e := range t.endsIn(node) {
		role := RoleHost
		if l.MTU == MTULink {
			role = RoleLink
		}
		ports = append(ports, NodePort{Dev: e.Dev, Role: role, Rate: l.Rate, Buffer: l.Buffer})
	}
	return ports
}

// PortsOf returns the devices of ports with role r.
func PortsOf(ports []NodePort, r Role) []string {
	var devs []string
	for _, p := range ports {
		if p.Role == r {
			devs = append(devs, p.Dev)
		}
	}
	return devs
}

// Role is what namespace node is: as Roles says, or else what its ports
// imply (link ports and host ports: edge; link ports only: fabric; host
// ports only: host). Wire namespaces are NodeWire.
func (t *Topology) Role(node string) (NodeRole, error) {
	x, err := t.Expand()
	if err != nil {
		return "", err
	}
	if !slices.Contains(x.Namespaces, node) {
		return "", fmt.Errorf("netns: topology %q has no namespace %q (namespaces: %v)", t.Name, node, t.Namespaces)
	}
	return x.role(node), nil
}

func (t *Topology) role(node string) NodeRole {
	for _, w := range t.Wires {
		if w.NS == node {
			return NodeWire
		}
	}
	if r, ok := t.Roles[node]; ok {
		return r
	}
	return impliedRole(t.nodePorts(node))
}

func impliedRole(ports []NodePort) NodeRole {
	host, link := len(PortsOf(ports, RoleHost)), len(PortsOf(ports, RoleLink))
	switch {
	case link > 0 && host > 0:
		return NodeEdge
	case link > 0:
		return NodeFabric
	}
	return NodeHost
}

// Switches lists the namespaces that run a dataplane (edge and fabric
// nodes), in topology order.
func (t *Topology) Switches() ([]string, error) {
	x, err := t.Expand()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range x.Namespaces {
		if r := x.role(n); r == NodeEdge || r == NodeFabric {
			out = append(out, n)
		}
	}
	return out, nil
}

// validateRoles checks Roles against the namespaces (nss) and the ports
// of an expanded topology: a host has no link port, a fabric node no host
// port, an edge node both.
func (t *Topology) validateRoles(nss map[string]bool) error {
	names := make([]string, 0, len(t.Roles))
	for n := range t.Roles {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := t.Roles[n]
		if !nss[n] {
			return fmt.Errorf("roles: %q is not in namespaces %v", n, t.Namespaces)
		}
		ports := t.nodePorts(n)
		host, link := PortsOf(ports, RoleHost), PortsOf(ports, RoleLink)
		var bad string
		switch r {
		case NodeHost:
			if len(link) > 0 {
				bad = fmt.Sprintf("it has link ports %v", link)
			}
		case NodeEdge:
			if len(host) == 0 || len(link) == 0 {
				bad = fmt.Sprintf("an edge node needs host ports and link ports; it has host ports %v, link ports %v", host, link)
			}
		case NodeFabric:
			if len(host) > 0 || len(link) == 0 {
				bad = fmt.Sprintf("a fabric node has link ports only; it has host ports %v, link ports %v", host, link)
			}
		default:
			return fmt.Errorf("roles: %s: role %q: want %s, %s or %s", n, r, NodeHost, NodeEdge, NodeFabric)
		}
		if bad != "" {
			return fmt.Errorf("roles: %s: role %s does not fit its ports: %s", n, r, bad)
		}
	}
	return nil
}

// validateReach checks, for a topology that declares Roles, that every two
// edge nodes reach each other over link-class links through fabric nodes
// only (an edge delivers cells to its hosts; it does not forward them).
func (t *Topology) validateReach() error {
	if len(t.Roles) == 0 {
		return nil
	}
	adj := map[string][]string{}
	for _, l := range t.Links {
		if l.MTU != MTULink {
			continue
		}
		a, b := l.Ends[0].NS, l.Ends[1].NS
		adj[a] = append(adj[a], b)
		adj[b] = append(adj[b], a)
	}
	var edges []string
	for _, n := range t.Namespaces {
		if t.role(n) == NodeEdge {
			edges = append(edges, n)
		}
	}
	for _, from := range edges {
		seen := map[string]bool{from: true}
		queue := []string{from}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			if n != from && t.role(n) != NodeFabric {
				continue // reached, but cells do not cross it
			}
			for _, m := range adj[n] {
				if !seen[m] {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		for _, to := range edges {
			if !seen[to] {
				return fmt.Errorf("roles: edges %s and %s cannot reach each other: no path of link-class links between them through fabric nodes only (an edge does not forward cells); add a link from each to a common fabric node", from, to)
			}
		}
	}
	return nil
}

// endsIn yields each end in namespace ns (short name) with its link.
func (t *Topology) endsIn(ns string) iter.Seq2[VethPair, End] {
	return func(yield func(VethPair, End) bool) {
		for _, l := range t.Links {
			for _, e := range l.Ends {
				if e.NS == ns && !yield(l, e) {
					return
				}
			}
		}
	}
}
