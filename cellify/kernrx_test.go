package cellify

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// rxCell is a cell frame of stream (src 7 → dst 3, port 0, class 0) with
// epoch ep: payload holds records; first and recNo as given.
func rxCell(t testing.TB, seq uint32, recNo, first, ep uint16, payload []byte) []byte {
	t.Helper()
	f := make([]byte, CellFrameLen(len(payload)))
	h := CellHeader{Dst: 3, Src: 7, Hops: 3, Seq: seq, First: first, RecNo: recNo, Epoch: ep}
	if _, err := PutCell(f, &h, payload); err != nil {
		t.Fatal(err)
	}
	return f
}

// rxRecord is record n of epoch ep: [length][source port 2][host frame
// from MAC 02:00:00:00:00:01 of size bytes, carrying ep and n].
func rxRecord(ep uint16, n uint32, size int) []byte {
	fr := make([]byte, size)
	copy(fr, []byte{0x02, 0, 0, 0, 0, 9, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00})
	binary.BigEndian.PutUint16(fr[14:], ep)
	binary.BigEndian.PutUint32(fr[16:], n)
	r := make([]byte, 3+size)
	binary.BigEndian.PutUint16(r, uint16(1+size))
	r[2] = 2
	copy(r[3:], fr)
	return r
}

// recOf reads back (epoch, n) from a delivered host frame.
func recOf(frame []byte) (uint16, uint32) {
	if len(frame) < 20 {
		panic(fmt.Sprintf("delivered %x", frame))
	}
	return binary.BigEndian.Uint16(frame[14:]), binary.BigEndian.Uint32(frame[16:])
}

// rxSource cuts records into cells: most alone in a cell of their own
// (the kernel's case), some split over two cells or packed two to a cell
// (the worker's).
type rxSource struct {
	ep    uint16
	seq   uint32
	recNo uint16
	n     uint32
}

// next cuts the next record or two; rng nil: the choice goes by the
// record number (every 4th split, every 7th packed with the next).
func (s *rxSource) next(t testing.TB, rng *rand.Rand) [][]byte {
	size, kind := 20+int(s.n%80), 2
	switch {
	case rng != nil:
		size, kind = 20+rng.IntN(80), rng.IntN(10)
	case s.n%4 == 3:
		kind = 0
	case s.n%7 == 6:
		kind = 1
	}
	r := rxRecord(s.ep, s.n, size)
	var out [][]byte
	switch kind {
	case 0: // split over two cells
		k := 1 + int(s.n*7)%(len(r)-1)
		if rng != nil {
			k = 1 + rng.IntN(len(r)-1)
		}
		out = append(out, rxCell(t, s.seq, s.recNo, 0, s.ep, r[:k]), rxCell(t, s.seq+1, s.recNo, NoRecord, s.ep, r[k:]))
		s.seq += 2
		s.recNo++
		s.n++
	case 1: // two records in one cell
		r2 := rxRecord(s.ep, s.n+1, 20)
		out = append(out, rxCell(t, s.seq, s.recNo, 0, s.ep, append(r, r2...)))
		s.seq++
		s.recNo += 2
		s.n += 2
	default:
		out = append(out, rxCell(t, s.seq, s.recNo, 0, s.ep, r))
		s.seq++
		s.recNo++
		s.n++
	}
	return out
}

// rxLog is the delivery log: kernel deliveries are logged with their
// CAS (the harness serializes the model's Offer per stream), Go's in its
// deliver function, under the same lock.
type rxLog struct {
	mu     sync.Mutex
	recs   []rxDelivered
	kernel int
}

type rxDelivered struct {
	ep     uint16
	n      uint32
	kernel bool
}

func (l *rxLog) add(frame []byte, kernel bool) {
	ep, n := recOf(frame)
	l.recs = append(l.recs, rxDelivered{ep, n, kernel})
	if kernel {
		l.kernel++
	}
}

// check: within an epoch, record numbers strictly increase (nothing
// twice, nothing out of order), and no record of an epoch comes after a
// record of a later one (epochs in the order of eps).
func (l *rxLog) check(t *testing.T, eps []uint16) map[uint16]int {
	t.Helper()
	last := map[uint16]int64{}
	got := map[uint16]int{}
	rank := map[uint16]int{}
	for i, e := range eps {
		rank[e] = i
	}
	top := -1
	for i, d := range l.recs {
		if p, ok := last[d.ep]; ok && int64(d.n) <= p {
			t.Fatalf("delivery %d: record %d of epoch %#x after record %d (kernel %v)", i, d.n, d.ep, p, d.kernel)
		}
		if rank[d.ep] < top {
			t.Fatalf("delivery %d: record %d of epoch %#x after a record of a later epoch", i, d.n, d.ep)
		}
		top = max(top, rank[d.ep])
		last[d.ep] = int64(d.n)
		got[d.ep]++
	}
	return got
}

// rxHarness runs the model as the kernel (cpus goroutines, one per link)
// and a Reassembler with KernelRx on it as the worker (one goroutine),
// racing for the points.
type rxHarness struct {
	m    *CellRxModel
	kr   *KernelRx
	r    *Reassembler
	log  rxLog
	toGo chan []byte
	// clock is the kernel's: 10 µs more at every cell offered, so that a
	// cell on another CPU is sometimes within the quiet time, sometimes not.
	clock atomic.Uint64
	backs atomic.Int64 // the worker's HandBack calls
}

func newRxHarness(t *testing.T) *rxHarness {
	h := &rxHarness{m: NewCellRxModel(3), toGo: make(chan []byte, 1024)}
	h.m.Hosts[0] = true
	h.kr = NewKernelRx(h.m, []bool{true})
	var err error
	h.r, err = NewReassembler(ReasmConfig{Self: 3, Window: 1024, Timeout: 300_000}, func(_ StreamKey, rec []byte) {
		h.log.mu.Lock()
		h.log.add(rec[1:], false)
		h.log.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	h.r.SetKernel(h.kr)
	return h
}

// kernel offers a cell to the model on cpu; what it does not deliver
// goes to the worker.
func (h *rxHarness) kernel(f []byte, cpu uint32) {
	h.log.mu.Lock()
	v, host, _, slot, point := h.m.OfferSent(f, cpu, h.clock.Add(10_000))
	if v == RxDelivered {
		h.log.add(host, true)
		// Sent on by lf_cell_rx_tc at once, half the time (else the
		// quiet time rules).
		if point&1 == 0 {
			h.m.PassTC(slot, point)
		}
	}
	h.log.mu.Unlock()
	if v != RxDelivered {
		h.toGo <- f
	}
}

// worker takes the cells the kernel passed on, in batches, and hands the
// points back after each batch.
func (h *rxHarness) worker(done <-chan struct{}) {
	now := int64(0)
	for {
		select {
		case f := <-h.toGo:
			now += 1000
			if f != nil {
				h.r.Receive(now, f)
			}
			for more := true; more; {
				select {
				case f := <-h.toGo:
					now += 1000
					if f != nil {
						h.r.Receive(now, f)
					}
				default:
					more = false
				}
			}
			h.r.Poll(now)
			h.r.HandBack()
			h.backs.Add(1)
		case <-done:
			return
		}
	}
}

// spray sends cells over links goroutines (one per kernel CPU): each
// cell on a random link, so cells overtake each other across links; dup
// duplicates one cell in dup, lose loses one in lose (0: none).
func (h *rxHarness) spray(t *testing.T, cells [][]byte, links int, rng *rand.Rand, dup, lose int) {
	ch := make([]chan []byte, links)
	var wg sync.WaitGroup
	for l := range ch {
		ch[l] = make(chan []byte, 2)
		wg.Add(1)
		go func(l int) {
			defer wg.Done()
			for f := range ch[l] {
				h.kernel(f, uint32(l))
			}
		}(l)
	}
	burst := 0
	for _, f := range cells {
		if burst--; burst < 0 {
			// A pause: the worker takes what it was passed and gives
			// the points back, as between a host's bursts.
			burst = rng.IntN(64)
			h.idle()
		}
		if lose > 0 && rng.IntN(lose) == 0 {
			continue
		}
		ch[rng.IntN(links)] <- f
		if dup > 0 && rng.IntN(dup) == 0 {
			ch[rng.IntN(links)] <- bytes.Clone(f)
		}
	}
	for _, c := range ch {
		close(c)
	}
	wg.Wait()
}

// idle waits until the worker took every cell passed on and called
// HandBack after that.
func (h *rxHarness) idle() {
	for len(h.toGo) > 0 {
		runtime.Gosched()
	}
	for b := h.backs.Load(); h.backs.Load() == b && len(h.toGo) == 0; {
		runtime.Gosched()
		if h.backs.Load() == b {
			h.toGo <- nil // wakes the worker: a nil frame is nothing
		}
	}
}

// drainGo waits until the worker took every cell passed on.
func (h *rxHarness) drainGo() {
	for len(h.toGo) > 0 {
		runtime.Gosched()
	}
}

func TestKernelRxRaceExactlyOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dup, lose int
	}{{"clean", 0, 0}, {"duplicates", 7, 0}, {"losses", 0, 53}, {"both", 11, 97}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			h := newRxHarness(t)
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); h.worker(done) }()
			src := rxSource{ep: 0x1111}
			var cells [][]byte
			for len(cells) < 20000 {
				cells = append(cells, src.next(t, rng)...)
			}
			h.spray(t, cells, 2, rng, tc.dup, tc.lose)
			h.drainGo()
			close(done)
			wg.Wait()
			got := h.log.check(t, []uint16{0x1111})
			if tc.lose == 0 && got[0x1111] != int(src.n) {
				t.Errorf("%d records delivered of %d sent, none lost", got[0x1111], src.n)
			}
			if h.log.kernel == 0 || h.log.kernel == len(h.log.recs) {
				t.Errorf("kernel delivered %d of %d: want both sides to deliver", h.log.kernel, len(h.log.recs))
			}
			if h.kr.Stats.Gives == 0 || h.m.C.Handovers.Load() == 0 {
				t.Errorf("gives %d, handovers %d: the point never changed hands", h.kr.Stats.Gives, h.m.C.Handovers.Load())
			}
			t.Logf("%d records, kernel %d, gives %d, takes %d, handovers %d, raced %d", len(h.log.recs), h.log.kernel,
				h.kr.Stats.Gives, h.kr.Stats.Takes, h.m.C.Handovers.Load(), h.m.C.Raced.Load())
		})
	}
}

// A source that restarts (a new epoch, seq and record numbers from 0)
// while the kernel owns its stream: nothing of the old epoch after the
// new one's first record, nothing of the new one twice, even with cells
// of the old epoch arriving late among the new ones.
func TestKernelRxRestartedSource(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	h := newRxHarness(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.worker(done) }()
	old := rxSource{ep: 0xAAAA, seq: 1000, recNo: 500}
	var cells [][]byte
	for len(cells) < 3000 {
		cells = append(cells, old.next(t, rng)...)
	}
	h.spray(t, cells, 2, rng, 0, 0)
	h.drainGo()
	// The restart: the new boot's cells, with the old boot's last ones
	// (and copies of earlier ones) late among them.
	nw := rxSource{ep: 0xBBBB}
	var late [][]byte
	for range 50 {
		late = append(late, old.next(t, rng)...)
	}
	late = append(late, cells[len(cells)-40:]...)
	cells = cells[:0]
	for len(cells) < 3000 {
		cells = append(cells, nw.next(t, rng)...)
		if len(late) > 0 && rng.IntN(3) == 0 {
			cells = append(cells, late[0])
			late = late[1:]
		}
	}
	h.spray(t, cells, 2, rng, 0, 0)
	h.drainGo()
	close(done)
	wg.Wait()
	got := h.log.check(t, []uint16{0xAAAA, 0xBBBB})
	if got[0xBBBB] == 0 || h.log.kernel == 0 {
		t.Errorf("new epoch: %d records, kernel %d", got[0xBBBB], h.log.kernel)
	}
	if rs := h.r.Stats(); rs.Restarts != 1 || rs.StaleEpoch == 0 {
		t.Errorf("restarts %d (want 1), stale %d (want the late cells)", rs.Restarts, rs.StaleEpoch)
	}
}

// A cell the kernel cannot take at the point (out of order, split,
// another epoch, another source MAC, FCI) gives the point to Go; Go's
// take returns where the kernel left it.
func TestKernelRxHandsOver(t *testing.T) {
	m := NewCellRxModel(3)
	m.Hosts[0] = true
	kr := NewKernelRx(m, []bool{true})
	key := StreamKey{Src: 7}
	rec := rxRecord(0x1111, 0, 40)
	if !kr.Give(key, 10, 20, 0x1111, rec[2:]) {
		t.Fatal("give refused")
	}
	ok := func(name string, f []byte, want int) {
		t.Helper()
		if v, _, _ := m.Offer(f, 0, 0); v != want {
			t.Errorf("%s: verdict %d, want %d", name, v, want)
		}
	}
	ok("in order", rxCell(t, 10, 20, 0, 0x1111, rxRecord(0x1111, 0, 40)), RxDelivered)
	i, _ := m.Slot(RxKey(key))
	if s, r := RxPointSeq(m.S[i].Point.Load()); s != 11 || r != 21 || m.S[i].Point.Load()&RxOwned == 0 {
		t.Fatalf("point %#x after one delivery", m.S[i].Point.Load())
	}
	bad := map[string][]byte{
		"ahead":         rxCell(t, 12, 21, 0, 0x1111, rxRecord(0x1111, 0, 40)),
		"behind":        rxCell(t, 10, 20, 0, 0x1111, rxRecord(0x1111, 0, 40)),
		"record number": rxCell(t, 11, 22, 0, 0x1111, rxRecord(0x1111, 0, 40)),
		"epoch":         rxCell(t, 11, 21, 0, 0x2222, rxRecord(0x1111, 0, 40)),
		"split":         rxCell(t, 11, 21, 0, 0x1111, rxRecord(0x1111, 0, 40)[:30]),
		"two records":   rxCell(t, 11, 21, 0, 0x1111, append(rxRecord(0x1111, 0, 40), rxRecord(0x1111, 1, 40)...)),
		"not at 0":      rxCell(t, 11, 21, NoRecord, 0x1111, rxRecord(0x1111, 0, 40)),
	}
	mac := rxRecord(0x1111, 0, 40)
	mac[3+11] = 7
	bad["source MAC"] = rxCell(t, 11, 21, 0, 0x1111, mac)
	port := rxRecord(0x1111, 0, 40)
	port[2] = 3
	bad["source port"] = rxCell(t, 11, 21, 0, 0x1111, port)
	fci := rxCell(t, 11, 21, 0, 0x1111, rxRecord(0x1111, 0, 40))
	SetFCI(fci)
	bad["FCI"] = fci
	for name, f := range bad {
		m.S[i].Point.Store(RxPoint(11, 21))
		before := m.C.Handovers.Load()
		ok(name, f, RxToGo)
		if m.S[i].Point.Load() != RxPoint(11, 21)&^RxOwned || m.C.Handovers.Load() != before+1 {
			t.Errorf("%s: point %#x, handovers %d: want the point given to Go", name, m.S[i].Point.Load(), m.C.Handovers.Load()-before)
		}
		ok(name+" again (Go's)", f, RxToGo)
	}
	m.S[i].Point.Store(RxPoint(11, 21))
	if s, r := kr.Take(key); s != 11 || r != 21 || m.S[i].Point.Load()&RxOwned != 0 {
		t.Errorf("take: %d %d, point %#x", s, r, m.S[i].Point.Load())
	}
}

// Another CPU's delivery within the quiet time hands over; on the same
// CPU, or later, the kernel delivers.
func TestKernelRxOtherCPU(t *testing.T) {
	m, kr, key, rec, cell := givenStream(t)
	const unit = 1 << 14
	t0 := uint64(1000 * unit)
	steps := []struct {
		cpu  uint32
		now  uint64
		want int
	}{
		{1, t0, RxDelivered},                     // first since the give: any CPU
		{1, t0 + 1, RxDelivered},                 // same CPU
		{0, t0 + KernelRxQuiet*unit - 1, RxToGo}, // another CPU, within the quiet time
	}
	for n, s := range steps {
		if v, _, _ := m.Offer(cell(uint32(n)), s.cpu, s.now); v != s.want {
			t.Errorf("cell %d on cpu %d: verdict %d, want %d", n, s.cpu, v, s.want)
		}
	}
	kr.Take(key)
	kr.Give(key, 2, 2, 0x1111, rec[2:])
	if v, _, _ := m.Offer(cell(2), 0, t0); v != RxDelivered {
		t.Errorf("after Go gave it back: verdict %d", v)
	}
	if v, _, _ := m.Offer(cell(3), 1, t0+(KernelRxQuiet+1)*unit); v != RxDelivered {
		t.Errorf("another CPU after the quiet time: verdict %d", v)
	}
}

// With delivery through the stack, a cell on another CPU within the
// quiet time is delivered once lf_cell_rx_tc sent the delivery before it
// on (PassTC with the word that delivery left), not for an earlier
// delivery's word, nor for a word from before Go took and gave the
// stream back.
func TestKernelRxSentOn(t *testing.T) {
	m, kr, key, rec, cell := givenStream(t)
	const unit = 1 << 14
	now := uint64(1000 * unit)
	offer := func(n, cpu uint32) (int, int, uint64) {
		now += 1000
		v, _, _, slot, point := m.OfferSent(cell(n), cpu, now)
		return v, slot, point
	}
	v, slot0, p0 := offer(0, 1)
	if v != RxDelivered || p0 != m.S[slot0].Point.Load() {
		t.Fatalf("cell 0: verdict %d, point %#x (slot's %#x)", v, p0, m.S[slot0].Point.Load())
	}
	v, slot1, p1 := offer(1, 1)
	if v != RxDelivered || slot1 != slot0 {
		t.Fatalf("cell 1 on the same CPU: verdict %d", v)
	}
	m.PassTC(slot0, p0) // cell 0 sent on, not cell 1
	if v, _, _ := offer(2, 0); v != RxToGo {
		t.Errorf("another CPU, the delivery before the last sent on: verdict %d, want to Go", v)
	}
	// Go takes and gives back at 2; then a delivery on CPU 0 sent on, one on
	// CPU 1 after it: delivered.
	kr.Take(key)
	kr.Give(key, 2, 2, 0x1111, rec[2:])
	if p := m.S[slot0].Passed.Load(); p != 0 {
		t.Errorf("passed %#x after a give", p)
	}
	v, _, p2 := offer(2, 0)
	if v != RxDelivered {
		t.Fatalf("cell 2: verdict %d", v)
	}
	m.PassTC(slot0, p2)
	if v, _, _ := offer(3, 1); v != RxDelivered {
		t.Errorf("another CPU, the delivery before sent on: verdict %d, want delivered", v)
	}
	// Cell 3's delivery not sent on: cell 4 on CPU 0 goes to Go; the
	// stale word of cell 2 is still there.
	if v, _, _ := offer(4, 0); v != RxToGo {
		t.Errorf("another CPU, the delivery before not sent on: verdict %d, want to Go", v)
	}
	if m.C.HoCPU.Load() != 2 {
		t.Errorf("hand-overs for another CPU: %d, want 2", m.C.HoCPU.Load())
	}
	_ = p1
}

// Go gives a point only when it holds nothing and is at a record
// boundary: with a cell held (a hole), or a split record half parsed, it
// keeps it.
func TestKernelRxGiveOnlyInSync(t *testing.T) {
	m := NewCellRxModel(3)
	m.Hosts[0] = true
	kr := NewKernelRx(m, []bool{true})
	r, _ := NewReassembler(ReasmConfig{Self: 3}, func(StreamKey, []byte) {})
	r.SetKernel(kr)
	r.Receive(1, rxCell(t, 0, 0, 0, 0x1111, rxRecord(0x1111, 0, 40)))
	split := rxRecord(0x1111, 1, 40)
	r.Receive(2, rxCell(t, 1, 1, 0, 0x1111, split[:10]))
	r.HandBack()
	if kr.Stats.Gives != 0 {
		t.Fatal("gave the point halfway through a record")
	}
	r.Receive(3, rxCell(t, 3, 2, 0, 0x1111, rxRecord(0x1111, 2, 40))) // 2 missing: held
	r.HandBack()
	if kr.Stats.Gives != 0 {
		t.Fatal("gave the point while holding a cell")
	}
	r.Receive(4, rxCell(t, 2, 1, NoRecord, 0x1111, split[10:])) // record 1 ends, 3 drains
	r.HandBack()
	if kr.Stats.Gives != 1 {
		t.Fatalf("gives %d, want 1 once in sync with nothing held", kr.Stats.Gives)
	}
	if rs := r.Stats(); rs.Delivered != 3 || rs.Inconsistent != 0 {
		t.Errorf("delivered %d, inconsistent %d", rs.Delivered, rs.Inconsistent)
	}
	i, _ := m.Slot(RxKey(StreamKey{Src: 7}))
	if s, rn := RxPointSeq(m.S[i].Point.Load()); s != 4 || rn != 3 {
		t.Errorf("given at seq %d record %d, want 4 and 3", s, rn)
	}
}

// givenStream is a model with one host port and stream key given to the
// kernel at seq 0, record 0 (rec is that record), and cell(n): the stream's
// cell n with one record of its own.
func givenStream(t *testing.T) (m *CellRxModel, kr *KernelRx, key StreamKey, rec []byte, cell func(n uint32) []byte) {
	m = NewCellRxModel(3)
	m.Hosts[0] = true
	kr = NewKernelRx(m, []bool{true})
	key = StreamKey{Src: 7}
	rec = rxRecord(0x1111, 0, 40)
	kr.Give(key, 0, 0, 0x1111, rec[2:])
	cell = func(n uint32) []byte { return rxCell(t, n, uint16(n), 0, 0x1111, rxRecord(0x1111, n, 40)) }
	return m, kr, key, rec, cell
}

// Fold reports each stream's deliveries since the last Fold once, and
// allocates nothing: the worker calls it at every Receive and Poll.
func TestKernelRxFoldNoAlloc(t *testing.T) {
	m, kr, key, _, cell := givenStream(t)
	for n := range uint32(3) {
		if v, _, _ := m.Offer(cell(n), 0, 0); v != RxDelivered {
			t.Fatalf("cell %d: verdict %d, want delivered", n, v)
		}
	}
	var got []KernelDelivery
	kr.Fold(func(d *KernelDelivery) { got = append(got, *d) })
	if len(got) != 1 || got[0].Key != key || got[0].Frames != 3 {
		t.Fatalf("first fold: %+v, want 3 frames of %v", got, key)
	}
	kr.Fold(func(d *KernelDelivery) { t.Errorf("second fold: %+v, want nothing", *d) })
	i, _ := m.Slot(RxKey(key))
	var frames uint64
	fn := func(d *KernelDelivery) { frames += d.Frames }
	allocs := testing.AllocsPerRun(100, func() { // 101 calls: one to warm up
		m.S[i].Frames.Add(1)
		kr.Fold(fn)
	})
	if allocs != 0 {
		t.Errorf("Fold allocates %.1f times a call, want 0", allocs)
	}
	if frames != 101 {
		t.Errorf("folded %d frames over 101 calls with one each, want 101", frames)
	}
}
