package lgpipe

import (
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
)

// TestSendHalfBlocked: LinkGuardian's send fast path says why it does not
// run, and only a link port of several queues is something --fastpath xdp
// fails on (naming the port and the fix); --fastpath afxdp keeps it off.
func TestSendHalfBlocked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    dataplane.Config
		queues int
		want   []string // in the reason; none: it runs
		fix    bool
	}{
		{"one queue", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathAuto}, 1, nil, false},
		{"one queue, xdp", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathXDP}, 1, nil, false},
		{"two queues", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathAuto}, 2, []string{"link0", "2 queues", "ethtool -L link0 combined 1", "linkfabric up --link-queues 1"}, true},
		{"afxdp", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathAFXDP}, 1, []string{"--fastpath afxdp"}, false},
		{"protect rx", dataplane.WithMech(dataplane.Config{Mode: ModeMonitor, FastPath: dataplane.FastPathXDP}, "session", linkpipe.SessionConfig{Protect: "rx"}), 1, []string{"--lg-protect rx"}, false},
		{"workers", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathAuto, Workers: 2}, 1, []string{"--workers 2"}, false},
		{"rate", dataplane.Config{Mode: ModeLG, FastPath: dataplane.FastPathAuto, Shape: map[string]dataplane.PortShape{"host0": {Rate: 1e9}}}, 1, []string{"host0", "--port-rate"}, false},
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
