package simfab

import (
	"fmt"
	"runtime/debug"

	"github.com/linkfabric/linkfabric/cellify"
)

// Mem is the simulated frame memory: buffers of two sizes, each handle
// live or free. Freeing a frame that is not live panics (a double free is
// a bug in the node or the simulator, never an input).
type Mem struct {
	bufs  [][]byte
	live  []bool
	small []cellify.Handle
	big   []cellify.Handle
	inUse int
	Peak  int
}

// Buffer sizes.
const (
	smallBuf = 2048
	bigBuf   = cellify.MaxRecordFrame + 64
)

// Alloc implements cellify.Memory.
func (m *Mem) Alloc(n int) (cellify.Handle, bool) {
	if n > bigBuf {
		return 0, false
	}
	pool, size := &m.small, smallBuf
	if n > smallBuf {
		pool, size = &m.big, bigBuf
	}
	var h cellify.Handle
	if k := len(*pool); k > 0 {
		h = (*pool)[k-1]
		*pool = (*pool)[:k-1]
	} else {
		h = cellify.Handle(len(m.bufs))
		m.bufs = append(m.bufs, make([]byte, size))
		m.live = append(m.live, false)
	}
	m.live[h] = true
	m.inUse++
	m.Peak = max(m.Peak, m.inUse)
	return h, true
}

// Bytes implements cellify.Memory.
func (m *Mem) Bytes(h cellify.Handle, n int) []byte { return m.bufs[h][:n] }

// Free releases a live frame.
func (m *Mem) Free(f cellify.Frame) {
	if int(f.H) >= len(m.live) || !m.live[f.H] {
		if debugMem != nil {
			panic(fmt.Sprintf("simfab: frame %d freed but not live; last freed at:\n%s", f.H, debugMem[f.H]))
		}
		panic(fmt.Sprintf("simfab: frame %d freed but not live", f.H))
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
func (m *Mem) copyOf(f cellify.Frame) (cellify.Frame, bool) {
	h, ok := m.Alloc(f.Len)
	if !ok {
		return cellify.Frame{}, false
	}
	copy(m.bufs[h], m.bufs[f.H][:f.Len])
	return cellify.Frame{H: h, Len: f.Len}, true
}

// InUse returns the number of live buffers.
func (m *Mem) InUse() int { return m.inUse }

var debugMem map[cellify.Handle]string
