package dataplane_test

import (
	"fmt"
	"os/exec"
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
