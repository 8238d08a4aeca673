package linksim

import "github.com/linkfabric/linkfabric/link"

// Sized is a frame memory that grows on demand with buffers of two sizes,
// Small and Big bytes: a request up to Small gets a small buffer, one up to
// Big a big one, a larger one nothing. It implements link.Memory (a Handle
// is a buffer's index) and knows which buffers are live; what to do with a
// free of a buffer that is not is its user's call (Free reports it).
type Sized struct {
	Small, Big int
	bufs       [][]byte
	live       []bool
	small, big []link.Handle // free buffers of each size
	inUse      int
}

// Alloc implements link.Memory.
func (m *Sized) Alloc(n int) (link.Handle, bool) {
	if n > m.Big {
		return 0, false
	}
	pool, size := &m.small, m.Small
	if n > m.Small {
		pool, size = &m.big, m.Big
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
	return h, true
}

// Bytes implements link.Memory.
func (m *Sized) Bytes(h link.Handle, n int) []byte { return m.bufs[h][:n] }

// Buf returns h's whole buffer.
func (m *Sized) Buf(h link.Handle) []byte { return m.bufs[h] }

// Free returns h's buffer to the free ones and reports true, or reports
// false and does nothing if h is not a live buffer.
func (m *Sized) Free(h link.Handle) bool {
	if int(h) >= len(m.live) || !m.live[h] {
		return false
	}
	m.live[h] = false
	m.inUse--
	if len(m.bufs[h]) == m.Small {
		m.small = append(m.small, h)
	} else {
		m.big = append(m.big, h)
	}
	return true
}

// InUse returns the number of live buffers.
func (m *Sized) InUse() int { return m.inUse }
