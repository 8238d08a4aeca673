package cellsim

// fifo is a growable ring buffer.
type fifo[T any] struct {
	b          []T
	head, size int
}

func (q *fifo[T]) len() int { return q.size }

func (q *fifo[T]) push(v T) {
	if q.size == len(q.b) {
		n := make([]T, max(16, 2*len(q.b)))
		for i := range q.size {
			n[i] = q.b[(q.head+i)%len(q.b)]
		}
		q.b, q.head = n, 0
	}
	q.b[(q.head+q.size)%len(q.b)] = v
	q.size++
}

// pushFront puts v before the head.
func (q *fifo[T]) pushFront(v T) {
	q.push(v) // make room
	q.size--
	q.head = (q.head - 1 + len(q.b)) % len(q.b)
	q.b[q.head] = v
	q.size++
}

func (q *fifo[T]) peek() *T { return &q.b[q.head] }

func (q *fifo[T]) pop() T {
	if q.size == 0 {
		panic("cellsim: pop of an empty queue")
	}
	v := q.b[q.head]
	var zero T
	q.b[q.head] = zero
	q.head = (q.head + 1) % len(q.b)
	q.size--
	return v
}

// at returns the i-th element from the head.
func (q *fifo[T]) at(i int) *T { return &q.b[(q.head+i)%len(q.b)] }
