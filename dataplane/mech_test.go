package dataplane_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)

func withLG(c dataplane.Config, v lgpipe.Config) dataplane.Config {
	return dataplane.WithMech(c, "lg", v)
}
func withCells(c dataplane.Config, v cellspipe.Config) dataplane.Config {
	return dataplane.WithMech(c, "cells", v)
}
func withSession(c dataplane.Config, v linkpipe.SessionConfig) dataplane.Config {
	return dataplane.WithMech(c, "session", v)
}
func withFEC(c dataplane.Config, v fecpipe.Config) dataplane.Config {
	return dataplane.WithMech(c, "fec", v)
}

func init() {
	dataplane.LGProtect = func(c dataplane.Config, protect string) dataplane.Config {
		return withSession(c, linkpipe.SessionConfig{Protect: protect})
	}
}

// counted is how much a counter changed in a test, and how much the test
// wants it to.
type counted struct {
	what      string
	got, want uint64
}

// checkCounted fails the test for every counter that did not change by what
// is wanted.
func checkCounted(t *testing.T, cs []counted) {
	t.Helper()
	for _, c := range cs {
		if c.got != c.want {
			t.Errorf("%s: %d; want %d", c.what, c.got, c.want)
		}
	}
}
