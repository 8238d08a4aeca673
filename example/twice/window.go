package twice

import "github.com/linkfabric/linkfabric/link/seqhdr"

// WindowLen is how many sequence numbers back a Window remembers.
const WindowLen = 64

// Window remembers which of the last WindowLen sequence numbers have been
// received, so that the second copy of a frame is found. The zero Window
// has received nothing.
type Window struct {
	top     seqhdr.Seq // the highest sequence number received
	seen    uint64     // bit i: top−i was received
	started bool
}

// First reports whether s is received for the first time, and records it.
// A sequence number more than WindowLen behind the highest is taken as the
// start of a new sender (one that restarted): the window starts again at s.
func (w *Window) First(s seqhdr.Seq) bool {
	d := seqhdr.Diff(s, w.top)
	switch {
	case !w.started || d <= -WindowLen:
		w.top, w.seen, w.started = s, 1, true
	case d > 0:
		w.seen = w.seen<<min(d, WindowLen) | 1 // a shift of 64 clears it
		w.top = s
	default:
		bit := uint64(1) << -d
		if w.seen&bit != 0 {
			return false
		}
		w.seen |= bit
	}
	return true
}
