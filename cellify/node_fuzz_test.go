package cellify

import (
	"testing"

	"github.com/linkfabric/linkfabric/internal/fuzzops"
	"github.com/linkfabric/linkfabric/link"
)

// fuzzOps reads a fuzz input as a sequence of operations.
type fuzzOps struct{ fuzzops.Ops }

// frame makes a frame of one of the families from the input: raw bytes, or
// a well-formed cell, credit or REACH frame with fields and payload from
// the input (so that decoding succeeds and the node's logic is explored),
// possibly corrupted afterwards.
func (o *fuzzOps) frame() []byte {
	kind := o.U8()
	n := int(o.U16() % 2500)
	body := o.Bytes(n)
	b := make([]byte, 20000)
	var l int
	switch kind % 5 {
	case 0:
		return append([]byte(nil), body...)
	case 1, 2:
		h := CellHeader{Dst: EdgeID(1 + o.U8()%3), Src: EdgeID(1 + o.U8()%3), Class: Class(o.U8() % Classes),
			FCI: o.U8()&1 == 1, Hops: 1 + o.U8()%MaxHops, Port: o.U8() % 4, Seq: uint32(o.U8() % 16),
			First: o.U16(), RecNo: uint16(o.U8() % 8), Entropy: o.U8()}
		if h.First != NoRecord && len(body) > 0 {
			h.First %= uint16(len(body))
		}
		if len(body) == 0 {
			body = []byte{0}
		}
		var err error
		if l, err = PutCell(b, &h, body); err != nil {
			return append([]byte(nil), body...)
		}
	case 3:
		e := []CreditEntry{{Port: o.U8() % 4, Class: Class(o.U8() % Classes), Total: uint64(o.U16()) << (o.U8() % 24)}}
		var err error
		if l, err = PutCredit(b, o.U8()&1 == 1, EdgeID(1+o.U8()%3), EdgeID(1+o.U8()%3), e); err != nil {
			return append([]byte(nil), body...)
		}
	case 4:
		bm := make([]byte, 32)
		copy(bm, body)
		bm[0] &^= 1
		r := Reach{Node: EdgeID(1 + o.U8()%200), Role: Role(1 + o.U8()%3), Faulty: o.U8()&1 == 1, Edges: 256, Bitmap: bm}
		var err error
		if l, err = PutReach(b, &r); err != nil {
			return append([]byte(nil), body...)
		}
	}
	f := b[:l]
	if c := o.U8(); c < 16 && len(f) > 0 { // corrupt one byte
		f[int(o.U16())%len(f)] ^= 1 << (c % 8)
	}
	return f
}

// FuzzNode feeds arbitrary frames and events to the edges and the fabric
// node of a small net (edges 1 and 2 with two host ports, a fabric node
// 100 between them, and a direct link): no panic, every frame comes back
// exactly once (the test memory fails on a double or unknown free), and
// after each step every buffer in use is one the net holds in flight.
func FuzzNode(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 60, 1, 2, 3})
	f.Add([]byte{1, 0, 1, 1, 0, 80, 2, 0, 0, 5, 1, 0, 0xff, 0xff, 0, 0})
	f.Add([]byte{3, 1, 0, 3, 0, 0, 0, 1, 0, 0, 0, 1, 1, 2, 6, 1, 2, 0})
	f.Add([]byte{2, 0, 0, 1, 2, 0, 100, 4, 0, 1, 0, 5, 7, 0, 0, 2, 0, 3, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := newNodeNet(t)
		for i := range 2 {
			c := testEdge(EdgeID(i+1), 2, 2)
			c.Reasm.Timeout = 50 * nodeUs
			n.add(c)
		}
		n.add(testFabric(100, 2))
		n.wire(0, 0, 2, 0, nodeUs)
		n.wire(1, 0, 2, 1, nodeUs)
		n.wire(0, 1, 1, 1, 3*nodeUs)
		n.run(100*nodeUs, nodeUs)
		o := &fuzzOps{fuzzops.Ops{B: data}}
		for step := 0; o.More() && step < 200; step++ {
			op := o.U8()
			i := int(o.U8() % 3)
			nd := n.nodes[i]
			switch op % 9 {
			case 0, 1:
				nd.LinkRx(n.now, int(o.U8()%3), n.mem.put(o.frame()))
			case 2:
				fr := o.frame()
				if len(fr) == 0 {
					fr = []byte{0}
				}
				if len(fr) >= 12 {
					m := hostMAC(int(o.U8() % 4))
					copy(fr[0:6], m[:])
				}
				nd.HostRx(n.now, int(o.U8()%3), n.mem.put(fr))
			case 3:
				var fs []link.Frame
				for range o.U8() % 4 {
					fs = append(fs, n.mem.put(o.frame()))
				}
				nd.Respray(n.now, int(o.U8()%3)-1, fs)
			case 4:
				nd.SetLinkUp(n.now, int(o.U8()%3), o.U8()&1 == 1)
			case 5:
				nd.SetLoss(n.now, int(o.U8()%3), float64(o.U8())/100)
			case 6:
				nd.SetEgressQueue(n.now, int(o.U8()%3), int(o.U16())<<4)
				nd.SetLinkBacklog(int(o.U8()%3), int(o.U16())<<4)
			case 7:
				nd.Learn(n.now, hostMAC(int(o.U8()%4)), EdgeID(o.U8()%4), o.U8()%3)
			case 8:
				n.run(int64(o.U8())*nodeUs, nodeUs)
			}
			n.drain(i)
			if in := n.mem.inUse(); in != len(n.fly) {
				t.Fatalf("step %d: %d buffers in use, %d frames in flight", step, in, len(n.fly))
			}
		}
		n.run(2000*nodeUs, 10*nodeUs)
		if in := n.mem.inUse(); in != len(n.fly) {
			t.Fatalf("at the end: %d buffers in use, %d frames in flight", in, len(n.fly))
		}
	})
}
