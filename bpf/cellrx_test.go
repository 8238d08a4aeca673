package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link/linkcrc"
)

// The egress edge's kernel path (lf_cell_rx), run with BPF_PROG_TEST_RUN
// against cellify.CellRxModel, the program's steps in Go: the same cell on
// the same state must get the same verdict, the same output and leave the
// same point and counters. The host port is the loopback (ifindex 1);
// test_run runs the program on the calling CPU (pinCPU: 0).

var _ cellify.RxSlots = (*CellRx)(nil)

const rxSelf = 3

// cellRxPair is the program, as an edge's link port 0 with host port 0,
// and the model, each with a KernelRx that gives them the same streams.
type cellRxPair struct {
	p      *PortProgram
	c      *CellRx
	m      *cellify.CellRxModel
	kp, km *cellify.KernelRx
}

func loadCellRx(t *testing.T, crc linkcrc.Integrity) *cellRxPair {
	t.Helper()
	p := loadTestPort(t)
	pinCPU(t)
	if err := p.SetCellLink(0); err != nil {
		t.Fatal(err)
	}
	c, err := p.CellRx()
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := p.CellRx(); err != nil || c2 != c {
		t.Fatalf("second CellRx() = %p, %v; want the first", c2, err)
	}
	if err := c.SetHost(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.SetIntegrity(crc); err != nil {
		t.Fatal(err)
	}
	c.SetSelf(rxSelf)
	c.SetOn(true)
	m := cellify.NewCellRxModel(rxSelf)
	m.Crc = crc
	m.Hosts[0] = true
	return &cellRxPair{p: p, c: c, m: m, kp: cellify.NewKernelRx(c, []bool{true}), km: cellify.NewKernelRx(m, []bool{true})}
}

// rxHost is a host frame of n bytes from MAC 02:00:00:00:00:01.
func rxHost(n int) []byte {
	f := make([]byte, n)
	copy(f, []byte{0x02, 0, 0, 0, 0, 9, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	for i := 14; i < n; i++ {
		f[i] = byte(i * 13)
	}
	return f
}

// rxRec is host frame f as a record from source port 2.
func rxRec(f []byte) []byte {
	r := make([]byte, 3+len(f))
	binary.BigEndian.PutUint16(r, uint16(1+len(f)))
	r[2] = 2
	copy(r[3:], f)
	return r
}

// rxCellFrame is a cell of stream (7, port 0, class 0) to rxSelf carrying
// payload, sealed with crc.
func rxCellFrame(t testing.TB, h cellify.CellHeader, payload []byte, crc linkcrc.Integrity) []byte {
	t.Helper()
	f := make([]byte, cellify.CellFrameLen(len(payload))+linkcrc.TrailerLen)
	n, err := cellify.PutCell(f, &h, payload)
	if err != nil {
		t.Fatal(err)
	}
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x55})
	if crc == linkcrc.Off {
		return f[:n]
	}
	n, _ = crc.Seal(f, n)
	return f[:n]
}

func rxHdr(seq uint32, recNo uint16) cellify.CellHeader {
	return cellify.CellHeader{Dst: rxSelf, Src: 7, Hops: 2, Seq: seq, RecNo: recNo, Epoch: 0x1234}
}

// give gives stream (7, 0, 0) to both at seq and recNo.
func (x *cellRxPair) give(t *testing.T, seq uint32, recNo uint16) {
	t.Helper()
	key := cellify.StreamKey{Src: 7}
	rec := rxRec(rxHost(60))[2:]
	if !x.kp.Give(key, seq, recNo, 0x1234, rec) || !x.km.Give(key, seq, recNo, 0x1234, rec) {
		t.Fatal("give refused")
	}
}

// stampMask is the point's stamp (time) bits: the program's clock and the
// model's are read apart (the program's is later by at most the run).
const stampMask = 0xff << 48

// run runs frame through both and compares; it returns the program's verdict.
func (x *cellRxPair) run(t *testing.T, name string, frame []byte) uint32 {
	t.Helper()
	ret, errs := x.try(t, name, frame)
	for _, e := range errs {
		t.Error(e)
	}
	return ret
}

// try is run, the differences returned.
func (x *cellRxPair) try(t *testing.T, name string, frame []byte) (uint32, []string) {
	t.Helper()
	var errs []string
	errorf := func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) }
	opts := ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+64)}
	now := uint64(MonoNow())
	ret, err := x.p.Program().Run(&opts)
	slack := (uint64(MonoNow())-now)>>14 + 1
	if err != nil {
		t.Fatalf("%s: test run on %d bytes: %v", name, len(frame), err)
	}
	v, host, _ := x.m.Offer(bytes.Clone(frame), 0, now)
	switch {
	case v == cellify.RxDelivered && (ret != xdpRedirect || !bytes.Equal(opts.DataOut, host)):
		errorf("%s: model delivers %d bytes, program: verdict %d, %d bytes, same %v", name, len(host), ret,
			len(opts.DataOut), bytes.Equal(opts.DataOut, host))
	case v == cellify.RxToGo && (ret != xdpPass || !bytes.Equal(opts.DataOut, frame)):
		errorf("%s: model passes it on, program: verdict %d, changed %v", name, ret, !bytes.Equal(opts.DataOut, frame))
	case v == cellify.RxDropped:
		errorf("%s: model drops it", name)
	}
	for i := range 2 {
		pp, pm := x.c.Point(i).Load(), x.m.Point(i).Load()
		if pp&^stampMask != pm&^stampMask || (pp-pm)>>48&0xff > slack {
			errorf("%s: slot %d point %#x, model's %#x", name, i, pp, pm)
		}
		x.c.Point(i).Store(pm) // the same stamp from here on
		f1, b1, p1, h1 := x.c.Counts(i)
		f2, b2, p2, h2 := x.m.Counts(i)
		if f1 != f2 || b1 != b2 || p1 != p2 || h1 != h2 {
			errorf("%s: slot %d counts %d %d %d %d, model's %d %d %d %d", name, i, f1, b1, p1, h1, f2, b2, p2, h2)
		}
	}
	k, err := x.c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	mc := &x.m.C
	if k.Delivered != mc.Delivered.Load() || k.Bytes != mc.Bytes.Load() || k.Handovers != mc.Handovers.Load() ||
		k.Bad != mc.Bad.Load() || k.NotOurs != mc.NotOurs.Load() || k.GoOwned != mc.GoOwned.Load() ||
		k.Raced != mc.Raced.Load() || k.StripErr != 0 || k.HoOrder != mc.HoOrder.Load() || k.HoRecord != mc.HoRecord.Load() ||
		k.HoSource != mc.HoSource.Load() || k.HoCPU != mc.HoCPU.Load() {
		errorf("%s: counters %+v, model's delivered %d bytes %d handovers %d bad %d not_ours %d go_owned %d raced %d", name, k,
			mc.Delivered.Load(), mc.Bytes.Load(), mc.Handovers.Load(), mc.Bad.Load(), mc.NotOurs.Load(), mc.GoOwned.Load(), mc.Raced.Load())
	}
	return ret, errs
}

func TestCellRxInOrder(t *testing.T) {
	for _, crc := range []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C, linkcrc.Csum} {
		t.Run(crc.String(), func(t *testing.T) {
			x := loadCellRx(t, crc)
			x.give(t, 100, 50)
			for i := range 5 {
				host := rxHost(14 + 40*i)
				f := rxCellFrame(t, rxHdr(100+uint32(i), 50+uint16(i)), rxRec(host), crc)
				if ret := x.run(t, "in order", f); ret != xdpRedirect {
					t.Fatalf("cell %d: verdict %d, want XDP_REDIRECT", i, ret)
				}
			}
			if s, r := cellify.RxPointSeq(x.c.Point(0).Load()); s != 105 || r != 55 {
				t.Errorf("point at %d/%d, want 105/55", s, r)
			}
			k, _ := x.c.Counters()
			if k.Delivered != 5 || k.RxCells[0] != 5 {
				t.Errorf("counters %+v", k)
			}
		})
	}
}

// Cells the kernel must not deliver: each goes on untouched, the point
// given to Go where the cell is the stream's (a hand-over), untouched
// where it is not.
func TestCellRxHostileAndOutOfOrder(t *testing.T) {
	x := loadCellRx(t, linkcrc.CRC32C)
	host := rxHost(60)
	ok := rxRec(host)
	type tc struct {
		name     string
		h        cellify.CellHeader
		payload  []byte
		mutate   func([]byte)
		handover bool
	}
	long := rxRec(rxHost(200))
	binary.BigEndian.PutUint16(long, 0xFFFF)
	short := rxRec(rxHost(60))
	binary.BigEndian.PutUint16(short, 14)
	tiny := rxRec(rxHost(13))
	other := rxHdr(10, 5)
	other.Dst = 4
	src := rxHdr(10, 5)
	src.Src = 8
	port := rxHdr(10, 5)
	port.Port = 1
	class := rxHdr(10, 5)
	class.Class = 1
	fci := rxHdr(10, 5)
	fci.FCI = true
	ep := rxHdr(10, 5)
	ep.Epoch = 0x4321
	ep0 := rxHdr(10, 5)
	ep0.Epoch = 0
	first := rxHdr(10, 5)
	first.First = cellify.NoRecord
	cases := []tc{
		{"ahead", rxHdr(11, 5), ok, nil, true},
		{"behind", rxHdr(9, 5), ok, nil, true},
		{"record number", rxHdr(10, 6), ok, nil, true},
		{"epoch", ep, ok, nil, true},
		{"epoch 0", ep0, ok, nil, true},
		{"FCI", fci, ok, nil, true},
		{"no record start", first, ok, nil, true},
		{"two records", rxHdr(10, 5), append(bytes.Clone(ok), ok...), nil, true},
		{"record longer than the payload", rxHdr(10, 5), long, nil, true},
		{"record shorter than the payload", rxHdr(10, 5), short, nil, true},
		{"record below an Ethernet header", rxHdr(10, 5), tiny, nil, true},
		{"other source MAC", rxHdr(10, 5), ok, func(f []byte) { f[42+3+11] ^= 1 }, true},
		{"other source port", rxHdr(10, 5), ok, func(f []byte) { f[42+2] = 5 }, true},
		{"other edge", other, ok, nil, false},
		{"unknown stream (source)", src, ok, nil, false},
		{"unknown stream (port)", port, ok, nil, false},
		{"unknown stream (class)", class, ok, nil, false},
		{"header checksum", rxHdr(10, 5), ok, func(f []byte) { f[30] ^= 0x40 }, false},
		{"hops 0 (checksum fixed)", rxHdr(10, 5), ok, func(f []byte) { f[26] &^= 0x0f; refixCRC8(f) }, false},
		{"payload beyond the frame (checksum fixed)", rxHdr(10, 5), ok, func(f []byte) {
			binary.BigEndian.PutUint16(f[32:], uint16(len(f)))
			refixCRC8(f)
		}, false},
		{"trailer", rxHdr(10, 5), ok, func(f []byte) { f[len(f)-1] ^= 1 }, false},
		{"VLAN-tagged", rxHdr(10, 5), ok, func(f []byte) { f[12], f[13] = 0x81, 0x00 }, false},
		{"credit frame type", rxHdr(10, 5), ok, func(f []byte) { f[14] = 10 }, false},
	}
	x.give(t, 10, 5)
	for _, c := range cases {
		x.c.Point(0).Store(cellify.RxPoint(10, 5))
		x.m.Point(0).Store(cellify.RxPoint(10, 5))
		f := rxCellFrame(t, c.h, c.payload, linkcrc.CRC32C)
		if c.mutate != nil {
			c.mutate(f)
			if c.name != "trailer" {
				linkcrc.CRC32C.Seal(f, len(f)-linkcrc.TrailerLen)
			}
		}
		if ret := x.run(t, c.name, f); ret == xdpRedirect {
			t.Errorf("%s: delivered", c.name)
		}
		want := cellify.RxPoint(10, 5)
		if c.handover {
			want &^= cellify.RxOwned
		}
		if got := x.c.Point(0).Load(); got != want {
			t.Errorf("%s: point %#x, want %#x", c.name, got, want)
		}
	}
	// Go owns the point: the expected cell goes on, nothing moves.
	x.c.Point(0).Store(cellify.RxPoint(10, 5) &^ cellify.RxOwned)
	x.m.Point(0).Store(cellify.RxPoint(10, 5) &^ cellify.RxOwned)
	if ret := x.run(t, "Go's point", rxCellFrame(t, rxHdr(10, 5), ok, linkcrc.CRC32C)); ret != xdpPass {
		t.Errorf("Go's point: verdict %d", ret)
	}
	// Off: nothing.
	x.c.Point(0).Store(cellify.RxPoint(10, 5))
	x.c.SetOn(false)
	x.m.On = false
	x.m.Point(0).Store(cellify.RxPoint(10, 5))
	if ret := x.run(t, "off", rxCellFrame(t, rxHdr(10, 5), ok, linkcrc.CRC32C)); ret != xdpPass {
		t.Errorf("off: verdict %d", ret)
	}
}

// refixCRC8 rewrites a cell header's checksum after a change (the
// hostile cell then passes the checksum and must fail on its fields).
// syncModel makes the model's counters the program's (after a case whose
// two runs read the clock too far apart to be compared).
func (x *cellRxPair) syncModel(t *testing.T) {
	t.Helper()
	k, err := x.c.Counters()
	if err != nil {
		t.Fatal(err)
	}
	mc := &x.m.C
	for _, p := range []struct {
		m *atomic.Uint64
		v uint64
	}{{&mc.Delivered, k.Delivered}, {&mc.Bytes, k.Bytes}, {&mc.Handovers, k.Handovers}, {&mc.Bad, k.Bad},
		{&mc.NotOurs, k.NotOurs}, {&mc.GoOwned, k.GoOwned}, {&mc.Raced, k.Raced}, {&mc.HoOrder, k.HoOrder},
		{&mc.HoRecord, k.HoRecord}, {&mc.HoSource, k.HoSource}, {&mc.HoCPU, k.HoCPU}} {
		p.m.Store(p.v)
	}
	for i := range 2 {
		s := &x.m.S[i]
		f, b, pl, h := x.c.Counts(i)
		s.Frames.Store(f)
		s.Bytes.Store(b)
		s.Payload.Store(pl)
		s.Handovers.Store(h)
	}
}

func refixCRC8(f []byte) {
	f[41] = crc8(f[22:41])
}

// The last delivery on another CPU: within the quiet time the cell goes
// to Go (a hand-over), after it the kernel delivers; within it too if
// lf_cell_rx_tc sent that delivery on (passed is the point's word), not
// if passed is any other word (an earlier delivery's, a word differing in
// one field).
func TestCellRxOtherCPU(t *testing.T) {
	x := loadCellRx(t, linkcrc.Off)
	x.give(t, 0, 0)
	stamp := func(ago uint64) uint64 { return ((uint64(MonoNow()) - ago) >> 14 & 0xff) << 48 }
	other := uint64(5+1) << 56
	same := ^uint64(0) // passed: the point's own word
	for i, tc := range []struct {
		name   string
		cpu    uint64 // the last delivery's CPU + 1
		ago    uint64 // ... how long ago
		passed uint64 // XORed into the point's word (same: the word, 0: 0)
		want   uint32
	}{
		{"other CPU just now", other, 0, 1 << 63, xdpPass},
		{"other CPU long ago", other, 100_000, 1 << 63, xdpRedirect},
		{"this CPU just now", 1 << 56, 0, 1 << 63, xdpRedirect},
		{"other CPU just now, sent on", other, 0, same, xdpRedirect},
		{"other CPU just now, the delivery before sent on", other, 0, 1 | 1<<32, xdpPass},
		{"other CPU just now, another CPU's word sent on", other, 0, 3 << 56, xdpPass},
		{"other CPU just now, an earlier stamp sent on", other, 0, 1 << 48, xdpPass},
		{"other CPU just now, passed cleared", other, 0, 0, xdpPass},
	} {
		f := rxCellFrame(t, rxHdr(uint32(i), uint16(i)), rxRec(rxHost(60)), linkcrc.Off)
		for try := 0; ; try++ {
			// Descheduled for half the quiet time between the stamp and
			// the run, the case says nothing: again, from the same state.
			t0 := MonoNow()
			p := cellify.RxPoint(uint32(i), uint16(i)) | tc.cpu | stamp(tc.ago)
			passed := p ^ tc.passed
			switch tc.passed {
			case same:
				passed = p
			case 0:
				passed = 0
			}
			for _, w := range []*atomic.Uint64{x.c.Point(0), x.m.Point(0)} {
				w.Store(p)
			}
			x.c.Passed(0).Store(passed)
			x.m.S[0].Passed.Store(passed)
			ret, errs := x.try(t, tc.name, f)
			if MonoNow()-t0 > 24_000 && try < 20 {
				x.syncModel(t)
				continue
			}
			for _, e := range errs {
				t.Error(e)
			}
			if ret != tc.want {
				t.Errorf("%s: verdict %d, want %d", tc.name, ret, tc.want)
			}
			break
		}
	}
}

// Random cells near the point, mutated, on random points: the program
// and the model agree on every one.
func TestCellRxAgainstModel(t *testing.T) {
	for _, crc := range []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C} {
		t.Run(crc.String(), func(t *testing.T) {
			x := loadCellRx(t, crc)
			x.give(t, 1000, 77)
			rng := rand.New(rand.NewPCG(9, uint64(crc)))
			delivered := 0
			for i := range 4000 {
				f := randomCell(t, rng, crc)
				if rng.IntN(4) == 0 {
					p := cellify.RxPoint(1000+uint32(rng.IntN(3)), 77+uint16(rng.IntN(3)))
					if rng.IntN(4) == 0 {
						p &^= cellify.RxOwned
					}
					x.c.Point(0).Store(p)
					x.m.Point(0).Store(p)
				}
				if x.run(t, "random", f) == xdpRedirect {
					delivered++
				}
				if t.Failed() {
					t.Fatalf("cell %d: %x", i, f)
				}
			}
			if delivered == 0 {
				t.Error("nothing delivered: the cases miss the common case")
			}
			t.Logf("%d of 4000 delivered", delivered)
		})
	}
}

// randomCell is a cell of the stream near point 1000/77, mostly valid,
// often mutated (a field, a byte anywhere, its length), resealed or not.
func randomCell(t testing.TB, rng *rand.Rand, crc linkcrc.Integrity) []byte {
	h := rxHdr(1000+uint32(rng.IntN(3)), 77+uint16(rng.IntN(3)))
	if rng.IntN(8) == 0 {
		h.Epoch = uint16(rng.IntN(3)) + 0x1233
	}
	host := rxHost(14 + rng.IntN(100))
	payload := rxRec(host)
	switch rng.IntN(8) {
	case 0:
		payload = append(payload, rxRec(rxHost(20))...)
	case 1:
		payload = payload[:1+rng.IntN(len(payload)-1)]
	case 2:
		h.First = uint16(rng.IntN(3))
		if rng.IntN(2) == 0 {
			h.First = cellify.NoRecord
		}
	}
	f := rxCellFrame(t, h, payload, crc)
	switch rng.IntN(6) {
	case 0:
		f[rng.IntN(len(f))] ^= byte(1 << rng.IntN(8))
	case 1:
		i := 22 + rng.IntN(min(40, len(f)-22))
		f[i] = byte(rng.Uint32())
		refixCRC8(f)
		if crc != linkcrc.Off {
			crc.Seal(f, len(f)-linkcrc.TrailerLen)
		}
	case 2:
		f = f[:max(14, len(f)-rng.IntN(30))]
	}
	return f
}

// Delivery through the stack (SetPass): the same decision, the host frame
// passed up behind the metadata lf_cell_rx_tc redirects by (the host
// port's ifindex).
func TestCellRxPass(t *testing.T) {
	x := loadCellRx(t, linkcrc.CRC32C)
	x.c.SetPass(true)
	x.give(t, 5, 9)
	host := rxHost(80)
	f := rxCellFrame(t, rxHdr(5, 9), rxRec(host), linkcrc.CRC32C)
	opts := ebpf.RunOptions{Data: f, DataOut: make([]byte, len(f)+64)}
	ret, err := x.p.Program().Run(&opts)
	if err != nil {
		t.Fatal(err)
	}
	// magic, the host port's ifindex, the slot, 0, the point word left.
	meta := binary.LittleEndian.AppendUint64([]byte{0x11, 0xc3, 0x46, 0x4c, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, x.c.Point(0).Load())
	if ret != xdpPass || !bytes.Equal(opts.DataOut, append(meta, host...)) {
		t.Errorf("verdict %d, out %x; want XDP_PASS and %x then the host frame", ret, opts.DataOut, meta)
	}
	if s, r := cellify.RxPointSeq(x.c.Point(0).Load()); s != 6 || r != 10 {
		t.Errorf("point at %d/%d", s, r)
	}
	if p := x.c.Passed(0).Load(); p != 0 {
		t.Errorf("passed %#x before lf_cell_rx_tc ran", p)
	}
	// Out of order: passed on untouched, no metadata, the point given.
	f = rxCellFrame(t, rxHdr(7, 10), rxRec(host), linkcrc.CRC32C)
	opts = ebpf.RunOptions{Data: f, DataOut: make([]byte, len(f)+64)}
	if ret, err = x.p.Program().Run(&opts); err != nil || ret != xdpPass || !bytes.Equal(opts.DataOut, f) {
		t.Errorf("out of order: verdict %d, changed %v, %v", ret, !bytes.Equal(opts.DataOut, f), err)
	}
	if x.c.Point(0).Load()&cellify.RxOwned != 0 {
		t.Error("out of order: point still owned")
	}
}

// Reset forgets the streams: no index entry, every point Go's.
func TestCellRxReset(t *testing.T) {
	x := loadCellRx(t, linkcrc.Off)
	x.give(t, 5, 9)
	if err := x.c.Reset(); err != nil {
		t.Fatal(err)
	}
	if p := x.c.Point(0).Load(); p != 0 {
		t.Errorf("point %#x after Reset", p)
	}
	var k, v uint32
	if it := x.p.objs.CellRxIdx.Iterate(); it.Next(&k, &v) {
		t.Errorf("index entry %#x → %d after Reset", k, v)
	}
	f := rxCellFrame(t, rxHdr(5, 9), rxRec(rxHost(60)), linkcrc.Off)
	opts := ebpf.RunOptions{Data: f, DataOut: make([]byte, len(f)+64)}
	if ret, err := x.p.Program().Run(&opts); err != nil || ret != xdpPass {
		t.Errorf("after Reset: verdict %d, %v", ret, err)
	}
}
