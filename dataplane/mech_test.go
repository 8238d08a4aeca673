package dataplane

func withLG(c Config, v LGConfig) Config       { return WithMech(c, "lg", v) }
func withCells(c Config, v CellsConfig) Config { return WithMech(c, "cells", v) }
func withFEC(c Config, v FECConfig) Config     { return WithMech(c, "fec", v) }

func init() {
	LGProtect = func(c Config, protect string) Config { return withLG(c, LGConfig{Protect: protect}) }
}
