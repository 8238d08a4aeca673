package cellify

import "math/bits"

// Handle is the address of a frame buffer in the caller's memory (a UMEM
// address in a dataplane, an index in a simulator).
type Handle uint64

// Frame is Len bytes at H in the caller's memory.
type Frame struct {
	H   Handle
	Len int
}

// Memory gives a Node access to frame buffers in the caller's memory.
type Memory interface {
	// Alloc returns a free buffer of at least n bytes, or false when none
	// is available (the node counts it and drops what the buffer was for).
	Alloc(n int) (Handle, bool)
	// Bytes returns the n bytes at h. It must not allocate.
	Bytes(h Handle, n int) []byte
}

// LinkOut lists the frames to transmit on one link port, Ctrl first.
type LinkOut struct {
	Ctrl  []Frame // REACH and credit frames: the priority lane
	Cells []Frame
	Bytes int // bytes in Ctrl and Cells
}

// Output collects what a Node's calls produce until Reset.
//
// Every frame handed to the node (HostRx, LinkRx, Respray) or allocated by
// it comes back exactly once: in a link's Ctrl or Cells (ownership passes
// to the caller, which frees the frame once transmitted or hands it to a
// link layer that does), in Deliver (ownership passes to the host side) or
// in Free (the node is done with it). The node holds no frame between
// calls. A forwarded cell or credit frame keeps its handle.
type Output struct {
	Link    []LinkOut // per link port
	Active  uint64    // bit l: Link[l] holds frames
	Deliver [][]Frame // per host port, in stream order
	Free    []Frame
}

func newNodeOutput(links, hosts int) Output {
	o := Output{Link: make([]LinkOut, links), Deliver: make([][]Frame, hosts), Free: make([]Frame, 0, 64)}
	for i := range o.Link {
		o.Link[i].Ctrl = make([]Frame, 0, 8)
		o.Link[i].Cells = make([]Frame, 0, 64)
	}
	for i := range o.Deliver {
		o.Deliver[i] = make([]Frame, 0, 64)
	}
	return o
}

// Reset empties every list, keeping its capacity.
func (o *Output) Reset() {
	for m := o.Active; m != 0; m &= m - 1 {
		l := &o.Link[bits.TrailingZeros64(m)]
		l.Ctrl, l.Cells, l.Bytes = l.Ctrl[:0], l.Cells[:0], 0
	}
	o.Active = 0
	for i := range o.Deliver {
		o.Deliver[i] = o.Deliver[i][:0]
	}
	o.Free = o.Free[:0]
}
