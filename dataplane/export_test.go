package dataplane

import "github.com/linkfabric/linkfabric/xdp"

// What the tests of package dataplane_test (the mechanisms' tests that stay
// beside the engine's) need of the engine's internals.

// Defaults is c.defaults: the configuration completed and checked as New
// does it.
func (c *Config) Defaults() error { return c.defaults() }

// CheckSizes is c.checkSizes for sockets sockets.
func (c *Config) CheckSizes(sockets int) error { return c.checkSizes(sockets) }

// Umem is worker 0's UMEM.
func (d *Dataplane) Umem() *xdp.Umem { return d.umem }
