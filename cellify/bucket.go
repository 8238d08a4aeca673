package cellify

import "math"

// TokenBucket limits a byte rate on the virtual clock: it holds up to burst
// bytes and refills at rate bytes per second. The zero value holds nothing and
// never refills; Reset sets it up. It does not allocate.
type TokenBucket struct {
	rate   int64 // bytes per second
	burst  int64 // bytes
	tokens int64 // nanobytes (bytes × 1e9), ≤ burst × 1e9
	last   int64 // ns of the last refill
}

// maxBurst keeps burst × 1e9 within int64.
const maxBurst = math.MaxInt64 / 1_000_000_000

// Reset sets the rate (bytes/s, ≥ 0) and burst (bytes, clamped to
// 0..9.2e9) and fills the bucket at time now.
func (b *TokenBucket) Reset(now, rate, burst int64) {
	b.rate = max(rate, 0)
	b.burst = min(max(burst, 0), maxBurst)
	b.tokens = b.burst * 1e9
	b.last = now
}

// SetRate changes the rate from now on, keeping the tokens earned so far.
func (b *TokenBucket) SetRate(now, rate int64) {
	b.refill(now)
	b.rate = max(rate, 0)
}

// Rate and Burst return the settings.
func (b *TokenBucket) Rate() int64  { return b.rate }
func (b *TokenBucket) Burst() int64 { return b.burst }

func (b *TokenBucket) refill(now int64) {
	dt := now - b.last
	if dt <= 0 {
		return
	}
	b.last = now
	room := b.burst*1e9 - b.tokens
	if b.rate == 0 || room <= 0 {
		return
	}
	if dt >= room/b.rate {
		b.tokens = b.burst * 1e9
		return
	}
	b.tokens += dt * b.rate
}

// Available returns the whole bytes in the bucket at time now.
func (b *TokenBucket) Available(now int64) int64 {
	b.refill(now)
	return b.tokens / 1e9
}

// Take removes n bytes and returns true if the bucket holds them at time
// now; otherwise it leaves the bucket as it is.
func (b *TokenBucket) Take(now int64, n int) bool {
	b.refill(now)
	need := int64(n) * 1e9
	if n < 0 || int64(n) > b.burst || need > b.tokens {
		return false
	}
	b.tokens -= need
	return true
}

// When returns the earliest time ≥ now at which Take(n) can succeed, or
// math.MaxInt64 if never (n above the burst, or no refill).
func (b *TokenBucket) When(now int64, n int) int64 {
	b.refill(now)
	need := int64(n)*1e9 - b.tokens
	switch {
	case n < 0 || int64(n) > b.burst:
		return math.MaxInt64
	case need <= 0:
		return now
	case b.rate == 0:
		return math.MaxInt64
	}
	return now + (need+b.rate-1)/b.rate
}
