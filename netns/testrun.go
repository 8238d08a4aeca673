package netns

import (
	"context"
	"sync"
	"testing"
)

// Runner is what TestRun runs in a namespace: made there, run until its
// context ends, then closed (a dataplane, an agent).
type Runner interface {
	Run(context.Context) error
	Close() error
}

// Running is a Runner started by TestRun. Its Run error is visible while the
// test runs (Exited, CheckRunning) and fails the test when it stops.
type Running struct {
	// Done is closed when Run has returned.
	Done chan struct{}
	// Cancel ends Run (Stop also closes the Runner).
	Cancel context.CancelFunc
	r      Runner
	err    error
	once   sync.Once
}

// TestIn runs fn inside namespace ns (as Do) and returns its value; an
// error fails the test.
func TestIn[T any](tb testing.TB, ns string, fn func() (T, error)) T {
	tb.Helper()
	var v T
	if err := Do(ns, func() error {
		var err error
		v, err = fn()
		return err
	}); err != nil {
		tb.Fatalf("in %s: %v", ns, err)
	}
	return v
}

// TestRun makes a Runner with mk inside namespace ns (its sockets are bound
// there) and runs it until the test ends or Stop. An error of mk fails the
// test.
func TestRun[R Runner](tb testing.TB, ns string, mk func() (R, error)) (R, *Running) {
	tb.Helper()
	r := TestIn(tb, ns, mk)
	return r, startRunning(tb, r)
}

// TestRunEach is TestRun in each namespace of nss at once: mk(i) makes the
// Runner of nss[i]. Making one may take a while (a dataplane loads a
// program per port); made together, they overlap. An error of any fails
// the test, the others made still run until it ends.
func TestRunEach[R Runner](tb testing.TB, nss []string, mk func(i int) (R, error)) ([]R, []*Running) {
	tb.Helper()
	rs, errs := make([]R, len(nss)), make([]error, len(nss))
	var wg sync.WaitGroup
	for i, ns := range nss {
		wg.Go(func() {
			errs[i] = Do(ns, func() error {
				var err error
				rs[i], err = mk(i)
				return err
			})
		})
	}
	wg.Wait()
	running := make([]*Running, len(nss))
	for i := range nss {
		if errs[i] == nil {
			running[i] = startRunning(tb, rs[i])
		}
	}
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("in %s: %v", nss[i], err)
		}
	}
	return rs, running
}

// startRunning runs r on a goroutine of its own until tb ends or Stop.
func startRunning(tb testing.TB, r Runner) *Running {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Running{Done: make(chan struct{}), Cancel: cancel, r: r}
	go func() {
		defer close(s.Done)
		s.err = r.Run(ctx)
	}()
	tb.Cleanup(func() { s.Stop(tb) })
	return s
}

// Stop ends Run and closes the Runner; Run's and Close's errors fail the
// test. Later calls (the test's cleanup calls it too) do nothing.
func (s *Running) Stop(tb testing.TB) {
	s.once.Do(func() {
		s.Cancel()
		<-s.Done
		if s.err != nil {
			tb.Errorf("%T: Run: %v", s.r, s.err)
		}
		if err := s.r.Close(); err != nil {
			tb.Errorf("%T: Close: %v", s.r, err)
		}
	})
}

// Exited reports whether Run returned, and with what.
func (s *Running) Exited() (bool, error) {
	select {
	case <-s.Done:
		return true, s.err
	default:
		return false, nil
	}
}

// CheckRunning fails the test at once if Run has returned; what names the
// Runner.
func (s *Running) CheckRunning(tb testing.TB, what string) {
	tb.Helper()
	if done, err := s.Exited(); done {
		tb.Fatalf("%s: %T ended: %v", what, s.r, err)
	}
}
