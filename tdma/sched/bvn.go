package sched

// BvN is Birkhoff–von Neumann decomposition: n is padded with dummy entries
// to a matrix whose every row and column sums to M, the largest line sum of
// n; then perfect matchings on its support are peeled off, each repeated as
// many times as its smallest entry. Slots carry only real demand, and a
// slot left empty by the padding is dropped, so the round has exactly M
// slots: the fewest any schedule of matchings can have (König).
type BvN struct{}

// Name implements Scheduler.
func (BvN) Name() string { return "bvn" }

// Build implements Scheduler.
func (BvN) Build(n [][]int, maxSlots int) []Matching {
	N := len(n)
	real := clone(n)
	for i := range real {
		real[i][i] = 0
	}
	row, col := make([]int, N), make([]int, N)
	M := 0
	for i := range real {
		for j, v := range real[i] {
			row[i] += v
			col[j] += v
		}
	}
	for i := 0; i < N; i++ {
		M = max(M, row[i], col[i])
	}
	if M == 0 {
		return nil
	}
	// Greedy padding: any deficit pair (i, j) takes min of both deficits;
	// it ends with all line sums M because row and column deficits total the same.
	dummy := make([][]int, N)
	for i := range dummy {
		dummy[i] = make([]int, N)
	}
	for i := 0; i < N; i++ {
		for j := 0; j < N && row[i] < M; j++ {
			a := min(M-row[i], M-col[j])
			dummy[i][j] += a
			row[i] += a
			col[j] += a
		}
	}
	var out []Matching
	match := make([]int, N)
	for len(out) < maxSlots {
		if !perfectMatching(real, dummy, match) {
			break
		}
		w := 1 << 30
		for i, j := range match {
			w = min(w, real[i][j]+dummy[i][j])
		}
		// Take real demand first; senders with real demand for fewer than w
		// slots go silent in the later copies.
		takeReal := make([]int, N)
		for i, j := range match {
			takeReal[i] = min(w, real[i][j])
			real[i][j] -= takeReal[i]
			dummy[i][j] -= w - takeReal[i]
		}
		for t := 0; t < w && len(out) < maxSlots; t++ {
			m := make(Matching, N)
			any := false
			for i, j := range match {
				m[i] = -1
				if t < takeReal[i] {
					m[i] = int16(j)
					any = true
				}
			}
			if any {
				out = append(out, m)
			}
		}
	}
	return out
}

// perfectMatching finds a perfect matching on the support of a+b (Kuhn's
// augmenting paths), writing match[row] = column.
func perfectMatching(a, b [][]int, match []int) bool {
	N := len(a)
	colOf := make([]int, N)
	for j := range colOf {
		colOf[j] = -1
	}
	seen := make([]bool, N)
	var try func(i int) bool
	try = func(i int) bool {
		// Prefer real demand so dummy-only edges are used when nothing else fits.
		for pass := 0; pass < 2; pass++ {
			for j := 0; j < N; j++ {
				if seen[j] || a[i][j]+b[i][j] == 0 || (pass == 0) != (a[i][j] > 0) {
					continue
				}
				seen[j] = true
				if colOf[j] < 0 || try(colOf[j]) {
					colOf[j] = i
					return true
				}
			}
		}
		return false
	}
	for i := 0; i < N; i++ {
		for j := range seen {
			seen[j] = false
		}
		if !try(i) {
			return false
		}
	}
	for j, i := range colOf {
		match[i] = j
	}
	return true
}
