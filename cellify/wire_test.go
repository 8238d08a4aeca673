package cellify

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/link/seqhdr"
)

func randCell(rng *rand.Rand) (CellHeader, []byte) {
	n := 1 + rng.IntN(300)
	first := uint16(NoRecord)
	if rng.IntN(3) > 0 {
		first = uint16(rng.IntN(n))
	}
	h := CellHeader{
		Dst: EdgeID(1 + rng.IntN(0xFFFF)), Src: EdgeID(1 + rng.IntN(0xFFFF)),
		Class: Class(rng.IntN(Classes)), FCI: rng.IntN(2) == 0, Hops: uint8(1 + rng.IntN(MaxHops)),
		Port: uint8(rng.Uint32()), Seq: rng.Uint32(), First: first, RecNo: uint16(rng.Uint32()),
		Entropy: uint8(rng.Uint32()), Epoch: uint16(rng.Uint32()),
	}
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return h, p
}

func TestCellRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		h, p := randCell(rng)
		f := make([]byte, 400)
		for i := range f {
			f[i] = 0xAA // PutCell must write what it owns
		}
		n, err := PutCell(f, &h, p)
		if err != nil {
			t.Fatal(err)
		}
		if n != max(CellPayloadOffset+len(p), seqhdr.MinFrameLen) || int(h.Len) != len(p) {
			t.Fatalf("length %d for %d payload bytes", n, len(p))
		}
		if !bytes.Equal(f[15:Off], make([]byte, 7)) || !bytes.Equal(f[CellPayloadOffset+len(p):n], make([]byte, n-CellPayloadOffset-len(p))) {
			t.Fatalf("link bytes or padding not zero: %x", f[:n])
		}
		if typ, ok := seqhdr.FrameType(f); !ok || typ != seqhdr.TypeCell {
			t.Fatalf("frame type %v %v", typ, ok)
		}
		g, err := ParseCell(f[:n])
		if err != nil || g != h {
			t.Fatalf("parsed %+v, %v; want %+v", g, err, h)
		}
		if !bytes.Equal(f[CellPayloadOffset:CellPayloadOffset+int(g.Len)], p) {
			t.Fatal("payload differs")
		}
		if g.Key() != (StreamKey{Src: h.Src, Port: h.Port, Class: h.Class}) {
			t.Fatalf("key %+v", g.Key())
		}
	}
}

// TestCellChecksum: every 1- and 2-bit error in the 20 header bytes is
// caught by the CRC-8.
func TestCellChecksum(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for range 4 {
		h, p := randCell(rng)
		f := make([]byte, 400)
		n, _ := PutCell(f, &h, p)
		f = f[:n]
		const bits = CellHeaderLen * 8
		flip := func(i int) { f[Off+i/8] ^= 0x80 >> (i % 8) }
		for i := range bits {
			flip(i)
			if _, err := ParseCell(f); !errors.Is(err, ErrChecksum) {
				t.Fatalf("bit %d flipped: %v", i, err)
			}
			for j := i + 1; j < bits; j++ {
				flip(j)
				if _, err := ParseCell(f); !errors.Is(err, ErrChecksum) {
					t.Fatalf("bits %d and %d flipped: %v", i, j, err)
				}
				flip(j)
			}
			flip(i)
		}
		if _, err := ParseCell(f); err != nil {
			t.Fatal(err)
		}
	}
}

// fixSum recomputes a cell's checksum after a field was changed.
func fixSum(f []byte) { f[Off+cellSumAt] = crc8(f[Off : Off+cellSumAt]) }

func TestCellRejects(t *testing.T) {
	h := CellHeader{Dst: 1, Src: 2, Class: 3, Hops: 4, Port: 5, Seq: 6, First: 10, RecNo: 7}
	good := make([]byte, 200)
	n, err := PutCell(good, &h, make([]byte, 100))
	if err != nil {
		t.Fatal(err)
	}
	good = good[:n]
	cases := []struct {
		name string
		mod  func([]byte) []byte
		err  error
	}{
		{"short", func(f []byte) []byte { return f[:CellPayloadOffset-1] }, ErrShort},
		{"payload beyond frame", func(f []byte) []byte { return f[:CellPayloadOffset+99] }, ErrLength},
		{"not a link frame", func(f []byte) []byte { f[12] = 0x08; return f }, ErrType},
		{"other type", func(f []byte) []byte { f[14] = byte(seqhdr.TypeData); return f }, ErrType},
		{"version", func(f []byte) []byte { f[14] |= 0x10; return f }, ErrType},
		{"checksum", func(f []byte) []byte { f[Off+cellSumAt]++; return f }, ErrChecksum},
		{"hops 0", func(f []byte) []byte { f[Off+4] &^= 0x0f; fixSum(f); return f }, ErrHops},
		{"length 0", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off+10:], 0); fixSum(f); return f }, ErrLength},
		{"length beyond frame", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off+10:], 101); fixSum(f); return f }, ErrLength},
		{"first = length", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off+12:], 100); fixSum(f); return f }, ErrFirst},
		{"first beyond", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off+12:], 0xFFFE); fixSum(f); return f }, ErrFirst},
		{"dst 0", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off:], 0); fixSum(f); return f }, ErrEdge},
		{"src 0", func(f []byte) []byte { binary.BigEndian.PutUint16(f[Off+2:], 0); fixSum(f); return f }, ErrEdge},
	}
	for _, c := range cases {
		f := c.mod(bytes.Clone(good))
		if _, err := ParseCell(f); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	// The link layer's bytes do not matter.
	f := bytes.Clone(good)
	for i := 15; i < Off; i++ {
		f[i] = byte(i)
	}
	if g, err := ParseCell(f); err != nil || g != h {
		t.Fatalf("with link bytes set: %+v %v", g, err)
	}
	// The encoder refuses what the decoder would.
	for _, bad := range []CellHeader{
		{Dst: 1, Src: 2, Class: Classes, Hops: 1, First: NoRecord},
		{Dst: 1, Src: 2, Hops: 0, First: NoRecord},
		{Dst: 1, Src: 2, Hops: MaxHops + 1, First: NoRecord},
		{Dst: 0, Src: 2, Hops: 1, First: NoRecord},
		{Dst: 1, Src: 2, Hops: 1, First: 5},
	} {
		if _, err := PutCell(make([]byte, 100), &bad, make([]byte, 5)); err == nil {
			t.Errorf("PutCell accepted %+v", bad)
		}
	}
	if _, err := PutCell(make([]byte, 100), &h, make([]byte, 61)); !errors.Is(err, ErrShort) {
		t.Errorf("PutCell into a short frame: %v", err)
	}
}

func TestCellInPlace(t *testing.T) {
	h := CellHeader{Dst: 1, Src: 2, Class: 7, Hops: 3, Port: 5, Seq: 6, First: NoRecord}
	f := make([]byte, 100)
	n, _ := PutCell(f, &h, make([]byte, 30))
	f = f[:n]
	for i := 15; i < Off; i++ {
		f[i] = byte(i) // as if LinkGuardian had sequenced it
	}
	for want := uint8(2); want >= 1; want-- {
		if !DecHops(f) {
			t.Fatalf("DecHops refused at %d hops", want+1)
		}
		g, err := ParseCell(f)
		if err != nil || g.Hops != want || g.Class != 7 || g.FCI {
			t.Fatalf("after DecHops: %+v %v", g, err)
		}
	}
	before := bytes.Clone(f)
	if DecHops(f) || !bytes.Equal(f, before) {
		t.Fatal("DecHops took a cell's last hop or changed the frame")
	}
	if !SetFCI(f) || !SetFCI(f) {
		t.Fatal("SetFCI refused")
	}
	g, err := ParseCell(f)
	if err != nil || !g.FCI || g.Hops != 1 || g.Class != 7 {
		t.Fatalf("after SetFCI: %+v %v", g, err)
	}
	if !SetEntropy(f, 0xA5) {
		t.Fatal("SetEntropy refused")
	}
	g, err = ParseCell(f)
	if err != nil || g.Entropy != 0xA5 || !g.FCI || g.Hops != 1 || g.Seq != 6 {
		t.Fatalf("after SetEntropy: %+v %v", g, err)
	}
	if !bytes.Equal(f[15:Off], before[15:Off]) {
		t.Fatal("in-place helpers touched the link layer's bytes")
	}
	if DecHops(f[:30]) || SetFCI(f[:30]) || SetEntropy(f[:30], 1) {
		t.Fatal("in-place helpers accepted a short frame")
	}
}

func TestCreditRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 2, 3, 7, 50, MaxCreditEntries} {
		es := make([]CreditEntry, n)
		for i := range es {
			es[i] = CreditEntry{Port: uint8(rng.Uint32()), Class: Class(rng.IntN(Classes)), Total: rng.Uint64()}
		}
		grant := n%2 == 0
		f := make([]byte, 2000)
		ep := CreditEpochs{Src: uint16(rng.Uint32()), Dst: uint16(rng.Uint32())}
		set := CreditSettings{Lead: rng.Uint32(), Ahead: rng.Uint32()}
		l, err := PutCreditEpochs(f, grant, 4, 9, ep, set, es)
		if err != nil || l != CreditFrameLen(n) || l < seqhdr.MinFrameLen {
			t.Fatalf("n=%d: length %d, %v", n, l, err)
		}
		c, err := ParseCredit(f[:l])
		if err != nil || c.Grant != grant || c.Src != 4 || c.Dst != 9 || c.N != n || c.Epochs != ep || c.Settings != set {
			t.Fatalf("n=%d: %+v %v", n, c, err)
		}
		for i := range n {
			if c.Entry(i) != es[i] {
				t.Fatalf("entry %d: %+v, want %+v", i, c.Entry(i), es[i])
			}
		}
		// Any bit flipped in the body is caught.
		for i := Off; i < Off+creditHeadLen+n*CreditEntryLen; i += 3 {
			f[i] ^= 4
			if _, err := ParseCredit(f[:l]); err == nil {
				t.Fatalf("n=%d: flip at %d accepted", n, i)
			}
			f[i] ^= 4
		}
		if _, err := ParseCredit(f[:Off+creditHeadLen+n*CreditEntryLen-1]); err == nil {
			t.Fatalf("n=%d: truncated frame accepted", n)
		}
	}
	es := []CreditEntry{{Port: 1, Class: 1, Total: 5}}
	for name, put := range map[string]func() (int, error){
		"no entries": func() (int, error) { return PutCredit(make([]byte, 100), false, 1, 2, nil) },
		"too many": func() (int, error) {
			return PutCredit(make([]byte, 4000), false, 1, 2, make([]CreditEntry, MaxCreditEntries+1))
		},
		"edge 0": func() (int, error) { return PutCredit(make([]byte, 100), false, 0, 2, es) },
		"class":  func() (int, error) { return PutCredit(make([]byte, 100), false, 1, 2, []CreditEntry{{Class: Classes}}) },
		"short":  func() (int, error) { return PutCredit(make([]byte, 59), false, 1, 2, es) },
	} {
		if _, err := put(); err == nil {
			t.Errorf("PutCredit %s accepted", name)
		}
	}
	f := make([]byte, 100)
	l, _ := PutCredit(f, false, 1, 2, es)
	f[Off+creditHeadLen+1] = Classes // class 8 with a valid checksum
	binary.BigEndian.PutUint32(f[Off+creditSumAt:], sum2(f[Off:Off+creditSumAt], f[Off+creditHeadLen:Off+creditHeadLen+CreditEntryLen]))
	if _, err := ParseCredit(f[:l]); !errors.Is(err, ErrClass) {
		t.Errorf("class 8: %v", err)
	}
	f[14] = byte(seqhdr.TypeCell)
	if _, err := ParseCredit(f[:l]); !errors.Is(err, ErrType) {
		t.Errorf("cell type: %v", err)
	}
}

func TestReachRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, edges := range []int{0, 1, 2, 7, 8, 9, 100, MaxReachEdges} {
		bm := make([]byte, (edges+7)/8)
		set := map[EdgeID]bool{}
		for e := 1; e < edges; e++ {
			if rng.IntN(2) == 0 {
				bm[e/8] |= 1 << (e % 8)
				set[EdgeID(e)] = true
			}
		}
		r := Reach{Node: 5, Role: RoleFabric, Faulty: edges%2 == 1, Seq: rng.Uint32(), Edges: edges, Bitmap: bm}
		f := make([]byte, 300)
		l, err := PutReach(f, &r)
		if err != nil || l != ReachFrameLen(edges, false) {
			t.Fatalf("edges=%d: %d %v", edges, l, err)
		}
		g, err := ParseReach(f[:l])
		if err != nil || g.Node != 5 || g.Role != RoleFabric || g.Faulty != r.Faulty || g.Seq != r.Seq || g.Edges != edges || !bytes.Equal(g.Bitmap, bm) {
			t.Fatalf("edges=%d: %+v %v", edges, g, err)
		}
		for e := range EdgeID(MaxReachEdges + 8) {
			if g.Reachable(e) != set[e] {
				t.Fatalf("edges=%d: reachable(%d) = %v", edges, e, g.Reachable(e))
			}
		}
		if _, err := ParseReach(f[:Off+reachHeadLen+len(bm)-1]); len(bm) > 0 && err == nil {
			t.Fatalf("edges=%d: truncated frame accepted", edges)
		}
	}
	for _, bad := range []Reach{
		{Node: 0, Role: RoleEdge},
		{Node: 1, Role: 0},
		{Node: 1, Role: MaxRole + 1},
		{Node: 1, Role: RoleEdge, Edges: MaxReachEdges + 1, Bitmap: make([]byte, 200)},
		{Node: 1, Role: RoleEdge, Edges: 8, Bitmap: []byte{1}},        // edge 0
		{Node: 1, Role: RoleEdge, Edges: 5, Bitmap: []byte{0x20}},     // edge 5 beyond
		{Node: 1, Role: RoleEdge, Edges: 16, Bitmap: []byte{2}},       // bitmap too short
		{Node: 1, Role: RoleEdge, Edges: 12, Bitmap: []byte{0, 0x10}}, // edge 12 beyond
	} {
		if _, err := PutReach(make([]byte, 300), &bad); err == nil {
			t.Errorf("PutReach accepted %+v", bad)
		}
	}
	r := Reach{Node: 1, Role: RoleEdge, Edges: 16, Bitmap: []byte{2, 0x80}}
	f := make([]byte, 300)
	l, _ := PutReach(f, &r)
	// Fields out of range under a valid checksum.
	reseal := func(g []byte) []byte {
		end := Off + reachHeadLen + (int(binary.BigEndian.Uint16(g[Off+8:]))+7)/8
		binary.BigEndian.PutUint32(g[Off+reachSumAt:], sum2(g[Off:Off+reachSumAt], g[Off+reachHeadLen:end]))
		return g
	}
	for name, mod := range map[string]func(g []byte){
		"flags":        func(g []byte) { g[Off+3] = 0x10 },
		"role":         func(g []byte) { g[Off+2] = byte(MaxRole + 1) },
		"role 0":       func(g []byte) { g[Off+2] = 0 },
		"edge 0":       func(g []byte) { g[Off+reachHeadLen] |= 1 },
		"beyond edges": func(g []byte) { binary.BigEndian.PutUint16(g[Off+8:], 12) },
		"edges":        func(g []byte) { binary.BigEndian.PutUint16(g[Off+8:], MaxReachEdges+1) },
		"node 0":       func(g []byte) { binary.BigEndian.PutUint16(g[Off:], 0) },
	} {
		g := bytes.Clone(f)
		mod(g)
		reseal(g)
		if _, err := ParseReach(g); !errors.Is(err, ErrField) && !errors.Is(err, ErrEdge) {
			t.Errorf("%s: %v", name, err)
		}
	}
	f[Off+reachHeadLen] ^= 0x04
	if _, err := ParseReach(f[:l]); !errors.Is(err, ErrChecksum) {
		t.Errorf("bitmap flip: %v", err)
	}
}

// Roles carry the tier: a tier-2 fabric node's REACH round-trips as role 3.
func TestReachRoleTier(t *testing.T) {
	for tier := TierEdge; tier <= MaxHops; tier++ {
		r := Reach{Node: 9, Role: RoleOf(tier), Edges: 8, Bitmap: []byte{2}}
		f := make([]byte, 100)
		n, err := PutReach(f, &r)
		if err != nil {
			t.Fatalf("tier %d: %v", tier, err)
		}
		g, err := ParseReach(f[:n])
		if err != nil || g.Role.Tier() != tier {
			t.Fatalf("tier %d: role %d, tier %d, %v", tier, g.Role, g.Role.Tier(), err)
		}
	}
	if RoleOf(TierEdge) != RoleEdge || RoleOf(1) != RoleFabric {
		t.Fatal("RoleOf disagrees with RoleEdge/RoleFabric")
	}
}
