// Package clock has the slot-time primitives of the TDMA agents: a
// monotonic clock read through the vDSO, a sleeper for a locked OS thread
// (raw clock_nanosleep to shortly before the deadline, then a spin), and
// SCHED_FIFO on request. Go timers wake ≈ 0.6 ms late (design §2.2);
// never use them for slot boundaries.
package clock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// nanotime is the runtime's CLOCK_MONOTONIC read through the vDSO: the
// clock the kernel, its eBPF programs (bpf_ktime_get_ns) and every other
// process read, with no offset of this process's own.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// realOff converts CLOCK_REALTIME ns (kernel receive time stamps) to
// CLOCK_MONOTONIC ns: mono = real − realOff; taken from the tightest of a
// few monotonic reads around a wall-clock read.
var realOff = func() int64 {
	best, off := int64(1<<62), int64(0)
	for range 32 {
		m1 := nanotime()
		w := time.Now().UnixNano()
		m2 := nanotime()
		if m2-m1 < best {
			best, off = m2-m1, w-(m1+(m2-m1)/2)
		}
	}
	return off
}()

// Now returns CLOCK_MONOTONIC in ns, read through the vDSO (no syscall).
func Now() int64 { return nanotime() }

// FromRealtime converts a CLOCK_REALTIME time stamp (SO_TIMESTAMPNS) to
// Now's clock.
func FromRealtime(ns int64) int64 { return ns - realOff }

// DefaultSpin is how long before a deadline Sleeper stops sleeping and
// spins: it covers the VM's wake-up latency (design §2.2: 40–75 µs).
const DefaultSpin = 150 * time.Microsecond

// Sleeper sleeps to absolute deadlines on Now's clock. Use it from a
// goroutine locked to its OS thread (runtime.LockOSThread): the raw
// syscall keeps the thread's P, so no busy goroutine delays the wake-up.
type Sleeper struct {
	Spin int64 // ns spun before each deadline; 0: DefaultSpin
}

// SleepUntil returns at or just after deadline and returns Now.
func (s Sleeper) SleepUntil(deadline int64) int64 {
	spin := s.Spin
	if spin == 0 {
		spin = int64(DefaultSpin)
	}
	now := Now()
	if d := deadline - spin - now; d > 0 {
		ts := unix.NsecToTimespec(deadline - spin)
		// CLOCK_MONOTONIC absolute: Now is the kernel's clock.
		unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		now = Now()
	}
	for now < deadline {
		now = Now()
	}
	return now
}

// SetRT makes the calling OS thread SCHED_FIFO at prio (1..99), with 1 ns
// timer slack; the caller must have locked its goroutine to the thread.
func SetRT(prio int) error {
	if prio < 1 || prio > 99 {
		return fmt.Errorf("clock: SCHED_FIFO priority %d: want 1..99", prio)
	}
	a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &a, 0); err != nil {
		return fmt.Errorf("clock: SCHED_FIFO %d: %w (needs root or CAP_SYS_NICE; run without --rt to use the default scheduler)", prio, err)
	}
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	return nil
}

// Lateness records how late wake-ups were (ns), in a fixed histogram of
// 1 µs buckets up to 10 ms (NewLatenessRange: other widths and ranges);
// no allocation after it is made. Delays past the last bucket count in it,
// and the maximum is kept exactly.
type Lateness struct {
	b   []uint32
	w   int64 // bucket width, ns
	n   uint64
	max int64
}

// NewLateness returns an empty histogram of 1 µs buckets up to 10 ms.
func NewLateness() *Lateness { return NewLatenessRange(time.Microsecond, 10*time.Millisecond) }

// NewLatenessRange returns an empty histogram of buckets width wide up to
// span (at least one bucket).
func NewLatenessRange(width, span time.Duration) *Lateness {
	width = max(width, 1)
	return &Lateness{b: make([]uint32, max(int64(span/width), 1)+1), w: int64(width)}
}

// Add records one wake-up d ns late.
func (l *Lateness) Add(d int64) {
	if d < 0 {
		d = 0
	}
	l.n++
	l.max = max(l.max, d)
	l.b[min(d/l.w, int64(len(l.b)-1))]++
}

// N is the number of wake-ups recorded.
func (l *Lateness) N() uint64 { return l.n }

// Quantile returns the q-quantile in µs (the bucket's upper bound, never
// above the maximum), and the maximum for q ≥ 1.
func (l *Lateness) Quantile(q float64) float64 {
	if l.n == 0 {
		return 0
	}
	if q >= 1 {
		return float64(l.max) / 1000
	}
	k := uint64(q * float64(l.n))
	var c uint64
	for i, v := range l.b {
		c += uint64(v)
		if c > k {
			return float64(min(int64(i+1)*l.w, l.max)) / 1000
		}
	}
	return float64(l.max) / 1000
}

// RunUntil runs loop, an agent's slot loop that returns once stop is set,
// until it returns or ctx ends; either way it sets stop (so the agent's
// other goroutines end too) and returns what loop returned.
func RunUntil[T any](ctx context.Context, stop *atomic.Bool, loop func() T) T {
	done := make(chan T, 1)
	go func() { done <- loop() }()
	var r T
	select {
	case <-ctx.Done():
		stop.Store(true)
		r = <-done
	case r = <-done:
		stop.Store(true)
	}
	return r
}
