package cellify

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"slices"
)

// ReasmConfig configures a Reassembler.
type ReasmConfig struct {
	Window     int   // cells held per stream beyond the next expected one; default 512
	MaxPayload int   // largest cell payload accepted; default 2048
	Timeout    int64 // ns a hole may hold up its stream before it is skipped; default 1 ms
	MaxStreams int   // default 256
	// MaxHeldBytes bounds the cell buffers of all streams together
	// (default 64 MiB): a stream gets one (Window cells) when it first
	// holds an early cell. Beyond it, buffers of streams holding nothing
	// are freed, and if that is not enough the early cell is dropped
	// (NoBuffer): cells from many forged sources cannot take the memory.
	MaxHeldBytes int
	Self         EdgeID // if nonzero, cells addressed to another edge are dropped
	// EpochHold: after a stream's source changes epoch (it rebooted), its
	// cells of the epoch before are dropped for this long, and restart the
	// stream again beyond; default 4 × Timeout.
	EpochHold int64
	// LostWait: for each cell a link layer reports lost for good (Lost),
	// one hole older than LostWait is skipped without waiting for the
	// Timeout; default 1 ms (the cells of a hole's stream sprayed over
	// other links have arrived by then). Negative: Lost is ignored.
	LostWait int64
}

// Reassembly defaults.
const (
	DefaultWindow       = 512
	DefaultMaxPayload   = 2048
	DefaultReasmTimeout = 1_000_000
	DefaultLostWait     = 1_000_000
	// maxLostDebt bounds the losses reported and not yet matched to a hole.
	maxLostDebt         = 256
	DefaultMaxStreams   = 256
	DefaultMaxHeldBytes = 64 << 20
	// idleStreamTimeouts: a stream silent this many Timeouts, holding
	// nothing, gives its place to a new stream when MaxStreams are in use.
	idleStreamTimeouts = 100
	MaxReasmBytes      = 1 << 30 // bound on one stream's cell buffer: the power of two above Window, × MaxPayload
)

// ReasmStats counts what a Reassembler did. Record bytes are frame bytes;
// DiscardedBytes are stream bytes (length prefixes included).
type ReasmStats struct {
	Cells            uint64 // cells accepted (consumed at once or held)
	BadCells         uint64 // frames or headers rejected (ParseCell, inconsistent fields)
	WrongDst         uint64 // cells for another edge
	Oversize         uint64 // cells above MaxPayload
	NoStream         uint64 // cells of a new stream beyond MaxStreams
	NoBuffer         uint64 // early cells dropped: MaxHeldBytes in use
	Evicted          uint64 // idle streams that gave their place to a new one
	Duplicates       uint64 // cells already held or already consumed
	Late             uint64 // cells of a hole already skipped
	OutOfWindow      uint64 // cells too far ahead of or behind their stream
	Resyncs          uint64 // streams restarted at a cell far out of the window
	Restarts         uint64 // streams restarted for a new epoch of their source (it rebooted)
	RestartCells     uint64 // cells held when their stream restarted (dropped)
	StaleEpoch       uint64 // cells of a source's epoch before its latest (dropped)
	Delivered        uint64 // records delivered
	DeliveredBytes   uint64
	Timeouts         uint64 // holes skipped
	LostSkips        uint64 // ... of them early, matched to a loss a link layer reported
	LostReported     uint64 // cells reported lost for good (Lost)
	SkippedCells     uint64 // cell seqs given up by those skips
	DiscardedRecords uint64 // records lost to holes and resyncs (counted by record number)
	DiscardedBytes   uint64 // received bytes of those records and of malformed ones
	Malformed        uint64 // records with a length outside MinRecordFrame..MaxRecordFrame
	Inconsistent     uint64 // cells whose first-record offset or record number disagrees with the stream
	Buffered         uint64 // cells held now
	PeakBuffered     uint64
	BufferedBytes    uint64 // payload bytes of the cells held now
	KernelGives      uint64 // points given to the kernel path (SetKernel)
}

// Reassembler rebuilds the records of every stream arriving at an egress
// edge and hands each host frame, in stream order, to the deliver function
// given to NewReassembler. The frame passed to deliver is valid only during
// the call, which must not call back into the Reassembler. Receive,
// ReceiveCell and Poll do not allocate once a stream exists and has held a
// cell.
type Reassembler struct {
	cfg     ReasmConfig
	deliver func(StreamKey, []byte)
	skipped func(StreamKey, int) // SetSkipped
	m       map[StreamKey]*stream
	list    []*stream
	st      ReasmStats
	held    int // bytes of the streams' cell buffers (slab)
	// heldPort: payload bytes of the cells held, per destination port.
	heldPort [256]int
	// lost: times of the losses reported and not yet matched to a hole, a
	// ring of lostN from lostHead; each expires after Timeout (its hole
	// times out anyway, or it left none: the lost cell was a stream's last).
	lost            [maxLostDebt]int64
	lostHead, lostN int
	kern            ReasmKernel // SetKernel
	touched         []*stream   // streams that took a cell since the last HandBack
}

// ReasmKernel is a kernel path that delivers the in-order cells of the
// streams whose in-order point it owns (KernelRx; the argument for the
// hand-over is in kernrx.go). The Reassembler takes a stream's point back
// before it looks at any cell of the stream, and gives it (HandBack) only
// when it holds nothing for the stream and is at a record boundary.
type ReasmKernel interface {
	// Take takes the point of a stream given to the kernel: the next
	// seq and record number the kernel left.
	Take(key StreamKey) (seq uint32, recNo uint16)
	// Give gives the point at seq and recNo, in epoch, with rec the head
	// of the record delivered last; false if the kernel does not take it.
	Give(key StreamKey, seq uint32, recNo, epoch uint16, rec []byte) bool
	// Drop forgets a stream whose point is Go's.
	Drop(key StreamKey)
}

// kernRecHead is how much of the last record delivered a stream keeps for
// Give: the source port byte and the MACs.
const kernRecHead = 13

type slot struct {
	at    int64
	seq   uint32
	buf   int32 // the place of its payload in the stream's slab
	n     uint16
	first uint16
	recNo uint16
	full  bool
}

// stream is one reassembly stream: a window of cells from next on, and the
// record being parsed.
type stream struct {
	key      StreamKey
	ep       peerEpoch // the source's epochs
	next     uint32    // seq of the next cell to consume
	buffered int       // held cells
	heldB    int       // their payload bytes
	hi       uint32    // highest held seq
	since    int64     // the head hole is known since (earliest arrival of a held cell)
	last     int64     // last accepted cell
	fresh    bool      // no cell accepted yet
	slots    []slot
	slab     []byte
	// free are the slab's places no held cell takes, the last freed on
	// top: a held cell takes the place freed last, so a stream that holds
	// few cells at a time keeps to a few places of its slab, warm, where
	// the place of its seq would go through all of it.
	free   []int32
	skipLo uint32 // last skipped seq range [skipLo, skipHi)
	skipHi uint32

	sync      bool   // parsing; false: discarding until a record start
	lostKnown bool   // !sync: lostFrom is valid
	lostAny   bool   // !sync: bytes of record lostFrom were discarded
	lostFrom  uint16 // !sync: number of the first lost record not yet counted
	recNo     uint16 // number of the record in progress, or of the next one
	hdr       [RecordHeaderLen]byte
	hdrGot    int // length-prefix bytes of the record in progress
	recLen    int
	recGot    int
	rec       []byte

	kern     bool // the point was given to the kernel and not taken back
	touch    bool // in Reassembler.touched
	head     [kernRecHead]byte
	headN    int // bytes of head: of the record delivered last
	kernNext uint32
}

// NewReassembler returns a Reassembler delivering host frames to deliver.
func NewReassembler(cfg ReasmConfig, deliver func(key StreamKey, frame []byte)) (*Reassembler, error) {
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultReasmTimeout
	}
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = DefaultMaxStreams
	}
	if cfg.MaxHeldBytes == 0 {
		cfg.MaxHeldBytes = DefaultMaxHeldBytes
	}
	if cfg.EpochHold == 0 {
		cfg.EpochHold = 4 * cfg.Timeout
	}
	if cfg.LostWait == 0 {
		cfg.LostWait = DefaultLostWait
	}
	if cfg.Window < 1 || cfg.MaxPayload < 1 || cfg.MaxPayload > MaxCellPayload ||
		cfg.Window > MaxReasmBytes/2/cfg.MaxPayload || cfg.Timeout < 0 || cfg.EpochHold < 0 || cfg.MaxStreams < 1 || deliver == nil {
		return nil, errors.New("cellify: reassembly config out of range")
	}
	return &Reassembler{cfg: cfg, deliver: deliver, m: make(map[StreamKey]*stream, cfg.MaxStreams)}, nil
}

// Stats returns the counters.
func (r *Reassembler) Stats() ReasmStats { return r.st }

// Config returns the configuration in use (defaults filled in).
func (r *Reassembler) Config() ReasmConfig { return r.cfg }

// Receive takes a whole cell frame.
func (r *Reassembler) Receive(now int64, frame []byte) {
	h, err := ParseCell(frame)
	if err != nil {
		r.st.BadCells++
		return
	}
	r.ReceiveCell(now, &h, frame[CellPayloadOffset:CellPayloadOffset+int(h.Len)])
}

// ReceiveCell takes a cell whose header the caller decoded; payload is its
// h.Len payload bytes.
func (r *Reassembler) ReceiveCell(now int64, h *CellHeader, payload []byte) {
	if len(payload) != int(h.Len) || h.check() != nil {
		r.st.BadCells++
		return
	}
	if r.cfg.Self != 0 && h.Dst != r.cfg.Self {
		r.st.WrongDst++
		return
	}
	if len(payload) > r.cfg.MaxPayload {
		r.st.Oversize++
		return
	}
	s := r.stream(now, h.Key())
	if s == nil {
		r.st.NoStream++
		return
	}
	r.take(s, now)
	if r.kern != nil && !s.touch {
		s.touch = true
		r.touched = append(r.touched, s)
	}
	if h.Epoch != 0 && h.Epoch != s.ep.cur {
		ok, changed := s.ep.heard(now, r.cfg.EpochHold, h.Epoch)
		if !ok {
			r.st.StaleEpoch++
			return
		}
		if changed {
			r.restart(s, now)
		}
	}
	w := uint32(r.cfg.Window)
	d := h.Seq - s.next
	switch {
	case d == 0:
	case d <= w:
		r.hold(s, now, h, payload)
		return
	case !s.fresh && s.next-h.Seq <= w:
		if h.Seq-s.skipLo < s.skipHi-s.skipLo {
			r.st.Late++
		} else {
			r.st.Duplicates++
		}
		return
	case s.fresh || s.buffered == 0 && now-s.last >= r.cfg.Timeout:
		// Far from a stream that is new or has been silent a timeout: the
		// sender restarted, or this edge did. Start over at this cell.
		if s.sync {
			r.abandon(s)
		}
		s.lostKnown = false
		s.next = h.Seq
		r.st.Resyncs++
	default:
		r.st.OutOfWindow++
		return
	}
	r.st.Cells++
	s.last, s.fresh = now, false
	r.consume(s, h.First, h.RecNo, payload)
	s.next++
	r.drain(s)
}

// restart makes s a new stream (its source rebooted): the record in
// progress and the cells held are dropped, the next cell expected is 0 (a
// source's first), and a cell far from it starts the stream where it is.
func (r *Reassembler) restart(s *stream, now int64) {
	r.st.Restarts++
	if s.sync && s.hdrGot > 0 {
		r.st.DiscardedRecords++
		r.st.DiscardedBytes += uint64(s.hdrGot + s.recGot)
	}
	if s.buffered > 0 {
		for i := range s.slots {
			s.slots[i].full = false
		}
		s.freeAll()
		r.st.RestartCells += uint64(s.buffered)
		r.st.Buffered -= uint64(s.buffered)
		r.st.BufferedBytes -= uint64(s.heldB)
		r.heldPort[s.key.Port] -= s.heldB
	}
	*s = stream{key: s.key, ep: s.ep, sync: true, fresh: true, last: now, slots: s.slots, slab: s.slab, free: s.free, rec: s.rec, touch: s.touch}
}

// hold keeps an early cell (1 ≤ seq-next ≤ Window) in its slot.
func (r *Reassembler) hold(s *stream, now int64, h *CellHeader, payload []byte) {
	if s.slots == nil {
		// A power of two ≥ Window+1, so that slot = seq mod len stays
		// unique across the wrap of seq.
		n := 1 << bits.Len(uint(r.cfg.Window))
		if !r.reserve(s, n*r.cfg.MaxPayload) {
			r.st.NoBuffer++
			return
		}
		s.slots = make([]slot, n)
		s.slab = make([]byte, n*r.cfg.MaxPayload)
		s.free = make([]int32, n)
		s.freeAll()
	}
	i := int(h.Seq & uint32(len(s.slots)-1))
	sl := &s.slots[i]
	if sl.full { // the same seq: held seqs next+1..next+Window have their own slots
		r.st.Duplicates++
		return
	}
	buf := s.free[len(s.free)-1] // a held seq has its slot, and a slot its place
	s.free = s.free[:len(s.free)-1]
	*sl = slot{at: now, seq: h.Seq, buf: buf, n: h.Len, first: h.First, recNo: h.RecNo, full: true}
	copy(s.slab[int(buf)*r.cfg.MaxPayload:], payload)
	if s.buffered == 0 {
		s.since, s.hi = now, h.Seq
	} else if h.Seq-s.next > s.hi-s.next {
		s.hi = h.Seq
	}
	s.buffered++
	s.heldB += int(h.Len)
	r.st.BufferedBytes += uint64(h.Len)
	r.heldPort[s.key.Port] += int(h.Len)
	r.st.Cells++
	r.st.Buffered++
	r.st.PeakBuffered = max(r.st.PeakBuffered, r.st.Buffered)
	s.last, s.fresh = now, false
}

// freeAll makes every place of the slab free, the first on top.
func (s *stream) freeAll() {
	s.free = s.free[:cap(s.free)]
	for k := range s.free {
		s.free[k] = int32(len(s.free) - 1 - k)
	}
}

// drain consumes the held cells that follow next without a gap.
func (r *Reassembler) drain(s *stream) {
	if s.buffered == 0 {
		return
	}
	mask := uint32(len(s.slots) - 1)
	moved := false
	for s.buffered > 0 {
		i := s.next & mask
		sl := &s.slots[i]
		if !sl.full || sl.seq != s.next {
			break
		}
		off := int(sl.buf) * r.cfg.MaxPayload
		r.consume(s, sl.first, sl.recNo, s.slab[off:off+int(sl.n)])
		sl.full = false
		s.free = append(s.free, sl.buf)
		s.buffered--
		s.heldB -= int(sl.n)
		r.st.BufferedBytes -= uint64(sl.n)
		r.heldPort[s.key.Port] -= int(sl.n)
		r.st.Buffered--
		s.next++
		moved = true
	}
	if moved && s.buffered > 0 {
		// The new head hole is known since the earliest arrival of a cell after it.
		s.since = math.MaxInt64
		for q := s.next; q-s.next <= s.hi-s.next; q++ {
			if sl := &s.slots[q&mask]; sl.full && sl.at < s.since {
				s.since = sl.at
			}
		}
	}
}

// Lost reports n cells lost for good on a link toward this edge (a link
// layer numbers its cells and will not recover these): as many holes, each
// older than LostWait, are skipped at the next Polls without waiting for
// the Timeout, oldest first. A lost cell left a hole in one stream, unless
// it was its stream's last; a report not matched within the Timeout
// expires.
func (r *Reassembler) Lost(now int64, n int) {
	if r.cfg.LostWait < 0 || n <= 0 {
		return
	}
	r.st.LostReported += uint64(n)
	for range min(n, maxLostDebt) {
		if r.lostN == maxLostDebt { // the oldest report gives its place
			r.lostHead = (r.lostHead + 1) % maxLostDebt
			r.lostN--
		}
		r.lost[(r.lostHead+r.lostN)%maxLostDebt] = now
		r.lostN++
	}
}

// HeldBytes returns the payload bytes of the cells held for host port p.
func (r *Reassembler) HeldBytes(p uint8) int { return r.heldPort[p] }

// SetSkipped sets a function told of every hole skipped: the stream and
// the cells given up (it must not call back into the Reassembler).
func (r *Reassembler) SetSkipped(fn func(key StreamKey, cells int)) { r.skipped = fn }

// Poll skips the holes that have held up their stream for the timeout, and
// holes matched to reported losses (Lost) older than LostWait, and returns
// the next deadline (math.MaxInt64 if none).
func (r *Reassembler) Poll(now int64) int64 {
	for r.lostN > 0 && now-r.lost[r.lostHead] >= r.cfg.Timeout {
		r.lostHead, r.lostN = (r.lostHead+1)%maxLostDebt, r.lostN-1
	}
	for r.lostN > 0 {
		var old *stream
		for _, s := range r.list {
			if s.buffered > 0 && now-s.since >= r.cfg.LostWait && (old == nil || s.since < old.since) {
				old = s
			}
		}
		if old == nil {
			break
		}
		r.lostHead, r.lostN = (r.lostHead+1)%maxLostDebt, r.lostN-1
		r.st.LostSkips++
		r.skip(old)
	}
	next := int64(math.MaxInt64)
	for _, s := range r.list {
		for s.buffered > 0 && now-s.since >= r.cfg.Timeout {
			r.skip(s)
		}
		if s.buffered > 0 {
			next = min(next, s.since+r.cfg.Timeout)
			if r.lostN > 0 {
				next = min(next, s.since+r.cfg.LostWait)
			}
		}
	}
	if r.lostN > 0 {
		next = min(next, r.lost[r.lostHead]+r.cfg.Timeout)
	}
	return next
}

// skip gives up the missing cells before the first held one.
func (r *Reassembler) skip(s *stream) {
	mask := uint32(len(s.slots) - 1)
	to := s.next + 1
	for !s.slots[to&mask].full {
		to++
	}
	r.st.Timeouts++
	r.st.SkippedCells += uint64(to - s.next)
	if r.skipped != nil {
		r.skipped(s.key, int(to-s.next))
	}
	s.skipLo, s.skipHi = s.next, to
	if s.sync {
		r.abandon(s)
	}
	s.next = to
	r.drain(s)
}

// abandon drops the record in progress and starts discarding until the next
// record start; records from the current number on are counted lost then.
func (r *Reassembler) abandon(s *stream) {
	if s.hdrGot > 0 {
		r.st.DiscardedBytes += uint64(s.hdrGot + s.recGot)
		s.lostAny = true
	}
	s.sync, s.lostKnown, s.lostFrom = false, true, s.recNo
	s.hdrGot, s.recGot = 0, 0
}

// consume feeds the next cell of the stream, in order, to the record parser.
func (r *Reassembler) consume(s *stream, first, recNo uint16, p []byte) {
	if s.sync && !s.expects(first, recNo, p) {
		r.st.Inconsistent++
		r.abandon(s)
	}
	if !s.sync {
		if !s.lostKnown {
			s.lostFrom, s.lostKnown = recNo, true
		}
		if first == NoRecord {
			// All of record recNo: lost, with the ones before it.
			r.lose(s, recNo+1)
			r.st.DiscardedBytes += uint64(len(p))
			return
		}
		start := recNo
		if first != 0 {
			start++ // byte 0 belongs to record recNo, the next starts at first
		}
		r.lose(s, start)
		r.st.DiscardedBytes += uint64(first)
		s.sync, s.recNo = true, start
		p = p[first:]
	}
	r.parse(s, p)
}

// lose counts the records from lostFrom up to (not including) upTo as lost,
// at least one if bytes of record lostFrom were discarded.
func (r *Reassembler) lose(s *stream, upTo uint16) {
	n := max(int(int16(upTo-s.lostFrom)), 0)
	if n == 0 && s.lostAny {
		n = 1
	}
	r.st.DiscardedRecords += uint64(n)
	if n > 0 {
		s.lostFrom = upTo
	}
	s.lostAny = false
}

// expects reports whether a cell starting with record recNo and whose first
// record starts at first continues the parse where it stands.
func (s *stream) expects(first, recNo uint16, p []byte) bool {
	if recNo != s.recNo {
		return false
	}
	var rem int
	switch s.hdrGot {
	case 0:
		return first == 0
	case 1:
		l := int(s.hdr[0])<<8 | int(p[0])
		if l < MinRecordFrame || l > MaxRecordFrame {
			return true // parse counts it malformed
		}
		rem = 1 + l
	default:
		rem = s.recLen - s.recGot
	}
	if rem < len(p) {
		return int(first) == rem
	}
	return first == NoRecord
}

// parse cuts records out of in-order stream bytes.
func (r *Reassembler) parse(s *stream, p []byte) {
	for len(p) > 0 {
		if s.hdrGot == 0 && len(p) >= RecordHeaderLen {
			// Fast path: a whole record inside p is delivered from where it lies.
			l := int(binary.BigEndian.Uint16(p))
			if l >= MinRecordFrame && l <= MaxRecordFrame && RecordHeaderLen+l <= len(p) {
				r.out(s, p[RecordHeaderLen:RecordHeaderLen+l])
				p = p[RecordHeaderLen+l:]
				continue
			}
		}
		if s.hdrGot < RecordHeaderLen {
			s.hdr[s.hdrGot] = p[0]
			s.hdrGot++
			p = p[1:]
			if s.hdrGot < RecordHeaderLen {
				continue
			}
			l := int(binary.BigEndian.Uint16(s.hdr[:]))
			if l < MinRecordFrame || l > MaxRecordFrame {
				// Its end is unknown: discard up to the next record start
				// named by a cell header.
				r.st.Malformed++
				r.st.DiscardedBytes += uint64(RecordHeaderLen + len(p))
				s.hdrGot = 0
				s.sync, s.lostKnown, s.lostAny, s.lostFrom = false, true, false, s.recNo+1
				return
			}
			s.recLen, s.recGot = l, 0
			if s.rec == nil {
				s.rec = make([]byte, MaxRecordFrame)
			}
			continue
		}
		k := copy(s.rec[s.recGot:s.recLen], p)
		s.recGot += k
		p = p[k:]
		if s.recGot == s.recLen {
			s.hdrGot, s.recGot = 0, 0
			r.out(s, s.rec[:s.recLen])
		}
	}
}

func (r *Reassembler) out(s *stream, frame []byte) {
	s.recNo++
	if r.kern != nil {
		s.headN = copy(s.head[:], frame)
	}
	r.st.Delivered++
	r.st.DeliveredBytes += uint64(len(frame))
	r.deliver(s.key, frame)
}

// stream finds or creates the stream of key. Beyond MaxStreams a stream
// idle for idleStreamTimeouts with nothing held gives its place (it would
// start over at its next cell anyway); nil if none is.
func (r *Reassembler) stream(now int64, key StreamKey) *stream {
	if s := r.m[key]; s != nil {
		return s
	}
	s := &stream{key: key, sync: true, fresh: true, last: now}
	if len(r.list) < r.cfg.MaxStreams {
		r.m[key] = s
		r.list = append(r.list, s)
		return s
	}
	for i, old := range r.list {
		r.take(old, now)
		if old.buffered == 0 && now-old.last >= idleStreamTimeouts*max(r.cfg.Timeout, 1) {
			if r.kern != nil {
				r.kern.Drop(old.key)
			}
			if old.touch {
				r.touched = slices.DeleteFunc(r.touched, func(t *stream) bool { return t == old })
			}
			if old.sync && old.hdrGot > 0 {
				r.st.DiscardedRecords++
				r.st.DiscardedBytes += uint64(old.hdrGot + old.recGot)
			}
			r.held -= len(old.slab)
			delete(r.m, old.key)
			r.list[i] = s
			r.m[key] = s
			r.st.Evicted++
			return s
		}
	}
	return nil
}

// reserve accounts n bytes of cell buffer for s, freeing the buffers of
// other streams that hold nothing if MaxHeldBytes would be passed; false
// if it still would.
func (r *Reassembler) reserve(s *stream, n int) bool {
	if r.held+n > r.cfg.MaxHeldBytes {
		for _, o := range r.list {
			if o != s && o.buffered == 0 && o.slab != nil {
				r.held -= len(o.slab)
				o.slots, o.slab, o.free = nil, nil, nil
			}
		}
	}
	if r.held+n > r.cfg.MaxHeldBytes {
		return false
	}
	r.held += n
	return true
}

// SetKernel gives the Reassembler a kernel path (nil: none). Set it before
// the first cell.
func (r *Reassembler) SetKernel(k ReasmKernel) { r.kern = k }

// take takes s's point back from the kernel if it was given: s's next seq
// and record number are where the kernel left them (it delivered whole
// records only, so the parser is at a record boundary), and a stream the
// kernel moved was not silent.
func (r *Reassembler) take(s *stream, now int64) {
	if !s.kern {
		return
	}
	s.kern = false
	seq, recNo := r.kern.Take(s.key)
	if seq != s.kernNext {
		s.last = now
	}
	s.next, s.recNo = seq, recNo
}

// HandBack gives the kernel the point of every stream that took a cell
// since the last call and now holds nothing, is at a record boundary (in
// sync, no partial record) and has an epoch. Call it when every record
// delivered so far is on its host port's ring (the kernel's deliveries
// must not overtake them).
func (r *Reassembler) HandBack() {
	if r.kern == nil {
		return
	}
	for _, s := range r.touched {
		s.touch = false
		if s.kern || s.buffered > 0 || !s.sync || s.hdrGot > 0 || s.fresh || s.ep.cur == 0 || s.headN < kernRecHead {
			continue
		}
		if r.kern.Give(s.key, s.next, s.recNo, s.ep.cur, s.head[:s.headN]) {
			s.kern, s.kernNext = true, s.next
			r.st.KernelGives++
		}
	}
	clear(r.touched)
	r.touched = r.touched[:0]
}
