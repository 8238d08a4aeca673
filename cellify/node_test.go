package cellify

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

const nodeUs = int64(1000)

// testEdge returns an edge's config for the test nets: REACH every 20 µs.
func testEdge(self EdgeID, hosts, links int) NodeConfig {
	c := DefaultNodeConfig(self, TierEdge, hosts, links, 10e9, nil, nil)
	c.Reach.Interval = 20 * nodeUs
	return c
}

func testFabric(self EdgeID, links int) NodeConfig {
	c := DefaultNodeConfig(self, 1, 0, links, 0, nil, nil)
	c.Reach.Interval = 20 * nodeUs
	return c
}

// newBundle builds two edges (nodes 0 and 1, one host each: hosts 1 and 2)
// joined by k links of delays 1, 2, ... µs, runs REACH until the links are
// usable and teaches both edges the hosts' MACs.
func newBundle(t testing.TB, k int, mod func(*NodeConfig)) *nodeNet {
	n := newNodeNet(t)
	for i := range 2 {
		c := testEdge(EdgeID(i+1), 1, k)
		if mod != nil {
			mod(&c)
		}
		n.add(c)
	}
	for l := range k {
		n.wire(0, l, 1, l, int64(l+1)*nodeUs)
	}
	n.run(200*nodeUs, nodeUs)
	for i, nd := range n.nodes {
		if nd.Reach().Routes(EdgeID(2-i)) != 1<<k-1 {
			t.Fatalf("edge %d: routes %#b after warm-up", i+1, nd.Reach().Routes(EdgeID(2-i)))
		}
		nd.Learn(n.now, hostMAC(1), 1, 0)
		nd.Learn(n.now, hostMAC(2), 2, 0)
	}
	return n
}

// Frames of random sizes cross a bundle exactly once and in order, with
// credits and without, packed and not, in every spray mode; nothing leaks.
func TestNodeBundleRoundTrip(t *testing.T) {
	for _, credits := range []bool{true, false} {
		for _, packing := range []bool{true, false} {
			for _, mode := range []SprayMode{SprayPerm, SprayP2C, SprayHash} {
				name := map[bool]string{true: "pull", false: "push"}[credits] + "/" +
					map[bool]string{true: "packed", false: "unpacked"}[packing] + "/" + mode.String()
				t.Run(name, func(t *testing.T) {
					n := newBundle(t, 3, func(c *NodeConfig) {
						c.Credits, c.Packing, c.Spray = credits, packing, mode
						c.CellPayload = 700
					})
					rng := rand.New(rand.NewPCG(3, 4))
					const frames = 400
					for i := range frames { // 0.9 of the 10 Gbit/s port on average
						n.host(0, 0, hostFrame(1, 2, i%4, i/4, 60+rng.IntN(9000)))
						n.run(4*nodeUs, nodeUs)
					}
					n.run(2000*nodeUs, nodeUs)
					got := n.got[[2]int{1, 0}]
					perFlow := byFlow(got, 4)
					for f := range perFlow {
						checkInOrder(t, perFlow[f], frames/4, name)
					}
					e1 := n.nodes[0]
					if e1.Stats.CellsCut == 0 || e1.Stats.VOQDrops != 0 || e1.Stats.Floods != 0 {
						t.Fatalf("edge 1 stats %+v", e1.Stats)
					}
					if credits && (e1.Stats.CreditReqTx == 0 || n.nodes[1].Stats.CreditGrantTx == 0) {
						t.Fatalf("pull without credit frames: %+v", e1.Stats)
					}
					if !credits && e1.Stats.CreditReqTx != 0 {
						t.Fatalf("push sent %d requests", e1.Stats.CreditReqTx)
					}
					used := 0
					for l := range 3 {
						if n.txCells[[2]int{0, l}] > 0 {
							used++
						}
					}
					if mode != SprayHash && used != 3 {
						t.Fatalf("%s: %d links carried cells", mode, used)
					}
					if rs := n.nodes[1].ReasmStats(); rs.DiscardedRecords != 0 || rs.Timeouts != 0 {
						t.Fatalf("reassembly %+v", rs)
					}
					if n.mem.inUse() != 0 {
						t.Fatalf("%d buffers still in use at rest", n.mem.inUse())
					}
				})
			}
		}
	}
}

// Hash mode: the cells of one flow all take one link.
func TestNodeHashFlowOneLink(t *testing.T) {
	n := newBundle(t, 4, func(c *NodeConfig) { c.Spray = SprayHash; c.CellPayload = 300 })
	for i := range 200 {
		n.host(0, 0, hostFrame(1, 2, 7, i, 1000))
	}
	n.run(1000*nodeUs, nodeUs)
	used := 0
	for l := range 4 {
		if n.txCells[[2]int{0, l}] > 0 {
			used++
		}
	}
	checkInOrder(t, n.got[[2]int{1, 0}], 200, "hash")
	if used != 1 {
		t.Fatalf("one flow's cells took %d links", used)
	}
}

// MAC learning: an unknown destination is flooded (to the other local
// port and to the other edge); the answer teaches the first edge where the
// host is, and then frames go through a VOQ. Local ports switch locally.
func TestNodeLearnAndFlood(t *testing.T) {
	n := newNodeNet(t)
	n.add(testEdge(1, 2, 2)) // hosts 1 (port 0) and 3 (port 1)
	n.add(testEdge(2, 1, 2)) // host 2
	n.wire(0, 0, 1, 0, nodeUs)
	n.wire(0, 1, 1, 1, nodeUs)
	n.run(200*nodeUs, nodeUs)
	e1, e2 := n.nodes[0], n.nodes[1]
	n.host(0, 0, hostFrame(1, 2, 0, 0, 200)) // unknown: flooded
	n.run(100*nodeUs, nodeUs)
	if e1.Stats.Floods != 1 || len(n.got[[2]int{0, 1}]) != 1 || len(n.got[[2]int{1, 0}]) != 1 {
		t.Fatalf("flood: %d floods, host 3 got %d, host 2 got %d", e1.Stats.Floods, len(n.got[[2]int{0, 1}]), len(n.got[[2]int{1, 0}]))
	}
	n.host(1, 0, hostFrame(2, 1, 0, 0, 200)) // e2 learned host 1 behind (e1, port 0)
	n.run(100*nodeUs, nodeUs)
	if e2.Stats.Floods != 0 || len(n.got[[2]int{0, 0}]) != 1 || len(n.got[[2]int{0, 1}]) != 1 {
		t.Fatalf("answer: e2 floods %d, host 1 got %d, host 3 got %d", e2.Stats.Floods, len(n.got[[2]int{0, 0}]), len(n.got[[2]int{0, 1}]))
	}
	n.host(0, 0, hostFrame(1, 2, 0, 1, 200)) // e1 learned host 2 behind (e2, 0)
	n.host(0, 1, hostFrame(3, 1, 0, 0, 200)) // local: port 1 → port 0
	n.run(100*nodeUs, nodeUs)
	if e1.Stats.Floods != 1 || e1.Stats.Local != 1 || len(n.got[[2]int{1, 0}]) != 2 || len(n.got[[2]int{0, 0}]) != 2 {
		t.Fatalf("after learning: %+v, host 2 got %d, host 1 got %d", e1.Stats, len(n.got[[2]int{1, 0}]), len(n.got[[2]int{0, 0}]))
	}
	var flood, unicast int
	e1.VOQs(func(v VOQInfo) {
		if v.Flood {
			flood++
		} else {
			unicast++
		}
	})
	if flood != 1 || unicast != 1 {
		t.Fatalf("e1 VOQs: %d flood, %d unicast", flood, unicast)
	}
	if ms := e1.MACStats(); ms.Learned != 3 {
		t.Fatalf("e1 learned %+v", ms)
	}
	if n.mem.inUse() != 0 {
		t.Fatalf("%d buffers in use", n.mem.inUse())
	}
}

// edgesThroughFabric is two edges, each with one host and two links to
// fabric node f (node index), run until their REACHes went round.
func edgesThroughFabric(t testing.TB) (n *nodeNet, f int) {
	n = newNodeNet(t)
	n.add(testEdge(1, 1, 2))
	n.add(testEdge(2, 1, 2))
	f = n.add(testFabric(100, 4))
	n.wire(0, 0, f, 0, nodeUs)
	n.wire(0, 1, f, 1, nodeUs)
	n.wire(1, 0, f, 2, nodeUs)
	n.wire(1, 1, f, 3, nodeUs)
	n.run(200*nodeUs, nodeUs)
	return n, f
}

// A fabric node between two edges decrements hops, sprays again, marks FCI
// above its threshold (the destination's scheduler hears it), forwards
// credit frames on the priority list and drops a cell without a hop left.
func TestNodeFabric(t *testing.T) {
	n, f := edgesThroughFabric(t)
	for i, nd := range n.nodes[:2] {
		if nd.Reach().Routes(EdgeID(2-i)) != 0b11 {
			t.Fatalf("edge %d routes %#b", i+1, nd.Reach().Routes(EdgeID(2-i)))
		}
		nd.Learn(n.now, hostMAC(1), 1, 0)
		nd.Learn(n.now, hostMAC(2), 2, 0)
	}
	fb := n.nodes[f]
	for i := range 100 {
		n.host(0, 0, hostFrame(1, 2, 0, i, 1500))
	}
	n.run(500*nodeUs, nodeUs)
	checkInOrder(t, n.got[[2]int{1, 0}], 100, "through the fabric")
	if fb.Stats.Forwarded == 0 || fb.Stats.CtrlFwd == 0 || fb.LinkStats(2).TxCells == 0 || fb.LinkStats(3).TxCells == 0 {
		t.Fatalf("fabric %+v", fb.Stats)
	}
	if fb.Stats.FCIMarks != 0 {
		t.Fatalf("%d FCI marks without backlog", fb.Stats.FCIMarks)
	}
	// Backlog above the threshold on both links toward edge 2.
	fb.SetLinkBacklog(2, fb.Config().FCIThreshold+1)
	fb.SetLinkBacklog(3, fb.Config().FCIThreshold+1)
	for i := 100; i < 200; i++ {
		n.host(0, 0, hostFrame(1, 2, 0, i, 1500))
	}
	n.run(500*nodeUs, nodeUs)
	checkInOrder(t, n.got[[2]int{1, 0}], 200, "with FCI")
	if fb.Stats.FCIMarks == 0 || n.nodes[1].Stats.FCISeen != fb.Stats.FCIMarks || n.nodes[1].Scheduler(0).Stats.FCIs == 0 {
		t.Fatalf("FCI: fabric marked %d, edge 2 saw %d, scheduler %+v", fb.Stats.FCIMarks, n.nodes[1].Stats.FCISeen, n.nodes[1].Scheduler(0).Stats)
	}
	// A cell with one hop left dies at the fabric node.
	b := make([]byte, 200)
	h := CellHeader{Dst: 2, Src: 1, Hops: 1, Seq: 1, First: NoRecord}
	l, _ := PutCell(b, &h, make([]byte, 50))
	fb.LinkRx(n.now, 0, n.mem.put(b[:l]))
	if fb.Stats.HopDrops != 1 || len(fb.Out.Free) != 1 {
		t.Fatalf("hop drop: %+v", fb.Stats)
	}
	n.drain(f)
	// Credit frames go on Ctrl, ahead of cells.
	l, _ = PutCredit(b, false, 1, 2, []CreditEntry{{Total: 5}})
	fb.LinkRx(n.now, 0, n.mem.put(b[:l]))
	if c := fb.Out.Link[2].Ctrl; len(c)+len(fb.Out.Link[3].Ctrl) != 1 {
		t.Fatal("credit frame not on a Ctrl list toward edge 2")
	}
	n.drain(f)
	n.run(100*nodeUs, nodeUs)
	if n.mem.inUse() != 0 {
		t.Fatalf("%d buffers in use", n.mem.inUse())
	}
}

// Cells a dead link held are sprayed again over the others and every frame
// arrives once; the copies that had arrived already are dropped as
// duplicates.
func TestNodeRespray(t *testing.T) {
	n := newBundle(t, 3, nil)
	n.cut[[2]int{0, 1}] = true // link 1 holds what e1 sends on it
	for i := range 60 {
		n.host(0, 0, hostFrame(1, 2, 0, i, 3000))
		n.step(nodeUs)
	}
	held := n.held[[2]int{0, 1}]
	if len(held) == 0 {
		t.Fatal("nothing went onto link 1")
	}
	// The first held cell also reached the peer before the link died.
	first := -1
	for i, f := range held {
		if t, _ := frameTypeOf(n.mem.Bytes(f.H, f.Len)); t == 9 && first < 0 {
			first = i
		}
	}
	dup := n.mem.put(n.mem.Bytes(held[first].H, held[first].Len))
	n.nodes[1].LinkRx(n.now, 1, dup)
	n.drain(1)
	for i := range n.nodes {
		n.nodes[i].SetLinkUp(n.now, 1, false)
	}
	e1 := n.nodes[0]
	family := 0
	for _, f := range held {
		if t, _ := frameTypeOf(n.mem.Bytes(f.H, f.Len)); t >= 9 && t <= 11 {
			family++
		}
	}
	e1.Respray(n.now, 1, held)
	n.held[[2]int{0, 1}] = nil
	if e1.Stats.Resprayed != uint64(family) || e1.Stats.RespraysDrop != uint64(len(held)-family) || len(e1.Out.Link[1].Data) != 0 {
		t.Fatalf("respray: %+v, %d cells back on link 1", e1.Stats, len(e1.Out.Link[1].Data))
	}
	n.drain(0)
	n.run(1000*nodeUs, nodeUs)
	checkInOrder(t, n.got[[2]int{1, 0}], 60, "after respray")
	if rs := n.nodes[1].ReasmStats(); rs.Duplicates == 0 || rs.DiscardedRecords != 0 {
		t.Fatalf("reassembly %+v", rs)
	}
	if n.mem.inUse() != 0 {
		t.Fatalf("%d buffers in use", n.mem.inUse())
	}
}

// Hostile frames on every entry point are counted and freed, never kept.
func TestNodeBadInput(t *testing.T) {
	n := newBundle(t, 2, nil)
	e := n.nodes[1]
	before := e.Stats
	good := make([]byte, 200)
	h := CellHeader{Dst: 2, Src: 1, Hops: 3, Port: 9, First: NoRecord}
	l, _ := PutCell(good, &h, make([]byte, 20))
	bad := good[:l]
	cases := []struct {
		frame []byte
		count func(s *NodeStats) uint64
	}{
		{[]byte{1, 2, 3}, func(s *NodeStats) uint64 { return s.BadType }},
		{append(bytes.Clone(bad[:30]), 0), func(s *NodeStats) uint64 { return s.BadCell }},
		{bad, func(s *NodeStats) uint64 { return s.BadPort }},
	}
	for i, c := range cases {
		e.LinkRx(n.now, 0, n.mem.put(c.frame))
		if c.count(&e.Stats) != c.count(&before)+1 {
			t.Fatalf("case %d not counted: %+v", i, e.Stats)
		}
		n.drain(1)
	}
	e.LinkRx(n.now, 5, n.mem.put(bad))
	e.HostRx(n.now, 3, n.mem.put(bad))
	e.HostRx(n.now, 0, n.mem.put(bad[:10]))
	if e.Stats.BadLink != 1 || e.Stats.BadPort != before.BadPort+2 || e.Stats.HostBad != 1 {
		t.Fatalf("stats %+v", e.Stats)
	}
	n.drain(1)
	if n.mem.inUse() != 0 {
		t.Fatalf("%d buffers in use", n.mem.inUse())
	}
}

// hostFramesNoAlloc sends frame from host port 0 of node 0 2000 times to
// grow every list and pool, then 2000 more, each followed by 2 µs of the
// network, and fails if those allocate.
func hostFramesNoAlloc(t *testing.T, n *nodeNet, frame []byte, what string) {
	t.Helper()
	step := func() {
		n.host(0, 0, frame)
		n.run(2*nodeUs, nodeUs)
	}
	for range 2000 {
		step()
	}
	if allocs := testing.AllocsPerRun(2000, step); allocs != 0 {
		t.Fatalf("%s: %v allocations per frame", what, allocs)
	}
}

// Steady state allocates nothing: host frames in, cells across, frames out.
func TestNodeNoAlloc(t *testing.T) {
	for _, mode := range []SprayMode{SprayPerm, SprayHash} {
		n := newBundle(t, 4, func(c *NodeConfig) { c.Spray = mode })
		n.got = nil
		frame := hostFrame(1, 2, 0, 0, 1400)
		hostFramesNoAlloc(t, n, frame, mode.String())
		if n.nodes[1].Stats.Delivered < 3900 {
			t.Fatalf("%s: only %d delivered", mode, n.nodes[1].Stats.Delivered)
		}
	}
}

// Through a fabric node too: forwarding, FCI marking and credit frames
// allocate nothing.
func TestNodeNoAllocFabric(t *testing.T) {
	n, f := edgesThroughFabric(t)
	for _, nd := range n.nodes[:2] {
		nd.Learn(n.now, hostMAC(1), 1, 0)
		nd.Learn(n.now, hostMAC(2), 2, 0)
	}
	n.got = nil
	fb := n.nodes[f]
	fb.SetLinkBacklog(2, fb.Config().FCIThreshold+1)
	frame := hostFrame(1, 2, 0, 0, 1400)
	hostFramesNoAlloc(t, n, frame, "fabric")
	if fb.Stats.Forwarded < 1000 || fb.Stats.FCIMarks == 0 || fb.Stats.CtrlFwd == 0 { // FCI throttles e1: its VOQ drops the rest
		t.Fatalf("fabric %+v", fb.Stats)
	}
}

// Without a buffer the node counts and waits; when memory returns Poll
// resumes the VOQ.
func TestNodeAllocFail(t *testing.T) {
	n := newBundle(t, 2, func(c *NodeConfig) { c.Credits = false })
	n.mem.fail = true
	e1 := n.nodes[0]
	f := hostFrame(1, 2, 0, 0, 500)
	n.mem.fail = false
	fr := n.mem.put(f)
	n.mem.fail = true
	e1.HostRx(n.now, 0, fr)
	if e1.Stats.AllocFail == 0 || e1.Stats.Stalls == 0 {
		t.Fatalf("stats %+v", e1.Stats)
	}
	n.drain(0)
	d := e1.Poll(n.now)
	if d > n.now+allocRetry {
		t.Fatalf("no retry deadline: %d", d-n.now)
	}
	n.mem.fail = false
	n.run(100*nodeUs, nodeUs)
	checkInOrder(t, n.got[[2]int{1, 0}], 1, "after the memory returned")
	if d := e1.Poll(n.now); d == math.MaxInt64 {
		t.Fatal("no deadline at all (REACH)")
	}
}

// TestNodeHeldCellsCountPerPort: the cells the reassembly holds behind a
// hole count against the credit window of the host port they are for, and
// not against the edge's other host ports.
func TestNodeHeldCellsCountPerPort(t *testing.T) {
	mem := newNodeMem(t)
	cfg := testEdge(2, 2, 1)
	cfg.Mem, cfg.Rng = mem, rand.New(rand.NewPCG(1, 2))
	n, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPacker(1, VOQKey{Dst: 2, Port: 0, Class: 0}, 1<<20, DefaultHops, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		p.EnqueueParts([]byte{0}, hostFrame(1, 2, 0, i, 1000))
	}
	var cells [][]byte
	for p.Backlog() > 0 {
		b := make([]byte, CellFrameLen(500))
		fl, _ := p.Cut(b, 1<<20, 500)
		cells = append(cells, b[:fl])
	}
	// Every cell but the first: all held behind its hole.
	held := 0
	for _, c := range cells[1:] {
		h, err := ParseCell(c)
		if err != nil {
			t.Fatal(err)
		}
		held += int(h.Len)
		n.LinkRx(1000, 0, mem.put(c))
	}
	n.SetEgressQueue(1000, 0, 0)
	n.SetEgressQueue(1000, 1, 0)
	if q := n.Scheduler(0).Loop().EgressQueue; q != held {
		t.Errorf("port 0's scheduler sees %d bytes queued, want the %d its reassembly holds", q, held)
	}
	if q := n.Scheduler(1).Loop().EgressQueue; q != 0 {
		t.Errorf("port 1's scheduler sees %d bytes queued for port 0's held cells", q)
	}
}

// Two edges whose credit settings differ each count the other's credit
// frames and name it once, with both settings; equal settings count nothing.
func TestCreditSettingsDiffer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lead, ahead uint64 // edge 2's; edge 1 keeps the defaults
	}{
		{"same", 0, 0},
		{"pre-credit", 8192, 0},
		{"ahead", 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var def CreditClientConfig
			n := newBundle(t, 2, func(c *NodeConfig) {
				def = c.Client
				if c.Self == 2 {
					c.Client.Lead += tc.lead
					c.Client.Ahead += tc.ahead
				}
			})
			for i := range 40 {
				n.host(0, 0, hostFrame(1, 2, 0, i, 1500))
				n.host(1, 0, hostFrame(2, 1, 0, i, 1500))
				n.run(4*nodeUs, nodeUs)
			}
			n.run(500*nodeUs, nodeUs)
			one := CreditSettings{Lead: uint32(def.Lead), Ahead: uint32(def.Ahead)}
			two := CreditSettings{Lead: uint32(def.Lead + tc.lead), Ahead: uint32(def.Ahead + tc.ahead)}
			for i, nd := range n.nodes {
				if nd.Stats.CreditReqRx == 0 || nd.Stats.CreditGrantRx == 0 {
					t.Fatalf("edge %d heard no credit frames: %+v", i+1, nd.Stats)
				}
				found, peer, theirs, ours := nd.SettingsDiffer()
				if tc.lead == 0 && tc.ahead == 0 {
					if nd.Stats.SettingsDiffer != 0 || found != 0 {
						t.Fatalf("edge %d: %d frames and %d findings with equal settings", i+1, nd.Stats.SettingsDiffer, found)
					}
					continue
				}
				want, wantOurs := two, one
				if i == 1 {
					want, wantOurs = one, two
				}
				if nd.Stats.SettingsDiffer != nd.Stats.CreditReqRx+nd.Stats.CreditGrantRx || found != 1 ||
					peer != EdgeID(2-i) || theirs != want || ours != wantOurs {
					t.Fatalf("edge %d: %d of %d frames differ, found %d, peer %d with %+v (ours %+v), want %+v (ours %+v)",
						i+1, nd.Stats.SettingsDiffer, nd.Stats.CreditReqRx+nd.Stats.CreditGrantRx, found, peer, theirs, ours, want, wantOurs)
				}
			}
		})
	}
}

// A peer's settings are reported at each change to other values than this
// edge's, not at each frame; one that comes back to this edge's and leaves
// them again is reported again.
func TestCreditSettingsChanges(t *testing.T) {
	n := newBundle(t, 1, nil)
	e := n.nodes[0]
	own := e.settings.own
	other := CreditSettings{Lead: own.Lead + 1, Ahead: own.Ahead}
	for i, step := range []struct {
		peer  EdgeID
		set   CreditSettings
		found uint64
	}{
		{2, own, 0}, {2, other, 1}, {2, other, 1}, {2, own, 1}, {2, other, 2},
		{3, other, 3}, {3, other, 3}, {60000, other, 3}, // beyond the table: counted, not kept
	} {
		e.heardSettings(step.peer, step.set)
		if found, _, _, _ := e.SettingsDiffer(); found != step.found {
			t.Fatalf("step %d: found %d, want %d", i, found, step.found)
		}
	}
	if e.Stats.SettingsDiffer != 6 {
		t.Fatalf("%d frames counted, want 6", e.Stats.SettingsDiffer)
	}
	if _, peer, theirs, _ := e.SettingsDiffer(); peer != 3 || theirs != other {
		t.Fatalf("last finding %d %+v", peer, theirs)
	}
}
