package host

import "math"

// WindowFill is how a raw agent used the windows it sent in, in ns of its
// line (the gate's shaper model: a frame's last byte leaves when the model
// says). Of OpenNs, the windows' open time (open to close), LateNs went
// before the first release, IdleNs between releases while the line had
// drained and data waited, TailNs after the last byte where data still
// waited (it did not fit, or the agent did not come back in time), and
// DrainedNs after the last byte of a destination that had nothing more (a
// flow's end: not a loss). Windows counts the windows with a release.
type WindowFill struct {
	Windows   uint64 `json:"windows"`
	Drained   uint64 `json:"drained_windows"`
	OpenNs    int64  `json:"open_ns"`
	LateNs    int64  `json:"late_ns"`
	IdleNs    int64  `json:"idle_ns"`
	TailNs    int64  `json:"tail_ns"`
	DrainedNs int64  `json:"drained_ns"`
	// Last holds each destination's last windows, oldest first.
	Last [][lastWins]WinUse `json:"last_windows"`
}

// lastWins is how many of each destination's last windows Fill keeps.
const lastWins = 4

// WinUse is one window of a destination: its round and slot, open and
// close (clock ns), its first release and when its last byte left the
// line (the shaper model), and the payload bytes it carried.
type WinUse struct {
	Round uint32 `json:"round"`
	Slot  int    `json:"slot"`
	Open  int64  `json:"open_ns"`
	Close int64  `json:"close_ns"`
	First int64  `json:"first_ns"`
	End   int64  `json:"end_ns"`
	Bytes int64  `json:"bytes"`
}

// fillState follows the window being sent in.
type fillState struct {
	key uint64
	dst int
	w   WinUse
}

// batch records a batch of pay payload bytes to dst released at now into
// the window key (open at open, closing at close) whose last byte leaves
// at end; left reports whether dst still has data waiting.
func (f *WindowFill) batch(st *fillState, key uint64, dst int, open, close, now, end, pay int64, left func(int) bool) {
	if key != st.key || st.w.First == 0 {
		f.finish(st, left)
		st.key, st.dst = key, dst
		st.w = WinUse{Round: uint32(key >> 8), Slot: int(key & 0xff), Open: open, Close: close, First: now}
		f.Windows++
		if open > 0 && close > open && close < math.MaxInt64 {
			f.OpenNs += close - open
			f.LateNs += max(0, now-open)
		}
	} else if now > st.w.End {
		f.IdleNs += now - st.w.End
	}
	st.w.End = max(st.w.End, end)
	st.w.Bytes += pay
}

// finish closes the window st followed, if any.
func (f *WindowFill) finish(st *fillState, left func(int) bool) {
	if st.w.First == 0 || st.dst < 0 || st.dst >= len(f.Last) {
		return
	}
	if t := st.w.Close - st.w.End; st.w.Open > 0 && st.w.Close < math.MaxInt64 && t > 0 {
		if left(st.dst) {
			f.TailNs += t
		} else {
			f.DrainedNs += t
			f.Drained++
		}
	}
	l := &f.Last[st.dst]
	copy(l[:], l[1:])
	l[len(l)-1] = st.w
	st.w = WinUse{}
}

// Add sums o's counters into f (not Last).
func (f *WindowFill) Add(o *WindowFill) {
	f.Windows, f.Drained = f.Windows+o.Windows, f.Drained+o.Drained
	f.OpenNs, f.LateNs, f.IdleNs = f.OpenNs+o.OpenNs, f.LateNs+o.LateNs, f.IdleNs+o.IdleNs
	f.TailNs, f.DrainedNs = f.TailNs+o.TailNs, f.DrainedNs+o.DrainedNs
}

// Pct is ns as a percentage of the windows' open time.
func (f *WindowFill) Pct(ns int64) float64 {
	if f.OpenNs == 0 {
		return 0
	}
	return 100 * float64(ns) / float64(f.OpenNs)
}
