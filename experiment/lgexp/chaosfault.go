package lgexp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/rawio"
)

// otherSwitch is the pair testbed's switch at the other end of sw's link.
func otherSwitch(sw string) string {
	if sw == "sw1" {
		return "sw2"
	}
	return "sw1"
}

// deadWatch bounds how long chaos waits for a survivor's link session to
// leave up after its peer was killed: the dead-peer timeout (500 ms) with
// room for a slow machine.
const deadWatch = 3 * time.Second

// watchPeerDead reads sw's link session every 10 ms from now until it
// leaves up, and returns how long that took (ms; -1 if it did not within
// deadWatch) and how much its count of dead-peer timeouts rose.
func watchPeerDead(ctx context.Context, e *bed.Env, sw string) (ms float64, timeouts uint64) {
	start := time.Now()
	var first uint64
	firstRead := false
	for time.Since(start) < deadWatch && ctx.Err() == nil {
		var d bed.DPStats
		if err := bed.FetchStats(ctx, e.NS(sw), &d); err == nil && d.LinkGuardian != nil {
			s := d.LinkGuardian.Session
			if !firstRead {
				first, firstRead = s.Counters.PeerTimeouts, true
			}
			if s.State != "up" {
				return float64(time.Since(start).Microseconds()) / 1e3, s.Counters.PeerTimeouts - first
			}
		}
		time.Sleep(sampleEvery)
	}
	return -1, 0
}

// HostileSent is what the hostile event sent into a link port.
type HostileSent struct {
	// Frames sent, of them Sealed with a valid integrity trailer (CRC32C or
	// the Internet checksum, half each), so that they pass the check and
	// reach the link-header parser and the LinkGuardian core.
	Frames, Sealed int
	// From is the switch whose link port sent them, with its own MAC as
	// the source: the peer's, as a host on the wire could forge it.
	From string
}

// sendHostile sends n frames of the link EtherType with random type,
// flags, sequence numbers, ACKs and lengths (seeded) from sw's link port,
// its own MAC as the source, to the other switch's link port: frames the
// other end must count and drop, or handle as the protocol says, without
// stopping.
func sendHostile(e *bed.Env, sw string, n int, seed uint64) (*HostileSent, error) {
	peer, err := bed.Link(e.NS(otherSwitch(sw)), "link0")
	if err != nil {
		return nil, err
	}
	own, err := bed.Link(e.NS(sw), "link0")
	if err != nil {
		return nil, err
	}
	dst, src := peer.Attrs().HardwareAddr, own.Attrs().HardwareAddr
	var port *rawio.Port
	if err := netns.Do(e.NS(sw), func() error {
		var err error
		port, err = rawio.Open("link0", seqhdr.EtherType, false)
		return err
	}); err != nil {
		return nil, fmt.Errorf("hostile frames from %s link0: %w", sw, err)
	}
	defer port.Close()
	rng := rand.New(rand.NewPCG(seed, 0x6c66))
	out := &HostileSent{From: sw}
	const batch = rawio.MaxBatch
	bufs := make([][]byte, batch)
	for i := range bufs {
		bufs[i] = make([]byte, 1514)
	}
	frames := make([][]byte, 0, batch)
	deadline := time.Now().Add(30 * time.Second)
	for out.Frames < n && time.Now().Before(deadline) {
		frames = frames[:0]
		for i := 0; i < batch && out.Frames+len(frames) < n; i++ {
			f, sealed := hostileFrame(rng, bufs[i], dst, src)
			if sealed {
				out.Sealed++
			}
			frames = append(frames, f)
		}
		sent, err := port.Send(frames)
		if err != nil {
			return out, err
		}
		out.Frames += sent
		if sent < len(frames) {
			time.Sleep(100 * time.Microsecond) // the veth's queue is full
		}
	}
	if out.Frames < n {
		return out, fmt.Errorf("hostile frames from %s link0: sent %d of %d in 30 s", sw, out.Frames, n)
	}
	return out, nil
}

// hostileFrame writes one hostile frame into b: the link EtherType, a type
// of the whole 4-bit space, random flags, sequence number, ACK and payload,
// a random length from the shortest Ethernet header up; half of them sealed
// with a valid integrity trailer.
func hostileFrame(rng *rand.Rand, b []byte, dst, src net.HardwareAddr) ([]byte, bool) {
	n := 14 + rng.IntN(len(b)-14-linkcrc.TrailerLen+1)
	if rng.IntN(2) == 0 {
		n = 14 + rng.IntN(64) // short frames: truncated headers
	}
	copy(b[0:6], dst)
	copy(b[6:12], src)
	b[12], b[13] = seqhdr.EtherType>>8, seqhdr.EtherType&0xff
	for i := 14; i < n; i++ {
		b[i] = byte(rng.Uint32())
	}
	if n > 14 {
		b[14] = byte(rng.IntN(seqhdr.NumTypes))
	}
	switch rng.IntN(4) {
	case 0:
		if m, ok := linkcrc.CRC32C.Seal(b, n); ok {
			return b[:m], true
		}
	case 1:
		if m, ok := linkcrc.Csum.Seal(b, n); ok {
			return b[:m], true
		}
	}
	return b[:n], false
}

// faultNote is what the event did to the link beyond TCP and UDP, for the
// table ("" if nothing).
func (r *ChaosEvent) faultNote() string {
	var parts []string
	if strings.HasPrefix(r.Event, "kill-") {
		parts = append(parts, fmt.Sprintf("peer's session left up %s after the kill (%d dead-peer timeouts)", msStr(r.PeerDeadMs), r.PeerTimeouts))
	}
	if h := r.Hostile; h != nil {
		parts = append(parts, fmt.Sprintf("%d hostile frames from %s's link port (%d with a valid trailer)", h.Frames, h.From, h.Sealed))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "; "
}
