package fct

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// pcapSynth collects Ethernet frames built by gopacket and writes them as a
// capture file in one of the formats tcpdump, dumpcap or tshark write.
type pcapSynth struct {
	t       *testing.T
	snaplen int
	pkts    []synthPkt
}

type synthPkt struct {
	ts   time.Time
	data []byte
}

func newPcapSynth(t *testing.T, snaplen int) *pcapSynth {
	return &pcapSynth{t: t, snaplen: snaplen}
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
	p.pkts = append(p.pkts, synthPkt{ts, slices.Clone(sb.Bytes())})
}

// Capture file formats the synthesiser writes.
const (
	fmtPcapNanosLE  = "pcap-nanos-le"  // tcpdump --time-stamp-precision nano on x86
	fmtPcapMicrosBE = "pcap-micros-be" // tcpdump's default precision, big-endian writer
	fmtPcapng       = "pcapng"         // dumpcap/tshark's default
)

var synthFormats = []string{fmtPcapNanosLE, fmtPcapMicrosBE, fmtPcapng}

// bytes writes the collected frames in format f. The classic pcap variants
// are written by hand here (so the test does not only check pcapgo against
// itself); pcapng by pcapgo's writer.
func (p *pcapSynth) bytes(f string) []byte {
	var buf bytes.Buffer
	switch f {
	case fmtPcapNanosLE, fmtPcapMicrosBE:
		var o binary.ByteOrder = binary.LittleEndian
		magic, nanos := uint32(0xa1b23c4d), true
		if f == fmtPcapMicrosBE {
			o, magic, nanos = binary.BigEndian, 0xa1b2c3d4, false
		}
		var h [24]byte
		o.PutUint32(h[0:], magic)
		o.PutUint16(h[4:], 2)
		o.PutUint16(h[6:], 4)
		o.PutUint32(h[16:], uint32(p.snaplen))
		o.PutUint32(h[20:], uint32(layers.LinkTypeEthernet))
		buf.Write(h[:])
		for _, pk := range p.pkts {
			capLen := min(len(pk.data), p.snaplen)
			var r [16]byte
			frac := pk.ts.Nanosecond()
			if !nanos {
				frac /= 1000
			}
			o.PutUint32(r[0:], uint32(pk.ts.Unix()))
			o.PutUint32(r[4:], uint32(frac))
			o.PutUint32(r[8:], uint32(capLen))
			o.PutUint32(r[12:], uint32(len(pk.data)))
			buf.Write(r[:])
			buf.Write(pk.data[:capLen])
		}
	case fmtPcapng:
		w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{
			Name: "eth0", LinkType: layers.LinkTypeEthernet, SnapLength: uint32(p.snaplen),
			TimestampResolution: 9, // nanoseconds
		}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			p.t.Fatal(err)
		}
		for _, pk := range p.pkts {
			capLen := min(len(pk.data), p.snaplen)
			ci := gopacket.CaptureInfo{Timestamp: pk.ts, CaptureLength: capLen, Length: len(pk.data)}
			if err := w.WritePacket(ci, pk.data[:capLen]); err != nil {
				p.t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			p.t.Fatal(err)
		}
	default:
		p.t.Fatalf("unknown capture format %q", f)
	}
	return buf.Bytes()
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

	for _, f := range synthFormats {
		t.Run(f, func(t *testing.T) {
			flows, err := ParsePcap(bytes.NewReader(p.bytes(f)))
			if err != nil {
				t.Fatal(err)
			}
			checkSynthFlows(t, flows, t0)
		})
	}
}

// checkSynthFlows checks the four flows TestParsePcap synthesises.
func checkSynthFlows(t *testing.T, flows []PcapFlow, t0 time.Time) {
	t.Helper()
	const C = "10.0.0.1"
	us := time.Microsecond
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

// A capture cut short (tcpdump killed mid-write) still yields the flows
// completed before the cut, in every format.
func TestParsePcapTruncated(t *testing.T) {
	const C, S = "10.0.0.1", "10.0.0.2"
	us := time.Microsecond
	p := newPcapSynth(t, 128)
	t0 := time.Unix(1700000000, 0)
	p.add(t0, seg{C, S, 40000, 5001, 1000, 0, true, false, false, 0})
	p.add(t0.Add(10*us), seg{S, C, 5001, 40000, 5000, 1001, true, true, false, 0})
	p.add(t0.Add(20*us), seg{C, S, 40000, 5001, 1001, 5001, false, true, false, 100})
	p.add(t0.Add(70*us), seg{S, C, 5001, 40000, 5001, 1101, false, true, false, 0})
	p.add(t0.Add(100*us), seg{C, S, 40001, 5001, 1, 0, true, false, false, 0})
	p.add(t0.Add(110*us), seg{S, C, 5001, 40001, 1, 2, true, true, false, 0})
	p.add(t0.Add(120*us), seg{C, S, 40001, 5001, 2, 2, false, true, false, 50})
	for _, f := range synthFormats {
		t.Run(f, func(t *testing.T) {
			b := p.bytes(f)
			flows, err := ParsePcap(bytes.NewReader(b[:len(b)-5]))
			if err != nil {
				t.Fatal(err)
			}
			if len(flows) != 2 {
				t.Fatalf("got %d flows, want 2: %+v", len(flows), flows)
			}
			if !flows[0].Complete || flows[0].FCT != 70*us || flows[0].Bytes != 100 {
				t.Errorf("first flow: %+v, want complete, FCT 70µs, 100 B", flows[0])
			}
			if flows[1].Complete || flows[1].Bytes != 0 {
				t.Errorf("second flow: %+v, want incomplete with no data (its data segment was cut)", flows[1])
			}
		})
	}
}

// TestParsePcapTcpdump captures a real TCP transfer on lo with this
// machine's tcpdump, as RunIperf does (snap length 128, --immediate-mode),
// at both timestamp precisions, and parses the file tcpdump wrote.
func TestParsePcapTcpdump(t *testing.T) {
	if testing.Short() {
		t.Skip("captures with tcpdump: skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (tcpdump on lo)")
	}
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("needs tcpdump")
	}
	for _, prec := range []string{"micro", "nano"} {
		t.Run(prec, func(t *testing.T) {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			port := ln.Addr().(*net.TCPAddr).Port
			path := filepath.Join(t.TempDir(), "lo.pcap")
			cmd := exec.Command(tcpdump, "-i", "lo", "-w", path, "-s", "128", "-U", "--immediate-mode", "-n",
				"--time-stamp-precision", prec, "tcp", "port", strconv.Itoa(port))
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			sc := bufio.NewScanner(stderr)
			var log []string
			for sc.Scan() { // tcpdump prints "listening on lo, ..." once the capture runs
				log = append(log, sc.Text())
				if strings.Contains(sc.Text(), "listening on") {
					break
				}
			}
			go io.Copy(io.Discard, stderr)

			const n = 5000
			done := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					done <- err
					return
				}
				_, err = io.Copy(io.Discard, c)
				c.Close()
				done <- err
			}()
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, c)
			c.Close()
			time.Sleep(100 * time.Millisecond) // let the last ACKs reach the capture
			cmd.Process.Signal(syscall.SIGINT)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("tcpdump: %v (%s)", err, strings.Join(log, "; "))
			}

			flows, err := ParsePcapFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []PcapFlow
			for _, f := range flows {
				if int(f.Server.Port()) == port {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("got %d flows to port %d, want 1: %+v", len(got), port, flows)
			}
			f := got[0]
			if !f.Complete || f.Bytes != n || f.FCT <= 0 || f.DataSegments < 1 || f.FinAck.IsZero() {
				t.Errorf("flow %+v: want complete, %d B, FCT > 0, FIN ACKed", f, n)
			}
		})
	}
}

// FuzzParsePcap: any capture file, well-formed or not, gives flows or an
// error, never a panic nor an allocation of what a corrupt length claims. Seeds: the synthesised captures in every format.
func FuzzParsePcap(f *testing.F) {
	p := newPcapSynth(&testing.T{}, 96)
	t0 := time.Unix(1700000000, 0)
	p.add(t0, seg{"10.0.0.1", "10.0.0.2", 40000, 5001, 1000, 0, true, false, false, 0})
	p.add(t0.Add(time.Microsecond), seg{"10.0.0.2", "10.0.0.1", 5001, 40000, 5000, 1001, true, true, false, 0})
	p.add(t0.Add(2*time.Microsecond), seg{"10.0.0.1", "10.0.0.2", 40000, 5001, 1001, 5001, false, true, true, 200})
	p.add(t0.Add(3*time.Microsecond), seg{"10.0.0.2", "10.0.0.1", 5001, 40000, 5001, 1202, false, true, false, 0})
	for _, fm := range synthFormats {
		f.Add(p.bytes(fm))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		flows, err := ParsePcap(bytes.NewReader(b))
		runtime.ReadMemStats(&after)
		if err != nil && flows != nil {
			t.Fatalf("error %v with %d flows", err, len(flows))
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20+uint64(64*len(b)) {
			t.Fatalf("allocated %d MiB for a %d-byte capture", d>>20, len(b))
		}
	})
}

// TestParsePcapMalformed overwrites every 32-bit word of a capture in each
// format with hostile values: ParsePcap must return (flows or an error),
// never panic, and never allocate what a corrupt length claims.
func TestParsePcapMalformed(t *testing.T) {
	p := newPcapSynth(t, 96)
	t0 := time.Unix(1700000000, 0)
	p.add(t0, seg{"10.0.0.1", "10.0.0.2", 40000, 5001, 1000, 0, true, false, false, 0})
	p.add(t0.Add(time.Microsecond), seg{"10.0.0.2", "10.0.0.1", 5001, 40000, 5000, 1001, true, true, false, 0})
	for _, f := range synthFormats {
		good := p.bytes(f)
		for off := 0; off+4 <= len(good); off += 4 {
			for _, v := range []uint32{0, 1, 7, 8, 12, 0x10000, 0x7fffffff, 0xffffffff} {
				b := slices.Clone(good)
				binary.LittleEndian.PutUint32(b[off:], v)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("%s, word at %d = %#x: panic %v", f, off, v, r)
						}
					}()
					ParsePcap(bytes.NewReader(b))
				}()
				runtime.ReadMemStats(&after)
				if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
					t.Errorf("%s, word at %d = %#x: allocated %d MiB", f, off, v, d>>20)
				}
			}
		}
	}
}
