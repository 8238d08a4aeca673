package dataplane

import (
	"fmt"
	"net"
	"testing"

	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// Helpers of the dataplane tests that both the engine's own tests and the
// mechanisms' tests (package dataplane_test) use.

// SNMPFields reads proto's fields from /proc/net/snmp of namespace ns.
func SNMPFields(t *testing.T, ns, proto string, fields ...string) map[string]uint64 {
	t.Helper()
	all, err := netns.SNMPAll(ns)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, f := range fields {
		v, ok := all[proto+f]
		if !ok {
			t.Fatalf("snmp of %s: no counter %s:%s", ns, proto, f)
		}
		m[f] = v
	}
	return m
}

// RawSender is an AF_PACKET socket on an interface of a namespace: frames
// written to it leave on the wire as they are.
func RawSender(t *testing.T, ns, dev string) int {
	t.Helper()
	fd := netns.TestIn(t, ns, func() (int, error) {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return -1, err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifc.Index}); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("AF_PACKET on %s: %w", dev, err)
		}
		return fd, nil
	})
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// LinkFrame is a frame with the link EtherType, type typ and junk after.
func LinkFrame(typ byte, n int) []byte {
	b := make([]byte, n)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0x99, 0x88, 0xb5, typ})
	for i := 15; i < n; i++ {
		b[i] = byte(i * 7)
	}
	return b
}

// The mechanisms' modes, registered by their packages (modes_test.go): the
// engine's own tests name them to check what the engine does with any mode.
const (
	modeLG      Mode = "lg"
	modeLGNB    Mode = "lgnb"
	modeMonitor Mode = "monitor"
	modeCells   Mode = "cells"
	modeFEC     Mode = "fec"
)

// LGProtect is c with LinkGuardian's --lg-protect set to protect; set by
// modes_test.go (package dataplane_test), which can name LinkGuardian's
// configuration.
var LGProtect func(c Config, protect string) Config
