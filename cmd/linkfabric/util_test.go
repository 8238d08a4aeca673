package main

import (
	"maps"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
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
	// A bundle node gets every link port; a mode that takes one refuses
	// them, naming the flag and the ports.
	cfg, ns = dataplane.Config{}, ""
	if err := nodePorts(&cfg, &ns, "sw1", "bundle", "", "lf"); err != nil || !slices.Equal(cfg.LinkPorts, []string{"link0", "link1", "link2", "link3"}) || cfg.LinkPort != "link0" {
		t.Errorf("--node sw1 --preset bundle: %v, link ports %v (first %q)", err, cfg.LinkPorts, cfg.LinkPort)
	}
	if err := dataplane.CheckPorts(lgpipe.ModeLG, cfg.HostPort, cfg.LinkPorts); err == nil || !strings.Contains(err.Error(), "--mode lg takes one --link-port; got link0,link1,link2,link3") {
		t.Errorf("lg on the bundle's 4 link ports: %v", err)
	}
	for _, tc := range []struct {
		node, preset, link string
		want               string
	}{
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

// TestNodePortsRates: --node takes each port's rate and buffer from the
// topology (fabric3: host ports 1G with 2 MiB, fabric links 500M); --port-rate and
// --port-buffer win for the ports and fields they name (a rate of 0 turns
// the topology's off); a fabric node has no host port.
func TestNodePortsRates(t *testing.T) {
	flags, err := parsePortShapes("up1=100M,up3=0", "up1=32K,host0=64K")
	if err != nil {
		t.Fatal(err)
	}
	cfg, ns := dataplane.Config{}, ""
	if err := nodePorts(&cfg, &ns, "e1", "fabric3", "", "lf"); err != nil {
		t.Fatal(err)
	}
	got := flags.apply(cfg.Shape)
	want := map[string]dataplane.PortShape{
		"host0": {Rate: 1e9, Buffer: 64 << 10},
		"up0":   {Rate: 500e6}, "up1": {Rate: 100e6, Buffer: 32 << 10}, "up2": {Rate: 500e6},
	}
	if !maps.Equal(got, want) || ns != "lfe1" || cfg.HostPort != "host0" {
		t.Errorf("--node e1: netns %s host %q shapes %v; want %v", ns, cfg.HostPort, got, want)
	}
	if !maps.Equal(cfg.Shape, map[string]dataplane.PortShape{"host0": {Rate: 1e9, Buffer: 2 << 20}, "up0": {Rate: 500e6}, "up1": {Rate: 500e6}, "up2": {Rate: 500e6}, "up3": {Rate: 500e6}}) {
		t.Errorf("apply changed the topology's shapes: %v", cfg.Shape)
	}
	cfg = dataplane.Config{}
	if err := nodePorts(&cfg, new(string), "f2", "fabric3", "", "lf"); err != nil || cfg.HostPort != "" || len(cfg.LinkPorts) != 6 || cfg.Shape["e3b"].Rate != 500e6 {
		t.Errorf("--node f2: %v, host %q links %v shapes %v", err, cfg.HostPort, cfg.LinkPorts, cfg.Shape)
	}
	if f, err := parsePortShapes("link0=1G", ""); err != nil || !maps.Equal(f.apply(nil), map[string]dataplane.PortShape{"link0": {Rate: 1e9}}) {
		t.Errorf("--port-rate link0=1G without a topology: %v, %v", f.apply(nil), err)
	}
	for _, bad := range [][2]string{{"link0", ""}, {"link0=fast", ""}, {"", "link0=big"}, {"=1G", ""}} {
		if _, err := parsePortShapes(bad[0], bad[1]); err == nil {
			t.Errorf("--port-rate %q --port-buffer %q accepted", bad[0], bad[1])
		}
	}
}

// TestAFXDPFlags: run's --zerocopy defaults to auto and --need-wakeup to
// true; both parse into the dataplane's configuration, and a --zerocopy
// that is none of auto, on and off is refused with the choices named.
func TestAFXDPFlags(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		zc       dataplane.ZeroCopy
		noWakeup bool
	}{
		{nil, dataplane.ZeroCopyAuto, false},
		{[]string{"--zerocopy", "on"}, dataplane.ZeroCopyOn, false},
		{[]string{"--zerocopy=off", "--need-wakeup=false"}, dataplane.ZeroCopyOff, true},
		{[]string{"--zerocopy", "Auto", "--need-wakeup"}, dataplane.ZeroCopyAuto, false},
	} {
		f := runCmd().Flags()
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		zc, _ := f.GetString("zerocopy")
		nw, _ := f.GetBool("need-wakeup")
		var cfg dataplane.Config
		if err := afxdpFlags(&cfg, zc, nw); err != nil || cfg.ZeroCopy != tc.zc || cfg.NoNeedWakeup != tc.noWakeup {
			t.Errorf("%v: zerocopy %q need-wakeup %v → %q, NoNeedWakeup %v, %v; want %q, %v", tc.args, zc, nw, cfg.ZeroCopy, cfg.NoNeedWakeup, err, tc.zc, tc.noWakeup)
		}
	}
	var cfg dataplane.Config
	err := afxdpFlags(&cfg, "maybe", true)
	if err == nil || !strings.Contains(err.Error(), "--zerocopy") || !strings.Contains(err.Error(), "auto") || !strings.Contains(err.Error(), "off") {
		t.Errorf("--zerocopy maybe: %v; want an error naming the flag and its choices", err)
	}
	f := runCmd().Flags()
	for _, name := range []string{"frames", "frames-per-queue"} {
		if f.Lookup(name) == nil {
			t.Errorf("run has no --%s", name)
		}
	}
}

// The stats command heads its output with the link session's state and,
// in mismatch, what differs.
func TestSessionLines(t *testing.T) {
	doc := map[string]any{"linkguardian": map[string]any{"session": map[string]any{"state": "mismatch", "mismatch": "--integrity csum here, crc32c at the peer"}}}
	got := sessionLines(doc)
	if len(got) != 1 || got[0] != "link session (linkguardian): mismatch: --integrity csum here, crc32c at the peer" {
		t.Errorf("sessionLines = %q", got)
	}
	if got := sessionLines(map[string]any{"dataplane": map[string]any{}}); len(got) != 0 {
		t.Errorf("forward mode: sessionLines = %q, want none", got)
	}
}
