package cellify

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// layout is what the test knows of a cut stream: each cell's stream offset
// and each record's stream byte range.
type layout struct {
	cellOff, cellLen []int
	recOff, recEnd   []int
}

func layoutOf(t *testing.T, cells [][]byte) layout {
	var l layout
	var stream []byte
	for _, c := range cells {
		h, err := ParseCell(c)
		if err != nil {
			t.Fatal(err)
		}
		l.cellOff = append(l.cellOff, len(stream))
		l.cellLen = append(l.cellLen, int(h.Len))
		stream = append(stream, c[CellPayloadOffset:CellPayloadOffset+int(h.Len)]...)
	}
	for off := 0; off < len(stream); {
		end := off + RecordHeaderLen + int(binary.BigEndian.Uint16(stream[off:]))
		l.recOff = append(l.recOff, off)
		l.recEnd = append(l.recEnd, end)
		off = end
	}
	return l
}

// overlap is the length of [a0,a1) ∩ [b0,b1).
func overlap(a0, a1, b0, b1 int) int { return max(0, min(a1, b1)-max(a0, b0)) }

// TestReasmTimeout: cells are dropped in single holes and runs; the rest
// arrive in order or slightly reordered. Every hole is skipped after the
// timeout; exactly the records touching a dropped cell are discarded and
// counted (with the bytes of them that did arrive); every other record is
// delivered once, in order.
func TestReasmTimeout(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 16 {
		packing := trial%2 == 0
		cellPayload := 64 + rng.IntN(600)
		disorder := []int{0, 6}[trial/2%2]
		t.Run(fmt.Sprintf("packing=%v/cell=%d/disorder=%d", packing, cellPayload, disorder), func(t *testing.T) {
			p, _ := NewPacker(testSrc, testKey, 4<<20, 4, packing)
			var frames [][]byte
			for i := range 400 {
				f := testFrame(rng, i, 60+rng.IntN(3000))
				if trial%4 == 3 {
					f = testFrame(rng, i, 60+rng.IntN(60)) // many records per cell
				}
				p.Enqueue(f)
				frames = append(frames, f)
			}
			cells := cutAll(t, rng, p, cellPayload)
			l := layoutOf(t, cells)
			drop := make([]bool, len(cells))
			runs := 0
			for i := 0; i < len(cells)-1; i++ {
				if rng.Float64() < 0.03 {
					runs++
					for k := 1 + rng.IntN(1+3*(trial%3)); k > 0 && i < len(cells)-1; k-- {
						drop[i] = true
						i++
					}
				}
			}
			// Expected: records touching a dropped cell, and their bytes that arrive.
			var want [][]byte
			wantRecs, wantBytes, dropped := 0, 0, 0
			for r := range l.recOff {
				touched, got := false, 0
				for c := range cells {
					o := overlap(l.recOff[r], l.recEnd[r], l.cellOff[c], l.cellOff[c]+l.cellLen[c])
					if o > 0 && drop[c] {
						touched = true
					} else {
						got += o
					}
				}
				if touched {
					wantRecs++
					wantBytes += got
				} else {
					want = append(want, frames[r])
				}
			}
			var arrive [][]byte
			for c := range cells {
				if drop[c] {
					dropped++
				} else {
					arrive = append(arrive, cells[c])
				}
			}
			if disorder > 0 {
				arrive = shuffleBounded(rng, arrive, disorder, 0)
			}
			const step, timeout = 1000, 100_000 // a timeout is 100 arrivals
			var col collector
			r, _ := NewReassembler(ReasmConfig{Window: len(cells), MaxPayload: cellPayload, Timeout: timeout}, col.deliver)
			now := int64(0)
			deadline := r.Poll(now)
			for _, c := range arrive {
				now += step
				if now >= deadline {
					deadline = r.Poll(now)
				}
				r.Receive(now, c)
				deadline = min(deadline, r.Poll(now))
			}
			if dropped > 0 && deadline == 1<<63-1 {
				t.Fatal("no deadline with a hole pending")
			}
			r.Poll(now + timeout)
			checkFrames(t, col.frames, want)
			st := r.Stats()
			if st.DiscardedRecords != uint64(wantRecs) || st.DiscardedBytes != uint64(wantBytes) ||
				st.Timeouts != uint64(runs) || st.SkippedCells != uint64(dropped) || st.Buffered != 0 {
				t.Fatalf("stats %+v; want %d discarded records, %d bytes, %d holes, %d cells skipped",
					st, wantRecs, wantBytes, runs, dropped)
			}
			if st.Malformed+st.Inconsistent+st.Duplicates+st.OutOfWindow != 0 {
				t.Fatalf("stats %+v", st)
			}
			// A dropped cell arriving after its hole was skipped is late.
			for c := len(cells) - 1; c >= 0; c-- {
				if drop[c] {
					r.Receive(now, cells[c])
					if st2 := r.Stats(); st2.Late != 1 || st2.Delivered != st.Delivered {
						t.Fatalf("late cell %d: stats %+v", c, st2)
					}
					break
				}
			}
		})
	}
}

// TestReasmHoleWaits: a hole is not skipped before the timeout, and a cell
// filling it in time loses nothing.
func TestReasmHoleWaits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p, _ := NewPacker(testSrc, testKey, 0, 4, true)
	var frames [][]byte
	for i := range 20 {
		f := testFrame(rng, i, 100)
		p.Enqueue(f)
		frames = append(frames, f)
	}
	cells := cutAll(t, rng, p, 128)
	var col collector
	const timeout = 50_000
	r, _ := NewReassembler(ReasmConfig{Timeout: timeout}, col.deliver)
	for i := 1; i < len(cells); i++ {
		r.Receive(int64(i), cells[i])
	}
	if d := r.Poll(timeout); d != 1+timeout || len(col.frames) != 0 {
		t.Fatalf("deadline %d (want %d), %d frames delivered early", d, 1+timeout, len(col.frames))
	}
	r.Receive(timeout, cells[0])
	checkFrames(t, col.frames, frames)
	if d := r.Poll(timeout); d != 1<<63-1 {
		t.Fatalf("deadline %d with nothing held", d)
	}
}

// hostile builds a cell frame from its fields, with payload p.
func hostile(seq uint32, first, recNo uint16, p []byte) []byte {
	f := make([]byte, CellFrameLen(len(p))+8)
	h := CellHeader{Dst: testKey.Dst, Src: testSrc, Class: testKey.Class, Port: testKey.Port, Hops: 3, Seq: seq, First: first, RecNo: recNo}
	n, err := PutCell(f, &h, p)
	if err != nil {
		panic(err)
	}
	return f[:n]
}

// record returns [len][frame of n bytes with id].
func record(id, n int) []byte {
	b := make([]byte, RecordHeaderLen+n)
	binary.BigEndian.PutUint16(b, uint16(n))
	binary.BigEndian.PutUint32(b[RecordHeaderLen:], uint32(id))
	return b
}

// TestReasmHostile: malformed and misplaced cells are counted in their own
// counter, the stream goes on delivering at the next record start, and
// nothing panics.
func TestReasmHostile(t *testing.T) {
	var col collector
	r, _ := NewReassembler(ReasmConfig{Window: 16, MaxPayload: 512, MaxStreams: 1, Self: testKey.Dst}, col.deliver)
	type step struct {
		name  string
		frame []byte
		field func(*ReasmStats) uint64
		ids   []int // frames delivered by this step
	}
	bad := record(0, 100)
	binary.BigEndian.PutUint16(bad, MaxRecordFrame+1)
	short := make([]byte, 42)                        // length 0
	split := append(record(6, 60), record(7, 60)...) // split over two cells below
	wrongDst := hostile(9, 0, 9, record(8, 60))
	binary.BigEndian.PutUint16(wrongDst[Off:], 99)
	fixSum(wrongDst)
	badSum := hostile(9, 0, 9, record(8, 60))
	badSum[Off+5] ^= 1
	otherStream := hostile(0, 0, 0, record(8, 60))
	otherStream[Off+5]++ // port
	fixSum(otherStream)
	deliv := func(s *ReasmStats) uint64 { return s.Delivered }
	steps := []step{
		{"good", hostile(0, 0, 0, record(1, 60)), deliv, []int{1}},
		{"record too long", hostile(1, 0, 1, bad), func(s *ReasmStats) uint64 { return s.Malformed }, nil},
		{"resumes", hostile(2, 0, 2, record(2, 60)), deliv, []int{2}},
		{"record too short", hostile(3, 0, 3, short), func(s *ReasmStats) uint64 { return s.Malformed }, nil},
		{"resumes", hostile(4, 0, 4, record(3, 60)), deliv, []int{3}},
		// The parse is at a record start, the header says one starts at 10:
		// the header wins, the 10 bytes before are a lost record's.
		{"first offset not where the parse is", hostile(5, 10, 5, append(make([]byte, 10), record(4, 60)...)),
			func(s *ReasmStats) uint64 { return s.Inconsistent }, []int{4}},
		// Records 7..76 are counted lost.
		{"record number not the stream's", hostile(6, 0, 77, record(5, 60)), func(s *ReasmStats) uint64 { return s.Inconsistent }, []int{5}},
		{"split record, head", hostile(7, 0, 78, split[:70]), deliv, []int{6}},
		{"split record, tail", hostile(8, NoRecord, 79, split[70:]), deliv, []int{7}},
		{"duplicate", hostile(8, NoRecord, 79, split[70:]), func(s *ReasmStats) uint64 { return s.Duplicates }, nil},
		{"far ahead", hostile(100000, 0, 80, record(9, 60)), func(s *ReasmStats) uint64 { return s.OutOfWindow }, nil},
		{"far behind", hostile(1<<31, 0, 80, record(9, 60)), func(s *ReasmStats) uint64 { return s.OutOfWindow }, nil},
		{"oversize", hostile(9, 0, 80, record(9, 600)), func(s *ReasmStats) uint64 { return s.Oversize }, nil},
		{"wrong destination", wrongDst, func(s *ReasmStats) uint64 { return s.WrongDst }, nil},
		{"bad checksum", badSum, func(s *ReasmStats) uint64 { return s.BadCells }, nil},
		{"truncated", hostile(9, 0, 80, record(9, 60))[:CellPayloadOffset+10], func(s *ReasmStats) uint64 { return s.BadCells }, nil},
		{"too many streams", otherStream, func(s *ReasmStats) uint64 { return s.NoStream }, nil},
		{"good again", hostile(9, 0, 80, record(10, 60)), deliv, []int{10}},
	}
	for _, s := range steps {
		before := r.Stats()
		nf := len(col.frames)
		r.Receive(0, s.frame)
		after := r.Stats()
		if s.field(&after)-s.field(&before) != 1 {
			t.Fatalf("%s: stats %+v after %+v", s.name, after, before)
		}
		var ids []int
		for _, f := range col.frames[nf:] {
			ids = append(ids, int(binary.BigEndian.Uint32(f)))
		}
		if fmt.Sprint(ids) != fmt.Sprint(s.ids) {
			t.Fatalf("%s: delivered %v, want %v", s.name, ids, s.ids)
		}
	}
	st := r.Stats()
	// Lost: the record before offset 10, and records 7..76 skipped by the
	// jump of the record number.
	if st.Malformed != 2 || st.Inconsistent != 2 || st.DiscardedRecords != 1+70 || st.Delivered != 8 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReasmResync: a stream silent for a timeout restarts at a cell far out
// of its window (the sender restarted), and a new stream starts wherever its
// first cell is.
func TestReasmResync(t *testing.T) {
	var col collector
	const timeout = 1000
	r, _ := NewReassembler(ReasmConfig{Window: 16, Timeout: timeout}, col.deliver)
	r.Receive(0, hostile(5000, 0, 300, record(1, 60)))
	r.Receive(1, hostile(5001, 0, 301, record(2, 60)))
	r.Receive(2, hostile(0, 0, 0, record(3, 60)))
	r.Receive(2+timeout, hostile(0, 0, 0, record(4, 60)))
	// Claims its first 20 bytes end record 0, which was whole: they are
	// discarded (no record lost), record 1 at 20 is delivered.
	r.Receive(3+timeout, hostile(1, 20, 0, append(make([]byte, 20), record(5, 60)...)))
	// A new stream whose first cell is just "behind" seq 0 starts there too.
	other := hostile(1<<32-3, 0, 0, record(6, 60))
	other[Off+5]++ // port
	fixSum(other)
	r.Receive(4+timeout, other)
	var ids []int
	for _, f := range col.frames {
		ids = append(ids, int(binary.BigEndian.Uint32(f)))
	}
	st := r.Stats()
	if fmt.Sprint(ids) != "[1 2 4 5 6]" || st.Resyncs != 3 || st.OutOfWindow != 1 || st.Inconsistent != 1 || st.DiscardedRecords != 0 || st.DiscardedBytes != 20 {
		t.Fatalf("delivered %v, stats %+v", ids, st)
	}
}

// TestReasmNoAlloc: in steady state Enqueue, Cut, Receive (in order and
// held) and Poll do not allocate.
func TestReasmNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	p, _ := NewPacker(testSrc, testKey, 0, 4, true)
	delivered := 0
	r, _ := NewReassembler(ReasmConfig{Window: 64, MaxPayload: 256}, func(StreamKey, []byte) { delivered++ })
	frame := testFrame(rng, 1, 300)
	a, b := make([]byte, 512), make([]byte, 512)
	now := int64(0)
	op := func() {
		p.Enqueue(frame)
		for p.Backlog() >= 512 {
			p.Cut(a, 1<<20, 256)
			p.Cut(b, 1<<20, 256)
			now += 100
			r.Receive(now, b) // held
			r.Receive(now, a) // in order, drains b
			r.Poll(now)
		}
	}
	for range 100 {
		op()
	}
	if n := testing.AllocsPerRun(1000, op); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
	if st := r.Stats(); delivered == 0 || st.Delivered != uint64(delivered) || st.Inconsistent+st.Malformed != 0 || st.PeakBuffered == 0 {
		t.Fatalf("delivered %d, stats %+v", delivered, st)
	}
}

// BenchmarkPackReasm packs frames into cells and reassembles them in order.
func BenchmarkPackReasm(b *testing.B) {
	for _, size := range []int{64, 1500} {
		for _, cell := range []int{256, 1500} {
			b.Run(fmt.Sprintf("frame=%d/cell=%d", size, cell), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				p, _ := NewPacker(testSrc, testKey, 0, 4, true)
				out := 0
				r, _ := NewReassembler(ReasmConfig{MaxPayload: cell}, func(_ StreamKey, f []byte) { out += len(f) })
				frame := testFrame(rng, 1, size)
				buf := make([]byte, CellPayloadOffset+cell)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					p.Enqueue(frame)
					for p.Backlog() >= cell {
						n, _ := p.Cut(buf, cell, cell)
						r.Receive(0, buf[:n])
					}
				}
				if out == 0 || !bytes.Equal(frame[:4], []byte{0, 0, 0, 1}) {
					b.Fatal("nothing delivered")
				}
			})
		}
	}
}

// TestReasmSeqWrap: cells held across the wrap of the 32-bit cell seq keep
// their own slots.
func TestReasmSeqWrap(t *testing.T) {
	var col collector
	r, _ := NewReassembler(ReasmConfig{Window: 8}, col.deliver)
	const first = 1<<32 - 4
	cell := func(i int) []byte { return hostile(uint32(first+i), 0, uint16(i), record(i, 60)) }
	r.Receive(0, cell(0))
	for i := 9; i >= 2; i-- { // held: 2^32-2 .. 5, a hole at 2^32-3
		r.Receive(0, cell(i))
	}
	r.Receive(0, cell(1))
	var ids []int
	for _, f := range col.frames {
		ids = append(ids, int(binary.BigEndian.Uint32(f)))
	}
	if fmt.Sprint(ids) != "[0 1 2 3 4 5 6 7 8 9]" || r.Stats().Duplicates != 0 {
		t.Fatalf("delivered %v, stats %+v", ids, r.Stats())
	}
}

// TestReasmEpochRestart: a source restarts (a new epoch) while its stream
// holds cells waiting for a hole, at seqs behind, far from and just ahead
// of the stream's next one. The held cells and the record in progress are
// dropped and counted, the new boot's records are all delivered in order,
// and cells of the old boot arriving afterwards are dropped as stale.
func TestReasmEpochRestart(t *testing.T) {
	// The old boot's stream starts at 0 (the new one's first cells fall
	// behind the window), in the upper half (far), or 20 below the wrap
	// (they fall ahead, inside the window).
	for _, before := range []uint32{0, 1<<31 + 1000, 1<<32 - 20} {
		rng := rand.New(rand.NewPCG(9, uint64(before)))
		mk := func(epoch uint16, seq uint32, ids []int) ([][]byte, [][]byte) {
			vs, _ := NewVOQSet(VOQConfig{Src: testSrc, Hops: 4, Packing: true, Epoch: epoch, FirstSeq: seq})
			p := vs.Get(testKey).Packer
			var frames [][]byte
			for _, id := range ids {
				f := testFrame(rng, id, 60+rng.IntN(400))
				p.Enqueue(f)
				frames = append(frames, f)
			}
			return cutAll(t, rng, p, 300), frames
		}
		var old, fresh []int
		for i := range 40 {
			old = append(old, i)
			fresh = append(fresh, 1000+i)
		}
		oldCells, _ := mk(0x1111, before, old)
		newCells, newFrames := mk(0x2222, 0, fresh)
		var got [][]byte
		r, _ := NewReassembler(ReasmConfig{Self: testKey.Dst, MaxPayload: 300}, func(_ StreamKey, f []byte) { got = append(got, bytes.Clone(f)) })
		// The old boot: all but cell 5, so cells 6.. are held behind the hole.
		for i, c := range oldCells {
			if i != 5 {
				r.Receive(int64(i), c)
			}
		}
		st := r.Stats()
		if st.Buffered == 0 || len(got) == 0 {
			t.Fatalf("seq %d: no cell held behind the hole", before)
		}
		nOld := len(got)
		for i, c := range newCells {
			r.Receive(100+int64(i), c)
			if i == 2 {
				r.Receive(100+int64(i), oldCells[5]) // the old boot's late cell
			}
		}
		st = r.Stats()
		if st.Restarts != 1 || st.RestartCells != uint64(len(oldCells)-6) || st.StaleEpoch != 1 || st.Buffered != 0 {
			t.Fatalf("seq %d: %+v", before, st)
		}
		if len(got)-nOld != len(newFrames) {
			t.Fatalf("seq %d: %d frames of the new boot delivered, want %d (%+v)", before, len(got)-nOld, len(newFrames), st)
		}
		for i, f := range newFrames {
			if !bytes.Equal(got[nOld+i], f) {
				t.Fatalf("seq %d: new frame %d differs", before, i)
			}
		}
	}
}

// TestReasmBoundsForgedStreams: cells from many sources (forged or real)
// cannot take unbounded memory or lock new streams out. Early cells get a
// cell buffer only within MaxHeldBytes (buffers of streams holding nothing
// are reclaimed first); beyond MaxStreams, a stream idle long enough with
// nothing held gives its place to a new one.
func TestReasmBoundsForgedStreams(t *testing.T) {
	var col collector
	const timeout = 1000
	slab := 32 * 128 // Window 16 → 32 slots of MaxPayload 128
	r, err := NewReassembler(ReasmConfig{Window: 16, MaxPayload: 128, MaxStreams: 4, MaxHeldBytes: 2 * slab, Timeout: timeout}, col.deliver)
	if err != nil {
		t.Fatal(err)
	}
	from := func(src EdgeID, seq uint32) []byte {
		p := record(int(src)*10+int(seq), 60)
		f := make([]byte, CellFrameLen(len(p))+8)
		h := CellHeader{Dst: testKey.Dst, Src: src, Class: testKey.Class, Port: testKey.Port, Hops: 3, Seq: seq}
		n, err := PutCell(f, &h, p)
		if err != nil {
			t.Fatal(err)
		}
		return f[:n]
	}
	for src := EdgeID(1); src <= 4; src++ {
		r.Receive(0, from(src, 0))
		r.Receive(0, from(src, 2)) // early: needs a buffer
	}
	r.Receive(1, from(5, 0)) // a fifth stream, none idle
	if st := r.Stats(); st.NoBuffer != 2 || st.NoStream != 1 || r.held != 2*slab {
		t.Fatalf("after 4 sources with early cells and a fifth: NoBuffer %d NoStream %d held %d; want 2, 1, %d", st.NoBuffer, st.NoStream, r.held, 2*slab)
	}
	r.Poll(1 + timeout) // sources 1 and 2 skip their hole: nothing held
	now := int64(2 + idleStreamTimeouts*timeout)
	r.Receive(now, from(5, 0))
	r.Receive(now, from(6, 2)) // early again: reclaims an idle buffer
	st := r.Stats()
	if st.Evicted != 2 || st.NoBuffer != 2 || st.Buffered != 1 || r.held > 2*slab {
		t.Fatalf("after idling: Evicted %d NoBuffer %d Buffered %d held %d; want 2, 2, 1, ≤ %d", st.Evicted, st.NoBuffer, st.Buffered, r.held, 2*slab)
	}
	var ids []int
	for _, f := range col.frames {
		ids = append(ids, int(binary.BigEndian.Uint32(f)))
	}
	if fmt.Sprint(ids) != "[10 20 30 40 12 22 50]" {
		t.Fatalf("delivered %v; want [10 20 30 40 12 22 50]", ids)
	}
}

// A loss reported for good skips one hole after LostWait instead of the
// Timeout; a report that finds no hole expires after the Timeout (a later
// hole waits the whole Timeout); LostWait < 0 ignores reports.
func TestReasmLostSkips(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	p, _ := NewPacker(testSrc, testKey, 0, 4, true)
	for i := range 80 {
		p.Enqueue(testFrame(rng, i, 100))
	}
	cells := cutAll(t, rng, p, 128)
	half := len(cells) / 2
	const timeout, wait = 50_000_000, 1_000_000
	for _, lostWait := range []int64{wait, -1} {
		var col collector
		r, _ := NewReassembler(ReasmConfig{Timeout: timeout, LostWait: lostWait}, col.deliver)
		now := int64(1000)
		for i, c := range cells[:half] {
			if i != 3 {
				r.Receive(now, c)
			}
		}
		r.Lost(now, 1)
		if d := r.Poll(now); lostWait > 0 && d != now+wait {
			t.Fatalf("deadline %d, want the lost wait %d", d, now+wait)
		}
		now += wait
		r.Poll(now)
		st := r.Stats()
		if lostWait < 0 {
			if st.Timeouts != 0 || st.LostReported != 0 {
				t.Fatalf("reports ignored: %+v", st)
			}
			continue
		}
		if st.LostSkips != 1 || st.Timeouts != 1 || st.Buffered != 0 {
			t.Fatalf("after the wait: %+v", st)
		}
		r.Lost(now, 1) // no hole to match
		now += timeout
		r.Poll(now)
		for i, c := range cells[half:] {
			if i != 5 {
				r.Receive(now, c)
			}
		}
		r.Poll(now + wait)
		if st := r.Stats(); st.Timeouts != 1 {
			t.Fatalf("an expired report skipped a hole: %+v", st)
		}
		r.Poll(now + timeout)
		if st := r.Stats(); st.Timeouts != 2 || st.LostSkips != 1 || st.Buffered != 0 {
			t.Fatalf("after the timeout: %+v", st)
		}
	}
}

// TestReasmHeldCellsShareBuffers: cells held for a hole take the first
// free places of their stream's buffer, not the place of their seq, so a
// stream whose cells now and then arrive swapped (sprayed over links
// kicked in another order) reuses the same few bytes instead of writing
// through its whole window's buffer, each page first touched on a frame's
// path. The records still come out whole and in order.
func TestReasmHeldCellsShareBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p, _ := NewPacker(testSrc, testKey, 0, 4, true)
	var got [][]byte
	r, err := NewReassembler(ReasmConfig{}, func(_ StreamKey, f []byte) { got = append(got, bytes.Clone(f)) })
	if err != nil {
		t.Fatal(err)
	}
	var sent [][]byte
	cell := func() []byte {
		f := testFrame(rng, len(sent), 100)
		sent = append(sent, f)
		p.Enqueue(f)
		buf := make([]byte, 2048)
		n, _ := p.Cut(buf, 1<<20, 1400)
		return buf[:n]
	}
	for range 3000 {
		a, b := cell(), cell()
		r.Receive(0, b) // held
		r.Receive(0, a)
	}
	s := r.m[StreamKey{Src: testSrc, Port: testKey.Port, Class: testKey.Class}]
	if s == nil || s.slab == nil {
		t.Fatal("no cell was held")
	}
	for i, v := range s.slab[r.cfg.MaxPayload:] {
		if v != 0 {
			t.Fatalf("buffer byte %d written with one cell held at a time", r.cfg.MaxPayload+i)
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
