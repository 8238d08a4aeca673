package report

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// RunInfo is the machine and the time a result was measured on, at the
// head of every experiment's JSON.
type RunInfo struct {
	Kernel string    `json:"kernel"`
	CPUs   int       `json:"cpus"`
	Date   time.Time `json:"date"`
}

// NewRunInfo is this machine now.
func NewRunInfo() RunInfo {
	return RunInfo{Kernel: Kernel(), CPUs: runtime.NumCPU(), Date: time.Now().UTC()}
}

// Kernel is the running kernel's release ("?" if unknown).
func Kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// LossyWord names a run with loss on its gray links, or without.
func LossyWord(lossy bool) string {
	if lossy {
		return "lossy"
	}
	return "clean"
}

// MetWord says whether a target was met.
func MetWord(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}
