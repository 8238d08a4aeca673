package netns

import (
	"fmt"
	"slices"
)

// Role is what a switch port faces: a host, or a link to another switch.
type Role string

// Roles of a node's ports.
const (
	RoleHost Role = "host"
	RoleLink Role = "link"
)

// NodePort is one interface of a namespace with the role the topology gives
// it: an end of a veth pair of MTU class "link" is a link port, any other a
// host port.
type NodePort struct {
	Dev  string `json:"dev"`
	Role Role   `json:"role"`
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
	var ports []NodePort
	for _, l := range x.Links {
		for _, e := range l.Ends {
			if e.NS != node {
				continue
			}
			role := RoleHost
			if l.MTU == MTULink {
				role = RoleLink
			}
			ports = append(ports, NodePort{Dev: e.Dev, Role: role})
		}
	}
	if len(ports) == 0 {
		return nil, fmt.Errorf("netns: namespace %q of topology %q has no ports", node, t.Name)
	}
	return ports, nil
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
