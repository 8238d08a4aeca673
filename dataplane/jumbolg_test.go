package dataplane_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestJumboVeth: on the pair testbed at MTU 9000 (link ports 9016), mode
// forward on the XDP fast path and on the AF_XDP path (also through a rate
// limit on the link ports, and with generic XDP), and lg, carry
// 8000-byte UDP datagrams (DF set, one 8042-byte frame each) both ways
// intact, and a TCP transfer with 9000-byte segments. On the AF_XDP paths
// the frames reach the worker as multi-buffer chains (4 KiB kernel buffers)
// and leave as chains again; on the fast path the devmap redirects them as
// multi-buffer XDP frames and no frame goes through AF_XDP.
func TestJumboVeth(t *testing.T) {
	dataplane.RequireIperf3(t)
	tb := netns.TestUp(t, "lfjb", "pair", netns.Options{Forwarding: netns.ForwardingNone, MTU: 9000})
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	const size, count = 8000, 200
	for _, arm := range []struct {
		name string
		cfg  dataplane.Config
	}{
		{"forward-xdp", dataplane.Config{FastPath: dataplane.FastPathXDP}},
		{"forward-afxdp", dataplane.Config{FastPath: dataplane.FastPathAFXDP}},
		// A rate limit on the link port: frames wait in its egress queue
		// and are placed as chains from there.
		{"forward-afxdp-shaped", dataplane.Config{FastPath: dataplane.FastPathAFXDP, Shape: map[string]dataplane.PortShape{"link0": {Rate: 2_000_000_000}}}},
		// Generic (skb) XDP hands the socket frames as chains too.
		{"forward-afxdp-generic", dataplane.Config{FastPath: dataplane.FastPathAFXDP, XDPMode: bpf.XDPGeneric}},
		{"lg", dataplane.Config{Mode: lgpipe.ModeLG}},
	} {
		t.Run(arm.name, func(t *testing.T) {
			sw1, sw2 := dataplane.StartBoth(t, tb.NS("sw1"), arm.cfg, tb.NS("sw2"), arm.cfg)
			defer sw2.Stop(t)
			defer sw1.Stop(t)
			for _, sw := range []*dataplane.RunningSwitch{sw1, sw2} {
				if c := sw.D.Config(); c.FrameSize != 16384 || !sw.D.Umem().MultiBuffer() {
					t.Fatalf("frame size %d (multi-buffer %v), want 16384 chosen for MTU 9016", c.FrameSize, sw.D.Umem().MultiBuffer())
				}
			}
			if arm.cfg.FastPath == dataplane.FastPathXDP {
				dataplane.WaitFastPath(t, "sw1", sw1.D, dataplane.FastPathXDP)
				dataplane.WaitFastPath(t, "sw2", sw2.D, dataplane.FastPathXDP)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
				t.Fatalf("ping h1→h2: %v", err)
			}
			if err := netns.WaitPing(ctx, h2, "10.0.0.1"); err != nil {
				t.Fatalf("ping h2→h1: %v", err)
			}
			// Drops at the sockets before now are not the datagrams' (a
			// session frame from the peer can find a socket whose worker
			// has not filled its fill ring yet).
			drops := map[*dataplane.Port]uint64{}
			for _, sw := range []*dataplane.RunningSwitch{sw1, sw2} {
				for _, p := range []*dataplane.Port{sw.D.Host(), sw.D.Link()} {
					drops[p] = socketDrops(t, p)
				}
			}
			before1, before2 := sw1.D.Stats(), sw2.D.Stats()
			dataplane.SendJumboUDP(t, h1, h2, "10.0.0.2", 5311, size, count)
			dataplane.SendJumboUDP(t, h2, h1, "10.0.0.1", 5312, size, count)
			after1, after2 := sw1.D.Stats(), sw2.D.Stats()
			frame := uint64(size + 8 + 20 + dataplane.EthHeaderLen)
			// Every host port took count frames of that size from its host
			// and gave count to it: whole frames, counted once each,
			// whichever path carried them.
			for _, c := range []struct {
				what       string
				before, at dataplane.DirSnapshot
			}{
				{"sw1 host0 rx", before1.Host.RX, after1.Host.RX},
				{"sw1 host0 tx", before1.Host.TX, after1.Host.TX},
				{"sw2 host0 rx", before2.Host.RX, after2.Host.RX},
				{"sw2 host0 tx", before2.Host.TX, after2.Host.TX},
			} {
				if f, b := c.at.Frames-c.before.Frames, c.at.Bytes-c.before.Bytes; f < count || b < count*frame {
					t.Errorf("%s: %d frames, %d bytes for %d datagrams of %d bytes (frames of %d)", c.what, f, b, count, size, frame)
				}
			}
			if arm.cfg.FastPath == dataplane.FastPathXDP {
				for name, sw := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
					for _, p := range []*dataplane.Port{sw.D.Host(), sw.D.Link()} {
						c, err := p.Program().Counters()
						if err != nil {
							t.Fatal(err)
						}
						if c.Redirected != 0 || c.Forwarded < count {
							t.Errorf("%s %s: %d frames to AF_XDP, %d on the fast path; want none and ≥ %d", name, p.Name, c.Redirected, c.Forwarded, count)
						}
					}
				}
			}
			for name, sw := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
				for _, p := range []*dataplane.Port{sw.D.Host(), sw.D.Link()} {
					if n := socketDrops(t, p) - drops[p]; n != 0 {
						t.Errorf("%s %s: %d frames dropped at the AF_XDP socket", name, p.Name, n)
					}
				}
				s := sw.D.Stats()
				if s.Host.RX.Dropped+s.Link.RX.Dropped != 0 {
					t.Errorf("%s: %d host and %d link frames dropped on receipt (chains longer than a UMEM frame?)", name, s.Host.RX.Dropped, s.Link.RX.Dropped)
				}
			}
			if arm.cfg.Mode == lgpipe.ModeLG {
				// The statistics are published every 20 ms while the worker
				// runs and once more 20 ms after it last worked (until
				// 2026-11-27 only at its next wake, a session keepalive
				// up to 100 ms later): two equal snapshots
				// (waitCore) could both be older than its last deliveries
				// (make test saw 195 of 200). The wait stays for a busy
				// machine, where a wake can come late.
				r := waitCore(t, sw2.D).Receiver
				for deadline := time.Now().Add(3 * time.Second); r != nil && r.Delivered < count && time.Now().Before(deadline); {
					time.Sleep(25 * time.Millisecond)
					r = lgpipe.StatsOf(sw2.D).Core().Receiver
				}
				if r == nil || r.LostDetected != 0 || r.Delivered < count {
					t.Errorf("sw2 lg receiver %+v: want every frame delivered in order, none lost", r)
				}
			}
			dataplane.StartIperfServer(t, ctx, h2, 5313)
			out, err := dataplane.RunIperfClient(ctx, h1, 5313, "-n", "40M")
			if err != nil {
				t.Fatalf("iperf3 40 MB h1→h2 at MTU 9000: %v\n%s", err, dataplane.LastLines(string(out), 6))
			}
			t.Logf("%s: %d datagrams of %d bytes each way intact; iperf3 TCP at MTU 9000:\n%s", arm.name, count, size, dataplane.LastLines(string(out), 4))
		})
	}
}
