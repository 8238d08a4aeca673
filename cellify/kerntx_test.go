package cellify

import (
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link"
)

// kernNet is a bundle whose edge 1 (node 0) has the ingress kernel path,
// run by its model: host frames are offered to the model first, as the
// host port's program would be, and reach the node only if it passes them.
type kernNet struct {
	*nodeNet
	m             *CellTxModel
	voqNs, voqTau int64
}

func newKernNet(t *testing.T, links int, mod func(*NodeConfig)) *kernNet {
	t.Helper()
	n := newBundle(t, links, mod)
	k := &kernNet{nodeNet: n, m: NewCellTxModel(64)}
	k.attach(n.nodes[0])
	return k
}

// attach gives nd the model, its links and routes toward edge 2.
func (k *kernNet) attach(nd *Node) {
	k.t.Helper()
	m := k.m
	m.Now = k.now
	links := len(nd.links)
	m.Routes[[2]int{1, 2}] = 1<<links - 1
	m.Targets = 1<<links - 1
	for c := range m.LC {
		m.LC[c] = uint8(nd.cfg.Reach.Classes.For(Class(c)))
	}
	if !nd.SetKernelTx(m, 0, k.voqNs, k.voqTau) {
		k.t.Fatal("SetKernelTx refused")
	}
}

// hostK offers host frame b to the kernel path of node 0 (RX queue 0) and
// hands it to the node if the kernel passes it on; a cell the kernel sends
// goes onto its link.
func (k *kernNet) hostK(b []byte) int {
	k.m.Now = k.now
	v, cell, l := k.m.Offer(b, 0)
	switch v {
	case KernelSent:
		from := [2]int{0, l}
		k.txCells[from]++
		k.fly = append(k.fly, netFly{at: k.now + k.delay[from], to: k.peer[from], f: k.mem.put(cell)})
	case KernelToGo:
		k.host(0, 0, b)
		k.m.Consumed.Add(1)
	}
	return v
}

// checkCredit checks that no VOQ of node 0 sent beyond its grant and lead.
func (k *kernNet) checkCredit(what string) {
	k.t.Helper()
	nd := k.nodes[0]
	lead := nd.cfg.Client.Lead
	for _, q := range nd.list {
		if q.cc == nil {
			continue
		}
		if q.cc.Sent() > q.cc.Granted()+lead {
			k.t.Fatalf("%s: VOQ %+v sent %d, granted %d + lead %d", what, q.v.Key, q.cc.Sent(), q.cc.Granted(), lead)
		}
		if q.v.Sent() != q.cc.Sent() || q.v.Enqueued() != q.cc.Enqueued() {
			k.t.Fatalf("%s: VOQ %+v: packer sent %d enqueued %d, credit client %d %d", what, q.v.Key,
				q.v.Sent(), q.v.Enqueued(), q.cc.Sent(), q.cc.Enqueued())
		}
	}
}

// Frames cross the bundle exactly once and in order per flow, whichever
// path each takes (the kernel's for those that fit a cell and its buffer,
// the worker's for the rest and whenever it holds the VOQ); the credit loop counts the
// kernel's bytes: the egress scheduler is asked for every byte and the
// VOQs never exceed their grant.
func TestKernelEdgeRoundTrip(t *testing.T) {
	for _, credits := range []bool{true, false} {
		for _, packing := range []bool{true, false} {
			name := map[bool]string{true: "pull", false: "push"}[credits] + "/" + map[bool]string{true: "packed", false: "unpacked"}[packing]
			t.Run(name, func(t *testing.T) {
				k := newKernNet(t, 3, func(c *NodeConfig) {
					c.Credits, c.Packing, c.CellPayload = credits, packing, 700
					c.Client.Lead = 8000
				})
				rng := rand.New(rand.NewPCG(3, 4))
				const frames = 400
				total := 0
				for i := range frames {
					sz := 60 + rng.IntN(1000)
					if rng.IntN(4) == 0 {
						sz = 60 + rng.IntN(9000)
					}
					total += sz
					// A buffer without headroom now and then: that frame
					// goes to the worker, the next ones may not overtake it.
					k.m.NoHeadroom = rng.IntN(8) == 0
					k.hostK(hostFrame(1, 2, i%4, i/4, sz))
					k.run(int64(rng.IntN(4))*nodeUs, nodeUs)
					k.checkCredit(name)
				}
				k.run(20000*nodeUs, 10*nodeUs)
				got := k.got[[2]int{1, 0}]
				perFlow := byFlow(got, 4)
				for f := range perFlow {
					checkInOrder(t, perFlow[f], frames/4, name)
				}
				e1 := k.nodes[0]
				ks := e1.KernelStats()
				if k.m.C.Sent == 0 || ks.Cells != k.m.C.Sent || ks.Bytes != k.m.C.Bytes {
					t.Fatalf("kernel sent %+v, the node folded %+v", k.m.C, ks)
				}
				if hs := e1.HostStats(0); hs.RxFrames != frames || hs.RxBytes != uint64(total) {
					t.Fatalf("host port counted %d frames %d bytes, want %d, %d", hs.RxFrames, hs.RxBytes, frames, total)
				}
				if e1.Stats.VOQDrops != 0 || e1.Stats.Floods != 0 {
					t.Fatalf("edge 1 stats %+v", e1.Stats)
				}
				if rs := k.nodes[1].ReasmStats(); rs.DiscardedRecords != 0 || rs.Timeouts != 0 || rs.Inconsistent != 0 {
					t.Fatalf("reassembly %+v", rs)
				}
				k.checkCredit(name)
				if credits {
					ct := e1.Credits()
					var req uint64
					for c := range Classes {
						if r, _, ok := k.nodes[1].Scheduler(0).Totals(1, Class(c)); ok {
							req += r
						}
					}
					if req != ct.Requested || ct.Requested != uint64(total+frames*KernelRecordOverhead) {
						t.Fatalf("egress scheduler asked for %d, the VOQs enqueued %d, the host sent %d", req, ct.Requested, total+frames*KernelRecordOverhead)
					}
				}
				t.Logf("%s: kernel %d cells, claims %d, hand-backs %d, raises %d, %+v", name, k.m.C.Sent, ks.Claims, ks.HandBacks, ks.Raises, k.m.C)
				if credits && ks.Raises == 0 {
					t.Fatalf("pull: no grant raised a room the kernel kept: %+v", ks)
				}
				if credits && k.m.C.NoCredit == 0 {
					t.Fatalf("pull: the kernel never ran out of credit: %+v", k.m.C)
				}
				if k.mem.inUse() != len(k.fly) {
					t.Fatalf("%d buffers still in use at rest (%d in flight, reassembly %+v)", k.mem.inUse(), len(k.fly), k.nodes[1].ReasmStats())
				}
			})
		}
	}
}

// Go takes the VOQ in the middle of the kernel's step 5 (between its loads
// and its CAS) and right after the commit: with a frame of another RX queue
// it claims, cuts a cell of several records (packing), and hands back at
// its Poll. No seq is taken twice, the record numbers stay right (the
// egress reassembly discards nothing) and every frame arrives once.
func TestKernelEdgeRace(t *testing.T) {
	for _, committed := range []bool{false, true} {
		k := newKernNet(t, 2, func(c *NodeConfig) { c.Credits, c.Packing, c.CellPayload = false, true, 1400 })
		rng := rand.New(rand.NewPCG(5, 6))
		races, seq := 0, 0
		k.m.Race = func(slot int, c bool) {
			if c != committed || rng.IntN(3) != 0 {
				return
			}
			races++
			nd := k.nodes[0]
			// Two records in one batch from queue 1: one cell.
			fs := []link.Frame{k.mem.put(hostFrame(1, 2, 9, seq, 100)), k.mem.put(hostFrame(1, 2, 9, seq+1, 100))}
			seq += 2
			nd.HostRxBatch(k.now, 0, fs)
			k.drain(0)
			nd.Poll(k.now)
			k.drain(0)
		}
		const frames = 300
		for i := range frames {
			k.hostK(hostFrame(1, 2, i%3, i/3, 60+rng.IntN(500)))
			k.run(int64(rng.IntN(3))*nodeUs, nodeUs)
		}
		k.run(5000*nodeUs, 10*nodeUs)
		if races == 0 || k.m.C.Sent == 0 {
			t.Fatalf("committed %v: %d races, kernel %+v", committed, races, k.m.C)
		}
		got := k.got[[2]int{1, 0}]
		perFlow := byFlow(got, 10)
		for f := range 3 {
			checkInOrder(t, perFlow[f], frames/3, "race")
		}
		checkInOrder(t, perFlow[9], seq, "race, Go's frames")
		if rs := k.nodes[1].ReasmStats(); rs.DiscardedRecords != 0 || rs.Timeouts != 0 || rs.Duplicates != 0 || rs.Inconsistent != 0 {
			t.Fatalf("committed %v: reassembly %+v", committed, rs)
		}
		t.Logf("committed %v: %d races, kernel %+v", committed, races, k.m.C)
	}
}

// A new node on the same kernel path (the worker restarted): the kernel
// sends nothing for a VOQ until the new node hands it back, and then with
// the new node's seq and epoch: the egress restarts the stream and
// delivers every frame of the new boot once. A MAC seen behind another
// edge loses its entry at once.
func TestKernelEdgeRestart(t *testing.T) {
	k := newKernNet(t, 2, func(c *NodeConfig) { c.Credits = false })
	for i := range 50 {
		k.hostK(hostFrame(1, 2, 0, i, 200))
		k.run(2*nodeUs, nodeUs)
	}
	k.run(1000*nodeUs, 10*nodeUs)
	if k.m.C.Sent < 40 {
		t.Fatalf("before the restart the kernel sent %d of 50", k.m.C.Sent)
	}
	old := k.nodes[0]
	cfg := old.Config()
	cfg.Epoch = old.Epoch() + 1
	nd, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	k.nodes[0] = nd
	k.attach(nd)
	for i := range k.m.Slots() {
		if k.m.State(i).Load()&KernelOwned != 0 {
			t.Fatalf("slot %d is the kernel's after the restart", i)
		}
	}
	if _, ok := k.m.Dest(hostMAC(2)); ok {
		t.Fatal("a MAC entry of the node before survived")
	}
	k.run(200*nodeUs, nodeUs) // REACH: the new node's routes
	nd.Learn(k.now, hostMAC(2), 2, 0)
	sent := k.m.C.Sent
	for i := range 50 {
		v := k.hostK(hostFrame(1, 2, 1, i, 200))
		if i == 0 && v != KernelToGo {
			t.Fatal("the first frame after the restart was the kernel's")
		}
		k.run(2*nodeUs, nodeUs)
	}
	k.run(1000*nodeUs, 10*nodeUs)
	if k.m.C.Sent-sent < 40 {
		t.Fatalf("after the restart the kernel sent %d of 50", k.m.C.Sent-sent)
	}
	got := k.got[[2]int{1, 0}]
	perFlow := byFlow(got, 2)
	checkInOrder(t, perFlow[0], 50, "before")
	checkInOrder(t, perFlow[1], 50, "after")
	if rs := k.nodes[1].ReasmStats(); rs.Restarts != 1 || rs.Inconsistent != 0 || rs.DiscardedRecords != 0 {
		t.Fatalf("reassembly %+v", rs)
	}
	// h2 now answers from behind edge 3: its entry goes.
	nd.kernLearned(hostMAC(2), 3, 0)
	if _, ok := k.m.Dest(hostMAC(2)); ok {
		t.Fatal("a moved MAC kept its entry")
	}
	if v := k.hostK(hostFrame(1, 2, 1, 50, 200)); v != KernelToGo {
		t.Fatal("the kernel sent toward a moved MAC")
	}
}

// A VOQ busier than the kernel's bound goes to the worker, which packs
// what arrives meanwhile: bursts of back-to-back frames take fewer cells,
// and still arrive once and in order.
func TestKernelEdgeBusy(t *testing.T) {
	n := newBundle(t, 2, func(c *NodeConfig) { c.Credits, c.Packing, c.CellPayload = false, true, 1400 })
	k := &kernNet{nodeNet: n, m: NewCellTxModel(64), voqNs: 10 * nodeUs, voqTau: 20 * nodeUs}
	k.attach(n.nodes[0])
	const bursts, per = 20, 10
	for b := range bursts {
		var batch []link.Frame // back to back: what reaches the worker is one batch
		k.m.Now = k.now
		for i := range per {
			f := hostFrame(1, 2, 0, b*per+i, 100)
			v, cell, l := k.m.Offer(f, 0)
			if v == KernelSent {
				from := [2]int{0, l}
				k.fly = append(k.fly, netFly{at: k.now + k.delay[from], to: k.peer[from], f: k.mem.put(cell)})
				continue
			}
			batch = append(batch, k.mem.put(f))
		}
		if len(batch) > 0 {
			k.nodes[0].HostRxBatch(k.now, 0, batch)
			k.m.Consumed.Add(uint64(len(batch)))
			k.drain(0)
		}
		k.run(200*nodeUs, nodeUs)
	}
	k.run(1000*nodeUs, 10*nodeUs)
	got := k.got[[2]int{1, 0}]
	checkInOrder(t, got, bursts*per, "busy")
	if k.m.C.Busy == 0 || k.m.C.Sent == 0 || k.m.C.Sent >= bursts*per {
		t.Fatalf("kernel %+v: want some cells sent, some VOQs busy", k.m.C)
	}
	if cut := k.nodes[0].Stats.CellsCut; cut >= bursts*per {
		t.Fatalf("%d cells for %d frames: the worker packed nothing", cut, bursts*per)
	}
}

// Go hands a VOQ back only once the cells it cut are on the TX rings: not
// at the Poll right after the host frame it cut them from (the worker
// flushes after that Poll), at the next one.
func TestKernelEdgeHandBackAfterFlush(t *testing.T) {
	k := newKernNet(t, 2, func(c *NodeConfig) { c.Credits = false })
	nd := k.nodes[0]
	if v := k.hostK(hostFrame(1, 2, 0, 0, 100)); v != KernelToGo {
		t.Fatal("the first frame (no MAC entries yet) was the kernel's")
	}
	q := nd.list[0]
	if q.k == nil || q.k.given {
		t.Fatal("a new VOQ was the kernel's")
	}
	nd.Poll(k.now)
	if q.k.given {
		t.Fatal("handed back at the Poll after the cut: its cell is not on a TX ring yet")
	}
	k.drain(0)
	nd.Poll(k.now)
	if !q.k.given || k.m.State(q.k.slot).Load()&KernelOwned == 0 {
		t.Fatal("not handed back at the next Poll")
	}
	if v := k.hostK(hostFrame(1, 2, 0, 1, 100)); v != KernelSent {
		t.Fatalf("the kernel did not send after the hand-back: %+v", k.m.C)
	}
}

// An entry Go cannot write is removed rather than left as it was (it
// might name where the MAC was before); one it cannot remove either turns
// the path off.
func TestKernelEdgeDestErrors(t *testing.T) {
	k := newKernNet(t, 2, func(c *NodeConfig) { c.Credits = false })
	nd := k.nodes[0]
	k.hostK(hostFrame(1, 2, 0, 0, 100))
	k.run(10*nodeUs, nodeUs)
	if _, ok := k.m.Dest(hostMAC(2)); !ok {
		t.Fatal("no entry for h2 after a frame to it")
	}
	// h2 is now behind edge 3 as far as the table knows, and the entry
	// cannot be rewritten: it must go.
	nd.macs.Learn(k.now, hostMAC(2), 3, 0)
	nd.kdests[hostMAC(2)] = kdest{d: KernelDest{Edge: 2}, exp: k.now + nd.cfg.MACAge}
	k.m.FailSet = true
	nd.kernHost(0, hostMAC(1), hostMAC(2), Dest{Edge: 3, Port: 0}, 0, nd.list[0])
	if _, ok := k.m.Dest(hostMAC(2)); ok || nd.KernelStats().DestErrs == 0 {
		t.Fatal("an entry Go could not rewrite stayed")
	}
	if !k.m.On() {
		t.Fatal("the path went off though the entry was removed")
	}
	k.m.FailDelete = true
	nd.kernSet(hostMAC(1), KernelDest{Edge: 1}, k.now+1)
	if k.m.On() {
		t.Fatal("an entry that could be neither written nor removed left the path on")
	}
}

// A credit VOQ goes back to the kernel with its low mark at half the
// Lead (a VOQ without credits with none), and the cell that takes its
// room below the mark counts a wakeup: after the worker folds it, the
// client asks for the bytes beyond the grant at once.
func TestKernelEdgeLowMark(t *testing.T) {
	for _, credits := range []bool{true, false} {
		k := newKernNet(t, 3, func(c *NodeConfig) {
			c.Credits, c.Packing, c.CellPayload = credits, false, 700
			c.Client.Lead = 8000
		})
		e1 := k.nodes[0]
		given := func() *nodeVOQ {
			for _, q := range e1.list {
				if q.k != nil && q.k.given {
					return q
				}
			}
			return nil
		}
		var q *nodeVOQ
		for i := 0; q == nil && i < 50; i++ {
			k.hostK(hostFrame(1, 2, 0, i, 100))
			k.run(200*nodeUs, 10*nodeUs)
			q = given()
		}
		if q == nil {
			t.Fatalf("credits %v: no VOQ handed to the kernel", credits)
		}
		want := uint32(0)
		if credits {
			want = 4000
		}
		if low := k.m.slots[q.k.slot].low.Load(); low != want {
			t.Fatalf("credits %v: low mark %d, want %d", credits, low, want)
		}
		if !credits {
			continue
		}
		// The kernel alone sends until the room falls below the mark.
		reqs := q.cc.Stats.Requests
		for i := 0; k.m.C.Wakeups == 0 && i < 100; i++ {
			if k.hostK(hostFrame(1, 2, 0, 100+i, 200)) != KernelSent {
				t.Fatalf("frame %d not sent by the kernel: %+v", i, k.m.C)
			}
		}
		room := k.m.State(q.k.slot).Load() >> KernelRoomShift & KernelRoomMax
		if k.m.C.Wakeups != 1 || room >= 4000 || room+203 < 4000 {
			t.Fatalf("wakeups %d at room %d: want one, as the room crossed 4000", k.m.C.Wakeups, room)
		}
		// The woken worker's Poll folds and asks.
		e1.Poll(k.now)
		if q.cc.Stats.Requests == reqs {
			t.Fatalf("the worker's Poll after the wakeup asked for nothing (enqueued %d, granted %d)", q.cc.Enqueued(), q.cc.Granted())
		}
	}
}

// With Ahead the kernel's short messages make a credit loop per Ahead plus
// half the Lead bytes instead of per half the Lead, never beyond grant and
// lead; credit left unused stays with the kernel through a pause, and the
// bytes after it are asked for above the grant.
func TestKernelEdgeAhead(t *testing.T) {
	const lead = 4000
	loops := map[uint64]uint64{}
	for _, ahead := range []uint64{0, 8000} {
		k := newKernNet(t, 3, func(c *NodeConfig) {
			c.Packing, c.CellPayload = false, 700
			c.Client.Lead, c.Client.Ahead = lead, ahead
		})
		e1 := k.nodes[0]
		for i := range 300 {
			k.hostK(hostFrame(1, 2, 0, i, 150))
			k.run(20*nodeUs, 10*nodeUs)
			k.checkCredit("short messages")
		}
		var q *nodeVOQ
		for _, v := range e1.list {
			if v.k != nil && v.cc != nil && v.cc.Stats.Requests > 0 {
				q = v
			}
		}
		if q == nil {
			t.Fatalf("ahead %d: no VOQ asked for credit", ahead)
		}
		loops[ahead] = q.cc.Stats.Requests
		t.Logf("ahead %d: requests %d, kernel %+v, node %+v", ahead, q.cc.Stats.Requests, k.m.C, e1.KernelStats())
		if k.m.C.Sent < 290 {
			t.Fatalf("ahead %d: the kernel sent %d of 300 frames", ahead, k.m.C.Sent)
		}
		if ahead == 0 {
			continue
		}
		k.run(20000*nodeUs, 100*nodeUs)
		k.checkCredit("after a pause")
		if !q.k.given {
			t.Fatal("the VOQ was taken from the kernel")
		}
		granted := q.cc.Granted()
		for i := range 100 {
			k.hostK(hostFrame(1, 2, 0, 300+i, 150))
			k.run(20*nodeUs, 10*nodeUs)
			k.checkCredit("after the pause")
		}
		k.run(20000*nodeUs, 100*nodeUs)
		if q.cc.Granted() <= granted {
			t.Fatalf("nothing granted after the pause: granted %d", granted)
		}
		got := k.got[[2]int{1, 0}]
		checkInOrder(t, byFlow(got, 1)[0], 400, "ahead")
	}
	if loops[8000]*2 > loops[0] {
		t.Fatalf("requests with Ahead %d, without %d: want at most half", loops[8000], loops[0])
	}
}
