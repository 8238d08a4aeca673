package main

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/netns"
)

// TestLinkHeaderFitsEveryMode: the testbed's link ports (up --mode none, up,
// the experiments) are as far above the hosts' MTU as the mode with the
// largest overhead needs, with an integrity trailer: a full-size host frame
// fits on the link in every mode, so run --mode fec is not refused on the
// default pair. (Cells cut frames to the link.)
func TestLinkHeaderFitsEveryMode(t *testing.T) {
	c := &dataplane.Config{Link: dataplane.LinkConfig{Integrity: linkcrc.CRC32C}}
	need := map[string]int{"lg, lgnb, monitor": c.LinkOverhead(), "fec": fecpipe.Overhead(c)}
	for what, n := range need {
		if netns.DefaultLinkHeaderLen < n {
			t.Errorf("the testbed's link MTU is the hosts' + %d; mode %s needs + %d", netns.DefaultLinkHeaderLen, what, n)
		}
	}
}
