package linkguardian_test

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// dropAcks drops the explicit ACKs (counted from 0 in send order) for which
// lose returns true.
func dropAcks(lose func(k int) bool) *lgsim.Rule {
	k := -1
	return lgsim.DropIf(math.MaxInt, func(i *lgsim.Info) bool {
		if !i.Link || i.Hdr.Type != seqhdr.TypeAck {
			return false
		}
		k++
		return lose(k)
	})
}

// creditBound is a one-way LG link whose sender is bound by its TX buffer
// (window frames) for the whole transfer: the host offers frames faster
// than the link returns ACKs.
func creditBound(window int) lgsim.Config {
	cfg := oneWay(linkguardian.InOrder, 1)
	cfg.A.Sender.TxBuffer = window
	cfg.B.Receiver.Window = max(window, 2)
	return cfg
}

// runBounded runs s until quiet within limit virtual ns and checks that
// every frame arrived in order and nothing leaked.
// ackLossRun sends n frames A→B under cfg, the ACKs lose picks lost, and
// runs them to delivery within limit (runBounded).
func ackLossRun(t *testing.T, cfg lgsim.Config, lose func(k int) bool, n int, limit int64) *lgsim.Sim {
	t.Helper()
	cfg.BA.Rules = []*lgsim.Rule{dropAcks(lose)}
	s := newSim(t, cfg)
	s.Send(lgsim.A, n, 0)
	runBounded(t, s, n, limit)
	return s
}

func runBounded(t *testing.T, s *lgsim.Sim, n int, limit int64) {
	t.Helper()
	if !s.RunUntilQuiet(limit) {
		t.Fatalf("not quiet after %d µs of virtual time: B received %d of %d frames; sender %+v; receiver %+v",
			limit/us, len(s.Delivered(lgsim.B)), n, s.Port(lgsim.A).S.Stats, s.Port(lgsim.B).R.Stats)
	}
	finish(t, s)
	wantDelivered(t, s, lgsim.B, seqIDs(0, n))
}

// TestCreditBoundLostAck: a credit-bound sender (TX buffer full, host frames
// queued, so it is never idle) must not stall for good when an explicit ACK
// is lost. Before the fix, losing the first explicit ACK with a TX buffer of 8
// delivered 8 of 2000 frames: the sender sent no dummy (not idle) and the
// receiver never repeated its ACK.
func TestCreditBoundLostAck(t *testing.T) {
	const n = 2000
	// Virtual time of the loss-free transfer, per window.
	base := map[int]int64{}
	for _, w := range []int{4, 8, 64, 1024} {
		s := newSim(t, creditBound(w))
		s.Send(lgsim.A, n, 0)
		runBounded(t, s, n, 1e9)
		base[w] = s.Now()
	}
	// A lost ACK may cost the sender's dummy backoff (at most 64 ×
	// DummyInterval per round) a few times over, nowhere near the transfer.
	slack := 20 * 64 * senderCfg(1).DummyInterval
	for _, w := range []int{4, 8, 64, 1024} {
		for _, c := range []struct {
			name string
			lose func(k int) bool
		}{
			{"every10th", func(k int) bool { return k%10 == 9 }},
			{"all-but-every10th", func(k int) bool { return k%10 != 9 && k < 200 }},
		} {
			t.Run(fmt.Sprintf("w%d/%s", w, c.name), func(t *testing.T) {
				ackLossRun(t, creditBound(w), c.lose, n, 2*base[w]+slack)
			})
		}
		// Single ACK positions among the first 40 (the first ones are
		// sent while the buffer fills, the later ones at steady state).
		for _, k := range lostAckPositions() {
			t.Run(fmt.Sprintf("w%d/ack%d", w, k), func(t *testing.T) {
				cfg := creditBound(w)
				cfg.BA.Rules = []*lgsim.Rule{dropAcks(func(i int) bool { return i == k })}
				s := newSim(t, cfg)
				s.Send(lgsim.A, n, 0)
				runBounded(t, s, n, base[w]+slack)
			})
		}
	}
}

// full makes the simulations run at full size (LINKFABRIC_FULL set: make
// soak) rather than reduced (make test, where the suites on the fast path
// run them again under the race detector).
var full = os.Getenv("LINKFABRIC_FULL") != ""

// lostAckPositions are the positions TestCreditBoundLostAck loses a single
// ACK at: every one of the first 40 at full size, else the first 8 and
// every fifth after (each position is a whole transfer).
func lostAckPositions() []int {
	var ks []int
	for k := range 40 {
		if k < 8 || k%5 == 0 || full {
			ks = append(ks, k)
		}
	}
	return ks
}

// TestCreditBoundSenderProbes: with its credit window full and host frames
// queued (Poll with queueEmpty false), the sender sends a dummy
// DummyInterval after its last frame, and NextDeadline says so, so that an
// idle worker wakes up for it.
func TestCreditBoundSenderProbes(t *testing.T) {
	p, pool := newSender(t, 1, 8, 4)
	dummy := senderCfg(1).DummyInterval
	now := int64(1000)
	for range 3 {
		p.Send(now, hostFrame(t, pool))
	}
	release(p, pool)
	if d := p.NextDeadline(now, false); d != math.MaxInt64 {
		t.Fatalf("credit left, host frames queued: deadline %d, want none", d)
	}
	p.Send(now, hostFrame(t, pool)) // the credit window is now full
	release(p, pool)
	if d := p.NextDeadline(now, false); d != now+dummy {
		t.Fatalf("credit-bound sender: deadline %d, want %d (DummyInterval after the last frame)", d, now+dummy)
	}
	p.Poll(now+dummy-1, false)
	if len(p.Out.Low) != 0 {
		t.Fatal("dummy before DummyInterval")
	}
	p.Poll(now+dummy, false)
	if len(p.Out.Low) != 1 || p.S.Stats.DummiesSent != 1 {
		t.Fatalf("credit-bound sender sent %d dummies, want 1", len(p.Out.Low))
	}
	h, err := seqhdr.ParseFrame(pool.Bytes(p.Out.Low[0].H, p.Out.Low[0].Len))
	if err != nil || h.Type != seqhdr.TypeDummy || h.Seq != 3 {
		t.Fatalf("probe %+v %v, want a dummy naming seq 3", h, err)
	}
	release(p, pool)
	// Backoff as when idle: the next one twice as late.
	if d := p.NextDeadline(now+dummy, false); d != now+3*dummy {
		t.Fatalf("second probe at %d, want %d", d, now+3*dummy)
	}
	// Paused: no probe.
	p.Pause(now+dummy, 100*us)
	p.Poll(now+10*dummy, false)
	if len(p.Out.Low) != 0 {
		t.Fatal("probe while paused")
	}
	p.Receive(now, control(t, pool, seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: 3}))
	release(p, pool)
	if pool.InUse() != 0 || len(pool.Errors()) != 0 {
		t.Fatalf("in use %d, errors %v", pool.InUse(), pool.Errors())
	}
}

// TestReceiverRepeatsAck: an explicit ACK that no data follows is sent
// again after RenotifyInterval, then 2× and 4× later, and no more; data
// arriving stops the repeats. NextDeadline and Quiet reflect the repeats.
func TestReceiverRepeatsAck(t *testing.T) {
	pool := linksim.NewPool(64, 2048, 256)
	rc := *receiverCfg(linkguardian.InOrder)
	p := newEndpoint(t, linkguardian.Config{Receiver: &rc}, pool)
	data := func(q seqhdr.Seq) link.Frame {
		return control(t, pool, seqhdr.Header{Type: seqhdr.TypeData, Seq: q, EtherType: 0x0800})
	}
	acks := func() []seqhdr.Seq {
		var a []seqhdr.Seq
		for _, f := range p.Out.Low {
			h, err := seqhdr.ParseFrame(pool.Bytes(f.H, f.Len))
			if err != nil || h.Type != seqhdr.TypeAck {
				t.Fatalf("low-priority frame %+v %v", h, err)
			}
			a = append(a, h.Ack)
		}
		release(p, pool)
		return a
	}
	now := int64(1000)
	p.Receive(now, data(0))
	p.Receive(now, data(1))
	release(p, pool)
	now += rc.AckDelay
	p.Poll(now, true)
	if a := acks(); len(a) != 1 || a[0] != 1 {
		t.Fatalf("explicit ACK %v, want [1]", a)
	}
	sent := now
	ri := rc.RenotifyInterval
	for k, at := range []int64{sent + ri, sent + 3*ri, sent + 7*ri} {
		if p.Quiet() {
			t.Fatalf("repeat %d pending, yet the port is quiet", k)
		}
		if d := p.NextDeadline(now, true); d != at {
			t.Fatalf("repeat %d: deadline %d, want %d", k, d, at)
		}
		p.Poll(at-1, true)
		if a := acks(); len(a) != 0 {
			t.Fatalf("repeat %d early: %v", k, a)
		}
		now = at
		p.Poll(now, true)
		if a := acks(); len(a) != 1 || a[0] != 1 {
			t.Fatalf("repeat %d: %v, want [1]", k, a)
		}
	}
	p.Poll(now+100*ri, true)
	if a := acks(); len(a) != 0 || !p.Quiet() || p.NextDeadline(now, true) != math.MaxInt64 {
		t.Fatalf("after 3 repeats: %v more, quiet %v", a, p.Quiet())
	}
	if p.R.Stats.AckRepeats != 3 || p.R.Stats.ExplicitAcksSent != 4 {
		t.Fatalf("stats %+v", p.R.Stats)
	}
	// Data after an ACK cancels its repeat; the new ACK is repeated instead.
	p.Receive(now, data(2))
	now += rc.AckDelay
	p.Poll(now, true)
	acks()
	p.Receive(now+1, data(3))
	release(p, pool)
	p.Poll(now+ri, true) // the repeat of ACK 2 would be due; ACK 3 goes instead
	if a := acks(); len(a) != 1 || a[0] != 3 || p.R.Stats.AckRepeats != 3 {
		t.Fatalf("after new data: %v, repeats %d; want the new ACK [3] and no repeat", a, p.R.Stats.AckRepeats)
	}
	p.Poll(now+100*ri, true)
	p.Poll(now+200*ri, true)
	p.Poll(now+400*ri, true)
	acks()
	if !p.Quiet() || pool.InUse() != 0 || len(pool.Errors()) != 0 {
		t.Fatalf("quiet %v, in use %d, errors %v", p.Quiet(), pool.InUse(), pool.Errors())
	}
}
