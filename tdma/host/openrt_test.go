package host

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenPriorityOnlyUntilTheOpen: with OpenRT the thread runs under
// SCHED_FIFO while it waits for a window's open and under the default
// scheduler as soon as it waits for anything else; never with OpenRT 0.
func TestOpenPriorityOnlyUntilTheOpen(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO needs root")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	policy := func() uint32 {
		at, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return at.Policy
	}
	a := &Agent{cfg: Config{OpenRT: 1}}
	defer a.openPriority(false)
	for i, step := range []struct {
		opens bool
		want  uint32
	}{{false, unix.SCHED_NORMAL}, {true, unix.SCHED_FIFO}, {true, unix.SCHED_FIFO}, {false, unix.SCHED_NORMAL}} {
		a.openPriority(step.opens)
		if got := policy(); got != step.want {
			t.Fatalf("step %d (waiting for an open: %v): policy %d, want %d", i, step.opens, got, step.want)
		}
	}
	if !a.s.OpenRT || a.s.OpenRTErrors != 0 {
		t.Errorf("stats: open_rt %v, %d errors", a.s.OpenRT, a.s.OpenRTErrors)
	}
	b := &Agent{}
	b.openPriority(true)
	if got := policy(); got != unix.SCHED_NORMAL {
		t.Errorf("without OpenRT: policy %d while waiting for an open", got)
	}
}
