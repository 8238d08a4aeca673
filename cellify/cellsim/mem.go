package cellsim

import (
	"fmt"
	"runtime/debug"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
)

// Mem is the simulated frame memory: buffers of two sizes, each handle
// live or free. Freeing a frame that is not live panics (a double free is
// a bug in the node or the simulator, never an input).
type Mem struct {
	linksim.Sized
	Peak int
}

// newMem returns an empty Mem.
func newMem() *Mem {
	return &Mem{Sized: linksim.Sized{Small: 2048, Big: cellify.MaxRecordFrame + 64}}
}

// Alloc implements link.Memory.
func (m *Mem) Alloc(n int) (link.Handle, bool) {
	h, ok := m.Sized.Alloc(n)
	m.Peak = max(m.Peak, m.InUse())
	return h, ok
}

// Free releases a live frame.
func (m *Mem) Free(f link.Frame) {
	if !m.Sized.Free(f.H) {
		if debugMem != nil {
			panic(fmt.Sprintf("cellsim: frame %d freed but not live; last freed at:\n%s", f.H, debugMem[f.H]))
		}
		panic(fmt.Sprintf("cellsim: frame %d freed but not live", f.H))
	}
	if debugMem != nil {
		debugMem[f.H] = string(debug.Stack())
	}
}

// copyOf allocates a copy of f.
func (m *Mem) copyOf(f link.Frame) (link.Frame, bool) {
	h, ok := m.Alloc(f.Len)
	if !ok {
		return link.Frame{}, false
	}
	copy(m.Buf(h), m.Bytes(f.H, f.Len))
	return link.Frame{H: h, Len: f.Len}, true
}

var debugMem map[link.Handle]string
