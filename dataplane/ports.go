package dataplane

import (
	"fmt"
	"slices"
	"strings"
)

// A node has 0 to MaxHostPorts host ports and 1 to MaxLinkPorts link ports.
// The worker numbers them: the host ports first in Config.HostPorts order,
// then the link ports in Config.LinkPorts order. A pipeline learns the
// numbering from Ports (Dataplane.Ports, Tx.Ports), never from constants.

// MaxLinkPorts and MaxHostPorts bound the ports of a node.
const (
	MaxLinkPorts = 16
	MaxHostPorts = 16
)

// PortRole is what a port faces: a host, or a link to another node.
type PortRole string

// Roles of a port.
const (
	RoleHost PortRole = "host"
	RoleLink PortRole = "link"
)

// Ports is the worker's numbering of a node's ports.
type Ports struct {
	// Host is the first host port's number, -1 when the node has none.
	Host int
	// Hosts[k] is the number of host port k (Config.HostPorts[k]).
	Hosts []int
	// Links[k] is the number of link port k (Config.LinkPorts[k]).
	Links []int
}

// N is the number of ports.
func (p Ports) N() int { return len(p.Hosts) + len(p.Links) }

// HostIndex returns k for the number of host port k, false for a link port.
func (p Ports) HostIndex(port int) (k int, ok bool) {
	if port < 0 || port >= len(p.Hosts) {
		return 0, false
	}
	return port, true
}

// Link returns k for the number of link port k, false for the host port.
func (p Ports) Link(port int) (k int, ok bool) {
	if len(p.Links) == 0 || port < p.Links[0] || port > p.Links[len(p.Links)-1] {
		return 0, false
	}
	return port - p.Links[0], true
}

// Role is the role of port number port.
func (p Ports) Role(port int) PortRole {
	if _, ok := p.HostIndex(port); ok {
		return RoleHost
	}
	return RoleLink
}

// newPorts numbers a node with hosts host ports and links link ports.
func newPorts(hosts, links int) Ports {
	p := Ports{Host: -1, Hosts: make([]int, hosts), Links: make([]int, links)}
	for k := range p.Hosts {
		p.Hosts[k] = k
	}
	if hosts > 0 {
		p.Host = 0
	}
	for k := range p.Links {
		p.Links[k] = hosts + k
	}
	return p
}

// The layout of the modes with one host port and one link port (forward,
// lg, lgnb, monitor): their port spec guarantees it.
const (
	PortHost = 0
	PortLink = 1
)

// CheckPorts checks that mode runs on a node with host port host ("" for
// none) and link ports links, and that no port is named twice. Its errors
// name the flags (--host-port, --link-port, --mode) and what the mode takes.
func CheckPorts(mode Mode, host string, links []string) error {
	var hosts []string
	if host != "" {
		hosts = []string{host}
	}
	return CheckNodePorts(mode, hosts, links)
}

// CheckNodePorts is CheckPorts for a node with host ports hosts (none, one
// or several).
func CheckNodePorts(mode Mode, hosts, links []string) error {
	spec, ok := specs[mode]
	if !ok {
		return fmt.Errorf("dataplane: mode %q is not known (modes: %s)", mode, ModeList())
	}
	list, hlist := strings.Join(links, ","), strings.Join(hosts, ",")
	for i, h := range hosts {
		if h == "" {
			return fmt.Errorf("dataplane: --host-port %q has an empty name", hlist)
		}
		if slices.Contains(hosts[:i], h) {
			return fmt.Errorf("dataplane: --host-port %s names %s twice", hlist, h)
		}
	}
	for i, l := range links {
		if l == "" {
			return fmt.Errorf("dataplane: --link-port %q has an empty name", list)
		}
		if slices.Contains(hosts, l) {
			return fmt.Errorf("dataplane: %s is both a host port and a link port (--host-port %s, --link-port %s); a port has one role", l, hlist, list)
		}
		if slices.Contains(links[:i], l) {
			return fmt.Errorf("dataplane: --link-port %s names %s twice", list, l)
		}
	}
	if len(links) > MaxLinkPorts {
		return fmt.Errorf("dataplane: --link-port lists %d ports; a node has at most %d", len(links), MaxLinkPorts)
	}
	if len(hosts) > MaxHostPorts {
		return fmt.Errorf("dataplane: --host-port lists %d ports; a node has at most %d", len(hosts), MaxHostPorts)
	}
	switch n := len(hosts); {
	case n < spec.Hosts[0]:
		return fmt.Errorf("dataplane: --mode %s needs a --host-port", mode)
	case n > spec.Hosts[1] && spec.Hosts[1] == 0:
		return fmt.Errorf("dataplane: --mode %s takes no --host-port; got %s", mode, hlist)
	case n > spec.Hosts[1]:
		return fmt.Errorf("dataplane: --mode %s takes at most %d --host-port; got %s", mode, spec.Hosts[1], hlist)
	}
	lo, hi := spec.Links[0], spec.Links[1]
	switch {
	case len(links) == 0:
		return fmt.Errorf("dataplane: --mode %s needs a link port (--link-port IF)", mode)
	case len(links) < lo || len(links) > hi:
		want := fmt.Sprintf("%d to %d", lo, hi)
		if lo == hi {
			want = "one"
			if lo > 1 {
				want = fmt.Sprint(lo)
			}
		}
		return fmt.Errorf("dataplane: --mode %s takes %s --link-port; got %s", mode, want, list)
	}
	return nil
}

// firstOf keeps a single-port field and its list in step: the list is the
// field alone if empty, and the field is the list's first entry.
func firstOf(one *string, list *[]string, oneName, listName string) error {
	if len(*list) == 0 && *one != "" {
		*list = []string{*one}
	}
	if len(*list) > 0 {
		if *one != "" && *one != (*list)[0] {
			return fmt.Errorf("dataplane: %s %s is not the first of %s %v", oneName, *one, listName, *list)
		}
		*one = (*list)[0]
	}
	return nil
}

// checkPorts fills LinkPorts from LinkPort (or LinkPort from LinkPorts), the
// same for the host ports, and checks them against the mode.
func (c *Config) checkPorts() error {
	if err := firstOf(&c.HostPort, &c.HostPorts, "HostPort", "HostPorts"); err != nil {
		return err
	}
	if err := firstOf(&c.LinkPort, &c.LinkPorts, "LinkPort", "LinkPorts"); err != nil {
		return err
	}
	return CheckNodePorts(c.Mode, c.HostPorts, c.LinkPorts)
}

// portNames are the ports' interface names in the worker's numbering.
func (c *Config) portNames() []string {
	hosts := c.HostPorts
	if len(hosts) == 0 && c.HostPort != "" {
		hosts = []string{c.HostPort}
	}
	return append(slices.Clone(hosts), c.LinkPorts...)
}
