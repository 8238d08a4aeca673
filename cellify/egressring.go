package cellify

// egressRing attributes the bytes in a host port's queue to the VOQs
// whose cells brought them: the queue is a FIFO, so the bytes that left
// it are the oldest arrivals. It holds runs of arrivals (a VOQ and its
// bytes, consecutive arrivals of one VOQ in one run); in is the total
// ever arrived, out the total known to have left. A full ring takes its
// oldest run for departed (that VOQ's part of the queue is undercounted,
// the others' overcounted, until the queue empties).
type egressRing struct {
	b          []egressRun
	head, size int
	in, out    uint64
}

type egressRun struct {
	vi    int32
	bytes uint32
}

// egressRuns is the ring's capacity: a 2 MiB queue of 1500 B frames,
// every arrival from another VOQ than the last, fits.
const egressRuns = 2048

// egArrive attributes bytes that arrived for VOQ vi to the port's queue.
func (s *Scheduler) egArrive(vi int32, bytes int) {
	r := &s.egq
	v := &s.voqs[vi]
	r.in += uint64(bytes)
	s.setEg(v, v.eg+uint64(bytes))
	if r.size > 0 {
		if t := &r.b[(r.head+r.size-1)%len(r.b)]; t.vi == vi && uint64(t.bytes)+uint64(bytes) <= 1<<31 {
			t.bytes += uint32(bytes)
			return
		}
	}
	if r.size == len(r.b) {
		s.egLeave(uint64(r.b[r.head].bytes))
	}
	r.b[(r.head+r.size)%len(r.b)] = egressRun{vi: vi, bytes: uint32(bytes)}
	r.size++
}

// egDepart takes the port's queue, q bytes (as SetEgressQueue): what
// arrived beyond it has left, the oldest arrivals first.
func (s *Scheduler) egDepart(q int) {
	r := &s.egq
	if q < 0 || uint64(q) >= r.in {
		return
	}
	if gone := r.in - uint64(q); gone > r.out {
		s.egLeave(gone - r.out)
	}
}

// egLeave takes b bytes off the head of the ring.
func (s *Scheduler) egLeave(b uint64) {
	r := &s.egq
	r.out += b
	for b > 0 && r.size > 0 {
		h := &r.b[r.head]
		n := min(b, uint64(h.bytes))
		v := &s.voqs[h.vi]
		s.setEg(v, v.eg-min(n, v.eg))
		b -= n
		if h.bytes -= uint32(n); h.bytes == 0 {
			r.head = (r.head + 1) % len(r.b)
			r.size--
		}
	}
}

// setEg sets v's bytes in the port's queue, keeping the count of VOQs
// present there without wanting credit.
func (s *Scheduler) setEg(v *schedVOQ, b uint64) {
	switch {
	case v.eg == 0 && b > 0 && !v.active:
		s.egIdle++
	case v.eg > 0 && b == 0 && !v.active:
		s.egIdle--
	}
	v.eg = b
}
