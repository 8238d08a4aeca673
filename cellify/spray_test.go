package cellify

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

func newTestSprayer(t testing.TB, mode SprayMode, seed uint64, backlog func(int) int) *Sprayer {
	t.Helper()
	s, err := NewSprayer(mode, 0, rand.New(rand.NewPCG(seed, 0x5eed)), backlog)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sprayMaxOverMean returns max/mean of the loads of the links in mask.
func sprayMaxOverMean(load []float64, mask uint64) float64 {
	var sum, mx float64
	for m := mask; m != 0; m &= m - 1 {
		l := load[bits.TrailingZeros64(m)]
		sum += l
		mx = max(mx, l)
	}
	return mx / (sum / float64(bits.OnesCount64(mask)))
}

// perm balances equal cells exactly (no link more than one cell ahead of
// another at any time), so max/mean ≤ 1.02 over 1e5 cells on 4 links.
func TestSprayPermBalanceEqual(t *testing.T) {
	s := newTestSprayer(t, SprayPerm, 1, nil)
	load := make([]float64, 64)
	const mask = 0b1111
	for i := range 100000 {
		l := s.Pick(mask, 0)
		load[l]++
		lo, hi := math.Inf(1), 0.0
		for k := range 4 {
			lo, hi = min(lo, load[k]), max(hi, load[k])
		}
		if hi-lo > 1 {
			t.Fatalf("after %d cells the links carry %v: more than one cell apart", i+1, load[:4])
		}
	}
	if r := sprayMaxOverMean(load, mask); r > 1.02 {
		t.Fatalf("max/mean %.4f", r)
	}
}

// perm over uneven usable sets (odd sizes, scattered and high link
// indices) and cells of random sizes: bytes per link max/mean ≤ 1.02; and
// when the usable set changes every few hundred cells, each link's bytes
// are within 2 % of its fair share of the cells sent while it was usable.
func TestSprayPermBalanceUneven(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, mask := range []uint64{0b101, 0b1_0010_0101, 1<<63 | 1<<40 | 1<<7 | 1<<3 | 1, 0xFF, 0x7F << 20, ^uint64(0)} {
		s := newTestSprayer(t, SprayPerm, mask, nil)
		cells := make([]float64, 64)
		bytes := make([]float64, 64)
		for range 100000 {
			l := s.Pick(mask, 0)
			cells[l]++
			bytes[l] += float64(64 + rng.IntN(449))
		}
		if r := sprayMaxOverMean(cells, mask); r > 1.02 {
			t.Fatalf("usable %#x: cells max/mean %.4f", mask, r)
		}
		// Bytes of random-sized cells balance statistically: with ≤ 8
		// links a link's bytes have a relative deviation below 0.4 %, so
		// 2 % is 5 deviations.
		if r := sprayMaxOverMean(bytes, mask); bits.OnesCount64(mask) <= 8 && r > 1.02 {
			t.Fatalf("usable %#x: bytes max/mean %.4f", mask, r)
		}
	}
	masks := []uint64{0b1111, 0b0111, 0b1101, 0b1011_0110, 0b1010_1010, 0b1_1111}
	s := newTestSprayer(t, SprayPerm, 9, nil)
	load := make([]float64, 64)
	fair := make([]float64, 64)
	for range 400 {
		mask := masks[rng.IntN(len(masks))]
		n := float64(bits.OnesCount64(mask))
		for range 200 + rng.IntN(300) {
			b := float64(64 + rng.IntN(449))
			l := s.Pick(mask, 0)
			if mask&(1<<l) == 0 {
				t.Fatalf("picked link %d outside %#b", l, mask)
			}
			load[l] += b
			for m := mask; m != 0; m &= m - 1 {
				fair[bits.TrailingZeros64(m)] += b / n
			}
		}
	}
	for l := range 8 {
		if math.Abs(load[l]/fair[l]-1) > 0.02 {
			t.Fatalf("link %d carried %.0f bytes, its fair share while usable is %.0f", l, load[l], fair[l])
		}
	}
}

// hash with 4 flows on 4 links uses 4·(1−(3/4)^4) ≈ 2.73 links on average
// (flows from random 5-tuples through FlowHash, a fresh seed each time).
// The tolerance is 4 standard errors of the mean, from the exact
// distribution of the number of links used.
func TestSprayHashFourFlows(t *testing.T) {
	const links, flows, trials = 4, 4, 20000
	want := links * (1 - math.Pow(float64(links-1)/links, flows))
	// The exact variance: enumerate all links^flows assignments.
	var m2 float64
	total := int(math.Pow(links, flows))
	for a := range total {
		var used uint64
		for f, rest := 0, a; f < flows; f, rest = f+1, rest/links {
			used |= 1 << (rest % links)
		}
		d := float64(bits.OnesCount64(used))
		m2 += d * d / float64(total)
	}
	se := math.Sqrt((m2 - want*want) / trials) // standard error of the mean
	rng := rand.New(rand.NewPCG(11, 12))
	var sum float64
	frame := make([]byte, 54)
	fhTCPFrame(frame, 0, 0, 0, 0)
	for tr := range trials {
		s := newTestSprayer(t, SprayHash, uint64(tr), nil)
		seed := rng.Uint64()
		var used uint64
		for range flows {
			fhTCPFrame(frame, rng.Uint32(), rng.Uint32(), uint16(rng.Uint32()), uint16(rng.Uint32()))
			used |= 1 << s.Pick(0b1111, FlowHash(frame, seed))
		}
		sum += float64(bits.OnesCount64(used))
	}
	mean := sum / trials
	if math.Abs(mean-want) > 4*se {
		t.Fatalf("mean links used %.4f, want %.4f ± %.4f (4 standard errors)", mean, want, 4*se)
	}
	t.Logf("mean links used %.4f (expected %.4f, ±%.4f)", mean, want, 4*se)
}

// hash keeps a flow on one link while the usable set is unchanged, and
// spreads flows over all links.
func TestSprayHashStable(t *testing.T) {
	s := newTestSprayer(t, SprayHash, 1, nil)
	const mask = 0b1011_0110
	first := map[uint64]int{}
	var seen uint64
	for i := range 10000 {
		f := uint64(i % 100)
		l := s.Pick(mask, f*0x9e3779b97f4a7c15)
		if p, ok := first[f]; ok && p != l {
			t.Fatalf("flow %d moved from link %d to %d with the usable set unchanged", f, p, l)
		}
		first[f] = l
		seen |= 1 << l
	}
	if seen != mask {
		t.Fatalf("100 flows used links %#b of %#b", seen, mask)
	}
}

// p2c compares two distinct random candidates: the link with the longest
// backlog is never chosen, the shortest wins whenever it is a candidate
// (2/n of the picks).
func TestSprayP2CPrefersShorter(t *testing.T) {
	backlog := []int{500, 0, 300, 100, 200, 400}
	s := newTestSprayer(t, SprayP2C, 3, func(l int) int { return backlog[l] })
	const mask, n, picks = 0b11_1111, 6, 60000
	count := make([]float64, n)
	for range picks {
		count[s.Pick(mask, 0)]++
	}
	if count[0] != 0 {
		t.Fatalf("the longest backlog won %v times", count[0])
	}
	p := 2.0 / n
	sd := math.Sqrt(picks * p * (1 - p))
	if math.Abs(count[1]-picks*p) > 5*sd {
		t.Fatalf("the shortest backlog won %v of %d picks, want %v ± %.0f", count[1], picks, picks*p, 5*sd)
	}
	// The share falls with the backlog: rank r (0 shortest) wins when it is
	// a candidate and the other is longer: 2(n−1−r)/(n(n−1)).
	for l, r := range []int{5, 0, 3, 1, 2, 4} {
		q := 2 * float64(n-1-r) / (n * (n - 1))
		if math.Abs(count[l]-picks*q) > 5*math.Sqrt(picks*q*(1-q))+1 {
			t.Fatalf("link %d (rank %d) won %v, want %.0f", l, r, count[l], picks*q)
		}
	}
}

// p2c keeps queues shorter than random spraying when links drain unevenly.
func TestSprayP2CQueues(t *testing.T) {
	rate := []float64{1, 1, 0.5, 1} // cells per tick, link 2 slow
	run := func(mode SprayMode, backlog []float64) float64 {
		s := newTestSprayer(t, mode, 4, func(l int) int { return int(backlog[l]) })
		peak := 0.0
		for range 100000 {
			for range 3 {
				backlog[s.Pick(0b1111, 0)]++
			}
			for l := range backlog {
				backlog[l] = max(0, backlog[l]-rate[l])
				peak = max(peak, backlog[l])
			}
		}
		return peak
	}
	// perm gives the slow link its quarter (0.75 per tick > 0.5): it grows.
	perm := run(SprayPerm, make([]float64, 4))
	p2c := run(SprayP2C, make([]float64, 4))
	if p2c > 10 || perm < 1000 {
		t.Fatalf("peak backlog: p2c %.0f, perm %.0f; want p2c bounded, perm growing", p2c, perm)
	}
}

// Property: whatever the usable set and however it changes between calls,
// no mode ever returns a link outside it; an empty set gives -1.
func TestSprayNeverExcluded(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	backlog := make([]int, 64)
	for _, mode := range []SprayMode{SprayPerm, SprayP2C, SprayHash} {
		s := newTestSprayer(t, mode, 15, func(l int) int { return backlog[l] })
		mask := ^uint64(0)
		for i := range 200000 {
			switch rng.IntN(8) {
			case 0:
				mask = rng.Uint64() & rng.Uint64() // sparse
			case 1:
				mask &^= 1 << rng.IntN(64) // exclude one
			case 2:
				mask = 1 << rng.IntN(64)
			case 3:
				mask = 0
			case 4:
				mask |= 1 << rng.IntN(64) // a link returns
			}
			backlog[rng.IntN(64)] = rng.IntN(1000)
			l := s.Pick(mask, rng.Uint64())
			if mask == 0 {
				if l != -1 {
					t.Fatalf("%v: empty set gave %d", mode, l)
				}
				continue
			}
			if l < 0 || l > 63 || mask&(1<<l) == 0 {
				t.Fatalf("%v: call %d picked %d outside %#x", mode, i, l, mask)
			}
		}
	}
}

func TestSprayNoAlloc(t *testing.T) {
	backlog := make([]int, 64)
	for _, mode := range []SprayMode{SprayPerm, SprayP2C, SprayHash} {
		s := newTestSprayer(t, mode, 1, func(l int) int { return backlog[l] })
		i := 0
		masks := []uint64{0xF, 0xF0F0, 0xF}
		allocs := testing.AllocsPerRun(10000, func() {
			i++
			l := s.Pick(masks[(i/1000)%3], uint64(i))
			backlog[l]++
		})
		if allocs != 0 {
			t.Fatalf("%v: %v allocations per pick", mode, allocs)
		}
	}
}

func TestSprayModeNames(t *testing.T) {
	for _, m := range []SprayMode{SprayPerm, SprayP2C, SprayHash} {
		if p, err := ParseSprayMode(m.String()); err != nil || p != m {
			t.Fatalf("%v: parsed back as %v, %v", m, p, err)
		}
	}
	if _, err := ParseSprayMode("ecmp"); err == nil {
		t.Fatal("unknown mode accepted")
	}
	if _, err := NewSprayer(SprayPerm, 0, nil, nil); err == nil {
		t.Fatal("a sprayer without a random source was accepted")
	}
}

func BenchmarkSprayPick(b *testing.B) {
	backlog := make([]int, 64)
	for _, mode := range []SprayMode{SprayPerm, SprayP2C, SprayHash} {
		b.Run(mode.String(), func(b *testing.B) {
			s := newTestSprayer(b, mode, 1, func(l int) int { return backlog[l] })
			for i := range b.N {
				backlog[s.Pick(0xFF, uint64(i))]++
			}
		})
	}
}
