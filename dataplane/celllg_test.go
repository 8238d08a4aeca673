package dataplane_test

// Cells over LinkGuardian on veth (linkguardian/lgpipe/celllink.go): the bundle's edges run
// --cells-link-mode lg under the cells; numbered frames from h1 to h2 while a
// link is cut or two links lose 1% in bursts.

import (
	"context"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/netns"
)

// cellsLGConfig is the cells configuration of these tests: a link is out
// after 3 REACH intervals of 5 ms without one (or, under lg, its cells
// un-ACKed that long), well inside the reassembly timeout of 100 ms, so
// the cells a cut link held are sprayed again before the hole they leave
// is skipped. (This machine keeps workers from running for tens of
// milliseconds under load: a spurious exclusion costs lg only a session
// restart, but a hole skipped loses records.)
func cellsLGConfig(mode string) cellspipe.Config {
	return cellspipe.Config{LinkMode: mode, ReachInterval: 5 * time.Millisecond, ReachTh: 3, ReasmTimeout: 100 * time.Millisecond}
}

// upBundleCellsLG is upBundleCells on prefix lfl, once every link is
// usable.
func upBundleCellsLG(t *testing.T, cc cellspipe.Config) *lgBed {
	t.Helper()
	b := upBundleCells(t, "lfl", cc)
	// Every link's session is up with the other edge before traffic.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s1, s2 := cellspipe.StatsOf(b.sw1).Snapshot(), cellspipe.StatsOf(b.sw2).Snapshot()
		if s1.UsableLinks == 4 && s2.UsableLinks == 4 {
			for l := range s1.Links {
				if g := s1.Links[l].LG; cc.LinkMode != "none" && (g == nil || g.Session != "up" || g.PeerNode != 2) {
					t.Fatalf("sw1 %s: link layer %+v; want its session up with node 2", s1.Links[l].Name, g)
				}
			}
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("usable links: sw1 %d, sw2 %d of 4\nsw1 %+v", s1.UsableLinks, s2.UsableLinks, s1.Links)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ipIn runs ip in namespace ns.
func ipIn(t *testing.T, ns string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o, err := netns.Command(ctx, ns, "ip", args...).CombinedOutput(); err != nil {
		t.Errorf("ip %v in %s: %v: %s", args, ns, err, o)
	}
}

// TestCellsLGFailover: under numbered UDP frames h1→h2 over the bundle
// with lg under the cells, link2 is cut at the receiving edge (sw2): set
// down, or every frame it receives dropped by its XDP program (a one-way
// failure: sw1 still hears sw2's REACHes, only its cells go unanswered).
// sw1 takes link2 out of its routes (REACHes missed, or no ACK for 5 REACH
// intervals) and sprays the cells link2's lg sender still held over the
// other links: not a frame is lost, none arrives twice or out of order,
// and link2 carries no cell while cut.
func TestCellsLGFailover(t *testing.T) {
	for _, cut := range []string{"down", "drop"} {
		t.Run(cut, func(t *testing.T) { cellsLGCut(t, cut) })
	}
}

func cellsLGCut(t *testing.T, cut string) {
	b := upBundleCellsLG(t, cellsLGConfig("lg"))
	before := cellsSnap(t, b.sw1)
	link2 := b.sw2.Port(b.sw2.Ports().Links[2]).Program()
	var down cellspipe.Snapshot
	r := b.sendDuring(t, 12_000, 500, 6_000, func() {
		time.Sleep(700 * time.Millisecond)
		if cut == "down" {
			ipIn(t, b.tb.NS("sw2"), "link", "set", "link2", "down")
		} else if err := link2.SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1}); err != nil {
			t.Errorf("drop-all on sw2 link2: %v", err)
		}
		// Once sw1 has taken link2 out, it sends nothing more on it.
		if !eventually(func() bool { return !cellspipe.StatsOf(b.sw1).Snapshot().Links[2].Usable }) {
			t.Errorf("sw1 still uses link2 20 s after it was cut")
		}
		down = cellspipe.StatsOf(b.sw1).Snapshot()
		time.Sleep(300 * time.Millisecond)
		if after := cellspipe.StatsOf(b.sw1).Snapshot(); after.Links[2].LG.Sent > down.Links[2].LG.Sent {
			t.Errorf("sw1 sent %d cells on link2 while it was cut", after.Links[2].LG.Sent-down.Links[2].LG.Sent)
		}
	})
	s1, s2 := cellsSnap(t, b.sw1), cellsSnap(t, b.sw2)
	l2 := s1.Links[2]
	t.Logf("sw1 link2: %+v, link layer %+v", l2, *l2.LG)
	t.Logf("sink %+v; sw1 accepted %d; reassembly at sw2 %+v", r.Report, r.Accepted, s2.Reasm)
	t.Logf("sw1 node %+v; sw2 hosts %+v", s1.Node, s2.Hosts)
	checkDelivery(t, r, true)
	if l2.Exclusions == before.Links[2].Exclusions || down.Links[2].Usable || down.UsableLinks > 3 {
		t.Errorf("sw1 link2: exclusions %d → %d (last %q), usable while cut %v, %d links usable; want it out, 3 links left",
			before.Links[2].Exclusions, l2.Exclusions, l2.LastReason, down.Links[2].Usable, down.UsableLinks)
	}
	if cut == "drop" && (l2.LG.HandedBack == 0 || l2.LG.GiveUps == 0) {
		t.Errorf("sw1 handed back %d cells of link2 after %d give-ups: the cut found nothing in flight (the test proves nothing)", l2.LG.HandedBack, l2.LG.GiveUps)
	}
	if s1.Node.RespraysDrop != 0 || s1.CopyFails != 0 || l2.LG.QueueDrops != 0 {
		t.Errorf("sw1 lost cells it took back: respray drops %d, copy failures %d, queue drops %d", s1.Node.RespraysDrop, s1.CopyFails, l2.LG.QueueDrops)
	}
	if s2.ReasmTimeouts != 0 || s2.ReasmDiscards != 0 || s2.Hosts[0].QueueDrops != 0 {
		t.Errorf("sw2: reassembly skipped %d holes, discarded %d records; %d deliveries found the host queue full", s2.ReasmTimeouts, s2.ReasmDiscards, s2.Hosts[0].QueueDrops)
	}
	for _, s := range []cellspipe.Snapshot{s1, s2} {
		if s.FramesHeld != 0 {
			t.Errorf("node %d: %d frames unaccounted for", s.NodeID, s.FramesHeld)
		}
	}
}

// TestCellsLGBurstyLoss: 1% loss in bursts of 3 on the sw1→sw2 direction of
// two of the four links; lg under the cells repairs it: numbered frames
// all arrive, once and in order, and the links stay in use.
func TestCellsLGBurstyLoss(t *testing.T) {
	b := upBundleCellsLG(t, cellsLGConfig("lg"))
	imp := bpf.Loss(0.01, 3, 7)
	for _, l := range []int{1, 3} {
		if err := b.sw2.Port(b.sw2.Ports().Links[l]).Program().SetImpair(imp); err != nil {
			t.Fatalf("impairment on sw2 link%d: %v", l, err)
		}
	}
	r := b.send(t, 12_000, 500, 6_000)
	s1, s2 := cellsSnap(t, b.sw1), cellsSnap(t, b.sw2)
	var dropped uint64
	for _, l := range []int{1, 3} {
		st, err := b.sw2.Port(b.sw2.Ports().Links[l]).Program().ImpairStats()
		if err != nil {
			t.Fatal(err)
		}
		dropped += st.Dropped
		t.Logf("sw2 link%d impairment %+v; sw2 link layer %+v", l, st, *s2.Links[l].LG)
	}
	t.Logf("sink %+v; sw1 accepted %d", r.Report, r.Accepted)
	if dropped == 0 {
		t.Fatal("the impairment dropped nothing: the test proves nothing")
	}
	checkDelivery(t, r, true)
	var recovered uint64
	for _, l := range s2.Links {
		recovered += l.LG.Recovered
	}
	if recovered == 0 || s2.ReasmTimeouts != 0 {
		t.Errorf("sw2 recovered %d cells, skipped %d reassembly holes", recovered, s2.ReasmTimeouts)
	}
	if s1.UsableLinks != 4 {
		t.Errorf("sw1: %d links usable; lossy links protected by lg stay in use", s1.UsableLinks)
	}
}

// TestCellsNoneFailover: the same cut without a link layer under the
// cells: what link2 held is lost, but no more than what was in flight on
// it until sw1 stopped using it (the cells of 5 REACH intervals, plus the
// TX ring), the rest arrives once and in order.
func TestCellsNoneFailover(t *testing.T) {
	b := upBundleCellsLG(t, cellsLGConfig("none"))
	const rate = 10_000
	r := b.sendDuring(t, 20_000, 500, rate, func() {
		time.Sleep(700 * time.Millisecond)
		ipIn(t, b.tb.NS("sw2"), "link", "set", "link2", "down")
	})
	s1 := cellsSnap(t, b.sw1)
	t.Logf("sink %+v; sw1 accepted %d; sw1 link2 %+v", r.Report, r.Accepted, s1.Links[2])
	// In flight: a quarter of the frames for the exclusion time (3 REACH
	// intervals of 5 ms, and the worker's stalls: its longest poll gap),
	// and what the TX ring of link2 held.
	bound := int64(rate/4*(15*time.Millisecond+time.Duration(s1.MaxPollGap))/time.Second) + int64(2048)
	if m := r.LinkMissing(); m < 0 || m > bound {
		t.Errorf("%d frames lost across the cut; want 0 to %d (what was in flight on link2)", m, bound)
	}
	if r.Duplicates != 0 || r.OutOfOrder != 0 {
		t.Errorf("%d duplicates, %d out of order", r.Duplicates, r.OutOfOrder)
	}
	if s1.Links[2].Usable {
		t.Error("sw1 still uses link2")
	}
}

// TestCellsLGNodeCollision: two edges of the bundle given the same
// --cells-node-id under lg refuse each other in the link session (counted on
// every link) and carry nothing; with monitor under the cells and 5% loss
// on two links, those links' measured loss takes them out of sw2's routes
// and the other two stay.
func TestCellsLGNodeCollision(t *testing.T) {
	tb := netns.TestUp(t, "lfl", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	workers(t, 2)
	cc := cellsLGConfig("lg")
	sw1 := startCells(t, tb.NS("sw1"), 7, nil, bundleLinks, cc).D
	startCells(t, tb.NS("sw2"), 7, nil, bundleLinks, cc)
	eventually(func() bool {
		for _, l := range cellspipe.StatsOf(sw1).Snapshot().Links {
			if l.LG == nil || l.LG.NodeCollisions == 0 {
				return false
			}
		}
		return true
	})
	s := cellsSnap(t, sw1)
	for _, l := range s.Links {
		if l.LG.NodeCollisions == 0 || l.LG.Session == "up" || l.Usable {
			t.Errorf("%s: session %s, usable %v, node collisions %d; want refused", l.Name, l.LG.Session, l.Usable, l.LG.NodeCollisions)
		}
	}
	if s.Node.Delivered != 0 || s.UsableLinks != 0 {
		t.Errorf("with one id on both edges: %d usable links, %d frames delivered", s.UsableLinks, s.Node.Delivered)
	}
}

// TestCellsMonitorLoss: monitor under the cells measures each link's loss
// and a link above 1e-3 leaves the routes ("loss"); the clean links stay.
// REACH misses are given 150 ms (the default), so a stalled worker on a
// busy machine does not take the clean links out while the test looks.
func TestCellsMonitorLoss(t *testing.T) {
	cc := cellsLGConfig("monitor")
	cc.ReachTh = 30
	b := upBundleCellsLG(t, cc)
	imp := bpf.Loss(0.05, 1, 3)
	for _, l := range []int{0, 2} {
		if err := b.sw2.Port(b.sw2.Ports().Links[l]).Program().SetImpair(imp); err != nil {
			t.Fatal(err)
		}
	}
	b.send(t, 12_000, 500, 6_000)
	// A measurement every 100 ms: wait for the lossy links to be out.
	eventually(func() bool {
		s := cellspipe.StatsOf(b.sw2).Snapshot()
		return !s.Links[0].Usable && !s.Links[2].Usable
	})
	s := cellsSnap(t, b.sw2)
	for l, ln := range s.Links {
		lossy := l == 0 || l == 2
		t.Logf("sw2 %s: usable %v, last exclusion %q, measured loss %.4f", ln.Name, ln.Usable, ln.LastReason, ln.LG.LossRate)
		if lossy && (ln.Usable || ln.LastReason != "loss" || ln.LG.LossRate < 0.01) || !lossy && (!ln.Usable || ln.LG.LossRate > 1e-3) {
			t.Errorf("sw2 %s (lossy %v): usable %v, last exclusion %q, loss %.4f", ln.Name, lossy, ln.Usable, ln.LastReason, ln.LG.LossRate)
		}
	}
}
