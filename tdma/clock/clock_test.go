package clock

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSleepUntilNeverEarly(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var s Sleeper
	for i := 0; i < 20; i++ {
		d := Now() + int64(300*time.Microsecond)
		if got := s.SleepUntil(d); got < d {
			t.Fatalf("woke %d ns early", d-got)
		}
	}
}

func TestNowFollowsMonotonic(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	if d := Now() - a; d < int64(2*time.Millisecond) {
		t.Fatalf("Now advanced %d ns over a 2 ms sleep", d)
	}
	r := FromRealtime(time.Now().UnixNano())
	if d := r - Now(); d > int64(time.Millisecond) || d < -int64(time.Millisecond) {
		t.Fatalf("FromRealtime(now) is %d ns off Now", d)
	}
}

func TestLatenessQuantiles(t *testing.T) {
	l := NewLateness()
	for i := int64(1); i <= 100; i++ {
		l.Add(i * 1000)
	}
	if q := l.Quantile(0.5); q < 50 || q > 52 {
		t.Errorf("p50 = %v µs, want ≈ 51", q)
	}
	if q := l.Quantile(1); q != 100 {
		t.Errorf("max = %v µs", q)
	}
}

func TestLatenessRange(t *testing.T) {
	l := NewLatenessRange(100*time.Microsecond, time.Second)
	for i := int64(1); i <= 100; i++ {
		l.Add(i * int64(time.Millisecond)) // 1..100 ms
	}
	if q := l.Quantile(0.5); q < 50_000 || q > 51_100 {
		t.Errorf("p50 = %v µs, want ≈ 51 000", q)
	}
	if q := l.Quantile(0.99); q > 100_000 {
		t.Errorf("p99 = %v µs above the maximum", q)
	}
	l.Add(int64(5 * time.Second)) // past the range: the last bucket, exact max
	if q := l.Quantile(1); q != 5e6 {
		t.Errorf("max = %v µs, want 5e6", q)
	}
}

// TestNowIsTheKernelsMonotonic: Now reads the kernel's CLOCK_MONOTONIC
// (what eBPF programs read with bpf_ktime_get_ns and what every other
// process reads), not that clock plus this process's start-up error: a
// kernel read between two Nows lies between them.
func TestNowIsTheKernelsMonotonic(t *testing.T) {
	for i := 0; i < 10000; i++ {
		var ts unix.Timespec
		a := Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		b := Now()
		if m := ts.Nano(); m < a || m > b {
			t.Fatalf("read %d: CLOCK_MONOTONIC %d outside [%d, %d] of the Nows around it (%d ns before, %d ns after)", i, m, a, b, a-m, m-b)
		}
	}
}

// TestRunUntil: the loop's result comes back and stop is set, whether the
// loop ends by itself or ctx ends first (the loop then sees stop).
func TestRunUntil(t *testing.T) {
	var stop atomic.Bool
	if r := RunUntil(context.Background(), &stop, func() int { return 7 }); r != 7 || !stop.Load() {
		t.Fatalf("loop ended by itself: %d, stop %v", r, stop.Load())
	}
	stop.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	r := RunUntil(ctx, &stop, func() int {
		close(started)
		for !stop.Load() {
			runtime.Gosched()
		}
		return -1
	})
	if r != -1 || !stop.Load() {
		t.Fatalf("ctx ended: %d, stop %v", r, stop.Load())
	}
}
