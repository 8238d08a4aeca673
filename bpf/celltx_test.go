package bpf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"golang.org/x/sys/unix"
)

// The ingress edge's kernel path (lf_cell_tx), run with BPF_PROG_TEST_RUN
// against cellify.CellTxModel, the Go model of the same steps.

const (
	ctxSelf  = 1
	ctxDst   = 2
	ctxEpoch = 0x3a5c
	ctxHops  = 8
	ctxMaxPl = 1400
	ctxLinks = 3
)

var (
	ctxH1 = [6]byte{0x02, 0, 0, 0, 0, 1} // the local host
	ctxH2 = [6]byte{0x02, 0, 0, 0, 0, 2} // behind edge ctxDst, port 0
)

// ctxPair is the kernel program and the model set up alike.
type ctxPair struct {
	p   *PortProgram
	fwd *CellFwd
	tx  *CellTx
	lg  *LGTx
	m   *cellify.CellTxModel
}

// loadCellTx loads the port program (not attached) as an edge's host port
// with the ingress path on, three links (redirect targets: the loopback),
// routes to ctxDst over all three in loss class 1, and the model alike.
func loadCellTx(t *testing.T, integrity linkcrc.Integrity) *ctxPair {
	t.Helper()
	p := loadLGTxRing(t, lgTxTestSlots)
	if err := p.changeConf("host", func(c *portPortConf) { c.Role = roleHost }); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCellHost(true); err != nil {
		t.Fatal(err)
	}
	fwd, err := p.CellFwd()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := p.CellTx()
	if err != nil {
		t.Fatal(err)
	}
	lg, err := p.LGTx()
	if err != nil {
		t.Fatal(err)
	}
	m := cellify.NewCellTxModel(CellTxVOQs)
	if err := fwd.SetIntegrity(integrity); err != nil {
		t.Fatal(err)
	}
	m.Integrity = integrity
	var lc [8]uint8
	for i := range lc {
		lc[i] = 1
		m.LC[i] = 1
	}
	fwd.SetClasses(1, lc)
	for l := range ctxLinks {
		mac := [6]byte{0x02, 0xaa, 0, 0, 0, byte(l)}
		if err := fwd.SetLink(l, CellLinkConf{Ifindex: 1, MAC: mac}); err != nil {
			t.Fatal(err)
		}
		m.LinkMAC[l] = mac
		m.Targets |= 1 << l
	}
	fwd.SetRoute(1, ctxDst, 1<<ctxLinks-1)
	m.Routes[[2]int{1, ctxDst}] = 1<<ctxLinks - 1
	tx.SetEdge(ctxSelf, ctxHops, 0, ctxEpoch, ctxMaxPl)
	m.SetEdge(cellify.KernelEdge{Self: ctxSelf, Hops: ctxHops, Host: 0, Epoch: ctxEpoch, MaxPayload: ctxMaxPl})
	c := &ctxPair{p: p, fwd: fwd, tx: tx, lg: lg, m: m}
	until := MonoNow() + 1e12
	c.dest(t, ctxH1, cellify.KernelDest{Until: until, Edge: ctxSelf, Port: 0})
	c.dest(t, ctxH2, cellify.KernelDest{Until: until, Edge: ctxDst, Port: 0, VOQ: [8]uint32{1, 0, 0, 0, 0, 2}})
	c.key(0, cellify.VOQKey{Dst: ctxDst, Port: 0, Class: 0})
	c.key(1, cellify.VOQKey{Dst: ctxDst, Port: 0, Class: 5})
	tx.SetOn(true)
	m.SetOn(true)
	return c
}

func (c *ctxPair) dest(t *testing.T, mac [6]byte, d cellify.KernelDest) {
	t.Helper()
	if err := c.tx.SetDest(mac, CellTxDest{Until: d.Until, Edge: uint16(d.Edge), Port: d.Port, VOQ: d.VOQ}); err != nil {
		t.Fatal(err)
	}
	c.m.SetDest(mac, d)
}

func (c *ctxPair) key(i int, k cellify.VOQKey) {
	c.tx.SetKey(i, uint16(k.Dst), k.Port, uint8(k.Class))
	c.m.SetKey(i, k)
}

// give hands slot i to the kernel in both, with room and seq, record
// number recNo at seq.
func (c *ctxPair) give(i int, room uint64, seq uint32, recNo uint16) {
	for _, k := range []cellify.EdgeKernel{c.m} {
		k.Base(i).Store(cellify.KernelBase(seq, recNo))
		k.State(i).Store(cellify.KernelWord(true, room, seq))
	}
	c.tx.Base(i).Store(cellify.KernelBase(seq, recNo))
	c.tx.State(i).Store(cellify.KernelWord(true, room, seq))
}

// ctxFrame is an IPv4 frame of n bytes from h1 to h2 with DSCP class cls.
func ctxFrame(rng *rand.Rand, n int, cls uint8) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	copy(f, ctxH2[:])
	copy(f[6:], ctxH1[:])
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	if n > 15 {
		f[15] = cls << 5
	}
	return f
}

// runCtx runs frame through the kernel: the verdict and the frame after.
func runCtx(t testing.TB, p *PortProgram, frame []byte) (uint32, []byte) {
	t.Helper()
	opts := ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+128)}
	ret, err := p.Program().Run(&opts)
	if err != nil {
		t.Fatalf("test run on %d bytes: %v", len(frame), err)
	}
	return ret, opts.DataOut
}

// same runs frame through both and checks they agree: verdict, the cell,
// every slot word and the counters. It returns the model's verdict.
func (c *ctxPair) same(t *testing.T, what string, frame []byte) (int, []byte) {
	t.Helper()
	ret, out := runCtx(t, c.p, frame)
	c.m.Now = MonoNow()
	v, cell, _ := c.m.Offer(frame, 0)
	c.m.Consumed.Store(c.m.ToGo.Load()) // Go takes in what it is passed
	switch v {
	case cellify.KernelSent:
		if ret != xdpRedirect || !bytes.Equal(out, cell) {
			t.Fatalf("%s: kernel verdict %d, cell\n%x\nmodel's\n%x", what, ret, out, cell)
		}
	case cellify.KernelToGo:
		if ret != xdpPass || !bytes.Equal(out, frame) {
			t.Fatalf("%s: kernel verdict %d (want XDP_PASS), frame changed %v", what, ret, !bytes.Equal(out, frame))
		}
	default:
		if ret != xdpDrop {
			t.Fatalf("%s: kernel verdict %d, model drops", what, ret)
		}
	}
	for i := range 2 {
		if a, b := c.tx.State(i).Load(), c.m.State(i).Load(); a != b {
			t.Fatalf("%s: slot %d state %#x, model's %#x", what, i, a, b)
		}
		if a, b := c.tx.Declined(i), c.m.Declined(i); a != b {
			t.Fatalf("%s: slot %d declined %d, model's %d", what, i, a, b)
		}
	}
	k, mc := c.tx.Counters(), c.m.C
	want := CellTxCounters{Sent: mc.Sent, Bytes: mc.Bytes, NoDest: mc.NoDest, NotOwned: mc.NotOwned, Unread: mc.Unread,
		NoCredit: mc.NoCredit, NoRoute: mc.NoRoute, NoRate: mc.NoRate, Raced: mc.Raced, Ineligible: mc.Ineligible, StampErr: mc.StampErr,
		Busy: mc.Busy, Wakeups: mc.Wakeups}
	if k != want {
		t.Fatalf("%s: counters %+v, model's %+v", what, k, want)
	}
	return v, cell
}

// The kernel cuts what the model cuts, byte for byte, and the cell parses
// as the worker's packer would have cut the record alone in its VOQ;
// every way to Go leaves the frame and, but for a decline, the VOQ alone.
func TestCellTxMatchesModel(t *testing.T) {
	for _, integrity := range []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C, linkcrc.Csum} {
		t.Run(integrity.String(), func(t *testing.T) {
			c := loadCellTx(t, integrity)
			rng := rand.New(rand.NewPCG(1, 2))
			// Go's: nothing sent, the frame passed on.
			if v, _ := c.same(t, "go's", ctxFrame(rng, 100, 0)); v != cellify.KernelToGo {
				t.Fatal("a VOQ Go owns: the kernel sent")
			}
			c.give(0, 5000, 77, 900)
			c.give(1, 1<<30, 1<<32-2, 0xfffe)
			for i := range 40 {
				n := 15 + rng.IntN(ctxMaxPl-2)
				v, cell := c.same(t, "sized", ctxFrame(rng, n, uint8(i%2*5)))
				if v != cellify.KernelSent {
					continue
				}
				h, err := cellify.ParseCell(cell)
				if err != nil {
					t.Fatalf("%d bytes: the cell does not parse: %v", n, err)
				}
				if h.First != 0 || int(h.Len) != n+3 || h.Epoch != ctxEpoch || h.Hops != ctxHops || h.Src != ctxSelf || h.Dst != ctxDst {
					t.Fatalf("header %+v", h)
				}
			}
			if s := c.tx.Counters(); s.Sent == 0 || s.NoCredit == 0 {
				t.Fatalf("counters %+v: want cells sent and slot 0 out of credit", s)
			}
			// Slot 1 wrapped its seq past 2^32 and its record number past 2^16.
			if w := c.tx.State(1).Load(); uint32(w) > 100 {
				t.Fatalf("slot 1 at seq %d: did not wrap", uint32(w))
			}
			// Hostile and ineligible frames: to Go, the VOQ untouched.
			c.give(0, 1<<20, 5, 5)
			hostile := map[string][]byte{
				"14 bytes":        ctxFrame(rng, 14, 0),
				"record > cell":   ctxFrame(rng, ctxMaxPl-2, 0),
				"jumbo":           ctxFrame(rng, 9000, 0),
				"group source":    append(append(append([]byte{}, ctxH2[:]...), 0x03, 0, 0, 0, 0, 1), ctxFrame(rng, 60, 0)[12:]...),
				"broadcast":       append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, ctxFrame(rng, 60, 0)[6:]...),
				"unknown dst":     append([]byte{0x02, 9, 9, 9, 9, 9}, ctxFrame(rng, 60, 0)[6:]...),
				"unknown src":     append(append(append([]byte{}, ctxH2[:]...), 0x02, 9, 9, 9, 9, 9), ctxFrame(rng, 60, 0)[12:]...),
				"class w/o a VOQ": ctxFrame(rng, 60, 3),
			}
			for name, f := range hostile {
				before := c.tx.State(0).Load()
				if v, _ := c.same(t, name, f); v != cellify.KernelToGo {
					t.Fatalf("%s: sent", name)
				}
				if c.tx.State(0).Load() != before {
					t.Fatalf("%s: slot 0 changed", name)
				}
			}
			// A key that does not match the entry's: to Go.
			c.key(0, cellify.VOQKey{Dst: ctxDst, Port: 1, Class: 0})
			c.same(t, "wrong key", ctxFrame(rng, 60, 0))
			c.key(0, cellify.VOQKey{Dst: ctxDst, Port: 0, Class: 0})
			// An entry past its time: to Go.
			c.dest(t, ctxH1, cellify.KernelDest{Until: MonoNow() - 1, Edge: ctxSelf, Port: 0})
			c.same(t, "expired source", ctxFrame(rng, 60, 0))
			c.dest(t, ctxH1, cellify.KernelDest{Until: MonoNow() + 1e12, Edge: ctxSelf, Port: 0})
			// No route (every link held): declined.
			c.fwd.SetHeld(1<<ctxLinks - 1)
			c.m.Held = 1<<ctxLinks - 1
			c.same(t, "held", ctxFrame(rng, 60, 0))
			if c.tx.State(0).Load()&cellify.KernelOwned != 0 {
				t.Fatal("no route: the VOQ stayed the kernel's")
			}
			c.fwd.SetHeld(0)
			c.m.Held = 0
			// Above the VOQ's rate bound (a cell a second, no burst):
			// the first cell goes, the second finds the VOQ busy.
			c.give(0, 1<<20, 9, 9)
			c.tx.SetVOQRate(1e9, 0)
			c.m.SetEdge(cellify.KernelEdge{Self: ctxSelf, Hops: ctxHops, Host: 0, Epoch: ctxEpoch, MaxPayload: ctxMaxPl, VOQNs: 1e9})
			if v, _ := c.same(t, "rate, first", ctxFrame(rng, 60, 0)); v != cellify.KernelSent {
				t.Fatal("rate bound: the first cell did not go")
			}
			if v, _ := c.same(t, "rate, second", ctxFrame(rng, 60, 0)); v != cellify.KernelToGo || c.tx.Counters().Busy != 1 {
				t.Fatalf("rate bound: the second cell went (%+v)", c.tx.Counters())
			}
			c.tx.SetVOQRate(0, 0)
			c.m.SetEdge(cellify.KernelEdge{Self: ctxSelf, Hops: ctxHops, Host: 0, Epoch: ctxEpoch, MaxPayload: ctxMaxPl})
			// A frame passed to Go not yet taken in: declined.
			c.give(0, 1<<20, 9, 9)
			c.lg.ToGo().Add(1)
			c.m.ToGo.Add(1)
			ret, _ := runCtx(t, c.p, ctxFrame(rng, 60, 0))
			v, _, _ := c.m.Offer(ctxFrame(rng, 60, 0), 0)
			if ret != xdpPass || v != cellify.KernelToGo || c.tx.Counters().Unread != 1 || c.m.C.Unread != 1 {
				t.Fatalf("unread: kernel %d model %d, %+v", ret, v, c.tx.Counters())
			}
			if c.tx.State(0).Load() != c.m.State(0).Load() {
				t.Fatal("unread: the words differ")
			}
		})
	}
}

// The low mark: the cell that takes the room from the mark or more to
// below it wakes the worker, once (a record on lg_tx_wake: the fd polls
// readable, DrainWake finds it); cells below the mark, or on a VOQ without
// one, do not; a hand-back with the mark again arms it again.
func TestCellTxLowWakes(t *testing.T) {
	c := loadCellTx(t, linkcrc.Off)
	rng := rand.New(rand.NewPCG(3, 4))
	c.lg.DrainWake()
	readable := func() bool {
		fds := []unix.PollFd{{Fd: int32(c.lg.WakeFD()), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	low := uint32(500)
	setLow := func(l uint32) {
		c.tx.SetLow(0, l)
		c.m.SetLow(0, l)
	}
	// 63 bytes a record (60 + 3): from 700, the fourth cell takes the
	// room from 511 to 448, below 500.
	setLow(low)
	c.give(0, 700, 1, 1)
	for i := range 6 {
		if v, _ := c.same(t, fmt.Sprintf("cell %d", i), ctxFrame(rng, 60, 0)); v != cellify.KernelSent {
			t.Fatalf("cell %d not sent", i)
		}
		w := c.tx.Counters().Wakeups
		if want := uint64(0); i >= 3 {
			if want = 1; w != want || !readable() {
				t.Fatalf("after cell %d: %d wakeups, readable %v; want 1, readable", i, w, readable())
			}
		} else if w != want || readable() {
			t.Fatalf("after cell %d: %d wakeups, readable %v; want none", i, w, readable())
		}
	}
	if !c.lg.DrainWake() || readable() {
		t.Fatal("DrainWake: no record, or the fd still readable")
	}
	// Handed back with the mark again: armed again; without one: never.
	c.give(0, 560, 9, 9)
	c.same(t, "armed again", ctxFrame(rng, 60, 0))
	if w := c.tx.Counters().Wakeups; w != 2 || !c.lg.DrainWake() {
		t.Fatalf("handed back at 560 with the mark: %d wakeups, want 2", w)
	}
	setLow(0)
	c.give(0, 200, 20, 20)
	for i := range 3 {
		c.same(t, fmt.Sprintf("no mark %d", i), ctxFrame(rng, 60, 0))
	}
	if w := c.tx.Counters().Wakeups; w != 2 || readable() {
		t.Fatalf("no mark: %d wakeups, want still 2", w)
	}
}

// Go and the kernel race for a VOQ: Go claims it, cuts cells of its own
// from the seq it found, and hands it back, again and again, while the
// kernel sends; in between Go raises the room it gave (grants). No seq is taken twice, none is skipped, the record
// numbers follow the seqs, and the credit given is never exceeded.
func TestCellTxRaceWithGo(t *testing.T) {
	c := loadCellTx(t, linkcrc.Off)
	st, base := c.tx.State(0), c.tx.Base(0)
	const room = 1 << 20
	st.Store(cellify.KernelWord(false, 0, 0))
	var stop atomic.Bool
	goRec := map[uint32]uint16{} // Go's cells: seq -> record number
	var given, spent uint64      // credit handed to the kernel, and what it used of it
	var raises int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // Go's side
		defer wg.Done()
		rng := rand.New(rand.NewPCG(5, 6))
		seq, rec := uint32(0), uint16(0)
		for !stop.Load() {
			base.Store(cellify.KernelBase(seq, rec))
			st.Store(cellify.KernelWord(true, room, seq))
			given += room
			have := uint64(room)
			for range rng.IntN(4) {
				for range rng.IntN(2000) {
				}
				// A grant while the kernel keeps the VOQ: more room
				// by CAS from an owned word (cellify's raise).
				d := uint64(1 + rng.IntN(4096))
				for {
					w := st.Load()
					if w&cellify.KernelOwned == 0 {
						break
					}
					if st.CompareAndSwap(w, w+d<<cellify.KernelRoomShift) {
						have += d
						given += d
						raises++
						break
					}
				}
			}
			var w uint64
			for {
				w = st.Load()
				if w&cellify.KernelOwned == 0 || st.CompareAndSwap(w, w&^cellify.KernelOwned) {
					break
				}
			}
			spent += have - (w >> cellify.KernelRoomShift & cellify.KernelRoomMax)
			rec += uint16(uint32(w) - seq) // the kernel's cells, one record each
			seq = uint32(w)
			for range rng.IntN(3) { // Go's own cells, packed: two records each
				goRec[seq] = rec
				seq++
				rec += 2
			}
		}
		st.Store(cellify.KernelWord(false, 0, seq))
	}()
	pinCPU(t)
	rng := rand.New(rand.NewPCG(7, 8))
	kRec := map[uint32]uint16{}
	var kBytes uint64
	for range 20000 {
		f := ctxFrame(rng, 60+rng.IntN(200), 0)
		ret, out := runCtx(t, c.p, f)
		if ret != xdpRedirect {
			continue
		}
		h, err := cellify.ParseCell(out[:cellify.CellPayloadOffset+len(f)+3])
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := kRec[h.Seq]; ok {
			t.Fatalf("the kernel took seq %d twice", h.Seq)
		}
		kRec[h.Seq] = h.RecNo
		kBytes += uint64(h.Len)
	}
	stop.Store(true)
	wg.Wait()
	checkStream(t, kRec, goRec, uint32(st.Load()))
	if spent != kBytes || spent > given {
		t.Fatalf("the kernel sent %d bytes, the words say %d of %d given", kBytes, spent, given)
	}
	t.Logf("%d kernel cells, %d Go cells, %d raises", len(kRec), len(goRec), raises)
}

// checkStream checks the cells of one VOQ, the kernel's and Go's (seq ->
// record number; Go's hold two records, the kernel's one): every seq below
// end taken exactly once, and each cell's record number its predecessor's
// plus the records that one held.
func checkStream(t *testing.T, kRec, goRec map[uint32]uint16, end uint32) {
	t.Helper()
	if len(kRec) == 0 || len(goRec) == 0 {
		t.Fatalf("no race: %d kernel cells, %d Go cells", len(kRec), len(goRec))
	}
	var rec uint16
	for s := range end {
		k, kok := kRec[s]
		g, gok := goRec[s]
		switch {
		case kok && gok:
			t.Fatalf("seq %d taken by the kernel and by Go", s)
		case !kok && !gok:
			t.Fatalf("seq %d taken by no one: a hole", s)
		case kok && k != rec, gok && g != rec:
			t.Fatalf("seq %d (kernel %v) carries record number %d, want %d", s, kok, k+g, rec)
		}
		rec++
		if gok {
			rec++
		}
	}
	if uint32(len(kRec)+len(goRec)) != end {
		t.Fatalf("%d cells, the stream is at %d", len(kRec)+len(goRec), end)
	}
}
