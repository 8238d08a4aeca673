package preflight_test

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/internal/preflight"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// check runs the preflight of cfg in namespace ns and logs its report.
func check(t *testing.T, ns string, cfg dataplane.Config) *preflight.Report {
	t.Helper()
	cfg.Netns = ns
	var r *preflight.Report
	if err := netns.Do(ns, func() error { r = preflight.Run(cfg); return nil }); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	r.WriteText(&b)
	t.Logf("%s", b.String())
	return r
}

// find is the check of port named item (nil if none).
func find(r *preflight.Report, port, item string) *preflight.Check {
	for i, c := range r.Checks {
		if c.Port == port && c.Item == item {
			return &r.Checks[i]
		}
	}
	return nil
}

// On the pair testbed (link ports MTU + 26) lg can run on sw1; with the
// link port's MTU 10 bytes above the host port's, below lg's 12, the MTU
// check fails with the command that fixes it, and the node cannot run.
func TestPreflightPairAndMTUTooSmall(t *testing.T) {
	tb := netns.TestUp(t, "lfk", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1 := tb.NS("sw1")
	cfg := dataplane.Config{Mode: lgpipe.ModeLG, HostPort: "host0", LinkPort: "link0"}
	r := check(t, sw1, cfg)
	if !r.OK {
		t.Fatalf("preflight on the pair testbed: %d failed, want the node to run", r.Failed())
	}
	for _, item := range []string{"driver", "native_xdp", "zerocopy", "queues", "lro"} {
		for _, p := range []string{"host0", "link0"} {
			if find(r, p, item) == nil {
				t.Errorf("no %s check of %s", item, p)
			}
		}
	}
	for _, item := range []string{"mtu", "fcs", "promisc"} {
		if find(r, "link0", item) == nil {
			t.Errorf("no %s check of link0", item)
		}
	}
	if c := find(r, "host0", "tx_checksum"); c == nil {
		t.Error("no tx_checksum check of host0")
	}

	var hostMTU int
	if err := netns.Do(sw1, func() error {
		ifc, err := net.InterfaceByName("host0")
		if err == nil {
			hostMTU = ifc.MTU
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out, err := netns.Command(t.Context(), sw1, "ip", "link", "set", "dev", "link0", "mtu", strconv.Itoa(hostMTU+10)).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	r = check(t, sw1, cfg)
	if r.OK {
		t.Fatalf("preflight passed with link0's MTU %d for host MTU %d in mode lg", hostMTU+10, hostMTU)
	}
	c := find(r, "link0", "mtu")
	if c == nil || c.Status != preflight.Fail {
		t.Fatalf("link0 mtu check %+v, want a failure", c)
	}
	want := "ip -n " + sw1 + " link set dev link0 mtu " + strconv.Itoa(hostMTU+12)
	if c.Fix != want {
		t.Errorf("fix %q, want %q", c.Fix, want)
	}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil || !strings.Contains(b.String(), `"ok": false`) {
		t.Errorf("JSON report: %v\n%s", err, b.String())
	}
}
