package dataplane

import (
	"testing"

	"github.com/linkfabric/linkfabric/xdp"
)

func newTestRefs(t *testing.T, frames uint32) *frameRefs {
	t.Helper()
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 2048, FrameCount: frames})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return newFrameRefs(u)
}

// A frame returns to the free list only when its owner released it and
// every TX descriptor that refers to it completed, in either order.
func TestFrameRefsFreeWhenReleasedAndCompleted(t *testing.T) {
	r := newTestRefs(t, 4)
	all := r.free.Len()
	a, ok := r.alloc()
	if !ok {
		t.Fatal("alloc from a full free list failed")
	}
	// Sent, then retransmitted twice: three descriptors.
	r.sent(a)
	r.sent(a)
	r.sent(a + 100) // any address inside the frame counts for it
	r.completed(a)
	r.release(a)
	if r.free.Len() != all-1 {
		t.Fatalf("freed with 2 descriptors outstanding: free %d", r.free.Len())
	}
	r.completed(a)
	r.release(a) // a second release of the same hold is harmless
	if r.free.Len() != all-1 {
		t.Fatalf("freed with 1 descriptor outstanding: free %d", r.free.Len())
	}
	r.completed(a)
	if r.free.Len() != all {
		t.Fatalf("not freed after release and the last completion: free %d of %d", r.free.Len(), all)
	}
	// A stray completion does not underflow or free twice.
	r.completed(a)
	if r.free.Len() != all {
		t.Fatalf("stray completion changed the free list: %d", r.free.Len())
	}

	// Released before any descriptor: free at once; a frame that did not
	// fit on the TX ring (never counted sent) likewise.
	b, _ := r.alloc()
	r.release(b)
	if r.free.Len() != all {
		t.Fatalf("released unsent frame not freed: %d", r.free.Len())
	}
	// A received frame is held like an allocated one.
	c, _ := r.free.Pop()
	r.hold(c)
	r.sent(c)
	r.release(c)
	if h, o := r.inFlight(); h != 0 || o != 1 {
		t.Fatalf("in flight: held %d outstanding %d, want 0 and 1", h, o)
	}
	r.completed(c)
	if r.free.Len() != all {
		t.Fatalf("received frame not freed after completion: %d", r.free.Len())
	}
}
