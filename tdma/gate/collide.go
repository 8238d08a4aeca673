package gate

import (
	"fmt"
	"math"

	"github.com/linkfabric/linkfabric/tdma/wire"
)

// Cause is why a data frame arrived outside its slot.
type Cause uint8

// Causes, in the order a frame is tested for them.
const (
	// AfterLease: released after the sender's lease had run out.
	AfterLease Cause = iota
	// ClosedLate: the sender's sending ran past its own plan: it released
	// the frame after its window's close, or planned it to leave its line
	// after the close, or released it after its planned departure by more
	// than the frame then took to arrive (the agent was descheduled between
	// its decision and the release, and that made the frame late).
	ClosedLate
	// OpenedEarly: released before the slot's start plus the guard on the
	// FM's timeline (the sender underestimated its grant's delay).
	OpenedEarly
	// GrantLate: the frame was to leave the sender's line after the slot's
	// end on the FM's timeline: the sender's window ran past the FM's slot
	// because its grant came later than its delay estimate. With the exit
	// gate's stamp: only when that overrun is longer than the queue named
	// below then held the frame.
	GrantLate
	// KernelQueue: the sender timed the frame to leave its line inside
	// the slot, and the kernel's queues (the host's shaper, the switch,
	// the input backlogs) delivered it more than the guard late; with the
	// exit gate's stamp: the host's queues held it (from its release or
	// planned departure to its entry into the switch) longer than the
	// switch did.
	KernelQueue
	// SwitchQueue: with the exit gate's stamp, the switch held the frame
	// (from its entry to its arrival: behind a backlog in its port) longer
	// than the host's queues did.
	SwitchQueue
	NumCauses
)

var causeNames = [NumCauses]string{"after_lease", "closed_late", "opened_early", "grant_late", "kernel_queue", "switch_queue"}

func (c Cause) String() string {
	if c < NumCauses {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", uint8(c))
}

// MarshalText names the cause in JSON.
func (c Cause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText parses a cause's name.
func (c *Cause) UnmarshalText(b []byte) error {
	for i, n := range causeNames {
		if n == string(b) {
			*c = Cause(i)
			return nil
		}
	}
	return fmt.Errorf("collision cause %q", b)
}

// CauseStats count the collisions of one cause.
type CauseStats struct {
	Frames    uint64  `json:"frames"`
	Bytes     uint64  `json:"bytes"`
	SumLateUs float64 `json:"sum_late_us"`
	MaxLateUs float64 `json:"max_late_us"`
	// Met: meetings of two senders' frames in the switch laid on this
	// cause (Meetings).
	Met uint64 `json:"met,omitempty"`
}

// Add counts a frame of l bytes, lateUs late.
func (s *CauseStats) Add(l int, lateUs float64) {
	s.Frames++
	s.Bytes += uint64(l)
	s.SumLateUs += lateUs
	s.MaxLateUs = max(s.MaxLateUs, lateUs)
}

// Merge adds o into s.
func (s *CauseStats) Merge(o CauseStats) {
	s.Frames += o.Frames
	s.Bytes += o.Bytes
	s.SumLateUs += o.SumLateUs
	s.MaxLateUs = max(s.MaxLateUs, o.MaxLateUs)
	s.Met += o.Met
}

// Causes are the collisions by cause.
type Causes [NumCauses]CauseStats

// Merge adds o's figures to c's, cause by cause.
func (c *Causes) Merge(o *Causes) {
	for k := range c {
		c[k].Merge(o[k])
	}
}

// Found is what the receivers of a run found: the frames outside their
// slot by cause (Classify), the first ones in full, and the meetings in
// the switch of two frames both inside their slots (Meetings; the others
// are laid on a cause: Causes' Met).
type Found struct {
	Causes     Causes      `json:"collision_causes"`
	CollSample []Collision `json:"collision_sample,omitempty"`
	MetInSlot  uint64      `json:"met_in_slot"`
	// Transit: how long the frames took through the switch, from the
	// exit gate's stamp to their receiver's kernel stamp.
	Transit Transit `json:"switch_transit"`
}

// Merge adds what o found to f.
func (f *Found) Merge(o *Found) {
	f.Causes.Merge(&o.Causes)
	f.CollSample = append(f.CollSample, o.CollSample...)
	f.MetInSlot += o.MetInSlot
	f.Transit.Merge(&o.Transit)
}

// TransitOver are the thresholds Transit counts frames over, µs: half the
// default guard, the guard, a millisecond, and a scheduler tick at HZ 250
// (what a softirq left to ksoftirqd can wait).
var TransitOver = [4]int64{150, 300, 1000, 4000}

// Transit counts frames by their time through the switch (the exit
// gate's stamp to the receiver's kernel stamp: the bridge, the output
// port's queue and the receiver's input path) over each of TransitOver,
// with the longest.
type Transit struct {
	Frames uint64    `json:"frames"`
	Over   [4]uint64 `json:"over_150_300_1000_4000_us"`
	MaxUs  float64   `json:"max_us"`
}

// Add counts a frame that took ns.
func (t *Transit) Add(ns int64) {
	t.Frames++
	for i, us := range TransitOver {
		if ns > us*1000 {
			t.Over[i]++
		}
	}
	t.MaxUs = max(t.MaxUs, float64(ns)/1000)
}

// Merge adds o's frames to t's.
func (t *Transit) Merge(o *Transit) {
	t.Frames += o.Frames
	for i := range t.Over {
		t.Over[i] += o.Over[i]
	}
	t.MaxUs = max(t.MaxUs, o.MaxUs)
}

// Total is the number of collided frames.
func (c *Causes) Total() uint64 {
	var n uint64
	for _, s := range c {
		n += s.Frames
	}
	return n
}

// Log counts collision cl (a frame of l bytes released at send, received
// or stopped at rx, with trailer t) by its cause, and keeps it in full in
// *sample while that holds fewer than limit.
func (c *Causes) Log(sample *[]Collision, limit int, cl Collision, l int, send, rx int64, t *wire.WinTrailer) {
	c[cl.Cause].Add(l, cl.LateUs)
	if len(*sample) < limit {
		cl.Times(send, rx, t)
		*sample = append(*sample, cl)
	}
}

// Met is the number of meetings laid on any cause.
func (c *Causes) Met() uint64 {
	var n uint64
	for _, s := range c {
		n += s.Met
	}
	return n
}

// Meetings finds, at one receiver, two senders' frames that were in the
// switch at once: a frame that entered the switch (the exit gate's stamp)
// before the frame received before it, from another sender, had left it
// (its receive time). A meeting is laid on the earlier frame's cause if it
// was outside its slot, else on the later one's; InSlot counts those of
// two frames both inside their slots (the guard did not cover the path).
type Meetings struct {
	prevSrc   int
	prevRx    int64 // 0: no frame yet
	prevCause Cause // NumCauses: inside its slot
	InSlot    uint64
}

// Next takes the next frame received, from src at rx, that entered the
// switch at entry (0: unknown) and was classified c (NumCauses: inside its
// slot), and tells whether it met the frame before it and the cause the
// meeting is laid on (NumCauses: InSlot).
func (m *Meetings) Next(src int, entry, rx int64, c Cause) (Cause, bool) {
	met := m.prevRx != 0 && src != m.prevSrc && entry != 0 && entry < m.prevRx
	on := NumCauses
	switch {
	case !met:
	case m.prevCause < NumCauses:
		on = m.prevCause
	case c < NumCauses:
		on = c
	default:
		m.InSlot++
	}
	m.prevSrc, m.prevRx, m.prevCause = src, rx, c
	return on, met
}

// Collision is one collided frame, as its receiver saw it.
type Collision struct {
	Src   int    `json:"src"` // the sender (0-based)
	Dst   int    `json:"dst"` // the receiver
	Round uint32 `json:"round"`
	Slot  int    `json:"slot"`
	Cause Cause  `json:"cause"`
	// LateUs: how long after the slot's end plus the guard it arrived (an
	// early frame: how long before the slot's start plus the guard it was
	// released).
	LateUs float64 `json:"late_us"`
	// GrantShiftUs: the sender's estimate of the slot's end less the FM's.
	GrantShiftUs float64 `json:"grant_shift_us"`
	// LineUs: from the frame's release to its planned departure from the
	// sender's line (the shaper model; negative: released after it);
	// TransitUs: from the later of the two to its arrival.
	LineUs    float64 `json:"line_us"`
	TransitUs float64 `json:"transit_us"`
	FreeRun   bool    `json:"freerun"`
}

// Times fills c's times from the frame's release (send), its receive time
// (rx) and its trailer t.
func (c *Collision) Times(send, rx int64, t *wire.WinTrailer) {
	c.LineUs = us(int64(t.Line))
	c.TransitUs = us(rx - max(send, send+int64(t.Line)))
	if t.FMEnd != wire.WinUnknown && t.Due != wire.WinUnknown {
		c.GrantShiftUs = us(int64(t.Due) - int64(t.GuardUs)*1000 - int64(t.FMEnd))
	}
}

// MaxCollisionSample is how many collisions each receiver records in
// full (the first ones).
const MaxCollisionSample = 32

// Trailer is the window trailer of a frame released into w at now whose
// last byte leaves the sender's line at line, the sender's lease running
// out at lease (math.MaxInt64: none): what a receiver classifies it by.
func (w *Window) Trailer(now, line, lease int64) wire.WinTrailer {
	return wire.WinTrailer{Due: wire.WinDelta(w.Due, now), Close: wire.WinDelta(w.Close, now), FMEnd: wire.WinDelta(w.FMEnd, now),
		Line: wire.WinDelta(line, now), Lease: wire.WinDelta(lease, now),
		SlotUs: uint16(min(w.SlotLen/1000, math.MaxUint16)), GuardUs: uint16(min(w.Guard/1000, math.MaxUint16)), Entry: wire.WinUnknown}
}

// Due is when a frame released at send with trailer t must have reached
// its receiver: its slot's end plus the guard on the FM's timeline, or
// the sender's estimate of it when the trailer does not have the FM's.
// Later, the next slot's sender may be sending to the same port.
func Due(send int64, t *wire.WinTrailer) int64 {
	if t.FMEnd != wire.WinUnknown {
		return send + int64(t.FMEnd) + int64(t.GuardUs)*1000
	}
	return send + int64(t.Due)
}

// Classify tells whether a frame released at send with trailer t and
// received (kernel time stamp) at rx collided, and why, with its lateness
// in µs. A frame collides when it arrives after the slot's end plus the
// guard (when the next slot's sender may be sending to the same port) or
// was released before the slot's start plus the guard, both on the FM's
// timeline when the trailer has it and on the sender's estimate if not.
func Classify(send, rx int64, t *wire.WinTrailer) (Cause, float64, bool) {
	guard := int64(t.GuardUs) * 1000
	due, open := Due(send, t), int64(0)
	fmKnown := t.FMEnd != wire.WinUnknown
	if fmKnown {
		open = send + int64(t.FMEnd) - int64(t.SlotUs)*1000 + guard
	}
	late := rx - due
	early := fmKnown && send < open
	if late <= 0 && !early {
		return 0, 0, false
	}
	closeAt := send + int64(t.Due) - guard // paper mode: the intended close
	if t.Close != wire.WinUnknown {
		closeAt = send + int64(t.Close)
	}
	line := send + int64(t.Line)
	held := send - line             // released after the planned departure by
	transit := rx - max(send, line) // from the real release or departure to arrival
	switch {
	case t.Lease != wire.WinUnknown && int64(t.Lease) < 0:
		return AfterLease, us(max(late, 0)), true
	case t.Close != wire.WinUnknown && t.Close < 0, line > closeAt, held > transit:
		return ClosedLate, us(max(late, 0)), true
	case early:
		return OpenedEarly, us(open - send), true
	}
	// On time by its sender's plan: the plan ran past the FM's slot end
	// (grant), the host's queues held it, or (entered in time) the switch.
	past := int64(math.MinInt64) // how far the plan ran past the FM's slot end
	if fmKnown {
		past = line - (send + int64(t.FMEnd))
	}
	if t.Entry == wire.WinUnknown {
		if past > 0 {
			return GrantLate, us(late), true
		}
		return KernelQueue, us(late), true
	}
	// With the exit gate's stamp the frame's delays are apart: the plan's
	// overrun, the host's queues (release or planned departure to entry)
	// and the switch's (entry to arrival); the longest names the cause.
	entry := send + int64(t.Entry)
	held, c := entry-max(send, line), KernelQueue
	if sw := rx - entry; sw > held {
		held, c = sw, SwitchQueue
	}
	if past > held {
		c = GrantLate
	}
	return c, us(late), true
}

// Stopped names the cause of a frame released at send with trailer t that
// the exit gate stopped at send + t.Entry, where it would have entered the
// switch (would-be collisions; Entry must be known), and how late it was
// there in µs: past the slot's end (the earlier of the sender's estimate
// and the FM's), 0 if not; an early one: before the FM's slot start plus
// the guard by. The causes are Classify's but for the switch's, which
// the frame never reached; a frame the arrival gate held at its receiver
// (flags: its data header's, with wire.DataHeld) was stopped there, and
// is the switch's, late past Due.
func Stopped(send int64, t *wire.WinTrailer, flags uint8) (Cause, float64) {
	at := send + int64(t.Entry)
	if flags&wire.DataHeld != 0 {
		// the arrival gate: it entered the switch in time (the exit gate
		// passed it), and the switch or its receiver held it
		return SwitchQueue, us(max(at-Due(send, t), 0))
	}
	guard := int64(t.GuardUs) * 1000
	end := send + int64(t.Due) - guard
	if t.Due == wire.WinUnknown {
		end = at
	}
	past := int64(math.MinInt64) // how far the plan ran past the FM's slot end
	if t.FMEnd != wire.WinUnknown {
		end = min(end, send+int64(t.FMEnd))
		past = 0
	}
	late := us(max(at-end, 0))
	line := send + int64(t.Line)
	held := at - max(send, line) // the host's queues, to the gate
	switch {
	case t.Lease != wire.WinUnknown && t.Lease < 0:
		return AfterLease, late
	case t.Close != wire.WinUnknown && (t.Close < 0 || line > send+int64(t.Close)), send-line > held:
		return ClosedLate, late
	case past == 0 && at < send+int64(t.FMEnd)-int64(t.SlotUs)*1000+guard:
		return OpenedEarly, us(send + int64(t.FMEnd) - int64(t.SlotUs)*1000 + guard - at)
	case past == 0 && line-(send+int64(t.FMEnd)) > held:
		return GrantLate, late
	}
	return KernelQueue, late
}

// EnteredOutside tells whether a frame released at send with trailer t
// entered the switch (the exit gate's stamp; false without one) outside
// its slot: before the slot's start plus the guard or after its end plus
// the guard, on the FM's timeline (the sender's estimate if unknown).
// The exit gate makes this never happen, however late anything runs.
func EnteredOutside(send int64, t *wire.WinTrailer) bool {
	if t.Entry == wire.WinUnknown {
		return false
	}
	guard := int64(t.GuardUs) * 1000
	entry := send + int64(t.Entry)
	if t.FMEnd == wire.WinUnknown {
		return t.Due != wire.WinUnknown && entry > send+int64(t.Due)
	}
	end := send + int64(t.FMEnd)
	return entry < end-int64(t.SlotUs)*1000+guard || entry > end+guard
}

func us(ns int64) float64 { return float64(ns) / 1000 }
