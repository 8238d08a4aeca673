package rawio

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// Serve hands every datagram to the handler with its sender and a receive
// time, returns once stop is set, and returns when the socket is closed
// with stop not set.
func TestUDPServe(t *testing.T) {
	u, err := ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	to := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), u.LocalAddr().(*net.UDPAddr).AddrPort().Port())
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	from := c.LocalAddr().(*net.UDPAddr).AddrPort()

	var stop atomic.Bool
	got := make(chan string, 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 64)
		u.Serve(&stop, b, 10*time.Millisecond, func(n int, src netip.AddrPort, rx int64) {
			if src.Port() != from.Port() || rx <= 0 {
				t.Errorf("datagram %q from %v at %d, want from %v with a receive time", b[:n], src, rx, from)
			}
			got <- string(b[:n])
			if len(got) == cap(got) {
				stop.Store(true)
			}
		})
	}()
	for _, m := range []string{"a", "bb", "ccc"} {
		if _, err := c.WriteToUDPAddrPort([]byte(m), to); err != nil {
			t.Fatal(err)
		}
	}
	<-done // stop set after the third
	for _, want := range []string{"a", "bb", "ccc"} {
		if m := <-got; m != want {
			t.Errorf("datagram %q, want %q", m, want)
		}
	}

	stop.Store(false)
	done = make(chan struct{})
	go func() {
		defer close(done)
		u.Serve(&stop, make([]byte, 64), time.Hour, func(int, netip.AddrPort, int64) {})
	}()
	u.Close() // with stop not set, the read that waits fails
	<-done
}
