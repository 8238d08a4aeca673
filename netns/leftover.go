package netns

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Processes left in a testbed's namespaces.
//
// A process started in a host namespace and left running (`ip netns exec
// lfh2 iperf3 -s -D`, as the tour and `up` suggest) outlives the testbed:
// deleting the namespace's name does not stop it, and it keeps the
// namespace alive, invisible. Down stops such processes first: SIGTERM,
// then SIGKILL for those still there after leftoverGrace.

const leftoverGrace = 500 * time.Millisecond

// nsPids returns the processes whose network namespace is n's (as `ip
// netns pids` does: by the namespace file's device and inode), except this
// one.
func nsPids(n string) []int {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join(RunDir, n), &want); err != nil {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopLeftovers stops every process in the namespaces ns.
func stopLeftovers(ns []string) {
	var pids []int
	for _, n := range ns {
		pids = append(pids, nsPids(n)...)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for deadline := time.Now().Add(leftoverGrace); len(pids) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		live := pids[:0]
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				live = append(live, pid)
			}
		}
		pids = live
	}
	// SIGKILL what is left, and what the stubborn ones started meanwhile
	// (a shell loop ignoring SIGTERM keeps forking), until the namespaces
	// hold no process: a kill takes effect when the target next runs, so
	// Down would otherwise return while one is still there (a zombie
	// has left its namespace and is not listed).
	for deadline := time.Now().Add(leftoverGrace); len(pids) > 0 && time.Now().Before(deadline); {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
		pids = pids[:0]
		for _, n := range ns {
			pids = append(pids, nsPids(n)...)
		}
	}
}
