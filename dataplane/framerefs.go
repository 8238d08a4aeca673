package dataplane

import "github.com/linkfabric/linkfabric/xdp"

// frameRefs decides when a UMEM frame is free again. A frame can be on TX
// rings several times at once (LinkGuardian sends a frame, then retransmits
// the same slot; a cell may sit in several queues) while the pipeline that
// owns it is already done with it (ACKed). So every frame has a count of TX
// descriptors outstanding and a flag "held" (a pipeline, or the host path,
// still owns it). It returns to the free list when it is not held and no
// descriptor refers to it, whichever happens last.
//
// The worker holds a frame when it receives it or a pipeline allocates it,
// counts a descriptor when it places one on a TX ring, and uncounts it at
// completion; a pipeline releases the frame when done. Releasing twice in one
// loop iteration (a frame listed twice) is harmless.
type frameRefs struct {
	umem        *xdp.Umem
	free        *xdp.FreeList
	outstanding []uint16
	held        []bool
}

func newFrameRefs(umem *xdp.Umem) *frameRefs {
	return &frameRefs{
		umem:        umem,
		free:        umem.NewFreeList(),
		outstanding: make([]uint16, umem.FrameCount()),
		held:        make([]bool, umem.FrameCount()),
	}
}

func (r *frameRefs) idx(a uint64) int { return r.umem.FrameIndex(a) }

// alloc takes a free frame and holds it; it returns the frame's base address.
func (r *frameRefs) alloc() (uint64, bool) {
	a, ok := r.free.Pop()
	if ok {
		r.held[r.idx(a)] = true
	}
	return a, ok
}

// hold marks a frame the kernel handed over (received) as owned.
func (r *frameRefs) hold(a uint64) { r.held[r.idx(a)] = true }

// sent counts a descriptor of the frame placed on a TX ring.
func (r *frameRefs) sent(a uint64) { r.outstanding[r.idx(a)]++ }

// release ends the owner's hold; the frame is free once nothing is outstanding.
func (r *frameRefs) release(a uint64) {
	i := r.idx(a)
	if !r.held[i] {
		return // already released (a frame listed twice in one iteration)
	}
	r.held[i] = false
	if r.outstanding[i] == 0 {
		r.free.Push(r.umem.FrameBase(a))
	}
}

// completed uncounts a descriptor the kernel finished transmitting.
func (r *frameRefs) completed(a uint64) {
	i := r.idx(a)
	if r.outstanding[i] == 0 {
		return // not ours to count (cannot happen unless the kernel repeats a completion)
	}
	r.outstanding[i]--
	if r.outstanding[i] == 0 && !r.held[i] {
		r.free.Push(r.umem.FrameBase(a))
	}
}

// inFlight returns how many frames are held or outstanding (for tests).
func (r *frameRefs) inFlight() (held, outstanding int) {
	for i := range r.held {
		if r.held[i] {
			held++
		}
		if r.outstanding[i] > 0 {
			outstanding++
		}
	}
	return held, outstanding
}
