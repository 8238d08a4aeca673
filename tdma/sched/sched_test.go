package sched

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func randMatrix(r *rand.Rand, N, maxv int, density float64) [][]int {
	n := make([][]int, N)
	for i := range n {
		n[i] = make([]int, N)
		for j := range n[i] {
			if i != j && r.Float64() < density {
				n[i][j] = r.IntN(maxv + 1)
			}
		}
	}
	return n
}

func served(slots []Matching, N int) [][]int {
	got := make([][]int, N)
	for i := range got {
		got[i] = make([]int, N)
	}
	for _, m := range slots {
		for i, j := range m {
			if j >= 0 {
				got[i][j]++
			}
		}
	}
	return got
}

func all() []Scheduler { return []Scheduler{&Rotor{}, &WRR{}, BvN{}} }

func TestRotorAllToAllNMinus1(t *testing.T) {
	for N := 2; N <= 8; N++ {
		n := AllToAll(N)
		r := Make(&Rotor{}, 1, n, 1000, 5e6, 3e5)
		if len(r.Slots) != N-1 {
			t.Errorf("N=%d: uniform all-to-all in %d slots, want %d", N, len(r.Slots), N-1)
		}
		if err := Validate(r, n); err != nil {
			t.Error(err)
		}
		for _, m := range r.Slots {
			for i, j := range m {
				if j < 0 {
					t.Errorf("N=%d: host %d idle in a uniform round", N, i)
				}
			}
		}
	}
}

// TestEverySlotIsAMatching: random demand, every scheduler; Validate checks
// matchings, demand bounds and classes, and all demand is served when no
// host needs more than 7 destinations.
func TestEverySlotIsAMatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		N := 2 + rng.IntN(7) // ≤ 8 hosts: ≤ 7 destinations each
		n := randMatrix(rng, N, 6, 0.7)
		for _, s := range all() {
			r := Make(s, 1, n, 10000, 1, 0)
			if err := Validate(r, n); err != nil {
				t.Fatalf("%s N=%d %v: %v", s.Name(), N, n, err)
			}
			got := served(r.Slots, N)
			for i := range n {
				for j := range n {
					if got[i][j] != n[i][j] {
						t.Fatalf("%s: %d → %d served %d of %d slots", s.Name(), i, j, got[i][j], n[i][j])
					}
				}
			}
		}
	}
}

func TestBvNRoundLengthIsMaxLineSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 500; iter++ {
		N := 2 + rng.IntN(7)
		n := randMatrix(rng, N, 9, rng.Float64())
		r := Make(BvN{}, 1, n, 100000, 1, 0)
		if err := Validate(r, n); err != nil {
			t.Fatal(err)
		}
		if want := maxLine(n); len(r.Slots) != want {
			t.Fatalf("N=%d %v: %d slots, max line sum %d", N, n, len(r.Slots), want)
		}
	}
}

// TestNeverScheduleWithoutDemandOrRxBuffer (§4.2): slot demand never
// exceeds the bytes queued, nor, summed over senders, the receiver's free
// buffer; a pair with no bytes never appears in a round.
func TestNeverScheduleWithoutDemandOrRxBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const slotCap = 1000
	for iter := 0; iter < 300; iter++ {
		N := 2 + rng.IntN(7)
		d := NewDemand(N)
		for i := range d.Bytes {
			for j := range d.Bytes[i] {
				if i != j && rng.IntN(3) > 0 {
					d.Bytes[i][j] = rng.Int64N(8 * slotCap)
				}
			}
			if rng.IntN(2) == 0 {
				d.RxFree[i] = rng.Int64N(10 * slotCap)
			}
		}
		n := SlotDemand(d, slotCap)
		for j := 0; j < N; j++ {
			sum := int64(0)
			for i := 0; i < N; i++ {
				if int64(n[i][j])*slotCap >= d.Bytes[i][j]+slotCap {
					t.Fatalf("%d → %d: %d slots for %d bytes", i, j, n[i][j], d.Bytes[i][j])
				}
				sum += int64(n[i][j])
			}
			if sum*slotCap > d.RxFree[j] {
				t.Fatalf("receiver %d: %d slots into %d bytes free", j, sum, d.RxFree[j])
			}
		}
		for _, s := range all() {
			r := Make(s, 1, n, 1000, 1, 0)
			if err := Validate(r, n); err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			for _, m := range r.Slots {
				for i, j := range m {
					if j >= 0 && d.Bytes[i][j] == 0 {
						t.Fatalf("%s: slot for %d → %d with no demand", s.Name(), i, j)
					}
				}
			}
		}
	}
}

// TestWRRBoundedGap: while a sender has slots left, it waits at most N
// slots between two of its slots (§4.3).
func TestWRRBoundedGap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 300; iter++ {
		N := 2 + rng.IntN(7)
		n := randMatrix(rng, N, 8, 0.8)
		slots := (&WRR{first: rng.IntN(N)}).Build(n, 10000)
		rowLeft := make([]int, N)
		for i := range n {
			for _, v := range n[i] {
				rowLeft[i] += v
			}
		}
		last := make([]int, N)
		for i := range last {
			last[i] = -1
		}
		for k, m := range slots {
			for i := range m {
				if m[i] >= 0 {
					if k-last[i] > N {
						t.Fatalf("N=%d: host %d waited %d slots", N, i, k-last[i])
					}
					last[i] = k
					rowLeft[i]--
				} else if rowLeft[i] > 0 && k-last[i] > N {
					t.Fatalf("N=%d: host %d with %d slots left idle for %d slots", N, i, rowLeft[i], k-last[i])
				}
			}
		}
	}
}

// TestValidateCatches: Validate is not a tautology.
func TestValidateCatches(t *testing.T) {
	n := [][]int{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}}
	bad := []*Round{
		{Slots: []Matching{{1, 1, -1}}, Class: [][]int8{{-1, 0, -1}, {-1, -1, -1}, {-1, -1, -1}}},    // receiver 1 twice
		{Slots: []Matching{{-1, -1, -1}}, Class: [][]int8{{-1, -1, -1}, {-1, -1, -1}, {-1, -1, -1}}}, // empty
		{Slots: []Matching{{1, -1, -1}, {1, -1, -1}}, Class: [][]int8{{-1, 0, -1}, {-1, -1, -1}, {-1, -1, -1}}},
		{Slots: []Matching{{0, -1, -1}}, Class: [][]int8{{0, -1, -1}, {-1, -1, -1}, {-1, -1, -1}}}, // self
		{Slots: []Matching{{1, 2, -1}}, Class: [][]int8{{-1, 0, -1}, {-1, -1, -1}, {-1, -1, -1}}},  // no class
	}
	for i, r := range bad {
		if err := Validate(r, n); !errors.Is(err, ErrInvalid) {
			t.Errorf("bad round %d passed: %v", i, err)
		}
	}
}

// TestClassCut: a host with 9 destinations gets at most 7 classes per round.
func TestClassCut(t *testing.T) {
	N := 10
	n := AllToAll(N)
	for _, s := range all() {
		r := Make(s, 1, n, 1000, 1, 0)
		if err := Validate(r, n); err != nil {
			t.Fatal(err)
		}
		if len(r.Slots) == 0 || len(r.Slots) > MaxClasses {
			t.Errorf("%s: %d slots", s.Name(), len(r.Slots))
		}
	}
}

// FuzzSchedulers: any slot-demand matrix gives valid rounds from every scheduler.
func FuzzSchedulers(f *testing.F) {
	f.Add([]byte{4, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, uint16(50))
	f.Add([]byte{8, 255, 0, 0, 255}, uint16(3))
	f.Fuzz(func(t *testing.T, b []byte, maxSlots uint16) {
		if len(b) == 0 {
			return
		}
		N := 2 + int(b[0])%10
		n := make([][]int, N)
		for i := range n {
			n[i] = make([]int, N)
			for j := range n[i] {
				if k := 1 + i*N + j; i != j && k < len(b) {
					n[i][j] = int(b[k] % 16)
				}
			}
		}
		for _, s := range all() {
			r := Make(s, 1, n, int(maxSlots%300), 1, 0)
			if err := Validate(r, n); err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
			if len(r.Slots) > int(maxSlots%300) {
				t.Fatalf("%s: %d slots over the cap", s.Name(), len(r.Slots))
			}
		}
	})
}

// TestPairReciprocalRPC: the RPC setup of §6.2 on 4 hosts (h1, h2 bulk
// into h3; h4 pings h3, h3 answers): with every scheduler the ping h4 → h3
// and the answer h3 → h4 share a slot (Validate: within the demand).
func TestPairReciprocalRPC(t *testing.T) {
	n := [][]int{{0, 0, 9, 0}, {0, 0, 9, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}}
	for _, s := range all() {
		r := Make(s, 1, n, 12, 1, 0)
		if err := Validate(r, n); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		paired := false
		for _, m := range r.Slots {
			if m[3] == 2 {
				paired = m[2] == 3
			}
		}
		if !paired {
			t.Errorf("%s: h4 → h3 and h3 → h4 in different slots: %v", s.Name(), r.Slots)
		}
	}
}

// TestPairReciprocalKeepsCounts: on random rounds the pass keeps every
// slot a matching and every pair's number of slots, and never adds slots.
func TestPairReciprocalKeepsCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for iter := 0; iter < 300; iter++ {
		N := 2 + rng.IntN(7)
		n := randMatrix(rng, N, 4, 0.5)
		for _, s := range all() {
			slots := s.Build(n, 10000)
			before := served(slots, N)
			k := len(slots)
			after := PairReciprocal(slots)
			if len(after) > k {
				t.Fatalf("%s: %d slots became %d", s.Name(), k, len(after))
			}
			got := served(after, N)
			for i := range n {
				for j := range n {
					if got[i][j] != before[i][j] {
						t.Fatalf("%s: %d → %d had %d slots, has %d", s.Name(), i, j, before[i][j], got[i][j])
					}
				}
			}
			if N > MaxClasses {
				continue
			}
			r := &Round{Slots: after, Class: allClasses(N)} // distinct, < MaxClasses
			if err := Validate(r, n); err != nil {
				t.Fatalf("%s: %v", s.Name(), err)
			}
		}
	}
}

// TestSlotDemandEndless: endless senders (the FM caps a report at 2^50
// bytes, ~2·10^10 slots) into a receiver with a finite buffer are cut to
// the buffer at once, largest first, evenly.
func TestSlotDemandEndless(t *testing.T) {
	d := NewDemand(4)
	d.Bytes[0][2], d.Bytes[1][2], d.Bytes[3][2] = 1<<50, 1<<50, 100
	d.RxFree[2] = 1 << 40
	const slotCap = 56250
	done := make(chan [][]int, 1)
	go func() { done <- SlotDemand(d, slotCap) }()
	var n [][]int
	select {
	case n = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("SlotDemand took over 5 s")
	}
	budget := int(d.RxFree[2] / slotCap)
	if sum := n[0][2] + n[1][2] + n[3][2]; sum != budget {
		t.Errorf("column sums to %d slots, want the buffer's %d", sum, budget)
	}
	if n[3][2] != 1 || n[0][2]-n[1][2] > 1 || n[1][2]-n[0][2] > 1 {
		t.Errorf("cut %v: want the small entry kept and the large ones level", []int{n[0][2], n[1][2], n[3][2]})
	}
}
