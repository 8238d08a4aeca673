package dataplane

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ifaceStats reads an interface's own counters.
func ifaceStats(t *testing.T, ns, dev string) netlink.LinkStatistics {
	t.Helper()
	var st netlink.LinkStatistics
	if err := netns.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err == nil {
			st = *l.Attrs().Statistics
		}
		return err
	}); err != nil {
		t.Fatalf("%s in %s: %v", dev, ns, err)
	}
	return st
}

// WaitFastPath waits until every direction of d takes path want and
// returns the snapshot.
func WaitFastPath(t *testing.T, name string, d *Dataplane, want FastPath) []FastPathSnapshot {
	t.Helper()
	var fp []FastPathSnapshot
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		fp = d.FastPath()
		ok := len(fp) == 2
		for _, f := range fp {
			ok = ok && f.Path == want
		}
		if ok {
			return fp
		}
	}
	t.Fatalf("%s: fast path %+v, want %s both ways", name, fp, want)
	return nil
}

// TestFastPathXDP: mode forward with the kernel path on both switches
// carries TCP and UDP both ways with no frame through AF_XDP; every port's
// counters equal the interface's own; a host's link control is still
// dropped and counted by the host port's program.
func TestFastPathXDP(t *testing.T) {
	RequireIperf3(t)
	tb := netns.TestUp(t, "lfw", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sws := map[string]*Dataplane{
		"sw1": StartSwitch(t, tb.NS("sw1"), Config{FastPath: FastPathXDP}),
		"sw2": StartSwitch(t, tb.NS("sw2"), Config{FastPath: FastPathXDP}),
	}
	for name, d := range sws {
		WaitFastPath(t, name, d, FastPathXDP)
	}
	type counts struct {
		iface         map[string]netlink.LinkStatistics
		dp            Snapshot
		xskRedirected map[string]uint64
	}
	read := func(sw string) counts {
		d := sws[sw]
		c := counts{iface: map[string]netlink.LinkStatistics{}, dp: d.Stats(), xskRedirected: map[string]uint64{}}
		for _, p := range []*Port{d.Host(), d.Link()} {
			c.iface[p.Name] = ifaceStats(t, tb.NS(sw), p.Name)
			pc, err := p.Program().Counters()
			if err != nil {
				t.Fatal(err)
			}
			c.xskRedirected[p.Name] = pc.Redirected
		}
		return c
	}
	before := map[string]counts{"sw1": read("sw1"), "sw2": read("sw2")}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through the kernel path: %v", err)
	}
	for _, reverse := range []bool{false, true} {
		args := []string{"-n", "20M"}
		if reverse {
			args = append(args, "-R")
		}
		StartIperfServer(t, ctx, tb.NS("h2"), 5311)
		out, err := RunIperfClient(ctx, tb.NS("h1"), 5311, args...)
		if err != nil {
			t.Fatalf("iperf3 TCP 20 MB (reverse %v) through the kernel path: %v\n%s", reverse, err, out)
		}
		t.Logf("TCP (reverse %v): %s", reverse, LastLines(string(out), 3))
	}
	h1Before, h2Before := ifaceStats(t, tb.NS("h1"), "eth0"), ifaceStats(t, tb.NS("h2"), "eth0")
	rcv1, rcv2 := SNMPFields(t, tb.NS("h1"), "Udp", "RcvbufErrors"), SNMPFields(t, tb.NS("h2"), "Udp", "RcvbufErrors")
	var lost uint64
	for _, reverse := range []bool{false, true} {
		sent, l, _ := IperfUDP(t, tb.NS("h1"), tb.NS("h2"), UDPRun{Port: 5312, Rate: "20M", Secs: 1, Reverse: reverse})
		t.Logf("UDP (reverse %v): %d datagrams, %d lost", reverse, sent, l)
		lost += l
	}
	// A datagram iperf3 lost is a drop a counter shows: the sending host's
	// veth (its peer's ring full) or the receiving socket's buffer.
	h1After, h2After := ifaceStats(t, tb.NS("h1"), "eth0"), ifaceStats(t, tb.NS("h2"), "eth0")
	rcvAfter1, rcvAfter2 := SNMPFields(t, tb.NS("h1"), "Udp", "RcvbufErrors"), SNMPFields(t, tb.NS("h2"), "Udp", "RcvbufErrors")
	drops := map[string]uint64{
		"h1 eth0 tx dropped": h1After.TxDropped - h1Before.TxDropped,
		"h2 eth0 tx dropped": h2After.TxDropped - h2Before.TxDropped,
		"h1 UDP rcvbuf":      rcvAfter1["RcvbufErrors"] - rcv1["RcvbufErrors"],
		"h2 UDP rcvbuf":      rcvAfter2["RcvbufErrors"] - rcv2["RcvbufErrors"],
	}
	var counted uint64
	for _, n := range drops {
		counted += n
	}
	if lost > counted {
		t.Errorf("UDP: %d datagrams lost, only %d drops counted on the way (%v): the kernel path lost frames", lost, counted, drops)
	}

	// Nothing went through AF_XDP, and each port's counters are the
	// interface's own.
	for _, sw := range []string{"sw1", "sw2"} {
		after := read(sw)
		b := before[sw]
		for _, p := range after.dp.Ports {
			name := sw + " " + p.Name
			if n := after.xskRedirected[p.Name] - b.xskRedirected[p.Name]; n != 0 {
				t.Errorf("%s: %d frames went to the AF_XDP socket on the kernel path", name, n)
			}
			var pb PortSnapshot
			for _, q := range b.dp.Ports {
				if q.Name == p.Name {
					pb = q
				}
			}
			ia, ib := after.iface[p.Name], b.iface[p.Name]
			rx, tx := p.RX.Frames-pb.RX.Frames, p.TX.Frames-pb.TX.Frames
			rxBytes := p.RX.Bytes - pb.RX.Bytes
			t.Logf("%s: rx %d frames (interface %d), tx %d (interface %d + %d dropped)", name, rx, ia.RxPackets-ib.RxPackets,
				tx, ia.TxPackets-ib.TxPackets, ia.TxDropped-ib.TxDropped)
			if rx < 10000 {
				t.Errorf("%s: received %d frames; the TCP and UDP runs need > 10000", name, rx)
			}
			// veth counts the bytes of a frame a host's stack sent without
			// its Ethernet header; those of a redirected frame, with it.
			ifBytes := ia.RxBytes - ib.RxBytes
			if rx != ia.RxPackets-ib.RxPackets || (rxBytes != ifBytes && rxBytes != ifBytes+EthHeaderLen*rx) {
				t.Errorf("%s: rx %d frames %d bytes, the interface counted %d frames %d bytes", name, rx, rxBytes, ia.RxPackets-ib.RxPackets, ifBytes)
			}
			if tx != ia.TxPackets-ib.TxPackets+ia.TxDropped-ib.TxDropped {
				t.Errorf("%s: tx %d frames, the interface counted %d sent + %d dropped", name, tx, ia.TxPackets-ib.TxPackets, ia.TxDropped-ib.TxDropped)
			}
		}
	}

	// A host's link control: dropped at sw1's host port and counted, never
	// forwarded, while the kernel path runs.
	d := sws["sw1"]
	linkTx := ifaceStats(t, tb.NS("sw1"), "link0").TxPackets
	c0, _ := d.Host().Program().Counters()
	fd := RawSender(t, tb.NS("h1"), "eth0")
	frames := map[string][]byte{
		"link ethertype": LinkFrame(1, 64),
		"PFC":            append([]byte{0x01, 0x80, 0xC2, 0, 0, 0x01, 2, 0, 0, 0, 0, 0x99, 0x88, 0x08, 0x01, 0x01}, make([]byte, 48)...),
		"LLDP":           append([]byte{0x01, 0x80, 0xC2, 0, 0, 0x0E, 2, 0, 0, 0, 0, 0x99, 0x88, 0xCC}, make([]byte, 50)...),
	}
	const each = 50
	for name, f := range frames {
		for range each {
			if _, err := unix.Write(fd, f); err != nil {
				t.Fatalf("inject %s from h1: %v", name, err)
			}
		}
	}
	want := uint64(each * len(frames))
	var c bpf.ProgCounters
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if c, _ = d.Host().Program().Counters(); c.HostControlDropped()-c0.HostControlDropped() >= want {
			break
		}
	}
	if got := c.HostControlDropped() - c0.HostControlDropped(); got != want ||
		c.HostLinkType-c0.HostLinkType != each || c.HostMACControl-c0.HostMACControl != each || c.HostReserved-c0.HostReserved != each {
		t.Errorf("host link control on the kernel path: %d dropped (%d link type, %d MAC control, %d reserved), want %d of each",
			got, c.HostLinkType-c0.HostLinkType, c.HostMACControl-c0.HostMACControl, c.HostReserved-c0.HostReserved, each)
	}
	if n := ifaceStats(t, tb.NS("sw1"), "link0").TxPackets - linkTx; n != 0 {
		t.Errorf("%d frames left sw1's link port while h1 sent only link control", n)
	}
}

// TestFastPathFallback: the AF_XDP path is chosen when asked for, when XDP
// runs in generic mode (and --fastpath xdp then refuses), and, direction by
// direction, while a target cannot take redirected frames (its veth peer
// without GRO); traffic flows on either path, and the direction returns to
// the kernel once the target accepts again.
func TestFastPathFallback(t *testing.T) {
	tb := netns.TestUp(t, "lfw", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1NS, sw2NS := tb.NS("sw1"), tb.NS("sw2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ping := func(what string) {
		t.Helper()
		// A dataplane just started may lose the first frame while its
		// ports come up (seen once in make test): wait for one answer,
		// then every ping must pass.
		if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
			t.Fatalf("ping h1→h2 %s: %v", what, err)
		}
		out, err := netns.Command(ctx, tb.NS("h1"), "ping", "-c", "5", "-i", "0.05", "-W", "2", "-q", "10.0.0.2").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " 0% packet loss") {
			t.Fatalf("ping h1→h2 %s: %v\n%s", what, err, out)
		}
	}

	// Generic XDP: --fastpath xdp refuses, auto falls back and says why.
	err := netns.Do(sw1NS, func() error {
		d, err := New(Config{HostPort: "host0", LinkPort: "link0", FastPath: FastPathXDP, XDPMode: bpf.XDPGeneric})
		if err == nil {
			d.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "generic") || !strings.Contains(err.Error(), "--fastpath auto") {
		t.Errorf("--fastpath xdp with generic XDP: error %v, want one naming generic mode and --fastpath auto", err)
	}
	gen, afx := StartBoth(t, sw1NS, Config{FastPath: FastPathAuto, XDPMode: bpf.XDPGeneric}, sw2NS, Config{FastPath: FastPathAFXDP})
	for _, f := range gen.D.FastPath() {
		if f.Path != FastPathAFXDP || !strings.Contains(f.Reason, "generic") {
			t.Errorf("sw1 generic XDP, auto: %+v, want afxdp because of generic mode", f)
		}
	}
	for _, f := range afx.D.FastPath() {
		if f.Path != FastPathAFXDP || f.Reason != "--fastpath afxdp" {
			t.Errorf("sw2 --fastpath afxdp: %+v", f)
		}
	}
	ping("on AF_XDP at both switches")
	for name, s := range map[string]*RunningSwitch{"sw1": gen, "sw2": afx} {
		for _, f := range s.D.FastPath() {
			if f.Frames != 0 {
				t.Errorf("%s %s→%s: %d frames on the kernel path while it is off", name, f.From, f.To, f.Frames)
			}
		}
		if st := s.D.Stats(); st.Host.RX.Frames < 5 || st.Link.RX.Frames < 5 {
			t.Errorf("%s on AF_XDP: host rx %d, link rx %d frames, want the pings", name, st.Host.RX.Frames, st.Link.RX.Frames)
		}
	}
	gen.Stop(t)

	// A target whose veth peer cannot take redirected frames: h1's eth0
	// without GRO makes link0 → host0 use AF_XDP, host0 → link0 stays.
	if err := netns.SetGRO(tb.NS("h1"), "eth0", false); err != nil {
		t.Fatal(err)
	}
	sw1 := StartWatched(t, sw1NS, Config{FastPath: FastPathAuto})
	fp := sw1.D.FastPath()
	if fp[0].Path != FastPathXDP || fp[1].Path != FastPathAFXDP || !strings.Contains(fp[1].Reason, "host0 does not accept redirected frames") {
		t.Fatalf("sw1 with h1's GRO off: %+v, want host0→link0 xdp, link0→host0 afxdp (host0 does not accept)", fp)
	}
	ping("with link0→host0 on AF_XDP")
	if got := sw1.D.FastPath(); got[0].Frames == 0 || got[1].Frames != 0 {
		t.Errorf("pings: %+v, want frames on the kernel path host0→link0 only", got)
	}
	if err := netns.SetGRO(tb.NS("h1"), "eth0", true); err != nil {
		t.Fatal(err)
	}
	fp = WaitFastPath(t, "sw1 after GRO on at h1", sw1.D, FastPathXDP)
	ping("after link0→host0 returned to the kernel path")
	if got := sw1.D.FastPath(); got[1].Frames == 0 || got[1].Changes != fp[1].Changes {
		t.Errorf("after GRO on: %+v, want link0→host0 frames on the kernel path and no further change", got)
	}
}
