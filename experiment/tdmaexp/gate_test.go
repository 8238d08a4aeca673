package tdmaexp

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/gate"
)

// TestTDMAExitGateHoldsTheSlots (root): a shuffle on a 4-host star with
// one core kept busy by a spinning thread, in lease and free-run mode,
// with the exit gate on every host's veth. Whatever the scheduler does to
// the agents, the FM and the softirqs, no frame enters the switch outside
// its slot (each receiver checks the gate's entry stamp of every frame),
// the switch drops nothing, no frame is lost that the kernel did not count
// dropped, every frame the arrival gate held at its receiver reaches its
// sender, and every frame a gate returned is sent again and named by its
// cause. How late frames arrive and why (the collision causes) depends
// on the machine's load: logged, not asserted.
func TestTDMAExitGateHoldsTheSlots(t *testing.T) {
	netns.RequireRoot(t)
	self := bedtest.Self(t)
	e := &bed.Env{Self: self, Prefix: netns.TestPrefix(t, "lfeg"), Progress: bedtest.Writer{T: t}}
	var stop atomic.Bool
	spun := make(chan struct{})
	go func() { // one core kept busy
		defer close(spun)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for !stop.Load() {
		}
	}()
	defer func() { stop.Store(true); <-spun }()
	for _, mode := range []string{"lease", "freerun"} {
		cfg := TDMAShuffleConfig{Star: TDMAStar{Hosts: 4, Rate: 100e6, Burst: 16 << 10, PortBurst: 32 << 10, Limit: 64 << 10, Slot: 5 * time.Millisecond, Guard: 300 * time.Microsecond,
			Mode: mode, RT: 60, Sched: "rotor", Margin: 50 * time.Microsecond}, Size: 1 << 20, Arms: []string{"tdma"}, Runs: 1, Dir: t.TempDir()}
		a, err := shuffleOnce(t.Context(), e, cfg, "tdma", 1, nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("%s: %.3f × ideal, collisions %d by cause %+v, gate %+v, returned %d (by cause %+v), sent again %d", mode, a.OverIdeal, a.Collisions, a.Causes, a.Gate, a.Returned, a.Stopped, a.Resent)
		if a.Stopped.Total() != a.Returned {
			t.Errorf("%s: %d frames returned, %d of them named by a cause", mode, a.Returned, a.Stopped.Total())
		}
		if a.Gate == nil || a.Gate.Passed == 0 || a.Entered == 0 {
			t.Fatalf("%s: the gate saw no frames: %+v, %d stamped frames received", mode, a.Gate, a.Entered)
		}
		if a.EnteredOutside != 0 {
			t.Errorf("%s: %d of %d frames entered the switch outside their slot", mode, a.EnteredOutside, a.Entered)
		}
		// A veth's receive side drops a few frames now and then on this
		// kernel, gate or no gate (and counts them): no frame may be lost
		// that it did not count.
		if a.LostFrames > a.VethRxDrops || a.RetLost != 0 || a.SockDrops != 0 || a.Resent != a.Returned {
			t.Errorf("%s: %d frames lost (%d dropped on receive by the veths), %d flows incomplete, %d returned frames lost, %d socket drops, %d returned and %d sent again",
				mode, a.LostFrames, a.VethRxDrops, a.Incomplete, a.RetLost, a.SockDrops, a.Returned, a.Resent)
		}
		if g := a.Gate; g.SentBack != g.Held || g.SendBackDropped != 0 {
			t.Errorf("%s: the arrival gate held %d frames, %d sent back to their senders, %d dropped", mode, g.Held, g.SentBack, g.SendBackDropped)
		}
		if a.Switch.Drops != 0 || a.HostDrops != 0 || a.VethDrops != 0 {
			t.Errorf("%s: drops: switch %d, host shapers %d, veth %d", mode, a.Switch.Drops, a.HostDrops, a.VethDrops)
		}
	}
}

// TestTDMAArrivalGateStalledPort (root): mid-shuffle the switch's port to
// h2 stops three times for 20 ms (its shaper's rate cut to 1 Mbit/s, with
// room for all it then holds, and put back), as a vCPU stopped with frames
// inside the switch holds them: what the port held reaches h2 after its
// slot, when the next slot's sender may be sending to h2. The arrival gate
// holds every such frame at h2 and sends it back to its sender, which
// sends it again: no collision at h2, nothing lost, every flow complete.
// Without the arrival gate the same run had thousands of collisions.
func TestTDMAArrivalGateStalledPort(t *testing.T) {
	netns.RequireRoot(t)
	self := bedtest.Self(t)
	e := &bed.Env{Self: self, Prefix: netns.TestPrefix(t, "lfag"), Progress: bedtest.Writer{T: t}}
	cfg := TDMAShuffleConfig{Star: TDMAStar{Hosts: 4, Rate: 100e6, Burst: 16 << 10, PortBurst: 32 << 10, Limit: 64 << 10, Slot: 5 * time.Millisecond, Guard: 300 * time.Microsecond,
		Mode: "lease", RT: 60, Sched: "rotor", Margin: 50 * time.Microsecond}, Size: 8 << 20, Arms: []string{"tdma"}, Runs: 1, Dir: t.TempDir()}
	var stalls atomic.Int32
	stall := func(ctx context.Context, tb *netns.Testbed, _ *os.Process) {
		shape := netns.Shape{Rate: netns.BitRate(cfg.Star.Rate), Burst: netns.ByteSize(cfg.Star.PortBurst), Limit: 2 << 20}
		if err := netns.SetTBF(tb.NS("sw"), "p2", shape); err != nil {
			t.Error(err)
			return
		}
		r, err := netns.NewTBFRate(tb.NS("sw"), "p2", shape)
		if err != nil {
			t.Error(err)
			return
		}
		defer r.Close()
		for range 3 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(300 * time.Millisecond):
			}
			if err := r.Set(1e6); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(20 * time.Millisecond)
			if err := r.Set(shape.Rate); err != nil {
				t.Error(err)
				return
			}
			stalls.Add(1)
		}
	}
	a, _, err := shuffleOnceWith(t.Context(), e, cfg, "tdma", 1, shuffleOpts{during: stall, tag: "-stall"})
	if err != nil {
		t.Fatal(err)
	}
	g := a.Gate
	t.Logf("%d stalls: %.3f × ideal, collisions %d by cause %+v, gate %+v, stopped by cause %+v, sent again %d", stalls.Load(), a.OverIdeal, a.Collisions, a.Causes, g, a.Stopped, a.Resent)
	if stalls.Load() == 0 || g == nil || g.Held == 0 {
		t.Fatalf("the stalls (%d) held no frame past its slot: %+v", stalls.Load(), g)
	}
	if a.Collisions != 0 {
		t.Errorf("%d collisions at the receivers", a.Collisions)
	}
	if g.SentBack != g.Held || g.SendBackDropped != 0 || a.Resent != a.Returned || a.Stopped[gate.SwitchQueue].Frames < g.Held {
		t.Errorf("held %d, sent back %d, dropped %d; returned %d, sent again %d, named the switch's %d", g.Held, g.SentBack, g.SendBackDropped, a.Returned, a.Resent, a.Stopped[gate.SwitchQueue].Frames)
	}
	if a.LostFrames > a.VethRxDrops || a.Incomplete != 0 || a.Switch.Drops != 0 {
		t.Errorf("%d frames lost (%d dropped on receive by the veths), %d flows incomplete, %d switch drops", a.LostFrames, a.VethRxDrops, a.Incomplete, a.Switch.Drops)
	}
}
