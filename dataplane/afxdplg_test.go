package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestSingleTxQueueLink: a link port with two receive queues but a single
// TX queue (ethtool -L link0 rx 2 tx 1, as on NICs with more RX than TX
// queues) transmits on one lane: it says so once at start, offers one lane,
// the session agrees on one at both ends (the peer says so once too), and
// lg runs over it with nothing sent on a priority lane.
func TestSingleTxQueueLink(t *testing.T) {
	tb := netns.TestUp(t, "lfzc", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: 2})
	out, err := netns.Command(context.Background(), tb.NS("sw2"), "ethtool", "-L", "link0", "rx", "2", "tx", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool -L link0 rx 2 tx 1 in %s: %v: %s", tb.NS("sw2"), err, out)
	}
	log1, l1 := dataplane.NewLogBuffer()
	log2, l2 := dataplane.NewLogBuffer()
	lgc := lgpipe.Config{AckTimeout: lgAckTimeout}
	r1, r2 := dataplane.StartBoth(t, tb.NS("sw1"), withLG(dataplane.Config{Mode: lgpipe.ModeLG, Logger: l1}, lgc), tb.NS("sw2"), withLG(dataplane.Config{Mode: lgpipe.ModeLG, Logger: l2}, lgc))
	sw1, sw2 := r1.D, r2.D
	if p := sw2.Link(); len(p.Sockets()) != 2 || p.Lanes() != 1 {
		t.Fatalf("sw2 link0: %d sockets, %d lanes; want 2 sockets (one per RX queue), 1 lane", len(p.Sockets()), p.Lanes())
	}
	for i := 0; lgpipe.StatsOf(sw1).Session.Snapshot().State != "up" || lgpipe.StatsOf(sw2).Session.Snapshot().State != "up"; i++ {
		if i == 500 {
			t.Fatal("link session not up after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := &lgBed{tb: tb, sw1: sw1, sw2: sw2}
	prio0 := waitCore(t, sw1).PriorityFrames
	r := b.send(t, 20_000, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	for i, d := range []*dataplane.Dataplane{sw1, sw2} {
		if a := lgpipe.StatsOf(d).Session.Snapshot().Agreed; a == nil || a.Lanes != 1 {
			t.Errorf("sw%d agreed %+v; want 1 lane", i+1, a)
		}
	}
	if c := waitCore(t, sw1); c.PriorityFrames != prio0 {
		t.Errorf("sw1 sent %d frames on a priority lane after agreeing on one lane", c.PriorityFrames-prio0)
	}
	const own, peer = `msg="link port has a single TX queue`, `msg="link session agreed on one lane`
	if l := log2.String(); strings.Count(l, own) != 1 || strings.Contains(l, peer) {
		t.Errorf("sw2's log should say %q once (and not %q):\n%s", own, peer, l)
	}
	if l := log1.String(); strings.Count(l, peer) != 1 || strings.Contains(l, own) {
		t.Errorf("sw1's log should say %q once (and not %q):\n%s", peer, own, l)
	}
}
