// Package dataplanetest runs dataplanes in a test's network namespaces: a
// mode's veth tests start one on each switch of a testbed (netns.TestUp)
// and it stops when the test ends, whatever the test's outcome.
package dataplanetest

import (
	"context"
	"sync"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
)

// Switch is a dataplane running in a namespace.
type Switch struct {
	*dataplane.Dataplane
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// Start creates a dataplane with cfg in namespace ns (ports host0 and link0
// unless cfg names its link ports) and runs it until the test ends or Stop.
func Start(t testing.TB, ns string, cfg dataplane.Config) *Switch {
	t.Helper()
	if len(cfg.LinkPorts) == 0 && cfg.LinkPort == "" {
		cfg.HostPort, cfg.LinkPort = "host0", "link0"
	}
	s := &Switch{done: make(chan struct{})}
	if err := netns.Do(ns, func() error {
		var err error
		s.Dataplane, err = dataplane.New(cfg)
		return err
	}); err != nil {
		t.Fatalf("dataplane in %s: %v", ns, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.err = s.Run(ctx)
	}()
	t.Cleanup(func() { s.Stop(t) })
	return s
}

// Stop ends the dataplane and closes it; Run's and Close's errors fail the
// test. Later calls do nothing.
func (s *Switch) Stop(t testing.TB) {
	s.once.Do(func() {
		s.cancel()
		<-s.done
		if s.err != nil {
			t.Errorf("dataplane: Run: %v", s.err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("dataplane: Close: %v", err)
		}
	})
}
