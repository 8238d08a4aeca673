package netns

import (
	"context"
	"errors"
	"testing"
)

type fakeRunner struct {
	runErr error // what Run returns once its context ends
	closed int
}

func (f *fakeRunner) Run(ctx context.Context) error { <-ctx.Done(); return f.runErr }
func (f *fakeRunner) Close() error                  { f.closed++; return nil }

// recorder is a testing.TB that records Errorf instead of failing.
type recorder struct {
	testing.TB
	errs int
}

func (r *recorder) Errorf(string, ...any) { r.errs++ }
func (r *recorder) Cleanup(func())        {}

// TestRunningStop: a Runner runs until Stop, which ends and closes it once
// however often it is called, and reports Run's error.
func TestRunningStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runErr error
		errs   int
	}{{"clean", nil, 0}, {"run fails", errors.New("boom"), 1}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeRunner{runErr: tc.runErr}
			rec := &recorder{TB: t}
			s := startRunning(rec, f)
			if done, _ := s.Exited(); done {
				t.Fatal("Exited before Stop")
			}
			s.Stop(rec)
			s.Stop(rec)
			if done, err := s.Exited(); !done || err != tc.runErr {
				t.Errorf("Exited after Stop = %v, %v; want true, %v", done, err, tc.runErr)
			}
			if f.closed != 1 || rec.errs != tc.errs {
				t.Errorf("closed %d times with %d errors; want once with %d", f.closed, rec.errs, tc.errs)
			}
		})
	}
}
