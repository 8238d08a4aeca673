package dataplane

import (
	"math"

	"github.com/linkfabric/linkfabric/xdp"
)

// forwardPipeline is mode forward: every frame leaves on the other port,
// unchanged (the baseline bump in the wire).
type forwardPipeline struct{ host, link int }

func newForwardPipeline(w *worker) (Pipeline, error) {
	ps := w.d.Ports()
	return forwardPipeline{host: ps.Host, link: ps.Links[0]}, nil
}

func (forwardPipeline) Room(int) int { return math.MaxInt }

func (f forwardPipeline) Receive(_ int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	out := f.link
	if port == f.link {
		out = f.host
	}
	for _, d := range descs {
		tx.Send(out, laneData, d.Addr, int(d.Len))
		tx.Release(d.Addr)
	}
}

func (forwardPipeline) Poll(int64, *Tx) int64 { return math.MaxInt64 }

func (forwardPipeline) Stop() {}
