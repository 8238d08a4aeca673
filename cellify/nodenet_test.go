package cellify

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
)

// nodeMem is a test Memory that tracks every buffer's owner: a double free,
// a free of a buffer never allocated or a leak fails the test.
type nodeMem struct {
	linksim.Sized
	t    testing.TB
	fail bool // Alloc refuses
}

func newNodeMem(t testing.TB) *nodeMem {
	return &nodeMem{t: t, Sized: linksim.Sized{Small: 2048, Big: MaxRecordFrame + 64}}
}

func (m *nodeMem) Alloc(n int) (link.Handle, bool) {
	if m.fail {
		return 0, false
	}
	return m.Sized.Alloc(n)
}

// put allocates a buffer holding b (a frame the test hands in).
func (m *nodeMem) put(b []byte) link.Frame {
	h, ok := m.Alloc(len(b))
	if !ok {
		m.t.Fatalf("test memory: no buffer for %d bytes", len(b))
	}
	copy(m.Buf(h), b)
	return link.Frame{H: h, Len: len(b)}
}

func (m *nodeMem) release(f link.Frame) {
	if !m.Free(f.H) {
		m.t.Fatalf("frame %d released but not live (double free or never allocated)", f.H)
	}
	if f.Len > len(m.Buf(f.H)) {
		m.t.Fatalf("frame %d released with length %d beyond its buffer", f.H, f.Len)
	}
}

func (m *nodeMem) inUse() int { return m.InUse() }

// nodeNet wires nodes' link ports back to back with a fixed delay per
// wire, on a clock stepped by dt; hosts collect what is delivered.
type nodeNet struct {
	t       testing.TB
	mem     *nodeMem
	nodes   []*Node
	peer    map[[2]int][2]int
	delay   map[[2]int]int64
	cut     map[[2]int]bool // frames sent here are held (a dead link)
	held    map[[2]int][]link.Frame
	fly     []netFly
	due     []netFly
	now     int64
	got     map[[2]int][][]byte // (node, host port) → delivered frames (copies)
	drop    func(from [2]int, b []byte) bool
	txCells map[[2]int]int
}

type netFly struct {
	at int64
	to [2]int
	f  link.Frame
}

func newNodeNet(t testing.TB) *nodeNet {
	return &nodeNet{t: t, mem: newNodeMem(t), peer: map[[2]int][2]int{}, delay: map[[2]int]int64{},
		cut: map[[2]int]bool{}, held: map[[2]int][]link.Frame{}, got: map[[2]int][][]byte{}, txCells: map[[2]int]int{}}
}

func (n *nodeNet) add(cfg NodeConfig) int {
	n.t.Helper()
	cfg.Mem = n.mem
	if cfg.Rng == nil {
		cfg.Rng = rand.New(rand.NewPCG(uint64(cfg.Self), 1))
	}
	nd, err := NewNode(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	n.nodes = append(n.nodes, nd)
	return len(n.nodes) - 1
}

func (n *nodeNet) wire(a, la, b, lb int, d int64) {
	n.peer[[2]int{a, la}] = [2]int{b, lb}
	n.peer[[2]int{b, lb}] = [2]int{a, la}
	n.delay[[2]int{a, la}], n.delay[[2]int{b, lb}] = d, d
}

// drain processes node i's Output.
func (n *nodeNet) drain(i int) {
	nd := n.nodes[i]
	for l := range nd.Out.Link {
		o := &nd.Out.Link[l]
		for _, list := range [][]link.Frame{o.Ctrl, o.Data} {
			for _, f := range list {
				from := [2]int{i, l}
				to, ok := n.peer[from]
				b := n.mem.Bytes(f.H, f.Len)
				if t, _ := frameTypeOf(b); t == 9 {
					n.txCells[from]++
				}
				switch {
				case n.cut[from]:
					n.held[from] = append(n.held[from], f)
				case !ok || n.drop != nil && n.drop(from, b):
					n.mem.release(f)
				default:
					n.fly = append(n.fly, netFly{at: n.now + n.delay[from], to: to, f: f})
				}
			}
		}
	}
	for p, list := range nd.Out.Deliver {
		for _, f := range list {
			k := [2]int{i, p}
			if n.got != nil {
				n.got[k] = append(n.got[k], append([]byte(nil), n.mem.Bytes(f.H, f.Len)...))
			}
			n.mem.release(f)
		}
	}
	for _, f := range nd.Out.Free {
		n.mem.release(f)
	}
	nd.Out.Reset()
}

func frameTypeOf(b []byte) (int, bool) {
	if len(b) < 16 || binary.BigEndian.Uint16(b[12:]) != 0x88B5 {
		return 0, false
	}
	return int(b[14] & 0x0f), true
}

// step advances the clock by dt: arrivals due, then every node's Poll.
func (n *nodeNet) step(dt int64) {
	n.now += dt
	due := n.due[:0]
	k := 0
	for _, fl := range n.fly {
		if fl.at > n.now {
			n.fly[k] = fl
			k++
		} else {
			due = append(due, fl)
		}
	}
	n.fly = n.fly[:k]
	for _, fl := range due {
		n.nodes[fl.to[0]].LinkRx(n.now, fl.to[1], fl.f)
		n.drain(fl.to[0])
	}
	n.due = due
	for i, nd := range n.nodes {
		nd.Poll(n.now)
		n.drain(i)
	}
}

func (n *nodeNet) run(d, dt int64) {
	for end := n.now + d; n.now < end; {
		n.step(dt)
	}
}

// host hands a frame to node i's host port p.
func (n *nodeNet) host(i, p int, b []byte) {
	n.nodes[i].HostRx(n.now, p, n.mem.put(b))
	n.drain(i)
}

// hostMAC is the MAC of host h.
func hostMAC(h int) [6]byte { return [6]byte{0x02, 0, 0, 0, byte(h >> 8), byte(h)} }

// hostFrame is an Ethernet/IPv4/UDP frame of n bytes from host src to host
// dst carrying (flow, seq) after the UDP header; the UDP source port is
// 1000+flow.
func hostFrame(src, dst, flow, seq, n int) []byte {
	n = max(n, 60)
	b := make([]byte, n)
	d, s := hostMAC(dst), hostMAC(src)
	copy(b[0:], d[:])
	copy(b[6:], s[:])
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(min(n-14, 0xFFFF)))
	ip[8], ip[9] = 64, 17
	copy(ip[12:], []byte{10, 0, byte(src >> 8), byte(src)})
	copy(ip[16:], []byte{10, 0, byte(dst >> 8), byte(dst)})
	udp := ip[20:]
	binary.BigEndian.PutUint16(udp[0:], uint16(1000+flow))
	binary.BigEndian.PutUint16(udp[2:], 9)
	binary.BigEndian.PutUint32(udp[8:], uint32(flow))
	binary.BigEndian.PutUint32(udp[12:], uint32(seq))
	for i := 58; i < n; i++ {
		b[i] = byte(seq + i)
	}
	return b
}

func frameSeq(b []byte) (flow, seq int) {
	return int(binary.BigEndian.Uint32(b[42:])), int(binary.BigEndian.Uint32(b[46:]))
}

// checkInOrder checks that got holds frames of flow with seqs 0..want-1,
// each once and in order.
// byFlow sorts delivered frames by the flow number frameSeq reads (below n).
func byFlow(got [][]byte, n int) [][][]byte {
	perFlow := make([][][]byte, n)
	for _, b := range got {
		f, _ := frameSeq(b)
		perFlow[f] = append(perFlow[f], b)
	}
	return perFlow
}

func checkInOrder(t testing.TB, got [][]byte, want int, what string) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("%s: %d frames delivered, want %d", what, len(got), want)
	}
	for i, b := range got {
		if _, s := frameSeq(b); s != i {
			t.Fatalf("%s: frame %d carries seq %d", what, i, s)
		}
	}
}

func (n *nodeNet) String() string {
	return fmt.Sprintf("net at %d ns, %d in flight", n.now, len(n.fly))
}
