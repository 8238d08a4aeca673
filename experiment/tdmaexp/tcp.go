package tdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// Kernel TCP workloads on the star, the TDMA experiments' baselines. Hosts
// are 1-based (h1 is 10.0.0.1).

// listenOn listens on host h's address and port, in its namespace.
func listenOn(tb *netns.Testbed, h, port int) (ln net.Listener, err error) {
	err = netns.Do(tb.NS("h"+strconv.Itoa(h)), func() (err error) {
		ln, err = net.Listen("tcp4", netns.StarAddr(h)+":"+strconv.Itoa(port))
		return err
	})
	return ln, err
}

// dialFrom connects from host i to host j's port.
func dialFrom(tb *netns.Testbed, i, j, port int) (c net.Conn, err error) {
	err = netns.Do(tb.NS("h"+strconv.Itoa(i)), func() (err error) {
		c, err = net.DialTimeout("tcp4", netns.StarAddr(j)+":"+strconv.Itoa(port), 5*time.Second)
		return err
	})
	return c, err
}

// tcpRetrans sums the TCP segments hosts 1..n retransmitted.
func tcpRetrans(tb *netns.Testbed, n int) uint64 {
	var r uint64
	for i := 1; i <= n; i++ {
		v, _ := netns.SNMP(tb.NS("h"+strconv.Itoa(i)), "Tcp", "RetransSegs")
		r += v
	}
	return r
}

// tcpGroup runs the goroutines of a TCP workload: it closes every
// connection and listener when ctx ends, so blocked reads and writes
// return, and Wait waits for them.
type tcpGroup struct {
	mu      sync.Mutex
	closers []io.Closer
	wg      sync.WaitGroup
	stop    func() bool
}

func newTCPGroup(ctx context.Context) *tcpGroup {
	g := &tcpGroup{}
	g.stop = context.AfterFunc(ctx, g.closeAll)
	return g
}

func (g *tcpGroup) add(c io.Closer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closers = append(g.closers, c)
}

func (g *tcpGroup) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.closers {
		c.Close()
	}
}

func (g *tcpGroup) goRun(f func()) {
	g.wg.Add(1)
	go func() { defer g.wg.Done(); f() }()
}

// wait waits for the goroutines, which end once ctx is done.
func (g *tcpGroup) wait() { g.wg.Wait() }

// abort closes everything now (a setup error) and waits.
func (g *tcpGroup) abort() {
	g.stop()
	g.closeAll()
	g.wg.Wait()
}

// countingRead reads c into buf until it fails, adding every read to n.
func countingRead(c net.Conn, buf []byte, n *atomic.Int64) {
	for {
		k, err := c.Read(buf)
		n.Add(int64(k))
		if err != nil {
			return
		}
	}
}

// tcpBulk runs endless TCP flows from each of srcs to dst until ctx ends;
// the counter has the bytes dst received. Call wait after ctx ended.
func tcpBulk(ctx context.Context, tb *netns.Testbed, srcs []int, dst, port int) (recv *atomic.Int64, wait func(), err error) {
	g := newTCPGroup(ctx)
	recv = new(atomic.Int64)
	ln, err := listenOn(tb, dst, port)
	if err != nil {
		return nil, nil, err
	}
	g.add(ln)
	for range srcs {
		g.goRun(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.add(c)
			countingRead(c, make([]byte, 64<<10), recv)
		})
	}
	buf := make([]byte, 64<<10)
	for _, s := range srcs {
		c, err := dialFrom(tb, s, dst, port)
		if err != nil {
			g.abort()
			return nil, nil, err
		}
		g.add(c)
		g.goRun(func() {
			for ctx.Err() == nil {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		})
	}
	return recv, g.wait, nil
}

// rpcMsg is the TCP ping's request and answer size (bytes).
const rpcMsg = 64

// tcpPingPong runs the RPC over kernel TCP from client to server until ctx
// ends: a batch every every, one request at each of offs after the batch
// starts, each answered with an echo by the server. RTT is from writing
// the request to reading the answer, both in this process; Wait equals it
// (there is no slot to wait for).
func tcpPingPong(ctx context.Context, tb *netns.Testbed, client, server, port int, every time.Duration, offs []time.Duration) ([]host.PingSample, error) {
	g := newTCPGroup(ctx)
	defer g.wait()
	ln, err := listenOn(tb, server, port)
	if err != nil {
		return nil, err
	}
	g.add(ln)
	g.goRun(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		g.add(c)
		b := make([]byte, rpcMsg)
		for {
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	})
	c, err := dialFrom(tb, client, server, port)
	if err != nil {
		g.abort()
		return nil, err
	}
	g.add(c)
	var out []host.PingSample
	b := make([]byte, rpcMsg)
	for start := time.Now(); ctx.Err() == nil; start = start.Add(every) {
		for _, o := range offs {
			if !sleepUntil(ctx, start.Add(o)) {
				return out, nil
			}
			t0 := clock.Now()
			if _, err := c.Write(b); err != nil {
				return out, ignoreClosed(ctx, err)
			}
			if _, err := io.ReadFull(c, b); err != nil {
				return out, ignoreClosed(ctx, err)
			}
			rtt := float64(clock.Now()-t0) / 1e3
			out = append(out, host.PingSample{T: t0, OffsetUs: float64(o) / 1e3, RTTUs: rtt, WaitUs: rtt})
		}
		if !sleepUntil(ctx, start.Add(every)) {
			return out, nil
		}
	}
	return out, nil
}

// sleepUntil sleeps until t; false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ignoreClosed drops the error of a connection closed because ctx ended.
func ignoreClosed(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF)) {
		return nil
	}
	return err
}

// tcpRR runs round-robin blocks over kernel TCP on hosts 1..n until ctx
// ends (§6.3): every host holds a persistent connection to every other,
// writes a block to its next neighbour, waits for the neighbour's one-byte
// acknowledgement (the block has arrived: "once that transfer is
// finished"), then moves on to the neighbour after. recv[i] counts the
// bytes host i+1 received. Call wait after ctx ended.
func tcpRR(ctx context.Context, tb *netns.Testbed, n int, block int64, port int) (recv []*atomic.Int64, wait func(), err error) {
	g := newTCPGroup(ctx)
	recv = make([]*atomic.Int64, n)
	for j := range recv {
		recv[j] = new(atomic.Int64)
		ln, err := listenOn(tb, j+1, port)
		if err != nil {
			g.abort()
			return nil, nil, err
		}
		g.add(ln)
		for range n - 1 {
			g.goRun(func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				g.add(c)
				buf := make([]byte, 64<<10)
				ack := []byte{1}
				for {
					for left := block; left > 0; {
						k, err := c.Read(buf[:min(int64(len(buf)), left)])
						recv[j].Add(int64(k))
						left -= int64(k)
						if err != nil {
							return
						}
					}
					if _, err := c.Write(ack); err != nil {
						return
					}
				}
			})
		}
	}
	zero := make([]byte, 64<<10)
	for i := 0; i < n; i++ {
		conns := make([]net.Conn, n)
		for k := 1; k < n; k++ {
			j := (i + k) % n
			if conns[j], err = dialFrom(tb, i+1, j+1, port); err != nil {
				g.abort()
				return nil, nil, fmt.Errorf("rr: h%d → h%d: %w", i+1, j+1, err)
			}
			g.add(conns[j])
		}
		g.goRun(func() {
			ack := make([]byte, 1)
			for k := 1; ctx.Err() == nil; k = k%(n-1) + 1 {
				c := conns[(i+k)%n]
				for left := block; left > 0; {
					w, err := c.Write(zero[:min(int64(len(zero)), left)])
					if err != nil {
						return
					}
					left -= int64(w)
				}
				if _, err := io.ReadFull(c, ack); err != nil {
					return
				}
			}
		})
	}
	return recv, g.wait, nil
}
