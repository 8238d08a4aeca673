package dataplane_test

import (
	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
)

func withLG(c dataplane.Config, v lgpipe.LGConfig) dataplane.Config {
	return dataplane.WithMech(c, "lg", v)
}
func withCells(c dataplane.Config, v cellspipe.CellsConfig) dataplane.Config {
	return dataplane.WithMech(c, "cells", v)
}
func withFEC(c dataplane.Config, v fecpipe.FECConfig) dataplane.Config {
	return dataplane.WithMech(c, "fec", v)
}

func init() {
	dataplane.LGProtect = func(c dataplane.Config, protect string) dataplane.Config {
		return withLG(c, lgpipe.LGConfig{Protect: protect})
	}
}
