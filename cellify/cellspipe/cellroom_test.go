package cellspipe

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)

// classFrame is an IPv4 frame of n bytes from src to dst with DSCP dscp,
// numbered seq.
func classFrame(dst, src byte, n int, dscp byte, seq uint32) []byte {
	b := make([]byte, n)
	copy(b, []byte{2, 0, 0, 0, 9, dst, 2, 0, 0, 0, 9, src, 0x08, 0x00, 0x45, dscp << 2})
	binary.BigEndian.PutUint32(b[20:], seq)
	return b
}

// newClassPair is two edges in memory over a clean link (link0: loss
// class 1) and a gray one (link1: every 50th frame lost both ways, class
// 3) under monitor, cells pushed as host frames arrive, DSCP EF bound to
// class 1; it returns once both ends measured the classes and h1 and h2
// are learned.
func newClassPair(t *testing.T) *memPair {
	cc := Config{LinkMode: "monitor", LossClasses: "default", ClassMap: "5=1", NoCredits: true,
		ReachInterval: time.Millisecond, ReachTh: 30, ReachUp: 3}
	p := newMemPairWith(t, 2, cc, func(c *dataplane.Config) {
		lgpipe.ConfigOf(c).MTU = 1500
		if err := lgpipe.ConfigureLayer(c); err != nil {
			t.Fatal(err)
		}
		lgpipe.StartLayer(c)
	})
	p.keep = true
	n := 0
	p.lose = func(_ int, b []byte) bool { // link1's frames: port 2 of each node (host0, link0, link1)
		if b[11] != 2 {
			return false
		}
		n++
		return n%50 == 0
	}
	a, b := p.n[0].pl.node, p.n[1].pl.node
	for range 6000 { // the classes: measured over 1 s, class 1 earned after 3 s more
		p.step(t, int64(time.Millisecond))
		if a.Reach().EffClass(0) == 1 && a.Reach().EffClass(1) == 3 && b.Reach().EffClass(0) == 1 {
			break
		}
	}
	if c0, c1 := a.Reach().EffClass(0), a.Reach().EffClass(1); c0 != 1 || c1 != 3 {
		t.Fatalf("node 1's links in classes %d and %d; want 1 and 3", c0, c1)
	}
	p.fromHost(t, 0, 0, classFrame(0xff, 1, 60, 46, 0)) // broadcast: h1 learned at node 2
	p.step(t, 1000)
	p.fromHost(t, 1, 0, classFrame(1, 2, 60, 46, 0))
	p.step(t, 1000)
	p.delivered = [2][][]byte{}
	return p
}

// TestCellClassHeldWhileLinkFull: on newClassPair, node 2 is kept from
// running while a burst of class-1 frames (DSCP EF bound to class 1)
// arrives at node 1: more cells than the clean link's layer takes
// un-ACKed and queued. Those cells have one link of their class, and it
// is full: they wait in their VOQ instead of being dropped at the link's
// queue, and none goes over the gray link. When node 2 runs again every
// frame arrives, in order.
func TestCellClassHeldWhileLinkFull(t *testing.T) {
	p := newClassPair(t)
	// Node 2 does not run: what node 1 sends waits for it (in order), and
	// node 1 gets no ACK while the burst arrives.
	const frames = 1000
	m, peer := p.n[0], p.n[1]
	type held struct {
		port int
		b    []byte
	}
	var wait []held
	for i := range frames {
		p.fromHost(t, 0, 0, classFrame(2, 1, 1000, 46, uint32(i+1)))
		p.now += 2000
		m.pl.Poll(p.now, m.w.Tx())
		for _, port := range m.pl.ps.Links {
			for _, d := range m.w.TakeSent(port) {
				wait = append(wait, held{port, append([]byte(nil), m.w.Bytes(d.Addr, int(d.Len))...)})
			}
		}
		m.w.ReleaseSent()
	}
	for _, h := range wait {
		if p.lose(0, h.b) {
			continue
		}
		p.rx[0] = peer.put(t, h.b)
		peer.pl.Receive(p.now, h.port-m.pl.ps.Links[0]+peer.pl.ps.Links[0], 0, p.rx[:], peer.w.Tx())
	}
	for range 300 {
		p.step(t, int64(time.Millisecond))
	}
	p.n[0].pl.publish()
	s := p.n[0].pl.st.Snapshot()
	if s.Node.LinkFull == 0 {
		t.Error("no cell waited for room on the clean link: the burst did not fill it")
	}
	if q := s.Links[0].LG.QueueDrops; q != 0 {
		t.Errorf("node 1 dropped %d class-1 cells at the clean link's queue", q)
	}
	if g := s.Links[1].TxClassBytes[0]; g != 0 || s.Node.ClassFallback != 0 {
		t.Errorf("class-1 bytes on the gray link %d, cells resprayed into a looser class %d", g, s.Node.ClassFallback)
	}
	got := p.delivered[1]
	if len(got) != frames {
		t.Fatalf("node 2 delivered %d of %d class-1 frames (node 1: %d cells dropped at the clean link's queue, %d VOQ drops, %d stalls)",
			len(got), frames, s.Links[0].LG.QueueDrops, s.Node.VOQDrops, s.Node.Stalls)
	}
	for i, f := range got {
		if seq := binary.BigEndian.Uint32(f[20:]); seq != uint32(i+1) {
			t.Fatalf("frame %d: seq %d", i, seq)
		}
	}
}

// TestCellClassStaysOnItsLink: on newClassPair, class-1 frames are on
// their way over the clean link when it stalls both ways (its frames wait,
// in order: the REACHes and ACKs too) for longer than REACH's threshold,
// while the gray link carries on. Node 1 takes the clean link out of its
// usable set and its layer hands back the cells it holds un-ACKed; they
// have no other link of their class and stay with their link (its queue,
// sent on it again when it carries cells: the reassembly drops the copies)
// instead of crossing the gray link, and the frames that arrive meanwhile
// wait in their VOQ. When the link runs again every frame arrives once,
// in order.
func TestCellClassStaysOnItsLink(t *testing.T) {
	p := newClassPair(t)
	gray := p.lose
	type held struct {
		to, port int
		b        []byte
	}
	var wait []held
	stalled := true
	// While stalled, link0's frames (source MAC ending 1) wait, in order,
	// for the peer's link0.
	p.lose = func(i int, b []byte) bool {
		if gray(i, b) {
			return true
		}
		if stalled && b[11] == 1 {
			wait = append(wait, held{1 - i, p.n[1-i].pl.ps.Links[0], append([]byte(nil), b...)})
			return true
		}
		return false
	}
	const frames = 40
	for i := range frames / 2 {
		p.fromHost(t, 0, 0, classFrame(2, 1, 1000, 46, uint32(i+1)))
	}
	a := p.n[0].pl.node
	for k := 0; a.Reach().Link(0).Usable || k < 5; k++ {
		if k == 200 {
			t.Fatal("the clean link stayed usable through its stall")
		}
		p.step(t, int64(time.Millisecond))
	}
	for i := frames / 2; i < frames; i++ {
		p.fromHost(t, 0, 0, classFrame(2, 1, 1000, 46, uint32(i+1)))
		p.step(t, int64(time.Millisecond))
	}
	stalled = false
	for _, h := range wait {
		m := p.n[h.to]
		p.rx[0] = m.put(t, h.b)
		m.pl.Receive(p.now, h.port, 0, p.rx[:], m.w.Tx())
	}
	for range 300 {
		p.step(t, int64(time.Millisecond))
	}
	p.n[0].pl.publish()
	s := p.n[0].pl.st.Snapshot()
	if s.Links[0].Exclusions == 0 && s.Links[0].LG.GiveUps == 0 {
		t.Error("the clean link never left the usable set")
	}
	if g := s.Links[1].TxClassBytes[0]; g != 0 || s.Node.ClassFallback != 0 {
		t.Errorf("class-1 bytes on the gray link %d, cells resprayed into a looser class %d", g, s.Node.ClassFallback)
	}
	got := p.delivered[1]
	if len(got) != frames {
		t.Fatalf("node 2 delivered %d of %d class-1 frames (node 1: %d cells handed back to the node, %d resprayed into a looser class)",
			len(got), frames, s.Links[0].LG.HandedBack, s.Node.ClassFallback)
	}
	for i, f := range got {
		if seq := binary.BigEndian.Uint32(f[20:]); seq != uint32(i+1) {
			t.Fatalf("frame %d: seq %d", i, seq)
		}
	}
}
