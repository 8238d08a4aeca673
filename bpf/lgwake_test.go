package bpf

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/seqhdr"
)

// The wake timers (lf_lg_timer_fired), run with BPF_PROG_TEST_RUN: a
// frame sent or delivered starts the timer, and when it fires the worker
// is woken (a record in lg_wake, the counters) only if the control frame
// is owed. The waits are the events' (the counters), bounded generously;
// nothing here asserts how soon a timer fires.

// waitCount waits up to d for c() to reach want and returns its value.
func waitCount(c func() uint64, want uint64, d time.Duration) uint64 {
	for end := time.Now().Add(d); c() < want && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	return c()
}

func TestLGWakeTimerSend(t *testing.T) {
	p, tx, rx := loadLGTx(t)
	if err := p.SetLGTxAck(true); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	host := lgHostFrame(rng, 100, 0x0800)
	rx.Point().Store(owned(uint64(seqhdr.MakeSeq(7, true))))
	tx.Credit().Store(20)
	tx.Limit().Store(LGLimitValid | 20)
	tx.State().Store(LGOwned | 5)
	tx.WakeAfter().Store(uint64(200 * time.Microsecond))
	tx.DrainWake()

	// Frame 5 sent, no ACK for it: the dummy is owed, the worker woken once.
	if ret, _ := runLG(t, p, host); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	if n := waitCount(tx.TimerWakes().Load, 1, 2*time.Second); n != 1 {
		t.Fatalf("frame 5 outstanding: %d timer wakeups, want 1", n)
	}
	if !tx.DrainWake() {
		t.Error("frame 5 outstanding: no record in lg_wake")
	}

	// Frame 6 sent with the peer's ACK of 6 read before the timer fires:
	// nothing outstanding, no wakeup.
	rx.PeerAck().Store(LGAckValid | 6)
	if ret, _ := runLG(t, p, host); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	time.Sleep(20 * time.Millisecond)
	if n := tx.TimerWakes().Load(); n != 1 || tx.DrainWake() {
		t.Errorf("frame 6 acknowledged: %d timer wakeups (want still 1), record %v", n, n != 1)
	}

	// Frame 7 acknowledged by Go's base (limit - credit) alone, moved
	// after the send (the timer runs longer here: the move must come first).
	rx.PeerAck().Store(0)
	tx.WakeAfter().Store(uint64(100 * time.Millisecond))
	if ret, _ := runLG(t, p, host); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	tx.Limit().Store(LGLimitValid | 28) // base 8
	time.Sleep(200 * time.Millisecond)
	if n := tx.TimerWakes().Load(); n != 1 {
		t.Errorf("frame 7 acknowledged by base: %d timer wakeups, want still 1", n)
	}

	// WakeAfter 0: no timer at all.
	tx.WakeAfter().Store(0)
	tx.Limit().Store(LGLimitValid | 20) // base 0: 8 outstanding
	if ret, _ := runLG(t, p, host); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	time.Sleep(20 * time.Millisecond)
	if n := tx.TimerWakes().Load(); n != 1 {
		t.Errorf("WakeAfter 0: %d timer wakeups, want still 1", n)
	}
}

func TestLGWakeTimerReceive(t *testing.T) {
	p, s := loadLGRx(t)
	tx, err := p.LGTx() // maps the program's lg_wake
	if err != nil {
		t.Fatal(err)
	}
	s.WakeAfter().Store(uint64(200 * time.Microsecond))
	s.Point().Store(owned(10))
	tx.DrainWake()

	// Frame 10 delivered, no ACK piggybacked since: an ACK is owed.
	if ret, _ := runLG(t, p, lgData(t, 10, false, 0, 50)); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	if n := waitCount(func() uint64 { return s.Counters().TimerWakes }, 1, 2*time.Second); n != 1 {
		t.Fatalf("frame 10 delivered: %d timer wakeups, want 1", n)
	}
	if s.Woke().Load() != 1 || !tx.DrainWake() {
		t.Errorf("frame 10 delivered: woke %d, a record in lg_wake %v", s.Woke().Load(), false)
	}
	s.Woke().Store(0)

	// Frame 11 delivered and covered by a piggybacked ACK before the timer
	// fires: no wakeup.
	if ret, _ := runLG(t, p, lgData(t, 11, false, 0, 50)); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	s.SentAck().Store(LGAckValid | 11)
	time.Sleep(20 * time.Millisecond)
	if n := s.Counters().TimerWakes; n != 1 || s.Woke().Load() != 0 {
		t.Errorf("frame 11 covered: %d timer wakeups (want still 1), woke %d", n, s.Woke().Load())
	}

	// Go holds the point: the kernel owes nothing.
	if ret, _ := runLG(t, p, lgData(t, 12, false, 0, 50)); ret != xdpRedirect {
		t.Fatalf("verdict %d, want XDP_REDIRECT", ret)
	}
	s.Point().Store(13)
	time.Sleep(20 * time.Millisecond)
	if n := s.Counters().TimerWakes; n != 1 {
		t.Errorf("point Go's: %d timer wakeups, want still 1", n)
	}
}
