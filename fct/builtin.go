package fct

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// HeaderSize is the size of the builtin tool's flow header. It is part of
// the flow's Size bytes (not added to them), so it is also the minimum builtin flow size.
const HeaderSize = 16

// BuiltinConfig configures RunBuiltin.
type BuiltinConfig struct {
	Arm string // label copied into every Flow

	// ServerNS and ClientNS are network namespaces (names under /run/netns
	// or paths); "" = the namespace the process is in. The listening socket
	// is created in ServerNS (host h2, the receiver), the client sockets in
	// ClientNS (host h1, the sender).
	ServerNS, ClientNS string
	// ServerAddr is the address to listen on and connect to, e.g.
	// "10.0.0.2:5500". Port 0 picks a free port.
	ServerAddr string

	Sizes        []int64 // flow sizes in bytes (each >= HeaderSize), run one after the other
	FlowsPerSize int     // measured flows per size
	// Warmup flows are run before each size's measured flows and discarded
	// (first-connection effects: neighbour resolution, cold caches).
	Warmup int
	// Concurrency is the number of flows in flight at once (default 1: flows
	// strictly back to back).
	Concurrency int
	// CongestionControl is set with TCP_CONGESTION on every socket (client
	// before connect(), and the listener, whose accepted sockets inherit
	// it); "" = the namespace default.
	CongestionControl string
	// DSCP marks both directions of every flow (0: none), e.g. for the
	// loss classes of a cell fabric (a DSCP's class selector, DSCP/8, is
	// its traffic class).
	DSCP int
	// Nagle leaves Nagle's algorithm on. Default false: TCP_NODELAY is set
	// on both ends so a flow's last partial segment is never held back.
	Nagle bool
	// Timeout bounds each flow from connect() start; a flow not complete by
	// then is recorded as failed. Default 10s.
	Timeout time.Duration
	// Progress, if set, is called after every measured flow with the number
	// finished so far and the total (calls are serialized).
	Progress func(done, total int)
}

func (c *BuiltinConfig) defaults() error {
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.ServerAddr == "" {
		return errors.New("fct: ServerAddr is required")
	}
	if c.DSCP < 0 || c.DSCP > 63 {
		return fmt.Errorf("fct: DSCP %d: want 0..63", c.DSCP)
	}
	if len(c.Sizes) == 0 || c.FlowsPerSize <= 0 {
		return errors.New("fct: need at least one size and FlowsPerSize > 0")
	}
	for _, s := range c.Sizes {
		if s < HeaderSize {
			return fmt.Errorf("fct: builtin flow size %d B below the %d B minimum (the header is part of the flow)", s, HeaderSize)
		}
	}
	return nil
}

// sockControl sets TCP_CONGESTION cc (unless "") and the IP DSCP (unless
// 0) on a socket before it connects or listens. A listener's DSCP goes to
// its SYN-ACKs and to the sockets it accepts, so both directions of a flow
// carry it.
func sockControl(cc string, dscp int) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if cc != "" {
				if serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, cc); serr != nil {
					serr = fmt.Errorf("fct: TCP_CONGESTION %q: %w", cc, serr)
					return
				}
			}
			if dscp != 0 {
				if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, dscp<<2); serr != nil {
					serr = fmt.Errorf("fct: IP_TOS (DSCP %d): %w", dscp, serr)
				}
			}
		})
		if err != nil {
			return err
		}
		return serr
	}
}

// builtinServer is the receiver (h2). done[id] is the monotonic time, in ns
// since base, at which the server read the last byte of flow id.
type builtinServer struct {
	ln      net.Listener
	base    time.Time
	done    []atomic.Int64
	timeout time.Duration
	nagle   bool
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	bufs    sync.Pool
}

func (s *builtinServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.conns == nil {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(c)
	}
}

func (s *builtinServer) handle(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if s.conns != nil {
			delete(s.conns, c)
		}
		s.mu.Unlock()
		c.Close()
	}()
	tc := c.(*net.TCPConn)
	if s.nagle {
		tc.SetNoDelay(false)
	}
	c.SetDeadline(time.Now().Add(s.timeout))
	bp := s.bufs.Get().(*[]byte)
	defer s.bufs.Put(bp)
	buf := *bp
	var hdr [HeaderSize]byte
	var got, size int64
	id := -1
	for id < 0 || got < size {
		n, err := c.Read(buf)
		if n > 0 {
			if got < HeaderSize {
				copy(hdr[got:], buf[:n])
			}
			got += int64(n)
			if id < 0 && got >= HeaderSize {
				fid := binary.BigEndian.Uint64(hdr[0:8])
				size = int64(binary.BigEndian.Uint64(hdr[8:16]))
				if fid >= uint64(len(s.done)) || size < HeaderSize {
					return
				}
				id = int(fid)
			}
		}
		if id >= 0 && got >= size {
			break
		}
		if err != nil {
			return
		}
	}
	if got != size {
		return // protocol violation: more bytes than announced
	}
	s.done[id].Store(int64(time.Since(s.base)))
	if _, err := c.Write([]byte{1}); err != nil {
		return
	}
	// Wait for the client's abortive close (RST). If the RST is lost, give
	// up soon and abort ourselves so no socket lingers that a later flow
	// reusing the same client port could run into.
	c.SetReadDeadline(time.Now().Add(min(s.timeout, 200*time.Millisecond)))
	var b [1]byte
	if _, err := c.Read(b[:]); err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		tc.SetLinger(0)
	}
}

// RunBuiltin runs the builtin FCT tool: a TCP server (receiver) listening in
// ServerNS and clients (senders) in ClientNS, in this process. Per flow the
// client opens a new TCP connection, writes Size bytes (a 16-byte header
// with flow id and size, then filler) in one write, waits for a one-byte
// confirmation, reads TCP_INFO and closes abortively (SO_LINGER 0, so
// neither side keeps TIME_WAIT state and 10^5 flows do not exhaust ports).
//
// FCT = time at which the server's read returned the flow's last byte minus
// the time just before the client's connect(); both are read from the same
// monotonic clock. The confirmation and the close happen after the
// measurement and do not contribute to it.
//
// The returned flows are in the order they were started, sizes in the order
// given. On context cancellation RunBuiltin returns the flows completed so
// far (flows interrupted by the cancellation are dropped) and ctx.Err().
func RunBuiltin(ctx context.Context, cfg BuiltinConfig) ([]Flow, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	perSize := cfg.Warmup + cfg.FlowsPerSize
	nIDs := perSize * len(cfg.Sizes)
	maxSize := int64(0)
	for _, s := range cfg.Sizes {
		maxSize = max(maxSize, s)
	}

	srv := &builtinServer{
		base:    time.Now(),
		done:    make([]atomic.Int64, nIDs),
		timeout: cfg.Timeout,
		nagle:   cfg.Nagle,
		conns:   map[net.Conn]struct{}{},
	}
	srv.bufs.New = func() any { b := make([]byte, 256<<10); return &b }
	err := inNS(cfg.ServerNS, func() error {
		lc := net.ListenConfig{Control: sockControl(cfg.CongestionControl, cfg.DSCP)}
		ln, err := lc.Listen(context.Background(), "tcp4", cfg.ServerAddr)
		srv.ln = ln
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fct: listen on %s in netns %q: %w", cfg.ServerAddr, cfg.ServerNS, err)
	}
	addr := srv.ln.Addr().String()
	srv.wg.Add(1)
	go srv.serve()
	defer func() {
		srv.ln.Close()
		srv.mu.Lock()
		for c := range srv.conns {
			c.Close()
		}
		srv.conns = nil
		srv.mu.Unlock()
		srv.wg.Wait()
	}()

	results := make([]Flow, 0, cfg.FlowsPerSize*len(cfg.Sizes))
	keep := make([]bool, 0, cap(results))
	total := cfg.FlowsPerSize * len(cfg.Sizes)
	var progMu sync.Mutex
	finished := 0

	for si, size := range cfg.Sizes {
		if ctx.Err() != nil {
			break
		}
		base := len(results)
		for i := 0; i < cfg.FlowsPerSize; i++ {
			results = append(results, Flow{Arm: cfg.Arm, Tool: "builtin", ID: base + i, Size: size})
			keep = append(keep, false)
		}
		jobs := make(chan int)
		var wg sync.WaitGroup
		var werr error
		var werrOnce sync.Once
		for w := 0; w < cfg.Concurrency; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				restore, err := lockInNS(cfg.ClientNS)
				if err != nil {
					werrOnce.Do(func() { werr = err })
					for range jobs {
					}
					return
				}
				defer restore()
				payload := make([]byte, maxSize)
				for j := range jobs {
					fid := si*perSize + j
					f, ok := runClientFlow(ctx, &cfg, srv, addr, fid, size, payload)
					if j < cfg.Warmup {
						continue
					}
					idx := base + j - cfg.Warmup
					f.ID = idx
					results[idx] = f
					keep[idx] = ok
					if ok {
						progMu.Lock()
						finished++
						if cfg.Progress != nil {
							cfg.Progress(finished, total)
						}
						progMu.Unlock()
					}
				}
			}()
		}
	feed:
		for j := 0; j < perSize; j++ {
			select {
			case jobs <- j:
			case <-ctx.Done():
				break feed
			}
		}
		close(jobs)
		wg.Wait()
		if werr != nil {
			return nil, werr
		}
	}
	out := results[:0]
	for i, f := range results {
		if keep[i] {
			out = append(out, f)
		}
	}
	return out, ctx.Err()
}

// interrupted reports whether ctx ended the flow: it is done, or its deadline
// has passed. The dialer folds ctx's deadline into its own, so a dial can fail
// with "i/o timeout" at that deadline a moment before ctx itself reports done.
func interrupted(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// runClientFlow runs one flow on the calling (namespace-locked) goroutine.
// ok is false when the flow was interrupted by ctx and must be dropped.
func runClientFlow(ctx context.Context, cfg *BuiltinConfig, srv *builtinServer, addr string, fid int, size int64, payload []byte) (f Flow, ok bool) {
	f = Flow{Arm: cfg.Arm, Tool: "builtin", Size: size}
	if ctx.Err() != nil {
		return f, false
	}
	binary.BigEndian.PutUint64(payload[0:8], uint64(fid))
	binary.BigEndian.PutUint64(payload[8:16], uint64(size))

	f.Start = time.Now()
	startNs := int64(f.Start.Sub(srv.base))
	deadline := f.Start.Add(cfg.Timeout)
	d := net.Dialer{Deadline: deadline, Control: sockControl(cfg.CongestionControl, cfg.DSCP)}
	fail := func(err error) (Flow, bool) {
		if interrupted(ctx) {
			return f, false
		}
		f.Failed = true
		f.Err = err.Error()
		return f, true
	}
	conn, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return fail(fmt.Errorf("connect: %w", err))
	}
	tc := conn.(*net.TCPConn)
	defer func() {
		tc.SetLinger(0) // abortive close: RST, no TIME_WAIT on either side
		tc.Close()
	}()
	stop := context.AfterFunc(ctx, func() { tc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	tc.SetDeadline(deadline)
	if cfg.Nagle {
		tc.SetNoDelay(false)
	}
	_, werr := tc.Write(payload[:size])
	var rerr error
	if werr == nil {
		var b [1]byte
		_, rerr = io.ReadFull(tc, b[:])
	}
	// The server's done time is authoritative: a lost confirmation does not
	// make a delivered flow fail.
	doneNs := srv.done[fid].Load()
	if sc, err := tc.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) {
			if ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				f.Retrans = ti.Total_retrans
				f.Retransmitted = ti.Total_retrans > 0
			}
		})
	}
	if doneNs == 0 {
		if werr != nil {
			return fail(fmt.Errorf("write: %w", werr))
		}
		if rerr == nil {
			rerr = errors.New("confirmed but not recorded")
		}
		return fail(fmt.Errorf("wait for receiver: %w", rerr))
	}
	f.FCT = time.Duration(doneNs - startNs)
	return f, true
}
