package host

import (
	"fmt"

	"github.com/linkfabric/linkfabric/tdmaagent/wire"
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
	// because its grant came later than its delay estimate.
	GrantLate
	// KernelQueue: the sender timed the frame to leave its line inside
	// the slot, and the kernel's queues (the host's shaper, the switch,
	// the input backlogs) delivered it more than the guard late; with an
	// exit gate: the frame entered the switch after the slot's end plus
	// the guard.
	KernelQueue
	// SwitchQueue: the frame entered the switch (the exit gate's stamp)
	// by the slot's end plus the guard, and the switch's queues and the
	// receiver's input backlog delivered it late. No other sender's frame
	// to the same port entered the switch before it (each enters only
	// after its slot's start plus the guard), so it was not overtaken.
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
}

// Causes are the collisions by cause.
type Causes [NumCauses]CauseStats

// Total is the number of collided frames.
func (c *Causes) Total() uint64 {
	var n uint64
	for _, s := range c {
		n += s.Frames
	}
	return n
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

// maxCollisionSample is how many collisions each receiver records in
// full (the first ones).
const maxCollisionSample = 32

// Classify tells whether a frame released at send with trailer t and
// received (kernel time stamp) at rx collided, and why, with its lateness
// in µs. A frame collides when it arrives after the slot's end plus the
// guard (when the next slot's sender may be sending to the same port) or
// was released before the slot's start plus the guard, both on the FM's
// timeline when the trailer has it and on the sender's estimate if not.
func Classify(send, rx int64, t *wire.WinTrailer) (Cause, float64, bool) {
	guard := int64(t.GuardUs) * 1000
	var due, open int64
	fmKnown := t.FMEnd != wire.WinUnknown
	if fmKnown {
		end := send + int64(t.FMEnd)
		due, open = end+guard, end-int64(t.SlotUs)*1000+guard
	} else {
		due, open = send+int64(t.Due), 0
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
	case fmKnown && line > send+int64(t.FMEnd):
		return GrantLate, us(late), true
	case t.Entry != wire.WinUnknown && send+int64(t.Entry) <= due:
		return SwitchQueue, us(late), true
	}
	return KernelQueue, us(late), true
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
