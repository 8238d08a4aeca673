package nfq

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// packetMsg builds an NFQNL_MSG_PACKET as the kernel sends it.
func packetMsg(id uint32, payload []byte, capLen uint32) []byte {
	q := &Queue{num: 7}
	b := q.header(nil, msgPacket, 0)
	var hdr [7]byte
	binary.BigEndian.PutUint32(hdr[:], id)
	binary.BigEndian.PutUint16(hdr[4:], 0x0800)
	hdr[6] = 3 // NF_INET_LOCAL_OUT
	b = attr(b, attrPacketHdr, hdr[:])
	b = attr(b, attrOutDev, be32(1))
	if payload != nil {
		b = attr(b, attrPayload, payload)
	}
	if capLen > 0 {
		b = attr(b, attrCapLen, be32(capLen))
	}
	return finish(b)
}

func TestParse(t *testing.T) {
	payload := make([]byte, 28)
	payload[0] = 0x45
	msgs := append(packetMsg(5, payload, 1400), packetMsg(6, nil, 60)...)
	// a message of another type in between is skipped
	other := finish(attr((&Queue{}).header(nil, msgConfig, 0), cfgCmd, []byte{1, 0, 0, 0}))
	msgs = append(msgs, other...)
	msgs = append(msgs, packetMsg(7, payload[:20], 0)...)
	q := &Queue{}
	got := q.parse(msgs, nil)
	if len(got) != 3 || q.Malformed != 0 {
		t.Fatalf("%d packets, %d malformed", len(got), q.Malformed)
	}
	want := []struct {
		id  uint32
		len int
		pl  int
	}{{5, 1400, 28}, {6, 60, 0}, {7, 20, 20}}
	for i, w := range want {
		p := got[i]
		if p.ID != w.id || p.Len != w.len || len(p.Payload) != w.pl || p.Proto != 0x0800 || p.Hook != 3 || p.OutDev != 1 {
			t.Errorf("packet %d: %+v, want id %d len %d payload %d", i, p, w.id, w.len, w.pl)
		}
	}
	// Truncations are counted, never a panic.
	for cut := 1; cut < len(msgs); cut += 3 {
		q := &Queue{}
		q.parse(msgs[:cut], nil)
	}
	bad := packetMsg(9, payload, 0)
	binary.NativeEndian.PutUint16(bad[unix.NLMSG_HDRLEN+4:], 200) // first attribute longer than the message
	q = &Queue{}
	if got := q.parse(bad, nil); len(got) != 0 || q.Malformed == 0 {
		t.Fatalf("bad attribute: %d packets, %d malformed", len(got), q.Malformed)
	}
}

func TestParseStats(t *testing.T) {
	text := "    3  12345     0 2  65535     0     0        4  1\n    7 4242    20 2     64     1     2       99  1\n"
	s, err := parseStats(text, 7)
	if err != nil {
		t.Fatal(err)
	}
	if s.PortID != 4242 || s.Total != 20 || s.CopyRange != 64 || s.QueueDropped != 1 || s.UserDropped != 2 || s.IDSequence != 99 {
		t.Fatalf("%+v", s)
	}
	if _, err := parseStats(text, 9); err == nil {
		t.Fatal("queue 9 found")
	}
}

// FuzzParse: any bytes from the socket are parsed without a panic, and
// every packet reported lies within the input.
func FuzzParse(f *testing.F) {
	f.Add(packetMsg(1, []byte{0x45, 0, 0, 28}, 0))
	f.Add(append(packetMsg(2, nil, 1500), packetMsg(3, make([]byte, 64), 9000)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		q := &Queue{}
		for _, p := range q.parse(b, nil) {
			if len(p.Payload) > len(b) || p.Len < 0 {
				t.Fatalf("packet %+v from %d bytes", p, len(b))
			}
		}
	})
}
