package dataplane

import (
	"runtime"
	"testing"
)

// Workers sleep holding their P only while one P stays free: with two,
// one worker may, a second may not until the first gives its place back.
func TestRawSleepKeepsAP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if rawSleepers.Load() != 0 {
		t.Skip("a worker of another test is running")
	}
	r1, ok := rawSleep()
	if !ok {
		t.Fatal("the first worker of two Ps may not sleep raw")
	}
	if _, ok := rawSleep(); ok {
		t.Fatal("a second worker took the last P")
	}
	r1()
	r2, ok := rawSleep()
	if !ok {
		t.Fatal("the place was not given back")
	}
	r2()
	runtime.GOMAXPROCS(1)
	if _, ok := rawSleep(); ok {
		t.Fatal("raw sleep with one P")
	}
	if rawSleepers.Load() != 0 {
		t.Fatalf("%d places still taken", rawSleepers.Load())
	}
}
