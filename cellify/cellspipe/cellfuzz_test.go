package cellspipe

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/internal/fuzzops"
	"github.com/linkfabric/linkfabric/xdp"
)

// fuzzNet is three cell pipelines in memory: edges 1 and 2 (two host ports
// each) and fabric node 3, wired e1.link0–f.link0, e2.link0–f.link1,
// e1.link1–e2.link1. What a pipeline sends on a link is copied into the
// peer's UMEM and received there; host deliveries are counted. Every call
// into a pipeline is checked against a frame ledger: the frames it
// releases are exactly the frames it held (received or allocated), each
// once, and every frame it sends is among them.
type fuzzNet struct {
	t     testing.TB
	cc    Config
	n     [3]*memNode
	down  [3]bool // per wire
	now   int64
	kept  [][]byte // recent link frames, for replays
	next  int      // kept's ring position
	rx    [1]xdp.Desc
	hosts [2]int // host frames delivered per edge
	// fresh collects the seqs of frames from host 1 to host 3 delivered
	// at edge 2's port 0, while on.
	fresh   []uint32
	on      bool
	rel     []bool // ledger scratch, per frame index
	sent    []bool
	touched []int
}

// fuzzWires: (node, link) pairs.
var fuzzWires = [3][2][2]int{{{0, 0}, {2, 0}}, {{1, 0}, {2, 1}}, {{0, 1}, {1, 1}}}

// peerOf returns the wire and the other end of (node, link).
func peerOf(node, link int) (w, pn, pl int) {
	for w, ends := range fuzzWires {
		for e := range 2 {
			if ends[e] == [2]int{node, link} {
				o := ends[1-e]
				return w, o[0], o[1]
			}
		}
	}
	return -1, -1, -1
}

func newFuzzNet(t testing.TB) *fuzzNet {
	f := &fuzzNet{t: t, cc: Config{
		ReachInterval: 100 * time.Microsecond, ReachTh: 3, ReachUp: 2, ReasmTimeout: time.Millisecond,
		reasmWindow: 63, voqBytes: 64 << 10,
	}}
	f.n[0] = newMemNode(t, 1, 2, 2, f.cc)
	f.n[1] = newMemNode(t, 2, 2, 2, f.cc)
	f.n[2] = newMemNode(t, 3, 0, 2, f.cc)
	f.rel = make([]bool, f.n[0].w.Umem().FrameCount())
	f.sent = make([]bool, len(f.rel))
	for range 8 {
		f.step(100_000)
	}
	return f
}

// step advances the clock by dt, polls every node and carries the frames.
func (f *fuzzNet) step(dt int64) {
	f.now += max(dt, 1)
	for _, m := range f.n {
		m.pl.Poll(f.now, m.w.Tx())
	}
	f.settle()
}

// settle carries frames until nothing moves.
func (f *fuzzNet) settle() {
	for rounds, moved := 0, true; moved; rounds++ {
		if rounds == 10_000 {
			f.t.Fatalf("frames still moving after %d rounds: a forwarding loop (%+v / %+v / %+v)", rounds,
				f.n[0].pl.node.Stats, f.n[1].pl.node.Stats, f.n[2].pl.node.Stats)
		}
		moved = false
		for i := range f.n {
			if f.flush(i) {
				moved = true
			}
		}
	}
}

// flush checks node i's ledger, carries what it sent and applies its
// releases; it reports whether anything moved.
func (f *fuzzNet) flush(i int) bool {
	m := f.n[i]
	w := m.w
	released := w.Released()
	rel, sent := f.rel, f.sent
	defer func() {
		for _, k := range f.touched {
			rel[k], sent[k] = false, false
		}
		f.touched = f.touched[:0]
	}()
	for _, a := range released {
		k := w.Umem().FrameIndex(a)
		if rel[k] {
			f.t.Fatalf("node %d: frame %d released twice", i+1, k)
		}
		if !w.FrameHeld(a) {
			f.t.Fatalf("node %d: frame %d released but not held", i+1, k)
		}
		rel[k] = true
		f.touched = append(f.touched, k)
	}
	if held := w.FramesHeld(); held != len(released) {
		f.t.Fatalf("node %d: %d frames held after the call, %d released (a leak)", i+1, held, len(released))
	}
	moved := len(released) > 0
	for port := range m.pl.ps.N() {
		for _, d := range w.TakeSent(port) {
			k := w.Umem().FrameIndex(d.Addr)
			if sent[k] || !rel[k] {
				f.t.Fatalf("node %d: frame %d sent twice or not released (sent %v)", i+1, k, sent[k])
			}
			sent[k] = true
			if d.Len == 0 || d.Addr-w.Umem().FrameBase(d.Addr)+uint64(d.Len) > uint64(w.Umem().FrameSize()) {
				f.t.Fatalf("node %d: descriptor %+v beyond its frame", i+1, d)
			}
			b := w.Umem().Bytes(d.Addr, d.Len)
			if k, ok := m.pl.ps.HostIndex(port); ok {
				f.hosts[i]++
				if f.on && i == 1 && k == 0 && len(b) >= 18 && b[5] == 3 && b[11] == 1 {
					f.fresh = append(f.fresh, binary.BigEndian.Uint32(b[14:]))
				}
				continue
			}
			l, _ := m.pl.ps.Link(port)
			wi, pn, pl := peerOf(i, l)
			if wi < 0 || f.down[wi] {
				continue
			}
			f.keep(b)
			f.deliver(pn, pl, b)
		}
	}
	w.ReleaseSent()
	if h, o := w.InFlight(); h != 0 || o != 0 {
		f.t.Fatalf("node %d: %d frames held, %d outstanding after the releases", i+1, h, o)
	}
	return moved
}

// keep remembers a copy of a link frame for replays.
func (f *fuzzNet) keep(b []byte) {
	c := append([]byte(nil), b...)
	if len(f.kept) < 32 {
		f.kept = append(f.kept, c)
		return
	}
	f.kept[f.next] = c
	f.next = (f.next + 1) % len(f.kept)
}

// deliver hands b to node n's link l.
func (f *fuzzNet) deliver(n, l int, b []byte) { f.receive(n, f.n[n].pl.ps.Links[l], b) }

// fromHost hands b to edge n's host port k.
func (f *fuzzNet) fromHost(n, k int, b []byte) { f.receive(n, f.n[n].pl.ps.Hosts[k], b) }

// receive hands b, cut to a UMEM frame's length, to node n's worker port.
func (f *fuzzNet) receive(n, port int, b []byte) {
	m := f.n[n]
	if len(b) > int(m.w.Umem().MaxFrameLen()) {
		b = b[:m.w.Umem().MaxFrameLen()]
	}
	f.rx[0] = m.put(f.t, b)
	m.pl.Receive(f.now, port, 0, f.rx[:], m.w.Tx())
}

// restart replaces node n's pipeline by a new one (a new boot: new epoch,
// empty tables) on the same worker and UMEM.
func (f *fuzzNet) restart(n int) {
	m := f.n[n]
	pl, err := newCellPipeline(m.w, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	m.pl = pl.(*cellPipeline)
}

// setDown takes wire wi down or up at both ends (the worker's port state).
func (f *fuzzNet) setDown(wi int, down bool) {
	f.down[wi] = down
	for _, e := range fuzzWires[wi] {
		m := f.n[e[0]]
		var since int64
		if down {
			since = 1
		}
		m.w.SetDownSince(m.pl.ps.Links[e[1]], since)
	}
}

// fuzzMAC is host h's MAC (hostFrame's scheme); h 0: broadcast, 9: unknown.
func fuzzMAC(h byte) byte {
	if h == 0 {
		return 0xff
	}
	return h
}

// hostile makes a link frame from the input: raw bytes, or a cell, credit
// or REACH frame with fields from the input (valid checksums, so that the
// node's logic is reached), maybe corrupted or truncated afterwards.
func hostile(o *fuzzops.Ops) []byte {
	kind := o.U8()
	body := o.Bytes(int(o.U16() % 1600))
	b := make([]byte, 4000)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0x99})
	var n int
	var err error
	switch kind % 6 {
	case 0:
		return append(b[:12], body...)
	case 1, 2: // a cell: any destination, source, hops, epoch; records from the input
		h := cellify.CellHeader{Dst: cellify.EdgeID(o.U8() % 5), Src: cellify.EdgeID(o.U8() % 5), Class: cellify.Class(o.U8() % 8),
			FCI: o.U8()&1 == 1, Hops: o.U8() % 16, Port: o.U8() % 4, Seq: uint32(o.U16()) << (o.U8() % 32),
			First: o.U16(), RecNo: o.U16(), Entropy: o.U8(), Epoch: o.U16() % 4}
		if len(body) == 0 {
			body = []byte{0, 14, 1}
		}
		if h.First != cellify.NoRecord {
			h.First %= uint16(len(body))
		}
		if h.Hops == 0 { // encode with 1, then zero it and fix the checksum
			h.Hops = 1
			n, err = cellify.PutCell(b, &h, body)
			b[cellify.Off+4] &^= 0x0f
			cellify.SetEntropy(b, h.Entropy^1)
		} else {
			n, err = cellify.PutCell(b, &h, body)
		}
	case 3: // a credit request or grant
		var es []cellify.CreditEntry
		for range 1 + o.U8()%3 {
			es = append(es, cellify.CreditEntry{Port: o.U8() % 4, Class: cellify.Class(o.U8() % 8), Total: uint64(o.U16()) << (o.U8() % 40)})
		}
		n, err = cellify.PutCreditEpochs(b, o.U8()&1 == 1, cellify.EdgeID(o.U8()%5), cellify.EdgeID(o.U8()%5),
			cellify.CreditEpochs{Src: o.U16() % 4, Dst: o.U16() % 4}, cellify.CreditSettings{Lead: uint32(o.U16() % 3 << 12), Ahead: uint32(o.U16() % 3 << 12)}, es)
	case 4: // REACH from any node, any role, any bitmap
		bm := make([]byte, 128)
		copy(bm, body)
		bm[0] &^= 1
		r := cellify.Reach{Node: cellify.EdgeID(o.U16() % 8), Role: cellify.Role(1 + o.U8()%3), Faulty: o.U8()&1 == 1, Seq: uint32(o.U16()),
			Edges: 1024, Bitmap: bm}
		n, err = cellify.PutReach(b, &r)
	case 5: // a record stream: records whose lengths run beyond the cell
		p := make([]byte, 0, 64)
		for range 1 + o.U8()%4 {
			p = binary.BigEndian.AppendUint16(p, o.U16()%100)
			p = append(p, o.Bytes(int(o.U8()%40))...)
		}
		h := cellify.CellHeader{Dst: cellify.EdgeID(1 + o.U8()%2), Src: cellify.EdgeID(1 + o.U8()%4), Hops: 3, First: 0,
			Seq: uint32(o.U8()), RecNo: uint16(o.U8()), Epoch: o.U16() % 4}
		n, err = cellify.PutCell(b, &h, p)
	}
	if err != nil {
		return append(b[:12], body...)
	}
	f := b[:n]
	switch c := o.U8(); {
	case c < 16 && len(f) > 0: // a bit flipped
		f[int(o.U16())%len(f)] ^= 1 << (c % 8)
	case c < 24: // truncated
		f = f[:int(o.U16())%(len(f)+1)]
	}
	return f
}

// replay re-injects a kept frame, maybe with its cell seq moved near where
// it was (checksum fixed) or a byte changed.
func (f *fuzzNet) replay(o *fuzzops.Ops) []byte {
	if len(f.kept) == 0 {
		return nil
	}
	b := append([]byte(nil), f.kept[int(o.U8())%len(f.kept)]...)
	switch m := o.U8() % 4; m {
	case 1:
		if h, err := cellify.ParseCell(b); err == nil {
			h.Seq += uint32(int32(int8(o.U8())))
			cellify.PutCellHeader(b, &h)
		}
	case 2:
		if len(b) > 0 {
			b[int(o.U16())%len(b)] = o.U8()
		}
	}
	return b
}

// creditFrames sums the credit frames the nodes sent and the cells they
// cut.
func (f *fuzzNet) creditFrames() (ctrl, cells uint64) {
	for _, m := range f.n {
		s := &m.pl.node.Stats
		ctrl += s.CreditReqTx + s.CreditGrantTx
		cells += s.CellsCut
	}
	return ctrl, cells
}

// FuzzCellPipeline drives three cell pipelines over their UMEMs with
// hostile frames on their links (wrong destination, hop count 0, lengths
// beyond the frame, records beyond the payload, bad checksums, credit and
// REACH garbage, replays and near-window seqs), hostile host frames, host
// traffic, link flaps, restarts and time. Every call keeps the frame
// ledger (see fuzzNet). After the input stops the links come back and the
// fabric goes quiet: no credit frame, no cell, every VOQ empty; then fresh
// traffic edge 1 → edge 2 is delivered whole, once and in order.
func FuzzCellPipeline(f *testing.F) {
	f.Add([]byte{7, 0, 20, 4, 50, 2, 0, 0, 1, 0, 60, 0, 3, 4, 100})
	f.Add([]byte{7, 0, 30, 4, 30, 1, 2, 1, 1, 0, 80, 2, 1, 0, 9, 0, 1, 0, 0, 0, 5, 0, 0, 0xff, 0xff, 0, 0, 7, 0, 1, 99})
	f.Add([]byte{7, 0, 20, 4, 20, 3, 0, 5, 3, 4, 9, 6, 1, 4, 200, 7, 1, 20, 4, 250})
	f.Add([]byte{7, 0, 40, 4, 10, 5, 2, 4, 50, 5, 2, 6, 0, 4, 255, 4, 255})
	f.Add([]byte{0, 0, 0, 3, 0, 0, 1, 1, 2, 3, 0, 2, 0, 0, 0, 0, 0, 0, 5, 7, 0, 4, 5})
	f.Add([]byte{7, 1, 10, 4, 10, 0, 1, 0, 4, 0, 40, 7, 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 4, 60})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := newFuzzNet(t)
		o := &fuzzops.Ops{B: data}
		seq := uint32(1 << 20)
		for step := 0; len(o.B) > 0 && step < 300; step++ {
			op, i := o.U8(), int(o.U8()%3)
			switch op % 8 {
			case 0, 1:
				n.deliver(i, int(o.U8()%2), hostile(o))
			case 2:
				if i == 2 {
					i = int(op>>4) % 2
				}
				b := o.Bytes(int(o.U16() % 1600))
				if len(b) >= 12 {
					b = append([]byte(nil), b...)
					b[5], b[11] = fuzzMAC(o.U8()%6), fuzzMAC(1+o.U8()%4)
					copy(b[:5], []byte{2, 0, 0, 0, 9})
					copy(b[6:11], []byte{2, 0, 0, 0, 9})
					if b[5] == 0xff {
						b[0], b[1], b[2], b[3], b[4] = 0xff, 0xff, 0xff, 0xff, 0xff
					}
				}
				n.fromHost(i, int(o.U8()%2), b)
			case 3:
				if b := n.replay(o); b != nil {
					n.deliver(i, int(o.U8()%2), b)
				}
			case 4:
				n.step(int64(o.U8()) * 10_000)
			case 5:
				wi := int(o.U8() % 3)
				n.setDown(wi, !n.down[wi])
			case 6:
				n.restart(i)
			case 7: // host traffic: a burst from edge i's port to a host of the other edge
				if i == 2 {
					i = 0
				}
				src, dst := byte(1+2*i+int(o.U8()%2)), byte(3-2*i+int(o.U8()%2))
				for range 1 + o.U8()%16 {
					seq++
					n.fromHost(i, int(src-1)%2, hostFrame(dst, src, 60+int(o.U8())*5, seq))
				}
			}
			n.settle()
		}
		// Quiet: links up, time passes; then no credit frame, no cell, no
		// backlog.
		for wi := range n.down {
			n.setDown(wi, false)
		}
		for range 300 {
			n.step(100_000)
		}
		c0, k0 := n.creditFrames()
		for range 50 {
			n.step(100_000)
		}
		c1, k1 := n.creditFrames()
		if c1 != c0 || k1 != k0 {
			t.Fatalf("not quiet 30 ms after the input: %d credit frames and %d cells in the next 5 ms", c1-c0, k1-k0)
		}
		for i := range 2 {
			n.n[i].pl.node.VOQs(func(v cellify.VOQInfo) {
				if v.Backlog != 0 {
					t.Fatalf("node %d: VOQ %+v still holds %d bytes", i+1, v.Key, v.Backlog)
				}
			})
		}
		// Fresh traffic: both hosts flood once (learning), then 50 frames
		// from edge 1's port 0 to edge 2's port 0.
		n.fromHost(1, 0, hostFrame(0xff, 3, 60, 0))
		n.fromHost(0, 0, hostFrame(0xff, 1, 60, 0))
		n.settle()
		n.step(100_000)
		n.on = true
		for k := range 50 {
			n.fromHost(0, 0, hostFrame(3, 1, 100+k, uint32(k)))
		}
		n.settle()
		for range 50 {
			n.step(100_000)
		}
		ok := len(n.fresh) == 50
		for k, q := range n.fresh {
			ok = ok && q == uint32(k)
		}
		if !ok {
			t.Fatalf("fresh traffic: edge 2 delivered seqs %v, want 0..49 (%+v, reassembly %+v)", n.fresh, n.n[1].pl.node.Stats, n.n[1].pl.node.ReasmStats())
		}
	})
}
