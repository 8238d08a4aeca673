package cellify

import (
	"errors"
	"math/bits"
	"math/rand/v2"
)

// SprayMode selects how a Sprayer picks a link per cell.
type SprayMode uint8

const (
	// SprayPerm: round-robin over a random permutation of the usable links,
	// reshuffled every few rounds (Stardust).
	SprayPerm SprayMode = iota
	// SprayP2C: two random usable links, the one with the shorter backlog
	// wins (power of two choices, Aquila-like local adaptivity).
	SprayP2C
	// SprayHash: one link per flow hash (ECMP); stable while the usable
	// set is unchanged.
	SprayHash
)

var sprayModeNames = [...]string{SprayPerm: "perm", SprayP2C: "p2c", SprayHash: "hash"}

func (m SprayMode) String() string {
	if int(m) < len(sprayModeNames) {
		return sprayModeNames[m]
	}
	return "SprayMode(?)"
}

// ParseSprayMode parses "perm", "p2c" or "hash".
func ParseSprayMode(s string) (SprayMode, error) {
	for m, n := range sprayModeNames {
		if n == s {
			return SprayMode(m), nil
		}
	}
	return 0, errors.New("cellify: spray mode must be perm, p2c or hash")
}

// DefaultSprayRounds is how many rounds a SprayPerm permutation serves
// before it is reshuffled.
const DefaultSprayRounds = 4

// Sprayer picks a link per cell among a set of usable links (bit i of a
// mask: link i, up to 64). Keep one per destination: the permutation's
// round-robin position belongs to one usable set. It does not allocate.
type Sprayer struct {
	mode    SprayMode
	rounds  int
	rng     *rand.Rand
	backlog func(link int) int

	mask  uint64 // the set the permutation was built for
	perm  [64]uint8
	n     int
	pos   int
	round int
}

// NewSprayer returns a sprayer. rounds is SprayPerm's reshuffle period (0:
// DefaultSprayRounds). backlog reports a link's transmit backlog for
// SprayP2C (nil: p2c picks at random).
func NewSprayer(mode SprayMode, rounds int, rng *rand.Rand, backlog func(link int) int) (*Sprayer, error) {
	if mode > SprayHash {
		return nil, errors.New("cellify: unknown spray mode")
	}
	if rng == nil {
		return nil, errors.New("cellify: a sprayer needs a seeded random source")
	}
	if rounds < 0 {
		return nil, errors.New("cellify: spray rounds must be ≥ 0")
	}
	if rounds == 0 {
		rounds = DefaultSprayRounds
	}
	return &Sprayer{mode: mode, rounds: rounds, rng: rng, backlog: backlog}, nil
}

// Mode returns the sprayer's mode.
func (s *Sprayer) Mode() SprayMode { return s.mode }

// Pick returns a link of usable for the next cell (flow is the cell's flow
// hash, used by SprayHash only), or -1 if usable is empty. It never
// returns a link outside usable, whatever the set was at earlier calls.
func (s *Sprayer) Pick(usable uint64, flow uint64) int {
	if usable == 0 {
		return -1
	}
	switch s.mode {
	case SprayP2C:
		return s.p2c(usable)
	case SprayHash:
		n := bits.OnesCount64(usable)
		k, _ := bits.Mul64(fhFinal(flow), uint64(n))
		return sprayKth(usable, int(k))
	}
	if usable != s.mask {
		s.rebuild(usable)
	}
	l := int(s.perm[s.pos])
	if s.pos++; s.pos == s.n {
		s.pos = 0
		if s.round++; s.round >= s.rounds {
			s.round = 0
			s.shuffle()
		}
	}
	return l
}

func (s *Sprayer) rebuild(usable uint64) {
	s.mask, s.n, s.pos, s.round = usable, 0, 0, 0
	for m := usable; m != 0; m &= m - 1 {
		s.perm[s.n] = uint8(bits.TrailingZeros64(m))
		s.n++
	}
	s.shuffle()
}

func (s *Sprayer) shuffle() {
	for i := s.n - 1; i > 0; i-- {
		j := s.rng.IntN(i + 1)
		s.perm[i], s.perm[j] = s.perm[j], s.perm[i]
	}
}

func (s *Sprayer) p2c(usable uint64) int {
	n := bits.OnesCount64(usable)
	if n == 1 {
		return bits.TrailingZeros64(usable)
	}
	// Two draws from one random word (multiply-shift; bias ≤ 64/2^32).
	x := s.rng.Uint64()
	i := int(uint64(uint32(x)) * uint64(n) >> 32)
	j := int((x >> 32) * uint64(n-1) >> 32)
	if j >= i {
		j++
	}
	a, b := sprayKth(usable, i), sprayKth(usable, j)
	if s.backlog != nil && s.backlog(b) < s.backlog(a) {
		return b
	}
	return a
}

// sprayKth returns the index of the k-th (from 0) set bit of m; k < popcount(m).
func sprayKth(m uint64, k int) int {
	for ; k > 0; k-- {
		m &= m - 1
	}
	return bits.TrailingZeros64(m)
}
