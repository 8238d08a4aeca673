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

// TestCellClassHeldWhileLinkFull: two edges over a clean link (loss class
// 1) and a gray one (2 % of the frames lost both ways: class 3) under
// monitor, cells pushed as host frames arrive. Node 2 is kept from
// running while a burst of class-1 frames (DSCP EF bound to class 1)
// arrives at node 1: more cells than the clean link's layer takes
// un-ACKed and queued. Those cells have one link of their class, and it
// is full: they wait in their VOQ instead of being dropped at the link's
// queue, and none goes over the gray link. When node 2 runs again every
// frame arrives, in order.
func TestCellClassHeldWhileLinkFull(t *testing.T) {
	cc := CellsConfig{LinkMode: "monitor", LossClasses: "default", ClassMap: "5=1", NoCredits: true,
		ReachInterval: time.Millisecond, ReachTh: 30, ReachUp: 3}
	p := newMemPairWith(t, 2, cc, func(c *dataplane.Config) {
		lgpipe.LGConfigOf(c).MTU = 1500
		if err := lgpipe.ConfigureLGLayer(c); err != nil {
			t.Fatal(err)
		}
		lgpipe.StartLGLayer(c)
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
