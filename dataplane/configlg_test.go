package dataplane_test

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/xdp"
)

// TestConfigSizes: sizes that cannot work together are refused at startup
// with an error that names the flags involved, instead of a dataplane that
// runs and sends nothing (lg keeps 2 × --batch of the link TX ring free for
// control frames and copies, so --ring-size ≤ 2 × --batch left no room for
// data at all).
func TestConfigSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   dataplane.Config
		flags []string // every one must be named in the error
	}{
		{"lg ring = 2 x batch", dataplane.Config{Mode: lgpipe.ModeLG, RingSize: 512, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"lgnb ring < 2 x batch", dataplane.Config{Mode: lgpipe.ModeLGNB, RingSize: 256, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"forward batch > ring", dataplane.Config{Mode: dataplane.ModeForward, RingSize: 64, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"ring not a power of two", dataplane.Config{Mode: dataplane.ModeForward, RingSize: 3000}, []string{"--ring-size"}},
		{"negative batch", dataplane.Config{Mode: dataplane.ModeForward, Batch: -1}, []string{"--batch"}},
		{"frame size", dataplane.Config{Mode: dataplane.ModeForward, FrameSize: 1500}, []string{"--frame-size"}},
		{"tx buffer not a power of two", withLG(dataplane.Config{Mode: lgpipe.ModeLG}, lgpipe.Config{TxBuffer: 1000}), []string{"--lg-tx-buffer"}},
		{"tx buffer beyond the ring", withLG(dataplane.Config{Mode: lgpipe.ModeLG, RingSize: 1024}, lgpipe.Config{TxBuffer: 4096}), []string{"--lg-tx-buffer", "--ring-size"}},
		{"umem smaller than the rings", dataplane.Config{Mode: dataplane.ModeForward, RingSize: 2048, FrameCount: 2048}, []string{"--frames", "--ring-size"}},
		{"umem smaller than rings and lg buffers", dataplane.Config{Mode: lgpipe.ModeLG, RingSize: 1024, FrameCount: 4096}, []string{"--frames", "--ring-size"}},
		{"frames and frames per queue", dataplane.Config{Mode: dataplane.ModeForward, FrameCount: 65536, FramesPerQueue: 4096}, []string{"--frames", "--frames-per-queue"}},
		{"frames per queue below the ring", dataplane.Config{Mode: dataplane.ModeForward, RingSize: 2048, FramesPerQueue: 1024}, []string{"--frames-per-queue", "--ring-size"}},
		{"frames per queue too many", dataplane.Config{Mode: dataplane.ModeForward, RingSize: 65536, Batch: 256, FramesPerQueue: 1 << 31}, []string{"--frames-per-queue"}},
		{"zerocopy", dataplane.Config{Mode: dataplane.ModeForward, ZeroCopy: "yes"}, []string{"--zerocopy", "auto", "on", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.HostPort, c.LinkPort = "host0", "link0"
			err := c.Defaults()
			if err == nil {
				err = c.CheckSizes(3) // host 1 queue, link 2 queues (the testbed's veths)
			}
			if err == nil {
				t.Fatalf("%+v accepted", tc.cfg)
			}
			for _, f := range tc.flags {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not name %s", err, f)
				}
			}
		})
	}
	// The defaults, and sizes scaled together, are accepted.
	for _, c := range []dataplane.Config{
		{Mode: dataplane.ModeForward}, {Mode: lgpipe.ModeLG}, {Mode: lgpipe.ModeLGNB}, {Mode: lgpipe.ModeMonitor},
		{Mode: lgpipe.ModeLG, RingSize: 4096}, {Mode: lgpipe.ModeLG, RingSize: 512, Batch: 64},
		withLG(dataplane.Config{Mode: lgpipe.ModeLG, RingSize: 1024, Batch: 256, FrameCount: 8192}, lgpipe.Config{TxBuffer: 512}),
		{Mode: dataplane.ModeForward, FrameSize: 2048, RingSize: 64, Batch: 64},
	} {
		c.HostPort, c.LinkPort = "host0", "link0"
		if err := c.Defaults(); err != nil {
			t.Errorf("%+v: %v", c, err)
		} else if err := c.CheckSizes(3); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestDefaultRingSize: --ring-size defaults to 4096 with LinkGuardian's
// send fast path (a credit window of 3584 frames rather than 1792), which
// runs by default (auto, or xdp) on a link port of one queue, and to 2048
// otherwise; a size given is kept.
func TestDefaultRingSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    dataplane.Config
		queues int
		want   uint32
	}{
		{"forward", dataplane.Config{Mode: dataplane.ModeForward, FastPath: dataplane.FastPathXDP}, 1, 2048},
		{"lg, worker path", dataplane.Config{Mode: lgpipe.ModeLG}, 1, 2048},
		{"lg, worker path asked", dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAFXDP}, 1, 2048},
		{"lg, two link queues: kernel receive only", dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto}, 2, 2048},
		{"lg, kernel send", dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto}, 1, 4096},
		{"lgnb, kernel send (xdp)", dataplane.Config{Mode: lgpipe.ModeLGNB, FastPath: dataplane.FastPathXDP}, 1, 4096},
		{"lg, kernel send, ring given", dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto, RingSize: 1024}, 1, 1024},
		{"lg, protect tx only", withSession(dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto}, linkpipe.SessionConfig{Protect: "tx"}), 1, 2048},
		{"lg, protect rx only", withSession(dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto}, linkpipe.SessionConfig{Protect: "rx"}), 1, 2048},
		{"lg, busy poll", dataplane.Config{Mode: lgpipe.ModeLG, FastPath: dataplane.FastPathAuto, BusyPoll: true}, 1, 2048},
	} {
		c := tc.cfg
		c.HostPort, c.LinkPort = "host0", "link0"
		lgpipe.QueueCount = func(string) (int, error) { return tc.queues, nil }
		err := c.Defaults()
		lgpipe.QueueCount = xdp.QueueCount
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.RingSize != tc.want {
			t.Errorf("%s: --ring-size %d by default; want %d", tc.name, c.RingSize, tc.want)
		}
		if lgpipe.TxWanted(&c) && tc.cfg.RingSize == 0 && lgpipe.CreditWindow(lgpipe.DefaultTxBuffer(c.RingSize, true), c.RingSize) != 3584 {
			t.Errorf("%s: credit window %d; want 3584", tc.name, lgpipe.CreditWindow(lgpipe.DefaultTxBuffer(c.RingSize, true), c.RingSize))
		}
	}
}
