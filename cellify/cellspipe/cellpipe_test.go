package cellspipe

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	_ "github.com/linkfabric/linkfabric/linkguardian/lgpipe" // the lg, lgnb and monitor layers
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/xdp"
)

// memNode is a cells pipeline on a worker with a UMEM and no sockets: what
// it sends is collected from the worker's TX lists by the test (memPair).
type memNode struct {
	w  *dataplane.Worker
	pl *cellPipeline
}

// newMemNode makes a cell node with hosts host ports and links link ports
// (their frames 1500 bytes of MTU plus 16 on links) as id.
func newMemNode(t testing.TB, id uint16, hosts, links int, cc Config) *memNode {
	t.Helper()
	return newMemNodeWith(t, id, hosts, links, cc, nil)
}

// newMemNodeWith is newMemNode with the configuration changed by with.
func newMemNodeWith(t testing.TB, id uint16, hosts, links int, cc Config, with func(*dataplane.Config)) *memNode {
	t.Helper()
	u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: 4096, FrameCount: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	cfg := dataplane.WithMech(dataplane.Config{Mode: ModeCells, RingSize: 256}, "cells", cc)
	ConfigOf(&cfg).NodeID = id
	for i := range hosts {
		cfg.HostPorts = append(cfg.HostPorts, "host"+string(rune('0'+i)))
	}
	for i := range links {
		cfg.LinkPorts = append(cfg.LinkPorts, "link"+string(rune('0'+i)))
	}
	if with != nil {
		with(&cfg)
	}
	var macs [][6]byte
	for i := range hosts + links {
		macs = append(macs, [6]byte{2, 0, 0, 0, byte(id), byte(i)})
	}
	w, err := dataplane.NewMemWorker(cfg, u, macs, func(d *dataplane.Dataplane, cfg *dataplane.Config) (dataplane.Instance, error) {
		if err := ConfigOf(cfg).fit(1516, linkcrc.Off, "link0"); err != nil {
			return nil, err
		}
		return &cellsInstance{stats: newCellStats(d)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := newCellPipeline(w, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &memNode{w: w, pl: pl.(*cellPipeline)}
}

// put copies b into a free frame of m's UMEM, held as if received.
func (m *memNode) put(t testing.TB, b []byte) xdp.Desc {
	d, ok := m.w.Put(b)
	if !ok {
		t.Fatal("UMEM exhausted")
	}
	return d
}

// memPair is two memNodes whose link ports k are wired to each other; host
// frames delivered are counted per node.
type memPair struct {
	n         [2]*memNode
	count     [2]int
	delivered [2][][]byte // copies, with keep
	keep      bool
	now       int64
	rx        [1]xdp.Desc
	// lose, if set, drops the link frames it returns true for (node i's
	// frame b on its way to the peer).
	lose func(i int, b []byte) bool
}

// step polls both nodes at now and carries what they sent until nothing
// moves: link frames to the peer's same link port, host frames counted.
func (p *memPair) step(t testing.TB, dt int64) {
	p.now += dt
	for i := range 2 {
		p.n[i].pl.Poll(p.now, p.n[i].w.Tx())
	}
	for moved := true; moved; {
		moved = false
		for i, m := range p.n {
			peer := p.n[1-i]
			for port := range m.pl.ps.N() {
				for _, d := range m.w.TakeSent(port) {
					moved = true
					b := m.w.Bytes(d.Addr, int(d.Len))
					if _, ok := m.pl.ps.HostIndex(port); ok {
						p.count[i]++
						if p.keep {
							p.delivered[i] = append(p.delivered[i], append([]byte(nil), b...))
						}
						continue
					}
					if p.lose != nil && p.lose(i, b) {
						continue
					}
					p.rx[0] = peer.put(t, b)
					peer.pl.Receive(p.now, port-m.pl.ps.Links[0]+peer.pl.ps.Links[0], 0, p.rx[:], peer.w.Tx())
				}
			}
			m.w.ReleaseSent()
		}
	}
}

// hostFrame is an Ethernet frame of n bytes from src to dst, numbered seq.
func hostFrame(dst, src byte, n int, seq uint32) []byte {
	b := make([]byte, n)
	copy(b, []byte{2, 0, 0, 0, 9, dst, 2, 0, 0, 0, 9, src, 0x88, 0xb6})
	binary.BigEndian.PutUint32(b[14:], seq)
	return b
}

// fromHost hands frame b to m's host port k.
func (p *memPair) fromHost(t testing.TB, i, k int, b []byte) {
	m := p.n[i]
	p.rx[0] = m.put(t, b)
	m.pl.Receive(p.now, m.pl.ps.Hosts[k], 0, p.rx[:], m.w.Tx())
}

// learn has both nodes learn h1 and h2: a broadcast from h1 (flooded; h1
// learned at node 2), then a frame from h2 to h1 (known).
func (p *memPair) learn(t testing.TB) {
	p.fromHost(t, 0, 0, hostFrame(0xff, 1, 60, 0))
	p.step(t, 1000)
	p.fromHost(t, 1, 0, hostFrame(1, 2, 60, 0))
	p.step(t, 1000)
}

func newMemPair(t testing.TB, links int, cc Config) *memPair {
	return newMemPairWith(t, links, cc, nil)
}

// newMemPairWith is newMemPair with the configuration changed by with.
func newMemPairWith(t testing.TB, links int, cc Config, with func(*dataplane.Config)) *memPair {
	p := &memPair{}
	p.n[0] = newMemNodeWith(t, 1, 1, links, cc, with)
	p.n[1] = newMemNodeWith(t, 2, 1, links, cc, with)
	// Until REACH made the links usable both ways.
	cc = *ConfigOf(p.n[0].pl.w.Config()) // with the defaults filled in
	for range 2*cc.ReachUp + 3 {
		p.step(t, int64(cc.ReachInterval))
	}
	for i, m := range p.n {
		if u := m.pl.node.Reach().Usable(); u != 1<<links-1 {
			t.Fatalf("node %d: usable links %b after the REACH exchange", i+1, u)
		}
	}
	return p
}

// TestCellPipelineMemory: two edges in memory; frames both ways (learning
// by flooding first) are delivered whole and in order, every UMEM frame
// comes back, the statistics agree, and the steady state allocates
// nothing per frame.
func TestCellPipelineMemory(t *testing.T) {
	for _, cc := range []Config{{}, {NoCredits: true, NoPacking: true}, {Spray: "p2c"}} {
		p := newMemPair(t, 3, cc)
		p.keep = true
		p.learn(t)
		const n = 300
		for i := range n {
			p.fromHost(t, 0, 0, hostFrame(2, 1, 60+i*5, uint32(i+1)))
			if i%7 == 0 {
				p.step(t, 1000)
			}
		}
		for range 200 {
			p.step(t, 10_000)
		}
		got := p.delivered[1]
		if len(got) != n+1 {
			t.Fatalf("%+v: node 2 delivered %d frames; want %d", cc, len(got), n+1)
		}
		for i, b := range got[1:] {
			if len(b) != 60+i*5 || binary.BigEndian.Uint32(b[14:]) != uint32(i+1) {
				t.Fatalf("%+v: frame %d: %d bytes, seq %d", cc, i, len(b), binary.BigEndian.Uint32(b[14:]))
			}
		}
		for i, m := range p.n {
			if held, out := m.w.InFlight(); held != 0 || out != 0 {
				t.Errorf("%+v node %d: %d frames held, %d outstanding after the run", cc, i+1, held, out)
			}
			m.pl.publish()
			s := m.pl.st.Snapshot()
			if s.FramesHeld != 0 || s.Malformed != 0 || s.UmemFree != int(m.w.Umem().FrameCount()) {
				t.Errorf("%+v node %d: frames held %d, malformed %d, free %d of %d", cc, i+1, s.FramesHeld, s.Malformed, s.UmemFree, m.w.Umem().FrameCount())
			}
		}
		s := p.n[0].pl.st.Snapshot()
		reg := metrics.NewRegistry()
		if err := p.n[0].w.Node().Register(reg); err != nil {
			t.Fatal(err)
		}
		v := reg.Values()
		if got := v[`linkfabric_cells_link_bytes_total{dir="tx",port="link1"}`]; got != float64(s.Links[1].TxBytes) || got == 0 {
			t.Errorf("%+v: exported link1 tx bytes %v; the snapshot says %d", cc, got, s.Links[1].TxBytes)
		}
		if got := v["linkfabric_cells_reasm_delivered_total"]; got != float64(s.ReasmDelivered) {
			t.Errorf("%+v: exported reassembly deliveries %v; the snapshot says %d", cc, got, s.ReasmDelivered)
		}
		var cells uint64
		for _, l := range s.Links {
			cells += l.TxCells
		}
		if cells != s.Node.CellsCut || s.Hosts[0].RxFrames != n+1 || s.Credits == cc.NoCredits {
			t.Errorf("%+v node 1: cells on links %d, cut %d; host frames %d; credits %v", cc, cells, s.Node.CellsCut, s.Hosts[0].RxFrames, s.Credits)
		}
	}
}

// TestCellPipelineNoAlloc: once streams, VOQs and lists exist, a host frame
// through two edges (cells, credits, reassembly, delivery) allocates
// nothing.
func TestCellPipelineNoAlloc(t *testing.T) {
	p := newMemPair(t, 4, Config{})
	p.learn(t)
	f := hostFrame(2, 1, 1000, 1)
	run := func() {
		for range 8 {
			p.fromHost(t, 0, 0, f)
		}
		p.step(t, 20_000)
	}
	for range 50 {
		run()
	}
	if a := testing.AllocsPerRun(100, run); a != 0 {
		t.Errorf("%v allocations per 8 host frames through two edges; want 0", a)
	}
	if p.count[1] < 100*8 {
		t.Fatalf("%d frames delivered of %d", p.count[1], 150*8)
	}
}

// TestCellsConfig: defaults, the cell size against the link MTU, the node
// id ranges, and errors that name the flag.
func TestCellsConfig(t *testing.T) {
	c := Config{}
	if err := c.defaults(true); err != nil || c.Spray != "perm" || c.LinkMode != "none" || c.ReachTh != defaultReachTh {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if err := c.fit(1516, linkcrc.CRC32C, "link0"); err != nil || c.CellSize != 1516+14-4-cellify.CellPayloadOffset {
		t.Errorf("default cell size at link MTU 1516 with CRC: %d, %v", c.CellSize, err)
	}
	most := 1516 + 14 - 4 - cellify.CellPayloadOffset // with the CRC trailer
	c.CellSize = 0
	if err := c.fit(1516, linkcrc.Off, "link0"); err != nil || c.CellSize != 1516+14-cellify.CellPayloadOffset {
		t.Errorf("default cell size at link MTU 1516 without CRC: %d, %v", c.CellSize, err)
	}
	for _, tc := range []struct {
		c    Config
		edge bool
		mtu  int
		want []string
	}{
		{Config{CellSize: 8}, true, 1516, []string{"--cells-size 8", "below the cell header"}},
		{Config{CellSize: most + 1}, true, 1516, []string{fmt.Sprintf("--cells-size %d", most+1), "link MTU 1516", fmt.Sprintf("at most %d", most)}},
		{Config{Spray: "ecmp"}, true, 1516, []string{"--cells-spray", "perm, p2c or hash"}},
		{Config{LinkMode: "xor"}, true, 1516, []string{"--cells-link-mode", "none, lg, lgnb, monitor or fec"}},
		{Config{NodeID: 1024}, true, 1516, []string{"--cells-node-id 1024", "1..1023"}},
		{Config{ReasmTimeout: -1}, true, 1516, []string{"--cells-reasm-timeout"}},
		{Config{}, true, 40, []string{"MTU 40", "no cell fits"}},
		{Config{LossClasses: "default"}, true, 1516, []string{"--cells-loss-classes", "--cells-link-mode monitor"}},
		{Config{LossClasses: "1e-3,1e-6", LinkMode: "monitor"}, true, 1516, []string{"--cells-loss-classes \"1e-3,1e-6\"", "ascend"}},
		{Config{LossClasses: "low", LinkMode: "monitor"}, true, 1516, []string{"--cells-loss-classes \"low\""}},
		{Config{ClassMap: "5=1"}, true, 1516, []string{"--cells-class-map", "needs --cells-loss-classes"}},
		{Config{LossClasses: "default", LinkMode: "lg", ClassMap: "5=4"}, true, 1516, []string{"--cells-class-map", "loss class k in 1..3"}},
	} {
		err := tc.c.defaults(tc.edge)
		if err == nil {
			err = tc.c.fit(tc.mtu, linkcrc.CRC32C, "link0")
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: %v; want an error with %q", tc.c, err, w)
			}
		}
	}
	for _, m := range []string{"lg", "lgnb", "monitor", "fec"} {
		if err := (&Config{LinkMode: m}).defaults(true); err != nil {
			t.Errorf("--cells-link-mode %s: %v", m, err)
		}
	}
	lc := Config{LinkMode: "monitor", LossClasses: "default", ClassMap: "5=1,7=2"}
	if err := lc.defaults(true); err != nil || lc.classes.For(5) != 1 || lc.classes.For(7) != 2 || lc.classes.For(0) != 3 {
		t.Errorf("--cells-loss-classes default --cells-class-map 5=1,7=2: %+v, %v", lc.classes, err)
	}
	if err := (&Config{NodeID: 40000}).defaults(false); err != nil {
		t.Errorf("fabric node id 40000: %v", err)
	}
	seen := map[uint16]bool{}
	for i := range 200 {
		mac := [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)}
		e, f := CellNodeID(mac, true), CellNodeID(mac, false)
		if e == 0 || e >= CellMaxEdges || f == 0 {
			t.Fatalf("MAC %x: edge id %d, fabric id %d", mac, e, f)
		}
		seen[e] = true
	}
	if len(seen) < 150 {
		t.Errorf("200 MACs gave %d edge ids", len(seen))
	}
}

// TestCellClockCountsOnlyLateness: the node's clock skips only the time a
// worker ran later than the deadline it slept until (beyond cellMaxStep).
// An idle worker sleeping from one REACH to the next is not stalled: before,
// every gap over 2 ms counted, so at a 5 ms REACH interval the node's clock
// ran at 2/5 of the wall clock and REACH went out every 9 ms in three
// wakeups.
func TestCellClockCountsOnlyLateness(t *testing.T) {
	const reach = 5 * time.Millisecond // longer than cellMaxStep
	p := newMemPair(t, 2, Config{ReachInterval: reach})
	interval := int64(reach)
	m := p.n[0]
	sent := m.pl.node.Stats.ReachTx
	for range 100 {
		p.step(t, interval)
	}
	if s := m.pl.stalled; s != 0 {
		t.Errorf("100 idle REACH intervals of %v counted %v stalled", reach, time.Duration(s))
	}
	if n := m.pl.node.Stats.ReachTx - sent; n < 2*99 || n > 2*101 {
		t.Errorf("100 intervals on 2 links sent %d REACHes, want about 200", n)
	}
	// A worker 50 ms late beyond its deadline is stalled for 50 ms less
	// cellMaxStep.
	p.step(t, interval+50*int64(time.Millisecond))
	if want := 50*int64(time.Millisecond) - cellMaxStep; m.pl.stalled != want {
		t.Errorf("50 ms late: stalled %v, want %v", time.Duration(m.pl.stalled), time.Duration(want))
	}
}

// TestCellCreditWindowFitsUplinks: a source kept from running sends all
// the credit it was granted at once over its links, so the window of a
// host port (its credit in flight at most) must fit in what the edge's
// rate-limited link ports buffer (the fabric's edges alike), whatever the
// host port's own buffer; and never exceed that buffer either.
func TestCellCreditWindowFitsUplinks(t *testing.T) {
	const links, linkBuf, hostBuf = 4, 256 << 10, 2 << 20
	n := newMemNodeWith(t, 1, 1, links, Config{}, func(c *dataplane.Config) {
		c.Shape = map[string]dataplane.PortShape{"host0": {Rate: 1e9, Buffer: hostBuf}}
		for l := range links {
			c.Shape["link"+string(rune('0'+l))] = dataplane.PortShape{Rate: 500e6, Buffer: linkBuf}
		}
	})
	got := n.pl.node.Scheduler(0).Config().MaxInFlight
	if got <= 0 || got > links*linkBuf*3/4 || got > hostBuf {
		t.Errorf("credit window bound %d bytes: want at most 3/4 of the %d uplinks' %d bytes and the port's %d", got, links, links*linkBuf, hostBuf)
	}
}

// TestCellDeliveryFitsHostBuffer: deliveries that find a rate-limited host
// port's egress queue short of bytes (not only of frames) wait in the host
// queue, in order, instead of being listed for the port and dropped there
// (tail drop); they go as the port's queue drains.
func TestCellDeliveryFitsHostBuffer(t *testing.T) {
	const buf, frame = 8 << 10, 1500
	n := newMemNode(t, 1, 1, 1, Config{})
	port := n.pl.ps.Hosts[0]
	sh := n.w.Shape(port, dataplane.PortShape{Rate: 1e9, Buffer: buf, Burst: 16 << 10})
	for range 3 { // the port's queue holds 4500 of its 8192 bytes
		if !sh.Enqueue(n.put(t, make([]byte, frame))) {
			t.Fatal("shaper refused a frame below its buffer")
		}
	}
	tx := n.w.Tx()
	o := &n.pl.node.Out
	for i := range 4 {
		d := n.put(t, hostFrame(2, 1, frame, uint32(i)))
		o.Deliver[0] = append(o.Deliver[0], link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)})
	}
	n.pl.drain(0, tx)
	list := n.w.TakeSent(port)
	listed := 0
	for _, d := range list {
		listed += int(d.Len)
	}
	if _, queued := sh.Queued(); queued+listed > buf {
		t.Fatalf("%d bytes listed for a host port whose queue holds %d of %d: %d would be dropped", listed, queued, buf, queued+listed-buf)
	}
	if hq := &n.pl.hostQ[0]; hq.Len() != 4-len(list) {
		t.Fatalf("%d of 4 deliveries listed, %d held", len(list), hq.Len())
	}
	// The port's queue drains: the held deliveries go, in order.
	for _, d := range list {
		sh.Enqueue(d)
	}
	var sent []uint32
	for f, _ := sh.Queued(); f > 0 || n.pl.hostQ[0].Len() > 0; f, _ = sh.Queued() {
		for _, d := range sh.Dequeue() {
			if b := n.w.Umem().Bytes(d.Addr, d.Len); b[0] == 2 && b[5] == 2 {
				sent = append(sent, binary.BigEndian.Uint32(b[14:]))
			}
		}
		n.pl.drain(0, tx)
		for _, d := range n.w.TakeSent(port) {
			if !sh.Enqueue(d) {
				t.Fatal("the egress queue dropped a delivery")
			}
		}
	}
	if len(sent) != 4 || sent[0] != 0 || sent[1] != 1 || sent[2] != 2 || sent[3] != 3 {
		t.Fatalf("deliveries left the port as %v, want [0 1 2 3]", sent)
	}
}

// TestCellCreditWindowFitsHostQueueFrames: a host port without a rate
// limit queues frames, not bytes (its TX ring and hostQRings more rings of
// deliveries waiting for it), so with small frames the credit window (the
// egress queue plus the credit in flight, in bytes) must stay within what
// those frames hold at the port's mean delivered length: at 60-byte frames
// a window of cellMaxInFlight let 2 MiB of records in flight toward a
// queue of a few hundred KB, and the edge dropped the deliveries that
// found it full (36239 in 2 s on the bundle).
func TestCellCreditWindowFitsHostQueueFrames(t *testing.T) {
	n := newMemNode(t, 1, 1, 1, Config{})
	port := n.pl.ps.Hosts[0]
	tx := n.w.Tx()
	o := &n.pl.node.Out
	const frame = 60
	for i := range 64 { // the port's mean delivered length settles at 60 bytes
		d := n.put(t, hostFrame(2, 1, frame, uint32(i)))
		o.Deliver[0] = append(o.Deliver[0], link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)})
		n.pl.drain(0, tx)
		n.w.TakeSent(port) // the port sent them
		n.w.ReleaseSent()
	}
	n.pl.Poll(1, tx)
	// The mean follows the frames down to their length (an integer mean
	// moved by an eighth of each difference stopped 7 bytes above it, 12 %
	// more frames than the queue holds).
	if got := n.pl.meanLen(0); got != frame {
		t.Errorf("mean delivered length %d after 64 frames of %d", got, frame)
	}
	holds := (hostQRings + 1) * n.pl.ring * frame
	sc := n.pl.node.Scheduler(0)
	if got := sc.Config().MaxInFlight; got > max(holds, cellCredit) {
		t.Errorf("credit window bound %d bytes toward a host port whose queue holds %d frames of %d bytes (%d bytes)", got, (hostQRings+1)*n.pl.ring, frame, holds)
	}
	if w := sc.Loop().Window; w > max(holds, cellCredit) {
		t.Errorf("credit window %d bytes, over the %d the port's queue holds", w, holds)
	}
}
