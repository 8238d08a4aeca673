package link

// Ring is a queue of frames in a ring of fixed size, counting their bytes.
// Once made (NewRing) it allocates nothing.
type Ring struct {
	q       []Frame
	head, n int
	bytes   int
}

// NewRing is a Ring of n frames.
func NewRing(n int) Ring { return Ring{q: make([]Frame, n)} }

// Push queues f at the tail; false if the ring is full.
func (r *Ring) Push(f Frame) bool {
	if r.n == len(r.q) {
		return false
	}
	r.q[(r.head+r.n)%len(r.q)] = f
	r.n++
	r.bytes += f.Len
	return true
}

// Pop takes the frame at the head (the ring must not be empty).
func (r *Ring) Pop() Frame {
	f := r.q[r.head]
	r.head = (r.head + 1) % len(r.q)
	r.n--
	r.bytes -= f.Len
	return f
}

// Head is the frame at the head (the ring must not be empty).
func (r *Ring) Head() Frame { return r.q[r.head] }

// Len is the frames queued, Bytes their bytes, Room the frames that can
// still be pushed.
func (r *Ring) Len() int   { return r.n }
func (r *Ring) Bytes() int { return r.bytes }
func (r *Ring) Room() int  { return len(r.q) - r.n }
