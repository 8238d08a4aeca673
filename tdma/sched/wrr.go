package sched

// WRR is the paper's weighted round-robin (§4.3, §5.2.2): in each slot the
// hosts are visited in a fixed order whose first host rotates by one per
// slot; each visited host takes, among its destinations still free in this
// slot, the one with the most slots left. A host with demand is first in
// the order at least once every N slots, so the gap between its slots is
// at most N.
type WRR struct{ first int }

// Name implements Scheduler.
func (*WRR) Name() string { return "wrr" }

// Build implements Scheduler.
func (w *WRR) Build(n [][]int, maxSlots int) []Matching {
	N := len(n)
	left := clone(n)
	rem := total(left)
	var out []Matching
	taken := make([]bool, N)
	for rem > 0 && len(out) < maxSlots {
		m := make(Matching, N)
		for i := range taken {
			taken[i] = false
			m[i] = -1
		}
		for v := 0; v < N; v++ {
			i := (w.first + v) % N
			best := -1
			for j := 0; j < N; j++ {
				if left[i][j] > 0 && !taken[j] && (best < 0 || left[i][j] > left[i][best]) {
					best = j
				}
			}
			if best >= 0 {
				m[i] = int16(best)
				taken[best] = true
				left[i][best]--
				rem--
			}
		}
		w.first = (w.first + 1) % N
		out = append(out, m)
	}
	return out
}
