// Package tdmaagent is the root of PFC-driven TDMA (Vattikonda et al.,
// "Practical TDMA for Datacenter Ethernet", EuroSys'12), with the lease
// safety the paper lacks. The pure logic lives in sub-packages, each on an
// injected clock (int64 ns) with no I/O and no goroutines (nfq is the
// exception: the host's I/O on an NFQUEUE):
//
//	wire     grant (802.1Qbb frame + TDMA trailer), round schedule, demand report, raw data header
//	sched    demand matrix → round of matchings: rotor, wrr (the paper's), bvn
//	fmcore   the fabric manager's state machine: rounds pipelined one ahead, emissions per boundary
//	nfq      a minimal nfnetlink_queue client (nfqueue mode's gate for kernel traffic)
//	gate     the host gate: per-class CLOSED / OPEN-until / FREERUN, shaper model, lease, paper mode
//	tdmasim  discrete-event simulator: N hosts, a switch of rate-limited FIFO ports, the FM
//
// The design is ../shared/design/tdma.md.
package tdmaagent
