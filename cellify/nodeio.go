package cellify

import (
	"math/bits"

	"github.com/linkfabric/linkfabric/link"
)

// Output collects what a Node's calls produce until Reset.
//
// Every frame handed to the node (HostRx, LinkRx, Respray) or allocated by
// it comes back exactly once: in a link's Ctrl or Data (ownership passes
// to the caller, which frees the frame once transmitted or hands it to a
// link layer that does), in Deliver (ownership passes to the host side) or
// in Free (the node is done with it). The node holds no frame between
// calls. A forwarded cell or credit frame keeps its handle.
type Output struct {
	Link    []link.Out     // per link port: Ctrl REACH and credit frames, Data cells
	Active  uint64         // bit l: Link[l] holds frames
	Deliver [][]link.Frame // per host port, in stream order
	Free    []link.Frame
}

func newNodeOutput(links, hosts int) Output {
	o := Output{Link: make([]link.Out, links), Deliver: make([][]link.Frame, hosts), Free: make([]link.Frame, 0, 64)}
	for i := range o.Link {
		o.Link[i].Ctrl = make([]link.Frame, 0, 8)
		o.Link[i].Data = make([]link.Frame, 0, 64)
	}
	for i := range o.Deliver {
		o.Deliver[i] = make([]link.Frame, 0, 64)
	}
	return o
}

// Reset empties every list, keeping its capacity.
func (o *Output) Reset() {
	for m := o.Active; m != 0; m &= m - 1 {
		l := &o.Link[bits.TrailingZeros64(m)]
		l.Ctrl, l.Data, l.Bytes = l.Ctrl[:0], l.Data[:0], 0
	}
	o.Active = 0
	for i := range o.Deliver {
		o.Deliver[i] = o.Deliver[i][:0]
	}
	o.Free = o.Free[:0]
}
