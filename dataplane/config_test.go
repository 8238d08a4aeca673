package dataplane

import (
	"strings"
	"testing"
)

// TestConfigNice: a nice value outside Linux's range is refused with the
// range named; 0 (leave it alone) and the ends of the range are accepted.
func TestConfigNice(t *testing.T) {
	for _, n := range []int{-21, 20} {
		c := Config{HostPort: "host0", LinkPort: "link0", Nice: n}
		if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "[-20, 19]") {
			t.Errorf("nice %d: err %v; want one naming the range [-20, 19]", n, err)
		}
	}
	for _, n := range []int{-20, 0, 19} {
		c := Config{HostPort: "host0", LinkPort: "link0", Nice: n}
		if err := c.defaults(); err != nil {
			t.Errorf("nice %d: %v", n, err)
		}
	}
}

// TestConfigSizes: sizes that cannot work together are refused at startup
// with an error that names the flags involved, instead of a dataplane that
// runs and sends nothing (lg keeps 2 × --batch of the link TX ring free for
// control frames and copies, so --ring-size ≤ 2 × --batch left no room for
// data at all).
func TestConfigSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		flags []string // every one must be named in the error
	}{
		{"lg ring = 2 x batch", Config{Mode: ModeLG, RingSize: 512, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"lgnb ring < 2 x batch", Config{Mode: ModeLGNB, RingSize: 256, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"forward batch > ring", Config{Mode: ModeForward, RingSize: 64, Batch: 256}, []string{"--ring-size", "--batch"}},
		{"ring not a power of two", Config{Mode: ModeForward, RingSize: 3000}, []string{"--ring-size"}},
		{"negative batch", Config{Mode: ModeForward, Batch: -1}, []string{"--batch"}},
		{"frame size", Config{Mode: ModeForward, FrameSize: 1500}, []string{"--frame-size"}},
		{"tx buffer not a power of two", Config{Mode: ModeLG, LG: LGConfig{TxBuffer: 1000}}, []string{"--tx-buffer"}},
		{"tx buffer beyond the ring", Config{Mode: ModeLG, RingSize: 1024, LG: LGConfig{TxBuffer: 4096}}, []string{"--tx-buffer", "--ring-size"}},
		{"umem smaller than the rings", Config{Mode: ModeForward, RingSize: 2048, FrameCount: 2048}, []string{"--frames", "--ring-size"}},
		{"umem smaller than rings and lg buffers", Config{Mode: ModeLG, RingSize: 1024, FrameCount: 4096}, []string{"--frames", "--ring-size"}},
		{"frames and frames per queue", Config{Mode: ModeForward, FrameCount: 65536, FramesPerQueue: 4096}, []string{"--frames", "--frames-per-queue"}},
		{"frames per queue below the ring", Config{Mode: ModeForward, RingSize: 2048, FramesPerQueue: 1024}, []string{"--frames-per-queue", "--ring-size"}},
		{"frames per queue too many", Config{Mode: ModeForward, RingSize: 65536, Batch: 256, FramesPerQueue: 1 << 31}, []string{"--frames-per-queue"}},
		{"zerocopy", Config{Mode: ModeForward, ZeroCopy: "yes"}, []string{"--zerocopy", "auto", "on", "off"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.HostPort, c.LinkPort = "host0", "link0"
			err := c.defaults()
			if err == nil {
				err = c.checkSizes(3) // host 1 queue, link 2 queues (the testbed's veths)
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
	for _, c := range []Config{
		{Mode: ModeForward}, {Mode: ModeLG}, {Mode: ModeLGNB}, {Mode: ModeMonitor},
		{Mode: ModeLG, RingSize: 4096}, {Mode: ModeLG, RingSize: 512, Batch: 64},
		{Mode: ModeLG, RingSize: 1024, Batch: 256, FrameCount: 8192, LG: LGConfig{TxBuffer: 512}},
		{Mode: ModeForward, FrameSize: 2048, RingSize: 64, Batch: 64},
	} {
		c.HostPort, c.LinkPort = "host0", "link0"
		if err := c.defaults(); err != nil {
			t.Errorf("%+v: %v", c, err)
		} else if err := c.checkSizes(3); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestDefaultRingSize: --ring-size defaults to 4096 with LinkGuardian's
// send fast path (a credit window of 3584 frames rather than 1792) and to
// 2048 otherwise; a size given is kept.
func TestDefaultRingSize(t *testing.T) {
	fast := LGConfig{FastSend: true}
	for _, tc := range []struct {
		name string
		cfg  Config
		want uint32
	}{
		{"forward", Config{Mode: ModeForward, FastPath: FastPathXDP}, 2048},
		{"lg, worker path", Config{Mode: ModeLG}, 2048},
		{"lg, kernel receive only", Config{Mode: ModeLG, FastPath: FastPathXDP}, 2048},
		{"lg, kernel send", Config{Mode: ModeLG, FastPath: FastPathXDP, LG: fast}, 4096},
		{"lg, kernel send, ring given", Config{Mode: ModeLG, FastPath: FastPathXDP, LG: fast, RingSize: 1024}, 1024},
		{"lg, kernel send asked, protect tx only", Config{Mode: ModeLG, FastPath: FastPathXDP, LG: LGConfig{FastSend: true, Protect: "tx"}}, 2048},
	} {
		c := tc.cfg
		c.HostPort, c.LinkPort = "host0", "link0"
		if err := c.defaults(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.RingSize != tc.want {
			t.Errorf("%s: --ring-size %d by default; want %d", tc.name, c.RingSize, tc.want)
		}
		if tc.cfg.LG.FastSend && c.lgTxWanted() && tc.cfg.RingSize == 0 && creditWindow(defaultTxBuffer(c.RingSize, true), c.RingSize) != 3584 {
			t.Errorf("%s: credit window %d; want 3584", tc.name, creditWindow(defaultTxBuffer(c.RingSize, true), c.RingSize))
		}
	}
}
