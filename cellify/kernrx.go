package cellify

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// The egress edge's kernel path (lf_cell_rx in bpf/c/port.c): on the
// edge's link ports, a data cell that carries one whole record and is the
// next cell of a reassembly stream whose in-order point the kernel owns is
// stripped to its host frame and redirected to the host port; every other
// frame goes to the worker as before. KernelRx is the worker's side of it
// (the Reassembler's ReasmKernel), CellRxModel the program's steps in Go,
// one for one, which the tests hold the program to.
//
// Each stream (src, port, class) the kernel may deliver has a slot: an
// ownership word, the point, and what Go tells the kernel of the stream
// (its key, its source's epoch, the source MAC and port byte of its
// records). The point holds OWNED, the seq of the next cell and the record
// number it must start with (and the CPU and time of the kernel's last
// delivery). Both sides change it only by compare-and-swap; Go writes the
// rest of the slot only while it owns the point.
//
// Why nothing is delivered twice, out of order or stale:
//
//   - One point. A record is delivered by the side that moves the point
//     past its cell: the kernel by its CAS (seq, record + 1), Go by
//     consuming the cell while it owns the point. Go owns it from its take
//     (a CAS clearing OWNED, or the kernel's own hand-over) until its give
//     (a CAS from the word it left to OWNED with its next seq and record
//     number), and consumes nothing of the stream in between without it.
//     The kernel moves the point only from a word it read owned and that
//     is still the word at its CAS. So each seq is consumed once, by one
//     side, in seq order.
//   - Go sees what the kernel passes on. The kernel delivers only the cell
//     whose seq is the point's; every cell of the stream it does not
//     deliver goes to the worker, and Go takes the point (Take) before it
//     looks at any cell of the stream. A cell passed on while the kernel
//     still owns the point is either behind the point (a duplicate: the
//     point moved past its seq by another copy) or at or ahead of it, and
//     then the kernel cannot move past its seq without another copy of it:
//     the point waits for Go, which takes it where the kernel left it and
//     holds the cell (or consumes it) in order. The kernel also gives the
//     point to Go (clears OWNED) at any such cell, so that the cells after
//     it go to Go at once.
//   - Go gives the point only when it holds nothing for the stream, its
//     parser is at a record boundary (in sync, no partial record), the
//     stream has an epoch, and everything it delivered was put on the host
//     port's ring and kicked (the pipeline calls HandBack at the start of
//     its next call, and refuses while deliveries wait for room): the
//     kernel's first delivery follows Go's last into the host.
//   - Record numbers. The word carries the record number the next cell
//     must start with, and the kernel takes only a cell whose first record
//     starts at byte 0 and is its whole payload: the stream stays at a
//     record boundary while the kernel owns it, so Go's parser, taking the
//     point, resumes exactly (next seq and record number from the word).
//   - Epochs. The kernel delivers only cells of the epoch Go gave the
//     stream with. A source that restarts sends under a new epoch: its
//     first cell goes to Go (a hand-over), whose reassembly restarts the
//     stream, and a cell of the epoch before, late, goes to Go too, which
//     drops it within EpochHold. A restart of this edge loads fresh maps:
//     every point is Go's until it gives one.
//   - Slots. A slot changes stream only while Go owns its point (Drop);
//     the kernel checks the slot's key against the cell's after reading
//     the word, and its CAS fails if Go took the point between (the word
//     changes: OWNED). Go's key, epoch and MAC are written before the CAS
//     that gives the point, so a kernel that read the given word reads
//     them (x86-64's stores are ordered, as lf_lg_rx's adopted is). A
//     take and a give back to the same word would pass a CAS from before
//     them, but Go gives the word it took only if it consumed nothing,
//     and then key, epoch and MAC are the same.
//   - Across CPUs. A redirect leaves at the end of its CPU's NAPI poll:
//     a cell delivered on one CPU could overtake one delivered just before
//     on another. The word records the CPU and time (16 µs units) of the
//     kernel's last delivery; a cell arriving on another CPU within
//     KernelRxQuiet of it goes to Go (a hand-over), whose delivery comes
//     after its wakeup. The same bound covers Go's take after a kernel
//     delivery: Go's deliveries follow a worker wakeup and a pass through
//     its batch. These are bounds in time, not proofs: a NAPI poll that
//     takes longer than that between a redirect and its flush could let
//     one delivery overtake another.
//   - Sent on. With delivery through the stack (pass) the quiet time ends
//     early: the frame goes up the link port's stack with the point word
//     its CAS left (and its slot) in the metadata, and lf_cell_rx_tc, on
//     the TCX ingress, stores that word in the slot's passed as it
//     redirects the frame to the host port (the redirect runs when the
//     program returns, on that CPU, in the same softirq: nothing runs
//     between on that CPU). A cell on another CPU that finds passed equal
//     to the point it loaded (the word of the last delivery, no other
//     change since) follows a delivery that has left the link port: that
//     frame is on the host port's way into the host (for a veth, the
//     host's backlog of the CPU that sent it), while this cell has its
//     whole way still to go: the rest of its CPU's NAPI poll, its socket
//     buffer, its own TCX pass and redirect. Only lf_cell_rx_tc stores
//     passed, only with the word of a frame it is sending on, and a word
//     of the point is never repeated (seq and record number move on with
//     each delivery; Go's give clears the CPU, and SetStream clears
//     passed): equal means that very delivery has been sent on. A
//     delivery's frames pass TCX in their CPU's order, so a later store
//     never puts back an earlier word; a frame lost before TCX (no socket
//     buffer) leaves passed behind, and the quiet time rules as before.
//     What this leaves to time: the other CPU's backlog is taken after
//     the NAPI polls already scheduled there, which on an edge carrying
//     short flows is the rest of one poll. With the quiet time alone a
//     short flow's segment written on another CPU than the ACK just
//     before it went through the worker: on the bundle, 1000 back-to-back
//     143-byte TCP flows (5000 cells h1 → h2, 3000 back) handed their
//     streams over for this 546 and 777 times, and 857 and 114 cells more
//     went to the worker behind those hand-overs; with the mark, none.
//     Delivery by XDP_REDIRECT has no stage after the program and keeps
//     the quiet time alone.
//
// What the worker does for a cell that the kernel does not do, it does
// later from the kernel's counters: the scheduler's arrived bytes
// (credits), the MAC table's refresh of the one source MAC the kernel
// delivers from, the counters (Node.KernelDelivered).

// Bits of a stream's point (the word both sides compare-and-swap).
const (
	RxOwned      = 1 << 63
	rxCPUShift   = 56
	rxStampShift = 48
	rxRecShift   = 32
	rxStampNs    = 14 // a stamp unit: 2^14 ns
	// KernelRxQuiet is how many stamp units (of 16.384 µs) the kernel
	// leaves a stream to Go after a delivery on another CPU.
	KernelRxQuiet = 4
	// KernelRxStreams bounds the streams the kernel delivers (slots).
	KernelRxStreams = 256
	// KernelRxHosts bounds the host ports it delivers to.
	KernelRxHosts = 16
	// minKernelRecord is the shortest record the kernel delivers: the
	// source port byte and an Ethernet header.
	minKernelRecord = 1 + MinRecordFrame
	cellFCI         = 0x10
)

// RxPoint is the owned point of a stream whose next cell is seq and
// starts with record recNo (no kernel delivery yet).
func RxPoint(seq uint32, recNo uint16) uint64 {
	return RxOwned | uint64(recNo)<<rxRecShift | uint64(seq)
}

// RxPointSeq returns the seq and record number in point p.
func RxPointSeq(p uint64) (seq uint32, recNo uint16) { return uint32(p), uint16(p >> rxRecShift) }

// RxKey is a stream's key in the kernel's index (LF_CELL_RX_KEY).
func RxKey(k StreamKey) uint32 {
	return 1<<31 | uint32(k.Src)<<16 | uint32(k.Port)<<8 | uint32(k.Class)
}

// RxSlots is the kernel path's per-stream state as Go reaches it (the
// memory-mapped cell_rx map and the cell_rx_idx index, or the model's).
type RxSlots interface {
	// Point is slot i's point.
	Point(i int) *atomic.Uint64
	// SetStream writes slot i's key, epoch, source MAC and port byte
	// (only while Go owns its point).
	SetStream(i int, key uint32, epoch uint16, mac [6]byte, srcPort uint8)
	// Index makes key's cells look up slot i; Unindex forgets key.
	Index(key uint32, i int) error
	Unindex(key uint32) error
	// Counts are slot i's counters: records delivered, their frames'
	// bytes, their cells' payload bytes, hand-overs.
	Counts(i int) (frames, bytes, payload, handovers uint64)
}

// KernelRx is the worker's side of the kernel path: it implements
// ReasmKernel on the slots and reads back what the kernel delivered.
type KernelRx struct {
	slots RxSlots
	// CanGive, if set, says whether a stream to host port p may be given
	// now (its deliveries are all on the port's ring).
	CanGive func(port uint8) bool
	hosts   [KernelRxHosts]bool
	by      map[StreamKey]int
	keys    [KernelRxStreams]StreamKey
	used    [KernelRxStreams]bool
	free    []int
	seen    [KernelRxStreams]rxSeen
	// d is what Fold hands its fn: a field, not a local, so that Fold,
	// which runs at every Receive and Poll of the worker, does not
	// allocate (a local whose address goes to a func value escapes).
	d     KernelDelivery
	Stats KernelRxStats
}

// rxSeen is what Fold last read of a slot.
type rxSeen struct{ frames, bytes, payload, handovers uint64 }

// KernelRxStats counts the hand-over on Go's side.
type KernelRxStats struct {
	Gives     uint64 // points given to the kernel
	Takes     uint64 // points taken back (from the kernel, or after its hand-over)
	Refused   uint64 // gives refused: no slot, host port or source MAC, or deliveries waiting
	Handovers uint64 // the kernel's hand-overs (folded from the slots)
}

// NewKernelRx returns the worker's side of slots, delivering to the host
// ports set in hosts.
func NewKernelRx(slots RxSlots, hosts []bool) *KernelRx {
	k := &KernelRx{slots: slots, by: make(map[StreamKey]int)}
	copy(k.hosts[:], hosts)
	for i := KernelRxStreams - 1; i >= 0; i-- {
		k.free = append(k.free, i)
	}
	return k
}

// Take implements ReasmKernel: it clears OWNED (if the kernel still owns
// the point) and returns the seq and record number the kernel left.
func (k *KernelRx) Take(key StreamKey) (seq uint32, recNo uint16) {
	i, ok := k.by[key]
	if !ok {
		panic("cellify: KernelRx.Take of a stream never given")
	}
	p := k.slots.Point(i)
	for {
		w := p.Load()
		if w&RxOwned == 0 || p.CompareAndSwap(w, w&^RxOwned) {
			k.Stats.Takes++
			return RxPointSeq(w)
		}
	}
}

// Give implements ReasmKernel: the stream's point goes to the kernel at
// seq and recNo with epoch, if a slot is free (or the stream's), its host
// port is one the kernel delivers to, and rec (the head of the record Go
// delivered last: [source port][host frame]) names a source MAC that is
// not a group address. The point is Go's when Give is called.
func (k *KernelRx) Give(key StreamKey, seq uint32, recNo, epoch uint16, rec []byte) bool {
	if int(key.Port) >= KernelRxHosts || !k.hosts[key.Port] || epoch == 0 || len(rec) < 13 || rec[7]&1 != 0 ||
		(k.CanGive != nil && !k.CanGive(key.Port)) {
		k.Stats.Refused++
		return false
	}
	i, ok := k.by[key]
	if !ok {
		if len(k.free) == 0 {
			k.Stats.Refused++
			return false
		}
		i = k.free[len(k.free)-1]
		k.slots.Point(i).Store(0)
		if err := k.slots.Index(RxKey(key), i); err != nil {
			k.Stats.Refused++
			return false
		}
		k.free = k.free[:len(k.free)-1]
		k.by[key], k.keys[i], k.used[i] = i, key, true
		f, b, pl, h := k.slots.Counts(i)
		k.seen[i] = rxSeen{f, b, pl, h}
	}
	var mac [6]byte
	copy(mac[:], rec[7:13])
	k.slots.SetStream(i, RxKey(key), epoch, mac, rec[0])
	p := k.slots.Point(i)
	w := p.Load()
	if w&RxOwned != 0 || !p.CompareAndSwap(w, RxPoint(seq, recNo)) {
		panic("cellify: KernelRx.Give of a point the kernel owns")
	}
	k.Stats.Gives++
	return true
}

// Drop implements ReasmKernel: the stream leaves its slot (its point Go's).
func (k *KernelRx) Drop(key StreamKey) {
	i, ok := k.by[key]
	if !ok {
		return
	}
	if k.slots.Point(i).Load()&RxOwned != 0 {
		panic("cellify: KernelRx.Drop of a point the kernel owns")
	}
	_ = k.slots.Unindex(RxKey(key))
	delete(k.by, key)
	k.used[i] = false
	k.free = append(k.free, i)
}

// KernelDelivery is what the kernel delivered of one stream since the
// last Fold: records (cells), their host frames' bytes, the cells' payload
// bytes, and the source MAC and port byte they came from.
type KernelDelivery struct {
	Key                    StreamKey
	Frames, Bytes, Payload uint64
	MAC                    [6]byte
	SrcPort                uint8
}

// Fold calls fn with what the kernel delivered of each stream since the
// last Fold (streams that delivered nothing are skipped).
func (k *KernelRx) Fold(fn func(d *KernelDelivery)) {
	d := &k.d
	for i := range KernelRxStreams {
		if !k.used[i] {
			continue
		}
		f, b, pl, h := k.slots.Counts(i)
		s := &k.seen[i]
		k.Stats.Handovers += h - s.handovers
		if f != s.frames {
			*d = KernelDelivery{Key: k.keys[i], Frames: f - s.frames, Bytes: b - s.bytes, Payload: pl - s.payload}
			d.MAC, d.SrcPort = k.mac(i)
			fn(d)
		}
		*s = rxSeen{f, b, pl, h}
	}
}

// mac returns the source MAC and port byte slot i was given with.
func (k *KernelRx) mac(i int) ([6]byte, uint8) {
	if m, ok := k.slots.(interface{ Stream(int) ([6]byte, uint8) }); ok {
		return m.Stream(i)
	}
	return [6]byte{}, 0
}

// CellRxModel is lf_cell_rx's steps in Go, one for one (see the program):
// the state of the edge's maps and the rule each cell meets.
type CellRxModel struct {
	On   bool
	Crc  linkcrc.Integrity // linkcrc.Off (NewCellRxModel): no trailer
	Self EdgeID
	// idx is cell_rx_idx, a BPF hash map: lookups and updates from
	// several CPUs and Go at once are safe there, hence the lock here.
	idxMu sync.RWMutex
	idx   map[uint32]int
	S     [KernelRxStreams]ModelSlot
	Hosts [KernelRxHosts]bool // a redirect target per host port
	C     ModelCounters
}

// ModelSlot is one stream's slot (cell_rx_stream).
type ModelSlot struct {
	Point atomic.Uint64
	// Passed is the point word of the last delivery lf_cell_rx_tc sent
	// on (PassTC).
	Passed                            atomic.Uint64
	Key                               uint32
	Epoch                             uint16
	MAC                               [6]byte
	SrcPort                           uint8
	Frames, Bytes, Payload, Handovers atomic.Uint64
}

// ModelCounters are cell_rx_counters (per-link counters left out).
type ModelCounters struct {
	Delivered, Bytes, Handovers, Bad, NotOurs, GoOwned, Raced atomic.Uint64
	// Of Handovers, why: order, record, source, CPU (lf_cell_rx_takes).
	HoOrder, HoRecord, HoSource, HoCPU atomic.Uint64
}

// NewCellRxModel returns a model with no stream.
func NewCellRxModel(self EdgeID) *CellRxModel {
	return &CellRxModel{Self: self, idx: make(map[uint32]int), On: true, Crc: linkcrc.Off}
}

// Point implements RxSlots.
func (m *CellRxModel) Point(i int) *atomic.Uint64 { return &m.S[i].Point }

// SetStream implements RxSlots.
func (m *CellRxModel) SetStream(i int, key uint32, epoch uint16, mac [6]byte, srcPort uint8) {
	s := &m.S[i]
	s.Key, s.Epoch, s.MAC, s.SrcPort = key, epoch, mac, srcPort
	s.Passed.Store(0)
}

// PassTC is lf_cell_rx_tc sending on a delivery (with pass): the point
// word it left (OfferSent's) goes into its slot's passed.
func (m *CellRxModel) PassTC(slot int, point uint64) {
	if slot >= 0 && slot < KernelRxStreams {
		m.S[slot].Passed.Store(point)
	}
}

// Stream returns slot i's source MAC and port byte.
func (m *CellRxModel) Stream(i int) ([6]byte, uint8) { return m.S[i].MAC, m.S[i].SrcPort }

// Index implements RxSlots.
func (m *CellRxModel) Index(key uint32, i int) error {
	m.idxMu.Lock()
	defer m.idxMu.Unlock()
	m.idx[key] = i
	return nil
}

// Unindex implements RxSlots.
func (m *CellRxModel) Unindex(key uint32) error {
	m.idxMu.Lock()
	defer m.idxMu.Unlock()
	delete(m.idx, key)
	return nil
}

// Slot returns the slot key is indexed at (cell_rx_idx's lookup).
func (m *CellRxModel) Slot(key uint32) (int, bool) {
	m.idxMu.RLock()
	defer m.idxMu.RUnlock()
	i, ok := m.idx[key]
	return i, ok
}

// Counts implements RxSlots.
func (m *CellRxModel) Counts(i int) (frames, bytes, payload, handovers uint64) {
	s := &m.S[i]
	return s.Frames.Load(), s.Bytes.Load(), s.Payload.Load(), s.Handovers.Load()
}

// Verdicts of CellRxModel.Offer.
const (
	RxToGo      = iota // the worker's, frame untouched
	RxDelivered        // redirected to the host port; the frame is the host frame
	RxDropped          // the strip failed after the point moved (cannot happen)
)

// Offer runs the program's steps on frame (as it arrived, trailer and
// padding included) on CPU cpu at now (bpf_ktime_get_ns): the verdict and,
// delivered, the host frame (a slice of frame) and the stream's host port.
// The model's state (points, counters) changes as the program's would.
// The lookups of the index map and the slot are not atomic together, as
// in the program (Go changes them only while it owns the point).
func (m *CellRxModel) Offer(frame []byte, cpu uint32, now uint64) (verdict int, host []byte, port uint8) {
	verdict, host, port, _, _ = m.OfferSent(frame, cpu, now)
	return
}

// OfferSent is Offer, and for a delivery the stream's slot and the point
// word its CAS left (the metadata lf_cell_rx_tc gets with pass).
func (m *CellRxModel) OfferSent(frame []byte, cpu uint32, now uint64) (verdict int, host []byte, port uint8, slot int, point uint64) {
	// 1.
	if !m.On || len(frame) < CellPayloadOffset {
		return RxToGo, nil, 0, 0, 0
	}
	if binary.BigEndian.Uint16(frame[12:]) != seqhdr.EtherType || frame[14] != byte(seqhdr.TypeCell) {
		return RxToGo, nil, 0, 0, 0
	}
	if len(frame) > 0xFFFF {
		return RxToGo, nil, 0, 0, 0
	}
	n := len(frame)
	if m.Crc != linkcrc.Off {
		if len(frame) < seqhdr.DataOffset+linkcrc.TrailerLen || len(frame) > 3840 {
			return RxToGo, nil, 0, 0, 0
		}
		var ok bool
		if n, ok = m.Crc.Check(frame); !ok {
			m.C.Bad.Add(1)
			return RxToGo, nil, 0, 0, 0
		}
	}
	h := frame[Off:CellPayloadOffset]
	// 2.
	if crc8(h[:cellSumAt]) != h[cellSumAt] {
		m.C.Bad.Add(1)
		return RxToGo, nil, 0, 0, 0
	}
	dst := EdgeID(binary.BigEndian.Uint16(h[0:]))
	src := EdgeID(binary.BigEndian.Uint16(h[2:]))
	seq := binary.BigEndian.Uint32(h[6:])
	plen := binary.BigEndian.Uint16(h[10:])
	first := binary.BigEndian.Uint16(h[12:])
	recNo := binary.BigEndian.Uint16(h[14:])
	epoch := binary.BigEndian.Uint16(h[16:])
	if dst == 0 || src == 0 || h[4]&0x0f == 0 || plen == 0 || (first != NoRecord && first >= plen) ||
		CellPayloadOffset+int(plen) > n {
		m.C.Bad.Add(1)
		return RxToGo, nil, 0, 0, 0
	}
	// 3.
	key := RxKey(StreamKey{Src: src, Port: h[5], Class: Class(h[4] >> 5)})
	i, ok := m.Slot(key)
	if dst != m.Self || !ok || i >= KernelRxStreams {
		m.C.NotOurs.Add(1)
		return RxToGo, nil, 0, 0, 0
	}
	s := &m.S[i]
	// 4.
	old := s.Point.Load()
	if old&RxOwned == 0 || s.Key != key {
		m.C.GoOwned.Add(1)
		return RxToGo, nil, 0, 0, 0
	}
	// 5.
	rec := frame[CellPayloadOffset:]
	redirect := false
	why := &m.C.HoRecord
	var rlen uint16
	if len(rec) >= minKernelRecord+RecordHeaderLen {
		rlen = binary.BigEndian.Uint16(rec)
		if first == 0 && plen >= 2 && rlen == plen-2 && rlen >= minKernelRecord && rlen <= MaxRecordFrame {
			if why = m.takes(s, old, h, rec, seq, recNo, epoch, cpu, now); why == nil {
				redirect = m.Hosts[h[5]&(KernelRxHosts-1)] && h[5] < KernelRxHosts
			}
		}
	}
	if !redirect {
		if s.Point.CompareAndSwap(old, old&^RxOwned) {
			s.Handovers.Add(1)
			m.C.Handovers.Add(1)
			if why != nil {
				why.Add(1)
			}
		}
		return RxToGo, nil, 0, 0, 0
	}
	// 6.
	nw := uint64(RxOwned) | uint64((cpu+1)&0x7f)<<rxCPUShift | (now>>rxStampNs&0xff)<<rxStampShift |
		uint64(recNo+1)<<rxRecShift | uint64(seq+1)
	if !s.Point.CompareAndSwap(old, nw) {
		m.C.Raced.Add(1)
		return RxToGo, nil, 0, 0, 0
	}
	// 7.
	host = frame[CellPayloadOffset+3 : CellPayloadOffset+RecordHeaderLen+int(rlen)]
	s.Frames.Add(1)
	s.Bytes.Add(uint64(rlen - 1))
	s.Payload.Add(uint64(plen))
	m.C.Delivered.Add(1)
	m.C.Bytes.Add(uint64(rlen - 1))
	return RxDelivered, host, h[5], i, nw
}

// takes is lf_cell_rx_takes: nil, or the counter of why not.
func (m *CellRxModel) takes(s *ModelSlot, old uint64, h, rec []byte, seq uint32, recNo, epoch uint16, cpu uint32, now uint64) *atomic.Uint64 {
	last := old >> rxCPUShift & 0x7f
	stamp := old >> rxStampShift & 0xff
	if uint32(old) != seq || uint16(old>>rxRecShift) != recNo {
		return &m.C.HoOrder
	}
	if h[4]&cellFCI != 0 || epoch == 0 || epoch != s.Epoch || rec[2] != s.SrcPort {
		return &m.C.HoSource
	}
	if [6]byte(rec[9:15]) != s.MAC {
		return &m.C.HoSource
	}
	if last != 0 && last != uint64(cpu+1) && s.Passed.Load() != old && (now>>rxStampNs-stamp)&0xff < KernelRxQuiet {
		return &m.C.HoCPU
	}
	return nil
}
