package rawio

import (
	"fmt"
	"net"
	"net/netip"

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
