package sched

// Rotor cycles through the N−1 shifts i → (i+k) mod N, the optimal order
// for uniform all-to-all. A pair with no demand left is silent in its slot;
// a shift with no pair left is skipped. The next shift carries over to the
// next round, so short rounds still visit every shift.
type Rotor struct{ next int }

// Name implements Scheduler.
func (*Rotor) Name() string { return "rotor" }

// Build implements Scheduler.
func (r *Rotor) Build(n [][]int, maxSlots int) []Matching {
	N := len(n)
	if N < 2 {
		return nil
	}
	left := clone(n)
	rem := total(left)
	var out []Matching
	for idle := 0; rem > 0 && len(out) < maxSlots && idle < N-1; {
		k := r.next%(N-1) + 1
		r.next++
		m := make(Matching, N)
		any := false
		for i := range m {
			j := (i + k) % N
			m[i] = -1
			if left[i][j] > 0 {
				m[i] = int16(j)
				left[i][j]--
				rem--
				any = true
			}
		}
		if !any {
			idle++
			continue
		}
		idle = 0
		out = append(out, m)
	}
	return out
}
