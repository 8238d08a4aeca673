// Package linksim holds what the simulators of every link mechanism share:
// Pool, a UMEM-like frame memory implementing link.Memory, and the random
// loss models (Bernoulli, Bursty) a simulated link applies. Seeded and on
// the caller's clock, like the cores they drive.
package linksim

import (
	"fmt"

	"github.com/linkfabric/linkfabric/link"
)

// Pool is a UMEM-like frame memory: one flat byte arena cut into fixed-size
// buffers. A Handle is a byte address in the arena; any address inside a
// buffer identifies that buffer (as in an aligned AF_XDP UMEM). It implements
// link.Memory and checks ownership: Free of a buffer that is not in use is
// recorded as an error.
type Pool struct {
	mem      []byte
	bufSize  int
	headroom int
	free     []int32
	inUse    []bool
	n        int
	peak     int
	allocs   uint64
	errs     []string
}

// NewPool returns a pool of n buffers of bufSize bytes; frames start headroom
// bytes into their buffer.
func NewPool(n, bufSize, headroom int) *Pool {
	p := &Pool{mem: make([]byte, n*bufSize), bufSize: bufSize, headroom: headroom, free: make([]int32, n), inUse: make([]bool, n)}
	for i := range p.free {
		p.free[i] = int32(n - 1 - i)
	}
	return p
}

// Bytes implements link.Memory.
func (p *Pool) Bytes(h link.Handle, n int) []byte { return p.mem[h : int(h)+n : int(h)+n] }

// Alloc implements link.Memory: a buffer whose frame starts at its
// headroom. A request for more than a buffer holds from there is recorded as
// an error and fails.
func (p *Pool) Alloc(n int) (link.Handle, bool) {
	if n > p.bufSize-p.headroom {
		p.errs = append(p.errs, fmt.Sprintf("alloc of %d bytes: buffers hold %d", n, p.bufSize-p.headroom))
		return 0, false
	}
	if len(p.free) == 0 {
		return 0, false
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	p.inUse[i] = true
	p.n++
	p.allocs++
	p.peak = max(p.peak, p.n)
	return link.Handle(int(i)*p.bufSize + p.headroom), true
}

// Free returns the buffer containing address h to the pool.
func (p *Pool) Free(h link.Handle) {
	i := int(h) / p.bufSize
	if i < 0 || i >= len(p.inUse) || !p.inUse[i] {
		p.errs = append(p.errs, fmt.Sprintf("free of buffer %d (address %#x) that is not in use", i, h))
		return
	}
	p.inUse[i] = false
	p.free = append(p.free, int32(i))
	p.n--
}

// InUse returns the number of allocated buffers.
func (p *Pool) InUse() int { return p.n }

// Peak returns the largest number of buffers in use at once.
func (p *Pool) Peak() int { return p.peak }

// Errors returns ownership errors (double frees).
func (p *Pool) Errors() []string { return p.errs }
