package dataplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/internal/wanterr"
)

// TestCheckPorts: what a mode takes of host and link ports is checked with
// errors naming the flags and the ports given.
func TestCheckPorts(t *testing.T) {
	many := make([]string, MaxLinkPorts+1)
	for i := range many {
		many[i] = fmt.Sprintf("link%d", i)
	}
	for _, tc := range []struct {
		mode  Mode
		host  string
		links []string
		want  string
	}{
		{modeLG, "host0", []string{"link0", "link1"}, "--mode lg takes one --link-port; got link0,link1"},
		{ModeForward, "host0", nil, "--mode forward needs a link port (--link-port IF)"},
		{ModeForward, "", []string{"link0"}, "--mode forward needs a --host-port"},
		{ModeForward, "link1", []string{"link0", "link1"}, "link1 is both a host port and a link port"},
		{ModeForward, "host0", []string{"link0", "link1", "link0"}, "--link-port link0,link1,link0 names link0 twice"},
		{ModeForward, "host0", many, "at most 16"},
		{"cells2", "host0", []string{"link0"}, `mode "cells2" is not known (modes: cells, fec, forward, lg, lgnb, monitor`},
	} {
		err := CheckPorts(tc.mode, tc.host, tc.links)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s host %q links %v: %v; want an error with %q", tc.mode, tc.host, tc.links, err, tc.want)
		}
	}
	for _, m := range []Mode{ModeForward, modeLG, modeLGNB, modeMonitor, modeCells} {
		if err := CheckPorts(m, "host0", []string{"link0"}); err != nil {
			t.Errorf("%s on host0, link0: %v", m, err)
		}
	}
	// Several host ports: cells takes them (an edge with two hosts), and
	// no host port (a fabric node); lg takes one.
	for _, tc := range []struct {
		mode  Mode
		hosts []string
		want  string
	}{
		{modeCells, []string{"host0", "host1"}, ""},
		{modeCells, nil, ""},
		{modeLG, []string{"host0", "host1"}, "--mode lg takes at most 1 --host-port; got host0,host1"},
		{modeCells, []string{"host0", "host0"}, "--host-port host0,host0 names host0 twice"},
		{modeCells, []string{"host0", "link0"}, "link0 is both a host port and a link port"},
	} {
		wanterr.Check(t, CheckNodePorts(tc.mode, tc.hosts, []string{"link0", "link1"}), tc.want, "%s hosts %v", tc.mode, tc.hosts)
	}
	c0 := Config{Mode: modeCells, HostPorts: []string{"host0", "host1"}, LinkPorts: []string{"up0"}}
	if err := c0.defaults(); err != nil || c0.HostPort != "host0" || !slices.Equal(c0.portNames(), []string{"host0", "host1", "up0"}) {
		t.Errorf("HostPorts [host0 host1]: HostPort %q, names %v, %v", c0.HostPort, c0.portNames(), err)
	}
	// LinkPort is the first of LinkPorts, whichever is given.
	c := Config{HostPort: "host0", LinkPorts: []string{"link3"}}
	if err := c.defaults(); err != nil || c.LinkPort != "link3" {
		t.Errorf("LinkPorts [link3]: LinkPort %q, %v", c.LinkPort, err)
	}
	c = Config{HostPort: "host0", LinkPort: "link0", LinkPorts: []string{"link1"}}
	if err := c.defaults(); err == nil {
		t.Error("LinkPort link0 with LinkPorts [link1] accepted")
	}
}

// TestPortsNumbering: the host port first if there is one, then the link
// ports; Link and Role tell them apart.
func TestPortsNumbering(t *testing.T) {
	p := newPorts(1, 3)
	if p.Host != 0 || !slices.Equal(p.Hosts, []int{0}) || !slices.Equal(p.Links, []int{1, 2, 3}) || p.N() != 4 || p.Role(0) != RoleHost || p.Role(3) != RoleLink {
		t.Errorf("host and 3 links: %+v N %d", p, p.N())
	}
	e3 := newPorts(2, 4)
	if e3.Host != 0 || !slices.Equal(e3.Hosts, []int{0, 1}) || !slices.Equal(e3.Links, []int{2, 3, 4, 5}) || e3.N() != 6 || e3.Role(1) != RoleHost || e3.Role(2) != RoleLink {
		t.Errorf("2 hosts and 4 links: %+v N %d", e3, e3.N())
	}
	if k, ok := e3.HostIndex(1); !ok || k != 1 {
		t.Errorf("HostIndex(1) = %d, %v", k, ok)
	}
	if _, ok := e3.HostIndex(2); ok {
		t.Error("a link port taken for a host port")
	}
	if k, ok := p.Link(2); !ok || k != 1 {
		t.Errorf("Link(2) = %d, %v; want link 1", k, ok)
	}
	if _, ok := p.Link(0); ok {
		t.Error("the host port taken for a link port")
	}
	f := newPorts(0, 6)
	if f.Host != -1 || !slices.Equal(f.Links, []int{0, 1, 2, 3, 4, 5}) || f.N() != 6 || f.Role(0) != RoleLink {
		t.Errorf("fabric node with 6 links: %+v N %d", f, f.N())
	}
	if k, ok := f.Link(0); !ok || k != 0 {
		t.Errorf("fabric Link(0) = %d, %v", k, ok)
	}
}

// TestLaneOrder: with N link ports the worker reads and kicks every link
// port's priority lane first, then the link ports' data lanes, the host port
// last; a link port without a second queue has only its data lane.
func TestLaneOrder(t *testing.T) {
	ps := newPorts(1, 3)
	rx, kick := laneOrder(ps, []int{1, 2, 1, 3}, []int{1, 2, 1, 3}) // host 1 queue; links 2, 1, 3
	want := []lanePos{{1, LanePrio}, {3, LanePrio}, {1, LaneData}, {2, LaneData}, {3, LaneData}, {3, 2}, {0, LaneData}}
	if !slices.Equal(rx, want) {
		t.Errorf("receive order %v; want %v", rx, want)
	}
	wantKick := []lanePos{{1, LanePrio}, {3, LanePrio}, {1, LaneData}, {2, LaneData}, {3, LaneData}, {0, LaneData}}
	if !slices.Equal(kick, wantKick) {
		t.Errorf("kick order %v; want %v", kick, wantKick)
	}
	rx, kick = laneOrder(newPorts(0, 2), []int{2, 2}, []int{2, 2})
	if !slices.Equal(rx, []lanePos{{0, 1}, {1, 1}, {0, 0}, {1, 0}}) || !slices.Equal(kick, rx) {
		t.Errorf("fabric node: receive %v kick %v", rx, kick)
	}
	// Two host ports: both last, in order.
	rx, kick = laneOrder(newPorts(2, 1), []int{1, 1, 2}, []int{1, 1, 2})
	if !slices.Equal(rx, []lanePos{{2, 1}, {2, 0}, {0, 0}, {1, 0}}) || !slices.Equal(kick, []lanePos{{2, 1}, {2, 0}, {0, 0}, {1, 0}}) {
		t.Errorf("two host ports: receive %v kick %v", rx, kick)
	}
	// A link port with two receive queues and a single TX queue: both
	// queues are read (queue 1 first), only the data lane is kicked.
	rx, kick = laneOrder(newPorts(1, 1), []int{1, 2}, []int{1, 1})
	if !slices.Equal(rx, []lanePos{{1, 1}, {1, 0}, {0, 0}}) || !slices.Equal(kick, []lanePos{{1, 0}, {0, 0}}) {
		t.Errorf("single TX queue: receive %v kick %v; want [{1 1} {1 0} {0 0}] and [{1 0} {0 0}]", rx, kick)
	}
}

// TestKickDeliveriesFirst: a pipeline whose control frames can wait kicks
// the host ports first, then the link ports' data lanes, their priority
// lanes last.
func TestKickDeliveriesFirst(t *testing.T) {
	ps := newPorts(2, 2)
	_, kick := laneOrder(ps, []int{1, 1, 2, 2}, []int{1, 1, 2, 2})
	w := &Worker{d: &Dataplane{ports: ps}}
	for _, k := range kick {
		w.kick = append(w.kick, lane{port: k.port, lane: k.lane})
	}
	placing := slices.Clone(w.kick)
	w.KickDeliveriesFirst()
	if !slices.Equal(w.kick, placing) {
		t.Errorf("the placing order changed: %v, want %v", w.kick, placing)
	}
	var got []lanePos
	for _, k := range w.kicks {
		got = append(got, lanePos{k.port, k.lane})
	}
	want := []lanePos{{0, LaneData}, {1, LaneData}, {2, LaneData}, {3, LaneData}, {2, LanePrio}, {3, LanePrio}}
	if !slices.Equal(got, want) {
		t.Errorf("kick order %v; want %v", got, want)
	}
}

// TestFramesScaleWithSockets: the default UMEM grows with the sockets and
// egress queues of N ports; a --frames given too small for them is refused
// with the count of sockets and a value that works.
func TestFramesScaleWithSockets(t *testing.T) {
	links := []string{"l0", "l1", "l2", "l3", "l4", "l5"}
	shape := map[string]PortShape{}
	for _, l := range links {
		shape[l] = PortShape{Rate: 500e6}
	}
	c := Config{LinkPorts: links, HostPort: "h0", Shape: shape, Mode: ModeSpray}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	const sockets = 13 // host 1 queue, 6 links of 2
	if err := c.checkSizes(sockets); err != nil {
		t.Fatal(err)
	}
	need := sockets*int(c.RingSize) + c.Batch + len(links)*int(c.RingSize)
	if int(c.FrameCount) < need {
		t.Errorf("default --frames %d for %d sockets and %d egress queues; they need %d", c.FrameCount, sockets, len(links), need)
	}
	c = Config{LinkPorts: links, HostPort: "h0", Mode: ModeSpray, FrameCount: 16384}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	err := c.checkSizes(sockets)
	if err == nil || !strings.Contains(err.Error(), "13 sockets") || !strings.Contains(err.Error(), "--frames") {
		t.Errorf("--frames 16384 for 13 sockets of 2048: %v", err)
	}
	// Sized per queue: the pair's three sockets get 2 × --ring-size each
	// (and a batch); a 16-queue NIC's ports eight times as much per port.
	for _, tc := range []struct {
		sockets int
		perQ    uint32
	}{{3, 0}, {32, 0}, {3, 8192}} {
		c = Config{HostPort: "host0", LinkPort: "link0", FramesPerQueue: tc.perQ}
		if err := c.defaults(); err != nil {
			t.Fatal(err)
		}
		perQ := tc.perQ
		if perQ == 0 {
			perQ = 2 * c.RingSize
		}
		want := uint32(tc.sockets)*perQ + uint32(c.Batch)
		if err := c.checkSizes(tc.sockets); err != nil || c.FrameCount != want {
			t.Errorf("forward, %d sockets, --frames-per-queue %d: --frames %d, %v; want %d", tc.sockets, tc.perQ, c.FrameCount, err, want)
		}
	}
}
