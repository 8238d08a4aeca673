package traffic

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/xdp"
)

// Generator transmits numbered test frames from one interface through an
// AF_XDP socket (TX only: no XDP program is needed on the interface).
type Generator struct {
	tmpl  Template
	umem  *xdp.Umem
	sock  *xdp.Socket
	free  *xdp.FreeList
	descs []xdp.Desc
	addrs []uint64
	sent  atomic.Uint64
}

// NewGenerator opens a TX socket on queue 0 of ifname, in the calling OS
// thread's network namespace (lock the thread and enter the namespace first).
func NewGenerator(ifname string, t Template) (*Generator, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	umem, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 2048, FrameCount: 4096})
	if err != nil {
		return nil, err
	}
	sock, err := umem.Open(ifname, 0, xdp.SocketConfig{})
	if err != nil {
		umem.Close()
		return nil, err
	}
	return &Generator{
		tmpl: t, umem: umem, sock: sock, free: umem.NewFreeList(),
		descs: make([]xdp.Desc, 64), addrs: make([]uint64, 64),
	}, nil
}

// Sent is how many frames the kernel has taken so far (safe to read while Run runs).
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// Run sends frames numbered from first, until count frames were sent (0: no
// limit), d passed (0: no limit) or ctx is done. rate limits frames per
// second (0: as fast as the interface takes them). It returns how many
// frames the kernel took.
func (g *Generator) Run(ctx context.Context, first, count uint64, d time.Duration, rate float64) uint64 {
	var stop atomic.Bool
	defer context.AfterFunc(ctx, func() { stop.Store(true) })()
	start := time.Now()
	var deadline time.Time
	if d > 0 {
		deadline = start.Add(d)
	}
	seq, queued := first, uint64(0)
	for !stop.Load() {
		now := time.Now()
		if !deadline.IsZero() && now.After(deadline) {
			break
		}
		want := len(g.descs)
		if count > 0 {
			want = int(min(uint64(want), count-queued))
		}
		if rate > 0 {
			allowed := uint64(rate*now.Sub(start).Seconds()) + 1
			if allowed <= queued {
				time.Sleep(10 * time.Microsecond)
				want = 0
			} else {
				want = int(min(uint64(want), allowed-queued))
			}
		}
		n := g.free.PopN(g.addrs[:want])
		for i, a := range g.addrs[:n] {
			a += uint64(g.umem.DataOffset())
			g.tmpl.write(g.umem.Bytes(a, uint32(g.tmpl.Size)), seq)
			g.descs[i] = xdp.Desc{Addr: a, Len: uint32(g.tmpl.Size)}
			seq++
		}
		put := g.sock.Transmit(g.descs[:n])
		if put < n {
			seq -= uint64(n - put)
			g.free.PushN(g.addrs[put:n])
		}
		queued += uint64(put)
		g.sock.Kick()
		g.reclaim()
		if count > 0 && queued == count && g.sock.TxPending() == 0 {
			break
		}
	}
	// Let the kernel finish what is on the ring.
	for end := time.Now().Add(time.Second); g.sock.TxPending() > 0 && time.Now().Before(end); {
		g.sock.Kick()
		g.reclaim()
	}
	g.reclaim()
	return g.sent.Load()
}

func (g *Generator) reclaim() {
	for {
		n := g.sock.Complete(g.addrs)
		if n == 0 {
			return
		}
		for _, a := range g.addrs[:n] {
			g.free.Push(g.umem.FrameBase(a))
		}
		g.sent.Add(uint64(n))
	}
}

// Close releases the socket and the UMEM.
func (g *Generator) Close() error {
	g.sock.Close()
	return g.umem.Close()
}
