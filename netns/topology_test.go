package netns

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestPresetPair(t *testing.T) {
	topo := MustPreset(t, "pair")
	if got := strings.Join(topo.NamespaceNames("lf"), " "); got != "lfh1 lfsw1 lfsw2 lfh2" {
		t.Errorf("namespaces = %s", got)
	}
	want := []VethPair{
		{Ends: [2]End{{"h1", "eth0"}, {"sw1", "host0"}}, MTU: MTUHost},
		{Ends: [2]End{{"sw1", "link0"}, {"sw2", "link0"}}, MTU: MTULink, Queues: 1},
		{Ends: [2]End{{"sw2", "host0"}, {"h2", "eth0"}}, MTU: MTUHost},
	}
	if len(topo.Links) != len(want) {
		t.Fatalf("links = %+v", topo.Links)
	}
	for i := range want {
		if topo.Links[i] != want[i] {
			t.Errorf("links[%d] = %+v, want %+v", i, topo.Links[i], want[i])
		}
	}
	if a := topo.Addresses["h1:eth0"]; len(a) != 1 || a[0] != "10.0.0.1/24" {
		t.Errorf("h1:eth0 addresses = %v", a)
	}
	if a := topo.Addresses["h2:eth0"]; len(a) != 1 || a[0] != "10.0.0.2/24" {
		t.Errorf("h2:eth0 addresses = %v", a)
	}
	if len(topo.Bridges) != 2 || topo.Bridges[0].Name != "br0" || strings.Join(topo.Bridges[1].Ports, ",") != "host0,link0" {
		t.Errorf("bridges = %+v", topo.Bridges)
	}
	for _, l := range topo.Links {
		for _, e := range l.Ends {
			if !topo.TxChecksumOffFor(e) {
				t.Errorf("tx checksum offload stays on at %s", e)
			}
			// The hosts' ends take frames the switches redirect in XDP.
			if host := e.NS == "h1" || e.NS == "h2"; topo.GROFor(e) != host {
				t.Errorf("GRO at %s: %v, want %v", e, topo.GROFor(e), host)
			}
		}
	}
}

// The bundle turns its hosts' GRO on for the modes with a kernel fast path
// into a host, off for cells and when no mode is known.
func TestPresetBundleGROByMode(t *testing.T) {
	topo := MustPreset(t, "bundle")
	for _, l := range topo.Links {
		for _, e := range l.Ends {
			if host := e.NS == "h1" || e.NS == "h2"; topo.GROFor(e) != host {
				t.Errorf("GRO end %s: %v, want %v", e, topo.GROFor(e), host)
			}
		}
	}
	for mode, want := range map[string]bool{"forward": true, "lg": true, "lgnb": true, "monitor": true, "cells": false, "": false} {
		if got := topo.GROIn(mode); got != want {
			t.Errorf("bundle GROIn(%q) = %v, want %v", mode, got, want)
		}
	}
	if pair := MustPreset(t, "pair"); !pair.GROIn("") || !pair.GROIn("cells") {
		t.Errorf("pair (no gro_modes) must keep its hosts' GRO on whatever runs")
	}
}

func TestPresetBundleExpandsCount(t *testing.T) {
	topo := MustPreset(t, "bundle")
	var links []string
	for _, l := range topo.Links {
		if l.MTU == MTULink {
			links = append(links, l.Ends[0].String()+"-"+l.Ends[1].String())
		}
	}
	if got := strings.Join(links, " "); got != "sw1:link0-sw2:link0 sw1:link1-sw2:link1 sw1:link2-sw2:link2 sw1:link3-sw2:link3" {
		t.Errorf("bundle links = %s", got)
	}
	if len(topo.Links) != 6 {
		t.Errorf("bundle has %d veth pairs, want 6", len(topo.Links))
	}
}

func TestPresetsListed(t *testing.T) {
	got := strings.Join(Presets(), ",")
	if got != "bundle,fabric3,pair,star4" {
		t.Errorf("Presets() = %s", got)
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "bundle, fabric3, pair, star4") {
		t.Errorf("Preset(nope) error = %v, want it to list presets", err)
	}
}

func TestOptionsLinkMTU(t *testing.T) {
	if got := (Options{}).LinkMTU(MTULink); got != 1526 {
		t.Errorf("default link MTU = %d, want 1526", got)
	}
	if got := (Options{}).LinkMTU(MTUHost); got != 1500 {
		t.Errorf("default host MTU = %d, want 1500", got)
	}
	if got := (Options{MTU: 3000, LinkHeaderLen: 24}).LinkMTU(MTULink); got != 3024 {
		t.Errorf("link MTU = %d, want 3024", got)
	}
}

// TestPairMTU: a topology's link_mtu sets its link-class pairs' MTU where
// it is above the host MTU plus the link header, never the host pairs'.
func TestPairMTU(t *testing.T) {
	topo := &Topology{LinkMTU: 3500}
	for _, tc := range []struct {
		o           Options
		class       string
		topoMTU     int
		want        int
		description string
	}{
		{Options{}, MTULink, 0, 1526, "no link_mtu"},
		{Options{}, MTULink, 3500, 3500, "link_mtu above host + header"},
		{Options{}, MTUHost, 3500, 1500, "host pairs keep the host MTU"},
		{Options{}, "", 3500, 1500, "no class is host"},
		{Options{MTU: 9000}, MTULink, 3500, 9026, "host + header above link_mtu"},
		{Options{LinkHeaderLen: 2100}, MTULink, 3500, 3600, "a larger --link-header wins"},
	} {
		topo.LinkMTU = tc.topoMTU
		if got := topo.PairMTU(tc.o, tc.class); got != tc.want {
			t.Errorf("%s: PairMTU(%+v, %q) = %d; want %d", tc.description, tc.o, tc.class, got, tc.want)
		}
	}
}

// A minimal valid topology that test cases break one way each.
const baseYAML = `
name: t
namespaces: [a, b]
links:
  - {ends: [a:x0, b:y0], mtu: link}
addresses:
  a:x0: [192.168.1.1/24]
bridges:
  - {ns: b, name: br0, ports: [y0]}
tx_checksum_off: [a:x0]
`

func TestParseTopologyErrors(t *testing.T) {
	if _, err := ParseTopology([]byte(baseYAML)); err != nil {
		t.Fatalf("base topology: %v", err)
	}
	cases := []struct {
		name, old, new, want string
	}{
		{"unknown field", "name: t", "name: t\nbogus: 1", "bogus"},
		{"undeclared namespace", "[a:x0, b:y0]", "[a:x0, c:y0]", `namespace "c" is not in namespaces`},
		{"end without colon", "[a:x0, b:y0]", "[a:x0, by0]", `want "namespace:device"`},
		{"long device", "[a:x0, b:y0]", "[a:x0, b:abcdefghijklmnop]", "longer than 15"},
		{"device lo", "[a:x0, b:y0]", "[a:x0, b:lo]", "loopback"},
		{"duplicate end", "links:\n", "links:\n  - {ends: [a:x0, b:y9]}\n", "used twice"},
		{"bad mtu class", "mtu: link", "mtu: jumbo", `mtu class "jumbo"`},
		{"bad address", "192.168.1.1/24", "192.168.1.1", "not an address/prefix"},
		{"address on unknown end", "a:x0: [", "a:x9: [", "a:x9 is not an end"},
		{"bridge unknown port", "ports: [y0]", "ports: [y1]", "port b:y1 is not an end"},
		{"bridge name taken", "name: br0", "name: y0", "already used"},
		{"bridge unknown ns", "ns: b,", "ns: z,", `namespace "z"`},
		{"tx unknown end", "tx_checksum_off: [a:x0]", "tx_checksum_off: [a:q]", "a:q is not an end"},
		{"all not alone", "tx_checksum_off: [a:x0]", "tx_checksum_off: [all, a:x0]", "only entry"},
		{"gro unknown end", "tx_checksum_off: [a:x0]", "tx_checksum_off: [a:x0]\ngro: [b:q]", "gro: end b:q is not an end"},
		{"gro_modes twice", "tx_checksum_off: [a:x0]", "tx_checksum_off: [a:x0]\ngro: [a:x0]\ngro_modes: [forward, forward]", "listed twice"},
		{"gro_modes without gro", "tx_checksum_off: [a:x0]", "tx_checksum_off: [a:x0]\ngro_modes: [forward]", "no gro ends"},
		{"duplicate namespace", "[a, b]", "[a, b, a]", "declared twice"},
		{"negative link_mtu", "name: t", "name: t\nlink_mtu: -1", "link_mtu -1"},
		{"bad namespace name", "[a, b]", "[a, b, \"x/y\"]", "namespace name"},
		{"count without {i}", "mtu: link}", "mtu: link, count: 2}", `needs "{i}"`},
		{"{i} without count", "[a:x0, b:y0]", `["a:x{i}", "b:y{i}"]`, `needs a count`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := strings.Replace(baseYAML, c.old, c.new, 1)
			if y == baseYAML {
				t.Fatalf("case did not change the YAML (%q not found)", c.old)
			}
			_, err := ParseTopology([]byte(y))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestTopologyRoundTrip(t *testing.T) {
	topo := MustPreset(t, "bundle")
	j, err := json.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(j), `"ends":["sw1:link3","sw2:link3"]`) {
		t.Errorf("JSON ends not written as ns:dev: %s", j)
	}
	var back Topology
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil || len(back.Links) != len(topo.Links) {
		t.Errorf("JSON round trip: %v, %d links", err, len(back.Links))
	}
	y, err := yaml.Marshal(topo)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseTopology(y)
	if err != nil {
		t.Fatalf("YAML round trip: %v\n%s", err, y)
	}
	if len(again.Links) != len(topo.Links) || again.Links[3] != topo.Links[3] {
		t.Errorf("YAML round trip changed links: %+v", again.Links)
	}
}

func TestSysctlPath(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.tcp_sack":              "/proc/sys/net/ipv4/tcp_sack",
		"net/ipv4/tcp_sack":              "/proc/sys/net/ipv4/tcp_sack",
		"/proc/sys/net/core/rmem_max":    "/proc/sys/net/core/rmem_max",
		"net.ipv6.conf.all.disable_ipv6": "/proc/sys/net/ipv6/conf/all/disable_ipv6",
	} {
		if got := sysctlPath(in); got != want {
			t.Errorf("sysctlPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "a/b", "-x", strings.Repeat("a", 40)} {
		if checkPrefix(p) == nil {
			t.Errorf("prefix %q accepted", p)
		}
	}
	if err := checkPrefix("lfn1x2"); err != nil {
		t.Error(err)
	}
}
