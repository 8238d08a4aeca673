package bpf

import (
	"bytes"
	"encoding/binary"
	"os/exec"
	"testing"
)

// TestVethAcceptsRedirect checks what the XDP fast path relies on: a veth
// advertises ndo-xmit (frames may be redirected into it) exactly while its
// peer can take them: GRO on, or an XDP program on the peer.
func TestVethAcceptsRedirect(t *testing.T) {
	n := newVethNetNamed(t, "lfwf", "lfwa", "lfwb", 0)
	r, err := NewFeatureReader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	accepts := func() bool {
		t.Helper()
		f, err := r.Features(n.a.Attrs().Index)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("lfwa: %v", f)
		if f&XDPRedirect == 0 {
			t.Errorf("lfwa (veth) does not advertise redirect: %v", f)
		}
		return f.AcceptsRedirect()
	}
	gro := func(on string) {
		t.Helper()
		if out, err := exec.Command("ethtool", "-K", "lfwb", "gro", on).CombinedOutput(); err != nil {
			t.Fatalf("ethtool -K lfwb gro %s: %v: %s", on, err, out)
		}
	}
	gro("off")
	if accepts() {
		t.Error("lfwa accepts redirected frames while its peer lfwb has neither GRO nor an XDP program")
	}
	gro("on")
	if !accepts() {
		t.Error("lfwa refuses redirected frames while its peer lfwb has GRO on")
	}
	gro("off")
	p, err := AttachPort("lfwb", PortOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !accepts() {
		t.Error("lfwa refuses redirected frames while its peer lfwb has an XDP program")
	}
	p.Close()
	if accepts() {
		t.Error("lfwa accepts redirected frames after its peer's XDP program was detached (GRO off)")
	}
}

// devGetAnswer is a netdev DEV_GET answer as the kernel lays it out (after
// the nlmsghdr): genlmsghdr, ifindex, a pad attribute aligning the u64,
// xdp-features, xdp-zc-max-segs.
func devGetAnswer(ifindex uint32, f XDPFeatures) []byte {
	b := []byte{netdevCmdDevGet, 1, 0, 0}
	attr := func(typ uint16, v []byte) {
		b = binary.NativeEndian.AppendUint16(b, uint16(4+len(v)))
		b = binary.NativeEndian.AppendUint16(b, typ)
		b = append(b, v...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	attr(netdevAttrIfindex, binary.NativeEndian.AppendUint32(nil, ifindex))
	attr(2, nil) // NETDEV_A_DEV_PAD
	attr(netdevAttrXDPFeatures, binary.NativeEndian.AppendUint64(nil, uint64(f)))
	attr(4, binary.NativeEndian.AppendUint32(nil, 1))
	return b
}

func TestParseFeatures(t *testing.T) {
	want := XDPBasic | XDPRedirect | XDPNdoXmit | XDPRxSG
	good := devGetAnswer(7, want)
	if f, err := parseFeatures(good); err != nil || f != want {
		t.Fatalf("parseFeatures = %v, %v; want %v", f, err, want)
	}
	if !want.AcceptsRedirect() || (want &^ XDPNdoXmit).AcceptsRedirect() {
		t.Error("AcceptsRedirect does not follow the ndo-xmit bit")
	}
	// Cut before the features attribute ends: an error, never a value.
	for n := 0; n < 28; n++ {
		if f, err := parseFeatures(good[:n]); err == nil {
			t.Errorf("%d bytes of the answer: features %v, want an error", n, f)
		}
	}
	bad := bytes.Clone(good)
	binary.NativeEndian.PutUint16(bad[4:], 2) // an attribute shorter than its header
	if _, err := parseFeatures(bad); err == nil {
		t.Error("attribute of length 2: no error")
	}
}

// FuzzParseFeatures: any answer gives features or an error, never a panic;
// features only when the answer holds the attribute.
func FuzzParseFeatures(f *testing.F) {
	f.Add(devGetAnswer(2, XDPBasic|XDPRedirect|XDPRxSG))
	f.Add(devGetAnswer(3, XDPBasic|XDPRedirect|XDPNdoXmit|XDPRxSG|XDPNdoXmitSG))
	f.Fuzz(func(t *testing.T, b []byte) {
		feat, err := parseFeatures(b)
		if err == nil && !bytes.Contains(b, binary.NativeEndian.AppendUint64(nil, uint64(feat))) {
			t.Fatalf("features %v not in the answer %x", feat, b)
		}
	})
}
