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

// Result is the JSON every experiment made of runs gives: its
// configuration, the machine it ran on, the runs and their summary (the
// figures the experiment is read by, and whether they met their targets).
type Result[C, R any] struct {
	Config C `json:"config"`
	RunInfo
	Runs    []R            `json:"runs"`
	Summary map[string]any `json:"summary"`
}

// NewResult is the result of an experiment run with cfg on this machine
// now, with no runs yet.
func NewResult[C, R any](cfg C) Result[C, R] {
	return Result[C, R]{Config: cfg, RunInfo: NewRunInfo()}
}

// Verdict ends a summary: failed names the targets missed, and pass is
// whether none was.
func Verdict(summary map[string]any, failed []string) map[string]any {
	summary["failed"] = failed
	summary["pass"] = len(failed) == 0
	return summary
}
