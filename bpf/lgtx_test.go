package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

// LinkGuardian's send fast path (lf_lg_tx), run with BPF_PROG_TEST_RUN
// against linkguardian.FastSend.Offer, the Go model of the same rule.

const lgTxTestSlots = 16

// loadLGTxRing loads the port program (not attached) with a send fast
// path ring of slots slots, closed when the test ends.
func loadLGTxRing(t *testing.T, slots int) *PortProgram {
	t.Helper()
	needRoot(t)
	prepare()
	spec, err := loadPort()
	if err != nil {
		t.Fatal(err)
	}
	copts, err := lgTxSpec(spec, PortOptions{LGTxSlots: slots})
	if err != nil {
		t.Fatal(err)
	}
	p := &PortProgram{ifname: "test-run"}
	if err := spec.LoadAndAssign(&p.objs, copts); err != nil {
		t.Fatal(loadErr("port", err))
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// loadLGTx loads the port program (not attached) as a host port with a
// forward port (the loopback), lg_tx on and a small ring, and maps LGTx
// and the lg_rx it reads the ACK from.
func loadLGTx(t *testing.T) (*PortProgram, *LGTx, *LGRx) {
	t.Helper()
	p := loadLGTxRing(t, lgTxTestSlots)
	if err := p.changeConf("host", func(c *portPortConf) { c.Role = roleHost }); err != nil {
		t.Fatal(err)
	}
	tx := fastOn(t, p, p.SetLGTx, p.LGTx)
	if tx.Slots() != lgTxTestSlots || len(tx.Ring()) != lgTxTestSlots*LGTxSlotSize {
		t.Fatalf("ring of %d slots, %d bytes", tx.Slots(), len(tx.Ring()))
	}
	rx, err := p.LGRx()
	if err != nil {
		t.Fatal(err)
	}
	return p, tx, rx
}

// hostFrame is a host frame of n bytes with EtherType et.
func lgHostFrame(rng *rand.Rand, n int, et uint16) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], et)
	return f
}

// stamped is what the kernel must send: seqhdr.Insert of host with Seq q
// and the ACK, sealed with m.Seal unless m is linkcrc.Off.
func stamped(t testing.TB, host []byte, q seqhdr.Seq, hasAck bool, ack seqhdr.Seq, m linkcrc.Integrity) []byte {
	t.Helper()
	if !hasAck {
		ack = 0
	}
	buf := make([]byte, seqhdr.MaxOverhead+len(host)+linkcrc.TrailerLen)
	copy(buf[seqhdr.MaxOverhead:], host)
	h := seqhdr.Header{Type: seqhdr.TypeData, Seq: q, HasAck: hasAck, Ack: ack}
	off, n, err := seqhdr.Insert(buf, seqhdr.MaxOverhead, len(host), &h)
	if err != nil {
		t.Fatal(err)
	}
	if m == linkcrc.Off {
		return buf[off : off+n]
	}
	n, ok := m.Seal(buf[off:], n)
	if !ok {
		t.Fatal("seal")
	}
	return buf[off : off+n]
}

func TestLGTxSends(t *testing.T) {
	p, tx, rx := loadLGTx(t)
	if err := p.SetLGTxAck(true); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rx.Point().Store(owned(uint64(seqhdr.MakeSeq(7, true))))
	tx.Credit().Store(20) // base 0: the lead bound is far
	tx.Limit().Store(LGLimitValid | 20)
	tx.State().Store(LGOwned | 5)
	tx.WantWake().Store(1)
	host := lgHostFrame(rng, 100, 0x0800)
	ret, out := runLG(t, p, host)
	if ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	ack := seqhdr.MakeSeq(6, true)
	if want := stamped(t, host, 5, true, ack, linkcrc.Off); !bytes.Equal(out, want) {
		t.Errorf("sent\n%x\nwant seqhdr.Insert's\n%x", out, want)
	}
	if got := tx.State().Load(); got != LGOwned|6 {
		t.Errorf("state %#x, want %#x", got, uint64(LGOwned|6))
	}
	slot := tx.Ring()[5*LGTxSlotSize:]
	if l := binary.LittleEndian.Uint16(slot); int(l) != len(host) || !bytes.Equal(slot[2:2+l], host) {
		t.Errorf("slot 5 holds %d bytes, not the host frame", l)
	}
	c := tx.Counters()
	if c.Sent != 1 || c.Bytes != 100 || c.Wakeups != 1 || c.Declined != 0 || c.Missed != 0 || c.StampErr != 0 || c.WakeErr != 0 {
		t.Errorf("counters %+v", c)
	}
	if tx.PiggyAck().Load() != linkguardian.FastAckValid|uint64(ack) || tx.LastNs().Load() == 0 || tx.WantWake().Load() != 0 {
		t.Errorf("piggy_ack %#x, last_ns %d, want_wake %d", tx.PiggyAck().Load(), tx.LastNs().Load(), tx.WantWake().Load())
	}
	if !tx.DrainWake() || tx.DrainWake() {
		t.Error("the wake ring buffer: want one record, then none")
	}

	// Paused: sending goes to Go with the frame, untouched.
	tx.Limit().Store(LGLimitValid | LGPaused | 20)
	if ret, out := runLG(t, p, host); ret != xdpPass || !bytes.Equal(out, host) {
		t.Errorf("paused: verdict %d, changed %v", ret, !bytes.Equal(out, host))
	}
	if got := tx.State().Load(); got != 6 || tx.Counters().Declined != 1 {
		t.Errorf("paused: state %#x, declined %d", got, tx.Counters().Declined)
	}
	// Not owned: nothing moves.
	tx.Limit().Store(LGLimitValid | 20)
	if ret, _ := runLG(t, p, host); ret != xdpPass || tx.State().Load() != 6 || tx.Counters().Declined != 1 {
		t.Errorf("not owned: verdict %d, state %#x", ret, tx.State().Load())
	}
	// Off: nothing moves.
	tx.State().Store(LGOwned | 6)
	if err := p.SetLGTx(false); err != nil {
		t.Fatal(err)
	}
	if ret, _ := runLG(t, p, host); ret != xdpPass || tx.State().Load() != LGOwned|6 {
		t.Errorf("lg_tx off: verdict %d, state %#x", ret, tx.State().Load())
	}
}

func TestLGTxRandomFrames(t *testing.T) {
	for _, m := range []linkcrc.Integrity{linkcrc.Off, linkcrc.CRC32C, linkcrc.Csum} {
		for _, ack := range []bool{false, true} {
			name := "integrity=" + m.String() + map[bool]string{false: ",ack=off", true: ",ack=on"}[ack]
			t.Run(name, func(t *testing.T) { testLGTxRandomFrames(t, m, ack) })
		}
	}
}

func testLGTxRandomFrames(t *testing.T, m linkcrc.Integrity, withAck bool) {
	p, tx, rx := loadLGTx(t)
	if err := p.SetLGRxIntegrity(m); err != nil {
		t.Fatal(err)
	}
	if err := p.SetLGTxAck(withAck); err != nil {
		t.Fatal(err)
	}
	fs, err := linkguardian.NewFastSend(lgTxTestSlots, LGTxSlotSize)
	if err != nil {
		t.Fatal(err)
	}
	fp := linkguardian.NewFastPoint()
	rng := rand.New(rand.NewPCG(5, 6))
	var sent, declined, widened uint64
	for i := 0; i < 20000; i++ {
		// A random state, limit and receive point, the same for both.
		q := seqhdr.Seq(LGSeqMask - 50 + rng.IntN(100)).Add(0)
		state := uint64(q)
		if rng.IntN(5) != 0 {
			state |= LGOwned
		}
		lim := uint64(q.Add(rng.IntN(20) - 4))
		switch rng.IntN(10) {
		case 0:
		case 1:
			lim |= LGLimitValid | LGPaused
		default:
			lim |= LGLimitValid
		}
		point := uint64(rng.Uint32() & LGSeqMask)
		if rng.IntN(5) != 0 {
			point |= LGOwned
		}
		if rng.IntN(3) != 0 { // Wake set
			point |= linkguardian.FastWakeOn | uint64(rng.Uint32()&LGSeqMask)<<linkguardian.FastWakeShift
		}
		// The same words for the kernel and the model. A credit and an
		// ACK the link port read, mostly around q, so that the window an
		// unapplied ACK opens is tried at its edges.
		// Credits around the lead bound too (base = Limit − Credit):
		// the kernel assigns q only while q − base < FastLead.
		credit := uint64([]int{1, 8, 20, 20, linkguardian.FastLead - 8, linkguardian.FastLead + 8}[rng.IntN(6)])
		peer := uint64(q.Add(rng.IntN(30)-25)) | uint64(rng.IntN(6)/5^1)<<63
		for _, w := range []struct {
			k, m *atomic.Uint64
			v    uint64
		}{
			{tx.State(), fs.State, state}, {tx.Limit(), fs.Limit, lim},
			{tx.WantWake(), fs.WantWake, uint64(rng.IntN(2))}, {rx.Point(), fp.Point, point},
			{tx.Credit(), fs.Credit, credit}, {rx.PeerAck(), fp.PeerAck, peer},
			{rx.AckEvery(), fp.AckEvery, uint64([]int{0, 1, 16}[rng.IntN(3)])},
		} {
			w.k.Store(w.v)
			w.m.Store(w.v)
		}
		// Go has taken in every frame passed on (most of the time), or is
		// one behind. No socket here: the kernel's to_go does not move.
		toGo := rng.Uint64()
		taken := toGo - uint64(rng.IntN(8)/7)
		tx.ToGo().Store(toGo)
		fs.ToGo.Store(toGo)
		tx.Consumed().Store(taken)
		fs.Consumed.Store(taken)

		var n int
		switch rng.IntN(10) {
		case 0:
			n = 14 + rng.IntN(4)
		case 1:
			n = LGTxSlotSize - 4 + rng.IntN(8) // around the slot's limit
		default:
			n = 14 + rng.IntN(1500)
		}
		et := []uint16{0x0800, 0x86DD, 0x0806, uint16(rng.Uint32())}[rng.IntN(4)]
		if et == seqhdr.EtherType || et == 0x8808 || et == 0x8100 || et == 0x88A8 {
			et = 0x0800 // the control stage drops those first (control_test.go)
		}
		host := lgHostFrame(rng, n, et)

		fsw := fs.Wakeups.Load()
		kw := tx.Counters()
		var mrx *linkguardian.FastPoint
		if withAck {
			mrx = fp
		}
		mq, ack, ok := fs.Offer(host, mrx, 1)
		ret, out := runLG(t, p, host)
		if ok != (ret == xdpRedirect) {
			t.Fatalf("frame %d (%d bytes, state %#x, limit %#x): Offer %v, kernel verdict %d", i, n, state, lim, ok, ret)
		}
		if g, w := tx.State().Load(), fs.State.Load(); g != w {
			t.Fatalf("frame %d: kernel state %#x, Offer's %#x", i, g, w)
		}
		kc := tx.Counters()
		if kc.Declined-kw.Declined != boolU(fs.Declined.Load() != declined) {
			t.Fatalf("frame %d: declined moved by %d", i, kc.Declined-kw.Declined)
		}
		declined = fs.Declined.Load()
		if (kc.Wakeups - kw.Wakeups) != fs.Wakeups.Load()-fsw {
			t.Fatalf("frame %d: kernel woke %d times, Offer %d", i, kc.Wakeups-kw.Wakeups, fs.Wakeups.Load()-fsw)
		}
		if kc.Wakeups != kw.Wakeups && !tx.DrainWake() {
			t.Fatalf("frame %d: woken without a record", i)
		}
		if g, w := tx.WantWake().Load(), fs.WantWake.Load(); g != w {
			t.Fatalf("frame %d: want_wake %d, Offer's %d", i, g, w)
		}
		if !ok {
			if !bytes.Equal(out, host) {
				t.Fatalf("frame %d: passed on changed", i)
			}
			continue
		}
		sent++
		if lim&LGLimitValid != 0 && !seqhdr.Less(q, seqhdr.Seq(lim&LGSeqMask)) {
			widened++
		}
		if mq != q {
			t.Fatalf("frame %d: Offer numbered %#x, want %#x", i, mq, q)
		}
		if w := stamped(t, host, q, withAck, ack, m); !bytes.Equal(out, w) {
			t.Fatalf("frame %d: sent\n%x\nwant\n%x", i, out, w)
		}
		kf := tx.Ring()[int(uint32(q)&(lgTxTestSlots-1))*LGTxSlotSize:][:LGTxSlotSize]
		if l := binary.LittleEndian.Uint16(kf); int(l) != n || !bytes.Equal(kf[2:2+n], host) || !bytes.Equal(fs.Frame(q), host) {
			t.Fatalf("frame %d: slot holds %d bytes, not the host frame", i, l)
		}
		if withAck && tx.PiggyAck().Load() != fs.PiggyAck.Load() {
			t.Fatalf("frame %d: piggy_ack %#x, Offer's %#x", i, tx.PiggyAck().Load(), fs.PiggyAck.Load())
		}
		if g, w := rx.Point().Load(), fp.Point.Load(); g != w {
			t.Fatalf("frame %d: lg_rx point %#x, Offer's %#x (Wake moved %d times, Offer %d)", i, g, w, tx.Counters().WakeMoves, fs.WakeMoves.Load())
		}
	}
	c := tx.Counters()
	if c.Sent != sent || c.Sent != fs.Sent.Load() || c.Declined != fs.Declined.Load() || c.Missed != 0 || c.StampErr != 0 || c.WakeErr != 0 || c.WakeMoves != fs.WakeMoves.Load() || c.Widened != widened || c.Widened != fs.Widened.Load() ||
		c.DeclinedWindow != fs.DeclinedWindow.Load() || c.DeclinedUnread != fs.DeclinedUnread.Load() || c.DeclinedWindow == 0 || c.DeclinedUnread == 0 {
		t.Errorf("counters %+v; Offer sent %d, declined %d, moved Wake %d", c, fs.Sent.Load(), fs.Declined.Load(), fs.WakeMoves.Load())
	}
	if sent < 5000 || c.Declined < 1000 || withAck && (widened < 200 || c.WakeMoves < 500) {
		t.Errorf("sent %d (%d past Limit on an ACK), declined %d, Wake moved %d: the random states cover too little", sent, widened, c.Declined, c.WakeMoves)
	}
	t.Logf("%d sent (%d past Limit on an ACK), %d declined, Wake moved %d times", sent, widened, c.Declined, c.WakeMoves)
}

func boolU(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// TestPageFirstSlots: the slots prefaultLGTxRing writes reach every page of
// the ring, each slot in the list reaching a page the earlier ones did not.
func TestPageFirstSlots(t *testing.T) {
	for _, c := range []struct{ slots, size, page int }{
		{4096, 2048, 4096}, {2, 2048, 4096}, {16, 4096, 4096}, {64, 3000, 4096}, {8, 10000, 4096}, {1, 2048, 4096},
	} {
		got := pageFirstSlots(c.slots, c.size, c.page)
		pages := (c.slots*c.size + c.page - 1) / c.page
		reached := make([]bool, pages)
		for _, i := range got {
			first, last := i*c.size/c.page, ((i+1)*c.size-1)/c.page
			fresh := false
			for pg := first; pg <= last; pg++ {
				fresh = fresh || !reached[pg]
				reached[pg] = true
			}
			if !fresh {
				t.Errorf("%+v: slot %d reaches no page the earlier slots did not", c, i)
			}
		}
		for pg, ok := range reached {
			if !ok {
				t.Errorf("%+v: page %d of %d not reached by slots %v", c, pg, pages, got)
			}
		}
	}
}

// TestLGTxPrefault writes the pages of a full-size copy ring through the
// kernel's mapping and finds the ring as the load made it: all zero.
func TestLGTxPrefault(t *testing.T) {
	const slots = 4096
	p := loadLGTxRing(t, slots)
	if err := prefaultLGTxRing(p.objs.LgTxRing); err != nil {
		t.Fatal(err)
	}
	tx, err := p.LGTx()
	if err != nil {
		t.Fatal(err)
	}
	if len(tx.Ring()) != slots*LGTxSlotSize {
		t.Fatalf("ring of %d bytes, want %d", len(tx.Ring()), slots*LGTxSlotSize)
	}
	if i := bytes.IndexFunc(tx.Ring(), func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("ring byte %d is not zero after the prefault", i)
	}
}
