package netns

import (
	"slices"
	"strings"
	"testing"
)

func TestNodePorts(t *testing.T) {
	for _, tc := range []struct {
		preset, node string
		host, link   []string
	}{
		{"pair", "sw1", []string{"host0"}, []string{"link0"}},
		{"pair", "sw2", []string{"host0"}, []string{"link0"}},
		{"pair", "h1", []string{"eth0"}, nil},
		{"bundle", "sw1", []string{"host0"}, []string{"link0", "link1", "link2", "link3"}},
	} {
		topo := MustPreset(t, tc.preset)
		ports, err := topo.NodePorts(tc.node)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.preset, tc.node, err)
		}
		if h, l := PortsOf(ports, RoleHost), PortsOf(ports, RoleLink); !slices.Equal(h, tc.host) || !slices.Equal(l, tc.link) {
			t.Errorf("%s %s: host %v link %v, want %v %v", tc.preset, tc.node, h, l, tc.host, tc.link)
		}
	}
	topo := MustPreset(t, "pair")
	if _, err := topo.NodePorts("sw9"); err == nil || !strings.Contains(err.Error(), "sw9") {
		t.Errorf("an unknown node: %v", err)
	}
}
