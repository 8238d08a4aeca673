package main

import (
	"net"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
)

func TestParseBitRate(t *testing.T) {
	for in, want := range map[string]uint64{"10G": 10e9, "25Gbit": 25e9, "100g": 100e9, "1000M": 1e9, "2.5G": 2.5e9} {
		got, err := parseBitRate(in)
		if err != nil || got != want {
			t.Errorf("parseBitRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1G", "0"} {
		if _, err := parseBitRate(in); err == nil {
			t.Errorf("parseBitRate(%q) accepted", in)
		}
	}
}

// TestListenStatsLoopback: `run --metrics :PORT` binds the namespace's
// loopback, not every address (a dataplane's statistics are not for the
// whole network); an explicit address is kept.
func TestListenStatsLoopback(t *testing.T) {
	for in, wantHost := range map[string]string{":0": "127.0.0.1", "127.0.0.1:0": "127.0.0.1", "[::1]:0": "::1"} {
		ln, err := listenStats(in)
		if err != nil {
			if in == "[::1]:0" {
				continue // no IPv6 loopback here
			}
			t.Fatalf("listenStats(%q): %v", in, err)
		}
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		if host != wantHost {
			t.Errorf("--metrics %q listens on %s; want %s", in, ln.Addr(), wantHost)
		}
	}
}

func TestNodePortsFromTopology(t *testing.T) {
	var cfg dataplane.Config
	ns := ""
	if err := nodePorts(&cfg, &ns, "sw2", "pair", "", "lab"); err != nil {
		t.Fatal(err)
	}
	if ns != "labsw2" || cfg.HostPort != "host0" || cfg.LinkPort != "link0" {
		t.Errorf("--node sw2 --prefix lab: netns %q host %q link %q", ns, cfg.HostPort, cfg.LinkPort)
	}
	// Explicit flags win over the topology.
	cfg, ns = dataplane.Config{LinkPort: "link2"}, "other"
	if err := nodePorts(&cfg, &ns, "sw1", "bundle", "", "lf"); err != nil || ns != "other" || cfg.LinkPort != "link2" {
		t.Errorf("explicit --netns/--link-port with --node: %v, netns %q link %q", err, ns, cfg.LinkPort)
	}
	for _, tc := range []struct {
		node, preset, link string
		want               string
	}{
		{"sw1", "bundle", "", "lists 4 link ports"},
		{"", "pair", "", "--node NAME"},
		{"sw7", "pair", "", `no namespace "sw7"`},
		{"h1", "pair", "", "no link port"},
	} {
		cfg, ns := dataplane.Config{LinkPort: tc.link}, ""
		err := nodePorts(&cfg, &ns, tc.node, tc.preset, "", "lf")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--node %q --preset %s: %v, want an error with %q", tc.node, tc.preset, err, tc.want)
		}
	}
}
