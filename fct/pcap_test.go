package fct

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// pcapSynth writes a nanosecond pcap with Ethernet frames built by gopacket.
type pcapSynth struct {
	t       *testing.T
	buf     bytes.Buffer
	snaplen int
}

func newPcapSynth(t *testing.T, snaplen int) *pcapSynth {
	p := &pcapSynth{t: t, snaplen: snaplen}
	var h [24]byte
	binary.LittleEndian.PutUint32(h[0:], pcapMagicNanos)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], uint32(snaplen))
	binary.LittleEndian.PutUint32(h[20:], uint32(layers.LinkTypeEthernet))
	p.buf.Write(h[:])
	return p
}

type seg struct {
	src, dst       string
	sport, dport   uint16
	seq, ack       uint32
	syn, ackf, fin bool
	payload        int
}

func (p *pcapSynth) add(ts time.Time, s seg) {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(s.src).To4(), DstIP: net.ParseIP(s.dst).To4()}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport), Seq: s.seq, Ack: s.ack, SYN: s.syn, ACK: s.ackf, FIN: s.fin, Window: 1000}
	tcp.SetNetworkLayerForChecksum(ip)
	sb := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		eth, ip, tcp, gopacket.Payload(make([]byte, s.payload)))
	if err != nil {
		p.t.Fatal(err)
	}
	data := sb.Bytes()
	capLen := min(len(data), p.snaplen)
	var h [16]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(h[4:], uint32(ts.Nanosecond()))
	binary.LittleEndian.PutUint32(h[8:], uint32(capLen))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(data)))
	p.buf.Write(h[:])
	p.buf.Write(data[:capLen])
}

func TestParsePcap(t *testing.T) {
	const C, S = "10.0.0.1", "10.0.0.2"
	us := time.Microsecond
	p := newPcapSynth(t, 128)
	t0 := time.Unix(1700000000, 0)
	up := func(off time.Duration, sport uint16, seq, ack uint32, syn, ackf, fin bool, n int) {
		p.add(t0.Add(off), seg{C, S, sport, 5001, seq, ack, syn, ackf, fin, n})
	}
	down := func(off time.Duration, dport uint16, seq, ack uint32, syn bool) {
		p.add(t0.Add(off), seg{S, C, 5001, dport, seq, ack, syn, true, false, 0})
	}
	// Flow A: two 100 B segments, the second retransmitted; FCT 1100 µs.
	up(0, 40000, 1000, 0, true, false, false, 0)
	down(10*us, 40000, 5000, 1001, true)
	up(20*us, 40000, 1001, 5001, false, true, false, 0)
	up(30*us, 40000, 1001, 5001, false, true, false, 100)
	up(40*us, 40000, 1101, 5001, false, true, false, 100)
	down(50*us, 40000, 5001, 1101, false) // covers only the first segment
	// Flow B interleaves: ISN wraps around 2^32, SYN retransmitted, 143 B
	// payload truncated by the 128 B snap length; FCT 1050 µs from first SYN.
	var isnB uint32 = 0xfffffff0
	up(100*us, 40001, isnB, 0, true, false, false, 0)
	up(1100*us, 40001, isnB, 0, true, false, false, 0)
	down(1110*us, 40001, 7000, isnB+1, true)
	up(1120*us, 40001, isnB+1, 7001, false, true, false, 143)
	down(1150*us, 40001, 7001, isnB+1+143, false)
	// Flow A continued.
	up(1000*us, 40000, 1101, 5001, false, true, false, 100) // retransmission
	down(1100*us, 40000, 5001, 1201, false)
	up(1200*us, 40000, 1201, 5001, false, true, true, 0) // FIN
	up(1250*us, 40000, 1201, 5001, false, true, true, 0) // FIN again (TLP)
	down(1300*us, 40000, 5001, 1202, false)
	// Flow C reuses A's 4-tuple with a new ISN: 10 B, FCT 30 µs.
	up(2000*us, 40000, 90000, 0, true, false, false, 0)
	down(2010*us, 40000, 1, 90001, true)
	up(2020*us, 40000, 90001, 2, false, true, false, 10)
	down(2030*us, 40000, 2, 90011, false)
	// Flow D never gets its data ACKed.
	up(3000*us, 40002, 1, 0, true, false, false, 0)
	down(3010*us, 40002, 1, 2, true)
	up(3020*us, 40002, 2, 2, false, true, false, 50)

	flows, err := ParsePcap(&p.buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 4 {
		t.Fatalf("got %d flows, want 4: %+v", len(flows), flows)
	}
	type want struct {
		port                      uint16
		fct                       time.Duration
		bytes                     int64
		segs, retrans, synRetrans int
		complete                  bool
		finAck                    time.Duration // offset from t0, -1 = none
	}
	for i, w := range []want{
		{40000, 1100 * us, 200, 3, 1, 0, true, 1300 * us},
		{40001, 1050 * us, 143, 1, 0, 1, true, -1},
		{40000, 30 * us, 10, 1, 0, 0, true, -1},
		{40002, 0, 50, 1, 0, 0, false, -1},
	} {
		f := flows[i]
		if f.Client.Port() != w.port || f.Server.String() != "10.0.0.2:5001" || f.Client.Addr().String() != C {
			t.Errorf("flow %d: endpoints %v -> %v", i, f.Client, f.Server)
		}
		if wantFin := map[int]int{0: 1}[i]; f.FinRetrans != wantFin {
			t.Errorf("flow %d: FinRetrans %d, want %d", i, f.FinRetrans, wantFin)
		}
		if f.FCT != w.fct || f.Bytes != w.bytes || f.DataSegments != w.segs || f.Retrans != w.retrans ||
			f.SynRetrans != w.synRetrans || f.Complete != w.complete {
			t.Errorf("flow %d: got fct=%v bytes=%d segs=%d retrans=%d synretrans=%d complete=%v, want %+v",
				i, f.FCT, f.Bytes, f.DataSegments, f.Retrans, f.SynRetrans, f.Complete, w)
		}
		if w.finAck >= 0 && !f.FinAck.Equal(t0.Add(w.finAck)) {
			t.Errorf("flow %d: FinAck %v, want %v", i, f.FinAck, t0.Add(w.finAck))
		}
		if w.finAck < 0 && !f.FinAck.IsZero() {
			t.Errorf("flow %d: unexpected FinAck %v", i, f.FinAck)
		}
	}
}

func TestParsePcapBadInput(t *testing.T) {
	if _, err := ParsePcap(bytes.NewReader([]byte("not a pcap file at all......"))); err == nil {
		t.Fatal("want error for non-pcap input")
	}
}
