package netns

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const wiredPair = `
name: wired
namespaces: [h1, sw1, sw2, h2]
links:
  - {ends: [h1:eth0, sw1:host0], mtu: host}
  - {ends: [sw1:link0, sw2:link0], mtu: link, queues: 2, wire: {netem: "loss 1% corrupt 0.1%"}}
  - {ends: [sw2:host0, h2:eth0], mtu: host}
addresses:
  h1:eth0: [10.0.0.1/24]
  h2:eth0: [10.0.0.2/24]
bridges:
  - {ns: sw1, name: br0, ports: [host0, link0]}
  - {ns: sw2, name: br0, ports: [host0, link0]}
`

// TestWireExpand: a link with a wire becomes two veth pairs through a middle
// namespace with the link's MTU class and queues; expanding again changes
// nothing; a wire namespace may not shadow a declared one.
func TestWireExpand(t *testing.T) {
	topo, err := ParseTopology([]byte(wiredPair))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(topo.Namespaces, ","); got != "h1,sw1,sw2,h2,wire" {
		t.Errorf("namespaces %s; want the wire namespace added", got)
	}
	var wired []string
	for _, l := range topo.Links {
		if l.Ends[1].NS == "wire" {
			wired = append(wired, l.Ends[0].String()+"-"+l.Ends[1].String())
			if l.MTU != MTULink || l.Queues != 2 || l.Wire != nil {
				t.Errorf("%v: mtu %s queues %d wire %v; want the wired link's class and queues", l.Ends, l.MTU, l.Queues, l.Wire)
			}
		}
		if l.Ends[0].String() == "sw1:link0" && l.Ends[1].String() == "sw2:link0" {
			t.Errorf("the wired link is still direct")
		}
	}
	if got := strings.Join(wired, " "); got != "sw1:link0-wire:end0 sw2:link0-wire:end1" {
		t.Errorf("wire links %q", got)
	}
	if len(topo.Wires) != 1 || topo.Wires[0].Netem != "loss 1% corrupt 0.1%" || topo.Wires[0].Ends[0].String() != "sw1:link0" {
		t.Errorf("wires %+v", topo.Wires)
	}
	again, err := topo.Expand()
	if err != nil || len(again.Links) != len(topo.Links) || len(again.Wires) != 1 || len(again.Namespaces) != 5 {
		t.Errorf("expanding twice changed the topology: %+v, %v", again, err)
	}
	bad := strings.Replace(wiredPair, "[h1, sw1, sw2, h2]", "[h1, sw1, sw2, h2, wire]", 1)
	if _, err := ParseTopology([]byte(bad)); err == nil || !strings.Contains(err.Error(), "wire: {ns:") {
		t.Errorf("a wire shadowing namespace \"wire\": %v; want an error that says how to name the wire", err)
	}
	// up --netem on the preset: the link gets a wire, the host links not.
	p := MustPreset(t, "pair")
	p.SetNetem("delay 1ms")
	x, err := p.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(x.Wires) != 1 || x.Wires[0].Netem != "delay 1ms" {
		t.Errorf("SetNetem on pair: wires %+v", x.Wires)
	}
	x.SetNetem("loss 5%") // already set: kept; no second wire
	if y, _ := x.Expand(); len(y.Wires) != 1 || y.Wires[0].Netem != "delay 1ms" {
		t.Errorf("SetNetem twice: wires %+v", y.Wires)
	}
}

// TestWireForwards: the pair testbed with a wire (no netem) and Linux
// bridges in the switches: h1 reaches h2 through the middle namespace, and
// the frames really cross it (its ports count them).
func TestWireForwards(t *testing.T) {
	RequireRoot(t)
	topo, err := ParseTopology([]byte(strings.Replace(wiredPair, `wire: {netem: "loss 1% corrupt 0.1%"}`, `wire: {}`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	tb := TestUpTopology(t, "lfd", topo, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through the wire: %v", err)
	}
	out, err := exec.Command("ip", "-n", tb.NS("wire"), "-s", "link", "show", "dev", WirePort1).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// RX and TX packet counts of end1 are not zero: the pings went through.
	f := strings.Fields(string(out))
	var rx, tx string
	for i := range f {
		if f[i] == "RX:" && i+8 < len(f) {
			rx = f[i+8]
		}
		if f[i] == "TX:" && i+8 < len(f) {
			tx = f[i+8]
		}
	}
	if rx == "" || rx == "0" || tx == "" || tx == "0" {
		t.Errorf("wire end1 counted rx %q tx %q packets; the pings did not cross the wire:\n%s", rx, tx, out)
	}
}

// TestWireNetem: a wire with netem either gets netem on both of its ports
// (a kernel with sch_netem) or fails Up with an error that says the kernel
// lacks sch_netem and names linkfabric impair, leaving nothing behind.
func TestWireNetem(t *testing.T) {
	RequireRoot(t)
	topo, err := ParseTopology([]byte(wiredPair))
	if err != nil {
		t.Fatal(err)
	}
	p := TestPrefix(t, "lfd")
	tb, err := Up(topo, Options{Prefix: p})
	if err != nil {
		t.Logf("Up: %v", err)
		if !errors.Is(err, ErrNoNetem) {
			t.Fatalf("Up with netem failed for another reason: %v", err)
		}
		for _, want := range []string{"sch_netem", "linkfabric impair --netns " + p + "sw2 --dev link0", "--loss", "--flip", p + "wire"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q", want)
			}
		}
		for _, n := range topo.NamespaceNames(p) {
			if nsExists(n) {
				t.Errorf("namespace %s left behind after the failed Up", n)
			}
		}
		return
	}
	for _, port := range []string{WirePort0, WirePort1} {
		out, err := exec.Command("tc", "-n", tb.NS("wire"), "qdisc", "show", "dev", port).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "netem") || !strings.Contains(string(out), "loss 1%") {
			t.Errorf("wire %s: no netem with loss 1%%: %v\n%s", port, err, out)
		}
	}
}
