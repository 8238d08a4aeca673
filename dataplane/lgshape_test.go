package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// TestLGShapedLinkHoldsBurst: lg with sw1's link port limited to 20 Mbit/s
// and a 16 KiB egress buffer; h1 sends a burst of 400 frames of 1000 bytes
// at once. The burst must wait in the class queues, not be tail-dropped by
// the shaper (the budget counted frames only: 351 of 400 frames were
// dropped at the shaper in forward mode, and lg recovered such drops as
// losses), so every frame arrives once and the link saw no loss.
func TestLGShapedLinkHoldsBurst(t *testing.T) {
	tb := netns.TestUp(t, "lfls", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	lgc := lgpipe.Config{Copies: 3, AckTimeout: lgAckTimeout}
	sw1 := dataplane.StartSwitch(t, tb.NS("sw1"), withLG(dataplane.Config{Mode: lgpipe.ModeLG,
		Shape: map[string]dataplane.PortShape{"link0": {Rate: 20_000_000, Buffer: 16 << 10}}}, lgc))
	sw2 := dataplane.StartSwitch(t, tb.NS("sw2"), withLG(dataplane.Config{Mode: lgpipe.ModeLG}, lgc))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2: %v", err)
	}
	atH2 := dataplane.RawCapture(t, tb.NS("h2"), "eth0", unix.ETH_P_IP)
	h1 := dataplane.RawSender(t, tb.NS("h1"), "eth0")
	const frames = 400
	for i := range frames {
		if _, err := unix.Write(h1, dataplane.ClassFrame(0, i, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// 400 frames of ~1040 bytes on the wire at 20 Mbit/s drain in 170 ms.
	got := 0
	dataplane.Capture(t, atH2, 3*time.Second, func(b []byte) bool {
		if dataplane.ClassOf(b) >= 0 {
			got++
		}
		return got < frames
	})
	s1 := sw1.Stats()
	r := waitCore(t, sw2).Receiver
	if e := s1.Link.Egress; e == nil || e.Dropped != 0 {
		t.Errorf("sw1's shaped link port: egress %+v; want no tail drop (the burst waits in the class queues)", e)
	}
	if r.LostDetected != 0 {
		t.Errorf("sw2's receiver detected %d frames lost on an unimpaired link", r.LostDetected)
	}
	if got != frames {
		t.Errorf("h2 received %d frames; h1 sent %d (h2's capture socket dropped %d, sw1's host socket %d, sw2's link socket %d)",
			got, frames, dataplane.CaptureDrops(t, atH2), socketDrops(t, sw1.Host()), socketDrops(t, sw2.Link()))
	}
}
