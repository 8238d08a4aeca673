package linkguardian_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/simlink"
)

// catchUpLag is how far the core runs behind the kernel in the catch-up
// tests: far enough that under a stream frames always wait for it, so it
// asks for the queue instead of handing the point back (at the tests'
// 10 Gbit/s, about 16 frames).
const catchUpLag = 20 * us

// TestCatchUpSuite runs the simulated-link suite with the kernel's fast
// path and a small catch-up queue at both receivers, the core fastLag
// behind the kernel as in TestFastPathSuite (the suite's timings assume a
// core that close; the tests below put it catchUpLag behind): whatever
// queue mode does (started, given back at a hole, full, drained, reset),
// every scenario delivers what it did without it, in order, once; and
// queue mode ran.
func TestCatchUpSuite(t *testing.T) {
	if testing.Short() {
		// make test runs it without -short; under -race -short it would
		// add 40 s for a single-threaded simulation.
		t.Skip("the whole fast path suite again: not in -short")
	}
	var sims []*simlink.Sim
	simFast, simQueue, simQueueLag, simRecord = true, 16, 0, &sims
	defer func() { simFast, simQueue, simQueueLag, simRecord = false, 0, 0, nil }()
	for _, tc := range suiteOnFastPath {
		t.Run(tc.name, tc.f)
	}
	var starts, queued, drained, full uint64
	for _, s := range sims {
		for _, side := range []simlink.Side{simlink.A, simlink.B} {
			if c, m := s.CatchUp(side), s.KernelQueue(side); c != nil && m != nil {
				starts += c.Stats.Starts
				queued += m.Queued
				drained += m.Drained
				full += m.Full
				if c.Stats.DrainErrs != 0 {
					t.Errorf("%d drain errors", c.Stats.DrainErrs)
				}
			}
		}
	}
	t.Logf("queue mode started %d times; %d frames queued, %d drained; full %d times", starts, queued, drained, full)
	if starts == 0 || queued == 0 || full == 0 {
		t.Fatalf("queue mode started %d times, queued %d frames, was full %d times: the suite did not exercise it", starts, queued, full)
	}
}

// catchUpSim is a one-way LG link with the fast path and a catch-up queue
// of slots slots at B, the core catchUpLag behind.
func catchUpSim(t *testing.T, slots int) *simlink.Sim {
	cfg := oneWay(linkguardian.ModeLG, 1)
	cfg.Fast, cfg.FastLag, cfg.FastQueue = true, catchUpLag, slots
	return newSim(t, cfg)
}

// TestCatchUpCarriesStream: under a stream the core lags behind, holes open
// and close; after each the kernel queues, the core finishes, the queue is
// delivered and the kernel takes over again. Every frame arrives once, in
// order, most of them through the kernel.
func TestCatchUpCarriesStream(t *testing.T) {
	s := catchUpSim(t, 1024)
	lost := []int{100, 101, 2500, 2501, 2502, 7000, 12000, 15500}
	for _, k := range lost {
		s.AddRule(simlink.A, simlink.DropNthData(k))
	}
	s.Send(simlink.A, 20000, 0)
	finish(t, s)
	wantDelivered(t, s, simlink.B, seqIDs(0, 20000))
	c, m := s.CatchUp(simlink.B), s.KernelQueue(simlink.B)
	st := s.Port(simlink.B).R.Stats
	if st.Recovered != uint64(len(lost)) {
		t.Errorf("recovered %d, want %d", st.Recovered, len(lost))
	}
	if c.Stats.Starts < uint64(len(lost)/2) || m.Queued == 0 || m.Drained != m.Queued {
		t.Fatalf("queue mode started %d times, %d queued, %d drained: want it after most holes, all drained", c.Stats.Starts, m.Queued, m.Drained)
	}
	if got := s.FastDelivered(simlink.B); got < 15000 {
		t.Errorf("the kernel delivered %d of 20000 frames (queue included), want most", got)
	}
	if s.Port(simlink.A).S.Outstanding() != 0 {
		t.Errorf("sender still holds %d frames", s.Port(simlink.A).S.Outstanding())
	}
	t.Logf("starts %d handoffs %d settles %d held %d; queued %d; kernel delivered %d of 20000", c.Stats.Starts, c.Stats.HandOffs, c.Stats.Settles, c.Stats.Held, m.Queued, s.FastDelivered(simlink.B))
}

// TestCatchUpHoleWhileQueued: a hole opens while the kernel queues, and
// another while the core finishes before the queue (frames held): the
// kernel gives the point back, the queue is delivered before anything the
// core delivers after it, and the held frames after the queue.
func TestCatchUpHoleWhileQueued(t *testing.T) {
	s := catchUpSim(t, 4096)
	for k := 1000; k < 20000; k += 53 {
		s.AddRule(simlink.A, simlink.DropNthData(k))
	}
	s.Send(simlink.A, 20000, 0)
	finish(t, s)
	wantDelivered(t, s, simlink.B, seqIDs(0, 20000))
	c := s.CatchUp(simlink.B)
	if c.Stats.Settles == 0 || c.Stats.Held == 0 {
		t.Fatalf("settles %d, held %d: want holes both while queued and while finishing", c.Stats.Settles, c.Stats.Held)
	}
}

// TestCatchUpQueueFull: a queue of 4 slots fills at once; the kernel gives
// the point back each time, nothing is lost.
func TestCatchUpQueueFull(t *testing.T) {
	s := catchUpSim(t, 4)
	s.AddRule(simlink.A, simlink.DropNthData(50))
	s.Send(simlink.A, 5000, 0)
	finish(t, s)
	wantDelivered(t, s, simlink.B, seqIDs(0, 5000))
	if m := s.KernelQueue(simlink.B); m.Full == 0 || m.Drained != m.Queued {
		t.Fatalf("full %d times, queued %d, drained %d: want a full queue, all drained", m.Full, m.Queued, m.Drained)
	}
}

// TestCatchUpControlOvertakes: frames reach the core out of the order they
// were numbered (on veth the worker's frames overtake the kernel's
// redirects, which leave only at the end of their NAPI poll: FastFlush),
// so a dummy, a frame or a retransmitted copy can reach the core before
// frames the kernel is about to queue: the core may hear of, buffer, even
// deliver frames at or after the queue's start before it knows where the
// queue starts (reconcile). What the link delivers without the queue it
// delivers with it: nothing twice, nothing out of order, and it does not
// stall.
func TestCatchUpControlOvertakes(t *testing.T) {
	for _, flush := range []int64{2 * us, 10 * us} {
		var got [2][]uint64
		for i, slots := range []int{0, 1024} {
			cfg := oneWay(linkguardian.ModeLG, 1)
			cfg.AB.PriorityLane, cfg.BA.PriorityLane = true, true
			cfg.Fast, cfg.FastLag, cfg.FastQueue = true, catchUpLag, slots
			cfg.FastSend, cfg.FastWakeEvery, cfg.FastFlush = true, fastWakeEvery, flush
			s := newSim(t, cfg)
			for k := 500; k < 20000; k += 211 {
				s.AddRule(simlink.A, simlink.DropNthData(k))
			}
			s.Send(simlink.A, 20000, 0)
			finish(t, s)
			got[i] = s.Delivered(simlink.B)
			if c := s.CatchUp(simlink.B); c != nil {
				t.Logf("flush %d: starts %d handoffs %d settles %d skipped %d held %d dummies dropped %d", flush, c.Stats.Starts, c.Stats.HandOffs, c.Stats.Settles, c.Stats.Skipped, c.Stats.Held, c.Stats.DummiesDropped)
				if c.Stats.Starts == 0 {
					t.Errorf("flush %d: queue mode never started", flush)
				}
			}
		}
		if len(got[0]) != 20000 {
			t.Logf("flush %d: without the queue %d of 20000 delivered (LinkGuardian gave some up)", flush, len(got[0]))
		}
		wantInOrderOnce(t, got[1])
		if len(got[1]) < len(got[0]) {
			t.Errorf("flush %d: %d delivered with the queue, %d without", flush, len(got[1]), len(got[0]))
		}
	}
}

// wantInOrderOnce fails unless ids increase strictly.
func wantInOrderOnce(t *testing.T, ids []uint64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("delivery %d: id %d after %d: duplicated or out of order", i, ids[i], ids[i-1])
		}
	}
}
