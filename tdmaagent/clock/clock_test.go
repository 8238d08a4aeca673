package clock

import (
	"runtime"
	"testing"
	"time"
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
