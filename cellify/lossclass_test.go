package cellify

import (
	"bytes"
	"testing"

	"github.com/linkfabric/linkfabric/link"
)

func testLossClasses() LossClasses {
	lc := LossClasses{Bounds: DefaultLossBounds}
	lc.Of[7] = 1 // PCP 7: the clean class
	lc.Hold = 2 * reachI
	return lc
}

func TestLossClassify(t *testing.T) {
	lc := testLossClasses()
	for _, c := range []struct {
		cur  LossClass
		loss float64
		want LossClass
	}{
		{0, 0, 1}, {0, 1e-6, 1}, {0, 2e-6, 2}, {0, 1e-3, 2}, {0, 1e-2, 3}, {0, 0.5, 3},
		{1, 2e-6, 2},      // worse: at once
		{3, 6e-4, 3},      // better than class 2's bound but above its clear margin
		{3, 4e-4, 2},      // within the margin of class 2
		{3, 4e-7, 1},      // within class 1's margin: straight there
		{2, 8e-7, 2},      // class 1's bound, not its margin
		{2, 1e-3, 2},      // at the bound stays
		{2, 1.1e-3, 3},    // above: worse at once
		{1, 1e-6, 1},      // at the bound stays
		{1, 1.0000001, 3}, // beyond every bound: the loosest (exclusion is LossFaulty's)
	} {
		if got := lc.Classify(c.cur, c.loss); got != c.want {
			t.Errorf("Classify(%d, %g) = %d, want %d", c.cur, c.loss, got, c.want)
		}
	}
	var off LossClasses
	if off.Classify(0, 0.5) != 1 || off.N() != 1 || off.For(7) != 1 {
		t.Fatal("classes off: every link and traffic class is class 1")
	}
	if lc.For(7) != 1 || lc.For(0) != 3 || lc.N() != 3 {
		t.Fatalf("For(7) %d, For(0) %d, N %d", lc.For(7), lc.For(0), lc.N())
	}
}

// A link moves to a better class only after LossClasses.Hold of
// measurements allowing it (DefaultClassHold here, measured every 100 ms as
// the dataplane does): an idle gray link whose window now and then shows no
// loss stays in class 3; an unmeasured link starts in the loosest class;
// the class it reaches is the worst its measurements allowed; worse is at
// once.
func TestLossClassHold(t *testing.T) {
	lc := LossClasses{Bounds: DefaultLossBounds}
	r := newTestReachClasses(t, 100, 1, 1, lc)
	const step = int64(100e6)
	now := int64(0)
	class := func(loss float64, n int) LossClass {
		for range n {
			now += step
			r.SetLoss(now, 0, loss)
		}
		return r.Link(0).Class
	}
	if c := class(0, 1); c != 3 {
		t.Fatalf("first measurement 0: class %d, want 3 until held", c)
	}
	if c := class(0, 28); c != 3 {
		t.Fatalf("0 for 2.8 s: class %d, want 3", c)
	}
	if c := class(0, 2); c != 1 {
		t.Fatalf("0 for 3 s: class %d, want 1", c)
	}
	if c := class(1e-2, 1); c != 3 {
		t.Fatalf("1e-2: class %d, want 3 at once", c)
	}
	// The gray link: clean windows now and then, never for the hold.
	for i := range 300 {
		loss := 1e-2
		if i%7 < 3 {
			loss = 0
		}
		if c := class(loss, 1); c != 3 {
			t.Fatalf("gray link with clean windows, step %d: class %d", i, c)
		}
	}
	// Held, but one measurement allowed only class 2: class 2.
	class(0, 10)
	class(4e-4, 1)
	if c := class(0, 20); c != 2 {
		t.Fatalf("0 and 4e-4 over the hold: class %d, want 2", c)
	}
	if c := class(0, 31); c != 1 {
		t.Fatalf("then 0 for the hold: class %d, want 1", c)
	}
	lc.Hold = -1
	r = newTestReachClasses(t, 100, 1, 1, lc)
	if c := class(0, 1); c != 1 {
		t.Fatalf("Hold < 0: class %d, want 1 at once", c)
	}
}

func TestLossClassConfig(t *testing.T) {
	for _, lc := range []LossClasses{
		{Bounds: []float64{1e-3, 1e-6}},
		{Bounds: []float64{1e-6, 1e-3, 1e-2, 1e-1}},
		{Bounds: []float64{-1}},
		{Bounds: []float64{1e-3}, Clear: 2},
		{Bounds: []float64{1e-3, 1e-2}, Of: [8]LossClass{3}},
	} {
		cfg := DefaultReachConfig(1, TierEdge, 2)
		cfg.Classes, cfg.LossFaulty = lc, 1
		if _, err := NewReachability(cfg); err == nil {
			t.Errorf("%+v accepted", lc)
		}
	}
	cfg := DefaultReachConfig(1, TierEdge, 2)
	cfg.Classes = testLossClasses()
	if _, err := NewReachability(cfg); err == nil {
		t.Error("LossFaulty below the loosest class's bound accepted")
	}
	cfg.SetClasses(cfg.Classes)
	if _, err := NewReachability(cfg); err != nil {
		t.Errorf("default classes refused: %v", err)
	}
	var of [8]LossClass
	if err := ParseClassMap("7=1, 5=2", 3, &of); err != nil || of[7] != 1 || of[5] != 2 || of[0] != 0 {
		t.Fatalf("ParseClassMap: %v %v", err, of)
	}
	for _, s := range []string{"8=1", "7=4", "7", "a=1", "7=0"} {
		if err := ParseClassMap(s, 3, &of); err == nil {
			t.Errorf("ParseClassMap(%q) accepted", s)
		}
	}
}

// A REACH with classes round-trips, and its class bitmaps are read per class.
func TestReachWireClasses(t *testing.T) {
	b := make([]byte, 200)
	in := Reach{Node: 5, Role: RoleFabric, Class: 3, Classes: true, Seq: 7, Edges: 12,
		Bitmap: []byte{0x04, 0x00, 0x0C, 0x00, 0x0C, 0x08}}
	n, err := PutReach(b, &in)
	if err != nil {
		t.Fatal(err)
	}
	if n != ReachFrameLen(12, true) {
		t.Fatalf("length %d, want %d", n, ReachFrameLen(12, true))
	}
	out, err := ParseReach(b[:n])
	if err != nil {
		t.Fatal(err)
	}
	if out.Class != 3 || !out.Classes || !bytes.Equal(out.Bitmap, in.Bitmap) {
		t.Fatalf("parsed %+v", out)
	}
	if !out.ReachableIn(1, 2) || out.ReachableIn(1, 3) || !out.ReachableIn(2, 3) || out.ReachableIn(2, 11) || !out.ReachableIn(3, 11) || !out.Reachable(11) {
		t.Fatal("class bitmaps read wrong")
	}
	// A class bitmap with edge 0 set is refused like the single one.
	in.Bitmap = []byte{0x04, 0x00, 0x0D, 0x00, 0x0C, 0x08}
	if _, err := PutReach(b, &in); err == nil {
		t.Fatal("edge 0 in class 2's bitmap accepted")
	}
}

// wantRoutes fails with msg (which formats got) unless got is want.
func wantRoutes(t *testing.T, got, want uint64, msg string) {
	t.Helper()
	if got != want {
		t.Fatalf(msg, got)
	}
}

// One tier, edges e1 and e2, fabric nodes f1 and f2, each edge linked to
// each. f2's link to e2 is gray (10⁻²), the rest clean: class-1 routes go
// only through f1 (f2 advertises e2 in class 3 only), at both edges and at
// the fabric nodes; nothing is class 1 before it is measured at both ends;
// one end's measurement is enough to make a link gray; when the gray link
// heals, class 1 takes f2 back.
func TestReachClassesEndToEnd(t *testing.T) {
	n := newReachNet()
	n.classes = testLossClasses()
	e1, e2 := n.add(t, 1, TierEdge, 2), n.add(t, 2, TierEdge, 2)
	f1, f2 := n.add(t, 101, 1, 2), n.add(t, 102, 1, 2)
	n.wire(e1, 0, f1, 0)
	n.wire(e1, 1, f2, 0)
	n.wire(e2, 0, f1, 1)
	n.wire(e2, 1, f2, 1)
	n.run(10 * reachI)
	r1 := n.nodes[e1]
	if r1.RoutesIn(3, 2) != 0b11 || r1.RoutesIn(1, 2) != 0 || r1.RoutesFor(7, 2) != 0 || r1.Routes(2) != 0b11 {
		t.Fatalf("unmeasured: class 3 %#b, class 1 %#b (want 0b11, 0)", r1.RoutesIn(3, 2), r1.RoutesIn(1, 2))
	}
	// measure reports the losses twice, a hold apart (a better class
	// needs them for LossClasses.Hold).
	measure := func(grayLoss float64) {
		for range 2 {
			for i := range n.nodes {
				for l := range 2 {
					loss := 0.0
					if i == f2 && l == 1 { // only f2 sees the gray link's loss
						loss = grayLoss
					}
					n.nodes[i].SetLoss(n.now, l, loss)
				}
			}
			n.run(n.classes.Hold)
		}
	}
	measure(1e-2)
	n.run(5 * reachI)
	wantRoutes(t, r1.RoutesFor(7, 2), 0b01, "e1's class-1 routes to e2: %#b, want only through f1")
	wantRoutes(t, r1.RoutesFor(0, 2), 0b11, "e1's class-3 routes to e2: %#b, want both")
	if c := n.nodes[e2].EffClass(1); c != 3 {
		t.Fatalf("e2 measures its link to f2 clean but f2 does not: class %d, want 3", c)
	}
	wantRoutes(t, n.nodes[e2].RoutesIn(1, 1), 0b01, "e2's class-1 routes to e1: %#b, want only its clean link")
	wantRoutes(t, n.nodes[f2].RoutesIn(1, 2), 0, "f2's class-1 routes to e2: %#b, want none")
	wantRoutes(t, n.nodes[f2].RoutesIn(3, 2), 0b10, "f2's class-3 routes to e2: %#b")
	// Healing: f2 measures 6·10⁻⁴ (within class 2's margin: class 2 is a
	// step, class 1 needs the loss at half of 10⁻⁶), then 0.
	measure(4e-4)
	n.run(5 * reachI)
	wantRoutes(t, r1.RoutesIn(2, 2), 0b11, "class 2 after the link improved: %#b")
	wantRoutes(t, r1.RoutesIn(1, 2), 0b01, "class 1 after the link improved to class 2: %#b")
	measure(0)
	n.run(5 * reachI)
	wantRoutes(t, r1.RoutesIn(1, 2), 0b11, "healed: class-1 routes %#b")
}

func TestReachClassesNoAlloc(t *testing.T) {
	r := newTestReachClasses(t, 100, 1, 8, testLossClasses())
	msg := &PeerReach{From: 7, Tier: TierEdge, Class: 1, Classes: true, Bitmap: bytes.Repeat(reachBits(7), 3)}
	adv := make([]byte, r.AdvertLen())
	reachRoundsNoAlloc(t, r, 1000, msg, adv, func(now int64, l int) { r.SetLoss(now, l, float64(l%2)*1e-2) })
}

// classHold is the node tests' LossClasses.Hold.
const classHold = 20 * nodeUs

// withClasses sets loss classes on a node config (traffic class 5, DSCP EF's
// class selector, bound to class 1).
func withClasses(c NodeConfig) NodeConfig {
	lc := LossClasses{Bounds: DefaultLossBounds, Hold: classHold}
	lc.Of[5] = 1
	c.Reach.SetClasses(lc)
	return c
}

// setDSCP gives an IPv4 host frame a DSCP (the IP checksum is not kept).
func setDSCP(b []byte, dscp byte) []byte {
	b[15] = dscp << 2
	return b
}

// Edges e1, e2 joined by fabric nodes f1 (a clean link to each edge and a
// second, gray one to e2) and f2 (its link to e2 gray): frames of a class-1
// traffic class cross only f1 and its clean link (f2 carries none of them
// on any link: e1 knows f2 reaches e2 in class 3 only) and all arrive in
// order; class-3 frames use every link; with the gray links healed, class
// 1 takes f2 again.
func TestNodeLossClassesFabric(t *testing.T) {
	n := newNodeNet(t)
	e1 := n.add(withClasses(testEdge(1, 1, 2)))
	e2 := n.add(withClasses(testEdge(2, 1, 3)))
	f1 := n.add(withClasses(testFabric(101, 3)))
	f2 := n.add(withClasses(testFabric(102, 2)))
	n.wire(e1, 0, f1, 0, nodeUs)
	n.wire(e1, 1, f2, 0, nodeUs)
	n.wire(e2, 0, f1, 1, nodeUs)
	n.wire(e2, 1, f2, 1, 2*nodeUs)
	n.wire(e2, 2, f1, 2, 2*nodeUs)
	gray := map[[2]int]bool{{f2, 1}: true, {e2, 1}: true, {f1, 2}: true, {e2, 2}: true}
	// measure reports the losses twice, a hold apart.
	measure := func(p float64) {
		for range 2 {
			for i, nd := range n.nodes {
				for l := range nd.cfg.Links {
					loss := 0.0
					if gray[[2]int{i, l}] {
						loss = p
					}
					nd.SetLoss(n.now, l, loss)
				}
			}
			n.run(classHold, nodeUs)
		}
	}
	// send hands e1 frames from..to-1 with a DSCP, 20 at a time (the
	// VOQ's ring holds about that many), and runs until they are through.
	send := func(from, to int, dscp byte) {
		for i := from; i < to; i++ {
			n.host(e1, 0, setDSCP(hostFrame(1, 2, 0, i, 1000), dscp))
			if i%20 == 19 {
				n.run(20*nodeUs, nodeUs)
			}
		}
		n.run(500*nodeUs, nodeUs)
	}
	n.run(200*nodeUs, nodeUs)
	for _, nd := range n.nodes[:2] {
		nd.Learn(n.now, hostMAC(1), 1, 0)
		nd.Learn(n.now, hostMAC(2), 2, 0)
	}
	// Unmeasured: class 1 has no route yet; the frames wait in their VOQ.
	for i := range 20 {
		n.host(e1, 0, setDSCP(hostFrame(1, 2, 0, i, 1000), 46))
	}
	n.run(100*nodeUs, nodeUs)
	if len(n.got[[2]int{e2, 0}]) != 0 || n.txCells[[2]int{e1, 0}]+n.txCells[[2]int{e1, 1}] != 0 {
		t.Fatalf("class 1 crossed unmeasured links: %d delivered", len(n.got[[2]int{e2, 0}]))
	}
	measure(1e-2)
	n.run(100*nodeUs, nodeUs)
	send(20, 300, 46)
	checkInOrder(t, n.got[[2]int{e2, 0}], 300, "class 1")
	if c := n.txCells[[2]int{e1, 1}] + n.txCells[[2]int{f2, 1}] + n.txCells[[2]int{f2, 0}]; c != 0 {
		t.Fatalf("class 1: %d cells through f2", c)
	}
	if n.txCells[[2]int{f1, 1}] == 0 || n.txCells[[2]int{f1, 2}] != 0 {
		t.Fatalf("class 1: %d cells over f1's clean link to e2 (want > 0), %d over its gray one", n.txCells[[2]int{f1, 1}], n.txCells[[2]int{f1, 2}])
	}
	// Class 3 (DSCP 0) sprays over both.
	n.got = map[[2]int][][]byte{}
	send(0, 300, 0)
	checkInOrder(t, n.got[[2]int{e2, 0}], 300, "class 3")
	if n.txCells[[2]int{f2, 1}] == 0 || n.txCells[[2]int{f1, 2}] == 0 {
		t.Fatal("class 3: no cells over a gray link")
	}
	for _, g := range [][2]int{{f2, 1}, {f1, 2}} {
		if cb := n.nodes[g[0]].LinkStats(g[1]).TxClassBytes; cb[0] != 0 || cb[2] == 0 {
			t.Fatalf("gray link %v: class bytes %v, want none of class 1 and some of class 3", g, cb)
		}
	}
	// Healed: class 1 uses f2 again.
	before := n.txCells[[2]int{f2, 1}]
	measure(0)
	n.run(100*nodeUs, nodeUs)
	n.got = map[[2]int][][]byte{}
	send(0, 300, 46)
	checkInOrder(t, n.got[[2]int{e2, 0}], 300, "class 1 healed")
	if n.txCells[[2]int{f2, 1}] == before {
		t.Fatal("healed: class 1 still avoids f2")
	}
	for _, nd := range n.nodes {
		if nd.Stats.NoRoute != 0 {
			t.Fatalf("node %d: %d cells without a route", nd.cfg.Self, nd.Stats.NoRoute)
		}
	}
}

// The peer's REACH counter measures an idle link's loss: gaps count, a
// restart (a step back) or a jump beyond maxReachGap does not.
func TestReachLostByCounter(t *testing.T) {
	r := newTestReach(t, 1, TierEdge, 1)
	for i, seq := range []uint32{1, 2, 5, 6, 1, 2, 2 + maxReachGap + 1, 2 + maxReachGap + 3} {
		r.Receive(int64(i+1)*1000, 0, &PeerReach{From: 101, Tier: 1, Seq: seq})
	}
	if l := r.Link(0); l.ReachRx != 8 || l.ReachLost != 3 {
		t.Fatalf("received %d, lost %d; want 8 and 3", l.ReachRx, l.ReachLost)
	}
	// Another node on the link starts its own count.
	r.Receive(10_000, 0, &PeerReach{From: 102, Tier: 1, Seq: 50})
	r.Receive(11_000, 0, &PeerReach{From: 102, Tier: 1, Seq: 51})
	if l := r.Link(0); l.ReachLost != 3 {
		t.Fatalf("after a peer change: lost %d, want 3", l.ReachLost)
	}
}

// Edges e1, e2 joined by a clean link (class 1) and a gray one (class 3):
// cells of a class-1 traffic class cross the clean link only; when it is
// excluded with cells of theirs handed back (Respray), no link is left in
// class 1, and those cells, already cut, take the next looser class that
// reaches e2 (counted) rather than being dropped: every frame arrives, in
// order. The VOQ's frames not cut yet wait for a class-1 route.
func TestNodeResprayClassFallback(t *testing.T) {
	n := newNodeNet(t)
	edge := func(self EdgeID) NodeConfig {
		c := withClasses(testEdge(self, 1, 2))
		c.Credits = false // no grant to wait for over the held link
		return c
	}
	e1, e2 := n.add(edge(1)), n.add(edge(2))
	n.wire(e1, 0, e2, 0, nodeUs)
	n.wire(e1, 1, e2, 1, nodeUs)
	n.run(200*nodeUs, nodeUs)
	for range 2 {
		for _, nd := range n.nodes {
			nd.SetLoss(n.now, 0, 0)
			nd.SetLoss(n.now, 1, 1e-2)
		}
		n.run(classHold, nodeUs)
	}
	n.run(100*nodeUs, nodeUs)
	a, b := n.nodes[e1], n.nodes[e2]
	for _, nd := range []*Node{a, b} {
		nd.Learn(n.now, hostMAC(1), 1, 0)
		nd.Learn(n.now, hostMAC(2), 2, 0)
	}
	if r := a.Reach().RoutesIn(1, 2); r != 1 {
		t.Fatalf("class-1 routes to e2 %#b, want the clean link only", r)
	}
	cut := [2]int{e1, 0}
	n.cut[cut] = true // the clean link's cells stay with its layer
	const frames = 10
	for i := range frames {
		n.host(e1, 0, setDSCP(hostFrame(1, 2, 0, i, 1000), 46))
	}
	n.run(20*nodeUs, nodeUs)
	var held []link.Frame // its cells (the link layer keeps its control frames)
	for _, f := range n.held[cut] {
		if ty, _ := frameTypeOf(n.mem.Bytes(f.H, f.Len)); ty == 9 {
			held = append(held, f)
		} else {
			n.mem.release(f)
		}
	}
	if len(held) == 0 {
		t.Fatal("no cell of class 1 on the clean link")
	}
	delete(n.cut, cut)
	delete(n.held, cut)
	a.SetLinkUp(n.now, 0, false)
	if r := a.Reach().RoutesIn(1, 2); r != 0 {
		t.Fatalf("class-1 routes to e2 %#b with the clean link down", r)
	}
	a.Respray(n.now, 0, held)
	n.drain(e1)
	n.run(500*nodeUs, nodeUs)
	if a.Stats.RespraysDrop != 0 || a.Stats.NoRoute != 0 {
		t.Fatalf("resprayed cells dropped: %d (no route %d)", a.Stats.RespraysDrop, a.Stats.NoRoute)
	}
	if a.Stats.ClassFallback == 0 {
		t.Fatal("cells resprayed over a looser class not counted")
	}
	checkInOrder(t, n.got[[2]int{e2, 0}], frames, "class 1 after respray")
	if n.mem.inUse() != 0 {
		t.Fatalf("%d buffers in use", n.mem.inUse())
	}
}
