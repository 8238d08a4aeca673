// Package sched turns a demand matrix into a round: a sequence of slots,
// each a matching of senders to receivers, built by a pluggable Scheduler
// (Rotor, WRR, BvN). No slot is ever given to a pair without demand, or
// beyond the receiver's free buffer (the paper's §4.2).
package sched

import (
	"errors"
	"fmt"
)

// MaxClasses is the number of TDMA classes per host per round (0..6);
// class 7 is never gated.
const MaxClasses = 7

// Demand is what the hosts reported: Bytes[i][j] queued at i for j,
// RxFree[j] the receive buffer j has free (all senders together), and
// Lost[i] the windows host i has lost so far (grants it found missing that
// no free-run window stood in for), as of its report. Only the Planner
// reads Lost.
type Demand struct {
	N      int
	Bytes  [][]int64
	RxFree []int64
	Lost   []int64
}

// NewDemand returns an N-host demand with nothing queued, unlimited
// receive buffers and no window lost.
func NewDemand(n int) *Demand {
	d := &Demand{N: n, Bytes: make([][]int64, n), RxFree: make([]int64, n), Lost: make([]int64, n)}
	for i := range d.Bytes {
		d.Bytes[i] = make([]int64, n)
		d.RxFree[i] = 1 << 62
	}
	return d
}

// Matching is one slot: Matching[src] is the destination, -1 if src is silent.
type Matching []int16

// Round is a schedule: Slots[k] for slot k, Class[i][j] the class host i
// uses for destination j this round (-1 none), and Budget (nil: none)
// Budget[k][i] the most payload bytes host i's windows of the round to
// its destination in slot k may carry from the round's first slot to the
// end of slot k (0: no bound).
type Round struct {
	ID      uint32
	SlotLen int64
	Guard   int64
	Slots   []Matching
	Class   [][]int8
	Budget  [][]int64
}

// Scheduler builds the slots of a round from a slot-demand matrix n
// (n[i][j] slots wanted from i to j, already capped by demand and receive
// buffer), at most maxSlots slots. It must not modify n.
type Scheduler interface {
	Name() string
	Build(n [][]int, maxSlots int) []Matching
}

// ByName returns the scheduler called name: rotor, wrr or bvn.
func ByName(name string) (Scheduler, error) {
	switch name {
	case "rotor":
		return &Rotor{}, nil
	case "wrr":
		return &WRR{}, nil
	case "bvn":
		return BvN{}, nil
	}
	return nil, fmt.Errorf("scheduler %q: want rotor, wrr or bvn", name)
}

// SlotDemand converts bytes to slots of capacity slotCap bytes:
// n[i][j] = ceil(Bytes[i][j] / slotCap), then each receiver's column is cut
// (largest entries first) to floor(RxFree[j] / slotCap) slots, so no slot
// is granted without demand or receive buffer.
func SlotDemand(d *Demand, slotCap int64) [][]int {
	n := make([][]int, d.N)
	for i := range n {
		n[i] = make([]int, d.N)
		for j := range n[i] {
			if i != j && d.Bytes[i][j] > 0 {
				n[i][j] = int((d.Bytes[i][j] + slotCap - 1) / slotCap)
			}
		}
	}
	for j := 0; j < d.N; j++ {
		cutColumn(n, j, d.RxFree[j]/slotCap)
	}
	return n
}

// cutColumn lowers column j of n, largest entries first, until it sums to
// at most budget. It levels the largest entries down together (the first
// rows lose one more where the excess does not divide evenly), so it takes
// at most N steps however large the demand: an endless sender reports
// ~2^50 bytes, tens of billions of slots.
func cutColumn(n [][]int, j int, budget int64) {
	sum := int64(0)
	for i := range n {
		sum += int64(n[i][j])
	}
	for sum > budget {
		top, next, cnt := 0, 0, int64(0)
		for i := range n {
			switch v := n[i][j]; {
			case v > top:
				top, next, cnt = v, top, 1
			case v == top:
				cnt++
			case v > next:
				next = v
			}
		}
		excess := sum - budget
		if int64(top-next)*cnt <= excess { // every largest entry down to the next level
			for i := range n {
				if n[i][j] == top {
					n[i][j] = next
				}
			}
			sum -= int64(top-next) * cnt
			continue
		}
		q, r := excess/cnt, excess%cnt
		for i := range n {
			if n[i][j] == top {
				cut := q
				if r > 0 {
					cut++
					r--
				}
				n[i][j] -= int(cut)
			}
		}
		sum = budget
	}
}

// Make builds round id from n with s, pairs reciprocal transfers into one
// slot where the matchings allow it (PairReciprocal; not in a Planner's
// tail, whose order puts every pair's last slot in its last N−1, nor in
// its ending round, whose order serves a residue first), cuts the
// round so that no host needs more than MaxClasses destinations, and fills
// in the class map.
func Make(s Scheduler, id uint32, n [][]int, maxSlots int, slotLen, guard int64) *Round {
	slots := s.Build(n, maxSlots)
	switch s.(type) {
	case tail, ending: // their order is their point
	default:
		slots = PairReciprocal(slots)
	}
	N := len(n)
	r := &Round{ID: id, SlotLen: slotLen, Guard: guard, Class: make([][]int8, N)}
	next := make([]int8, N)
	for i := range r.Class {
		r.Class[i] = make([]int8, N)
		for j := range r.Class[i] {
			r.Class[i][j] = -1
		}
	}
	for k, m := range slots {
		// A slot that would give some host an eighth destination ends the round.
		for i, j := range m {
			if j >= 0 && r.Class[i][j] < 0 && next[i] >= MaxClasses {
				r.Slots = slots[:k]
				return r
			}
		}
		for i, j := range m {
			if j >= 0 && r.Class[i][j] < 0 {
				r.Class[i][j] = next[i]
				next[i]++
			}
		}
	}
	r.Slots = slots
	return r
}

// PairReciprocal moves j → i into the slot of i → j wherever j is silent
// and nobody sends to i in that slot, and drops the slots this empties. A
// request and its answer then share one slot, as the paper's RPC (§6.2)
// needs: the server answers at once instead of a slot or a round later.
// Every slot stays a matching and every pair keeps its number of slots, so
// a round never grows; full permutations (rotor's all-to-all) are unchanged.
func PairReciprocal(slots []Matching) []Matching {
	for k, m := range slots {
		for i, j := range m {
			if j < 0 || m[j] >= 0 || receives(m, i) {
				continue
			}
			for k2, m2 := range slots {
				if k2 != k && int(m2[j]) == i {
					m[j], m2[j] = int16(i), -1
					break
				}
			}
		}
	}
	out := slots[:0]
	for _, m := range slots {
		for _, j := range m {
			if j >= 0 {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// receives reports whether anyone sends to host i in m.
func receives(m Matching, i int) bool {
	for _, j := range m {
		if int(j) == i {
			return true
		}
	}
	return false
}

// ErrInvalid is wrapped by every Validate failure.
var ErrInvalid = errors.New("sched: invalid round")

// Validate checks r against the slot demand it was built from: every slot a
// matching (each receiver at most once, no self-sends), no slot empty, no
// pair given more slots than n asks, classes valid and distinct per host.
func Validate(r *Round, n [][]int) error {
	N := len(n)
	got := make([][]int, N)
	for i := range got {
		got[i] = make([]int, N)
	}
	rx := make([]int, N)
	for k, m := range r.Slots {
		if len(m) != N {
			return fmt.Errorf("%w: slot %d has %d entries for %d hosts", ErrInvalid, k, len(m), N)
		}
		for i := range rx {
			rx[i] = -1
		}
		used := false
		for i, j := range m {
			if j < 0 {
				continue
			}
			used = true
			if int(j) >= N || int(j) == i {
				return fmt.Errorf("%w: slot %d: %d → %d", ErrInvalid, k, i, j)
			}
			if rx[j] >= 0 {
				return fmt.Errorf("%w: slot %d: receiver %d gets %d and %d (not a matching)", ErrInvalid, k, j, rx[j], i)
			}
			rx[j] = i
			got[i][j]++
			if got[i][j] > n[i][j] {
				return fmt.Errorf("%w: slot %d: %d → %d beyond its demand of %d slots", ErrInvalid, k, i, j, n[i][j])
			}
			if c := r.Class[i][j]; c < 0 || c >= MaxClasses {
				return fmt.Errorf("%w: %d → %d has class %d", ErrInvalid, i, j, c)
			}
		}
		if !used {
			return fmt.Errorf("%w: slot %d is empty", ErrInvalid, k)
		}
	}
	for i := range r.Class {
		seen := uint8(0)
		for _, c := range r.Class[i] {
			if c < 0 {
				continue
			}
			if seen&(1<<c) != 0 {
				return fmt.Errorf("%w: host %d uses class %d twice", ErrInvalid, i, c)
			}
			seen |= 1 << c
		}
	}
	return nil
}

func clone(n [][]int) [][]int {
	c := make([][]int, len(n))
	for i := range n {
		c[i] = append([]int(nil), n[i]...)
	}
	return c
}

func total(n [][]int) int {
	t := 0
	for _, row := range n {
		for _, v := range row {
			t += v
		}
	}
	return t
}

// AllToAll is the slot demand of a shuffle among n hosts: one slot from
// every host to every other.
func AllToAll(n int) [][]int {
	m := make([][]int, n)
	for i := range m {
		m[i] = make([]int, n)
		for j := range m[i] {
			if i != j {
				m[i][j] = 1
			}
		}
	}
	return m
}
