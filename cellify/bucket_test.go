package cellify

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestTokenBucket(t *testing.T) {
	var b TokenBucket
	const rate, burst = 1_000_000, 1500 // 1 MB/s: 1 byte per µs
	b.Reset(0, rate, burst)
	if !b.Take(0, burst) || b.Take(0, 1) || b.Available(0) != 0 {
		t.Fatal("a full bucket did not give exactly its burst")
	}
	if w := b.When(0, 1500); w != 1_500_000 {
		t.Fatalf("1500 bytes at 1 MB/s ready at %d ns", w)
	}
	if b.Take(1_499_999, 1500) || !b.Take(1_500_000, 1500) {
		t.Fatal("Take disagrees with When")
	}
	if b.Take(1e12, burst+1) || b.When(0, burst+1) != math.MaxInt64 {
		t.Fatal("more than the burst granted")
	}
	if b.Available(1e12) != burst {
		t.Fatal("the bucket overfilled")
	}

	// Sent as fast as allowed for one virtual second: the burst plus the rate.
	rng := rand.New(rand.NewPCG(1, 2))
	b.Reset(0, rate, burst)
	now, sent := int64(0), 0
	for {
		n := 60 + rng.IntN(burst-60)
		now = b.When(now, n)
		if now > 1e9 {
			break
		}
		if !b.Take(now, n) {
			t.Fatalf("Take(%d) refused at its When", n)
		}
		sent += n
	}
	if sent > rate+burst || sent < rate+burst-burst {
		t.Fatalf("sent %d bytes in 1 s at %d B/s with burst %d", sent, rate, burst)
	}

	// A fast rate and a long idle time do not overflow.
	b.Reset(0, 1_250_000_000, 1<<30)
	b.Take(0, 1<<30)
	if b.Available(math.MaxInt64/2) != 1<<30 {
		t.Fatal("refill after a long idle time")
	}
	// SetRate keeps what was earned; rate 0 never refills.
	b.Reset(0, rate, burst)
	b.Take(0, burst)
	b.SetRate(500_000, 0)
	if b.Available(1e12) != 500 || b.When(1e12, 501) != math.MaxInt64 {
		t.Fatalf("after SetRate(0): %d available", b.Available(1e12))
	}
	if n := testing.AllocsPerRun(100, func() { b.Take(now, 100); b.When(now, 100) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
