package xdp

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller waits for several sockets with one poll(2). It reuses its buffers:
// Wait does not allocate. Not safe for concurrent use.
type Poller struct {
	socks []*Socket
	fds   []unix.PollFd
	ready []int
	raw   bool
}

// SetRaw makes Wait call ppoll without telling the Go runtime that the
// thread blocks (a raw system call): the thread keeps its P while it
// sleeps. For a worker on a locked OS thread that sleeps and wakes many
// thousand times a second: through the runtime every sleep longer than
// 20 µs lets sysmon take the P away, and sysmon then polls every 20 µs
// for the next millisecond; on this kind of VM those wakeups cost about
// as much CPU as the worker's own. The price: one P (of GOMAXPROCS) is
// held while the worker sleeps, and a stop-the-world waits until the
// runtime's preemption signal interrupts the ppoll (EINTR, microseconds).
// Use it only while another P stays free for the rest of the process.
func (p *Poller) SetRaw(on bool) { p.raw = on }

// NewPoller returns a poller over socks, waiting for POLLIN on each.
func NewPoller(socks ...*Socket) *Poller {
	p := &Poller{
		socks: append([]*Socket(nil), socks...),
		fds:   make([]unix.PollFd, len(socks)),
		ready: make([]int, 0, len(socks)),
	}
	for i, s := range socks {
		p.fds[i] = unix.PollFd{Fd: int32(s.FD()), Events: unix.POLLIN}
	}
	return p
}

// AddFD makes Wait wake when fd polls readable too (a file descriptor that
// is not a socket, e.g. a BPF ring buffer's) and returns its index, after
// the sockets'. Socket must not be called with it.
func (p *Poller) AddFD(fd int) int {
	p.fds = append(p.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	if cap(p.ready) < len(p.fds) {
		p.ready = make([]int, 0, len(p.fds))
	}
	return len(p.fds) - 1
}

// WantRead sets whether Wait wakes when socket i has received frames
// (POLLIN, on by default). Turn it off while the caller cannot take frames
// from the socket, or Wait returns at once and the caller spins.
func (p *Poller) WantRead(i int, on bool) {
	if on {
		p.fds[i].Events |= unix.POLLIN
	} else {
		p.fds[i].Events &^= unix.POLLIN
	}
}

// WantWrite sets whether Wait also wakes when socket i can transmit (POLLOUT:
// TX ring has room); use it while frames wait for TX space. A poll with POLLOUT
// also kicks the TX ring in copy mode.
func (p *Poller) WantWrite(i int, on bool) {
	if on {
		p.fds[i].Events |= unix.POLLOUT
	} else {
		p.fds[i].Events &^= unix.POLLOUT
	}
}

// Wait polls until a socket is readable (or writable, see WantWrite) or timeout
// passes (negative: forever; 0: just check). It returns the indices, in the
// order given to NewPoller, of sockets with any event; the slice is reused by
// the next Wait. An interrupted poll returns no sockets and no error.
func (p *Poller) Wait(timeout time.Duration) ([]int, error) {
	// ppoll takes a nanosecond timeout (poll's is whole milliseconds), so a
	// worker can sleep for a few microseconds while a protocol timer runs.
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	p.ready = p.ready[:0]
	var n int
	var err error
	if p.raw {
		n, err = rawPpoll(p.fds, ts)
	} else {
		n, err = unix.Ppoll(p.fds, ts, nil)
	}
	if err != nil {
		if err == unix.EINTR {
			return p.ready, nil
		}
		return p.ready, err
	}
	if n == 0 {
		return p.ready, nil
	}
	for i := range p.fds {
		if p.fds[i].Revents != 0 {
			p.ready = append(p.ready, i)
		}
	}
	return p.ready, nil
}

// Readable reports whether socket i had POLLIN in the last Wait.
func (p *Poller) Readable(i int) bool { return p.fds[i].Revents&unix.POLLIN != 0 }

// Writable reports whether socket i had POLLOUT in the last Wait.
func (p *Poller) Writable(i int) bool { return p.fds[i].Revents&unix.POLLOUT != 0 }

// Socket returns socket i.
func (p *Poller) Socket(i int) *Socket { return p.socks[i] }

// rawPpoll is ppoll(fds, ts, NULL) as a raw system call. With no fds it
// sleeps for ts, as unix.Ppoll does.
func rawPpoll(fds []unix.PollFd, ts *unix.Timespec) (int, error) {
	var p *unix.PollFd
	if len(fds) > 0 {
		p = &fds[0]
	}
	r, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(p)), uintptr(len(fds)),
		uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return int(r), e
	}
	return int(r), nil
}
