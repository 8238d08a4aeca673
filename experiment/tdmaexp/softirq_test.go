package tdmaexp

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// softirqAttrs reads the softirq threads' scheduling.
func softirqAttrs(t *testing.T) map[int]unix.SchedAttr {
	t.Helper()
	ts, err := softirqThreads()
	if err != nil {
		t.Fatal(err)
	}
	m := map[int]unix.SchedAttr{}
	for _, s := range ts {
		a, err := unix.SchedGetAttr(s.pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		m[s.pid] = *a
	}
	return m
}

// TestSoftirqRT (root): the softirq threads run SCHED_FIFO at the
// priority asked for until restore, then as they did before; a priority
// the kernel refuses names the flag and the thread, and leaves them all
// as they were.
func TestSoftirqRT(t *testing.T) {
	netns.RequireRoot(t)
	before := softirqAttrs(t)
	restore, err := softirqRT(3)
	if err != nil {
		t.Fatal(err)
	}
	for pid, a := range softirqAttrs(t) {
		if a.Policy != unix.SCHED_FIFO || a.Priority != 3 {
			restore()
			t.Fatalf("pid %d: policy %d priority %d, want SCHED_FIFO 3", pid, a.Policy, a.Priority)
		}
	}
	restore()
	after := softirqAttrs(t)
	for pid, a := range before {
		if b := after[pid]; b.Policy != a.Policy || b.Priority != a.Priority || b.Nice != a.Nice {
			t.Fatalf("pid %d after restore: %+v, before: %+v", pid, b, a)
		}
	}
	if _, err := softirqRT(100); err == nil || !strings.Contains(err.Error(), "--softirq-rt 100") || !strings.Contains(err.Error(), "ksoftirqd/") {
		t.Fatalf("priority 100: %v, want an error naming the flag and the thread", err)
	}
	for pid, a := range softirqAttrs(t) {
		if b := before[pid]; b.Policy != a.Policy || b.Priority != a.Priority {
			t.Fatalf("pid %d after a refused priority: %+v, before: %+v", pid, a, b)
		}
	}
	if r, err := softirqRT(0); err != nil || r == nil {
		t.Fatalf("priority 0: %v", err)
	}
}
