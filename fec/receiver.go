package fec

import (
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// Window is how many sequence numbers the receiver holds (a power of
	// two, at least 2·MaxN so that a whole group always fits; default
	// 1024). A frame further ahead pushes the oldest out.
	Window int
	// Wait is the bounded wait (ns), in order: how long a hole holds back
	// the frames behind it before the receiver gives up on it and delivers
	// them. To recover every single loss it must exceed the sender's Flush
	// plus the link's delay; shorter trades recoveries for latency (a frame
	// recovered later is still delivered, late). 0 means DefaultWait.
	Wait int64
	// Hold is how long a frame (or a hole) is kept for recovery while no
	// parity has covered it yet (ns, ≥ Wait; 0 means max(Wait, DefaultWait)).
	Hold int64
	// Immediate delivers every frame when it arrives (or is recovered), out
	// of order, instead of in sequence order.
	Immediate bool
	// InitSeq is the first sequence number expected.
	InitSeq seqhdr.Seq
	// Carried accepts frames of the carried types (the cell family,
	// sequenced in place by Sender.SendCarried) besides data frames: they
	// are held and delivered whole, link header and all, and a frame
	// rebuilt from parity may be one (checked by the sequence number it
	// carries). An unsequenced carried frame is delivered as it is
	// (Passthrough). Without Carried they are BadData, and a rebuilt
	// frame must not be a link frame.
	Carried bool
}

// DefaultWait is ReceiverConfig.Wait's default.
const DefaultWait = 2 * DefaultFlush

func (c *ReceiverConfig) check() error {
	orDefault(&c.Window, 1024)
	orDefault(&c.Wait, DefaultWait)
	orDefault(&c.Hold, max(c.Wait, DefaultWait))
	switch {
	case c.Window < 2*MaxN || c.Window&(c.Window-1) != 0 || c.Window > seqhdr.Half/2:
		return fmt.Errorf("%w: Window %d: want a power of two from %d to %d", ErrConfig, c.Window, 2*MaxN, seqhdr.Half/2)
	case c.Wait < 0:
		return fmt.Errorf("%w: Wait %d ns: want > 0", ErrConfig, c.Wait)
	case c.Hold < c.Wait:
		return fmt.Errorf("%w: Hold %d ns below Wait %d ns", ErrConfig, c.Hold, c.Wait)
	case c.InitSeq >= seqhdr.Space:
		return fmt.Errorf("%w: InitSeq %d beyond the sequence space", ErrConfig, c.InitSeq)
	}
	return nil
}

// ReceiverStats counts what a Receiver did. Data frames that crossed the
// link are DataRx; a hole is a run of sequence numbers found missing (Gaps
// numbers in Holes runs; Gaps/Holes is the mean loss burst).
type ReceiverStats struct {
	Frames      uint64 `json:"frames"`       // data frames received, duplicates included
	DataRx      uint64 `json:"data_rx"`      // distinct data frames received
	Span        uint64 `json:"span"`         // sequence numbers the receiver has seen pass (received or missing)
	Gaps        uint64 `json:"gaps"`         // sequence numbers found missing when a later one arrived
	Holes       uint64 `json:"holes"`        // runs of such numbers
	Filled      uint64 `json:"filled"`       // missing numbers that arrived later (reordered, not lost)
	Recovered   uint64 `json:"recovered"`    // frames rebuilt from parity
	Delivered   uint64 `json:"delivered"`    // frames delivered to the host
	Lost        uint64 `json:"lost"`         // sequence numbers released without delivery: the residual loss
	Skipped     uint64 `json:"skipped"`      // holes given up on after Wait (in order)
	Late        uint64 `json:"late"`         // frames recovered after their hole was skipped, delivered late
	Dup         uint64 `json:"dup"`          // duplicate data frames (replication copies), dropped
	Old         uint64 `json:"old"`          // data frames behind the window, dropped
	Far         uint64 `json:"far"`          // data or parity frames more than a window beyond the window, dropped (unless they move it: Jumps)
	Forced      uint64 `json:"forced"`       // numbers pushed out of the window by a frame ahead of it
	Jumps       uint64 `json:"jumps"`        // window moved to where jumpAfter data frames in a row, a window or more away from it, were
	Parity      uint64 `json:"parity"`       // parity frames received
	ParityIdle  uint64 `json:"parity_idle"`  // parity frames with nothing missing
	ParityShort uint64 `json:"parity_short"` // parity frames with two or more missing: unrecoverable groups
	ParityStale uint64 `json:"parity_stale"` // parity frames for groups already resolved or behind the window
	BadParity   uint64 `json:"bad_parity"`   // parity frames that fail to decode
	BadRecovery uint64 `json:"bad_recovery"` // parity frames whose XOR does not yield a frame (inconsistent lengths, non-zero padding)
	BadData     uint64 `json:"bad_data"`     // link frames that are neither valid data nor parity
	Passthrough uint64 `json:"passthrough"`  // Ethernet frames without the link EtherType, delivered as they are
	// RecoverNanos sums, and RecoverMax bounds, the time from a hole's
	// detection to its recovery (what Wait must cover).
	RecoverNanos uint64 `json:"recover_ns"`
	RecoverMax   int64  `json:"recover_max_ns"`
}

// ReceiverOut is what a Receiver asks the caller to do: transmit Deliver to
// the host (in order unless Immediate), then release Free. A frame may be
// delivered in one call and released in a later one (it is kept, read only,
// for recovering its group): the caller must not reuse its memory before it
// is in Free, and may release it before its host transmission completes
// only if it counts references (as the dataplane's UMEM does).
type ReceiverOut struct {
	Deliver []link.Frame
	Free    []link.Frame
}

// Reset empties the lists.
func (o *ReceiverOut) Reset() { o.Deliver, o.Free = o.Deliver[:0], o.Free[:0] }

// rxSlot is one sequence number in the window.
type rxSlot struct {
	f         link.Frame // the original frame (link header stripped); Len 0: missing
	at        int64      // arrival, or detection of its absence
	delivered bool
}

// Receiver de-duplicates, recovers single losses per group from parity and
// delivers, in order with a bounded wait or immediately. Every frame given
// to Receive comes back exactly once in Out.Free (recovered frames live in
// their parity frame's buffer, which comes back through them).
type Receiver struct {
	cfg   ReceiverConfig
	mem   link.Memory
	Out   ReceiverOut
	Stats ReceiverStats

	slots []rxSlot
	mask  seqhdr.Seq
	// base: oldest number held; next: next to deliver in order; high: one
	// past the highest number seen; resolved: numbers below it belong to
	// groups whose parity has been processed. base ≤ next ≤ high.
	base, next, high, resolved seqhdr.Seq
	// jump and jumpN: the last of jumpN data frames in a row, each a
	// little after the one before, a window or more away from this one.
	jump  seqhdr.Seq
	jumpN int
}

// jumpAfter is how many data frames in a row, each a little after the one
// before and a window or more away from the window, move the window to
// them: the sender is there (after an outage of more than a window, or a
// restart the session missed). One frame alone (a forged or misnumbered
// one) moves nothing, so it cannot strand the real sender behind the window.
const jumpAfter = 8

// NewReceiver returns a Receiver over mem.
func NewReceiver(cfg ReceiverConfig, mem link.Memory) (*Receiver, error) {
	if mem == nil {
		return nil, fmt.Errorf("%w: NewReceiver needs a Memory", ErrConfig)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &Receiver{cfg: cfg, mem: mem, slots: make([]rxSlot, cfg.Window), mask: seqhdr.Seq(cfg.Window - 1)}
	r.Out.Deliver = make([]link.Frame, 0, 256)
	r.Out.Free = make([]link.Frame, 0, 256)
	r.base, r.next, r.high, r.resolved = cfg.InitSeq, cfg.InitSeq, cfg.InitSeq, cfg.InitSeq
	return r, nil
}

// SetImmediate switches between in-order and immediate delivery.
func (r *Receiver) SetImmediate(now int64, on bool) {
	if on == r.cfg.Immediate {
		return
	}
	r.cfg.Immediate = on
	if on {
		// Deliver what waited behind holes.
		for q := r.next; q != r.high; q = q.Next() {
			if s := r.slot(q); s.f.Len > 0 && !s.delivered {
				r.deliver(s)
			}
		}
	}
	r.next = r.high
	r.release(now)
}

// Wait returns the bounded wait in force (ns).
func (r *Receiver) Wait() int64 { return r.cfg.Wait }

// SetWait changes the bounded wait (ns, > 0); Hold grows with it if needed.
func (r *Receiver) SetWait(d int64) {
	if d > 0 {
		r.cfg.Wait = d
		r.cfg.Hold = max(r.cfg.Hold, d)
	}
}

// Held returns the frames the receiver holds.
func (r *Receiver) Held() int {
	n := 0
	for q := r.base; q != r.high; q = q.Next() {
		if r.slot(q).f.Len > 0 {
			n++
		}
	}
	return n
}

func (r *Receiver) slot(q seqhdr.Seq) *rxSlot { return &r.slots[q&r.mask] }

// Receive processes a frame from the link; the Receiver takes ownership.
func (r *Receiver) Receive(now int64, f link.Frame) {
	b := r.mem.Bytes(f.H, f.Len)
	t, ok := seqhdr.FrameType(b)
	switch {
	case !seqhdr.IsLink(b) && f.Len >= MinFrame:
		r.Stats.Passthrough++
		r.Stats.Delivered++
		r.Out.Deliver = append(r.Out.Deliver, f)
		r.Out.Free = append(r.Out.Free, f)
		return
	case ok && t == seqhdr.TypeFECParity:
		r.onParity(now, f, b)
	case ok && t == seqhdr.TypeData:
		r.onData(now, f, b)
	case ok && t.IsCarried() && r.cfg.Carried:
		r.onCarried(now, f, b)
	default:
		r.Stats.BadData++
		r.Out.Free = append(r.Out.Free, f)
	}
	r.release(now)
}

func (r *Receiver) onData(now int64, f link.Frame, b []byte) {
	h, off, n, err := seqhdr.Strip(b, 0, f.Len)
	if err != nil || h.Unseq || h.HasAck || h.Retx || n < MinFrame || seqhdr.IsLink(b[off:off+n]) {
		r.Stats.BadData++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	r.onSeq(now, f, h.Seq, link.Frame{H: f.H + link.Handle(off), Len: n})
}

// onCarried takes a carried frame: sequenced ones like data frames, kept
// whole; unsequenced ones (control frames sent uncoded) delivered at once.
func (r *Receiver) onCarried(now int64, f link.Frame, b []byte) {
	h, err := seqhdr.ParseCarried(b)
	if err != nil || h.Retx || h.HasAck && !h.Unseq { // this Sender acknowledges nothing
		r.Stats.BadData++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	if h.Unseq {
		r.Stats.Passthrough++
		r.Stats.Delivered++
		r.Out.Deliver = append(r.Out.Deliver, f)
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	r.onSeq(now, f, h.Seq, f)
}

// onSeq places a sequenced frame f (held as kept) at q: window, duplicate,
// slot, delivery.
func (r *Receiver) onSeq(now int64, f link.Frame, q seqhdr.Seq, kept link.Frame) {
	r.Stats.Frames++
	if r.distant(q, 1) {
		if !r.jumpTo(q) {
			if seqhdr.Less(q, r.base) {
				r.Stats.Old++
			} else {
				r.Stats.Far++
			}
			r.Out.Free = append(r.Out.Free, f)
			return
		}
	} else {
		r.jumpN = 0
	}
	if seqhdr.Less(q, r.base) {
		r.Stats.Old++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	if r.far(q, 1) {
		r.Stats.Far++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	known := seqhdr.Less(q, r.high)
	r.extend(now, q.Next(), true)
	s := r.slot(q)
	if s.f.Len > 0 {
		r.Stats.Dup++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	if known { // it had been found missing: reordered rather than lost
		r.Stats.Filled++
	}
	r.Stats.DataRx++
	s.f = kept
	r.place(q, s)
}

// place delivers a frame just put in slot q, as the mode says.
func (r *Receiver) place(q seqhdr.Seq, s *rxSlot) {
	if r.cfg.Immediate {
		r.deliver(s)
		return
	}
	if seqhdr.Less(q, r.next) { // its hole was skipped: deliver late
		r.Stats.Late++
		r.deliver(s)
		return
	}
	r.drain()
}

func (r *Receiver) deliver(s *rxSlot) {
	s.delivered = true
	r.Stats.Delivered++
	r.Out.Deliver = append(r.Out.Deliver, s.f)
}

// drain delivers in order from next up to the first hole.
func (r *Receiver) drain() {
	for r.next != r.high {
		s := r.slot(r.next)
		if s.f.Len == 0 {
			return
		}
		if !s.delivered {
			r.deliver(s)
		}
		r.next = r.next.Next()
	}
}

// extend makes end (exclusive) part of the window: the numbers between high
// and end are missing from now on (but for end-1 if seen: the data frame
// being received), and the window moves forward if end is beyond it.
func (r *Receiver) extend(now int64, end seqhdr.Seq, seen bool) {
	if seqhdr.Diff(end, r.high) <= 0 {
		return
	}
	if over := seqhdr.Diff(end, r.base) - len(r.slots); over > 0 {
		r.force(r.base.Add(over))
	}
	d := seqhdr.Diff(end, r.high)
	if gap := d - b2i(seen); gap > 0 {
		r.Stats.Holes++
		r.Stats.Gaps += uint64(gap)
	}
	for q := r.high; q != end; q = q.Next() {
		*r.slot(q) = rxSlot{at: now}
	}
	r.Stats.Span += uint64(d)
	r.high = end
}

// force pushes every number before nb out of the window: in order, what was
// received is delivered first; every number is released. Numbers beyond
// high were never seen: they are counted lost without a slot.
func (r *Receiver) force(nb seqhdr.Seq) {
	lim := nb
	beyond := seqhdr.Diff(nb, r.high)
	if beyond > 0 {
		lim = r.high
	}
	for r.base != lim {
		s := r.slot(r.base)
		if !r.cfg.Immediate && r.next == r.base {
			if s.f.Len > 0 && !s.delivered {
				r.deliver(s)
			}
			r.next = r.next.Next()
		}
		r.Stats.Forced++
		r.drop(s)
		r.base = r.base.Next()
	}
	if beyond > 0 {
		r.Stats.Span += uint64(beyond)
		r.Stats.Gaps += uint64(beyond)
		r.Stats.Holes++
		r.Stats.Lost += uint64(beyond)
		r.Stats.Forced += uint64(beyond)
		r.base, r.next, r.high = nb, nb, nb
	}
	if seqhdr.Less(r.next, r.base) {
		r.next = r.base
	}
	if seqhdr.Less(r.resolved, r.base) {
		r.resolved = r.base
	}
}

// drop releases a slot leaving the window; an undelivered number is lost.
func (r *Receiver) drop(s *rxSlot) {
	if !s.delivered {
		r.Stats.Lost++
	}
	if s.f.Len > 0 {
		r.Out.Free = append(r.Out.Free, s.f)
	}
	*s = rxSlot{}
}

func (r *Receiver) onParity(now int64, f link.Frame, b []byte) {
	p, err := ParseParity(b)
	if err != nil {
		r.Stats.BadParity++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	r.Stats.Parity++
	end := p.First.Add(p.Count)
	if seqhdr.Less(p.First, r.resolved) || seqhdr.Less(p.First, r.base) {
		r.Stats.ParityStale++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	if r.far(p.First, p.Count) {
		r.Stats.Far++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	r.extend(now, end, false)
	if seqhdr.Less(p.First, r.base) { // the window moved past the group's start
		r.Stats.ParityStale++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	r.resolved = end
	missing, m := 0, p.First
	for q := p.First; q != end; q = q.Next() {
		if r.slot(q).f.Len == 0 {
			missing++
			m = q
		}
	}
	switch {
	case missing == 0:
		r.Stats.ParityIdle++
		r.Out.Free = append(r.Out.Free, f)
	case missing > 1:
		r.Stats.ParityShort++
		r.Out.Free = append(r.Out.Free, f)
	default:
		r.recover(now, f, &p, m, end)
	}
}

// recover rebuilds the one missing frame m of the group [p.First, end) in
// the parity frame's own buffer, checking that the XOR yields a frame.
func (r *Receiver) recover(now int64, f link.Frame, p *Parity, m, end seqhdr.Seq) {
	pay := r.mem.Bytes(f.H+ParityOffset, p.PayloadLen)
	lx := p.LenXor
	for q := p.First; q != end; q = q.Next() {
		if q == m {
			continue
		}
		o := r.slot(q).f
		if o.Len > len(pay) {
			r.Stats.BadRecovery++
			r.Out.Free = append(r.Out.Free, f)
			return
		}
		subtle.XORBytes(pay, pay[:o.Len], r.mem.Bytes(o.H, o.Len))
		lx ^= uint16(o.Len)
	}
	n := int(lx)
	if n < MinFrame || n > len(pay) || !zero(pay[n:]) || !r.rebuilt(pay[:n], m) {
		r.Stats.BadRecovery++
		r.Out.Free = append(r.Out.Free, f)
		return
	}
	s := r.slot(m)
	d := now - s.at
	r.Stats.Recovered++
	r.Stats.RecoverNanos += uint64(max(d, 0))
	r.Stats.RecoverMax = max(r.Stats.RecoverMax, d)
	s.f = link.Frame{H: f.H + ParityOffset, Len: n}
	r.place(m, s)
}

// rebuilt reports whether b, rebuilt from parity for number m, is a frame
// the sender could have sent as m: a host frame (not a link frame), or
// with Carried a carried frame sequenced as m.
func (r *Receiver) rebuilt(b []byte, m seqhdr.Seq) bool {
	if binary.BigEndian.Uint16(b[seqhdr.MACLen:]) != seqhdr.EtherType {
		return true
	}
	if !r.cfg.Carried {
		return false
	}
	h, err := seqhdr.ParseCarried(b)
	return err == nil && h.Type.IsCarried() && !h.Unseq && !h.Retx && !h.HasAck && h.Seq == m
}

// far reports whether the n numbers from first reach so far ahead of the
// window that serial arithmetic could no longer order them against its
// numbers: no link loses half the sequence space in a row.
func (r *Receiver) far(first seqhdr.Seq, n int) bool {
	d := seqhdr.Diff(first, r.base)
	return d < 0 || d+n > 2*len(r.slots)
}

// distant reports whether [first, first+n) lies a window or more behind
// the window, or beyond the window after this one.
func (r *Receiver) distant(first seqhdr.Seq, n int) bool {
	d := seqhdr.Diff(first, r.base)
	return d < -len(r.slots) || d+n > 2*len(r.slots)
}

// jumpTo counts q toward a jump and, at jumpAfter, empties the window (in
// order, what was received is delivered first) and restarts it at q.
func (r *Receiver) jumpTo(q seqhdr.Seq) bool {
	if d := seqhdr.Diff(q, r.jump); r.jumpN > 0 && d > 0 && d <= len(r.slots) {
		r.jumpN++
	} else {
		r.jumpN = 1
	}
	r.jump = q
	if r.jumpN < jumpAfter {
		return false
	}
	r.jumpN = 0
	r.Stats.Jumps++
	r.force(r.high)
	r.base, r.next, r.high, r.resolved = q, q, q, q
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// done reports whether slot q has nothing left to deliver.
func (r *Receiver) done(q seqhdr.Seq, s *rxSlot) bool {
	if r.cfg.Immediate {
		return s.delivered || s.f.Len == 0
	}
	return seqhdr.Less(q, r.next)
}

// release frees the oldest numbers once they are delivered (or given up) and
// either resolved by a parity or older than Hold.
func (r *Receiver) release(now int64) {
	for r.base != r.high {
		s := r.slot(r.base)
		if !r.done(r.base, s) || (!seqhdr.Less(r.base, r.resolved) && now-s.at < r.cfg.Hold) {
			return
		}
		r.drop(s)
		r.base = r.base.Next()
	}
}

// Poll gives up on holes older than Wait (in order), releases what is no
// longer needed (resolved, or older than Hold) and returns the next deadline (math.MaxInt64: none).
func (r *Receiver) Poll(now int64) int64 {
	next := int64(math.MaxInt64)
	if !r.cfg.Immediate {
		for r.next != r.high {
			s := r.slot(r.next)
			if s.f.Len > 0 {
				r.drain()
				continue
			}
			if now-s.at < r.cfg.Wait {
				next = s.at + r.cfg.Wait
				break
			}
			r.Stats.Skipped++
			r.next = r.next.Next()
		}
	}
	r.release(now)
	if r.base != r.high {
		s := r.slot(r.base)
		if r.done(r.base, s) && !seqhdr.Less(r.base, r.resolved) {
			next = min(next, s.at+r.cfg.Hold)
		}
	}
	return next
}

// Reset restarts the receiver at rx (a new link session): every held frame
// is released; what was not delivered is lost.
func (r *Receiver) Reset(now int64, rx seqhdr.Seq) {
	for r.base != r.high {
		r.drop(r.slot(r.base))
		r.base = r.base.Next()
	}
	rx &= seqhdr.Space - 1
	r.base, r.next, r.high, r.resolved = rx, rx, rx, rx
}
