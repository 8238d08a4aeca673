// Package dataplanetest runs dataplanes in a test's network namespaces: a
// mode's veth tests start one on each switch of a testbed (netns.TestUp)
// and it stops when the test ends, whatever the test's outcome.
package dataplanetest

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
)

// Switch is a dataplane running in a namespace (Stop, Exited: netns.Running).
type Switch struct {
	*dataplane.Dataplane
	*netns.Running
}

// Start creates a dataplane with cfg in namespace ns (ports host0 and link0
// unless cfg names its link ports) and runs it until the test ends or Stop.
func Start(t testing.TB, ns string, cfg dataplane.Config) *Switch {
	t.Helper()
	if len(cfg.LinkPorts) == 0 && cfg.LinkPort == "" {
		cfg.HostPort, cfg.LinkPort = "host0", "link0"
	}
	d, r := netns.TestRun(t, ns, func() (*dataplane.Dataplane, error) { return dataplane.New(cfg) })
	return &Switch{Dataplane: d, Running: r}
}
