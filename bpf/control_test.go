package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
)

// ipFrame is a 64-byte IPv4 frame (testFrame carries the link ethertype).
func ipFrame() []byte {
	b := testFrame(64)
	b[12], b[13] = 0x08, 0x00
	return b
}

// hostControlFrames are frames a host may not put on a link, by name.
func hostControlFrames() map[string][]byte {
	frame := func(dst []byte, et uint16, vlan bool) []byte {
		b := ipFrame()
		copy(b[0:6], dst)
		if vlan {
			b[12], b[13], b[14], b[15] = 0x81, 0x00, 0x00, 0x05
			b[16], b[17] = byte(et>>8), byte(et)
		} else {
			b[12], b[13] = byte(et>>8), byte(et)
		}
		return b
	}
	uni := []byte{2, 0, 0, 0, 0, 2}
	return map[string][]byte{
		"link ethertype":             frame(uni, 0x88B5, false),
		"link ethertype behind VLAN": frame(uni, 0x88B5, true),
		"MAC control (PFC)":          frame([]byte{0x01, 0x80, 0xC2, 0, 0, 0x01}, 0x8808, false),
		"MAC control to a unicast":   frame(uni, 0x8808, false),
		"LLDP to 01:80:C2:00:00:0E":  frame([]byte{0x01, 0x80, 0xC2, 0, 0, 0x0E}, 0x88CC, false),
		"STP to 01:80:C2:00:00:00":   frame([]byte{0x01, 0x80, 0xC2, 0, 0, 0x00}, 0x0800, false),
	}
}

func loadPortForTest(t *testing.T) *portObjects {
	t.Helper()
	needRoot(t)
	prepare()
	var po portObjects
	if err := loadPortObjects(&po, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { po.Close() })
	return &po
}

func runOne(t *testing.T, p *ebpf.Program, f []byte) uint32 {
	t.Helper()
	ret, err := p.Run(&ebpf.RunOptions{Data: f})
	if err != nil {
		t.Fatal(err)
	}
	return ret
}

// TestHostPortDropsLinkControl: a host port drops and counts every frame a
// host may not send onto a link (before this, the program passed them all:
// action 2 for each), and passes ordinary frames, including IP to other
// multicast groups.
func TestHostPortDropsLinkControl(t *testing.T) {
	po := loadPortForTest(t)
	if err := po.PortCfg.Put(uint32(0), portPortConf{Role: roleHost}); err != nil {
		t.Fatal(err)
	}
	frames := hostControlFrames()
	for name, f := range frames {
		if ret := runOne(t, po.LfPort, f); ret != xdpDrop {
			t.Errorf("host frame %s: action %d, want drop", name, ret)
		}
	}
	ok := ipFrame() // IPv4 unicast
	mcast := ipFrame()
	copy(mcast[0:6], []byte{0x01, 0x00, 0x5E, 0, 0, 1})
	nearby := ipFrame()
	copy(nearby[0:6], []byte{0x01, 0x80, 0xC2, 0, 0, 0x10}) // outside the reserved 0X block
	for name, f := range map[string][]byte{"IPv4": ok, "IPv4 multicast": mcast, "01:80:C2:00:00:10": nearby, "runt": ipFrame()[:14]} {
		if ret := runOne(t, po.LfPort, f); ret == xdpDrop {
			t.Errorf("host frame %s dropped", name)
		}
	}
	c, err := readProgCounters(po.PortCount)
	if err != nil {
		t.Fatal(err)
	}
	if c.HostLinkType != 2 || c.HostMACControl != 2 || c.HostReserved != 2 || c.HostControlDropped() != uint64(len(frames)) {
		t.Errorf("counters %+v: want 2 link-type, 2 MAC-control, 2 reserved", c)
	}
}

// TestLinkPortAcceptsControlOnlyFromPeer: a link port with no peer known
// accepts link control from anyone (as before the session is up); with the
// peer set, link-header and MAC-control frames from other sources are
// dropped and counted, except link session offers, and the peer's pass.
func TestLinkPortAcceptsControlOnlyFromPeer(t *testing.T) {
	po := loadPortForTest(t)
	peer := [6]byte{2, 0, 0, 0, 0, 9}
	ctl := func(src [6]byte, et uint16, typ byte) []byte {
		b := ipFrame()
		copy(b[6:12], src[:])
		b[12], b[13], b[14] = byte(et>>8), byte(et), typ
		return b
	}
	other := [6]byte{2, 0, 0, 0, 0, 7}
	for _, f := range [][]byte{ctl(other, 0x88B5, 3), ctl(other, 0x8808, 0)} {
		if ret := runOne(t, po.LfPort, f); ret == xdpDrop {
			t.Fatalf("no peer set: control frame dropped")
		}
	}
	p := &PortProgram{objs: *po, ifname: "test"}
	if err := p.SetPeerMAC(peer); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		f    []byte
		drop bool
	}{
		"loss notification from another source": {ctl(other, 0x88B5, 3), true},
		"PFC from another source":               {ctl(other, 0x8808, 0), true},
		"HELLO from another source":             {ctl(other, 0x88B5, 7), false},
		"HELLO-ACK from another source":         {ctl(other, 0x88B5, 8), false},
		"data from a host behind the peer":      {ctl(other, 0x88B5, 1), false},
		"dummy from another source":             {ctl(other, 0x88B5, 4), true},
		"loss notification from the peer":       {ctl(peer, 0x88B5, 3), false},
		"PFC from the peer":                     {ctl(peer, 0x8808, 0), false},
		"IPv4 from another source":              {ctl(other, 0x0800, 0x45), false},
	} {
		if got := runOne(t, po.LfPort, tc.f) == xdpDrop; got != tc.drop {
			t.Errorf("%s: dropped %v, want %v", name, got, tc.drop)
		}
	}
	c, _ := readProgCounters(po.PortCount)
	if c.ForeignControl != 3 {
		t.Errorf("foreign control counted %d, want 3", c.ForeignControl)
	}
	if err := p.SetPeerMAC([6]byte{}); err != nil {
		t.Fatal(err)
	}
	if ret := runOne(t, po.LfPort, ctl(other, 0x88B5, 3)); ret == xdpDrop {
		t.Error("peer cleared: control from another source still dropped")
	}
}

// TestFastPathRedirectsAfterControl: with the fast path on, a host port
// still drops and counts link control, redirects every other frame to the
// forward port (counted as forwarded), and, with no forward port, hands the
// frame to the AF_XDP path instead (counted as missed).
func TestFastPathRedirectsAfterControl(t *testing.T) {
	po := loadPortForTest(t)
	p := &PortProgram{objs: *po, ifname: "test"}
	if err := po.PortCfg.Put(uint32(0), portPortConf{Role: roleHost}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFast(true); err != nil {
		t.Fatal(err)
	}
	if ret := runOne(t, po.LfPort, ipFrame()); ret != xdpPass {
		t.Errorf("fast path without a forward port: action %d, want pass (no AF_XDP socket registered)", ret)
	}
	if err := p.SetForwardPort(1); err != nil { // lo: any interface will do for BPF_PROG_TEST_RUN
		t.Fatal(err)
	}
	frames := hostControlFrames()
	for name, f := range frames {
		if ret := runOne(t, po.LfPort, f); ret != xdpDrop {
			t.Errorf("fast path, host frame %s: action %d, want drop", name, ret)
		}
	}
	const n = 5
	for range n {
		if ret := runOne(t, po.LfPort, ipFrame()); ret != xdpRedirect {
			t.Fatalf("fast path, IPv4 frame: action %d, want redirect", ret)
		}
	}
	if err := p.SetFast(false); err != nil {
		t.Fatal(err)
	}
	if ret := runOne(t, po.LfPort, ipFrame()); ret != xdpPass {
		t.Errorf("fast path off: action %d, want pass (no AF_XDP socket registered)", ret)
	}
	c, err := readProgCounters(po.PortCount)
	if err != nil {
		t.Fatal(err)
	}
	if c.Forwarded != n || c.ForwardedBytes != n*uint64(len(ipFrame())) || c.ForwardMissed != 1 ||
		c.HostControlDropped() != uint64(len(frames)) || c.RxFrames != uint64(len(frames)+n+2) {
		t.Errorf("counters %+v: want %d forwarded (%d bytes), 1 missed, %d control dropped, %d seen",
			c, n, n*len(ipFrame()), len(frames), len(frames)+n+2)
	}
}
