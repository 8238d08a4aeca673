package bed

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/linkfabric/linkfabric/fct"
	"golang.org/x/sys/unix"
)

// progressEvery is how often progress is printed as a line where it cannot be
// redrawn in place (a log file, CI, `| tee`).
const progressEvery = 5 * time.Second

// isTerminal reports whether w is a terminal (so `\r` redraws a line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// FlowProgress returns a Progress callback for a run of flows: a progress
// bar redrawn in place on a terminal, otherwise one line every
// progressEvery and one when the run completes. now is the clock (time.Now).
func FlowProgress(w io.Writer, desc string, now func() time.Time) func(done, total int) {
	if isTerminal(w) {
		return fct.ProgressBar(w, desc)
	}
	var start, last time.Time
	finished := false
	return func(done, total int) {
		t := now()
		if start.IsZero() {
			start, last = t, t
		}
		complete := total > 0 && done >= total
		if finished || (!complete && t.Sub(last) < progressEvery) {
			return
		}
		last, finished = t, complete
		rate := 0.0
		if el := t.Sub(start).Seconds(); el > 0 {
			rate = float64(done) / el
		}
		fmt.Fprintf(w, "%s %d/%d flows (%.0f flows/s, %s)\n", desc, done, total, rate, t.Sub(start).Round(time.Second))
	}
}
