package dataplane_test

// The dissector on real captures: each mode's frames, captured with tcpdump
// in the middle of the link (a wire namespace: the switches' link ports
// have XDP programs, which take frames before any wireCapture sees them),
// decoded by tshark and counted against the dataplanes' own counters.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// wireCapture is a tcpdump on one device of a namespace.
type wireCapture struct {
	cmd    *exec.Cmd
	path   string
	stderr *strings.Builder
	done   chan error
}

// startCapture starts tcpdump on dev in ns, writing path, and returns once
// it listens.
func startCapture(t *testing.T, ns, dev, path string) *wireCapture {
	t.Helper()
	c := &wireCapture{path: path, stderr: &strings.Builder{}, done: make(chan error, 1)}
	c.cmd = netns.Command(context.Background(), ns, "tcpdump", "-n", "-i", dev, "-Q", "inout", "-s", "0", "-B", "8192", "--immediate-mode", "-U", "-w", path)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = pw
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("tcpdump in %s: %v", ns, err)
	}
	pw.Close()
	listening := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		said := false
		for {
			n, err := pr.Read(buf)
			c.stderr.Write(buf[:n])
			if !said && strings.Contains(c.stderr.String(), "listening on") {
				said = true
				close(listening)
			}
			if err != nil {
				if !said {
					close(listening)
				}
				c.done <- c.cmd.Wait()
				return
			}
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatalf("tcpdump in %s did not start listening: %s", ns, c.stderr.String())
	}
	t.Cleanup(func() { c.cmd.Process.Kill() })
	return c
}

// stop ends the wireCapture and returns how many frames tcpdump captured and
// how many the kernel dropped.
func (c *wireCapture) stop(t *testing.T) (captured, dropped int) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("tcpdump did not stop: %s", c.stderr.String())
	}
	s := c.stderr.String()
	captured, dropped = -1, -1
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[1] == "packets" && f[2] == "captured" {
			captured, _ = strconv.Atoi(f[0])
		}
		if len(f) >= 5 && f[1] == "packets" && f[2] == "dropped" && f[4] == "kernel" {
			dropped, _ = strconv.Atoi(f[0])
		}
	}
	if captured < 0 || dropped < 0 {
		t.Fatalf("tcpdump's summary not found:\n%s", s)
	}
	return captured, dropped
}

// side is what one switch put on the link, as captured and decoded.
type side struct {
	name  string
	macs  map[string]bool
	rows  []dataplane.TsharkRow
	types map[string]int // linkfabric type ("1r": retransmitted data, "1u": unsequenced data, "-": not a link frame)
}

func (s *side) count() {
	s.types = map[string]int{}
	for _, r := range s.rows {
		k := r["linkfabric.type"]
		switch {
		case k == "" && r["linkfabric.tdma.seq"] != "":
			k = "tdma"
		case k == "":
			k = "-"
		case r["linkfabric.flags.retx"] == "1":
			k += "r"
		case k == "1" && r["linkfabric.flags.unseq"] == "1":
			k = "1u"
		}
		s.types[k]++
	}
}

func (s *side) String() string {
	var ks []string
	for k := range s.types {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, " %s:%d", k, s.types[k])
	}
	return fmt.Sprintf("%s sent %d frames (types%s)", s.name, len(s.rows), b.String())
}

// serials returns the serials of the rows of type typ ("1": sequenced data,
// first copies and retransmissions; "14": parity's first).
func serials(rows []dataplane.TsharkRow, typ, field string, retx bool) []int {
	var out []int
	for _, r := range rows {
		if r["linkfabric.type"] != typ || (r["linkfabric.flags.retx"] == "1") != retx || r["linkfabric.flags.unseq"] == "1" || r[field] == "" {
			continue
		}
		v, _ := strconv.Atoi(strings.Split(r[field], ";")[0])
		out = append(out, v)
	}
	return out
}

// consecutive checks that distinct serials (in wireCapture order, repeats
// allowed: copies) run without gaps modulo 2^17, and returns them as a set.
func consecutive(t *testing.T, what string, ss []int) map[int]bool {
	t.Helper()
	set := map[int]bool{}
	prev := -1
	for _, s := range ss {
		if s == prev {
			continue
		}
		if prev >= 0 && s != (prev+1)%(1<<17) {
			t.Errorf("%s: serial %d follows %d", what, s, prev)
		}
		if set[s] {
			t.Errorf("%s: serial %d again", what, s)
		}
		set[s] = true
		prev = s
	}
	return set
}

// TestDissectorOnTestbed runs each mode on a pair testbed whose link
// passes through a wire namespace, captures both directions there with
// tcpdump while h1 pings h2 (through 2 % loss at sw2's link port in the
// protected modes), and decodes the wireCapture with tshark and the dissector:
// every frame is decoded, nothing is malformed or an expert error, every
// trailer verifies, the data frames' sequence numbers run without a gap,
// and the frames of each type are as many as the sending dataplane counted.
func TestDissectorOnTestbed(t *testing.T) {
	netns.RequireRoot(t)
	dataplane.NeedTshark(t)
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("tcpdump not on PATH (scripts/deps.sh installs it)")
	}
	topo := netns.MustPreset(t, "pair")
	topo.SetNetem("") // the link through a wire namespace, unimpaired
	tb := netns.TestUpTopology(t, "lfw", topo, netns.Options{Forwarding: netns.ForwardingNone})
	wire := tb.NS("wire")
	// The wire's own ports stay silent (no IPv6 autoconfiguration).
	for _, k := range []string{"net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"} {
		if err := netns.Sysctl(wire, k, "1"); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []dataplane.Mode{dataplane.ModeForward, lgpipe.ModeLG, lgpipe.ModeLGNB, lgpipe.ModeMonitor, cellspipe.ModeCells, fecpipe.ModeFEC} {
		t.Run(string(mode), func(t *testing.T) { wireCaptureMode(t, tb, mode, "") })
	}
	// Cells over LinkGuardian: the cell family sequenced in place, and
	// the link session's HELLOs.
	t.Run("cells-lg", func(t *testing.T) { wireCaptureMode(t, tb, cellspipe.ModeCells, "lg") })
}

func wireCaptureMode(t *testing.T, tb *netns.Testbed, mode dataplane.Mode, cellLinkMode string) {
	sw1ns, sw2ns, wire := tb.NS("sw1"), tb.NS("sw2"), tb.NS("wire")
	path := filepath.Join(t.TempDir(), string(mode)+".pcap")
	capt := startCapture(t, wire, netns.WirePort0, path)

	// Both trailers: csum in lgnb and fec, CRC32C (the default) elsewhere.
	integrity := linkcrc.CRC32C
	if mode == lgpipe.ModeLGNB || mode == fecpipe.ModeFEC {
		integrity = linkcrc.Csum
	}
	cfg := func(id uint16) dataplane.Config {
		switch mode {
		case cellspipe.ModeCells:
			return withCells(dataplane.Config{Mode: cellspipe.ModeCells, HostPorts: []string{"host0"}, LinkPorts: []string{"link0"}, Link: dataplane.LinkConfig{Integrity: integrity}}, cellspipe.Config{NodeID: id, LinkMode: cellLinkMode})
		default:
			return dataplane.Config{Mode: mode, Link: dataplane.LinkConfig{Integrity: integrity}}
		}
	}
	sw1, sw2 := dataplane.StartBoth(t, sw1ns, cfg(1), sw2ns, cfg(2))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through %s: %v", mode, err)
	}
	lossy := mode != dataplane.ModeForward && (mode != cellspipe.ModeCells || cellLinkMode != "")
	if lossy {
		if err := sw2.D.Link().Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 0.02, Seed: 5}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := netns.Command(ctx, tb.NS("h1"), "ping", "-c", "200", "-i", "0.002", "-s", "200", "-q", "10.0.0.2").CombinedOutput()
	if err != nil && mode != lgpipe.ModeMonitor {
		t.Fatalf("200 pings h1→h2: %v\n%s", err, out)
	}
	if lossy {
		if err := sw2.D.Link().Program().SetImpair(bpf.ImpairConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // retransmissions and ACKs settle
	// Stop both dataplanes (their pipelines publish their counters as they
	// stop), then the wireCapture: it holds all they ever sent.
	for _, s := range []*dataplane.RunningSwitch{sw1, sw2} {
		s.Cancel()
		<-s.Done
	}
	time.Sleep(200 * time.Millisecond)
	captured, dropped := capt.stop(t)
	if dropped != 0 {
		t.Fatalf("tcpdump: %d frames dropped by the kernel", dropped)
	}

	mac := func(ns, dev string) string { return net.HardwareAddr(macOf(t, ns, dev)).String() }
	sides := []*side{
		{name: "sw1", macs: map[string]bool{mac(sw1ns, "link0"): true, mac(tb.NS("h1"), "eth0"): true}},
		{name: "sw2", macs: map[string]bool{mac(sw2ns, "link0"): true, mac(tb.NS("h2"), "eth0"): true}},
	}
	rows := dataplane.TsharkDecode(t, path)
	if len(rows) != captured {
		t.Fatalf("tshark decoded %d frames, tcpdump captured %d", len(rows), captured)
	}
	var bad int
	for i, r := range rows {
		if e := r.Errors(); e != "" {
			bad++
			if bad <= 10 {
				t.Errorf("frame %d: %s", i+1, e)
			}
		}
		link := strings.Split(r["eth.type"], ";")[0] == "0x88b5"
		if link && r["linkfabric.type"] == "" && r["linkfabric.tdma.seq"] == "" {
			t.Errorf("frame %d: link frame not decoded: %v", i+1, r)
		}
		if link && (r["linkfabric.trailer.ok"] != "1" || r["linkfabric.trailer.kind"] != integrity.String()) {
			t.Errorf("frame %d: integrity trailer not verified (kind %q ok %q)", i+1, r["linkfabric.trailer.kind"], r["linkfabric.trailer.ok"])
		}
		if mode != dataplane.ModeForward && !link {
			t.Errorf("frame %d: not a link frame in mode %s: %v", i+1, mode, r)
		}
		if mode == dataplane.ModeForward && link {
			t.Errorf("frame %d: a link frame in mode forward: %v", i+1, r)
		}
		src := strings.Split(r["eth.src"], ";")[0]
		owner := false
		for _, s := range sides {
			if s.macs[src] {
				s.rows = append(s.rows, r)
				owner = true
			}
		}
		if !owner {
			t.Errorf("frame %d from %s: neither switch's side sent it", i+1, src)
		}
	}
	sws := []*dataplane.RunningSwitch{sw1, sw2}
	for i, s := range sides {
		s.count()
		t.Logf("%s, its link port counted %d; tshark decoded %d", s, sws[i].D.Stats().Link.TX.Frames, len(s.rows))
		checkSide(t, mode, s, sides[1-i], sws[i].D, cellLinkMode)
	}
	if cellLinkMode != "" {
		mode += dataplane.Mode("/" + cellLinkMode)
	}
	t.Logf("mode %s: tcpdump captured %d frames, tshark decoded %d, %d malformed or with an expert error", mode, captured, len(rows), bad)
}

// eq reports a count that differs from the dataplane's.
// checkSent fails for every serial that a row of type typ names (count of
// them from first; the fields' names) and sent lacks; what says whose row.
func checkSent(t *testing.T, rows []dataplane.TsharkRow, typ, first, count string, sent map[int]bool, what string) {
	t.Helper()
	for _, r := range rows {
		if r["linkfabric.type"] != typ {
			continue
		}
		q0, _ := strconv.Atoi(r[first])
		n, _ := strconv.Atoi(r[count])
		for k := 0; k < n; k++ {
			if q := (q0 + k) % (1 << 17); !sent[q] {
				t.Errorf("%s serial %d, never sent", what, q)
			}
		}
	}
}

func eq(t *testing.T, s *side, what string, got int, want uint64) {
	t.Helper()
	if uint64(got) != want {
		t.Errorf("%s: %d %s captured, the dataplane counted %d", s.name, got, what, want)
	}
}

func checkSide(t *testing.T, mode dataplane.Mode, s, peer *side, d *dataplane.Dataplane, cellLinkMode string) {
	t.Helper()
	st := d.Stats()
	switch mode {
	case dataplane.ModeForward:
		eq(t, s, "frames", len(s.rows), st.Link.TX.Frames)
	case lgpipe.ModeLG, lgpipe.ModeLGNB, lgpipe.ModeMonitor:
		c := lgpipe.StatsOf(d).Core()
		ss := lgpipe.StatsOf(d).Session.Snapshot().Counters
		eq(t, s, "frames", len(s.rows), st.Link.TX.Frames)
		eq(t, s, "data frames", s.types["1"], c.Sender.DataSent)
		eq(t, s, "retransmitted copies", s.types["1r"], c.Sender.RetxCopies)
		eq(t, s, "ACKs", s.types["2"], c.Receiver.ExplicitAcksSent)
		eq(t, s, "loss notifications", s.types["3"], c.Receiver.LossNotifsSent+c.Receiver.Renotifies)
		eq(t, s, "dummies", s.types["4"], c.Sender.DummiesSent)
		eq(t, s, "pauses", s.types["5"], c.Receiver.PausesSent)
		eq(t, s, "resumes", s.types["6"], c.Receiver.ResumesSent)
		eq(t, s, "HELLOs", s.types["7"], ss.HellosTx)
		eq(t, s, "HELLO-ACKs", s.types["8"], ss.HelloAcksTx)
		eq(t, s, "unprotected host frames (plain or Unseq)", s.types["-"]+s.types["1u"], c.Port.TxPassthrough)
		sent := consecutive(t, s.name+" data", serials(s.rows, "1", "linkfabric.serial", false))
		for _, q := range serials(s.rows, "1", "linkfabric.serial", true) {
			if !sent[q] {
				t.Errorf("%s: retransmitted serial %d was never sent", s.name, q)
			}
		}
		// The peer's loss notifications name frames this side sent.
		checkSent(t, peer.rows, "3", "linkfabric.serial", "linkfabric.count", sent, s.name+": "+peer.name+"'s loss notification names")
	case fecpipe.ModeFEC:
		f := fecpipe.StatsOf(d).Snapshot()
		ss := fecpipe.StatsOf(d).Session.Snapshot().Counters
		eq(t, s, "frames", len(s.rows), st.Link.TX.Frames)
		eq(t, s, "data transmissions", s.types["1"], f.Sender.Data+f.Sender.Copies)
		eq(t, s, "parity frames", s.types["14"], f.Sender.Parity)
		eq(t, s, "HELLOs", s.types["7"], ss.HellosTx)
		eq(t, s, "HELLO-ACKs", s.types["8"], ss.HelloAcksTx)
		sent := consecutive(t, s.name+" data", serials(s.rows, "1", "linkfabric.serial", false))
		checkSent(t, s.rows, "14", "linkfabric.fec.first_serial", "linkfabric.fec.count", sent, s.name+": parity covers")
	case cellspipe.ModeCells:
		l := cellspipe.StatsOf(d).Snapshot().Links[0]
		eq(t, s, "frames", len(s.rows), st.Link.TX.Frames)
		eq(t, s, "cells", s.types["9"], l.TxCells)
		eq(t, s, "credit and REACH frames", s.types["10"]+s.types["11"]+s.types["12"], l.TxCtrl)
		if cellLinkMode != "" {
			// LinkGuardian sequences the cells in place: their serials
			// run without a gap, retransmissions repeat them.
			eq(t, s, "sequenced cells", s.types["9"], l.LG.Sent)
			eq(t, s, "retransmitted cells", s.types["9r"], l.LG.RetxCopies)
			sent := consecutive(t, s.name+" cells", serials(s.rows, "9", "linkfabric.serial", false))
			for _, q := range serials(s.rows, "9", "linkfabric.serial", true) {
				if !sent[q] {
					t.Errorf("%s: retransmitted cell serial %d was never sent", s.name, q)
				}
			}
		}
		// Each stream's cells and the REACH counter run without a gap.
		streams := map[string][]int{}
		for _, r := range s.rows {
			if r["linkfabric.flags.retx"] == "1" {
				continue // a copy of a cell already counted
			}
			switch r["linkfabric.type"] {
			case "9":
				k := r["linkfabric.cell.src"] + ">" + r["linkfabric.cell.dst"] + ":" + r["linkfabric.cell.port"] + "/" + r["linkfabric.cell.class"]
				v, _ := strconv.Atoi(r["linkfabric.cell.seq"])
				streams[k] = append(streams[k], v)
			case "12":
				v, _ := strconv.Atoi(r["linkfabric.reach.counter"])
				streams["reach"] = append(streams["reach"], v)
			}
		}
		for k, v := range streams {
			for i := 1; i < len(v); i++ {
				if v[i] != v[i-1]+1 {
					t.Errorf("%s: %s: %d follows %d", s.name, k, v[i], v[i-1])
				}
			}
		}
	}
}
