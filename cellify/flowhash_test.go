package cellify

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// fhTCPFrame writes an Ethernet + IPv4 + TCP header (54 bytes) into f.
func fhTCPFrame(f []byte, src, dst uint32, sport, dport uint16) {
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00})
	ip := f[14:]
	ip[0], ip[9] = 0x45, 6
	binary.BigEndian.PutUint16(ip[2:], uint16(len(f)-14))
	binary.BigEndian.PutUint16(ip[6:], 0x4000) // DF
	binary.BigEndian.PutUint32(ip[12:], src)
	binary.BigEndian.PutUint32(ip[16:], dst)
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
}

// fhUDP6Frame returns an Ethernet (one VLAN tag) + IPv6 frame with a
// hop-by-hop header, then UDP.
func fhUDP6Frame(srcLast byte, sport, dport uint16, payload int) []byte {
	f := make([]byte, 14+4+40+8+8+payload)
	copy(f, []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0x00, 0, 7, 0x86, 0xDD})
	ip := f[18:]
	ip[0], ip[6] = 0x60, 0 // next header: hop-by-hop
	ip[8], ip[23] = 0x20, srcLast
	ip[24], ip[39] = 0x20, 9
	ip[40], ip[41] = 17, 0 // hop-by-hop: next UDP, 8 bytes
	binary.BigEndian.PutUint16(ip[48:], sport)
	binary.BigEndian.PutUint16(ip[50:], dport)
	return f
}

func TestFlowHashFields(t *testing.T) {
	a := make([]byte, 200)
	b := make([]byte, 200)
	fhTCPFrame(a, 0x0a000001, 0x0a000002, 1000, 80)
	fhTCPFrame(b, 0x0a000001, 0x0a000002, 1000, 80)
	for i := 54; i < len(b); i++ {
		b[i] = byte(i)
	}
	if FlowHash(a, 1) != FlowHash(b, 1) {
		t.Fatal("the payload changed the hash")
	}
	if FlowHash(a, 1) == FlowHash(a, 2) {
		t.Fatal("the seed does not change the hash")
	}
	for i, mod := range []func(f []byte){
		func(f []byte) { fhTCPFrame(f, 0x0a000001, 0x0a000002, 1001, 80) },
		func(f []byte) { fhTCPFrame(f, 0x0a000001, 0x0a000002, 1000, 81) },
		func(f []byte) { fhTCPFrame(f, 0x0a000003, 0x0a000002, 1000, 80) },
		func(f []byte) { f[23] = 17 }, // UDP
	} {
		fhTCPFrame(b, 0x0a000001, 0x0a000002, 1000, 80)
		mod(b)
		if FlowHash(a, 1) == FlowHash(b, 1) {
			t.Fatalf("change %d of the 5-tuple kept the hash", i)
		}
	}
	// The MACs do not matter for IP.
	fhTCPFrame(b, 0x0a000001, 0x0a000002, 1000, 80)
	b[5] = 99
	if FlowHash(a, 1) != FlowHash(b, 1) {
		t.Fatal("the MAC changed an IP frame's hash")
	}
	// Fragments of one datagram hash alike, without ports.
	fhTCPFrame(a, 1, 2, 1000, 80)
	fhTCPFrame(b, 1, 2, 7, 7)
	binary.BigEndian.PutUint16(a[20:], 0x2000) // MF, offset 0
	binary.BigEndian.PutUint16(b[20:], 0x00B9) // last fragment, offset 185
	if FlowHash(a, 1) != FlowHash(b, 1) {
		t.Fatal("fragments of one datagram hash differently")
	}
}

func TestFlowHashIPv6AndL2(t *testing.T) {
	a, b := fhUDP6Frame(1, 5000, 53, 10), fhUDP6Frame(1, 5000, 53, 100)
	if FlowHash(a, 0) != FlowHash(b, 0) {
		t.Fatal("IPv6 payload changed the hash")
	}
	if FlowHash(a, 0) == FlowHash(fhUDP6Frame(1, 5001, 53, 10), 0) {
		t.Fatal("the UDP port behind a hop-by-hop header does not change the hash")
	}
	if FlowHash(a, 0) == FlowHash(fhUDP6Frame(2, 5000, 53, 10), 0) {
		t.Fatal("the IPv6 source does not change the hash")
	}
	arp := make([]byte, 60)
	copy(arp, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06})
	arp2 := bytes.Clone(arp)
	arp2[20] = 1
	if FlowHash(arp, 0) != FlowHash(arp2, 0) {
		t.Fatal("a non-IP frame's payload changed the hash")
	}
	arp2[11] = 2
	if FlowHash(arp, 0) == FlowHash(arp2, 0) {
		t.Fatal("the source MAC does not change a non-IP frame's hash")
	}
}

func TestFlowHashNoAlloc(t *testing.T) {
	f := fhUDP6Frame(1, 2, 3, 100)
	if n := testing.AllocsPerRun(1000, func() { FlowHash(f, 7) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// FuzzFlowHash: no panic on any input; the hash depends only on the
// leading bytes it claims to read (cutting the frame there, or changing
// any byte after, keeps it), so payload never moves a flow.
func FuzzFlowHash(f *testing.F) {
	tcp := make([]byte, 80)
	fhTCPFrame(tcp, 1, 2, 3, 4)
	f.Add(tcp, uint64(0))
	f.Add(fhUDP6Frame(1, 2, 3, 4), uint64(1))
	f.Add(tcp[:20], uint64(2))
	f.Add([]byte{1, 2, 3}, uint64(3))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		h, used := flowHash(data, seed)
		if used < 0 || used > len(data) {
			t.Fatalf("used %d of %d bytes", used, len(data))
		}
		if h2, u2 := flowHash(data[:used], seed); h2 != h || u2 > used {
			t.Fatalf("cut at %d: hash %x used %d, whole frame %x used %d", used, h2, u2, h, used)
		}
		if used < len(data) {
			d := bytes.Clone(data)
			d[len(d)-1] ^= 0xff
			d[used] ^= 0x5a
			if h2 := FlowHash(d, seed); h2 != h {
				t.Fatalf("a byte after the %d read changed the hash", used)
			}
		}
	})
}
