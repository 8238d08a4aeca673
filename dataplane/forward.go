package dataplane

import (
	"math"

	"github.com/linkfabric/linkfabric/xdp"
)

// forwardPipeline is mode forward: every frame leaves on the other port,
// unchanged (the baseline bump in the wire).
type forwardPipeline struct{}

func (forwardPipeline) Room(int) int { return math.MaxInt }

func (forwardPipeline) Receive(_ int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	out := portLink
	if port == portLink {
		out = portHost
	}
	for _, d := range descs {
		tx.Send(out, laneData, d.Addr, int(d.Len))
		tx.Release(d.Addr)
	}
}

func (forwardPipeline) Poll(int64, *Tx) int64 { return math.MaxInt64 }

func (forwardPipeline) Stop() {}
