package host

// retCap is how many returned frames an agent holds: an exit gate returns
// at most what was queued ahead of the line when a window closed (the
// Backlog) plus a batch, a few dozen frames; an arrival gate at most what
// a switch port held past the slot, its buffer (64 KB on the star: 43
// frames).
const retCap = 256

// retRing holds the frames the gates returned, until a window of their
// destination sends them again (same sequence number and offset: the
// receiver sees a frame reordered, not lost). No allocation after init.
type retRing struct {
	buf   [][2048]byte
	l     [retCap]int
	dst   [retCap]int // -1: free
	n     []int       // frames held per destination
	bytes []int64     // payload bytes held per destination
	total int
}

func (q *retRing) init(hosts int) {
	q.buf = make([][2048]byte, retCap)
	for i := range q.dst {
		q.dst[i] = -1
	}
	q.n, q.bytes = make([]int, hosts), make([]int64, hosts)
}

// put holds frame b (to dst, pay payload bytes); false if full.
func (q *retRing) put(b []byte, dst int, pay int64) bool {
	if dst < 0 || dst >= len(q.n) || len(b) > len(q.buf[0]) {
		return false
	}
	for i := range q.dst {
		if q.dst[i] < 0 {
			q.l[i] = copy(q.buf[i][:], b)
			q.dst[i] = dst
			q.n[dst]++
			q.bytes[dst] += pay
			q.total++
			return true
		}
	}
	return false
}

// find returns the slot of a held frame to dst, -1 if none (any one: the
// receiver counts frames in any order).
func (q *retRing) find(dst int) int {
	if dst < 0 || dst >= len(q.n) || q.n[dst] == 0 {
		return -1
	}
	for i, d := range q.dst {
		if d == dst {
			return i
		}
	}
	return -1
}

// take frees slot i (its frame of pay payload bytes was sent again).
func (q *retRing) take(i int, pay int64) {
	d := q.dst[i]
	q.dst[i] = -1
	q.n[d]--
	q.bytes[d] -= pay
	q.total--
}
