package dataplane_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestLGUDPLossAccounted: iperf3 UDP h1→h2 through lg (default settings)
// at 100 Mbit/s with Bernoulli loss 1e-2 on sw1→sw2. Every datagram iperf3
// counts lost must show in a counter on the way (h1's send buffer, sw1's
// host-port AF_XDP ring, the link TX ring, sw2's receiver giving up on a
// hole or skipping for the window, sw2's host TX ring, h2's socket buffer);
// lg itself gives up on nothing and nothing arrives out of order. The
// breakdown is logged.
//
// Measured on the shared 2-core machine with iperf3's default socket
// buffer (212 kB): 101 and 58 of 89,280 lost, one run 0, every one an
// RcvbufErrors of h2's socket: iperf3's server was not scheduled for the
// ~10 ms its buffer holds at 100 Mbit/s (a reorder-buffer release after a
// recovered hole, peak 43-169 frames, adds to it). That is the "17 of
// 119,991 once, 0 on the rerun" flake: the receiving host, not the link.
// With a 2 MB socket buffer (-w 2M), 0 lost in every run. At 150 Mbit/s
// sw1's host-port RX ring also overflowed while lg held host frames for
// credit and PFC pauses (an AF_XDP port gives its host no backpressure).
func TestLGUDPLossAccounted(t *testing.T) {
	dataplane.RequireIperf3(t)
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1 := dataplane.StartSwitch(t, tb.NS("sw1"), dataplane.Config{Mode: lgpipe.ModeLG})
	sw2 := dataplane.StartSwitch(t, tb.NS("sw2"), dataplane.Config{Mode: lgpipe.ModeLG})
	if err := sw2.Link().Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1e-2, Seed: 23}); err != nil {
		t.Fatal(err)
	}
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	udpFields := []string{"InDatagrams", "RcvbufErrors", "InErrors", "InCsumErrors", "SndbufErrors"}
	h1Before, h2Before := dataplane.SNMPFields(t, h1, "Udp", udpFields...), dataplane.SNMPFields(t, h2, "Udp", udpFields...)
	host1Before, link2Before := socketDrops(t, sw1.Host()), socketDrops(t, sw2.Link())
	secs := sized(4, 10)
	packets, lost, ooo := dataplane.IperfUDP(t, h1, h2, dataplane.UDPRun{Port: 5302, Rate: "100M", Secs: secs})
	time.Sleep(200 * time.Millisecond) // the last publish of the lg counters
	h1After, h2After := dataplane.SNMPFields(t, h1, "Udp", udpFields...), dataplane.SNMPFields(t, h2, "Udp", udpFields...)
	s1, s2 := waitCore(t, sw1), waitCore(t, sw2)
	st1, st2 := sw1.Stats(), sw2.Stats()
	where := map[string]uint64{
		"h1 UDP SndbufErrors":                  h1After["SndbufErrors"] - h1Before["SndbufErrors"],
		"sw1 host0 AF_XDP RX ring full/drops":  socketDrops(t, sw1.Host()) - host1Before,
		"sw1 link TX ring full":                lgpipe.StatsOf(sw1).LinkTxRingFull.Load(),
		"sw1 host frames not protected (bad)":  s1.Port.TxBad,
		"sw2 link0 AF_XDP RX ring full/drops":  socketDrops(t, sw2.Link()) - link2Before,
		"sw2 receiver gave up (ackNoTimeout)":  s2.Receiver.AckNoTimeouts,
		"sw2 receiver skipped (window)":        s2.Receiver.ForcedSkips,
		"sw2 host TX ring full":                lgpipe.StatsOf(sw2).HostTxRingFull.Load(),
		"sw2 host TX dropped":                  st2.Host.TX.Dropped,
		"h2 UDP RcvbufErrors":                  h2After["RcvbufErrors"] - h2Before["RcvbufErrors"],
		"h2 UDP InErrors (incl. rcvbuf, csum)": h2After["InErrors"] - h2Before["InErrors"],
		"h2 UDP InCsumErrors":                  h2After["InCsumErrors"] - h2Before["InCsumErrors"],
	}
	var counted uint64
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(where)) {
		lines = append(lines, k+": "+strconv.FormatUint(where[k], 10))
		if k != "h2 UDP InErrors (incl. rcvbuf, csum)" && k != "h2 UDP InCsumErrors" {
			counted += where[k]
		}
	}
	t.Logf("iperf3 UDP 100 Mbit/s %d s at loss 1e-2: %d datagrams, %d lost, %d out of order; sw1 link TX %d frames, sw2 receiver %+v; drops on the way:\n  %s",
		secs, packets, lost, ooo, st1.Link.TX.Frames, *s2.Receiver, strings.Join(lines, "\n  "))
	if lost > counted {
		t.Errorf("%d datagrams lost but only %d counted on the way: a drop no counter shows", lost, counted)
	}
	if r := s2.Receiver; r.AckNoTimeouts != 0 || r.ForcedSkips != 0 || r.Recovered != r.LostDetected {
		t.Errorf("sw2 receiver gave up on %d frames, skipped %d, recovered %d of %d detected lost", r.AckNoTimeouts, r.ForcedSkips, r.Recovered, r.LostDetected)
	}
	if ooo != 0 {
		t.Errorf("%d datagrams out of order through lg", ooo)
	}
}
