package xdp

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/linkfabric/linkfabric/internal/enum"
	"golang.org/x/sys/unix"
)

// BindMode is how a socket moves frames between the NIC and the UMEM.
type BindMode int

const (
	// ModeAuto tries zero-copy and falls back to copy mode when the driver
	// has no zero-copy support (EOPNOTSUPP; veth always).
	ModeAuto BindMode = iota
	// ModeCopy binds with XDP_COPY.
	ModeCopy
	// ModeZeroCopy binds with XDP_ZEROCOPY and fails if unsupported.
	ModeZeroCopy
)

var bindModeNames = [...]string{ModeAuto: "auto", ModeCopy: "copy", ModeZeroCopy: "zerocopy"}

func (m BindMode) String() string { return enum.Name(m, "Mode", bindModeNames[:]) }

// SocketConfig configures one AF_XDP socket. Zero fields take the defaults.
type SocketConfig struct {
	// Ring sizes in descriptors; each must be a power of two. Default 2048.
	RxSize, TxSize, FillSize, CompletionSize uint32
	// Mode selects copy or zero-copy. Sockets after the first on a UMEM
	// inherit the first one's mode (the kernel decides); a Mode other than
	// ModeAuto that disagrees with it is an error.
	Mode BindMode
	// NeedWakeup binds with XDP_USE_NEED_WAKEUP: Kick and the caller only
	// make syscalls when the kernel sets the ring's need-wakeup flag. Like
	// the mode it is inherited from the UMEM's first socket.
	NeedWakeup bool
	// BindRetries is how many times to retry a bind that fails with EBUSY
	// (the kernel releases a closed socket's queue from a workqueue that needs
	// the RTNL lock, so it can take from milliseconds to, on a busy host,
	// seconds). 0 means 12; negative means no retry. Retries back off from
	// 10 ms to at most 250 ms each, about 2 s in total with the default.
	BindRetries int
	// BusyPollUsec, if > 0, sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL (this many
	// µs) and SO_BUSY_POLL_BUDGET (BusyPollBudget, default 64) after bind.
	BusyPollUsec   int
	BusyPollBudget int
}

const defaultRingSize = 2048

// Socket is one AF_XDP socket bound to one queue of one interface.
//
// The data path methods (Fill, Complete, Receive, Transmit, Kick, Wake and
// the ring queries) do not allocate, lock or use timers, and are NOT safe for
// concurrent use: drive a socket from one goroutine (or RX from one and TX from
// another: the fill+RX rings and the TX+completion rings are independent, so
// Fill/Receive and Transmit/Complete/Kick may run in two goroutines).
//
// Frame ownership: a frame address belongs to whoever last took it. Passing it
// to Fill or Transmit hands it to the kernel; Receive and Complete hand it back.
// With a shared UMEM, a frame received on one socket can be transmitted on any
// other socket of the same UMEM and comes back on that socket's completion ring.
type Socket struct {
	umem    *Umem
	fd      int
	ifname  string
	ifindex int
	queue   int
	mode    BindMode
	shared  bool // bound with XDP_SHARED_UMEM
	wakeup  bool // XDP_USE_NEED_WAKEUP in effect

	fill prodRing[uint64]
	comp consRing[uint64]
	rx   consRing[Desc]
	tx   prodRing[Desc]
	maps [4][]byte
	// completed counts the descriptors taken back from the completion ring
	// (TxInFlight).
	completed uint32
	// rxFrames counts the frames taken from the RX ring (RxFrames): the
	// descriptors that end a frame.
	rxFrames uint64

	closed atomic.Bool

	// Kick counters: written by the worker, read by statistics readers.
	kicks      atomic.Uint64
	kickStalls atomic.Uint64
	kickNoBufs atomic.Uint64
}

// Open opens an AF_XDP socket on queue of interface ifname, backed by u.
//
// The interface is looked up in the network namespace of the calling OS
// thread, and the socket lives in it: to open a socket in another namespace,
// call Open with the goroutine locked to an OS thread that has entered it
// (runtime.LockOSThread + netns.Set). The socket keeps working from any thread
// afterwards.
//
// An XDP program on the interface must redirect frames into an XSKMAP entry
// holding FD() for anything to arrive on the RX ring.
func (u *Umem) Open(ifname string, queue int, cfg SocketConfig) (*Socket, error) {
	for _, p := range []*uint32{&cfg.RxSize, &cfg.TxSize, &cfg.FillSize, &cfg.CompletionSize} {
		if *p == 0 {
			*p = defaultRingSize
		}
		if *p&(*p-1) != 0 {
			return nil, &Error{Op: "configure AF_XDP socket", Ifname: ifname, Queue: queue,
				Err: unix.EINVAL, Hint: fmt.Sprintf("ring size %d is not a power of two", *p)}
		}
	}
	if queue < 0 {
		return nil, &Error{Op: "configure AF_XDP socket", Ifname: ifname, Queue: queue, Err: unix.EINVAL, Hint: "negative queue"}
	}
	ifindex, err := ifIndex(ifname)
	if err != nil {
		return nil, &Error{Op: "look up interface", Ifname: ifname, Queue: queue, Err: err,
			Hint: "no such interface in this network namespace; open the socket from an OS thread inside the interface's namespace (runtime.LockOSThread + netns.Set)"}
	}

	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil, &Error{Op: "open AF_XDP socket", Ifname: ifname, Queue: queue, Err: unix.EBADF, Hint: "the UMEM is closed"}
	}
	for _, o := range u.socks {
		if o.ifindex == ifindex && o.queue == queue {
			return nil, &Error{Op: "open AF_XDP socket", Ifname: ifname, Queue: queue, Err: unix.EBUSY,
				Hint: "this UMEM already has a socket on this queue; use one socket per queue"}
		}
	}

	retries := cfg.BindRetries
	if retries == 0 {
		retries = 12
	}
	backoff := 10 * time.Millisecond
	mode := cfg.Mode
	for attempt := 0; ; attempt++ {
		s, err := u.openOnce(ifname, ifindex, queue, &cfg, mode)
		if err == nil {
			if cfg.Mode != ModeAuto && s.mode != cfg.Mode {
				s.closeLocked()
				return nil, &Error{Op: "bind AF_XDP socket", Ifname: ifname, Queue: queue, Err: unix.EINVAL,
					Hint: fmt.Sprintf("got %s mode, asked for %s: sockets sharing a UMEM inherit the first socket's mode; use ModeAuto or a separate UMEM", s.mode, cfg.Mode)}
			}
			if cfg.BusyPollUsec > 0 {
				budget := cfg.BusyPollBudget
				if budget <= 0 {
					budget = 64
				}
				if err := s.SetBusyPoll(cfg.BusyPollUsec, budget); err != nil {
					s.closeLocked()
					return nil, err
				}
			}
			u.socks = append(u.socks, s)
			return s, nil
		}
		var xe *Error
		if errors.As(err, &xe) && xe.Op == opBind {
			if mode == ModeAuto && errors.Is(err, unix.EOPNOTSUPP) && !xe.shared {
				mode = ModeCopy // no zero-copy support in this driver: fall back
				attempt--
				continue
			}
			if errors.Is(err, unix.EBUSY) && attempt < retries {
				time.Sleep(backoff)
				backoff = min(2*backoff, 250*time.Millisecond)
				continue
			}
		}
		return nil, err
	}
}

const opBind = "bind AF_XDP socket to"

// openOnce creates, configures, maps and binds one socket. On error everything
// it created is released. mode ModeAuto here means "try zero-copy".
func (u *Umem) openOnce(ifname string, ifindex, queue int, cfg *SocketConfig, mode BindMode) (*Socket, error) {
	s := &Socket{umem: u, fd: -1, ifname: ifname, ifindex: ifindex, queue: queue}
	fail := func(op string, err error, hint string) (*Socket, error) {
		s.release()
		return nil, &Error{Op: op, Ifname: ifname, Queue: queue, Err: err, Hint: hint, shared: s.shared}
	}

	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("create AF_XDP socket for", err, hintFor(err, "socket"))
	}
	s.fd = fd

	var shareFD int = -1
	if len(u.socks) > 0 {
		shareFD = u.socks[0].fd
		s.shared = true
	} else {
		reg := unix.XDPUmemReg{
			Addr:     uint64(uintptr(unsafe.Pointer(&u.area[0]))),
			Len:      uint64(len(u.area)),
			Size:     u.chunkSize, // frames larger than a page are chains of chunks (multibuf.go)
			Headroom: u.headroom,
		}
		if err := setsockopt(fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
			return fail("register UMEM for", err, hintFor(err, "umem"))
		}
	}
	for _, o := range []struct {
		opt  int
		size uint32
	}{
		{unix.XDP_UMEM_FILL_RING, cfg.FillSize},
		{unix.XDP_UMEM_COMPLETION_RING, cfg.CompletionSize},
		{unix.XDP_RX_RING, cfg.RxSize},
		{unix.XDP_TX_RING, cfg.TxSize},
	} {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, o.opt, int(o.size)); err != nil {
			return fail("size AF_XDP rings for", err, "ring sizes must be powers of two the kernel accepts")
		}
	}

	var off unix.XDPMmapOffsets
	offLen := uint32(unsafe.Sizeof(off))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&offLen)), 0); e != 0 {
		return fail("get AF_XDP ring offsets for", e, "")
	}
	if offLen != uint32(unsafe.Sizeof(off)) {
		return fail("get AF_XDP ring offsets for", unix.ENOTSUP, "kernel too old: no ring flags (need Linux 5.4+)")
	}

	descSize := uint64(unsafe.Sizeof(Desc{}))
	mp := func(i int, pgoff int64, ro unix.XDPRingOffset, n uint32, esz uint64) ([]byte, error) {
		m, err := unix.Mmap(fd, pgoff, int(ro.Desc+uint64(n)*esz), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return nil, err
		}
		s.maps[i] = m
		return m, nil
	}
	m, err := mp(0, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, cfg.FillSize, 8)
	if err != nil {
		return fail("mmap fill ring for", err, "")
	}
	s.fill = newProdRing(u32at(m, off.Fr.Producer), u32at(m, off.Fr.Consumer), u32at(m, off.Fr.Flags),
		unsafe.Slice((*uint64)(unsafe.Pointer(&m[off.Fr.Desc])), cfg.FillSize))
	if m, err = mp(1, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, cfg.CompletionSize, 8); err != nil {
		return fail("mmap completion ring for", err, "")
	}
	s.comp = newConsRing(u32at(m, off.Cr.Producer), u32at(m, off.Cr.Consumer), u32at(m, off.Cr.Flags),
		unsafe.Slice((*uint64)(unsafe.Pointer(&m[off.Cr.Desc])), cfg.CompletionSize))
	if m, err = mp(2, unix.XDP_PGOFF_RX_RING, off.Rx, cfg.RxSize, descSize); err != nil {
		return fail("mmap RX ring for", err, "")
	}
	s.rx = newConsRing(u32at(m, off.Rx.Producer), u32at(m, off.Rx.Consumer), u32at(m, off.Rx.Flags),
		unsafe.Slice((*Desc)(unsafe.Pointer(&m[off.Rx.Desc])), cfg.RxSize))
	if m, err = mp(3, unix.XDP_PGOFF_TX_RING, off.Tx, cfg.TxSize, descSize); err != nil {
		return fail("mmap TX ring for", err, "")
	}
	s.tx = newProdRing(u32at(m, off.Tx.Producer), u32at(m, off.Tx.Consumer), u32at(m, off.Tx.Flags),
		unsafe.Slice((*Desc)(unsafe.Pointer(&m[off.Tx.Desc])), cfg.TxSize))

	sa := &unix.SockaddrXDP{Ifindex: uint32(ifindex), QueueID: uint32(queue)}
	if s.shared {
		sa.Flags = unix.XDP_SHARED_UMEM // exactly this: the kernel rejects any other flag with it
		sa.SharedUmemFD = uint32(shareFD)
	} else {
		switch mode {
		case ModeAuto, ModeZeroCopy:
			sa.Flags = unix.XDP_ZEROCOPY
		case ModeCopy:
			sa.Flags = unix.XDP_COPY
		}
		if cfg.NeedWakeup {
			sa.Flags |= unix.XDP_USE_NEED_WAKEUP
		}
		if u.MultiBuffer() {
			sa.Flags |= unix.XDP_USE_SG // sockets sharing the UMEM inherit it
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail(opBind, err, bindHint(err, s.shared, mode, ifname))
	}

	opts, err := getOptions(fd)
	if err != nil {
		return fail("read XDP_OPTIONS of", err, "")
	}
	s.mode = ModeCopy
	if opts&unix.XDP_OPTIONS_ZEROCOPY != 0 {
		s.mode = ModeZeroCopy
	}
	if s.shared {
		s.wakeup = u.needWakeup
	} else {
		s.wakeup = cfg.NeedWakeup
		u.needWakeup = cfg.NeedWakeup
	}
	return s, nil
}

func u32at(m []byte, off uint64) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }

func setsockopt(fd, opt int, p unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), n, 0); e != 0 {
		return e
	}
	return nil
}

func getOptions(fd int) (uint32, error) {
	var v, n uint32 = 0, 4
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_XDP, unix.XDP_OPTIONS,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return 0, e
	}
	return v, nil
}

// FD is the socket's file descriptor: put it in the XSKMAP entry of its queue,
// or poll it. Owned by the Socket; do not close it.
func (s *Socket) FD() int { return s.fd }

// Ifname is the interface the socket is bound to.
func (s *Socket) Ifname() string { return s.ifname }

// Ifindex is the index of the interface in the socket's namespace.
func (s *Socket) Ifindex() int { return s.ifindex }

// Queue is the queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// Mode is the mode the kernel granted: ModeCopy or ModeZeroCopy.
func (s *Socket) Mode() BindMode { return s.mode }

// Shared reports whether the socket was bound with XDP_SHARED_UMEM.
func (s *Socket) Shared() bool { return s.shared }

// NeedWakeup reports whether XDP_USE_NEED_WAKEUP is in effect.
func (s *Socket) NeedWakeup() bool { return s.wakeup }

// Umem returns the UMEM backing the socket.
func (s *Socket) Umem() *Umem { return s.umem }

// Fill hands the frames at addrs to the kernel for receiving (fill ring) and
// returns how many fitted; the caller keeps ownership of addrs[n:].
func (s *Socket) Fill(addrs []uint64) int { return int(s.fill.put(addrs)) }

// Complete takes back into addrs up to len(addrs) frames whose transmission
// finished (completion ring) and returns how many. The caller owns them again.
func (s *Socket) Complete(addrs []uint64) int {
	n := s.comp.get(addrs)
	s.completed += n
	return int(n)
}

// TxInFlight is the number of descriptors placed on the TX ring whose
// completion has not been taken back yet (Complete): frames the kernel may
// still be sending.
func (s *Socket) TxInFlight() int { return int(s.tx.published - s.completed) }

// RxReady is the number of received descriptors waiting on the RX ring.
func (s *Socket) RxReady() int { return int(s.rx.ready(1)) }

// Receive copies up to len(descs) received descriptors into descs and returns
// how many. The frames they point at now belong to the caller (return them
// with Fill, or Transmit them). Never blocks.
func (s *Socket) Receive(descs []Desc) int {
	idx, n := s.rx.take(uint32(len(descs)))
	if n == 0 {
		return 0
	}
	ends := uint64(n) // counted while copying (not get and a second pass: this is the hot path)
	for i := range n {
		d := *s.rx.at(idx + i)
		descs[i] = d
		if d.Continued() {
			ends--
		}
	}
	s.rx.publish(n)
	s.rxFrames += ends
	return int(n)
}

// RxFrames is the number of frames Receive has taken from the RX ring
// since the socket opened (a multi-buffer frame counts once). Read it in
// the goroutine that calls Receive.
func (s *Socket) RxFrames() uint64 { return s.rxFrames }

// Transmit places up to len(descs) descriptors on the TX ring and returns how
// many fitted; those frames belong to the kernel until they come back through
// Complete. Transmit does not make a syscall: call Kick afterwards.
func (s *Socket) Transmit(descs []Desc) int { return int(s.tx.put(descs)) }

// FillFree is the number of free fill ring slots.
func (s *Socket) FillFree() int { return int(s.fill.ready(s.fill.size)) }

// TxFree is the number of free TX ring slots.
func (s *Socket) TxFree() int { return int(s.tx.ready(s.tx.size)) }

// TxPending is the number of transmitted descriptors the kernel has not
// consumed from the TX ring yet.
func (s *Socket) TxPending() int { return int(s.tx.pending()) }

// FillPending is the number of frames on the fill ring not yet used by the kernel.
func (s *Socket) FillPending() int { return int(s.fill.pending()) }

// FillNeedsWakeup reports whether the kernel asked for a wakeup to process
// the fill ring (only with NeedWakeup; then call Wake or poll the socket).
func (s *Socket) FillNeedsWakeup() bool { return s.wakeup && s.fill.needWakeup() }

// TxNeedsWakeup reports whether a Kick would make a syscall.
func (s *Socket) TxNeedsWakeup() bool { return !s.wakeup || s.tx.needWakeup() }

// maxKickRounds bounds one Kick: each sendto moves at most 32 frames in copy
// mode (the kernel's TX budget), so a full 4096-entry ring needs 128 rounds.
const maxKickRounds = 256

// Kick makes the kernel transmit what is on the TX ring. In copy mode one
// sendto moves at most 32 frames, so Kick keeps calling sendto(MSG_DONTWAIT)
// while descriptors remain and the kernel makes progress, up to a bound. It
// returns nil when the ring is drained or the kernel cannot progress now
// (completion ring full, device busy, no skb memory): call Complete and Kick
// again later. With NeedWakeup it makes no syscall unless the kernel asked.
// Errors are only for a socket that cannot transmit (device down, unbound).
func (s *Socket) Kick() error {
	rounds := 0
	for {
		pending := s.tx.pending()
		if pending == 0 || (s.wakeup && !s.tx.needWakeup()) {
			return nil
		}
		if rounds == maxKickRounds {
			return nil
		}
		rounds++
		before := s.tx.consumed()
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		s.kicks.Add(1)
		switch e {
		case 0, unix.EAGAIN, unix.EBUSY:
			// EAGAIN: budget used up (more to send) or completion ring full;
			// EBUSY: the device dropped a frame (it was consumed). Decide by progress.
		case unix.EINTR:
			continue
		case unix.ENOBUFS, unix.ENOMEM:
			s.kickNoBufs.Add(1)
			return nil
		default:
			return &Error{Op: "transmit on", Ifname: s.ifname, Queue: s.queue, Err: e,
				Hint: "is the interface up and the socket open?"}
		}
		if s.tx.consumed() == before {
			s.kickStalls.Add(1) // no progress: completion ring full, device busy, or zero-copy (async)
			return nil
		}
	}
}

// Wake makes a non-blocking recvfrom on the socket: it wakes the driver to
// process the fill ring (need-wakeup) and, with busy polling configured,
// busy-polls the device's NAPI context. Callers that busy-poll spin on
// Receive and call Wake when Receive returns nothing or FillNeedsWakeup.
func (s *Socket) Wake() error {
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY:
		return nil
	}
	return &Error{Op: "wake", Ifname: s.ifname, Queue: s.queue, Err: e, Hint: "is the interface up and the socket open?"}
}

// KickCounters returns how many sendto calls Kick made, how many times it
// stopped for lack of progress, and how many times the kernel had no buffers.
// Safe to call while another goroutine kicks.
func (s *Socket) KickCounters() (kicks, stalls, noBufs uint64) {
	return s.kicks.Load(), s.kickStalls.Load(), s.kickNoBufs.Load()
}

// Stats are the kernel's XDP_STATISTICS counters for a socket.
type Stats struct {
	RxDropped            uint64 // frames dropped for reasons other than invalid descriptors (e.g. too long)
	RxInvalidDescs       uint64 // invalid descriptors on the fill ring
	TxInvalidDescs       uint64 // invalid descriptors on the TX ring
	RxRingFull           uint64 // frames dropped because the RX ring was full
	RxFillRingEmptyDescs uint64 // times a frame arrived with the fill ring empty
	TxRingEmptyDescs     uint64 // times the kernel found the TX ring empty
}

// Stats reads XDP_STATISTICS. Not for the hot path (a syscall).
func (s *Socket) Stats() (Stats, error) {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	if _, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&n)), 0); e != 0 {
		return Stats{}, &Error{Op: "read XDP_STATISTICS of", Ifname: s.ifname, Queue: s.queue, Err: e}
	}
	return Stats{
		RxDropped: st.Rx_dropped, RxInvalidDescs: st.Rx_invalid_descs, TxInvalidDescs: st.Tx_invalid_descs,
		RxRingFull: st.Rx_ring_full, RxFillRingEmptyDescs: st.Rx_fill_ring_empty_descs, TxRingEmptyDescs: st.Tx_ring_empty_descs,
	}, nil
}

// Options reads XDP_OPTIONS (bit XDP_OPTIONS_ZEROCOPY).
func (s *Socket) Options() (uint32, error) {
	v, err := getOptions(s.fd)
	if err != nil {
		return 0, &Error{Op: "read XDP_OPTIONS of", Ifname: s.ifname, Queue: s.queue, Err: err}
	}
	return v, nil
}

// SetBusyPoll sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL (usec) and
// SO_BUSY_POLL_BUDGET (budget) on the socket. The caller then spins on Receive
// and Wake instead of polling. Raising SO_BUSY_POLL needs CAP_NET_ADMIN.
func (s *Socket) SetBusyPoll(usec, budget int) error {
	for _, o := range []struct {
		name string
		opt  int
		v    int
	}{
		{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1},
		{"SO_BUSY_POLL", unix.SO_BUSY_POLL, usec},
		{"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, budget},
	} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt, o.v); err != nil {
			return &Error{Op: "set " + o.name + " on", Ifname: s.ifname, Queue: s.queue, Err: err,
				Hint: "busy polling needs CAP_NET_ADMIN and Linux 5.11+"}
		}
	}
	return nil
}

// SetTxBudget sets XDP_MAX_TX_SKB_BUDGET, the number of frames one sendto
// moves in copy mode (default 32). Needs a kernel that has the option.
func (s *Socket) SetTxBudget(n int) error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, n); err != nil {
		return &Error{Op: "set XDP_MAX_TX_SKB_BUDGET on", Ifname: s.ifname, Queue: s.queue, Err: err,
			Hint: "the kernel may not have this option (Linux 6.17+); keep kicking instead"}
	}
	return nil
}

// Close unmaps the rings and closes the socket. Frames still on its rings are
// lost to the caller (they stay valid UMEM memory). Idempotent; safe to call
// concurrently with Umem.Close, not with the data path methods.
func (s *Socket) Close() error {
	u := s.umem
	u.mu.Lock()
	defer u.mu.Unlock()
	return s.closeLocked()
}

func (s *Socket) closeLocked() error {
	if s.closed.Swap(true) {
		return nil
	}
	if i := slices.Index(s.umem.socks, s); i >= 0 {
		s.umem.socks = slices.Delete(s.umem.socks, i, i+1)
	}
	return s.release()
}

// release unmaps and closes whatever openOnce created.
func (s *Socket) release() error {
	var errs []error
	for i, m := range s.maps {
		if m != nil {
			if err := unix.Munmap(m); err != nil {
				errs = append(errs, err)
			}
			s.maps[i] = nil
		}
	}
	s.fill, s.comp, s.rx, s.tx = prodRing[uint64]{}, consRing[uint64]{}, consRing[Desc]{}, prodRing[Desc]{}
	if s.fd >= 0 {
		if err := unix.Close(s.fd); err != nil {
			errs = append(errs, err)
		}
		s.fd = -1
	}
	if len(errs) > 0 {
		return &Error{Op: "close AF_XDP socket on", Ifname: s.ifname, Queue: s.queue, Err: errors.Join(errs...)}
	}
	return nil
}
