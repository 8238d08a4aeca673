// Package cellify is the pure logic of cells with credits (Stardust, Aquila
// GNet) on a virtual clock: the cell wire format in the link header's type
// space, the packer and reassembly, virtual output queues (VOQs), the egress
// credit scheduler, the sprayer, reachability and MAC learning. Like the
// LinkGuardian core it does no I/O, starts no goroutines and reads no clock:
// every call takes now (nanoseconds, any monotonic origin) and every timer is a
// deadline the caller polls. The dataplane's cells pipeline and the simulated
// fabric (cellsim) both drive it.
//
// It follows Stardust (NSDI'19 §3–5: credits from the egress scheduler,
// packing within a VOQ, spraying over every link that reaches the
// destination, reachability messages that exclude faulty links) and Aquila
// GNet (NSDI'22 §3.1–3.3).
package cellify

// EdgeID is a fabric address of an edge node (a Stardust Fabric Adapter).
// Fabric nodes have ids in the same space; 0 is invalid.
type EdgeID uint16

// Classes is the number of traffic classes (802.1p priorities).
const Classes = 8

// Class is a traffic class, 0..Classes-1; higher is served first.
type Class uint8

// VOQKey names a virtual output queue at an ingress edge: the destination
// edge, the host port index on it, and the traffic class.
type VOQKey struct {
	Dst   EdgeID
	Port  uint8
	Class Class
}

// StreamKey names a reassembly stream at an egress edge: cells of one
// (source edge, destination port, class) are numbered in one sequence.
type StreamKey struct {
	Src   EdgeID
	Port  uint8
	Class Class
}
