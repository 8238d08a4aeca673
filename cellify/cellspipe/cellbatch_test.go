package cellspipe

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/xdp"
)

// BenchmarkCellPipeline60: 60-byte host frames in receive batches of 64
// through two edges with packing, MTU cells and credits (cut, sprayed,
// reassembled, delivered), 4 links. ns/op is per host frame, the two
// edges' pipelines together (and the harness's copy of each frame into
// the UMEM).
func BenchmarkCellPipeline60(b *testing.B) {
	p := newMemPair(b, 4, Config{})
	p.learn(b)
	f := hostFrame(2, 1, 60, 1)
	m := p.n[0]
	batch := make([]xdp.Desc, 64)
	before := p.count[1]
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%len(batch) == 0 && n > 0 {
			for i := range batch {
				batch[i] = m.put(b, f)
			}
			m.pl.Receive(p.now, m.pl.ps.Hosts[0], 0, batch, m.w.Tx())
			p.step(b, 10_000) // 64 frames per 10 µs: 6.4 Mpps
		}
		n++
	}
	for range 100 {
		p.step(b, 100_000)
	}
	if got := p.count[1] - before; got < n-len(batch) {
		b.Fatalf("%d frames delivered of %d", got, n)
	}
}

// TestCellHostBatchShareCells: the frames of one receive batch from a
// host port share cells (packing): 20 records of 60-byte frames fit one
// MTU cell, and the batch leaves as one cell, delivered whole and in
// order; frames received one at a time still leave at once, a cell each.
func TestCellHostBatchShareCells(t *testing.T) {
	p := newMemPair(t, 4, Config{})
	p.keep = true
	p.learn(t)
	m := p.n[0]
	for _, bs := range []int{1, 20} {
		cut, got := m.pl.node.Stats.CellsCut, len(p.delivered[1])
		batch := make([]xdp.Desc, bs)
		for i := range batch {
			batch[i] = m.put(t, hostFrame(2, 1, 60, uint32(i+1)))
		}
		m.pl.Receive(p.now, m.pl.ps.Hosts[0], 0, batch, m.w.Tx())
		if c := m.pl.node.Stats.CellsCut - cut; c != 1 {
			t.Errorf("a batch of %d 60-byte frames was cut into %d cells; want 1", bs, c)
		}
		p.step(t, 1000)
		d := p.delivered[1][got:]
		if len(d) != bs {
			t.Fatalf("batch of %d: %d frames delivered", bs, len(d))
		}
		for i, b := range d {
			if s := binary.BigEndian.Uint32(b[14:]); s != uint32(i+1) {
				t.Fatalf("batch of %d: frame %d delivered with seq %d", bs, i, s)
			}
		}
	}
}

// TestCellIdleWakesOncePerReach: after traffic both ways (credits, with and
// without the standing pre-credit, and without credits) has been
// delivered and the credit loop has settled, an idle edge's deadlines come
// once per REACH interval: no timer of the credit loop, the reassembly or
// the host queues wakes its worker when nothing is due.
func TestCellIdleWakesOncePerReach(t *testing.T) {
	for _, cc := range []Config{{}, {PreCredit: -1}, {NoCredits: true}} {
		p := newMemPair(t, 4, cc)
		p.learn(t)
		for i := range 2000 {
			p.fromHost(t, 0, 0, hostFrame(2, 1, 60, uint32(i+1)))
			p.fromHost(t, 1, 0, hostFrame(1, 2, 1000, uint32(i+1)))
			p.step(t, 20_000)
		}
		for range 400 { // the credit loop's repeats back off and end
			p.step(t, 250_000)
		}
		if p.count[0] != 2001 || p.count[1] != 2001 {
			t.Fatalf("no credits %v, pre-credit %d: delivered %d and %d of 2001", cc.NoCredits, cc.PreCredit, p.count[0], p.count[1])
		}
		m := p.n[0]
		iv := int64(ConfigOf(m.w.Config()).ReachInterval)
		end := p.now + 100*iv
		wakes := 0
		for p.now < end {
			next := m.pl.Poll(p.now, m.w.Tx())
			p.step(t, max(next-p.now, 1))
			wakes++
		}
		if wakes > 101 {
			t.Errorf("no credits %v, pre-credit %d: idle, %d wakes in 100 REACH intervals; want at most 101", cc.NoCredits, cc.PreCredit, wakes)
		}
	}
}

// BenchmarkCellPollQuiet: one edge's Poll between two of its timers (the
// worker calls it at every loop iteration): what every wake pays besides
// its frames.
func BenchmarkCellPollQuiet(b *testing.B) {
	p := newMemPair(b, 4, Config{})
	p.learn(b)
	m := p.n[0]
	for i := range 200 {
		p.fromHost(b, 0, 0, hostFrame(2, 1, 60, uint32(i+1)))
		p.step(b, 10_000)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.now++
		m.pl.Poll(p.now, m.w.Tx())
	}
}

// TestCellLinkQueuedIsQueued: the link backlog the worker reports at every
// iteration (linkQueued) is queued's for that link port, with cells in
// flight on the TX rings and in the pending counts.
func TestCellLinkQueuedIsQueued(t *testing.T) {
	p := newMemPair(t, 4, Config{})
	p.learn(t)
	m := p.n[0]
	batch := make([]xdp.Desc, 64)
	for i := range batch {
		batch[i] = m.put(t, hostFrame(2, 1, 60, uint32(i+1)))
	}
	m.pl.Receive(p.now, m.pl.ps.Hosts[0], 0, batch, m.w.Tx())
	m.pl.pend[m.pl.ps.Links[1]] += 1000 // as a link layer's Pending would
	some := false
	for l, port := range m.pl.ps.Links {
		q := m.pl.queued(port, m.pl.cellFrame)
		if got := m.pl.linkQueued(l, port); got != q {
			t.Errorf("link %d: linkQueued %d, queued %d", l, got, q)
		}
		some = some || q > 0
	}
	if !some {
		t.Fatal("nothing queued on any link: the comparison proves nothing")
	}
}
