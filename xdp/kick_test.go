package xdp

import (
	"sync"
	"testing"
)

// TestKickCountersConcurrent: the kick counters are read by the statistics
// endpoint while the worker kicks. Run with -race: plain integers there are
// a data race. Kick on a socket with no kernel behind it (fd -1) fails after
// counting its sendto, which is all this needs.
func TestKickCountersConcurrent(t *testing.T) {
	tm := newRingMem[Desc](8, 0)
	s := &Socket{fd: -1, ifname: "test0"}
	s.tx = newProdRing(&tm.prod, &tm.cons, &tm.flags, tm.entries)
	if s.Transmit([]Desc{{Addr: 0, Len: 60}}) != 1 {
		t.Fatal("Transmit onto an empty ring failed")
	}
	const n = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			if s.Kick() == nil {
				t.Error("Kick on fd -1 succeeded")
				return
			}
		}
	}()
	var last uint64
	for range n {
		k, _, _ := s.KickCounters()
		if k < last {
			t.Fatalf("kicks went back from %d to %d", last, k)
		}
		last = k
	}
	wg.Wait()
	if k, _, _ := s.KickCounters(); k != n {
		t.Errorf("%d kicks counted; want %d", k, n)
	}
}
