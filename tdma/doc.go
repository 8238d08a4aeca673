// Package tdma is the root of PFC-driven TDMA (Vattikonda et al.,
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
// The design in brief. The gate lives in the host, because veth ignores
// PAUSE and PFC frames and an AF_XDP forwarder that stops draining pushes
// nothing back on the host: either the agent is the sender (raw mode, the
// paper's §5.3.2) or it holds kernel TCP/UDP per destination in an NFQUEUE
// and releases it with verdicts (nfqueue mode, §6.4). Hosts are classified
// by destination (§5.1). Each grant is a lease: an 802.1Qbb frame with a TDMA
// trailer that the host closes on its own timer, and that may open on the
// round schedule for a bounded number of slots without hearing the FM
// (free-run), so a lost control frame can neither stall the fabric nor cause
// a collision; the paper's reactive pause/unpause stays as paper mode. Slot
// timing uses no Go timers (a locked thread sleeps until shortly before the
// deadline, then spins). The switch is an unmodified Linux bridge, as in the
// paper (§4).
package tdma
