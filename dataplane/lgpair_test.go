package dataplane_test

import (
	"fmt"
	"maps"
	"os/exec"
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

// TestLGAsymmetricEnds: the two ends of a link configured
// differently, each with default settings otherwise, agree on the minimum in
// the link session and lose nothing at 1e-2 loss: sw2 with half the
// ring (so half the receive window), or sw2's link port with one
// queue against sw1's two (so no priority lane: everything on lane 0).
func TestLGAsymmetricEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sw2       dataplane.Config
		oneQueue  bool
		window    uint32
		lanes     uint8
		sw1Credit int
	}{
		{name: "ring", sw2: dataplane.Config{RingSize: 1024}, window: 896, lanes: 2, sw1Credit: 896},
		{name: "lanes", oneQueue: true, window: 1024, lanes: 1, sw1Credit: 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := netns.TestUp(t, "lfa", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: 2})
			if tc.oneQueue {
				// veth lets one end use fewer queues than its peer.
				if out, err := exec.Command("ip", "netns", "exec", tb.NS("sw2"), "ethtool", "-L", "link0", "rx", "1", "tx", "1").CombinedOutput(); err != nil {
					t.Fatalf("ethtool -L link0 rx 1 tx 1 in %s: %v: %s", tb.NS("sw2"), err, out)
				}
			}
			lgc := lgpipe.Config{Copies: 3, AckTimeout: lgAckTimeout}
			b := &lgBed{tb: tb}
			log1, l1 := dataplane.NewLogBuffer()
			log2, l2 := dataplane.NewLogBuffer()
			b.sw1 = dataplane.StartSwitch(t, tb.NS("sw1"), withLG(dataplane.Config{Mode: lgpipe.ModeLG, Logger: l1}, lgc))
			cfg2 := tc.sw2
			cfg2.Mode, cfg2.Logger = lgpipe.ModeLG, l2
			*lgpipe.ConfigOf(&cfg2) = lgc
			b.sw2 = dataplane.StartSwitch(t, tb.NS("sw2"), cfg2)
			if err := b.sw2.Link().Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 21}); err != nil {
				t.Fatalf("impairment on sw2 link0: %v", err)
			}
			if err := b.sw1.Link().Program().SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 22}); err != nil {
				t.Fatalf("impairment on sw1 link0: %v", err)
			}
			b.watchSkips(t)
			for i := 0; lgpipe.StatsOf(b.sw1).Session.Snapshot().State != "up" || lgpipe.StatsOf(b.sw2).Session.Snapshot().State != "up"; i++ {
				if i == 500 {
					t.Fatal("link session not up after 5 s")
				}
				time.Sleep(10 * time.Millisecond)
			}
			prio0 := waitCore(t, b.sw1).PriorityFrames
			r := b.send(t, lgFrames, lgFrameSize, lgRate)
			s1, s2 := b.logLG(t)
			checkDelivery(t, r, true)
			if rs := s2.Receiver; rs.AckNoTimeouts != 0 || rs.ForcedSkips != 0 || rs.LostDetected == 0 {
				t.Errorf("sw2 gave up on %d frames and skipped %d (window overrun); detected %d lost", rs.AckNoTimeouts, rs.ForcedSkips, rs.LostDetected)
			}
			for i, d := range []*dataplane.Dataplane{b.sw1, b.sw2} {
				ss := lgpipe.StatsOf(d).Session.Snapshot()
				if ss.State != "up" || ss.Agreed == nil {
					t.Fatalf("sw%d: link session %s, agreed %v", i+1, ss.State, ss.Agreed)
				}
				if n := ss.Counters.PeerTimeouts; n != 0 {
					t.Errorf("sw%d took its peer for dead %d times (keepalives lost?)", i+1, n)
				}
				a := ss.Agreed
				if got := fmt.Sprint(a.Window, "/", a.Lanes); got != fmt.Sprint(tc.window, "/", tc.lanes) {
					t.Errorf("sw%d agreed window/lanes %s; want %d/%d (the minimum of both ends)", i+1, got, tc.window, tc.lanes)
				}
			}
			if c := s1.Credit; c != tc.sw1Credit {
				t.Errorf("sw1's sender credit %d frames after the agreement; want %d", c, tc.sw1Credit)
			}
			if tc.lanes == 1 && s1.PriorityFrames != prio0 {
				t.Errorf("sw1 sent %d frames on a priority lane its peer does not have after the agreement", s1.PriorityFrames-prio0)
			}
			// The one-queue end says once that it has no priority lane,
			// its peer once that the session agreed on one lane.
			for _, c := range []struct {
				sw, log, msg string
			}{
				{"sw2", log2.String(), `msg="link port has a single TX queue`},
				{"sw1", log1.String(), `msg="link session agreed on one lane`},
			} {
				want := 0
				if tc.oneQueue {
					want = 1
				}
				if n := strings.Count(c.log, c.msg); n != want {
					t.Errorf("%s's log says %s… %d times; want %d:\n%s", c.sw, c.msg, n, want, c.log)
				}
			}
		})
	}
}

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
	r1, r2 := dataplane.StartBoth(t, tb.NS("sw1"), dataplane.Config{Mode: lgpipe.ModeLG}, tb.NS("sw2"), dataplane.Config{Mode: lgpipe.ModeLG})
	sw1, sw2 := r1.D, r2.D
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
