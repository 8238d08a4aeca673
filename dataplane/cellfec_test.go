package dataplane

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/seqhdr"
)

// TestCellFECMemory: two edges in memory with --link-mode fec under the
// cells on 3 links, n fixed at 4; 5% of the cells from node 1 are lost on
// the links (parity and control frames never). Every host frame still
// arrives whole and in order (the reassembly orders what the links
// deliver at once), the cells lost were rebuilt from parity, every UMEM
// frame comes back, and the statistics show it.
func TestCellFECMemory(t *testing.T) {
	p := newMemPairWith(t, 3, CellsConfig{LinkMode: "fec"}, func(c *Config) { c.FEC.Fixed, c.FEC.N = true, 4 })
	p.keep = true
	rng := rand.New(rand.NewPCG(1, 2))
	lost := 0
	p.fromHost(t, 0, 0, hostFrame(0xff, 1, 60, 0))
	p.step(t, 1000)
	p.fromHost(t, 1, 0, hostFrame(1, 2, 60, 0))
	p.step(t, 1000)
	// One loss at most in each group of a link: the cells of a group go
	// out together, so a burst of losses would hit one group.
	last := map[int]int{}
	cells := 0
	p.lose = func(i int, b []byte) bool {
		if t, ok := seqhdr.FrameType(b); i != 0 || !ok || t != seqhdr.TypeCell {
			return false
		}
		cells++
		h, _ := seqhdr.ParseCarried(b)
		g := int(h.Seq) / 4
		if rng.Float64() < 0.05 && last[g] == 0 {
			last[g] = 1
			lost++
			return true
		}
		return false
	}
	const n = 400
	for i := range n {
		p.fromHost(t, 0, 0, hostFrame(2, 1, 60+(i*37)%1400, uint32(i+1)))
		if i%5 == 0 {
			p.step(t, 1000)
		}
	}
	for range 300 {
		p.step(t, 10_000)
	}
	p.lose = nil
	got := p.delivered[1]
	if len(got) != n+1 {
		t.Fatalf("node 2 delivered %d frames; want %d (%d cells lost on the links)", len(got), n+1, lost)
	}
	for i, b := range got[1:] {
		if len(b) != 60+(i*37)%1400 || binary.BigEndian.Uint32(b[14:]) != uint32(i+1) {
			t.Fatalf("frame %d: %d bytes, seq %d", i, len(b), binary.BigEndian.Uint32(b[14:]))
		}
	}
	var recovered, sent, parity uint64
	for i, m := range p.n {
		m.pl.publish()
		s := m.pl.st.Snapshot()
		for _, l := range s.Links {
			g := l.LG
			if g == nil || g.FEC == nil || g.Session != "up" || g.FEC.N != 4 || g.FEC.Basis != "fixed" {
				t.Fatalf("node %d %s: link layer %+v", i+1, l.Name, g)
			}
			if i == 1 {
				recovered += g.Recovered
			} else {
				sent += g.Sent
				parity += g.FEC.Sender.Parity
			}
		}
		if held, out := m.w.refs.inFlight(); held != 0 || out != 0 {
			t.Errorf("node %d: %d frames held, %d outstanding after the run", i+1, held, out)
		}
		if s.FramesHeld != 0 || s.Malformed != 0 || s.CopyFails != 0 {
			t.Errorf("node %d: frames held %d, malformed %d, copy failures %d", i+1, s.FramesHeld, s.Malformed, s.CopyFails)
		}
	}
	t.Logf("%d cells sent, %d parity frames, %d lost on the links, %d rebuilt", sent, parity, lost, recovered)
	if lost == 0 || recovered != uint64(lost) {
		t.Errorf("%d cells lost, %d rebuilt; want all rebuilt", lost, recovered)
	}
	if parity < sent/4 {
		t.Errorf("%d parity frames for %d cells at n=4", parity, sent)
	}
}
