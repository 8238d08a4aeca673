package fecpipe

import (
	"errors"

	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/metrics"
)

// Register exports mode fec's counters and its link session (lane 0 of
// the link port: fec runs on one worker).
func (in *fecInstance) Register(r *metrics.Registry) error {
	return errors.Join(registerFEC(r, in.stats), linkpipe.RegisterSession(r, &in.stats.Session, "port", in.link, "lane", "0"))
}
