package bpf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"golang.org/x/sys/unix"
)

// The cell kernel path (lf_cell_fwd) under BPF_PROG_TEST_RUN: the program
// loaded, not attached, as link 0 of a fabric node whose links 1 and 2
// (both the loopback, ifindex 1: test_run performs no redirect) reach edge
// cellDst. A frame the kernel forwards returns XDP_REDIRECT; one it leaves
// to the worker XDP_PASS (no socket in test_run), unchanged.

const (
	cellDst    = 2
	cellRoutes = 0b110
)

var cellMACs = [3][6]byte{{2, 0, 0, 0, 1, 0}, {2, 0, 0, 0, 1, 1}, {2, 0, 0, 0, 1, 2}}

// openCellProg loads the program with the cell path on, trailer m.
func openCellProg(m linkcrc.Integrity) (*PortProgram, *CellFwd, error) {
	prepare()
	p := &PortProgram{ifname: "test-run"}
	if err := loadPortObjects(&p.objs, nil); err != nil {
		return nil, nil, loadErr("port", err)
	}
	f, err := p.CellFwd()
	if err == nil {
		err = f.SetIntegrity(m)
	}
	f.SetClasses(1, [8]uint8{1, 1, 1, 1, 1, 1, 1, 1})
	for l := range 3 {
		if err == nil {
			err = f.SetLink(l, CellLinkConf{Ifindex: 1, MAC: cellMACs[l]})
		}
	}
	f.SetRoute(1, cellDst, cellRoutes)
	if err == nil {
		err = p.SetCellLink(0)
	}
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	f.SetOn(true)
	return p, f, nil
}

// loadCellFwd is openCellProg for one test.
func loadCellFwd(t *testing.T, m linkcrc.Integrity) (*PortProgram, *CellFwd) {
	t.Helper()
	needRoot(t)
	p, f, err := openCellProg(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p, f
}

// cellFrame is a sealed cell to dst with hops and payload bytes.
func cellFrame(t testing.TB, m linkcrc.Integrity, dst cellify.EdgeID, hops uint8, payload int) []byte {
	t.Helper()
	b := make([]byte, cellify.CellFrameLen(payload)+linkcrc.TrailerLen)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 9, 9})
	pl := make([]byte, payload)
	for i := range pl {
		pl[i] = byte(i * 13)
	}
	h := cellify.CellHeader{Dst: dst, Src: 1, Hops: hops, Port: 0, Seq: 77, First: 0, RecNo: 5, Epoch: 9, Entropy: 3}
	n, err := cellify.PutCell(b, &h, pl)
	if err != nil {
		t.Fatal(err)
	}
	return sealCell(b, n, m)
}

func sealCell(b []byte, n int, m linkcrc.Integrity) []byte {
	if m == linkcrc.Off {
		return b[:n]
	}
	n, _ = m.Seal(b, n)
	return b[:n]
}

// cellModel is what the worker would do with frame (Node.rxCell at a
// fabric node whose routes are cellRoutes to cellDst): whether it forwards
// it, and the frame it would send but for the MACs.
func cellModel(frame []byte, m linkcrc.Integrity) (bool, []byte) {
	b := bytes.Clone(frame)
	if m != linkcrc.Off {
		n, ok := m.Check(b)
		if !ok {
			return false, nil
		}
		b = b[:n]
	}
	if t, ok := seqhdr.FrameType(b); ok && (t == seqhdr.TypeCreditReq || t == seqhdr.TypeCreditGrant) {
		return creditModel(b, t == seqhdr.TypeCreditGrant), b
	}
	h, err := cellify.ParseCell(b)
	if err != nil || h.Dst != cellDst || !cellify.DecHops(b) {
		return false, nil
	}
	return true, b
}

// creditModel says whether the kernel forwards credit frame b: what
// ParseCredit checks but the CRC-32C and the entries' classes, which the
// destination edge checks, toward cellDst.
func creditModel(b []byte, grant bool) bool {
	if len(b) < cellify.Off+14 {
		return false
	}
	h := b[cellify.Off:]
	src, dst, n := binary.BigEndian.Uint16(h), binary.BigEndian.Uint16(h[2:]), int(h[4])
	if grant {
		dst = src
	}
	return src != 0 && binary.BigEndian.Uint16(h[2:]) != 0 && n != 0 && n <= cellify.MaxCreditEntries && h[5] == 0 &&
		len(h) >= 14+n*cellify.CreditEntryLen && dst == cellDst
}

// checkForwarded checks a frame the kernel forwarded: the worker's frame
// with the MACs of one of the routes, resealed; it returns the link.
func checkForwarded(t testing.TB, m linkcrc.Integrity, want, out []byte) int {
	t.Helper()
	n := len(want)
	if m != linkcrc.Off {
		var ok bool
		if n, ok = m.Check(out[:len(want)+linkcrc.TrailerLen]); !ok || n != len(want) {
			t.Fatalf("forwarded frame: trailer %v, length %d (want %d)", ok, n, len(want))
		}
	}
	if !bytes.Equal(out[:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Errorf("destination MAC % x", out[:6])
	}
	l := -1
	for k := range cellMACs {
		if bytes.Equal(out[6:12], cellMACs[k][:]) && cellRoutes&(1<<k) != 0 {
			l = k
		}
	}
	if l < 0 {
		t.Fatalf("source MAC % x is no route's", out[6:12])
	}
	if !bytes.Equal(out[12:n], want[12:]) {
		t.Fatalf("forwarded frame differs from the worker's after the MACs")
	}
	return l
}

func TestCellFwdForwards(t *testing.T) {
	for _, m := range []linkcrc.Integrity{linkcrc.Off, linkcrc.Csum, linkcrc.CRC32C} {
		t.Run(m.String(), func(t *testing.T) {
			pinCPU(t)
			p, f := loadCellFwd(t, m)
			var per [3]int
			for i := range 8 {
				frame := cellFrame(t, m, cellDst, 3, 100+i*400)
				ok, want := cellModel(frame, m)
				if !ok {
					t.Fatal("the model does not forward a valid cell")
				}
				ret, out := runLG(t, p, frame)
				if ret != xdpRedirect {
					t.Fatalf("cell %d: verdict %d, want XDP_REDIRECT", i, ret)
				}
				per[checkForwarded(t, m, want, out)]++
			}
			if per[1] != 4 || per[2] != 4 {
				t.Errorf("cells per link %v: want 4 on each of links 1 and 2", per)
			}
			c, err := f.Counters()
			if err != nil {
				t.Fatal(err)
			}
			if c.Fwd != 8 || c.RxCells[0] != 8 || c.TxCells[1] != 4 || c.TxCells[2] != 4 || c.TxClassBytes[0][1]+c.TxClassBytes[0][2] != c.RxBytes[0] {
				t.Errorf("counters %+v", c)
			}
		})
	}
}

// expectWorker runs frame and checks that it went to the worker unchanged.
func expectWorker(t *testing.T, p *PortProgram, name string, frame []byte) {
	t.Helper()
	ret, out := runLG(t, p, frame)
	if ret != xdpPass || !bytes.Equal(out[:len(frame)], frame) {
		t.Errorf("%s: verdict %d (want XDP_PASS %d), frame changed %v", name, ret, xdpPass, !bytes.Equal(out[:len(frame)], frame))
	}
}

func TestCellFwdToWorker(t *testing.T) {
	pinCPU(t)
	m := linkcrc.Csum
	p, f := loadCellFwd(t, m)
	valid := func() []byte { return cellFrame(t, m, cellDst, 3, 500) }
	mut := func(at int, v byte) []byte {
		b := valid()
		n := len(b) - linkcrc.TrailerLen
		b[at] = v
		if at >= cellify.Off && at < cellify.Off+cellify.CellHeaderLen-1 {
			b[cellify.Off+cellify.CellHeaderLen-1] = crc8(b[cellify.Off : cellify.Off+cellify.CellHeaderLen-1])
		}
		return sealCell(b, n, m)
	}
	expectWorker(t, p, "last hop", cellFrame(t, m, cellDst, 1, 500))
	expectWorker(t, p, "no route", cellFrame(t, m, 3, 3, 500))
	expectWorker(t, p, "edge beyond the map", cellFrame(t, m, CellEdges+1, 3, 500))
	bad := valid()
	bad[len(bad)-1] ^= 1
	expectWorker(t, p, "trailer", bad)
	bad = valid()
	bad[cellify.Off+5] ^= 1
	bad = sealCell(bad, len(bad)-linkcrc.TrailerLen, m)
	expectWorker(t, p, "header checksum", bad)
	expectWorker(t, p, "payload length 0", mut2(t, mut(cellify.Off+10, 0), m, cellify.Off+11, 0))
	expectWorker(t, p, "payload beyond the frame", mut(cellify.Off+10, 0x40))
	expectWorker(t, p, "first record beyond the payload", mut(cellify.Off+12, 0x40))
	expectWorker(t, p, "src 0", func() []byte { b := mut(cellify.Off+2, 0); return mut2(t, b, m, cellify.Off+3, 0) }())
	expectWorker(t, p, "version", mut(seqhdr.MACLen+2, 0x19))
	expectWorker(t, p, "credit grant to an edge without a route", creditFrame(t, m, true, 1, cellDst, 1))
	bad = creditFrame(t, m, false, 1, cellDst, 1)
	bad[cellify.Off+4] = 0
	expectWorker(t, p, "credit frame without entries", sealCell(bad, len(bad)-linkcrc.TrailerLen, m))
	bad = creditFrame(t, m, false, 1, cellDst, 1)
	bad[cellify.Off+4] = 5
	expectWorker(t, p, "credit frame with entries beyond it", sealCell(bad, len(bad)-linkcrc.TrailerLen, m))
	expectWorker(t, p, "short", valid()[:30])

	f.SetHeld(cellRoutes)
	expectWorker(t, p, "every route held", valid())
	f.SetHeld(1 << 1)
	for range 4 {
		ret, out := runLG(t, p, valid())
		if ret != xdpRedirect || !bytes.Equal(out[6:12], cellMACs[2][:]) {
			t.Fatalf("link 1 held: verdict %d, source MAC % x; want link 2's", ret, out[6:12])
		}
	}
	f.SetHeld(0)
	f.SetRoute(1, cellDst, 0)
	expectWorker(t, p, "route withdrawn", valid())
	f.SetRoute(1, cellDst, cellRoutes)
	f.SetOn(false)
	expectWorker(t, p, "off", valid())
	c, err := f.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.Bad != 8 || c.Hops != 1 || c.NoRoute != 5 || c.Fwd != 4 || c.SealErr != 0 {
		t.Errorf("counters: bad %d (want 8), hops %d (1), no route %d (5), forwarded %d (4), seal errors %d", c.Bad, c.Hops, c.NoRoute, c.Fwd, c.SealErr)
	}
}

// mut2 changes one more header byte of a sealed cell and fixes both checksums.
func mut2(t *testing.T, b []byte, m linkcrc.Integrity, at int, v byte) []byte {
	t.Helper()
	n := len(b) - linkcrc.TrailerLen
	b[at] = v
	b[cellify.Off+cellify.CellHeaderLen-1] = crc8(b[cellify.Off : cellify.Off+cellify.CellHeaderLen-1])
	return sealCell(b, n, m)
}

// crc8 is the cell header's checksum (cellify's).
func crc8(b []byte) byte {
	c := byte(0xFF)
	for _, x := range b {
		c ^= x
		for range 8 {
			if c&0x80 != 0 {
				c = c<<1 ^ 0x4D
			} else {
				c <<= 1
			}
		}
	}
	return c
}

// creditFrame is a sealed credit request (grant: a grant) from edge src
// to edge dst with n entries.
func creditFrame(t testing.TB, m linkcrc.Integrity, grant bool, src, dst cellify.EdgeID, n int) []byte {
	t.Helper()
	b := make([]byte, cellify.CreditFrameLen(n)+linkcrc.TrailerLen)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 9, 9})
	es := make([]cellify.CreditEntry, n)
	for i := range es {
		es[i] = cellify.CreditEntry{Port: 0, Class: cellify.Class(i % 8), Total: uint64(i) << 20}
	}
	k, err := cellify.PutCredit(b, grant, src, dst, es)
	if err != nil {
		t.Fatal(err)
	}
	return sealCell(b, k, m)
}

// TestCellFwdCredits: a request goes toward its destination, a grant
// toward its source, unchanged but for the MACs and the trailer, and
// counted as credit frames; the destination edge parses what arrives.
func TestCellFwdCredits(t *testing.T) {
	pinCPU(t)
	m := linkcrc.CRC32C
	p, f := loadCellFwd(t, m)
	for _, fr := range [][]byte{creditFrame(t, m, false, 1, cellDst, 1), creditFrame(t, m, true, cellDst, 1, 128)} {
		want := fr[:len(fr)-linkcrc.TrailerLen]
		ret, out := runLG(t, p, bytes.Clone(fr))
		if ret != xdpRedirect {
			t.Fatalf("credit frame: verdict %d, want XDP_REDIRECT", ret)
		}
		checkForwarded(t, m, want, out)
		if _, err := cellify.ParseCredit(out[:len(want)]); err != nil {
			t.Errorf("forwarded credit frame: %v", err)
		}
	}
	c, err := f.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.Ctrl != 2 || c.Fwd != 0 || c.RxCtrl[0] != 2 || c.TxCtrl[1]+c.TxCtrl[2] != 2 || c.TxCells != [CellLinks]uint64{} {
		t.Errorf("counters %+v", c)
	}
}

// TestCellFwdRate: the kernel sends within the link's burst, then leaves
// cells to the worker; what the worker charges stops it as well.
func TestCellFwdRate(t *testing.T) {
	pinCPU(t)
	m := linkcrc.Off
	p, f := loadCellFwd(t, m)
	frame := cellFrame(t, m, cellDst, 3, 1000)
	cost := len(frame) + 24
	f.SetRoute(1, cellDst, 1<<1)
	// 1 Mbit/s: a frame costs about 8 ms; a burst of 3 frames.
	if err := f.SetLink(1, CellLinkConf{Ifindex: 1, MAC: cellMACs[1], Rate: 1_000_000, Burst: 3 * cost, Overhead: 24}); err != nil {
		t.Fatal(err)
	}
	if !f.Rated(1) || f.Rated(0) {
		t.Errorf("rate limited: link 1 %v, link 0 %v; want true, false", f.Rated(1), f.Rated(0))
	}
	sent := 0
	for range 10 {
		if ret, _ := runLG(t, p, bytes.Clone(frame)); ret == xdpRedirect {
			sent++
		}
	}
	if sent < 3 || sent > 5 {
		t.Errorf("%d of 10 back-to-back cells sent at 1 Mbit/s with a 3-frame burst: want 3 to 5", sent)
	}
	c, _ := f.Counters()
	if c.Rate == 0 {
		t.Error("no cell counted as left to the worker for the rate")
	}
	// The worker's charge pushes the link's time forward by its cost.
	before := f.Tat(1)
	f.Charge(1, 1, 1000, MonoNow())
	if got, want := f.Tat(1)-before, uint64(1024*8_000_000_000_000/1_000_000/1000); got != want {
		t.Errorf("charge of 1000 bytes + 24 moved tat by %d ns, want %d", got, want)
	}
	expectWorker(t, p, "after the worker's charge", frame)
}

// FuzzCellFwd holds the kernel to the worker's decision on any frame: it
// forwards exactly what Node.rxCell would, changed as the worker would
// change it, and leaves everything else to the worker untouched.
func FuzzCellFwd(f *testing.F) {
	for _, n := range []int{1, 60, 1400, 3400} {
		b := cellFrame(f, linkcrc.Off, cellDst, 3, n)
		f.Add(b, uint8(0))
		f.Add(b, uint8(1))
	}
	f.Add(make([]byte, 64), uint8(1))
	f.Add(creditFrame(f, linkcrc.Off, false, 1, cellDst, 3), uint8(0))
	f.Add(creditFrame(f, linkcrc.Off, true, cellDst, 1, 1), uint8(0))
	f.Fuzz(func(t *testing.T, frame []byte, fix uint8) {
		if len(frame) > 3700 {
			return
		}
		m := linkcrc.Csum
		b := bytes.Clone(frame)
		if fix&1 != 0 && len(b) >= cellify.CellPayloadOffset {
			// Make the header checksum right, to reach the checks behind it.
			b[cellify.Off+cellify.CellHeaderLen-1] = crc8(b[cellify.Off : cellify.Off+cellify.CellHeaderLen-1])
		}
		buf := make([]byte, len(b)+linkcrc.TrailerLen)
		copy(buf, b)
		if len(b) < seqhdr.MinFrameLen {
			return // no link frame is shorter
		}
		sealed := sealCell(buf, len(b), m)
		p := fuzzCellProg(t, m)
		ok, want := cellModel(sealed, m)
		ret, out := runLG(t, p, sealed)
		switch {
		case ok && ret != xdpRedirect:
			t.Fatalf("the worker forwards it, the kernel: verdict %d (header % x)", ret, b[cellify.Off:min(len(b), cellify.CellPayloadOffset)])
		case ok:
			checkForwarded(t, m, want, out)
		case ret != xdpPass || !bytes.Equal(out[:len(sealed)], sealed):
			t.Fatalf("the worker does not forward it; the kernel: verdict %d, changed %v", ret, !bytes.Equal(out[:len(sealed)], sealed))
		}
	})
}

// fuzzProg is the program a fuzz process runs every input on.
var fuzzProg *PortProgram

func fuzzCellProg(t *testing.T, m linkcrc.Integrity) *PortProgram {
	if fuzzProg == nil {
		needRoot(t)
		p, _, err := openCellProg(m)
		if err != nil {
			t.Fatal(err)
		}
		fuzzProg = p
	}
	return fuzzProg
}

// MonoNow reads what clock_gettime(CLOCK_MONOTONIC) reads (the clock of
// bpf_ktime_get_ns), without a system call.
func TestMonoNowIsClockMonotonic(t *testing.T) {
	read := func() int64 {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		return ts.Nano()
	}
	// A bracket can be widened by a preemption: the best of a few tries.
	const slack = 20 * time.Microsecond
	var off int64 = math.MaxInt64
	for range 20 {
		a := read()
		m := MonoNow()
		b := read()
		d := max(a-m, m-b, 0) // 0 inside [a, b]
		off = min(off, d)
	}
	if off > int64(slack) {
		t.Errorf("MonoNow is %v outside clock_gettime's brackets at best, want at most %v", time.Duration(off), slack)
	}
	last := MonoNow()
	for range 1000 {
		now := MonoNow()
		if now < last {
			t.Fatalf("MonoNow went back from %d to %d", last, now)
		}
		last = now
	}
	if a := testing.AllocsPerRun(100, func() { MonoNow() }); a != 0 {
		t.Errorf("MonoNow allocates %.1f times a call", a)
	}
}
