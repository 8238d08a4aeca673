package lgpipe

import "github.com/linkfabric/linkfabric/link"

// # Why the core's first deliveries after a claim wait
//
// With LinkGuardian's receive fast path the host gets frames two ways: the
// kernel redirects the in-order ones (XDP_REDIRECT to the host port, which
// a veth hands to its peer as xdp_frames), the core transmits the rest on
// the host port's AF_XDP socket (which a veth hands over as skbs). Both
// land on the peer's one receive ring in the order they were put there,
// but the peer's NAPI poll does not take them in that order: it hands each
// skb to the stack at once and collects xdp_frames in batches of up to 16,
// handed on when the batch is full or the poll ends (drivers/net/veth.c,
// veth_xdp_rcv). So when the kernel gives the point to the core (a hole, or
// the frame that completes AckEvery) and the core delivers within the same
// poll of the peer as the kernel's last frames, the core's frames overtake
// up to 15 of the kernel's: TCP at the host sees them out of order and
// retransmits (seen as TcpExtTCPOFOQueue at h2 and spurious fast
// retransmissions at h1 with both halves of the fast path: in 5 of 24 to
// 19 of 36 transfers of 100 MB at 10⁻³ loss, docs/results.md).
//
// Nothing the worker can read says when the peer's poll has taken the
// kernel's frames, so the core waits instead: after a claim it holds what it
// delivers until hostGateWait after the kernel's last delivery (lg_rx's
// last_ns), then sends it in order ahead of anything newer. The kernel's
// frames reach the peer's ring at the end of the poll that redirected them,
// and the peer's poll runs next on that CPU unless softirqs are deferred to
// ksoftirqd, so the wait makes the overtaking rare, not impossible. A hole
// costs nothing more: its retransmission takes longer than the wait. The
// point is not handed back while frames are held.

// hostGateWait is how long after the kernel's last delivery the core's
// deliveries wait once it claimed the point (see above).
const hostGateWait = int64(300_000) // 300 µs

// hostGate holds the core's deliveries to the host port after it claimed the
// receive point from the kernel, until the kernel's frames are taken by the
// host (see "Why the core's first deliveries after a claim wait").
type hostGate struct {
	wait   int64
	claims uint64 // the receiver's FastClaims when last looked at
	until  int64  // deliveries wait until then
	held   []link.Frame
	// Held counts the frames that waited, Waits the claims that made
	// deliveries wait.
	Held, Waits uint64
}

// claimed notes the receiver's claim count at now and, if it grew, makes
// deliveries wait until wait after lastNs, the kernel's last delivery (the
// caller may skip the call, and reading lastNs, while claims equals
// g.claims).
func (g *hostGate) claimed(now int64, claims uint64, lastNs int64) {
	if claims == g.claims {
		return
	}
	g.claims = claims
	if u := lastNs + g.wait; u > now && u > g.until {
		g.until = u
		g.Waits++
	}
}

// pass returns the frames that may go to the host at now, in order: what
// was held (once the wait is over), then fs; while the wait lasts it holds
// fs and returns nothing. The result is valid until the next call.
func (g *hostGate) pass(now int64, fs []link.Frame) []link.Frame {
	if now < g.until {
		g.held = append(g.held, fs...)
		g.Held += uint64(len(fs))
		return nil
	}
	if len(g.held) == 0 {
		return fs
	}
	g.held = append(g.held, fs...)
	out := g.held
	g.held = g.held[:0]
	return out
}

// holding reports whether frames wait, and until when.
func (g *hostGate) holding() (bool, int64) { return len(g.held) > 0, g.until }
