package cellspipe

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/internal/fuzzops"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// TestCellFECMemory: two edges in memory with --cells-link-mode fec under the
// cells on 3 links, n fixed at 4; 5% of the cells from node 1 are lost on
// the links (parity and control frames never). Every host frame still
// arrives whole and in order (the reassembly orders what the links
// deliver at once), the cells lost were rebuilt from parity, every UMEM
// frame comes back, and the statistics show it.
func TestCellFECMemory(t *testing.T) {
	p := newMemPairWith(t, 3, Config{LinkMode: "fec"}, func(c *dataplane.Config) { fecpipe.ConfigOf(c).Fixed, fecpipe.ConfigOf(c).N = true, 4 })
	p.keep = true
	rng := rand.New(rand.NewPCG(1, 2))
	lost := 0
	p.learn(t)
	// One loss at most in each group of a link: the cells of a group go
	// out together, so a burst of losses would hit one group. A group is
	// at most 4 consecutive sequence numbers of its link, but not always
	// 4 aligned ones (a group open longer than the sender's flush time
	// closes early), so no cell is lost within 2n+2 sequence numbers of
	// one lost before (on any link: the hook does not know the link).
	var losses []int
	cells := 0
	p.lose = func(i int, b []byte) bool {
		if t, ok := seqhdr.FrameType(b); i != 0 || !ok || t != seqhdr.TypeCell {
			return false
		}
		cells++
		h, _ := seqhdr.ParseCarried(b)
		if rng.Float64() >= 0.05 {
			return false
		}
		for _, s := range losses {
			if d := int(h.Seq) - s; d > -10 && d < 10 {
				return false
			}
		}
		losses = append(losses, int(h.Seq))
		lost++
		return true
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
			if g == nil || g.FEC == nil {
				t.Fatalf("node %d %s: no link layer snapshot", i+1, l.Name)
			}
			gf := g.FEC.(*fecpipe.Snapshot)
			if g.Session != "up" || gf.N != 4 || gf.Basis != "fixed" {
				t.Fatalf("node %d %s: link layer %+v", i+1, l.Name, g)
			}
			if i == 1 {
				recovered += g.Recovered
			} else {
				sent += g.Sent
				parity += gf.Sender.Parity
			}
		}
		if held, out := m.w.InFlight(); held != 0 || out != 0 {
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

// FuzzCellFECReceive drives the receive path of --cells-link-mode fec under the
// cells (two edges in memory, 2 links, n = 3) with the input: hostile link
// frames into edge 2 (raw bytes; cells with any link fields, sequenced
// near the receiver's window or not; parity frames with any header and
// payload; session frames), real traffic from edge 1 with cells lost on
// the links, and time. No panic; after every step the pipelines account
// for every UMEM frame (held by the link layers, or released); afterwards
// fresh traffic arrives whole, once and in order; all of it unless a
// hostile cell or parity frame came: one that claims numbers ahead of the
// sender (a parity frame's group too) makes the receiver take the
// sender's next frames for old ones, up to that many (fec.Receiver; the
// link's integrity check keeps corrupted frames out, not a forger).
func FuzzCellFECReceive(f *testing.F) {
	f.Add([]byte{1, 5, 0, 2, 9, 0, 3, 7, 2, 40, 1, 3})
	f.Add([]byte{0, 1, 200, 0, 2, 1, 3, 4, 5, 6, 1, 9, 2, 255})
	f.Add([]byte{3, 2, 0, 3, 4, 1, 1, 8, 0, 3, 0, 0, 2, 10})
	f.Fuzz(func(t *testing.T, data []byte) {
		cc := Config{LinkMode: "fec", ReachInterval: 100 * time.Microsecond, ReachTh: 3, ReachUp: 2, ReasmTimeout: time.Millisecond, reasmWindow: 63, voqBytes: 64 << 10}
		p := newMemPairWith(t, 2, cc, func(c *dataplane.Config) { fecpipe.ConfigOf(c).Fixed, fecpipe.ConfigOf(c).N = true, 3 })
		p.learn(t)
		o := &fuzzops.Ops{B: data}
		loseNext := 0
		p.lose = func(i int, b []byte) bool {
			if t, ok := seqhdr.FrameType(b); ok && t == seqhdr.TypeCell && loseNext > 0 {
				loseNext--
				return true
			}
			return false
		}
		rx := p.n[1]
		seq := uint32(1 << 20)
		forged := false
		check := func() {
			for i, m := range p.n {
				m.pl.publish()
				if s := m.pl.st.Snapshot(); s.FramesHeld != 0 {
					t.Fatalf("node %d: %d frames unaccounted for", i+1, s.FramesHeld)
				}
				held, out := m.w.InFlight()
				lh := 0
				for _, c := range m.pl.links {
					lh += c.Held()
				}
				if held != lh || out != 0 {
					t.Fatalf("node %d: %d frames held (%d by the link layers), %d outstanding", i+1, held, lh, out)
				}
			}
		}
		for step := 0; len(o.B) > 0 && step < 200; step++ {
			op, l := o.U8(), int(o.U8()%2)
			var b []byte
			switch op % 6 {
			case 0: // raw bytes
				b = o.Bytes(int(o.U16() % 1600))
			case 1, 2: // a cell with any link fields (1), or sequenced near the window (2)
				b = hostileCellFEC(o)
				if op%6 == 2 {
					c := p.n[0].pl.links[l].(interface{ TxNext() seqhdr.Seq }) // the sender of what edge 2 receives on l
					_ = seqhdr.Stamp(b, &seqhdr.Header{Seq: c.TxNext().Add(int(int8(o.U8())) % 16)})
				}
			case 3: // a parity frame near the window
				c := p.n[0].pl.links[l].(interface{ TxNext() seqhdr.Seq })
				n := int(o.U16() % 1600)
				b = make([]byte, fec.ParityOffset+max(n, fec.MinFrame))
				_ = fec.PutParityHeader(b, &[6]byte{}, &[6]byte{}, &fec.Parity{First: c.TxNext().Add(int(int8(o.U8())) % 16), Count: 1 + int(o.U8()%8), LenXor: o.U16()})
				copy(b[fec.ParityOffset:], o.Bytes(n))
			case 4: // traffic edge 1 → edge 2, some cells lost
				loseNext = int(o.U8() % 3)
				for range 1 + o.U8()%8 {
					seq++
					p.fromHost(t, 0, 0, hostFrame(2, 1, 60+int(o.U8())*5, seq))
				}
			case 5:
				p.step(t, int64(o.U8())*10_000)
			}
			if b != nil {
				if len(b) == 0 {
					b = []byte{0}
				}
				if t, ok := seqhdr.FrameType(b); ok && (t == seqhdr.TypeCell || t == seqhdr.TypeFECParity) {
					forged = true // numbers near the window (a parity's too) displace the sender's
				}
				p.rx[0] = rx.put(t, b)
				rx.pl.Receive(p.now, rx.pl.ps.Links[l], 0, p.rx[:], rx.w.Tx())
			}
			p.step(t, 1000)
			check()
		}
		// Fresh traffic: 30 frames, nothing lost on the links.
		p.lose = nil
		for range 100 {
			p.step(t, 100_000)
		}
		p.keep, p.delivered[1] = true, nil
		for k := range 30 {
			p.fromHost(t, 0, 0, hostFrame(2, 1, 100+k, uint32(k)))
		}
		for range 50 {
			p.step(t, 100_000)
		}
		check()
		prev := -1
		for _, b := range p.delivered[1] {
			k := int(binary.BigEndian.Uint32(b[14:]))
			if k >= 1<<20 {
				continue // from the fuzzed traffic, late
			}
			if k <= prev || k >= 30 || len(b) != 100+k {
				t.Fatalf("fresh frame %d (%d bytes) after %d", k, len(b), prev)
			}
			prev = k
		}
		if !forged && prev != 29 {
			for l, c := range rx.pl.links {
				var r, s linkpipe.CellLinkLG
				c.Snapshot(&r)
				p.n[0].pl.links[l].Snapshot(&s)
				t.Logf("edge 2 link %d receiver %+v", l, r.FEC.(*fecpipe.Snapshot).Receiver)
				t.Logf("edge 1 link %d sender %+v", l, s.FEC.(*fecpipe.Snapshot).Sender)
			}
			t.Fatalf("fresh traffic: delivered up to %d of 0..29, no forged cell sent (edge 2 reassembly %+v)", prev, rx.pl.node.ReasmStats())
		}
	})
}

// hostileCellFEC is a cell frame with fields, link fields and payload from
// the input, its header checksum valid.
func hostileCellFEC(o *fuzzops.Ops) []byte {
	n := 1 + int(o.U16()%1400)
	h := cellify.CellHeader{Dst: 2, Src: cellify.EdgeID(1 + o.U8()%3), Hops: 1 + o.U8()%15, Seq: uint32(o.U16()), Epoch: 1 + uint16(o.U8())}
	h.First = o.U16() % uint16(n+1)
	b := make([]byte, max(cellify.CellPayloadOffset+n, seqhdr.MinFrameLen))
	m, err := cellify.PutCell(b, &h, o.Bytes(n))
	if err != nil {
		return b
	}
	copy(b[15:22], o.Bytes(7))
	return b[:m]
}

// TestCellFECRestartAndDown: under --cells-link-mode fec in memory, a link whose
// interface goes down leaves the node's routes and its session waits;
// traffic goes over the other link meanwhile, and the link comes back with
// its interface. Edge 2 restarting (a new pipeline: new epoch, fresh
// numbering) makes every link agree again (a session reset at edge 1), and
// traffic flows again whole and in order.
func TestCellFECRestartAndDown(t *testing.T) {
	p := newMemPairWith(t, 2, Config{LinkMode: "fec"}, func(c *dataplane.Config) { fecpipe.ConfigOf(c).Fixed, fecpipe.ConfigOf(c).N = true, 3 })
	p.keep = true
	p.learn(t)
	seq := uint32(0)
	burst := func(n int) {
		p.delivered[1] = nil
		for range n {
			seq++
			p.fromHost(t, 0, 0, hostFrame(2, 1, 200, seq))
			p.step(t, 10_000)
		}
		for range 100 { // beyond the reassembly timeout: a restarted edge 2 resyncs edge 1's stream
			p.step(t, int64(time.Millisecond))
		}
		if len(p.delivered[1]) != n {
			for i, m := range p.n {
				m.pl.publish()
				s := m.pl.st.Snapshot()
				for _, l := range s.Links {
					t.Logf("node %d %s: usable %v %+v; fec sender %+v receiver %+v", i+1, l.Name, l.Usable, *l.LG, l.LG.FEC.(*fecpipe.Snapshot).Sender, l.LG.FEC.(*fecpipe.Snapshot).Receiver)
				}
				t.Logf("node %d: %+v %+v", i+1, s.Node, s.Reasm)
			}
			t.Fatalf("delivered %d of %d frames (up to %d)", len(p.delivered[1]), n, seq)
		}
		for k, b := range p.delivered[1] {
			if got := binary.BigEndian.Uint32(b[14:]); got != seq-uint32(n)+uint32(k)+1 {
				t.Fatalf("frame %d: seq %d", k, got)
			}
		}
	}
	burst(50)
	setDown := func(down bool) {
		for _, m := range p.n {
			m.w.SetDownSince(m.pl.ps.Links[0], 0)
			if down {
				m.w.SetDownSince(m.pl.ps.Links[0], 1)
			}
		}
	}
	setDown(true)
	p.step(t, 1000)
	p.step(t, 1000)
	p.n[0].pl.publish()
	if s := p.n[0].pl.st.Snapshot(); s.Links[0].Usable || s.Links[0].LG.Session == "up" {
		t.Fatalf("link0 down: usable %v, session %s", s.Links[0].Usable, s.Links[0].LG.Session)
	}
	burst(50)
	setDown(false)
	for range 100 {
		p.step(t, int64(5*time.Millisecond))
	}
	p.n[0].pl.publish()
	if s := p.n[0].pl.st.Snapshot(); !s.Links[0].Usable || s.Links[0].LG.Session != "up" {
		t.Fatalf("link0 up again: usable %v, session %s", s.Links[0].Usable, s.Links[0].LG.Session)
	}
	burst(50)
	resets := func() uint64 {
		var s linkpipe.CellLinkLG
		p.n[0].pl.links[0].Snapshot(&s)
		return s.Resets // the sender's
	}
	before := resets()
	// Edge 2 restarts.
	pl, err := newCellPipeline(p.n[1].w, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.n[1].pl = pl.(*cellPipeline)
	for range 200 {
		p.step(t, int64(5*time.Millisecond))
	}
	p.fromHost(t, 1, 0, hostFrame(1, 2, 60, 0)) // edge 2 learns h1 again
	p.step(t, 1000)
	burst(50)
	if after := resets(); after == before {
		t.Errorf("edge 1 link0: %d session resets before and after edge 2 restarted", after)
	}
}
