package rawio

import (
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// UDP is a UDP socket with kernel receive time stamps, for the TDMA
// control messages that go outside the slots (class 7: schedules, demand
// reports, calibration).
type UDP struct {
	*net.UDPConn
	oob []byte
}

// ListenUDP binds 0.0.0.0:port in the calling thread's namespace.
func ListenUDP(port int) (*UDP, error) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port})
	if err != nil {
		return nil, fmt.Errorf("rawio: UDP port %d: %w (another agent running here?)", port, err)
	}
	rc, err := c.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
		})
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("rawio: UDP port %d: SO_TIMESTAMPNS: %w", port, err)
	}
	return &UDP{UDPConn: c, oob: make([]byte, 64)}, nil
}

// Read receives one datagram into b: its length, sender and kernel
// receive time (clock.Now's clock).
func (u *UDP) Read(b []byte) (int, netip.AddrPort, int64, error) {
	n, oobn, _, from, err := u.ReadMsgUDPAddrPort(b, u.oob)
	if err != nil {
		return 0, netip.AddrPort{}, 0, err
	}
	return n, from, Stamp(u.oob[:oobn]), nil
}

// Serve reads datagrams into b and hands each to handle (its length, its
// sender and its kernel receive time, as Read returns them) until stop is
// set or a read fails other than by its deadline (the socket closed). A
// read waits at most poll, so that Serve sees stop within poll.
func (u *UDP) Serve(stop *atomic.Bool, b []byte, poll time.Duration, handle func(n int, from netip.AddrPort, rx int64)) {
	for !stop.Load() {
		u.SetReadDeadline(time.Now().Add(poll))
		n, from, rx, err := u.Read(b)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		handle(n, from, rx)
	}
}
