package dataplane

// The Wireshark dissector (deploy/wireshark/linkfabric.lua) against the
// project's own encoders: every frame type built by seqhdr, linksession's
// HELLO, cellify, fec and tdma, sealed with each integrity trailer,
// written to a pcap and decoded by tshark.

import (
	"encoding/binary"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/internal/pcapfile"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	tdmawire "github.com/linkfabric/linkfabric/tdma/wire"
)

// dissectorPath is the Lua dissector, from this package's directory.
const dissectorPath = "../deploy/wireshark/linkfabric.lua"

// tsharkFields are the fields tsharkDecode asks for, in this order.
var tsharkFields = []string{
	"frame.number", "linkfabric.type", "linkfabric.serial", "linkfabric.flags.retx", "linkfabric.flags.unseq", "linkfabric.ack_serial",
	"linkfabric.count", "linkfabric.trailer.kind", "linkfabric.trailer.ok", "ip.proto", "linkfabric.hello.epoch",
	"linkfabric.cell.seq", "linkfabric.credit.count", "linkfabric.credit.lead", "linkfabric.credit.ahead", "linkfabric.reach.counter", "linkfabric.fec.count",
	"linkfabric.tdma.seq", "linkfabric.pause_ns", "linkfabric.hello.caps.integrity", "eth.src", "eth.type",
	"linkfabric.fec.first_serial", "linkfabric.cell.src", "linkfabric.cell.dst", "linkfabric.cell.port", "linkfabric.cell.class",
	"_ws.malformed", "_ws.expert.severity", "_ws.expert.message",
}

// TsharkRow is one decoded frame: field name → value (occurrences joined
// with ';').
type TsharkRow map[string]string

// Errors returns what tshark flagged in the frame: malformed, or an expert
// item of severity error (a failure of the dissector itself, "Lua Error:
// ...", is one).
func (r TsharkRow) Errors() string {
	var bad []string
	if r["_ws.malformed"] != "" {
		bad = append(bad, "malformed")
	}
	sev := strings.Split(r["_ws.expert.severity"], ";")
	msg := strings.Split(r["_ws.expert.message"], ";")
	for i, s := range sev {
		if s == "8388608" { // PI_ERROR
			m := "?"
			if i < len(msg) {
				m = msg[i]
			}
			bad = append(bad, "expert error: "+m)
		}
	}
	return strings.Join(bad, ", ")
}

// NeedTshark returns tshark's path or skips the test.
func NeedTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not on PATH (scripts/deps.sh installs it)")
	}
	return p
}

// TsharkDecode decodes pcap with the dissector (prefs as tshark -o
// arguments) and returns one row per frame.
func TsharkDecode(t *testing.T, pcap string, prefs ...string) []TsharkRow {
	t.Helper()
	args := []string{"-n", "-X", "lua_script:" + dissectorPath, "-r", pcap, "-T", "fields",
		"-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;"}
	for _, p := range prefs {
		args = append(args, "-o", p)
	}
	for _, f := range tsharkFields {
		args = append(args, "-e", f)
	}
	cmd := exec.Command(NeedTshark(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "Lua") || strings.Contains(s, "lua") {
		t.Fatalf("tshark reported a Lua problem:\n%s", s)
	}
	var rows []TsharkRow
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		v := strings.Split(line, "|")
		if len(v) != len(tsharkFields) {
			t.Fatalf("tshark row of %d fields, want %d: %q", len(v), len(tsharkFields), line)
		}
		r := TsharkRow{}
		for i, f := range tsharkFields {
			r[f] = v[i]
		}
		rows = append(rows, r)
	}
	return rows
}

var (
	wsPeer  = [6]byte{0x02, 0, 0, 0, 0, 0x0b}
	wsLocal = [6]byte{0x02, 0, 0, 0, 0, 0x0a}
)

// wsHostFrame is an IPv4/UDP frame of size bytes (at least 42) with valid
// checksums.
func wsHostFrame(size int, id byte) []byte {
	b := make([]byte, size)
	copy(b[0:6], wsPeer[:])
	copy(b[6:12], wsLocal[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:34]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(size-14))
	copy(ip[12:16], []byte{10, 0, 0, 1})
	copy(ip[16:20], []byte{10, 0, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], linkcrc.InternetChecksum(ip))
	udp := b[34:]
	binary.BigEndian.PutUint16(udp[0:], 5000)
	binary.BigEndian.PutUint16(udp[2:], 5001)
	binary.BigEndian.PutUint16(udp[4:], uint16(size-34))
	for i := 8; i < len(udp); i++ {
		udp[i] = id + byte(i)
	}
	// UDP checksum 0: none (IPv4).
	return b
}

// wsFrame is one test frame and what tshark must decode from it.
type wsFrame struct {
	name  string
	b     []byte
	want  map[string]string // field → value
	flags string            // "" when the frame is well formed, else an expected expert error's text
}

// seal appends the trailer of mode m (Off: none).
func seal(t *testing.T, b []byte, m linkcrc.Integrity) []byte {
	t.Helper()
	if m == linkcrc.Off {
		return b
	}
	n := len(b)
	b = append(b, 0, 0, 0, 0)
	if _, ok := m.Seal(b, n); !ok {
		t.Fatalf("seal %v", m)
	}
	return b
}

// encoderFrames builds one frame of every type with the project's encoders.
func encoderFrames(t *testing.T, m linkcrc.Integrity) []wsFrame {
	t.Helper()
	var out []wsFrame
	add := func(name string, b []byte, want map[string]string) {
		out = append(out, wsFrame{name: name, b: seal(t, b, m), want: want})
	}
	data := func(h seqhdr.Header, size int) []byte {
		host := wsHostFrame(size, byte(h.Seq))
		buf := make([]byte, seqhdr.MaxOverhead+len(host))
		copy(buf[seqhdr.MaxOverhead:], host)
		off, n, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, len(host), &h)
		if err != nil {
			t.Fatal(err)
		}
		return buf[off : off+n]
	}
	add("data", data(seqhdr.Header{Type: seqhdr.TypeData, Seq: seqhdr.MakeSeq(7, true), HasAck: true, Ack: seqhdr.MakeSeq(65535, false)}, 100),
		map[string]string{"linkfabric.type": "1", "linkfabric.serial": "65543", "linkfabric.ack_serial": "65535", "ip.proto": "17", "linkfabric.flags.retx": "0"})
	add("data retx", data(seqhdr.Header{Type: seqhdr.TypeData, Retx: true, Seq: 42}, 1500),
		map[string]string{"linkfabric.type": "1", "linkfabric.serial": "42", "linkfabric.flags.retx": "1", "ip.proto": "17"})
	add("data unseq", data(seqhdr.Header{Type: seqhdr.TypeData, Unseq: true, HasAck: true, Ack: 9}, 60),
		map[string]string{"linkfabric.type": "1", "linkfabric.flags.unseq": "1", "linkfabric.ack_serial": "9", "ip.proto": "17"})
	// put returns the frame a seqhdr.Put function writes (at most
	// MinFrameLen bytes).
	put := func(f func(b []byte) (int, error)) []byte {
		b := make([]byte, seqhdr.MinFrameLen)
		n, err := f(b)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	ctrl := func(h seqhdr.Header) []byte {
		return put(func(b []byte) (int, error) { return seqhdr.PutControl(b, &wsPeer, &wsLocal, &h) })
	}
	add("ack", ctrl(seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: seqhdr.MakeSeq(3, true)}),
		map[string]string{"linkfabric.type": "2", "linkfabric.ack_serial": "65539"})
	add("loss", ctrl(seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 100, Count: 3, Latest: seqhdr.MakeSeq(110, true), HasAck: true, Ack: 99}),
		map[string]string{"linkfabric.type": "3", "linkfabric.serial": "100", "linkfabric.count": "3", "linkfabric.ack_serial": "99"})
	add("dummy", ctrl(seqhdr.Header{Type: seqhdr.TypeDummy, Seq: 500}),
		map[string]string{"linkfabric.type": "4", "linkfabric.serial": "500"})
	add("pause", ctrl(seqhdr.Header{Type: seqhdr.TypePause, Pause: 123456}),
		map[string]string{"linkfabric.type": "5", "linkfabric.pause_ns": "123456"})
	add("resume", ctrl(seqhdr.Header{Type: seqhdr.TypeResume}),
		map[string]string{"linkfabric.type": "6", "linkfabric.pause_ns": "0"})
	hello := func(h seqhdr.Hello) []byte {
		return put(func(b []byte) (int, error) { return seqhdr.PutHello(b, &wsPeer, &wsLocal, &h) })
	}
	add("hello", hello(seqhdr.Hello{Epoch: 0x1122334455667788, InitSeq: 77, Window: 4096, Lanes: 1, Protect: seqhdr.ProtectTx | seqhdr.ProtectRx | 1<<4,
		MTU: 1500, Speed: 10000, Caps: seqhdr.CapsSet | 2}),
		map[string]string{"linkfabric.type": "7", "linkfabric.hello.epoch": "0x1122334455667788", "linkfabric.hello.caps.integrity": "2"})
	add("hello-ack report", hello(seqhdr.Hello{Ack: true, Epoch: 5, Echo: 0x1122334455667788, InitSeq: 1, Window: 1, Lanes: 2,
		Protect: seqhdr.ProtectTx | seqhdr.ProtectFEC, MTU: 9000, Speed: 1, Node: 3, HasReport: true,
		Report: seqhdr.Report{RxLoss: seqhdr.RxLossUnknown, TxN: 8, TxCopies: 1}, Caps: seqhdr.CapsSet | seqhdr.CapsFastSend}),
		map[string]string{"linkfabric.type": "8", "linkfabric.hello.epoch": "0x0000000000000005", "linkfabric.hello.caps.integrity": "0"})

	// A cell carrying one whole record, the start of a second, and (next
	// cell) its end: [length 2][source port 1][host frame].
	host1, host2 := wsHostFrame(80, 1), wsHostFrame(200, 2)
	var stream []byte
	for _, h := range [][]byte{host1, host2} {
		stream = binary.BigEndian.AppendUint16(stream, uint16(1+len(h)))
		stream = append(stream, 4)
		stream = append(stream, h...)
	}
	cut := 3 + len(host1) + 50
	for i, part := range [][]byte{stream[:cut], stream[cut:]} {
		ch := cellify.CellHeader{Dst: 2, Src: 1, Class: 3, Hops: 2, Port: 1, Seq: uint32(10 + i), First: 0, RecNo: uint16(i), Epoch: 0x55, Entropy: 7}
		if i == 1 {
			ch.First = cellify.NoRecord
		}
		b := make([]byte, cellify.CellFrameLen(len(part)))
		copy(b[0:6], wsPeer[:])
		copy(b[6:12], wsLocal[:])
		n, err := cellify.PutCell(b, &ch, part)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"linkfabric.type": "9", "linkfabric.cell.seq": []string{"10", "11"}[i]}
		if i == 0 {
			want["ip.proto"] = "17"
		}
		add("cell", b[:n], want)
	}
	// A cell sequenced in place by LinkGuardian (the carried fields).
	{
		ch := cellify.CellHeader{Dst: 2, Src: 1, Hops: 1, Port: 0, Seq: 99, First: cellify.NoRecord}
		b := make([]byte, cellify.CellFrameLen(10))
		n, err := cellify.PutCell(b, &ch, make([]byte, 10))
		if err != nil {
			t.Fatal(err)
		}
		if err := seqhdr.Stamp(b[:n], &seqhdr.Header{Seq: seqhdr.MakeSeq(5, true), HasAck: true, Ack: 4}); err != nil {
			t.Fatal(err)
		}
		add("cell stamped", b[:n], map[string]string{"linkfabric.type": "9", "linkfabric.serial": "65541", "linkfabric.ack_serial": "4", "linkfabric.cell.seq": "99"})
	}
	for i, grant := range []bool{false, true} {
		entries := []cellify.CreditEntry{{Port: 1, Class: 0, Total: 1 << 40}, {Port: 2, Class: 7, Total: 5}}
		b := make([]byte, cellify.CreditFrameLen(len(entries)))
		n, err := cellify.PutCreditEpochs(b, grant, 1, 2, cellify.CreditEpochs{Src: 9, Dst: 10}, cellify.CreditSettings{Lead: 4096, Ahead: 8192}, entries)
		if err != nil {
			t.Fatal(err)
		}
		add("credit", b[:n], map[string]string{"linkfabric.type": []string{"10", "11"}[i], "linkfabric.credit.count": "2",
			"linkfabric.credit.lead": "4096", "linkfabric.credit.ahead": "8192"})
	}
	for _, classes := range []bool{false, true} {
		r := cellify.Reach{Node: 7, Role: cellify.RoleFabric, Class: 2, Classes: classes, Seq: 1234, Edges: 12}
		if classes {
			r.Bitmap = []byte{0x06, 0x08, 0x02, 0x00, 0x00, 0x01}
		} else {
			r.Bitmap = []byte{0x06, 0x08}
		}
		b := make([]byte, cellify.ReachFrameLen(r.Edges, classes))
		n, err := cellify.PutReach(b, &r)
		if err != nil {
			t.Fatal(err)
		}
		add("reach", b[:n], map[string]string{"linkfabric.type": "12", "linkfabric.reach.counter": "1234"})
	}
	{
		longest := wsHostFrame(300, 3)
		b := make([]byte, fec.ParityOffset+len(longest))
		if err := fec.PutParityHeader(b, &wsPeer, &wsLocal, &fec.Parity{First: seqhdr.MakeSeq(65535, true), Count: 4, LenXor: 0x1234}); err != nil {
			t.Fatal(err)
		}
		copy(b[fec.ParityOffset:], longest)
		add("fec-parity", b, map[string]string{"linkfabric.type": "14", "linkfabric.fec.count": "4", "linkfabric.serial": ""})
	}
	{
		b := make([]byte, 14+tdmawire.DataHdrLen+20)
		copy(b[0:6], wsPeer[:])
		copy(b[6:12], wsLocal[:])
		binary.BigEndian.PutUint16(b[12:], tdmawire.DataEtherType)
		h := tdmawire.DataHdr{Src: 1, Dst: 2, Round: 3, Slot: 4, Seq: 1 << 33, Offset: 6, SendTS: 7}
		if _, err := h.Encode(b[14:]); err != nil {
			t.Fatal(err)
		}
		add("tdma data", b, map[string]string{"linkfabric.type": "", "linkfabric.tdma.seq": "8589934592"})
	}
	return out
}

// TestDissectorDecodesEncoders: every frame type the encoders build,
// without a trailer and with each integrity trailer, decodes in tshark
// with the fields the encoders wrote, its trailer verified, nothing
// malformed and no expert error; frames a receiver would refuse (a bad
// trailer, a bad cell header CRC, an invalid flag, an unknown type or
// version) are flagged.
func TestDissectorDecodesEncoders(t *testing.T) {
	NeedTshark(t)
	var frames []wsFrame
	kinds := []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C, linkcrc.Csum}
	for _, m := range kinds {
		for _, f := range encoderFrames(t, m) {
			f.name += " (" + m.String() + ")"
			if m != linkcrc.Off && f.want["linkfabric.type"] != "" {
				f.want["linkfabric.trailer.kind"] = m.String()
				f.want["linkfabric.trailer.ok"] = "1"
			}
			frames = append(frames, f)
		}
	}
	// Frames a receiver rejects.
	good := encoderFrames(t, linkcrc.Csum)
	bad := func(name, flags string, b []byte) {
		frames = append(frames, wsFrame{name: name, b: b, flags: flags})
	}
	corrupt := append([]byte(nil), good[0].b...)
	corrupt[30] ^= 0x10
	bad("csum trailer of a corrupted frame", "csum trailer does not match", corrupt)
	var cell []byte
	for _, f := range good {
		if strings.HasPrefix(f.name, "cell") {
			cell = append([]byte(nil), f.b...)
			break
		}
	}
	cell[seqhdr.DataOffset+6] ^= 1 // cell seq
	n := len(cell) - linkcrc.TrailerLen
	linkcrc.Csum.Seal(cell, n)
	bad("cell with a bad header CRC-8", "cell header CRC-8 mismatch", cell)
	ack := append([]byte(nil), good[3].b...)
	ack[15] |= 0x40 // reserved flag
	linkcrc.Csum.Seal(ack, len(ack)-linkcrc.TrailerLen)
	bad("ACK with a reserved flag", "reserved flag bits set", ack)

	// Hostile frames (random bytes after the link EtherType, a random
	// type): whatever tshark makes of them, the dissector itself must not
	// fail on any.
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, 15+rnd.IntN(120))
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		copy(b, wsPeer[:])
		copy(b[6:], wsLocal[:])
		binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
		b[14] = byte(rnd.IntN(16))
		frames = append(frames, wsFrame{name: "hostile", b: b, flags: "hostile"})
	}

	path := filepath.Join(t.TempDir(), "encoders.pcap")
	raw := make([][]byte, len(frames))
	for i := range frames {
		raw[i] = frames[i].b
	}
	if err := pcapfile.Write(path, raw); err != nil {
		t.Fatal(err)
	}
	// Named check: a corrupted frame is reported, not taken for a frame
	// without a trailer.
	rows := TsharkDecode(t, path)
	named := TsharkDecode(t, path, "linkfabric.integrity:csum")
	if len(rows) != len(frames) || len(named) != len(frames) {
		t.Fatalf("tshark decoded %d and %d frames, want %d", len(rows), len(named), len(frames))
	}
	for i, f := range frames {
		r := rows[i]
		if f.flags == "hostile" {
			for _, rr := range []TsharkRow{r, named[i]} {
				if e := rr.Errors(); strings.Contains(e, "Lua Error") || rr["linkfabric.type"] == "" {
					t.Errorf("frame %d (hostile, % x): type %q, %s", i+1, f.b, rr["linkfabric.type"], e)
				}
			}
			continue
		}
		if f.flags != "" {
			if got := named[i].Errors(); !strings.Contains(got, f.flags) {
				t.Errorf("frame %d (%s): tshark -o linkfabric.integrity:csum flagged %q, want %q", i+1, f.name, got, f.flags)
			}
			continue
		}
		if got := r.Errors(); got != "" {
			t.Errorf("frame %d (%s): %s", i+1, f.name, got)
		}
		if r["linkfabric.type"] == "" && r["linkfabric.tdma.seq"] == "" {
			t.Errorf("frame %d (%s): not decoded by the dissector: %v", i+1, f.name, r)
		}
		for k, v := range f.want {
			if r[k] != v {
				t.Errorf("frame %d (%s): %s = %q, want %q", i+1, f.name, k, r[k], v)
			}
		}
	}
}
