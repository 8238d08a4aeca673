package dataplane

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/xdp"
)

// TestDefaultRingSize: --ring-size defaults to 4096 with LinkGuardian's
// send fast path (a credit window of 3584 frames rather than 1792), which
// runs by default (auto, or xdp) on a link port of one queue, and to 2048
// otherwise; a size given is kept.
func TestDefaultRingSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		queues int
		want   uint32
	}{
		{"forward", Config{Mode: ModeForward, FastPath: FastPathXDP}, 1, 2048},
		{"lg, worker path", Config{Mode: ModeLG}, 1, 2048},
		{"lg, worker path asked", Config{Mode: ModeLG, FastPath: FastPathAFXDP}, 1, 2048},
		{"lg, two link queues: kernel receive only", Config{Mode: ModeLG, FastPath: FastPathAuto}, 2, 2048},
		{"lg, kernel send", Config{Mode: ModeLG, FastPath: FastPathAuto}, 1, 4096},
		{"lgnb, kernel send (xdp)", Config{Mode: ModeLGNB, FastPath: FastPathXDP}, 1, 4096},
		{"lg, kernel send, ring given", Config{Mode: ModeLG, FastPath: FastPathAuto, RingSize: 1024}, 1, 1024},
		{"lg, protect tx only", withLG(Config{Mode: ModeLG, FastPath: FastPathAuto}, LGConfig{Protect: "tx"}), 1, 2048},
		{"lg, protect rx only", withLG(Config{Mode: ModeLG, FastPath: FastPathAuto}, LGConfig{Protect: "rx"}), 1, 2048},
		{"lg, busy poll", Config{Mode: ModeLG, FastPath: FastPathAuto, BusyPoll: true}, 1, 2048},
	} {
		c := tc.cfg
		c.HostPort, c.LinkPort = "host0", "link0"
		queueCount = func(string) (int, error) { return tc.queues, nil }
		err := c.defaults()
		queueCount = xdp.QueueCount
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if c.RingSize != tc.want {
			t.Errorf("%s: --ring-size %d by default; want %d", tc.name, c.RingSize, tc.want)
		}
		if lgTxWanted(&c) && tc.cfg.RingSize == 0 && creditWindow(defaultTxBuffer(c.RingSize, true), c.RingSize) != 3584 {
			t.Errorf("%s: credit window %d; want 3584", tc.name, creditWindow(defaultTxBuffer(c.RingSize, true), c.RingSize))
		}
	}
}

// TestSendHalfBlocked: LinkGuardian's send fast path says why it does not
// run, and only a link port of several queues is something --fastpath xdp
// fails on (naming the port and the fix); --fastpath afxdp keeps it off.
func TestSendHalfBlocked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		queues int
		want   []string // in the reason; none: it runs
		fix    bool
	}{
		{"one queue", Config{Mode: ModeLG, FastPath: FastPathAuto}, 1, nil, false},
		{"one queue, xdp", Config{Mode: ModeLG, FastPath: FastPathXDP}, 1, nil, false},
		{"two queues", Config{Mode: ModeLG, FastPath: FastPathAuto}, 2, []string{"link0", "2 queues", "ethtool -L link0 combined 1", "linkfabric up --link-queues 1"}, true},
		{"afxdp", Config{Mode: ModeLG, FastPath: FastPathAFXDP}, 1, []string{"--fastpath afxdp"}, false},
		{"protect rx", withLG(Config{Mode: ModeMonitor, FastPath: FastPathXDP}, LGConfig{Protect: "rx"}), 1, []string{"--lg-protect rx"}, false},
		{"workers", Config{Mode: ModeLG, FastPath: FastPathAuto, Workers: 2}, 1, []string{"--workers 2"}, false},
		{"rate", Config{Mode: ModeLG, FastPath: FastPathAuto, Shape: map[string]PortShape{"host0": {Rate: 1e9}}}, 1, []string{"host0", "--port-rate"}, false},
	} {
		c := tc.cfg
		c.HostPort, c.LinkPort = "host0", "link0"
		why, fix := lgTxBlocked(&c, tc.queues, nil)
		if (why == "") != (tc.want == nil) || fix != tc.fix {
			t.Errorf("%s: reason %q, fix %v; want a reason %v, fix %v", tc.name, why, fix, tc.want != nil, tc.fix)
		}
		for _, w := range tc.want {
			if !strings.Contains(why, w) {
				t.Errorf("%s: reason %q does not say %q", tc.name, why, w)
			}
		}
	}
}
