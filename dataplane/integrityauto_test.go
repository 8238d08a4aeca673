package dataplane

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/netns"
)

// TestDriverFCS: a NIC on a bus checks the FCS; a virtual interface (no
// bus) and a VM's paravirtual NIC do not.
func TestDriverFCS(t *testing.T) {
	for _, tc := range []struct {
		driver, bus string
		want        bool
	}{
		{"veth", "", false},
		{"tun", "tap", false},
		{"bridge", "N/A", false},
		{"somevirt", "N/A", false},
		{"somevirt", "", false},
		{"virtio_net", "0000:00:03.0", false},
		{"hv_netvsc", "6d1c6e2a", false},
		{"mlx5_core", "0000:3b:00.0", true},
		{"ice", "0000:18:00.1", true},
	} {
		if got, why := driverFCS(tc.driver, tc.bus); got != tc.want || !strings.Contains(why, tc.driver) {
			t.Errorf("driver %s bus %q: FCS %v (%s); want %v, naming the driver", tc.driver, tc.bus, got, why, tc.want)
		}
	}
}

// TestAutoIntegrity: off only when every link port's MAC checks the FCS,
// else the cheaper trailer, naming the port that decided.
func TestAutoIntegrity(t *testing.T) {
	fcs := map[string]bool{"eth1": true, "eth2": true, "link0": false}
	f := func(p string) (bool, string) { return fcs[p], "what " + p + " is" }
	for _, tc := range []struct {
		links []string
		want  linkcrc.Integrity
		names string
	}{
		{[]string{"eth1"}, linkcrc.Off, "eth1"},
		{[]string{"eth1", "eth2"}, linkcrc.Off, "eth1"},
		{[]string{"link0"}, linkcrc.Csum, "link0"},
		{[]string{"eth1", "link0"}, linkcrc.Csum, "link0"},
	} {
		got, why := autoIntegrity(tc.links, f)
		if got != tc.want || !strings.Contains(why, tc.names) {
			t.Errorf("%v: %v (%s); want %v naming %s", tc.links, got, why, tc.want, tc.names)
		}
	}
}

// TestAutoIntegrityVeth: --integrity auto resolves to csum on both ends of
// a veth pair (the testbed's link), and an explicit mode is kept.
func TestAutoIntegrityVeth(t *testing.T) {
	tb := netns.TestUp(t, "lfia", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	for _, sw := range []string{"sw1", "sw2"} {
		for _, m := range []linkcrc.Integrity{linkcrc.Auto, linkcrc.CRC32C, linkcrc.Off} {
			c := Config{Mode: modeLG, HostPort: "host0", LinkPort: "link0", Link: LinkConfig{Integrity: m}}
			if err := netns.Do(tb.NS(sw), c.defaults); err != nil {
				t.Fatalf("%s: %v", sw, err)
			}
			want := m
			if m == linkcrc.Auto {
				want = linkcrc.Csum
			}
			if c.Link.Integrity != want {
				t.Errorf("%s --integrity %v: resolved to %v; want %v", sw, m, c.Link.Integrity, want)
			}
			if m == linkcrc.Auto && !strings.Contains(c.integrityWhy, "veth") {
				t.Errorf("%s: why %q does not name the driver veth", sw, c.integrityWhy)
			}
		}
	}
}
