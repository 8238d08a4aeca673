package cellify

import (
	"fmt"
	"testing"
)

const reachI = int64(100_000) // the test interval: 100 µs

func newTestReach(t testing.TB, self EdgeID, tier Tier, links int) *Reachability {
	return newTestReachClasses(t, self, tier, links, LossClasses{})
}

// newTestReachClasses is newTestReach with loss classes lc.
func newTestReachClasses(t testing.TB, self EdgeID, tier Tier, links int, lc LossClasses) *Reachability {
	t.Helper()
	cfg := DefaultReachConfig(self, tier, links)
	cfg.Interval = reachI
	cfg.SetClasses(lc)
	r, err := NewReachability(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func reachBits(ids ...EdgeID) []byte {
	b := make([]byte, 32)
	for _, e := range ids {
		b[e/8] |= 1 << (e % 8)
	}
	return b
}

// reachFeed drives one node by hand: REACH from a peer on a link in the
// middle of each interval, Poll at each interval boundary.
type reachFeed struct {
	t *testing.T
	r *Reachability
	k int64 // intervals polled
}

// newFedReach returns newTestReach's Reachability and its feed.
func newFedReach(t *testing.T, self EdgeID, tier Tier, links int) (*Reachability, *reachFeed) {
	r := newTestReach(t, self, tier, links)
	return r, newReachFeed(t, r)
}

// newThReach is a fed one-link edge with thresholds th and thUp.
func newThReach(t *testing.T, th, thUp int) (*Reachability, *reachFeed, ReachConfig) {
	cfg := DefaultReachConfig(1, TierEdge, 1)
	cfg.Interval, cfg.Th, cfg.ThUp = reachI, th, thUp
	r, err := NewReachability(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, newReachFeed(t, r), cfg
}

func newReachFeed(t *testing.T, r *Reachability) *reachFeed {
	r.Poll(0)
	return &reachFeed{t: t, r: r}
}

// interval delivers msgs (link → message) mid-interval, then closes it.
func (f *reachFeed) interval(msgs map[int]*PeerReach) {
	f.k++
	for l, m := range msgs {
		f.r.Receive(f.k*reachI-reachI/2, l, m)
	}
	if d := f.r.Poll(f.k * reachI); d != (f.k+1)*reachI {
		f.t.Fatalf("interval %d: deadline %d, want %d", f.k, d, (f.k+1)*reachI)
	}
}

// run runs n intervals delivering msgs.
func (f *reachFeed) run(n int, msgs map[int]*PeerReach) {
	for range n {
		f.interval(msgs)
	}
}

// intervals runs n intervals delivering msgs, and fails if the usable
// links, and the routes to edge 2 (which every usable link of its callers
// reaches), are not usable before each: the change comes after the nth,
// not sooner.
func (f *reachFeed) intervals(n int, msgs map[int]*PeerReach, usable uint64, what string) {
	f.t.Helper()
	for i := range n {
		if got, routes := f.r.Usable(), f.r.Routes(2); got != usable || routes != usable {
			f.t.Fatalf("%s: usable %#b, routes to 2 %#b after %d of %d intervals, want %#b", what, got, routes, i, n, usable)
		}
		f.interval(msgs)
	}
}

// With ThUp set, a link returns after ThUp good intervals and leaves after
// Th missed ones (a long Th rides out a peer's stalls, a short ThUp brings
// the link back without needing Th on-time REACHes in a row).
func TestReachThUp(t *testing.T) {
	r, f, cfg := newThReach(t, 20, 2)
	peer := map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}}
	f.interval(peer)
	if r.Usable() != 0 {
		t.Fatal("usable after 1 good interval; ThUp 2")
	}
	f.interval(peer)
	if r.Usable() != 1 {
		t.Fatal("not usable after ThUp = 2 good intervals")
	}
	for i := 1; i < 20; i++ {
		f.interval(nil)
	}
	if r.Usable() != 1 {
		t.Fatal("excluded after 19 missed intervals; Th 20")
	}
	f.interval(nil)
	if r.Usable() != 0 || r.Link(0).LastReason != ExcludeMiss {
		t.Fatalf("after Th = 20 missed intervals: usable %b, %+v", r.Usable(), r.Link(0))
	}
	f.interval(peer)
	f.interval(peer)
	if r.Usable() != 1 {
		t.Fatal("not back after ThUp good intervals")
	}
	cfg.ThUp = -1
	if _, err := NewReachability(cfg); err == nil {
		t.Error("ThUp -1 accepted")
	}
}

// A link returns after exactly Th good intervals and leaves after exactly
// Th intervals without a REACH; then returns again after Th good ones.
func TestReachMissAndReturn(t *testing.T) {
	r, f := newFedReach(t, 1, TierEdge, 2)
	th := r.Config().Th
	peer := map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}}
	f.intervals(th, peer, 0, "usable before the good intervals")
	if r.Usable() != 1 || r.Routes(2) != 1 || r.Link(0).LastReturned != int64(th)*reachI {
		t.Fatalf("after %d good intervals: usable %#b, routes to 2 %#b, %+v", th, r.Usable(), r.Routes(2), r.Link(0))
	}
	f.run(5, peer)
	last := f.k
	f.intervals(th, nil, 1, "excluded before the missed intervals")
	l := r.Link(0)
	if r.Usable() != 0 || r.Routes(2) != 0 || l.LastReason != ExcludeMiss || l.Exclusions != 1 ||
		l.LastExcluded != (last+int64(th))*reachI || l.MissTotal != uint64(th) {
		t.Fatalf("after %d missed intervals: usable %#b routes %#b, %+v", th, r.Usable(), r.Routes(2), l)
	}
	// Two good intervals, a miss, then Th good ones: the return needs Th in a row.
	f.interval(peer)
	f.interval(peer)
	f.interval(nil)
	f.intervals(th, peer, 0, "returned before the good intervals in a row")
	if r.Usable() != 1 || r.Link(0).Returns != 2 {
		t.Fatalf("not back after %d good intervals: %+v", th, r.Link(0))
	}
	// Link 1 never heard anything: never usable, REACH still due on it.
	if r.Link(1).Usable || r.Due&2 == 0 {
		t.Fatalf("link 1: %+v, due %#b", r.Link(1), r.Due)
	}
}

// An interface going down excludes its link at once and stops REACH on it;
// after up it returns after Th good intervals.
func TestReachDown(t *testing.T) {
	r, f := newFedReach(t, 1, TierEdge, 2)
	both := map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}, 1: {From: 3, Bitmap: reachBits(2)}}
	f.run(4, both)
	if r.Routes(2) != 0b11 {
		t.Fatalf("routes to 2: %#b", r.Routes(2))
	}
	at := f.k*reachI + 123
	r.SetUp(at, 1, false)
	if r.Usable() != 1 || r.Routes(2) != 1 || r.Link(1).LastExcluded != at || r.Link(1).LastReason != ExcludeDown {
		t.Fatalf("down: usable %#b routes %#b %+v", r.Usable(), r.Routes(2), r.Link(1))
	}
	r.Due = 0
	f.interval(both) // REACH on a down link is ignored
	if r.Due != 1 || r.Stats.RxDown != 1 {
		t.Fatalf("due %#b (want link 0 only), stats %+v", r.Due, r.Stats)
	}
	r.SetUp(f.k*reachI+1, 1, true)
	f.intervals(r.Config().Th, both, 1, "back before the good intervals")
	if r.Usable() != 0b11 {
		t.Fatal("not back after Th good intervals")
	}
}

// A peer's FAULTY flag excludes the link at once and keeps it out while it
// lasts; locally measured loss does the same and is advertised to the peer.
func TestReachFaulty(t *testing.T) {
	r, f := newFedReach(t, 1, TierEdge, 1)
	th := r.Config().Th
	ok := map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}}
	bad := map[int]*PeerReach{0: {From: 2, Faulty: true, Bitmap: reachBits(2)}}
	for range th {
		f.interval(ok)
	}
	at := f.k*reachI + 7
	r.Receive(at, 0, bad[0])
	if r.Usable() != 0 || r.Link(0).LastReason != ExcludePeerFaulty || r.Link(0).LastExcluded != at {
		t.Fatalf("FAULTY did not exclude at once: %+v", r.Link(0))
	}
	for range 2 * th {
		f.interval(bad)
		if r.Usable() != 0 {
			t.Fatal("usable while the peer says FAULTY")
		}
	}
	// An interval with a FAULTY REACH is not good, even if a clean one
	// follows in it.
	for range 2 * th {
		f.k++
		r.Receive(f.k*reachI-reachI/2, 0, bad[0])
		r.Receive(f.k*reachI-reachI/4, 0, ok[0])
		r.Poll(f.k * reachI)
		if r.Usable() != 0 {
			t.Fatal("usable while every interval holds a FAULTY REACH")
		}
	}
	for range th {
		if r.Usable() != 0 {
			t.Fatal("back before Th good intervals after FAULTY cleared")
		}
		f.interval(ok)
	}
	if r.Usable() != 1 {
		t.Fatalf("not back after Th good intervals: %+v", r.Link(0))
	}
	// Local loss above the threshold.
	var adv [32]byte
	if advFaulty(r, 0, adv[:]) {
		t.Fatal("advertised FAULTY without loss")
	}
	cfg := r.Config()
	r.SetLoss(f.k*reachI+1, 0, cfg.LossFaulty*2)
	if r.Usable() != 0 || r.Link(0).LastReason != ExcludeLoss || !advFaulty(r, 0, adv[:]) {
		t.Fatalf("loss above the threshold: usable %#b %+v", r.Usable(), r.Link(0))
	}
	// Between the thresholds it stays faulty (hysteresis).
	r.SetLoss(f.k*reachI+2, 0, (cfg.LossFaulty+cfg.LossClear)/2)
	for range 2 * th {
		f.interval(ok)
	}
	if r.Usable() != 0 {
		t.Fatal("back while the loss is between LossClear and LossFaulty")
	}
	r.SetLoss(f.k*reachI+3, 0, 0)
	for range th {
		if r.Usable() != 0 {
			t.Fatal("back before Th good intervals after the loss cleared")
		}
		f.interval(ok)
	}
	if r.Usable() != 1 || advFaulty(r, 0, adv[:]) {
		t.Fatalf("after the loss cleared: %+v", r.Link(0))
	}
}

// A different node answering on a link takes it out until it has shown Th
// good intervals.
func TestReachPeerChange(t *testing.T) {
	r, f := newFedReach(t, 1, TierEdge, 1)
	for range 3 {
		f.interval(map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}})
	}
	f.interval(map[int]*PeerReach{0: {From: 3, Bitmap: reachBits(3)}})
	if r.Usable() != 0 || r.Link(0).LastReason != ExcludePeerChange || r.Routes(2) != 0 {
		t.Fatalf("peer change: %+v", r.Link(0))
	}
}

// An edge advertises itself; a fabric node the union of what its other
// usable links reach (split horizon), never the peer itself.
func TestReachAdvertSplitHorizon(t *testing.T) {
	e := newTestReach(t, 5, TierEdge, 2)
	adv := make([]byte, e.BitmapLen())
	e.Advert(1, adv)
	if !reachEqualBits(adv, reachBits(5)) {
		t.Fatalf("edge 5 advertises %x", adv)
	}
	fb, f := newFedReach(t, 100, 1, 4)
	msgs := map[int]*PeerReach{
		0: {From: 1, Bitmap: reachBits(1)},
		1: {From: 2, Bitmap: reachBits(2)},
		2: {From: 3, Bitmap: reachBits(3)},
		3: {From: 4, Bitmap: reachBits(4)},
	}
	f.run(3, msgs)
	for l, want := range [][]byte{reachBits(2, 3, 4), reachBits(1, 3, 4), reachBits(1, 2, 4), reachBits(1, 2, 3)} {
		fb.Advert(l, adv)
		if !reachEqualBits(adv, want) {
			t.Fatalf("link %d: advertises %x, want %x", l, adv, want)
		}
	}
	// Link 2 excluded: nothing learned there is advertised.
	fb.SetUp(f.k*reachI+1, 2, false)
	fb.Advert(0, adv)
	if !reachEqualBits(adv, reachBits(2, 4)) {
		t.Fatalf("with link 2 down link 0 advertises %x", adv)
	}

	// A spine (tier 2) over three leaves: what a leaf reaches is not
	// advertised back to it unless another leaf reaches it too.
	sp := newTestReach(t, 200, 2, 3)
	f = newReachFeed(t, sp)
	msgs = map[int]*PeerReach{
		0: {From: 101, Tier: 1, Bitmap: reachBits(1, 6)},
		1: {From: 102, Tier: 1, Bitmap: reachBits(2, 6)},
		2: {From: 103, Tier: 1, Bitmap: reachBits(3)},
	}
	f.run(3, msgs)
	for l, want := range [][]byte{reachBits(2, 3, 6), reachBits(1, 3, 6), reachBits(1, 2, 6)} {
		sp.Advert(l, adv)
		if !reachEqualBits(adv, want) {
			t.Fatalf("spine link %d: advertises %x, want %x", l, adv, want)
		}
	}

	// Two links to one edge: the edge is not advertised to itself.
	fb = newTestReach(t, 100, 1, 3)
	f = newReachFeed(t, fb)
	msgs = map[int]*PeerReach{
		0: {From: 1, Bitmap: reachBits(1)},
		1: {From: 1, Bitmap: reachBits(1)},
		2: {From: 2, Bitmap: reachBits(2)},
	}
	f.run(3, msgs)
	fb.Advert(0, adv)
	if !reachEqualBits(adv, reachBits(2)) {
		t.Fatalf("toward edge 1 over a second link: %x, want edge 2 only", adv)
	}
}

// Tiers: a tier-1 node advertises to its spine (tier 2) only the edges
// learned from below; to an edge also what it learned from the spine.
func TestReachAdvertTiers(t *testing.T) {
	fb, f := newFedReach(t, 100, 1, 4)
	msgs := map[int]*PeerReach{
		0: {From: 1, Tier: TierEdge, Bitmap: reachBits(1)},
		1: {From: 200, Tier: 2, Bitmap: reachBits(2, 3)},
		2: {From: 201, Tier: 2, Bitmap: reachBits(4)},
		3: {From: 102, Tier: 1, Bitmap: reachBits(5)}, // a peer of its own tier
	}
	f.run(3, msgs)
	adv := make([]byte, fb.BitmapLen())
	for _, l := range []int{1, 2, 3} {
		fb.Advert(l, adv)
		if !reachEqualBits(adv, reachBits(1)) {
			t.Fatalf("toward link %d (tier ≥ 1): %x, want edge 1 only", l, adv)
		}
	}
	fb.Advert(0, adv)
	if !reachEqualBits(adv, reachBits(2, 3, 4, 5)) {
		t.Fatalf("toward the edge: %x, want 2, 3, 4, 5", adv)
	}
	if fb.Routes(3) != 0b10 || fb.Routes(1) != 0b01 {
		t.Fatalf("routes to 3: %#b, to 1: %#b", fb.Routes(3), fb.Routes(1))
	}
}

// A leaf goes down when it can: spines that also reach an edge below it
// (through the leaf's siblings) are not a route to it; when its own link to
// the edge goes, the spines are.
func TestReachDownFirst(t *testing.T) {
	fb, f := newFedReach(t, 300, 1, 3)
	msgs := map[int]*PeerReach{
		0: {From: 1, Tier: TierEdge, Bitmap: reachBits(1)},
		1: {From: 400, Tier: 2, Bitmap: reachBits(1, 2)},
		2: {From: 401, Tier: 2, Bitmap: reachBits(1, 2)},
	}
	f.run(3, msgs)
	if fb.Routes(1) != 0b001 || fb.Routes(2) != 0b110 {
		t.Fatalf("routes to 1: %#b, to 2: %#b", fb.Routes(1), fb.Routes(2))
	}
	fb.SetUp(f.k*reachI+1, 0, false)
	if fb.Routes(1) != 0b110 {
		t.Fatalf("edge link down: routes to 1 %#b, want the spines", fb.Routes(1))
	}
}

func TestReachBadInput(t *testing.T) {
	r := newTestReach(t, 1, TierEdge, 2)
	r.Receive(0, 2, &PeerReach{From: 3})
	r.Receive(0, -1, &PeerReach{From: 3})
	r.SetUp(0, 7, false)
	r.SetLoss(0, 64, 1)
	if r.Stats.BadLink != 4 {
		t.Fatalf("stats %+v", r.Stats)
	}
	// Bitmaps too long or too short, bits beyond MaxEdges.
	cfg := DefaultReachConfig(1, TierEdge, 1)
	cfg.MaxEdges = 70
	r, err := NewReachability(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Poll(0)
	for k := int64(1); k <= 3; k++ {
		bm := make([]byte, 40)
		for i := 8; i < len(bm); i++ {
			bm[i] = 0xff
		}
		bm[0] = 1<<2 | 1 // edge 0 is invalid
		r.Receive(k*cfg.Interval-1, 0, &PeerReach{From: 2, Bitmap: bm})
		r.Poll(k * cfg.Interval)
	}
	if r.Routes(0) != 0 || r.Routes(2) != 1 || r.Routes(3) != 0 || r.Routes(64) != 1 || r.Routes(69) != 1 ||
		r.Routes(70) != 0 || r.Routes(1000) != 0 {
		t.Fatalf("routes: 0 %#b 2 %#b 64 %#b 69 %#b 70 %#b", r.Routes(0), r.Routes(2), r.Routes(64), r.Routes(69), r.Routes(70))
	}
	// Short bitmaps: a partial word.
	r.Receive(4*cfg.Interval-2, 0, &PeerReach{From: 2, Bitmap: []byte{0, 0, 0x80}})
	if r.Routes(23) != 1 || r.Routes(2) != 0 {
		t.Fatalf("3-byte bitmap: routes to 23 %#b, to 2 %#b", r.Routes(23), r.Routes(2))
	}
	r.Receive(4*cfg.Interval-1, 0, &PeerReach{From: 2, Bitmap: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x20}})
	if r.Routes(69) != 1 || r.Routes(23) != 0 {
		t.Fatalf("9-byte bitmap: routes to 69 %#b, to 23 %#b", r.Routes(69), r.Routes(23))
	}
	r.Receive(4*cfg.Interval-1, 0, &PeerReach{From: 2})
	if r.Routes(2) != 0 {
		t.Fatal("an empty bitmap did not clear the routes")
	}
	for _, c := range []ReachConfig{
		{Self: 1, Links: 65, Interval: 1, Th: 1},
		{Self: 0, Links: 1, Interval: 1, Th: 1},
		{Self: 300, Links: 1, Interval: 1, Th: 1},
		{Self: 1, Links: 1, Interval: 1, Th: 0},
	} {
		if _, err := NewReachability(c); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}

func reachEqualBits(a, b []byte) bool {
	for i := range max(len(a), len(b)) {
		var x, y byte
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}

// reachNet runs nodes joined by wires on a virtual clock in steps; REACH
// messages take a fixed delay; a cut wire loses them.
type reachNet struct {
	classes LossClasses // of the nodes added
	nodes   []*Reachability
	start   []int64 // each node's first Poll (different phases)
	wires   map[[2]int][2]int
	cut     map[[2]int]bool // (node, link): what that end sends is lost
	dead    map[int]bool
	fly     []reachFly
	now     int64
}

type reachFly struct {
	at         int64
	node, link int
	msg        PeerReach
}

func newReachNet() *reachNet {
	return &reachNet{wires: map[[2]int][2]int{}, cut: map[[2]int]bool{}, dead: map[int]bool{}}
}

func (n *reachNet) add(t *testing.T, self EdgeID, tier Tier, links int) int {
	n.nodes = append(n.nodes, newTestReachClasses(t, self, tier, links, n.classes))
	n.start = append(n.start, int64(len(n.nodes))*7_000)
	return len(n.nodes) - 1
}

func (n *reachNet) wire(a, la, b, lb int) {
	n.wires[[2]int{a, la}] = [2]int{b, lb}
	n.wires[[2]int{b, lb}] = [2]int{a, la}
}

func (n *reachNet) run(d int64) {
	const dt = 1_000
	for end := n.now + d; n.now < end; {
		n.now += dt
		k := 0
		for _, f := range n.fly {
			if f.at > n.now {
				break
			}
			k++
			n.nodes[f.node].Receive(f.at, f.link, &f.msg)
		}
		n.fly = n.fly[k:]
		for i, r := range n.nodes {
			if n.now < n.start[i] || n.dead[i] {
				continue
			}
			r.Poll(n.now)
			for m := r.Due; m != 0; m &= m - 1 {
				l := 0
				for m>>l&1 == 0 {
					l++
				}
				peer, ok := n.wires[[2]int{i, l}]
				if !ok || n.cut[[2]int{i, l}] {
					continue
				}
				msg := PeerReach{From: r.cfg.Self, Tier: r.cfg.Tier, Classes: r.cfg.Classes.On(), Bitmap: make([]byte, r.AdvertLen())}
				msg.Faulty, msg.Class = r.Advert(l, msg.Bitmap)
				n.fly = append(n.fly, reachFly{at: n.now + 3_000, node: peer[0], link: peer[1], msg: msg})
			}
			r.Due = 0
		}
	}
}

// A one-tier fabric (3 edges, 2 fabric nodes, each edge with one link to
// each): the tables converge; a cut between f1 and e3 leaves f1's table at
// once for f1 and, one REACH later, e1's route to e3 through f1.
func TestReachFabric(t *testing.T) {
	n := newReachNet()
	e := []int{n.add(t, 1, TierEdge, 2), n.add(t, 2, TierEdge, 2), n.add(t, 3, TierEdge, 2)}
	f1, f2 := n.add(t, 101, 1, 3), n.add(t, 102, 1, 3)
	for i, ei := range e {
		n.wire(ei, 0, f1, i)
		n.wire(ei, 1, f2, i)
	}
	n.run(10 * reachI)
	for i, ei := range e {
		for j := range e {
			want := uint64(0b11)
			if i == j {
				want = 0
			}
			if got := n.nodes[ei].Routes(EdgeID(j + 1)); got != want {
				t.Fatalf("e%d routes to e%d: %#b, want %#b", i+1, j+1, got, want)
			}
		}
	}
	cutAt := n.now
	n.cut[[2]int{e[2], 0}], n.cut[[2]int{f1, 2}] = true, true
	n.run(10 * reachI)
	th := int64(n.nodes[f1].Config().Th)
	l := n.nodes[f1].Link(2)
	if l.Usable || l.LastReason != ExcludeMiss {
		t.Fatalf("f1's link to e3: %+v", l)
	}
	if d := l.LastExcluded - l.LastRx; d <= th*reachI-reachI || d > (th+1)*reachI {
		t.Fatalf("f1 excluded its link %d µs after the last REACH, want within (th−1, th+1] intervals", d/1000)
	}
	if got := n.nodes[e[0]].Routes(3); got != 0b10 {
		t.Fatalf("after the cut e1 routes to e3: %#b, want only through f2", got)
	}
	if got := n.nodes[e[0]].Routes(2); got != 0b11 {
		t.Fatalf("after the cut e1 routes to e2: %#b, want both", got)
	}
	t.Logf("cut at %d µs; f1 excluded at %d µs (last REACH %d µs)", cutAt/1000, l.LastExcluded/1000, l.LastRx/1000)
	// Healed: back after Th good intervals.
	n.cut = map[[2]int]bool{}
	n.run(10 * reachI)
	if got := n.nodes[e[0]].Routes(3); got != 0b11 {
		t.Fatalf("healed: e1 routes to e3 %#b", got)
	}
}

// Two tiers (edges e1, e2; leaves a, b of tier 1; spines s1, s2 of tier 2):
// when e2's only link dies, every route to e2 disappears and stays gone
// (the tiers keep reachability from looping between leaves and spines).
func TestReachTwoTiersNoPhantom(t *testing.T) {
	n := newReachNet()
	e1, e2 := n.add(t, 1, TierEdge, 1), n.add(t, 2, TierEdge, 1)
	a, b := n.add(t, 101, 1, 3), n.add(t, 102, 1, 3)
	s1, s2 := n.add(t, 201, 2, 2), n.add(t, 202, 2, 2)
	n.wire(e1, 0, a, 0)
	n.wire(e2, 0, b, 0)
	n.wire(a, 1, s1, 0)
	n.wire(a, 2, s2, 0)
	n.wire(b, 1, s1, 1)
	n.wire(b, 2, s2, 1)
	n.run(20 * reachI)
	if n.nodes[e1].Routes(2) != 1 || n.nodes[a].Routes(2) != 0b110 || n.nodes[s1].Routes(2) != 0b10 {
		t.Fatalf("converged: e1→e2 %#b, a→e2 %#b, s1→e2 %#b",
			n.nodes[e1].Routes(2), n.nodes[a].Routes(2), n.nodes[s1].Routes(2))
	}
	n.nodes[b].SetUp(n.now, 0, false)
	n.dead[e2] = true
	for step := range 30 {
		n.run(reachI)
		if step < 10 {
			continue
		}
		for i, r := range n.nodes {
			if !n.dead[i] && r.Routes(2) != 0 {
				t.Fatalf("%d intervals after e2 died node %d still routes to e2 via %#b", step+1, r.cfg.Self, r.Routes(2))
			}
		}
	}
}

func TestReachNoAlloc(t *testing.T) {
	r := newTestReach(t, 100, 1, 8)
	msg := &PeerReach{From: 7, Tier: TierEdge, Bitmap: reachBits(7)}
	adv := make([]byte, r.BitmapLen())
	reachRoundsNoAlloc(t, r, 10000, msg, adv, nil)
	if r.Usable() != 0xFF {
		t.Fatalf("usable %#b: the loop did not reach steady state", r.Usable())
	}
}

// reachRoundsNoAlloc runs n rounds of a quarter interval on r's 8 links,
// each receiving msg, then (if set) perLink, then a poll and an advert into
// adv per link, and fails if a round allocates.
func reachRoundsNoAlloc(t *testing.T, r *Reachability, n int, msg *PeerReach, adv []byte, perLink func(now int64, l int)) {
	t.Helper()
	now := int64(0)
	allocs := testing.AllocsPerRun(n, func() {
		now += reachI / 4
		for l := range 8 {
			r.Receive(now, l, msg)
			if perLink != nil {
				perLink(now, l)
			}
		}
		r.Poll(now)
		for l := range 8 {
			r.Advert(l, adv)
		}
		r.Due = 0
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round", allocs)
	}
}

func ExampleReachability() {
	r, _ := NewReachability(DefaultReachConfig(1, TierEdge, 1))
	iv := r.Config().Interval
	r.Poll(0)
	for k := int64(1); k <= 3; k++ {
		r.Receive(k*iv-iv/2, 0, &PeerReach{From: 101, Tier: 1, Bitmap: []byte{1 << 2}})
		r.Poll(k * iv)
	}
	fmt.Printf("routes to edge 2: %#b\n", r.Routes(2))
	// Output: routes to edge 2: 0b1
}

// advFaulty returns the FAULTY flag Advert gives for link l.
func advFaulty(r *Reachability, l int, dst []byte) bool {
	f, _ := r.Advert(l, dst)
	return f
}

// A link out for missed REACHes (a stalled peer) whose measured loss then
// crosses the threshold names the loss as what keeps it out, without
// counting a second exclusion; a miss found while it is out changes
// nothing.
func TestReachLossWhileOut(t *testing.T) {
	r, f, cfg := newThReach(t, 2, 2)
	peer := map[int]*PeerReach{0: {From: 2, Bitmap: reachBits(2)}}
	f.interval(peer)
	f.interval(peer)
	f.interval(nil)
	f.interval(nil)
	if l := r.Link(0); l.Usable || l.LastReason != ExcludeMiss || l.Exclusions != 1 {
		t.Fatalf("after Th missed intervals: %+v", l)
	}
	r.SetLoss(f.k*reachI+1, 0, cfg.LossFaulty*2)
	if l := r.Link(0); l.Usable || l.LastReason != ExcludeLoss || l.Exclusions != 1 {
		t.Fatalf("loss above the threshold while out: reason %v, exclusions %d; want loss, 1", l.LastReason, l.Exclusions)
	}
	f.interval(nil)
	f.interval(nil)
	f.interval(nil)
	if l := r.Link(0); l.LastReason != ExcludeLoss {
		t.Fatalf("misses while out for loss: reason %v; want loss", l.LastReason)
	}
}
