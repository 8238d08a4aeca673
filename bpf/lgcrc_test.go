package bpf

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/bpf/internal/crc32ctab"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// The integrity check of LinkGuardian's receive fast path
// (SetLGRxIntegrity; lf_crc32c and lf_csum in c/port.c), run with
// BPF_PROG_TEST_RUN like lgrx_test.go, for each mode with a trailer.

// checkedModes are the integrity modes whose frames carry a trailer.
var checkedModes = []linkcrc.Integrity{linkcrc.CRC32C, linkcrc.Csum}

// eachCheckedMode runs f as a subtest per mode of checkedModes.
func eachCheckedMode(t *testing.T, f func(t *testing.T, m linkcrc.Integrity)) {
	for _, m := range checkedModes {
		t.Run(m.String(), func(t *testing.T) { f(t, m) })
	}
}

// loadLGRxCheck is loadLGRx with the check of mode m on.
func loadLGRxCheck(t *testing.T, m linkcrc.Integrity) (*PortProgram, *LGRx) {
	t.Helper()
	p, s := loadLGRx(t)
	if err := p.SetLGRxIntegrity(m); err != nil {
		t.Fatal(err)
	}
	return p, s
}

// sealed is frame with the trailer of mode m appended (m.Seal).
func sealed(t testing.TB, m linkcrc.Integrity, frame []byte) []byte {
	t.Helper()
	b := make([]byte, len(frame)+linkcrc.TrailerLen)
	copy(b, frame)
	n, ok := m.Seal(b, len(frame))
	if !ok || n != len(b) {
		t.Fatalf("seal %d bytes (%v): %d, %v", len(frame), m, n, ok)
	}
	return b
}

// checkedStripped is what the Go path makes of a sealed data frame: the
// frame m.Check returns, without its link header (seqhdr.Strip).
func checkedStripped(t testing.TB, m linkcrc.Integrity, frame []byte) []byte {
	t.Helper()
	n, ok := m.Check(frame)
	if !ok {
		t.Fatalf("%v: Check refuses the %d-byte frame", m, len(frame))
	}
	return stripped(t, frame[:n])
}

// TestCRC32CTableHeader: the table the program uses is hash/crc32's (the
// header is generated; this catches an edit by hand or a stale file).
func TestCRC32CTableHeader(t *testing.T) {
	got, err := os.ReadFile("c/crc32c_table.h")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, crc32ctab.Header()) {
		t.Error("c/crc32c_table.h is not what internal/crc32ctab writes: run go generate ./bpf/")
	}
}

func TestLGRxCRCInOrder(t *testing.T) {
	eachCheckedMode(t, func(t *testing.T, m linkcrc.Integrity) {
		p, s := loadLGRxCheck(t, m)
		s.Point().Store(owned(5))
		var bytesWant uint64
		// Payload 0 (a 26-byte frame: the shortest checked), odd and even
		// lengths around the word sizes, a full 1500-byte host frame, and the
		// longest linear frame test_run makes (3520 bytes).
		for i, payload := range []int{0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 50, 1500, 3520 - 22 - linkcrc.TrailerLen} {
			serial := uint64(5 + i)
			ack := seqhdr.MakeSeq(uint16(i), i%2 == 1)
			f := sealed(t, m, lgData(t, seqhdr.Seq(serial), true, ack, payload))
			ret, out := runLG(t, p, f)
			want := checkedStripped(t, m, f)
			if ret != xdpRedirect || !bytes.Equal(out, want) {
				t.Fatalf("sealed in-order frame of %d bytes: verdict %d, out\n%x\nwant seqhdr.Strip of linkcrc.Check's frame\n%x", len(f), ret, out, want)
			}
			if len(out) != len(f)-8-linkcrc.TrailerLen {
				t.Errorf("%d-byte frame delivered as %d bytes", len(f), len(out))
			}
			bytesWant += uint64(len(want))
			if got := s.Point().Load(); got != owned(serial+1) {
				t.Errorf("after %d bytes: point %#x, want %#x", len(f), got, owned(serial+1))
			}
			if got := s.PeerAck().Load(); got != LGAckValid|uint64(ack) {
				t.Errorf("after %d bytes: peer_ack %#x, want %#x", len(f), got, LGAckValid|uint64(ack))
			}
			if c := s.Counters(); c.Frames != uint64(i+1) || c.Bytes != bytesWant || c.StripErr != 0 || c.Handovers != 0 {
				t.Errorf("after %d bytes: counters %+v, want %d frames of %d bytes", len(f), c, i+1, bytesWant)
			}
		}
	})
}

// TestLGRxCRCEveryLength delivers sealed in-order frames of every length
// from 26 to 26+64 bytes and around 1514 (every remainder of the 8-byte
// steps), and refuses each of them with its last byte before the trailer
// flipped.
func TestLGRxCRCEveryLength(t *testing.T) {
	eachCheckedMode(t, func(t *testing.T, m linkcrc.Integrity) {
		p, s := loadLGRxCheck(t, m)
		serial := uint64(0)
		s.Point().Store(owned(serial))
		for size := 26; size <= 1530; size++ {
			if size == 26+65 {
				size = 1500
			}
			f := sealed(t, m, lgData(t, seqhdr.Seq(serial), false, 0, size-22-linkcrc.TrailerLen))
			g := bytes.Clone(f)
			g[len(g)-linkcrc.TrailerLen-1] ^= 0x80
			expectUntouched(t, p, s, "corrupt "+itoa(size)+"-byte frame", g)
			if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, checkedStripped(t, m, f)) {
				t.Fatalf("sealed %d-byte frame: verdict %d, delivered right %v", size, ret, bytes.Equal(out, checkedStripped(t, m, f)))
			}
			serial++
			if got := s.Point().Load(); got != owned(serial) {
				t.Fatalf("after %d bytes: point %#x, want %#x", size, got, owned(serial))
			}
		}
	})
}

// TestLGRxCRCBitFlips flips every bit of a sealed 100-byte in-order frame
// (header and trailer included): none is delivered, and none moves the
// point or a counter; the frame itself is delivered afterwards.
func TestLGRxCRCBitFlips(t *testing.T) {
	eachCheckedMode(t, func(t *testing.T, m linkcrc.Integrity) {
		p, s := loadLGRxCheck(t, m)
		s.Point().Store(owned(5))
		f := sealed(t, m, lgData(t, 5, true, 3, 100-22-linkcrc.TrailerLen))
		if len(f) != 100 {
			t.Fatalf("frame of %d bytes", len(f))
		}
		for bit := 0; bit < 8*len(f); bit++ {
			g := bytes.Clone(f)
			g[bit/8] ^= 1 << (bit % 8)
			expectUntouched(t, p, s, "bit "+itoa(bit)+" flipped", g)
			if t.Failed() {
				t.FailNow()
			}
		}
		if got := s.Point().Load(); got != owned(5) {
			t.Fatalf("point %#x after the flipped frames, want %#x", got, owned(5))
		}
		if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, checkedStripped(t, m, f)) {
			t.Errorf("the frame itself: verdict %d", ret)
		}
	})
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

// TestLGRxCRCUntouched: with the check on, a frame without a trailer, with
// a trailer of the wrong byte order or of the frame less its last byte,
// shorter than a data header plus the trailer, with fragments, or sealed
// while Go owns the point goes the usual way untouched.
func TestLGRxCRCUntouched(t *testing.T) {
	eachCheckedMode(t, func(t *testing.T, m linkcrc.Integrity) {
		p, s := loadLGRxCheck(t, m)
		s.Point().Store(owned(5))
		plain := lgData(t, 5, true, 1, 60)
		expectUntouched(t, p, s, "unsealed", plain)
		expectUntouched(t, p, s, "unsealed, 4 bytes more", append(bytes.Clone(plain), 0, 0, 0, 0))
		good := sealed(t, m, plain)
		swapped := bytes.Clone(good)
		n := len(swapped) - 4
		swapped[n], swapped[n+1], swapped[n+2], swapped[n+3] = good[n+3], good[n+2], good[n+1], good[n]
		expectUntouched(t, p, s, "trailer big endian", swapped)
		expectUntouched(t, p, s, "sealed, then a byte appended", append(bytes.Clone(good), 0))
		short := sealed(t, m, plain[:len(plain)-1])
		expectUntouched(t, p, s, "trailer of the frame less its last byte", append(bytes.Clone(plain), short[len(short)-4:]...))
		expectUntouched(t, p, s, "trailer cut", good[:len(good)-1])
		// Sealed, but shorter than 22 + 4 (linkcrc.Check takes them: the
		// fast path leaves them to Go).
		hdr := lgData(t, 5, true, 1, 0)
		for k := 14; k < len(hdr); k++ {
			f := sealed(t, m, hdr[:k])
			if _, ok := m.Check(f); !ok {
				t.Fatalf("Check refuses a sealed %d-byte frame", len(f))
			}
			expectUntouched(t, p, s, "sealed "+itoa(len(f))+"-byte frame", f)
		}
		// With fragments (longer than the linear part test_run makes, 3520
		// bytes), and a jumbo frame.
		for _, size := range []int{3521, 3600, 9000} {
			expectUntouched(t, p, s, "sealed "+itoa(size)+"-byte frame (fragments)", sealed(t, m, lgData(t, 5, true, 1, size-22-4)))
		}
		// Go owns the point: a good frame is untouched as well.
		s.Point().Store(5)
		expectUntouched(t, p, s, "Go owns the point", good)
		// Out of order (a hole): the check passes, then the point is handed over.
		s.Point().Store(owned(4))
		if ret, out := runLG(t, p, good); ret == xdpRedirect || !bytes.Equal(out, good) {
			t.Errorf("out of order: verdict %d, changed %v", ret, !bytes.Equal(out, good))
		}
		if got, c := s.Point().Load(), s.Counters(); got != 4 || c.Handovers != 1 || c.Frames != 0 {
			t.Errorf("out of order: point %#x, counters %+v; want 4, one handover", got, c)
		}
		// A corrupt frame out of order does not hand over.
		s.Point().Store(owned(4))
		bad := bytes.Clone(good)
		bad[30] ^= 0x10
		expectUntouched(t, p, s, "corrupt, out of order", bad)
		// The good frame at the point: delivered.
		s.Point().Store(owned(5))
		if ret, out := runLG(t, p, good); ret != xdpRedirect || !bytes.Equal(out, checkedStripped(t, m, good)) {
			t.Errorf("good frame: verdict %d", ret)
		}
	})
}

// TestLGRxCRCOff: the check off (the default), a sealed frame is delivered
// with only its header stripped (the trailer stays: --integrity off has
// none), as before.
func TestLGRxCRCOff(t *testing.T) {
	p, s := loadLGRxCheck(t, linkcrc.CRC32C)
	if err := p.SetLGRxIntegrity(linkcrc.Off); err != nil {
		t.Fatal(err)
	}
	s.Point().Store(owned(5))
	f := sealed(t, linkcrc.CRC32C, lgData(t, 5, false, 0, 40))
	if ret, out := runLG(t, p, f); ret != xdpRedirect || !bytes.Equal(out, stripped(t, f)) {
		t.Errorf("crc off: verdict %d, out %x, want %x", ret, out, stripped(t, f))
	}
	g := lgData(t, 6, false, 0, 40)
	g[30] ^= 1 // no trailer to tell
	if ret, _ := runLG(t, p, g); ret != xdpRedirect {
		t.Errorf("crc off, unsealed: verdict %d", ret)
	}
	if c := s.Counters(); c.Frames != 2 || c.Bytes != uint64(len(f)-8+len(g)-8) {
		t.Errorf("counters %+v", c)
	}
}

// TestPortVerifierStats loads the port program with the verifier's
// statistics and logs them (instructions processed, states): the CRC
// loop's cost to the verifier.
func TestPortVerifierStats(t *testing.T) {
	needRoot(t)
	prepare()
	spec, err := loadPort()
	if err != nil {
		t.Fatal(err)
	}
	var objs portObjects
	opts := &ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}}
	if err := spec.LoadAndAssign(&objs, opts); err != nil {
		t.Fatal(loadErr("port", err))
	}
	defer objs.Close()
	for _, l := range strings.Split(strings.TrimSpace(objs.LfPort.VerifierLog), "\n") {
		t.Log(l)
	}
}

// TestLGRxCRCCost measures what the check costs lf_port (set
// LF_BPF_COST=1 to run it; LF_BPF_COST_OBJ=file.o measures another build of
// c/port.c, bpfel). Method: BPF_PROG_TEST_RUN with repeat
// (Program.Benchmark: the kernel's mean time per run) of an in-order data
// frame, sealed, of 64, 200, 512 and 1514 bytes (trailer included), on a
// link port with lg_rx on, the point owned at the frame's serial and no
// host port to redirect to (step 4: missed, so nothing moves between
// runs): with a check on, the program checks the trailer first; both go
// the XSK path (no socket: XDP_PASS). The difference is the check. Median
// of 3 runs of LF_BPF_COST_REPEAT (default 200000) repeats each. (The
// point must be owned: with it not owned the program skips the check, and
// the test once measured nothing that way.)
func TestLGRxCRCCost(t *testing.T) {
	if os.Getenv("LF_BPF_COST") == "" {
		t.Skip("set LF_BPF_COST=1 to measure the check's cost")
	}
	needRoot(t)
	prepare()
	pinCPU(t)
	spec, err := loadPort()
	if obj := os.Getenv("LF_BPF_COST_OBJ"); obj != "" {
		spec, err = ebpf.LoadCollectionSpec(obj)
	}
	if err != nil {
		t.Fatal(err)
	}
	p := &PortProgram{ifname: "test-run"}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		t.Fatal(loadErr("port", err))
	}
	defer p.Close()
	if err := p.SetLGRx(true); err != nil {
		t.Fatal(err)
	}
	s, err := p.LGRx()
	if err != nil {
		t.Fatal(err)
	}
	repeat := 200000
	if r := os.Getenv("LF_BPF_COST_REPEAT"); r != "" {
		if _, err := fmt.Sscan(r, &repeat); err != nil {
			t.Fatal(err)
		}
	}
	median := func(frame []byte) time.Duration {
		var d [3]time.Duration
		for i := range d {
			s.Point().Store(owned(5))
			ret, per, err := p.Program().Benchmark(frame, repeat, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ret != xdpPass {
				t.Fatalf("verdict %d, want XDP_PASS", ret)
			}
			d[i] = per
		}
		slices.Sort(d[:])
		return d[1]
	}
	t.Logf("ns per frame (median of 3 x %d repeats), point owned, no host port:", repeat)
	t.Logf("%6s %6s %8s %8s %8s %8s", "mode", "bytes", "check off", "check on", "check", "ns/byte")
	for _, m := range checkedModes {
		for _, size := range []int{64, 200, 512, 1514} {
			f := sealed(t, m, lgData(t, 5, true, 1, size-22-linkcrc.TrailerLen))
			if err := p.SetLGRxIntegrity(linkcrc.Off); err != nil {
				t.Fatal(err)
			}
			off := median(f)
			if err := p.SetLGRxIntegrity(m); err != nil {
				t.Fatal(err)
			}
			on := median(f)
			if c := s.Counters(); c.Frames != 0 || c.Handovers != 0 || c.Missed == 0 {
				t.Fatalf("counters %+v: the point moved, or the frame never reached it", c)
			}
			if got := s.Point().Load(); got != owned(5) {
				t.Fatalf("point %#x, want %#x", got, owned(5))
			}
			t.Logf("%6v %6d %8d %8d %8d %8.2f", m, size, off.Nanoseconds(), on.Nanoseconds(), (on - off).Nanoseconds(),
				float64((on-off).Nanoseconds())/float64(size-linkcrc.TrailerLen))
		}
	}
}
