package linkguardian_test

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

func hostFrame(t *testing.T, pool *linksim.Pool) link.Frame {
	t.Helper()
	h, ok := pool.Alloc(64)
	if !ok {
		t.Fatal("pool empty")
	}
	b := pool.Bytes(h, 64)
	clear(b)
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	return link.Frame{H: h, Len: 64}
}

func control(t *testing.T, pool *linksim.Pool, hd seqhdr.Header) link.Frame {
	t.Helper()
	h, _ := pool.Alloc(seqhdr.MinFrameLen)
	var z [6]byte
	n, err := seqhdr.PutControl(pool.Bytes(h, seqhdr.MinFrameLen), &z, &z, &hd)
	if err != nil {
		t.Fatal(err)
	}
	return link.Frame{H: h, Len: n}
}

// sendN has p send n host frames at now, each of which it must take.
func sendN(t *testing.T, p *linkguardian.Endpoint, pool *linksim.Pool, now int64, n int) {
	t.Helper()
	for i := range n {
		if !p.Send(now, hostFrame(t, pool)) {
			t.Fatalf("frame %d of %d refused", i, n)
		}
	}
}

func release(p *linkguardian.Endpoint, pool *linksim.Pool) {
	for _, f := range p.Out.Free {
		pool.Free(f.H)
	}
	for _, f := range p.Out.Deliver {
		pool.Free(f.H)
	}
	p.Out.Reset()
}

func TestPauseResumeAndTxFull(t *testing.T) {
	p, pool := newSender(t, 2, 4, 0)
	now := int64(1000)
	sendN(t, p, pool, now, 4)
	f := hostFrame(t, pool)
	if p.CanSend(now) || p.Send(now, f) || p.S.Stats.TxFull != 1 {
		t.Fatalf("TX buffer full must refuse: %+v", p.S.Stats)
	}
	release(p, pool)
	// Pause: normal frames stop, retransmissions do not.
	p.Pause(now, 10*us)
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeLoss, Seq: 1, Count: 2, Latest: 3, HasAck: true, Ack: 0}))
	if len(p.Out.Retx) != 4 || p.S.Outstanding() != 3 {
		t.Fatalf("retransmissions while paused: %d copies, %d outstanding", len(p.Out.Retx), p.S.Outstanding())
	}
	for _, r := range p.Out.Retx {
		h, err := seqhdr.ParseFrame(pool.Bytes(r.H, r.Len))
		if err != nil || !h.Retx || (h.Seq != 1 && h.Seq != 2) {
			t.Fatalf("retransmitted copy header %+v %v", h, err)
		}
	}
	release(p, pool)
	if p.CanSend(now+5*us) || p.Send(now+5*us, f) || p.S.Stats.PausedRefusals != 1 {
		t.Fatal("paused sender accepted a frame")
	}
	p.Poll(now+5*us, true)
	if len(p.Out.Low) != 0 {
		t.Fatal("dummy sent while paused")
	}
	// The pause expires after its duration.
	if !p.S.Paused(now+10*us-1) || p.S.Paused(now+10*us) {
		t.Fatal("pause must last exactly its duration")
	}
	p.Pause(now, 50*us)
	p.Resume(now + 1)
	if p.S.Paused(now + 2) {
		t.Fatal("resume did not end the pause")
	}
	// ACK everything; the buffer empties and frames are released once.
	p.Receive(now+20*us, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 3}))
	if p.S.Outstanding() != 0 || len(p.Out.Free) != 4 { // 3 data frames + the ACK frame
		t.Fatalf("after ACK: outstanding %d, freed %d", p.S.Outstanding(), len(p.Out.Free))
	}
	release(p, pool)
	// A stale or impossible ACK changes nothing.
	p.Receive(now+21*us, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 100}))
	if p.S.Stats.AckInvalid != 1 {
		t.Fatal("ACK beyond next not counted")
	}
	release(p, pool)
	pool.Free(f.H)
	if pool.InUse() != 0 {
		t.Fatalf("%d frames leaked", pool.InUse())
	}
}

func TestReceiverBadAndPassthrough(t *testing.T) {
	pool := linksim.NewPool(16, 2048, 256)
	rc := *receiverCfg(linkguardian.InOrder)
	p := newEndpoint(t, linkguardian.Config{Receiver: &rc}, pool)
	f := hostFrame(t, pool)
	p.Receive(0, f)
	if len(p.Out.Deliver) != 1 || p.Out.Deliver[0] != f || p.Stats.RxPassthrough != 1 {
		t.Fatal("plain frame not passed through")
	}
	release(p, pool)
	g := hostFrame(t, pool)
	b := pool.Bytes(g.H, g.Len)
	binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
	b[14] = 13 // a type without a decoder (reserved: TDMA)
	p.Receive(0, g)
	if len(p.Out.Free) != 1 || p.Stats.RxBad != 1 {
		t.Fatal("bad link frame not freed")
	}
	release(p, pool)
	if pool.InUse() != 0 {
		t.Fatal("leak")
	}
}

// TestCreditBelowTxBuffer: with Credit set, the sender stops at Credit
// unacknowledged frames although its TX buffer has room, and an ACK opens
// the window again by what it acknowledged.
func TestCreditBelowTxBuffer(t *testing.T) {
	p, pool := newSender(t, 1, 8, 5)
	now := int64(1000)
	sendN(t, p, pool, now, 5)
	f := hostFrame(t, pool)
	if p.CanSend(now) || p.Send(now, f) || p.S.Stats.TxFull != 1 || p.S.Outstanding() != 5 {
		t.Fatalf("sixth frame with credit 5: outstanding %d, stats %+v", p.S.Outstanding(), p.S.Stats)
	}
	release(p, pool)
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 1})) // frames 0 and 1
	release(p, pool)
	for i := range 2 {
		if !p.Send(now, f) {
			t.Fatalf("frame %d refused after an ACK of 2", i)
		}
		f = hostFrame(t, pool)
	}
	if p.CanSend(now) || p.S.Outstanding() != 5 {
		t.Fatalf("after the ACK and 2 more frames: outstanding %d, can send %v", p.S.Outstanding(), p.CanSend(now))
	}
	pool.Free(f.H)
}

func TestConfigErrors(t *testing.T) {
	pool := linksim.NewPool(4, 2048, 256)
	bad := []linkguardian.Config{
		{Sender: &linkguardian.SenderConfig{TxBuffer: 3, Copies: 1, DummyCopies: 1, MaxRetxRounds: 1}},
		{Sender: &linkguardian.SenderConfig{TxBuffer: 4, Copies: 0, DummyCopies: 1, MaxRetxRounds: 1}},
		{Sender: &linkguardian.SenderConfig{TxBuffer: 4, Credit: 5, Copies: 1, DummyCopies: 1, MaxRetxRounds: 1}},
		{Receiver: &linkguardian.ReceiverConfig{Window: 1000, AckNoTimeout: 1}},
		{Receiver: &linkguardian.ReceiverConfig{Window: 1024}},
		{Receiver: &linkguardian.ReceiverConfig{Window: 1024, AckNoTimeout: 1, PauseThreshold: 10, ResumeThreshold: 20, PauseDuration: 1}},
	}
	for i, c := range bad {
		if _, err := linkguardian.NewEndpoint(c, pool); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	sc, rc := linkguardian.DefaultSenderConfig(), linkguardian.DefaultReceiverConfig()
	if _, err := linkguardian.NewEndpoint(linkguardian.Config{Sender: &sc, Receiver: &rc}, pool); err != nil {
		t.Fatal(err)
	}
}

func TestParams(t *testing.T) {
	// Appendix B.1: 6 µs max retransmission delay → 7.5 µs.
	if got := linkguardian.AckNoTimeout(6000, 1.25); got != 7500 {
		t.Fatalf("AckNoTimeout %d", got)
	}
	re, to, hold := linkguardian.Timers(6000, 1.25, 2)
	if re != 7500 || to != 22500 || hold != 3750 {
		t.Fatalf("Timers %d %d %d", re, to, hold)
	}
	if re, to, _ := linkguardian.Timers(6000, 1.25, 0); re != 0 || to != 7500 {
		t.Fatalf("Timers without re-notification %d %d", re, to)
	}
	// 1.6 µs at 100 Gb/s drains 20 KB; the paper used ~37 KB (margin ≈ 1.85).
	if got := linkguardian.ResumeThreshold(1600, 100e9, 1); got != 20000 {
		t.Fatalf("ResumeThreshold %d", got)
	}
	if got := linkguardian.PauseThreshold(37000, 1538); got != 37000+3076 {
		t.Fatalf("PauseThreshold %d", got)
	}
	if q := linkguardian.PauseQuanta(10_000, 10e9); q != 196 {
		t.Fatalf("PauseQuanta %d", q)
	}
	if d := linkguardian.QuantaDuration(65535, 10e9); d != 3355392 {
		t.Fatalf("QuantaDuration %d", d)
	}
}

// newEndpoint makes an endpoint, or fails the test.
func newEndpoint(t testing.TB, cfg linkguardian.Config, mem link.Memory) *linkguardian.Endpoint {
	t.Helper()
	p, err := linkguardian.NewEndpoint(cfg, mem)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newSender makes an endpoint that only sends, with copies, a TX buffer
// of txBuffer frames and credit (0: the TX buffer), over a fresh pool.
func newSender(t testing.TB, copies, txBuffer, credit int) (*linkguardian.Endpoint, *linksim.Pool) {
	t.Helper()
	pool := linksim.NewPool(64, 2048, 256)
	sc := *senderCfg(copies)
	sc.TxBuffer, sc.Credit = txBuffer, credit
	return newEndpoint(t, linkguardian.Config{Sender: &sc}, pool), pool
}
