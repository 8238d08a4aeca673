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
	p.fromHost(b, 0, 0, hostFrame(0xff, 1, 60, 0))
	p.step(b, 1000)
	p.fromHost(b, 1, 0, hostFrame(1, 2, 60, 0))
	p.step(b, 1000)
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
	p.fromHost(t, 0, 0, hostFrame(0xff, 1, 60, 0))
	p.step(t, 1000)
	p.fromHost(t, 1, 0, hostFrame(1, 2, 60, 0))
	p.step(t, 1000)
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
