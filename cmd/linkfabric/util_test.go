package main

import (
	"net"
	"testing"
)

func TestParseBitRate(t *testing.T) {
	for in, want := range map[string]uint64{"10G": 10e9, "25Gbit": 25e9, "100g": 100e9, "1000M": 1e9, "2.5G": 2.5e9} {
		got, err := parseBitRate(in)
		if err != nil || got != want {
			t.Errorf("parseBitRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1G", "0"} {
		if _, err := parseBitRate(in); err == nil {
			t.Errorf("parseBitRate(%q) accepted", in)
		}
	}
}

// TestListenStatsLoopback: `run --metrics :PORT` binds the namespace's
// loopback, not every address (a dataplane's statistics are not for the
// whole network); an explicit address is kept.
func TestListenStatsLoopback(t *testing.T) {
	for in, wantHost := range map[string]string{":0": "127.0.0.1", "127.0.0.1:0": "127.0.0.1", "[::1]:0": "::1"} {
		ln, err := listenStats(in)
		if err != nil {
			if in == "[::1]:0" {
				continue // no IPv6 loopback here
			}
			t.Fatalf("listenStats(%q): %v", in, err)
		}
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		if host != wantHost {
			t.Errorf("--metrics %q listens on %s; want %s", in, ln.Addr(), wantHost)
		}
	}
}
