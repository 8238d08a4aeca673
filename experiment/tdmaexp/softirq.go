package tdmaexp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DefaultSoftirqRT is --softirq-rt's default: above the agents' priority
// while they wait for a window's open (1), below the FM's clock (60).
const DefaultSoftirqRT = 2

// softirqThread is a ksoftirqd thread and its scheduling before.
type softirqThread struct {
	pid  int
	name string
	was  unix.SchedAttr
}

// softirqThreads lists the kernel's softirq threads (ksoftirqd/N).
func softirqThreads() ([]softirqThread, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var ts []softirqThread
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if name := strings.TrimSpace(string(b)); err == nil && strings.HasPrefix(name, "ksoftirqd/") {
			ts = append(ts, softirqThread{pid: pid, name: name})
		}
	}
	if len(ts) == 0 {
		return nil, errors.New("no ksoftirqd threads in /proc")
	}
	return ts, nil
}

// softirqRT runs the kernel's softirq threads (ksoftirqd/N: the
// emulated NICs' and switch's work that the kernel could not finish where
// it was raised) under SCHED_FIFO prio until restore, which puts back
// each one's scheduling as it was. These are the machine's threads, not
// the testbed's: an experiment killed with SIGKILL leaves them so. prio 0
// leaves them alone.
func softirqRT(prio int) (restore func(), err error) {
	if prio == 0 {
		return func() {}, nil
	}
	ts, err := softirqThreads()
	if err != nil {
		return nil, fmt.Errorf("--softirq-rt %d: %w (pass --softirq-rt 0 to leave the softirq threads alone)", prio, err)
	}
	restore = func() {
		for _, t := range ts {
			if t.was.Size != 0 {
				unix.SchedSetAttr(t.pid, &t.was, 0)
			}
		}
	}
	for i := range ts {
		t := &ts[i]
		was, err := unix.SchedGetAttr(t.pid, 0)
		if err == nil {
			t.was = *was
			err = unix.SchedSetAttr(t.pid, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}, 0)
		}
		if err != nil {
			restore()
			return nil, fmt.Errorf("--softirq-rt %d: SCHED_FIFO for %s (pid %d): %w (needs root or CAP_SYS_NICE; pass --softirq-rt 0 to leave the softirq threads alone)", prio, t.name, t.pid, err)
		}
	}
	return restore, nil
}
