package cellify

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

var (
	testKey = VOQKey{Dst: 3, Port: 1, Class: 2}
	testSrc = EdgeID(7)
)

// testFrame returns a host frame of n bytes whose first 4 bytes are id and
// whose rest is random.
func testFrame(rng *rand.Rand, id, n int) []byte {
	f := make([]byte, n)
	for i := range f {
		f[i] = byte(rng.Uint32())
	}
	binary.BigEndian.PutUint32(f, uint32(id))
	return f
}

// cutAll cuts everything the packer holds in grants of random size (at least
// cellPayload/2 so that a grant spans cells) and returns copies of the cells.
func cutAll(t testing.TB, rng *rand.Rand, p *Packer, cellPayload int) [][]byte {
	var cells [][]byte
	buf := make([]byte, CellPayloadOffset+cellPayload+64)
	for p.Backlog() > 0 {
		budget := cellPayload/2 + rng.IntN(8*cellPayload)
		for budget > 0 {
			before := p.Backlog()
			n, took := p.Cut(buf, budget, cellPayload)
			if n == 0 {
				break
			}
			if took <= 0 || took > budget || took > cellPayload || p.Backlog() != before-took {
				t.Fatalf("cut took %d of budget %d, cell payload %d, backlog %d -> %d", took, budget, cellPayload, before, p.Backlog())
			}
			if n != CellFrameLen(took) {
				t.Fatalf("cut frame length %d for %d payload bytes", n, took)
			}
			budget -= took
			cells = append(cells, bytes.Clone(buf[:n]))
		}
	}
	return cells
}

// collector gathers delivered frames.
type collector struct {
	frames [][]byte
	keys   []StreamKey
}

func (c *collector) deliver(k StreamKey, f []byte) {
	c.frames = append(c.frames, bytes.Clone(f))
	c.keys = append(c.keys, k)
}

// shuffleBounded moves each cell at most d places and repeats a share
// dupProb of them, each copy arriving at most d+1 places after the original.
func shuffleBounded(rng *rand.Rand, cells [][]byte, d int, dupProb float64) [][]byte {
	type keyed struct {
		k float64
		c []byte
	}
	ks := make([]keyed, len(cells))
	for i, c := range cells {
		ks[i] = keyed{float64(i) + rng.Float64()*float64(d), c}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.k, b.k) })
	res := make([][]byte, len(ks))
	for i := range ks {
		res[i] = ks[i].c
	}
	for i := 0; i < len(res); i++ {
		if rng.Float64() < dupProb {
			at := min(len(res), i+1+rng.IntN(d+1))
			res = slices.Insert(res, at, res[i])
			i++
		}
	}
	return res
}

func checkFrames(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("delivered %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("frame %d: got %d bytes (id %d), want %d bytes (id %d)", i, len(got[i]),
				binary.BigEndian.Uint32(got[i]), len(want[i]), binary.BigEndian.Uint32(want[i]))
		}
	}
}

// TestPackRoundTrip: random frames 60..9000 B, cell payloads from 64 up,
// packing on and off, cells in a random order with duplicates: every frame
// comes out exactly once, in order, with its bytes.
func TestPackRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 24 {
		packing := trial%2 == 0
		cellPayload := 64 + rng.IntN(3000)
		if trial%3 == 0 {
			cellPayload = 64 + rng.IntN(64)
		}
		disorder := []int{0, 1, 8, 1 << 30}[trial%4]
		t.Run(fmt.Sprintf("packing=%v/cell=%d/disorder=%d", packing, cellPayload, disorder), func(t *testing.T) {
			p, err := NewPacker(testSrc, testKey, 1<<20, 4, packing)
			if err != nil {
				t.Fatal(err)
			}
			wrap := trial%5 == 4
			if wrap {
				p.seq = 1<<32 - 100 // the stream's cell seq wraps
			}
			start := p.NextSeq()
			var want [][]byte
			for i := 0; p.Backlog() < 600<<10; i++ {
				f := testFrame(rng, i, 60+rng.IntN(9000-60+1))
				if !p.Enqueue(f) {
					t.Fatalf("enqueue %d refused at backlog %d", i, p.Backlog())
				}
				want = append(want, f)
			}
			if p.Enqueued() != uint64(p.Backlog()) || p.Frames() != uint64(len(want)) {
				t.Fatalf("enqueued %d bytes %d frames, backlog %d, %d frames", p.Enqueued(), p.Frames(), p.Backlog(), len(want))
			}
			cells := cutAll(t, rng, p, cellPayload)
			if p.Sent() != p.Enqueued() {
				t.Fatalf("sent %d of %d bytes", p.Sent(), p.Enqueued())
			}
			checkCells(t, cells, start, packing, cellPayload, len(want))
			arrive := cells
			window := 4
			if disorder > 0 {
				d := min(disorder, len(cells))
				arrive = shuffleBounded(rng, cells, d, 0.1)
				window = 4*d + 4
			}
			if wrap {
				// A new stream starts at its first cell: let that be the
				// stream's first.
				i := slices.IndexFunc(arrive, func(c []byte) bool { return bytes.Equal(c, cells[0]) })
				arrive = append([][]byte{cells[0]}, slices.Delete(slices.Clone(arrive), i, i+1)...)
			}
			var c collector
			r, err := NewReassembler(ReasmConfig{Window: window, MaxPayload: cellPayload, Self: testKey.Dst}, c.deliver)
			if err != nil {
				t.Fatal(err)
			}
			for _, cell := range arrive {
				r.Receive(0, cell)
			}
			checkFrames(t, c.frames, want)
			st := r.Stats()
			if st.Duplicates != uint64(len(arrive)-len(cells)) || st.Cells != uint64(len(cells)) || st.Buffered != 0 ||
				st.DiscardedRecords+st.Malformed+st.Inconsistent+st.OutOfWindow+st.BadCells != 0 {
				t.Fatalf("stats %+v for %d cells, %d arrivals", st, len(cells), len(arrive))
			}
			for _, k := range c.keys {
				if k != (StreamKey{Src: testSrc, Port: testKey.Port, Class: testKey.Class}) {
					t.Fatalf("delivered on stream %+v", k)
				}
			}
		})
	}
}

// checkCells checks the cells' headers against the record layout they were
// cut from: seqs count from start, first-record offsets and record numbers match
// the records' boundaries, and with packing off no cell holds two records.
func checkCells(t *testing.T, cells [][]byte, start uint32, packing bool, cellPayload, frames int) {
	t.Helper()
	// Rebuild the stream and the record starts from the payloads.
	var stream []byte
	var hdrs []CellHeader
	for i, c := range cells {
		h, err := ParseCell(c)
		if err != nil {
			t.Fatalf("cell %d: %v", i, err)
		}
		if h.Seq != start+uint32(i) || h.Dst != testKey.Dst || h.Src != testSrc || h.Port != testKey.Port || h.Class != testKey.Class || h.Hops != 4 {
			t.Fatalf("cell %d header %+v", i, h)
		}
		if int(h.Len) > cellPayload {
			t.Fatalf("cell %d payload %d > %d", i, h.Len, cellPayload)
		}
		hdrs = append(hdrs, h)
		stream = append(stream, c[CellPayloadOffset:CellPayloadOffset+int(h.Len)]...)
	}
	starts := map[int]int{} // stream offset -> record number
	n := 0
	for off := 0; off < len(stream); n++ {
		starts[off] = n
		off += RecordHeaderLen + int(binary.BigEndian.Uint16(stream[off:]))
	}
	if n != frames {
		t.Fatalf("stream holds %d records, want %d", n, frames)
	}
	off, rec := 0, 0
	for i, h := range hdrs {
		first := NoRecord
		for j := 0; j < int(h.Len); j++ {
			if r, ok := starts[off+j]; ok {
				if first == NoRecord {
					first = j
				}
				if !packing && j != 0 {
					t.Fatalf("cell %d: packing off, a second record starts at %d", i, j)
				}
				_ = r
			}
		}
		if r, ok := starts[off]; ok {
			rec = r
		}
		if int(h.First) != first || h.RecNo != uint16(rec) {
			t.Fatalf("cell %d: first %d recNo %d, want %d %d", i, h.First, h.RecNo, first, rec)
		}
		off += int(h.Len)
		// The record holding the next cell's byte 0.
		for k := off; k >= 0; k-- {
			if r, ok := starts[k]; ok {
				rec = r
				break
			}
		}
	}
}

// TestPackBurst: a grant is cut as one burst of full cells and a short last
// one, with packing on; with packing off every record's last cell is short.
func TestPackBurst(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, packing := range []bool{true, false} {
		p, _ := NewPacker(testSrc, testKey, 0, 4, packing)
		sizes := []int{100, 70, 1000, 64, 500}
		total := 0
		for i, s := range sizes {
			p.Enqueue(testFrame(rng, i, s))
			total += RecordHeaderLen + s
		}
		const cp = 256
		grant := total - 50
		buf := make([]byte, 2048)
		var lens []int
		for budget := grant; ; {
			_, took := p.Cut(buf, budget, cp)
			if took == 0 {
				break
			}
			budget -= took
			lens = append(lens, took)
		}
		var want []int
		if packing {
			for g := grant; g > 0; g -= cp {
				want = append(want, min(g, cp))
			}
		} else {
			g := grant
			for _, s := range sizes {
				for r := RecordHeaderLen + s; r > 0 && g > 0; {
					k := min(r, cp, g)
					want = append(want, k)
					r -= k
					g -= k
				}
			}
		}
		if fmt.Sprint(lens) != fmt.Sprint(want) {
			t.Errorf("packing=%v: cells %v, want %v", packing, lens, want)
		}
		if p.Backlog() != 50 || p.Sent() != uint64(grant) {
			t.Errorf("packing=%v: backlog %d sent %d after the grant", packing, p.Backlog(), p.Sent())
		}
	}
}

// TestPackRefuse: Enqueue refuses frames out of the record bounds and frames
// that do not fit the ring, and takes them again once cells made room.
func TestPackRefuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ring := RecordHeaderLen + MaxRecordFrame + 100
	p, _ := NewPacker(testSrc, testKey, ring, 4, true)
	if p.Enqueue(make([]byte, MinRecordFrame-1)) || p.Enqueue(make([]byte, MaxRecordFrame+1)) {
		t.Fatal("frame outside the record bounds accepted")
	}
	if !p.Enqueue(testFrame(rng, 0, MaxRecordFrame)) {
		t.Fatal("largest frame refused by an empty ring")
	}
	if !p.Enqueue(testFrame(rng, 1, 98)) || p.Backlog() != ring {
		t.Fatalf("exact fit refused, backlog %d of %d", p.Backlog(), ring)
	}
	if p.Enqueue(testFrame(rng, 2, MinRecordFrame)) {
		t.Fatal("enqueue into a full ring accepted")
	}
	buf := make([]byte, 4096)
	if _, took := p.Cut(buf, 1000, 1000); took != 1000 || !p.Enqueue(testFrame(rng, 3, 998-RecordHeaderLen+2)) {
		t.Fatal("room made by a cut not reused")
	}
	if _, err := NewPacker(0, testKey, 0, 4, true); err == nil {
		t.Fatal("packer with source edge 0 accepted")
	}
	if _, err := NewPacker(testSrc, testKey, 0, 0, true); err == nil {
		t.Fatal("packer with 0 hops accepted")
	}
	if n, took := p.Cut(make([]byte, CellPayloadOffset), 100, 100); n != 0 || took != 0 {
		t.Fatal("cut into a frame without room for payload")
	}
}

// EnqueueParts makes one record of its two parts, wrapping the ring, under
// the same bounds as Enqueue.
func TestPackParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	ring := RecordHeaderLen + MaxRecordFrame + 333
	p, _ := NewPacker(testSrc, testKey, ring, 4, true)
	var c collector
	r, err := NewReassembler(ReasmConfig{}, c.deliver)
	if err != nil {
		t.Fatal(err)
	}
	if p.EnqueueParts([]byte{1}, make([]byte, MaxRecordFrame)) || p.EnqueueParts([]byte{1}, make([]byte, MinRecordFrame-2)) {
		t.Fatal("parts outside the record bounds accepted")
	}
	var want [][]byte
	buf := make([]byte, 2048)
	for i := range 200 {
		head := []byte{byte(i)}
		f := testFrame(rng, i, MinRecordFrame-1+rng.IntN(3000))
		if !p.EnqueueParts(head, f) {
			t.Fatalf("record %d refused, backlog %d", i, p.Backlog())
		}
		want = append(want, append(head, f...))
		for p.Backlog() > 0 {
			n, _ := p.Cut(buf, 1<<20, 1000)
			r.Receive(0, buf[:n])
		}
	}
	if len(c.frames) != len(want) {
		t.Fatalf("%d records out of %d", len(c.frames), len(want))
	}
	for i := range want {
		if !bytes.Equal(c.frames[i], want[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestPackEmptyRingRestarts: a ring cut empty takes its next record at its
// start, so a VOQ of short messages, each cut as it comes, keeps writing
// the same few bytes of its ring instead of its whole 2 MiB, every page of
// which the first pass touched for the first time on a frame's path. The
// records still come out whole and in order.
func TestPackEmptyRingRestarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	p, _ := NewPacker(testSrc, testKey, 64<<10, 4, true)
	buf := make([]byte, 2048)
	var got [][]byte
	r, err := NewReassembler(ReasmConfig{}, func(_ StreamKey, f []byte) { got = append(got, bytes.Clone(f)) })
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	for i := range 1000 {
		f := testFrame(rng, i, 100+i%50)
		sent = append(sent, f)
		if !p.Enqueue(f) {
			t.Fatalf("frame %d refused", i)
		}
		if i%3 == 2 { // now and then two records wait together
			continue
		}
		for {
			n, took := p.Cut(buf, 1<<20, 1400)
			if took == 0 {
				break
			}
			r.Receive(0, buf[:n])
		}
	}
	for i, b := range p.ring[2*(RecordHeaderLen+150):] {
		if b != 0 {
			t.Fatalf("ring byte %d written: the records went on through the ring", 2*(RecordHeaderLen+150)+i)
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("%d records delivered of %d", len(got), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(got[i], sent[i]) {
			t.Fatalf("record %d differs", i)
		}
	}
}
