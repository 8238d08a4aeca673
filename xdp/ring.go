package xdp

import "sync/atomic"

// The AF_XDP rings are single-producer single-consumer queues shared with the
// kernel. Each ring has a free-running 32-bit producer index and a free-running
// 32-bit consumer index; an entry's slot is index & mask. Indices wrap at 2^32,
// which is harmless because all arithmetic is done modulo 2^32 and the ring size
// is a power of two no larger than 2^31.
//
// prodRing is the side where this process writes (fill ring, TX ring),
// consRing the side where it reads (completion ring, RX ring). Both are a
// ring seen from one end: this process advances one index (ours) and reads
// the other (theirs). Both work on any memory: the mmap'd ring in production,
// plain Go memory in unit tests.
//
// Neither type is safe for concurrent use: one goroutine per ring.

// ring is one end of a ring.
type ring[T any] struct {
	ours    *uint32 // shared: written by us (release), read by the other end
	theirs  *uint32 // shared: written by the other end, read by us (acquire)
	flags   *uint32 // shared: XDP_RING_NEED_WAKEUP, may be nil
	entries []T
	mask    uint32
	size    uint32

	// next is the next index to take, ahead of *ours by the count taken but
	// not yet published; limit is the last index of theirs seen plus lead,
	// so that limit-next is the known count we may take.
	next, limit uint32
	lead        uint32 // size for a producer (free space), 0 for a consumer
	published   uint32 // value last stored to *ours
}

func newRing[T any](ours, theirs, flags *uint32, entries []T, producer bool) ring[T] {
	n := uint32(len(entries))
	if n == 0 || n&(n-1) != 0 {
		panic("xdp: ring size must be a power of two")
	}
	var lead uint32
	if producer {
		lead = n
	}
	o := atomic.LoadUint32(ours)
	return ring[T]{
		ours: ours, theirs: theirs, flags: flags,
		entries: entries, mask: n - 1, size: n,
		next: o, published: o, lead: lead,
		limit: atomic.LoadUint32(theirs) + lead,
	}
}

// ready returns the number of entries that may be taken, re-reading the
// other end's index only when the cached view shows fewer than want.
func (r *ring[T]) ready(want uint32) uint32 {
	f := r.limit - r.next
	if f >= want {
		return f
	}
	if r.theirs == nil { // closed socket
		return 0
	}
	r.limit = atomic.LoadUint32(r.theirs) + r.lead
	return r.limit - r.next
}

// take takes up to n entries and returns the index of the first one and how
// many were taken.
func (r *ring[T]) take(n uint32) (idx, got uint32) {
	f := r.ready(n)
	if n > f {
		n = f
	}
	idx = r.next
	r.next += n
	return idx, n
}

// untake gives back the last n taken but unpublished entries.
func (r *ring[T]) untake(n uint32) { r.next -= n }

// at returns the entry for index idx.
func (r *ring[T]) at(idx uint32) *T { return &r.entries[idx&r.mask] }

// publish hands n taken entries to the other end.
func (r *ring[T]) publish(n uint32) {
	r.published += n
	atomic.StoreUint32(r.ours, r.published)
}

// put takes room for up to len(src) entries, copies src's first ones in
// and publishes them; it returns how many.
func (r *ring[T]) put(src []T) uint32 {
	idx, n := r.take(uint32(len(src)))
	if n == 0 {
		return 0
	}
	for i := range n {
		*r.at(idx + i) = src[i]
	}
	r.publish(n)
	return n
}

// get takes up to len(dst) entries, copies them into dst and publishes them
// (gives the slots back); it returns how many.
func (r *ring[T]) get(dst []T) uint32 {
	idx, n := r.take(uint32(len(dst)))
	if n == 0 {
		return 0
	}
	for i := range n {
		dst[i] = *r.at(idx + i)
	}
	r.publish(n)
	return n
}

// prodRing is the producer side of a ring: take reserves free entries (ready
// counts them), the caller fills them, publish submits them to the consumer
// (untake gives back reserved but unsubmitted ones).
type prodRing[T any] struct{ ring[T] }

func newProdRing[T any](producer, consumer, flags *uint32, entries []T) prodRing[T] {
	return prodRing[T]{newRing(producer, consumer, flags, entries, true)}
}

// consumed returns the consumer's index as it stands.
func (r *prodRing[T]) consumed() uint32 { return atomic.LoadUint32(r.theirs) }

// pending is the number of submitted entries the consumer has not consumed yet.
func (r *prodRing[T]) pending() uint32 {
	if r.theirs == nil {
		return 0
	}
	return r.published - r.consumed()
}

// needWakeup reports whether the kernel asked to be woken up for this ring.
func (r *prodRing[T]) needWakeup() bool {
	return r.flags != nil && atomic.LoadUint32(r.flags)&ringNeedWakeup != 0
}

// consRing is the consumer side of a ring: take peeks at ready entries
// (ready counts them), which stay valid until publish releases them to the
// producer (untake returns peeked but unreleased ones to the ring).
type consRing[T any] struct{ ring[T] }

func newConsRing[T any](producer, consumer, flags *uint32, entries []T) consRing[T] {
	return consRing[T]{newRing(consumer, producer, flags, entries, false)}
}

const ringNeedWakeup = 1 // XDP_RING_NEED_WAKEUP
