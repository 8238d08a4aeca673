package netns

import (
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// TestFabric3Preset: the preset expands and validates, every namespace has
// the role and the ports the cells mechanism expects (edges: host ports and
// four uplinks, two to each fabric node; fabric nodes: two links from each
// edge, no host port), and the rates are the preset's defaults.
func TestFabric3Preset(t *testing.T) {
	topo := MustPreset(t, "fabric3")
	sw, err := topo.Switches()
	if err != nil || !slices.Equal(sw, []string{"e1", "e2", "e3", "f1", "f2"}) {
		t.Fatalf("Switches() = %v, %v", sw, err)
	}
	for _, tc := range []struct {
		node  string
		role  NodeRole
		host  []string
		links []string
	}{
		{"e1", NodeEdge, []string{"host0"}, []string{"up0", "up1", "up2", "up3"}},
		{"e3", NodeEdge, []string{"host0", "host1"}, []string{"up0", "up1", "up2", "up3"}},
		{"f1", NodeFabric, nil, []string{"e1a", "e1b", "e2a", "e2b", "e3a", "e3b"}},
		{"f2", NodeFabric, nil, []string{"e1a", "e1b", "e2a", "e2b", "e3a", "e3b"}},
		{"h3b", NodeHost, []string{"eth0"}, nil},
	} {
		r, err := topo.Role(tc.node)
		if err != nil || r != tc.role {
			t.Errorf("%s: role %s, %v; want %s", tc.node, r, err, tc.role)
		}
		ports, err := topo.NodePorts(tc.node)
		if err != nil {
			t.Fatal(err)
		}
		if h, l := PortsOf(ports, RoleHost), PortsOf(ports, RoleLink); !slices.Equal(h, tc.host) || !slices.Equal(l, tc.links) {
			t.Errorf("%s: host %v link %v; want %v %v", tc.node, h, l, tc.host, tc.links)
		}
		for _, p := range ports {
			want := BitRate(1e9)
			if p.Role == RoleLink {
				want = 500e6
			}
			if p.Rate != want {
				t.Errorf("%s:%s rate %s; want %s", tc.node, p.Dev, p.Rate, want)
			}
		}
	}
	// Each edge's up0, up1 reach f1 and up2, up3 reach f2, on the ports
	// named after the edge.
	peer := map[End]End{}
	for _, l := range topo.Links {
		peer[l.Ends[0]], peer[l.Ends[1]] = l.Ends[1], l.Ends[0]
	}
	for _, e := range []string{"e1", "e2", "e3"} {
		for i, want := range []string{"f1:" + e + "a", "f1:" + e + "b", "f2:" + e + "a", "f2:" + e + "b"} {
			if got := peer[End{e, "up" + string(rune('0'+i))}].String(); got != want {
				t.Errorf("%s:up%d ⇄ %s; want %s", e, i, got, want)
			}
		}
	}
	// One /24 for every host.
	for _, h := range []string{"h1:eth0", "h2:eth0", "h3a:eth0", "h3b:eth0"} {
		if a := topo.Addresses[h]; len(a) != 1 || !strings.HasPrefix(a[0], "10.0.0.") || !strings.HasSuffix(a[0], "/24") {
			t.Errorf("%s: addresses %v", h, a)
		}
	}
}

// TestRolesImpliedAndChecked: without roles a namespace gets the role its
// ports imply; a role its ports contradict, an unknown role or namespace,
// and a buffer without a rate are refused with the namespace or link named.
func TestRolesImpliedAndChecked(t *testing.T) {
	pair := MustPreset(t, "pair")
	for n, want := range map[string]NodeRole{"sw1": NodeEdge, "h2": NodeHost} {
		if r, err := pair.Role(n); err != nil || r != want {
			t.Errorf("pair %s: %s, %v; want %s", n, r, err, want)
		}
	}
	base := `name: t
namespaces: [h1, sw1, sw2]
links:
  - {ends: [h1:eth0, sw1:host0]}
  - {ends: [sw1:link0, sw2:link0], mtu: link LINKEXTRA}
`
	for _, tc := range []struct{ roles, extra, want string }{
		{"roles: {sw1: fabric}", "", "sw1: role fabric"},
		{"roles: {sw2: edge}", "", "sw2: role edge"},
		{"roles: {h1: edge}", "", "h1: role edge"},
		{"roles: {sw2: spine}", "", `role "spine"`},
		{"roles: {sw9: fabric}", "", `"sw9"`},
		{"", ", buffer: 64K", "without a rate"},
		{"", ", rate: fast", "rate \"fast\""},
	} {
		y := strings.Replace(base, " LINKEXTRA", tc.extra, 1) + tc.roles + "\n"
		_, err := ParseTopology([]byte(y))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s%s: %v; want an error with %q", tc.roles, tc.extra, err, tc.want)
		}
	}
	ok := strings.Replace(base, " LINKEXTRA", ", rate: 500M, buffer: 64K", 1) + "roles: {sw1: edge, sw2: fabric, h1: host}\n"
	topo, err := ParseTopology([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := topo.NodePorts("sw2"); len(p) != 1 || p[0].Rate != 500e6 || p[0].Buffer != 64<<10 {
		t.Errorf("sw2 ports %+v; want link0 at 500M with a 64 KiB buffer", p)
	}
}

// TestEdgesMustReachEachOther: with roles declared, two edges joined only
// through a third edge (which does not forward cells) are refused, naming
// them; joined through a fabric node they are accepted.
func TestEdgesMustReachEachOther(t *testing.T) {
	base := `name: t
namespaces: [h1, h2, h3, e1, e2, e3, f1]
links:
  - {ends: [h1:eth0, e1:host0]}
  - {ends: [h2:eth0, e2:host0]}
  - {ends: [h3:eth0, e3:host0]}
  - {ends: [e1:up0, f1:p1], mtu: link}
  - {ends: [e2:up0, f1:p2], mtu: link}
  - {ends: [e3:up0, MIDDLE:p3], mtu: link}
roles: {e1: edge, e2: edge, e3: edge, f1: fabric}
`
	_, err := ParseTopology([]byte(strings.Replace(base, "MIDDLE", "e2", 1)))
	if err == nil || !strings.Contains(err.Error(), "e1 and e3 cannot reach each other") {
		t.Errorf("e3 behind edge e2: %v; want \"e1 and e3 cannot reach each other\"", err)
	}
	if _, err := ParseTopology([]byte(strings.Replace(base, "MIDDLE", "f1", 1))); err != nil {
		t.Errorf("every edge on fabric node f1: %v", err)
	}
	for _, p := range []string{"fabric3", "bundle", "pair"} {
		if _, err := Preset(p); err != nil {
			t.Errorf("preset %s: %v", p, err)
		}
	}
}

// TestFabric3UpDown: the fabric3 preset comes up (every namespace, every
// port up at its MTU, the hosts' addresses, two queues on fabric links,
// each port of a fabric node joined to the right edge), its record carries
// the roles and rates, and Down leaves nothing.
func TestFabric3UpDown(t *testing.T) {
	tb := TestUp(t, "lfn", "fabric3", Options{Forwarding: ForwardingNone})
	if got := netnsList(t, tb.Prefix); len(got) != 9 {
		t.Fatalf("namespaces: %v", got)
	}
	st, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range tb.Topology.Links {
		for _, e := range l.Ends {
			s, ok := st.Find(tb.NS(e.NS), e.Dev)
			if mtu := tb.Topology.PairMTU(tb.Options, l.MTU); !ok || s.State != "up" || s.MTU != mtu {
				t.Errorf("%s = %+v; want up at MTU %d", e, s, mtu)
			}
		}
		if l.MTU == MTULink {
			if q := queuesOf(t, tb.NS(l.Ends[1].NS), l.Ends[1].Dev); q != 2 {
				t.Errorf("%s: %d RX queues; want 2", l.Ends[1], q)
			}
		}
	}
	if s, ok := st.Find(tb.NS("h3b"), "eth0"); !ok || !slices.Contains(s.Addrs, "10.0.0.4/24") {
		t.Errorf("h3b eth0: %+v", s)
	}
	rec, err := Open(tb.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := rec.Topology.Role("f2"); r != NodeFabric {
		t.Errorf("recorded role of f2: %s", r)
	}
	if p, _ := rec.Topology.NodePorts("e2"); len(p) != 5 || p[0].Rate != 1e9 || p[4].Rate != 500e6 {
		t.Errorf("recorded ports of e2: %+v", p)
	}
	if err := tb.Down(); err != nil {
		t.Fatal(err)
	}
	if got := netnsList(t, tb.Prefix); len(got) != 0 {
		t.Errorf("left after Down: %v", got)
	}
}

// queuesOf is the number of RX queues of dev in ns.
func queuesOf(t *testing.T, ns, dev string) int {
	t.Helper()
	var n int
	if err := Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err == nil {
			n = l.Attrs().NumRxQueues
		}
		return err
	}); err != nil {
		t.Fatalf("%s in %s: %v", dev, ns, err)
	}
	return n
}
