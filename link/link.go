// Package link is what every mechanism's core shares with the engine that
// drives it: a frame in the engine's memory (Frame, named by its Handle),
// the Memory interface through which a core reads frame bytes and takes free
// buffers, and Out, the frames one link port is to transmit.
//
// The cores (linkguardian, cellify, fec) are pure logic over these types;
// the dataplane implements Memory over its UMEM, the simulators over a
// byte arena. The package holds types only: no mechanism's behaviour.
package link

// Handle is the byte address of the first byte of a frame in the engine's
// frame memory (a UMEM address in a dataplane, an arena offset in a
// simulator). Any address inside a buffer identifies that buffer.
type Handle uint64

// Frame is Len bytes at H in the engine's memory.
type Frame struct {
	H   Handle
	Len int
}

// Memory gives a core access to frame buffers in the engine's memory.
// Neither method may allocate: both are on the hot path.
type Memory interface {
	// Bytes returns the n bytes starting at address h.
	Bytes(h Handle, n int) []byte
	// Alloc returns a free buffer holding at least n bytes from its
	// handle, or false when none is available (the core counts it and
	// drops or retries what the buffer was for).
	Alloc(n int) (Handle, bool)
}

// Out lists the frames to transmit on one link port: Ctrl first (the
// priority lane: a mechanism's control frames), then Data.
type Out struct {
	Ctrl  []Frame
	Data  []Frame
	Bytes int // bytes in Ctrl and Data
}
