package dataplane

import (
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

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

// UDPRun is one iperf3 UDP run: server port, rate, seconds, and Reverse
// for h2→h1.
type UDPRun struct {
	Port, Rate string
	Secs       int
	Reverse    bool
}

// IperfUDP runs iperf3 UDP from h1 to h2 (10.0.0.2; the other way with
// Reverse), datagrams of 1400 bytes, 2 MB socket buffers, and returns
// datagrams sent, lost and out of order as the receiver counted them.
func IperfUDP(t *testing.T, h1, h2 string, o UDPRun) (packets, lost, ooo uint64) {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.Secs+30)*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2: %v", err)
	}
	srv := netns.Command(ctx, h2, "iperf3", "-s", "-1", "-p", o.Port)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var out []byte
	var err error
	for range 30 {
		args := []string{"-c", "10.0.0.2", "-p", o.Port, "-u", "-b", o.Rate, "-l", "1400", "-w", "2M",
			"-t", strconv.Itoa(o.Secs), "-J", "--connect-timeout", "3000"}
		if o.Reverse {
			args = append(args, "-R")
		}
		out, err = netns.Command(ctx, h1, "iperf3", args...).Output()
		if !strings.Contains(string(out), "Connection refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("iperf3 -u h1→h2 (reverse %v): %v\n%s", o.Reverse, err, LastLines(string(out), 10))
	}
	var res struct {
		Error string `json:"error"`
		End   struct {
			Sum struct {
				Packets     uint64 `json:"packets"`
				LostPackets uint64 `json:"lost_packets"`
			} `json:"sum"`
			Streams []struct {
				UDP struct {
					OutOfOrder uint64 `json:"out_of_order"`
				} `json:"udp"`
			} `json:"streams"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || res.End.Sum.Packets == 0 {
		t.Fatalf("iperf3 -u h1→h2: %v %q\n%s", err, res.Error, LastLines(string(out), 10))
	}
	for _, s := range res.End.Streams {
		ooo += s.UDP.OutOfOrder
	}
	return res.End.Sum.Packets, res.End.Sum.LostPackets, ooo
}

// RawSender is an AF_PACKET socket on an interface of a namespace: frames
// written to it leave on the wire as they are.
func RawSender(t *testing.T, ns, dev string) int {
	t.Helper()
	var fd int
	if err := netns.Do(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifc.Index})
	}); err != nil {
		t.Fatalf("AF_PACKET on %s in %s: %v", dev, ns, err)
	}
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
