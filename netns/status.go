package netns

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/vishvananda/netlink"
)

// StatusReport is what exists of a testbed. It prints as text (String) and
// marshals to JSON.
type StatusReport struct {
	Prefix string `json:"prefix"`
	// Recorded is true if Up's record of the testbed exists; Topology and
	// Forwarding come from it.
	Recorded   bool       `json:"recorded"`
	Topology   string     `json:"topology,omitempty"`
	Forwarding string     `json:"forwarding,omitempty"`
	Namespaces []NSStatus `json:"namespaces"`
}

// NSStatus is one namespace of a testbed.
type NSStatus struct {
	Name  string       `json:"name"`
	Links []LinkStatus `json:"links"`
}

// LinkStatus is one interface in a namespace.
type LinkStatus struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	State string `json:"state"` // operational state: up, down, lowerlayerdown...
	MTU   int    `json:"mtu"`
	// Master is the bridge this link is a port of, and BridgeState its
	// port state (forwarding, ...).
	Master      string `json:"master,omitempty"`
	BridgeState string `json:"bridge_state,omitempty"`
	// XDPProgID is the id of the attached XDP program (0: none), XDPMode
	// how it is attached (native, generic, offload).
	XDPProgID uint32   `json:"xdp_prog_id,omitempty"`
	XDPMode   string   `json:"xdp_mode,omitempty"`
	Addrs     []string `json:"addrs,omitempty"`
	// TxChecksum is the TX checksum offload state of veth ends.
	TxChecksum *bool `json:"tx_checksum,omitempty"`
	// GRO is the generic receive offload state of veth ends.
	GRO *bool `json:"gro,omitempty"`
}

// JSON returns the report as indented JSON.
func (s StatusReport) JSON() []byte {
	b, _ := json.MarshalIndent(s, "", "  ")
	return b
}

// String prints the report as text, one line per interface.
func (s StatusReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "testbed %s", s.Prefix)
	if s.Recorded {
		fmt.Fprintf(&b, " (topology %s, forwarding %s)", s.Topology, s.Forwarding)
	} else {
		b.WriteString(" (no record)")
	}
	b.WriteByte('\n')
	if len(s.Namespaces) == 0 {
		b.WriteString("  no namespaces\n")
	}
	for _, n := range s.Namespaces {
		fmt.Fprintf(&b, "  %s\n", n.Name)
		for _, l := range n.Links {
			fmt.Fprintf(&b, "    %-8s %-7s %-6s mtu %-5d", l.Name, l.Type, l.State, l.MTU)
			if l.Master != "" {
				fmt.Fprintf(&b, " master %s (%s)", l.Master, l.BridgeState)
			}
			if l.XDPProgID != 0 {
				fmt.Fprintf(&b, " xdp %s id %d", l.XDPMode, l.XDPProgID)
			}
			if l.TxChecksum != nil {
				if *l.TxChecksum {
					b.WriteString(" tx-csum on")
				} else {
					b.WriteString(" tx-csum off")
				}
			}
			if l.GRO != nil && *l.GRO {
				b.WriteString(" gro on")
			}
			if len(l.Addrs) > 0 {
				fmt.Fprintf(&b, " %s", strings.Join(l.Addrs, " "))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Find returns the status of interface dev in namespace ns (full name).
func (s StatusReport) Find(ns, dev string) (LinkStatus, bool) {
	for _, n := range s.Namespaces {
		if n.Name != ns {
			continue
		}
		for _, l := range n.Links {
			if l.Name == dev {
				return l, true
			}
		}
	}
	return LinkStatus{}, false
}

// Status reports the namespaces this package made with prefix, their links
// (state, MTU, bridge, XDP program, TX checksum offload) and addresses.
// A prefix with nothing is not an error: the report is empty.
func Status(prefix string) (StatusReport, error) {
	if err := checkPrefix(prefix); err != nil {
		return StatusReport{}, err
	}
	s := StatusReport{Prefix: prefix, Namespaces: []NSStatus{}}
	if tb, err := Open(prefix); err == nil {
		s.Recorded = true
		s.Topology = tb.Topology.Name
		s.Forwarding = tb.Forwarding
	}
	names, err := ownedNamespaces(prefix)
	if err != nil {
		return s, err
	}
	for _, n := range names {
		ns, err := nsStatus(n)
		if err != nil {
			return s, err
		}
		s.Namespaces = append(s.Namespaces, ns)
	}
	return s, nil
}

func nsStatus(n string) (NSStatus, error) {
	out := NSStatus{Name: n, Links: []LinkStatus{}}
	h, closeH, err := handleFor(n)
	if err != nil {
		return out, err
	}
	defer closeH()
	links, err := h.LinkList()
	if err != nil {
		return out, fmt.Errorf("netns %s: ip link: %w", n, err)
	}
	sort.Slice(links, func(i, j int) bool { return links[i].Attrs().Index < links[j].Attrs().Index })
	byIndex := map[int]string{}
	for _, l := range links {
		byIndex[l.Attrs().Index] = l.Attrs().Name
	}
	var states map[int]uint8
	_ = Do(n, func() (err error) { states, err = bridgePortStates(); return err })
	for _, l := range links {
		a := l.Attrs()
		ls := LinkStatus{Name: a.Name, Type: l.Type(), State: a.OperState.String(), MTU: a.MTU}
		if a.MasterIndex != 0 {
			ls.Master = byIndex[a.MasterIndex]
			if st, ok := states[a.Index]; ok {
				ls.BridgeState = brStateName(st)
			}
		}
		if a.Xdp != nil && a.Xdp.Attached {
			ls.XDPProgID = a.Xdp.ProgId
			ls.XDPMode = xdpMode(a.Xdp.AttachMode)
		}
		addrs, err := h.AddrList(l, netlink.FAMILY_ALL)
		if err == nil {
			for _, ad := range addrs {
				ls.Addrs = append(ls.Addrs, ad.IPNet.String())
			}
		}
		if l.Type() == "veth" {
			if on, err := TxChecksum(n, a.Name); err == nil {
				ls.TxChecksum = &on
			}
			if on, err := GRO(n, a.Name); err == nil {
				ls.GRO = &on
			}
		}
		out.Links = append(out.Links, ls)
	}
	return out, nil
}

func xdpMode(m uint32) string {
	switch m {
	case 1: // XDP_ATTACHED_DRV
		return "native"
	case 2: // XDP_ATTACHED_SKB
		return "generic"
	case 3: // XDP_ATTACHED_HW
		return "offload"
	case 4: // XDP_ATTACHED_MULTI
		return "multi"
	}
	return ""
}
