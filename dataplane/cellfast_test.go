package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
)

// TestCellsFabricKernelPath: fabric3 with the fabric nodes' kernel path
// (--fastpath auto) under numbered UDP frames h1→h2. The fabric nodes
// forward the cells and credit frames in XDP; while f1's link to e2 (e2a) is down, not a
// cell is sent on it, by the kernel or the worker, and the other links
// carry the stream: at most 1 % is lost across the cut (the cells on their
// way when it went down), none arrives twice. The links' counters count
// every cell whichever path took it: what f1 and f2 sent toward e2 is
// what e2 received.
func TestCellsFabricKernelPath(t *testing.T) {
	tb, sw := upFabric3Cells(t, "fxk", dataplane.FastPathAuto)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through fabric3: %v", err)
	}
	f1 := sw["f1"].D
	const e2a = 2 // f1's links: e1a e1b e2a e2b e3a e3b
	snap := func(d *dataplane.Dataplane) cellspipe.Snapshot { return cellspipe.StatsOf(d).Snapshot() }
	for _, n := range []string{"f1", "f2"} {
		if k := cellsSnap(t, sw[n].D).Kernel; k == nil {
			t.Fatalf("%s: no kernel path", n)
		}
	}
	if k := cellsSnap(t, sw["e1"].D).Kernel; k != nil {
		t.Fatalf("e1, an edge, has a kernel path: %+v", k)
	}
	b := &lgBed{tb: tb, sw1: sw["e1"].D, sw2: sw["e2"].D}
	before := cellsSnap(t, f1)
	var downAt, downEnd cellspipe.Snapshot
	r := b.sendDuring(t, 30_000, 500, 10_000, func() {
		time.Sleep(800 * time.Millisecond)
		ipIn(t, tb.NS("f1"), "link", "set", "e2a", "down")
		eventually(func() bool { return !snap(f1).Links[e2a].Usable })
		downAt = cellsSnap(t, f1)
		time.Sleep(700 * time.Millisecond)
		downEnd = cellsSnap(t, f1)
		ipIn(t, tb.NS("f1"), "link", "set", "e2a", "up")
		eventually(func() bool { return snap(f1).Links[e2a].Usable })
	})
	after := cellsSnap(t, f1)
	t.Logf("f1 kernel %+v; e2a cells: %d before, %d at down, %d at its end, %d after; sink %+v, missing %d of %d",
		*after.Kernel, before.Links[e2a].TxCells, downAt.Links[e2a].TxCells, downEnd.Links[e2a].TxCells, after.Links[e2a].TxCells, r.Report, r.LinkMissing(), r.Accepted)
	if got := downEnd.Links[e2a].TxCells - downAt.Links[e2a].TxCells; got != 0 {
		t.Errorf("%d cells sent on e2a while it was down", got)
	}
	if downEnd.Kernel.Forwarded <= downAt.Kernel.Forwarded {
		t.Errorf("the kernel forwarded nothing while e2a was down (%d → %d): the other links should carry the stream", downAt.Kernel.Forwarded, downEnd.Kernel.Forwarded)
	}
	if fw := after.Kernel.Forwarded - before.Kernel.Forwarded; fw*2 < after.Node.Forwarded-before.Node.Forwarded || fw == 0 {
		t.Errorf("the kernel forwarded %d of f1's %d cells; want most", fw, after.Node.Forwarded-before.Node.Forwarded)
	}
	if after.Kernel.CtrlFwd == 0 {
		t.Error("the kernel forwarded no credit frame")
	}
	if after.Kernel.SealErr != 0 || after.Malformed != 0 || after.HopDrops != 0 {
		t.Errorf("f1: seal errors %d, malformed %d, hop drops %d", after.Kernel.SealErr, after.Malformed, after.HopDrops)
	}
	if m := r.LinkMissing(); m < 0 || m*100 > int64(r.Accepted) {
		t.Errorf("%d of %d frames lost across the cut; want at most 1%%", m, r.Accepted)
	}
	if r.Duplicates != 0 {
		t.Errorf("%d duplicates", r.Duplicates)
	}
	// Every cell counted once: sent toward e2 by f1 and f2 (links e2a,
	// e2b) against received by e2, within what the cut lost.
	var sent, got uint64
	for _, n := range []string{"f1", "f2"} {
		s := cellsSnap(t, sw[n].D)
		sent += s.Links[e2a].TxCells + s.Links[e2a+1].TxCells
	}
	for _, l := range cellsSnap(t, sw["e2"].D).Links {
		got += l.RxCells
	}
	t.Logf("cells toward e2: %d sent by f1 and f2, %d received by e2", sent, got)
	if got > sent || sent-got > sent/100+10 {
		t.Errorf("cells toward e2: %d sent by f1 and f2, %d received by e2", sent, got)
	}
}
