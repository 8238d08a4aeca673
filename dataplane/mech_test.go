package dataplane_test

import (
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
