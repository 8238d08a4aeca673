package xdp

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawPpoll reports a readable pipe, times out on an empty one, and a
// goroutine sleeping in it on a locked thread does not hold up a
// stop-the-world: the runtime's preemption signal interrupts the ppoll.
func TestRawPpoll(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	fds := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
	ts := unix.NsecToTimespec(int64(time.Millisecond))
	// The runtime's signals (preemption, GC) may interrupt a raw ppoll,
	// as Wait expects: try again.
	poll := func() (int, error) {
		for {
			n, err := rawPpoll(fds, &ts)
			if err != unix.EINTR {
				return n, err
			}
		}
	}
	if n, err := poll(); n != 0 || err != nil {
		t.Fatalf("empty pipe: %d, %v", n, err)
	}
	if _, err := unix.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if n, err := poll(); n != 1 || err != nil || fds[0].Revents&unix.POLLIN == 0 {
		t.Fatalf("readable pipe: %d, %v, revents %#x", n, err, fds[0].Revents)
	}
	var b [1]byte
	unix.Read(p[0], b[:])
	// With no fds it sleeps for the whole timeout (unless a signal cut
	// it short), as unix.Ppoll does.
	for {
		ms := unix.NsecToTimespec(int64(time.Millisecond)) // ppoll writes back what is left
		t0 := time.Now()
		n, err := rawPpoll(nil, &ms)
		if err == unix.EINTR {
			continue
		}
		if n != 0 || err != nil {
			t.Fatalf("no fds: %d, %v", n, err)
		}
		if d := time.Since(t0); d < time.Millisecond {
			t.Fatalf("no fds: returned after %v of a 1ms timeout", d)
		}
		break
	}

	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS < 2: a raw sleep would hold the only P")
	}
	var stop, sleeping atomic.Bool
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		wakes := 0
		for !stop.Load() {
			f := []unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}
			long := unix.NsecToTimespec(int64(30 * time.Second))
			sleeping.Store(true)
			rawPpoll(f, &long)
			wakes++
		}
		done <- wakes
	}()
	for !sleeping.Load() {
		runtime.Gosched()
	}
	time.Sleep(10 * time.Millisecond)
	gcDone := make(chan struct{})
	go func() { runtime.GC(); close(gcDone) }()
	select {
	case <-gcDone:
	case <-time.After(10 * time.Second):
		t.Fatal("a GC waited for a goroutine sleeping in a raw ppoll")
	}
	stop.Store(true)
	unix.Write(p[1], []byte{1})
	<-done
}
