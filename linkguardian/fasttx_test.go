package linkguardian_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// runFastSuite runs the simulated-link suite with the fast path halves
// set, and returns the links it built.
func runFastSuite(t *testing.T, rx, tx bool) []*lgsim.Sim {
	var sims []*lgsim.Sim
	simFast, simFastSend, simRecord = rx, tx, &sims
	defer func() { simFast, simFastSend, simRecord = false, false, nil }()
	for _, tc := range suiteOnFastPath {
		t.Run(tc.name, tc.f)
	}
	return sims
}

// sendTotals sums what the senders and the kernel's send path did.
func sendTotals(sims []*lgsim.Sim) (kernel, sent, claims, handoffs uint64) {
	for _, s := range sims {
		for _, side := range []lgsim.Side{lgsim.A, lgsim.B} {
			kernel += uint64(s.FastSent(side))
			if p := s.Port(side); p.S != nil {
				sent += p.S.Stats.DataSent
				claims += p.S.Stats.FastSendClaims
				handoffs += p.S.Stats.FastSendHandOffs
			}
		}
	}
	return
}

// TestFastSendSuite runs the simulated-link suite with the kernel's send
// path (the model of the host port's XDP program, FastSend.Offer) at both
// senders, the core FastLag behind it: the kernel numbers most frames, the
// core takes sending back where credit, a pause or a reset needs it, and
// every scenario delivers what it did without the fast path.
func TestFastSendSuite(t *testing.T) {
	sims := runFastSuite(t, false, true)
	kernel, sent, claims, handoffs := sendTotals(sims)
	t.Logf("kernel sent %d of %d data frames; %d claims, %d hand-offs", kernel, sent, claims, handoffs)
	if kernel < sent/2 || claims < 50 || handoffs < claims {
		t.Errorf("kernel sent %d of %d, %d claims, %d hand-offs: the suite does not exercise the send fast path", kernel, sent, claims, handoffs)
	}
}

// TestFastBothSuite runs it with both halves of the fast path on, the core
// looking at the send state every fastWakeEvery while idle instead of being
// woken by the kernel (the dataplane's way).
func TestFastBothSuite(t *testing.T) {
	simFastWakeEvery = fastWakeEvery
	defer func() { simFastWakeEvery = 0 }()
	sims := runFastSuite(t, true, true)
	kernel, sent, _, _ := sendTotals(sims)
	var delivered int
	for _, s := range sims {
		delivered += s.FastDelivered(lgsim.A) + s.FastDelivered(lgsim.B)
	}
	// The kernel's send path moves Wake on the ACKs it piggybacks (and may
	// widen Limit on ACKs the receive path read); the core never finds a
	// kernel frame past its TX buffer that PeerAck does not cover.
	var widened, moves, overrun uint64
	for _, s := range sims {
		for _, side := range []lgsim.Side{lgsim.A, lgsim.B} {
			if fs := s.FastSendState(side); fs != nil {
				widened += fs.Widened.Load()
				moves += fs.WakeMoves.Load()
			}
			if p := s.Port(side); p.S != nil {
				overrun += p.S.Stats.FastOverrun
			}
		}
	}
	t.Logf("kernel sent %d of %d data frames (%d past Limit on an ACK), delivered %d; Wake moved %d times", kernel, sent, widened, delivered, moves)
	// (The suite's links seldom fill the credit window while the core
	// lags: TestFastSendPastLimitOnPeerAck covers that.)
	if kernel < sent/2 || delivered < int(sent/8) || moves == 0 {
		t.Errorf("kernel sent %d (%d past Limit) and delivered %d of %d, Wake moved %d times: the suite does not exercise both halves", kernel, widened, delivered, sent, moves)
	}
	if overrun != 0 {
		t.Errorf("%d kernel frames past the TX buffer with no ACK to cover them", overrun)
	}
}

// fastEnd is an endpoint with the send fast path, driven by hand.
type fastEnd struct {
	p    *linkguardian.Endpoint
	pool *linksim.Pool
	fs   *linkguardian.FastSend
	pt   *linkguardian.FastPoint
	buf  [seqhdr.MinFrameLen]byte
	host []byte
}

// newHandedEnd is newFastEnd with sending handed to the kernel.
func newHandedEnd(t testing.TB, txBuffer int, withR bool) *fastEnd {
	t.Helper()
	e := newFastEnd(t, txBuffer, withR)
	if !e.handOff(0) {
		t.Fatal("no hand-off to the kernel")
	}
	return e
}

func newFastEnd(t testing.TB, txBuffer int, withR bool) *fastEnd {
	t.Helper()
	sc := *senderCfg(1)
	sc.TxBuffer = txBuffer
	cfg := linkguardian.Config{Sender: &sc}
	if withR {
		cfg.Receiver = receiverCfg(linkguardian.InOrder)
	}
	pool := linksim.NewPool(4096, 2048, 256)
	p := newEndpoint(t, cfg, pool)
	fs, err := linkguardian.NewFastSend(txBuffer, linkguardian.FastSlotHeader+1514)
	if err != nil {
		t.Fatal(err)
	}
	e := &fastEnd{p: p, pool: pool, fs: fs, host: make([]byte, 1514)}
	if withR {
		e.pt = linkguardian.NewFastPoint()
		p.SetFast(e.pt)
	}
	if err := p.SetFastSend(fs); err != nil {
		t.Fatal(err)
	}
	return e
}

// hostFrame returns host frame id (n bytes, IPv4 EtherType).
func (e *fastEnd) hostFrame(id, n int) []byte {
	b := e.host[:n]
	for i := range b {
		b[i] = byte(i*31 + id*7)
	}
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	return b
}

// kernel offers host frame id to the kernel's send path with the ACK the
// C program would piggyback.
func (e *fastEnd) kernel(now int64, id int) (seqhdr.Seq, bool) {
	q, _, ok := e.fs.Offer(e.hostFrame(id, 100+id%50), e.pt, now)
	return q, ok
}

// handOff is the integrator's hand-off: the core took in every frame the
// kernel passed on (Consumed = ToGo), then HandOffSend.
func (e *fastEnd) handOff(now int64) bool {
	e.fs.Consumed.Store(e.fs.ToGo.Load())
	return e.p.HandOffSend(now, true)
}

// rx hands the endpoint a control frame from the peer.
func (e *fastEnd) rx(now int64, h *seqhdr.Header) {
	var z [6]byte
	n, err := seqhdr.PutControl(e.buf[:], &z, &z, h)
	if err != nil {
		panic(err)
	}
	a, _ := e.pool.Alloc(n)
	copy(e.pool.Bytes(a, n), e.buf[:n])
	e.p.Receive(now, link.Frame{H: a, Len: n})
}

// release frees what the iteration released, checking that no frame is
// freed twice.
func (e *fastEnd) release(t testing.TB) {
	for _, f := range e.p.Out.Free {
		e.pool.Free(f.H)
	}
	e.p.Out.Reset()
	if errs := e.pool.Errors(); len(errs) > 0 {
		t.Fatalf("ownership errors: %v", errs)
	}
}

// releaseAll releases what the iteration released and checks that no
// buffer is left in use.
func (e *fastEnd) releaseAll(t testing.TB) {
	e.release(t)
	if e.pool.InUse() != 0 {
		t.Fatalf("%d buffers leaked", e.pool.InUse())
	}
}

// TestFastSendRetxOfKernelFrame: a loss notification for frames the kernel
// sent is answered with copies materialized from its ring: byte for byte
// the host frames after Strip, under their sequence numbers, Retx and a
// fresh ACK, in Out.Retx and once in Out.Free; the ACK then releases the
// kernel slots without freeing anything of theirs.
func TestFastSendRetxOfKernelFrame(t *testing.T) {
	e := newHandedEnd(t, 64, true)
	p := e.p
	for id := range 10 {
		if q, ok := e.kernel(int64(id), id); !ok || q != seqhdr.Seq(id) {
			t.Fatalf("kernel send %d: %v %v", id, q, ok)
		}
	}
	e.rx(100, &seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 3, Count: 2, Latest: 9, HasAck: true, Ack: 2})
	if st := p.S.Stats; st.FastSent != 10 || st.DataSent != 10 || st.Acked != 3 || p.S.Outstanding() != 7 || !p.S.FastSendOwned() {
		t.Fatalf("after the notification: %+v, outstanding %d", st, p.S.Outstanding())
	}
	if len(p.Out.Retx) != 2 {
		t.Fatalf("%d copies, want 2", len(p.Out.Retx))
	}
	for i, f := range p.Out.Retx {
		b := append([]byte(nil), e.pool.Bytes(f.H, f.Len)...)
		h, off, n, err := seqhdr.Strip(b, 0, len(b))
		if err != nil {
			t.Fatal(err)
		}
		id := 3 + i
		if h.Seq != seqhdr.Seq(id) || !h.Retx || !h.HasAck {
			t.Fatalf("copy %d header %+v", i, h)
		}
		if want := e.hostFrame(id, 100+id%50); !bytes.Equal(b[off:off+n], want) {
			t.Fatalf("copy of frame %d differs from the host frame", id)
		}
	}
	free := map[link.Handle]int{}
	for _, f := range p.Out.Free {
		free[f.H]++
	}
	for _, f := range p.Out.Retx {
		if free[f.H] != 1 {
			t.Fatalf("copy %#x is in Out.Free %d times, want once", f.H, free[f.H])
		}
	}
	if len(p.Out.Free) != 3 { // the notification frame and the two copies
		t.Fatalf("%d frames freed, want 3", len(p.Out.Free))
	}
	e.release(t)
	// The same notification within the holdoff is a duplicate.
	e.rx(101, &seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 3, Count: 2, Latest: 9})
	if len(p.Out.Retx) != 0 || p.S.Stats.RetxSuppressed != 2 {
		t.Fatalf("duplicate notification answered: %d copies, %+v", len(p.Out.Retx), p.S.Stats)
	}
	e.release(t)
	// A notification beyond what the kernel sent is invalid.
	e.rx(102, &seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 9, Count: 2, Latest: 10})
	if len(p.Out.Retx) != 0 || p.S.Stats.LossInvalid != 1 {
		t.Fatalf("a notification beyond next was answered: %+v", p.S.Stats)
	}
	e.release(t)
	e.rx(200, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 9})
	if p.S.Outstanding() != 0 || len(p.Out.Free) != 1 {
		t.Fatalf("after the ACK: outstanding %d, %d freed (want only the ACK frame)", p.S.Outstanding(), len(p.Out.Free))
	}
	e.releaseAll(t)
}

// TestFastSendResetAndResyncKeepKernelSlots: Reset and a resync claim
// sending and release only the core's own frames.
func TestFastSendResetAndResyncKeepKernelSlots(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	send := func(now int64) {
		a, _ := e.pool.Alloc(100)
		copy(e.pool.Bytes(a, 100), e.hostFrame(0, 100))
		if !p.Send(now, link.Frame{H: a, Len: 100}) {
			t.Fatal("send refused")
		}
	}
	e.handOff(0)
	e.kernel(1, 1)
	e.kernel(2, 2)
	send(3) // claims: serial 2
	if p.S.FastSendOwned() || p.S.Next() != 3 || p.S.Stats.FastSendClaims != 1 {
		t.Fatalf("send did not claim: owned %v next %v %+v", p.S.FastSendOwned(), p.S.Next(), p.S.Stats)
	}
	if _, ok := e.kernel(4, 4); ok {
		t.Fatal("the kernel sent while the core holds sending")
	}
	e.release(t)
	e.handOff(5)
	e.kernel(6, 6)
	if tx := p.TxNext(); tx != 4 || p.S.FastSendOwned() {
		t.Fatalf("TxNext %v (want 4) without claiming", tx)
	}
	p.Reset(7, 100, 0)
	if len(p.Out.Free) != 1 {
		t.Fatalf("reset freed %d frames, want 1 (the core's own)", len(p.Out.Free))
	}
	e.release(t)
	if v := e.fs.State.Load(); v != 100 {
		t.Fatalf("State after reset %#x, want {not owned, 100}", v)
	}
	e.handOff(8)
	e.kernel(9, 9)
	send(10)
	e.release(t)
	// Three ACKs beyond next: resync gives everything up.
	e.handOff(11)
	e.kernel(12, 12)
	for i := range 3 {
		e.rx(int64(13+i), &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 500})
	}
	if p.S.Stats.Resyncs != 1 || p.S.FastSendOwned() || p.S.Next() != 501 || e.fs.State.Load() != 501 {
		t.Fatalf("resync: %+v owned %v next %v state %#x", p.S.Stats, p.S.FastSendOwned(), p.S.Next(), e.fs.State.Load())
	}
	if len(p.Out.Free) != 4 { // three ACK frames and the core's frame 101
		t.Fatalf("resync freed %d frames, want 4", len(p.Out.Free))
	}
	e.releaseAll(t)
}

// TestFastSendCreditAndPause: the kernel sends only inside the credit
// window Go publishes; a full window, and a pause, give sending to Go;
// Limit never goes down while the kernel owns sending.
func TestFastSendCreditAndPause(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	p.S.SetCredit(4)
	e.handOff(0)
	for id := range 4 {
		if _, ok := e.kernel(1, id); !ok {
			t.Fatalf("frame %d inside the window refused", id)
		}
	}
	if _, ok := e.kernel(2, 4); ok || e.fs.State.Load()&linkguardian.FastOwned != 0 || e.fs.Declined.Load() != 1 {
		t.Fatalf("the kernel sent beyond the window or kept sending: state %#x", e.fs.State.Load())
	}
	if e.handOff(3) {
		t.Fatal("hand-off with the window full")
	}
	e.rx(4, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 1})
	if lim := e.fs.Limit.Load(); lim != linkguardian.FastLimitValid|6 {
		t.Fatalf("Limit %#x after ACK 1, want valid|6", lim)
	}
	e.release(t)
	if !e.handOff(5) {
		t.Fatal("no hand-off with room in the window")
	}
	p.Pause(6, 1000)
	if p.S.FastSendOwned() || e.fs.Limit.Load()&linkguardian.FastPaused == 0 {
		t.Fatalf("a pause left sending to the kernel: limit %#x", e.fs.Limit.Load())
	}
	if _, ok := e.kernel(7, 5); ok {
		t.Fatal("the kernel sent during a pause")
	}
	if e.handOff(8) {
		t.Fatal("hand-off during a pause")
	}
	if !e.handOff(1006) || e.fs.Limit.Load()&linkguardian.FastPaused != 0 {
		t.Fatalf("no hand-off after the pause, or Limit still paused: %#x", e.fs.Limit.Load())
	}
	p.S.SetCredit(2) // smaller: claims first
	if p.S.FastSendOwned() || e.fs.Limit.Load() != linkguardian.FastLimitValid|4 {
		t.Fatalf("a smaller credit left sending to the kernel: limit %#x", e.fs.Limit.Load())
	}
	p.Resume(1007)
	p.S.SetCredit(64) // larger: Limit goes up, nothing claimed
	if e.handOff(1008); !p.S.FastSendOwned() {
		t.Fatal("no hand-off")
	}
	p.S.SetCredit(64)
	if !p.S.FastSendOwned() || e.fs.Limit.Load() != linkguardian.FastLimitValid|66 {
		t.Fatalf("raising the credit claimed or Limit %#x", e.fs.Limit.Load())
	}
}

// TestFastSendPastLimitOnPeerAck: with TxBuffer 8 and credit 8 the kernel
// fills the window, then, once its receive path read the peer's ACK of 5
// (PeerAck) that the core has not applied, sends 6 frames more, and on
// ACK 10 five more: past Limit, past base + TxBuffer in the core's ring
// (ACK 10 names a frame beyond the 8 the ring takes in), but inside the
// window the ACK opens. The core applies the ACK as it adopts, as far as
// the frames it took in (none overwritten, nothing counted as overrun),
// and a loss notification for one of them gets its bytes. A stale PeerAck (an ACK
// already applied, or of a frame not sent) opens nothing.
func TestFastSendPastLimitOnPeerAck(t *testing.T) {
	e := newHandedEnd(t, 8, true)
	p := e.p
	for id := range 8 {
		if _, ok := e.kernel(1, id); !ok {
			t.Fatalf("frame %d inside the window refused", id)
		}
	}
	// The peer's ACK of 5 arrives on a frame the kernel delivers.
	e.pt.PeerAck.Store(linkguardian.FastAckValid | 5)
	for id := 8; id < 14; id++ {
		if q, ok := e.kernel(2, id); !ok || q != seqhdr.Seq(id) {
			t.Fatalf("frame %d inside the window ACK 5 opens: %v %v", id, q, ok)
		}
	}
	// Then ACK 10: beyond the 8 frames the core's ring can take in.
	e.pt.PeerAck.Store(linkguardian.FastAckValid | 10)
	for id := 14; id < 19; id++ {
		if q, ok := e.kernel(2, id); !ok || q != seqhdr.Seq(id) {
			t.Fatalf("frame %d inside the window ACK 10 opens: %v %v", id, q, ok)
		}
	}
	if e.fs.Widened.Load() != 11 {
		t.Fatalf("%d frames past Limit, want 11", e.fs.Widened.Load())
	}
	if _, ok := e.kernel(3, 19); ok || e.fs.State.Load()&linkguardian.FastOwned != 0 {
		t.Fatal("the kernel sent past the window ACK 10 opens")
	}
	p.Poll(4, true) // adopts 0..7, applies ACK 10 as far as taken in, and so on
	st := p.S.Stats
	if st.FastSent != 19 || st.Acked != 11 || p.S.Outstanding() != 8 || st.FastOverrun != 0 {
		t.Fatalf("after adoption: %+v, outstanding %d", st, p.S.Outstanding())
	}
	e.release(t)
	e.rx(5, &seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 12, Count: 1, Latest: 13, HasAck: true, Ack: 7})
	if len(p.Out.Retx) != 1 {
		t.Fatalf("%d copies, want 1", len(p.Out.Retx))
	}
	b := append([]byte(nil), e.pool.Bytes(p.Out.Retx[0].H, p.Out.Retx[0].Len)...)
	if h, off, n, err := seqhdr.Strip(b, 0, len(b)); err != nil || h.Seq != 12 || !bytes.Equal(b[off:off+n], e.hostFrame(12, 100+12%50)) {
		t.Fatalf("copy of frame 12: %+v %v", h, err)
	}
	e.release(t)
	// Stale: ACK 10 (applied, base is 19 after ACK 18) opens nothing.
	e.rx(6, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 18})
	e.release(t)
	if !e.handOff(7) {
		t.Fatal("no hand-off after ACK 18")
	}
	for id := 19; id < 27; id++ {
		if _, ok := e.kernel(8, id); !ok {
			t.Fatalf("frame %d inside the window refused", id)
		}
	}
	if _, ok := e.kernel(9, 27); ok {
		t.Fatal("a stale PeerAck opened the window")
	}
	if e.fs.Widened.Load() != 11 {
		t.Fatalf("%d frames past Limit, want 11", e.fs.Widened.Load())
	}
}

// TestFastBothWakeMoves: both halves at both ends, B sending back often:
// B's kernel moves its Wake on the ACKs it piggybacks, so A's data rarely
// needs B's core for an ACK, and both hosts get every frame in order.
func TestFastBothWakeMoves(t *testing.T) {
	both := linkguardian.Config{Sender: senderCfg(1), Receiver: receiverCfg(linkguardian.InOrder)}
	cfg := lgsim.Config{
		A: both, B: both,
		AB:           lgsim.DirConfig{Delay: delay, Rate: rate},
		BA:           lgsim.DirConfig{Delay: delay, Rate: rate},
		PollInterval: 250,
		Fast:         true, FastSend: true, FastLag: fastLag, FastWakeEvery: fastWakeEvery,
	}
	s := newSim(t, cfg)
	for range 50 {
		s.Send(lgsim.A, 100, us/4)
		s.Send(lgsim.B, 100, us/2)
		s.Run(80 * us)
	}
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 5000))
	wantDelivered(t, s, lgsim.A, seqIDs(0, 5000))
	fb := s.FastSendState(lgsim.B)
	rb := s.Port(lgsim.B).R.Stats
	t.Logf("B's Wake moved %d times; B delivered %d of %d in the kernel, %d claims", fb.WakeMoves.Load(), rb.FastDelivered, rb.DataRx, rb.FastClaims)
	if fb.WakeMoves.Load() < 1000 {
		t.Errorf("B's kernel moved Wake %d times: the test does not exercise it", fb.WakeMoves.Load())
	}
}

// TestFastSendCreditOnLink: on a credit-bound link the kernel never sends a
// frame at or beyond the Limit in force, hands sending over whenever the
// window fills and takes it back when the core's queue empties.
func TestFastSendCreditOnLink(t *testing.T) {
	cfg := oneWay(linkguardian.InOrder, 1)
	cfg.FastSend, cfg.FastLag = true, fastLag
	var s *lgsim.Sim
	beyond := 0
	cfg.AB.Rules = []*lgsim.Rule{lgsim.DropIf(math.MaxInt, func(i *lgsim.Info) bool {
		if i.IsData() && !i.Retx {
			lim := s.FastSendState(lgsim.A).Limit.Load()
			if lim&linkguardian.FastLimitValid == 0 || !seqhdr.Less(i.Hdr.Seq, seqhdr.Seq(lim&linkguardian.FastSeqMask)) {
				beyond++
			}
		}
		return false
	})}
	s = newSim(t, cfg)
	s.Port(lgsim.A).S.SetCredit(16)
	for range 50 {
		s.Send(lgsim.A, 100, 0)
		s.Run(30 * us)
	}
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, 5000))
	st := s.Port(lgsim.A).S.Stats
	t.Logf("kernel sent %d of %d; %+v", s.FastSent(lgsim.A), st.DataSent, st)
	if beyond != 0 || st.TxBufPeakFrames > 16 {
		t.Fatalf("%d frames sent at or beyond Limit, TX buffer peak %d (credit 16)", beyond, st.TxBufPeakFrames)
	}
	if fs := s.FastSendState(lgsim.A); fs.Declined.Load() < 40 || st.FastSendClaims < 40 || s.FastSent(lgsim.A) < 500 {
		t.Fatalf("declined %d, claims %d, kernel sent %d: the window should hand sending over every burst", fs.Declined.Load(), st.FastSendClaims, s.FastSent(lgsim.A))
	}
}

// TestFastSendWrapAround: the numbering wraps the serial space twice while
// sending goes back and forth between the kernel and the core.
func TestFastSendWrapAround(t *testing.T) {
	cfg := oneWay(linkguardian.InOrder, 1)
	cfg.FastSend, cfg.FastLag = true, fastLag
	const burst = 200
	n := (2*seqhdr.Space/burst + 2) * burst
	for k := 1000; k < n; k += 40_000 {
		cfg.AB.Rules = append(cfg.AB.Rules, lgsim.DropNthData(k))
	}
	s := newSim(t, cfg)
	s.Port(lgsim.A).S.SetCredit(16)
	for sent := 0; sent < n; sent += burst {
		s.Send(lgsim.A, burst, 0)
		s.Run(80 * us)
	}
	finish(t, s)
	got := s.Delivered(lgsim.B)
	if len(got) != n {
		t.Fatalf("delivered %d of %d", len(got), n)
	}
	for i, id := range got {
		if id != uint64(i) {
			t.Fatalf("delivery %d is frame %d: out of order or duplicated", i, id)
		}
	}
	st := s.Port(lgsim.A).S.Stats
	t.Logf("kernel sent %d of %d; %+v", s.FastSent(lgsim.A), n, st)
	if st.FastSendClaims < uint64(n/burst)-1 || s.FastSent(lgsim.A) < n/16 {
		t.Fatalf("claims %d, kernel sent %d of %d: want a hand-over per burst", st.FastSendClaims, s.FastSent(lgsim.A), n)
	}
}

// TestFastSendTailLossFoundByDummy: the kernel sends frames at a low rate
// while the core sleeps; the last frame of a burst is lost. The core, woken
// by the kernel (WantWake) and running the dummy timer from LastNs, finds
// it with a dummy within DummyWaitMax and retransmits it from the ring.
func TestFastSendTailLossFoundByDummy(t *testing.T) {
	cfg := softwareLink(false)
	cfg.FastSend, cfg.FastLag = true, fastLag
	s := tailLossKernel(t, cfg)
	if w := s.FastSendState(lgsim.A).Wakeups.Load(); w < 29 {
		t.Fatalf("the kernel woke the core %d times for 30 frames after idle", w)
	}
}

// tailLossKernel sends 30 frames from A a millisecond apart, the kernel
// sending them (cfg has FastSend), and loses the 21st (TestTailLossFoundWithinDummyWaitMax's
// scenario): all delivered, the lost one retransmitted once and delivered
// within DummyWaitMax and a retransmission round trip of being sent.
func tailLossKernel(t *testing.T, cfg lgsim.Config) *lgsim.Sim {
	t.Helper()
	s := tailLoss(t, cfg)
	if a := s.Port(lgsim.A); s.FastSent(lgsim.A) != 30 || a.S.Stats.RetxRequests != 1 {
		t.Fatalf("kernel sent %d of 30, retransmissions %d", s.FastSent(lgsim.A), a.S.Stats.RetxRequests)
	}
	wantTailRecovered(t, s)
	return s
}

// TestFastSendWantWake: with nothing outstanding the core has no deadline
// for the sender and asks to be woken; the kernel wakes it once; the core
// then runs the dummy timer from the kernel's send.
func TestFastSendWantWake(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	e.handOff(0)
	p.Poll(0, true)
	if e.fs.WantWake.Load() != 1 || p.NextDeadline(0, true) != math.MaxInt64 {
		t.Fatalf("idle: WantWake %d, deadline %d", e.fs.WantWake.Load(), p.NextDeadline(0, true))
	}
	e.kernel(500, 0)
	e.kernel(600, 1)
	if e.fs.Wakeups.Load() != 1 || e.fs.WantWake.Load() != 0 {
		t.Fatalf("wakeups %d, WantWake %d: want one wakeup", e.fs.Wakeups.Load(), e.fs.WantWake.Load())
	}
	p.Poll(700, true)
	if d := p.NextDeadline(700, true); d != 600+p.S.DummyWait() || e.fs.WantWake.Load() != 0 {
		t.Fatalf("deadline %d, want the kernel's last send + DummyWait %d; WantWake %d", d, 600+p.S.DummyWait(), e.fs.WantWake.Load())
	}
	p.Poll(600+p.S.DummyWait(), true)
	if len(p.Out.Low) != 1 || p.S.Stats.DummiesSent != 1 {
		t.Fatalf("no dummy at the deadline: %+v", p.S.Stats)
	}
	e.release(t)
}

// TestFastSendPiggyAck: the kernel's piggybacked ACK is the receive point's
// serial − 1, which the core keeps current while it owns the point; the
// core learns of it (PiggyAck) and owes no explicit ACK for what it covered.
func TestFastSendPiggyAck(t *testing.T) {
	e := newFastEnd(t, 64, true)
	p := e.p
	frame := make([]byte, 100+seqhdr.MaxOverhead)
	for q := range 3 {
		b := e.hostFrame(q, 100)
		copy(frame[seqhdr.MaxOverhead:], b)
		h := seqhdr.Header{Type: seqhdr.TypeData, Seq: seqhdr.Seq(q)}
		if _, _, err := seqhdr.Insert(frame, seqhdr.MaxOverhead, 100, &h); err != nil {
			t.Fatal(err)
		}
		a, _ := e.pool.Alloc(len(frame))
		copy(e.pool.Bytes(a, len(frame)), frame)
		p.Receive(int64(q), link.Frame{H: a, Len: len(frame)})
	}
	for _, f := range p.Out.Deliver {
		e.pool.Free(f.H)
	}
	e.release(t)
	if e.pt.Point.Load() != 3 || !p.R.PendingAck() {
		t.Fatalf("point word %#x (want {not owned, 3}), pending %v", e.pt.Point.Load(), p.R.PendingAck())
	}
	e.handOff(3)
	if _, ok := e.kernel(4, 0); !ok {
		t.Fatal("kernel send refused")
	}
	if a := e.fs.PiggyAck.Load(); a != linkguardian.FastAckValid|2 {
		t.Fatalf("PiggyAck %#x, want valid|2", a)
	}
	p.Poll(1_000_000, true)
	if p.R.PendingAck() || p.R.Stats.FastPiggyAcks != 1 || p.R.Stats.ExplicitAcksSent != 0 {
		t.Fatalf("the kernel's ACK was not taken: pending %v, %+v", p.R.PendingAck(), p.R.Stats)
	}
	e.release(t)
}

// TestFastSendOffer: random frames, states and limits; the model of the XDP
// program assigns exactly State's serial, moves State by one, only while it
// owns sending inside a valid, unpaused Limit, for an eligible frame whose
// bytes it copied first; otherwise it at most gives sending away.
func TestFastSendOffer(t *testing.T) {
	fs, err := linkguardian.NewFastSend(16, linkguardian.FastSlotHeader+200)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 13))
	pt := linkguardian.NewFastPoint()
	var sent, declined uint64
	fs.Credit.Store(20)
	for i := range 300_000 {
		if rng.IntN(8) == 0 || fs.State.Load()&linkguardian.FastOwned == 0 && rng.IntN(2) == 0 {
			fs.State.Store(uint64(rng.IntN(2))<<63 | uint64(rng.IntN(seqhdr.Space)))
		}
		if rng.IntN(8) == 0 {
			q := seqhdr.Seq(fs.State.Load() & linkguardian.FastSeqMask)
			lim := uint64(q.Add(rng.IntN(40) - 20))
			lim |= uint64(rng.IntN(8)/7^1)<<63 | uint64(rng.IntN(8)/7)<<62
			// Credits around the lead bound too: base = Limit − Credit.
			fs.Credit.Store(uint64([]int{1, 20, 40, linkguardian.FastLead - 10, linkguardian.FastLead + 10}[rng.IntN(5)]))
			fs.Limit.Store(lim)
		}
		if rng.IntN(4) == 0 {
			fs.WantWake.Store(uint64(rng.IntN(2)))
		}
		if rng.IntN(4) == 0 { // Go has taken in everything passed on, or not
			fs.Consumed.Store(fs.ToGo.Load() - uint64(rng.IntN(8)/7))
		}
		b := make([]byte, rng.IntN(240))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if len(b) >= 14 && rng.IntN(8) == 0 {
			binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
		}
		old, lim, wake, wakes := fs.State.Load(), fs.Limit.Load(), fs.WantWake.Load(), fs.Wakeups.Load()
		credit := fs.Credit.Load()
		toGo := fs.ToGo.Load()
		taken := toGo == fs.Consumed.Load()
		var rx *linkguardian.FastPoint // every other frame piggybacks ACK i
		if i%2 == 0 {
			rx = pt
			pt.Point.Store(uint64(seqhdr.Seq(i).Add(1)))
		}
		q, _, ok := fs.Offer(b, rx, int64(i))
		now := fs.State.Load()
		oq := seqhdr.Seq(old & linkguardian.FastSeqMask)
		eligible := len(b) >= 14 && len(b) <= 200 && binary.BigEndian.Uint16(b[12:]) != seqhdr.EtherType
		base := seqhdr.Seq(lim & linkguardian.FastSeqMask).Add(-int(credit))
		inside := lim&linkguardian.FastLimitValid != 0 && lim&linkguardian.FastPaused == 0 && seqhdr.Less(oq, seqhdr.Seq(lim&linkguardian.FastSeqMask)) && taken &&
			seqhdr.Diff(oq, base) >= 0 && seqhdr.Diff(oq, base) < linkguardian.FastLead
		if passed := fs.ToGo.Load() - toGo; ok && passed != 0 || !ok && passed != 1 {
			t.Fatalf("ToGo moved by %d for a frame sent %v", passed, ok)
		}
		switch {
		case ok:
			sent++
			if old&linkguardian.FastOwned == 0 || !eligible || !inside || q != oq || now != linkguardian.FastOwned|uint64(oq.Next()) {
				t.Fatalf("sent: state %#x → %#x, q %v, limit %#x, frame %d bytes", old, now, q, lim, len(b))
			}
			if !bytes.Equal(fs.Frame(q), b) || fs.LastNs.Load() != int64(i) {
				t.Fatal("the slot does not hold the frame, or LastNs not set")
			}
			if i%2 == 0 && fs.PiggyAck.Load() != linkguardian.FastAckValid|uint64(i)&linkguardian.FastSeqMask {
				t.Fatalf("PiggyAck %#x", fs.PiggyAck.Load())
			}
			if (wake == 1) != (fs.Wakeups.Load() == wakes+1) || fs.WantWake.Load() != 0 && wake == 1 {
				t.Fatalf("WantWake %d: wakeups %d → %d", wake, wakes, fs.Wakeups.Load())
			}
		case old&linkguardian.FastOwned == 0:
			if now != old {
				t.Fatalf("declined while not owned, but state %#x → %#x", old, now)
			}
		default:
			declined++
			if eligible && inside || now != old&^linkguardian.FastOwned {
				t.Fatalf("declined: state %#x → %#x, limit %#x, eligible %v", old, now, lim, eligible)
			}
		}
	}
	if sent < 1000 || declined < 1000 || fs.Sent.Load() != sent || fs.Declined.Load() != declined {
		t.Fatalf("sent %d (counter %d), declined %d (counter %d)", sent, fs.Sent.Load(), declined, fs.Declined.Load())
	}
}

// TestFastSendAdoptNoAlloc: the core's per-frame work for kernel frames
// (adoption, release by ACK, the dummy timer, a materialized copy now and
// then) allocates nothing in the steady state.
func TestFastSendAdoptNoAlloc(t *testing.T) {
	e := newFastEnd(t, 1024, true)
	p := e.p
	now, id := int64(0), 0
	round := func() {
		e.handOff(now)
		for range 32 {
			now += 100
			e.kernel(now, id)
			id++
		}
		now += 1000
		p.Poll(now, true)
		last := p.S.Next().Add(-1)
		if id%1024 == 0 {
			e.rx(now, &seqhdr.Header{Type: seqhdr.TypeLoss, Seq: last.Add(-3), Count: 1, Latest: last})
		}
		e.rx(now, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: last})
		for _, f := range p.Out.Free {
			e.pool.Free(f.H)
		}
		p.Out.Reset()
	}
	for range 100 {
		round()
	}
	if a := testing.AllocsPerRun(200, round); a != 0 {
		t.Fatalf("%v allocations per 32 kernel frames", a)
	}
	if p.S.Stats.FastSent != uint64(id) || p.S.Outstanding() != 0 || p.S.Stats.RetxRequests == 0 {
		t.Fatalf("kernel sent %d, adopted %+v", id, p.S.Stats)
	}
}

// TestFastSendUnreadFrameKeepsOrder: a host frame the kernel passed to Go
// and Go has not taken in yet (ToGo ahead of Consumed) keeps sending in Go:
// HandOffSend refuses, and if the frame's count lands only after Go's check
// (it loaded State before the hand-off), the kernel declines the next frame
// instead of numbering it ahead of the one Go will number.
func TestFastSendUnreadFrameKeepsOrder(t *testing.T) {
	e := newHandedEnd(t, 64, false)
	p := e.p
	if _, ok := e.kernel(1, 1); !ok {
		t.Fatal("the kernel did not send while owning")
	}
	a, _ := e.pool.Alloc(100)
	copy(e.pool.Bytes(a, 100), e.hostFrame(2, 100))
	if !p.Send(2, link.Frame{H: a, Len: 100}) || p.S.FastSendOwned() {
		t.Fatal("the core's send did not claim")
	}
	e.release(t)
	// Frame X reaches Go's socket; Go has not read it.
	if _, ok := e.kernel(3, 3); ok {
		t.Fatal("the kernel sent while Go holds sending")
	}
	if p.HandOffSend(4, true) {
		t.Fatal("hand-off with a frame passed on and not taken in")
	}
	// The race: X counts only after Go compared ToGo and Consumed.
	e.fs.ToGo.Add(^uint64(0))
	if !p.HandOffSend(5, true) {
		t.Fatal("no hand-off with everything taken in")
	}
	e.fs.ToGo.Add(1)
	declined := e.fs.Declined.Load()
	if q, ok := e.kernel(6, 6); ok {
		t.Fatalf("the kernel numbered Y (%v) while X waits for Go", q)
	}
	if e.fs.Declined.Load() != declined+1 || e.fs.State.Load()&linkguardian.FastOwned != 0 {
		t.Fatalf("Y not declined: state %#x", e.fs.State.Load())
	}
	// Go reads X and Y and numbers them in order, after the kernel's frame.
	next := p.S.Next()
	for id := 3; id <= 6; id += 3 {
		a, _ := e.pool.Alloc(100)
		copy(e.pool.Bytes(a, 100), e.hostFrame(id, 100))
		if !p.Send(int64(6+id), link.Frame{H: a, Len: 100}) {
			t.Fatal("send refused")
		}
	}
	if p.S.Next() != next.Add(2) {
		t.Fatalf("next %v, want %v", p.S.Next(), next.Add(2))
	}
	e.release(t)
	if !e.handOff(20) {
		t.Fatal("no hand-off once Go took in X and Y")
	}
}

// TestFastSendWakeEvery: with WakeEvery the kernel is never asked to wake
// the core; while idle the core's deadline is WakeEvery ahead, and at that
// check it adopts what the kernel sent meanwhile; the dummy for it, due
// DummyWait after the kernel's LastNs, goes at a look, the first from then
// on and WakeEvery after it at the latest, with no deadline of its own.
func TestFastSendWakeEvery(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	const every = 100 * us
	e.fs.WakeEvery = every
	if !e.handOff(0) {
		t.Fatal("no hand-off")
	}
	if e.fs.WantWake.Load() != 0 {
		t.Fatal("WantWake set with WakeEvery")
	}
	if d := p.NextDeadline(0, true); d != every {
		t.Fatalf("idle deadline %d, want %d", d, every)
	}
	// A frame sent just before the check: its dummy goes DummyWait after it.
	sent := every - us
	if _, ok := e.kernel(sent, 1); !ok {
		t.Fatal("the kernel did not send")
	}
	if e.fs.Wakeups.Load() != 0 {
		t.Fatal("the kernel woke the core")
	}
	p.Poll(every, true)
	e.release(t)
	if p.S.Outstanding() != 1 || p.S.Stats.FastSent != 1 {
		t.Fatalf("the check did not adopt the kernel's frame: outstanding %d, %+v", p.S.Outstanding(), p.S.Stats)
	}
	due := sent + p.S.DummyWait()
	for now := int64(every); p.S.Stats.DummiesSent == 0; {
		d := p.NextDeadline(now, true)
		if d <= now || d > due+every {
			t.Fatalf("at %d the next deadline is %d: want a look, by the dummy's bound %d at the latest", now, d, due+every)
		}
		now = d
		p.Poll(now, true)
		if sent := p.S.Stats.DummiesSent != 0; sent != (now >= due) || now > due+every {
			t.Fatalf("at %d (due %d): dummy sent %v; want it at the first look from due on, WakeEvery after at the latest", now, due, sent)
		}
	}
	e.release(t)
	// Acknowledged, idle again: the next check WakeEvery on; a frame sent
	// long before it gets its dummy at the check itself.
	e.rx(every+10*us, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 0})
	e.release(t)
	now := every + 10*us
	p.Poll(now, true)
	if d := p.NextDeadline(now, true); d <= now || d > now+every {
		t.Fatalf("idle deadline %d at %d, want within WakeEvery", d, now)
	}
	at := p.NextDeadline(now, true)
	if _, ok := e.kernel(now+us, 2); !ok {
		t.Fatal("the kernel did not send")
	}
	p.Poll(at, true)
	if p.S.Stats.DummiesSent != 2 || p.S.Outstanding() != 1 {
		t.Fatalf("dummies %d, outstanding %d at the check: want the overdue dummy sent", p.S.Stats.DummiesSent, p.S.Outstanding())
	}
	e.release(t)
}

// TestFastSendLooksBackOff: while idle, each look that finds the kernel sent
// nothing puts the next one twice as far (WakeEvery, 2×, 4× ... up to
// fastLookMax); a look that finds a send brings the gap back to WakeEvery
// once nothing is outstanding again, and the frame still gets its dummy.
func TestFastSendLooksBackOff(t *testing.T) {
	e := newFastEnd(t, 64, false)
	p := e.p
	const every = 100 * us
	const lookMax = 2000 * us // fasttx.go's fastLookMax
	e.fs.WakeEvery = every
	if !e.handOff(0) {
		t.Fatal("no hand-off")
	}
	now, want := int64(0), every
	var looks int
	for ; now < 20*lookMax; looks++ {
		d := p.NextDeadline(now, true)
		if d-now != want {
			t.Fatalf("look %d at %d: next in %d, want %d", looks, now, d-now, want)
		}
		now = d
		p.Poll(now, true)
		want = min(2*want, lookMax)
	}
	if want != lookMax || looks > 30 {
		t.Fatalf("%d looks in %d ns, gap %d: want the gap at lookMax", looks, now, want)
	}
	// The kernel sends: the next look adopts the frame, its dummy is due
	// DummyWait after the send or at once if that is past.
	sent := now + us
	if _, ok := e.kernel(sent, 1); !ok {
		t.Fatal("the kernel did not send")
	}
	at := p.NextDeadline(now, true)
	if at-now != lookMax {
		t.Fatalf("look after the send in %d, want %d", at-now, lookMax)
	}
	p.Poll(at, true)
	if p.S.Outstanding() != 1 || p.S.Stats.DummiesSent != 1 {
		t.Fatalf("at the look: outstanding %d, dummies %d; want the frame adopted and its overdue dummy sent", p.S.Outstanding(), p.S.Stats.DummiesSent)
	}
	e.release(t)
	// Acknowledged: the looks start again at WakeEvery, and a Poll for
	// something else before the timed look keeps the gap (it moves the
	// look on).
	e.rx(at+10*us, &seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: seqhdr.Seq(0)})
	e.release(t)
	p.Poll(at+10*us, true)
	if d := p.NextDeadline(at+10*us, true); d-(at+10*us) != every {
		t.Fatalf("after the ACK: next look in %d, want WakeEvery %d", d-(at+10*us), every)
	}
	for i, t0 := 0, at+10*us; i < 5; i++ {
		t0 += every / 2
		p.Poll(t0, true)
		if d := p.NextDeadline(t0, true); d-t0 != every {
			t.Fatalf("Poll %d before the timed look: next look in %d, want WakeEvery %d still", i, d-t0, every)
		}
	}
}
