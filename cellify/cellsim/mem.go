package cellsim

import (
	"fmt"
	"runtime/debug"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link"
)

// Mem is the simulated frame memory: buffers of two sizes, each handle
// live or free. Freeing a frame that is not live panics (a double free is
// a bug in the node or the simulator, never an input).
type Mem struct {
	bufs  [][]byte
	live  []bool
	small []link.Handle
	big   []link.Handle
	inUse int
	Peak  int
}

// Buffer sizes.
const (
	smallBuf = 2048
	bigBuf   = cellify.MaxRecordFrame + 64
)

// Alloc implements link.Memory.
func (m *Mem) Alloc(n int) (link.Handle, bool) {
	if n > bigBuf {
		return 0, false
	}
	pool, size := &m.small, smallBuf
	if n > smallBuf {
		pool, size = &m.big, bigBuf
	}
	var h link.Handle
	if k := len(*pool); k > 0 {
		h = (*pool)[k-1]
		*pool = (*pool)[:k-1]
	} else {
		h = link.Handle(len(m.bufs))
		m.bufs = append(m.bufs, make([]byte, size))
		m.live = append(m.live, false)
	}
	m.live[h] = true
	m.inUse++
	m.Peak = max(m.Peak, m.inUse)
	return h, true
}

// Bytes implements link.Memory.
func (m *Mem) Bytes(h link.Handle, n int) []byte { return m.bufs[h][:n] }

// Free releases a live frame.
func (m *Mem) Free(f link.Frame) {
	if int(f.H) >= len(m.live) || !m.live[f.H] {
		if debugMem != nil {
			panic(fmt.Sprintf("cellsim: frame %d freed but not live; last freed at:\n%s", f.H, debugMem[f.H]))
		}
		panic(fmt.Sprintf("cellsim: frame %d freed but not live", f.H))
	}
	if debugMem != nil {
		debugMem[f.H] = string(debug.Stack())
	}
	m.live[f.H] = false
	m.inUse--
	if len(m.bufs[f.H]) == smallBuf {
		m.small = append(m.small, f.H)
	} else {
		m.big = append(m.big, f.H)
	}
}

// copyOf allocates a copy of f.
func (m *Mem) copyOf(f link.Frame) (link.Frame, bool) {
	h, ok := m.Alloc(f.Len)
	if !ok {
		return link.Frame{}, false
	}
	copy(m.bufs[h], m.bufs[f.H][:f.Len])
	return link.Frame{H: h, Len: f.Len}, true
}

// InUse returns the number of live buffers.
func (m *Mem) InUse() int { return m.inUse }

var debugMem map[link.Handle]string
