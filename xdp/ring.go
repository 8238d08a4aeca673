package xdp

import "sync/atomic"

// The AF_XDP rings are single-producer single-consumer queues shared with the
// kernel. Each ring has a free-running 32-bit producer index and a free-running
// 32-bit consumer index; an entry's slot is index & mask. Indices wrap at 2^32,
// which is harmless because all arithmetic is done modulo 2^32 and the ring size
// is a power of two no larger than 2^31.
//
// prodRing is the side where this process writes (fill ring, TX ring),
// consRing the side where it reads (completion ring, RX ring). Both work on any
// memory: the mmap'd ring in production, plain Go memory in unit tests.
//
// Neither type is safe for concurrent use: one goroutine per ring.

// prodRing is the producer side of a ring.
type prodRing[T any] struct {
	producer *uint32 // shared: written by us (release), read by the kernel
	consumer *uint32 // shared: written by the kernel, read by us (acquire)
	flags    *uint32 // shared: XDP_RING_NEED_WAKEUP, may be nil
	entries  []T
	mask     uint32
	size     uint32

	cachedProd uint32 // next index to reserve (ahead of *producer by the reserved but unsubmitted count)
	cachedCons uint32 // last consumer index seen plus size: cachedCons-cachedProd is the known free space
	published  uint32 // value last stored to *producer
}

func newProdRing[T any](producer, consumer, flags *uint32, entries []T) prodRing[T] {
	n := uint32(len(entries))
	if n == 0 || n&(n-1) != 0 {
		panic("xdp: ring size must be a power of two")
	}
	p := atomic.LoadUint32(producer)
	return prodRing[T]{
		producer: producer, consumer: consumer, flags: flags,
		entries: entries, mask: n - 1, size: n,
		cachedProd: p, published: p,
		cachedCons: atomic.LoadUint32(consumer) + n,
	}
}

// free returns the number of free entries, re-reading the shared consumer
// index only when the cached view shows fewer than want.
func (r *prodRing[T]) free(want uint32) uint32 {
	f := r.cachedCons - r.cachedProd
	if f >= want {
		return f
	}
	if r.consumer == nil { // closed socket
		return 0
	}
	r.cachedCons = atomic.LoadUint32(r.consumer) + r.size
	return r.cachedCons - r.cachedProd
}

// reserve reserves up to n entries and returns the index of the first one and
// how many were reserved. The caller fills entries[(idx+i)&mask] and then calls
// submit with the same count.
func (r *prodRing[T]) reserve(n uint32) (idx, got uint32) {
	f := r.free(n)
	if n > f {
		n = f
	}
	idx = r.cachedProd
	r.cachedProd += n
	return idx, n
}

// cancel gives back the last n reserved but unsubmitted entries.
func (r *prodRing[T]) cancel(n uint32) { r.cachedProd -= n }

// at returns the entry for index idx.
func (r *prodRing[T]) at(idx uint32) *T { return &r.entries[idx&r.mask] }

// submit publishes n reserved entries to the consumer.
func (r *prodRing[T]) submit(n uint32) {
	r.published += n
	atomic.StoreUint32(r.producer, r.published)
}

// pending is the number of submitted entries the consumer has not consumed yet.
func (r *prodRing[T]) pending() uint32 {
	if r.consumer == nil {
		return 0
	}
	return r.published - atomic.LoadUint32(r.consumer)
}

// needWakeup reports whether the kernel asked to be woken up for this ring.
func (r *prodRing[T]) needWakeup() bool {
	return r.flags != nil && atomic.LoadUint32(r.flags)&ringNeedWakeup != 0
}

// consRing is the consumer side of a ring.
type consRing[T any] struct {
	producer *uint32 // shared: written by the kernel, read by us (acquire)
	consumer *uint32 // shared: written by us (release)
	flags    *uint32
	entries  []T
	mask     uint32
	size     uint32

	cachedProd uint32 // last producer index seen
	cachedCons uint32 // next index to peek (ahead of *consumer by peeked but unreleased count)
	published  uint32 // value last stored to *consumer
}

func newConsRing[T any](producer, consumer, flags *uint32, entries []T) consRing[T] {
	n := uint32(len(entries))
	if n == 0 || n&(n-1) != 0 {
		panic("xdp: ring size must be a power of two")
	}
	c := atomic.LoadUint32(consumer)
	return consRing[T]{
		producer: producer, consumer: consumer, flags: flags,
		entries: entries, mask: n - 1, size: n,
		cachedProd: atomic.LoadUint32(producer), cachedCons: c, published: c,
	}
}

// avail returns the number of entries ready to be peeked, re-reading the shared
// producer index only when the cached view shows fewer than want.
func (r *consRing[T]) avail(want uint32) uint32 {
	a := r.cachedProd - r.cachedCons
	if a >= want {
		return a
	}
	if r.producer == nil { // closed socket
		return 0
	}
	r.cachedProd = atomic.LoadUint32(r.producer)
	return r.cachedProd - r.cachedCons
}

// peek takes up to n ready entries; it returns the index of the first and the
// count. The entries stay valid until release.
func (r *consRing[T]) peek(n uint32) (idx, got uint32) {
	a := r.avail(n)
	if n > a {
		n = a
	}
	idx = r.cachedCons
	r.cachedCons += n
	return idx, n
}

// unpeek returns the last n peeked but unreleased entries to the ring.
func (r *consRing[T]) unpeek(n uint32) { r.cachedCons -= n }

func (r *consRing[T]) at(idx uint32) *T { return &r.entries[idx&r.mask] }

// release hands n peeked entries back to the producer.
func (r *consRing[T]) release(n uint32) {
	r.published += n
	atomic.StoreUint32(r.consumer, r.published)
}

const ringNeedWakeup = 1 // XDP_RING_NEED_WAKEUP
