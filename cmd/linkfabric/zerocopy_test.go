package main_test

// `run --zerocopy` as a user meets it on veth (no AF_XDP zero-copy driver in
// this kernel): off and auto bind copy mode and report it in the log and in
// /stats.json (dataplane.afxdp, and per port and queue), with need_wakeup as
// --need-wakeup says; on refuses to start, naming the port and the fix.
// Testbed prefix base lfzc.

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/netns"
)

func TestRunZeroCopy(t *testing.T) {
	c, tb := cliOnBed(t, "lfzc", netns.Options{LinkQueues: 2})
	sw1 := tb.NS("sw1")
	for _, tc := range []struct {
		zerocopy, needWakeup, reason string
	}{
		{"off", "true", "--zerocopy off"},
		{"auto", "false", "host0 queue 0 refused zero-copy"},
	} {
		t.Run(tc.zerocopy, func(t *testing.T) {
			r := startRun(t, c, sw1, "--mode", "lg", "--zerocopy", tc.zerocopy, "--need-wakeup="+tc.needWakeup)
			doc := statsDoc(t, c, sw1)
			log := r.signal(t, os.Interrupt)
			dp, _ := doc["dataplane"].(map[string]any)
			a, _ := dp["afxdp"].(map[string]any)
			if a["zerocopy"] != tc.zerocopy || a["mode"] != "copy" || fmt.Sprint(a["need_wakeup"]) != tc.needWakeup ||
				!strings.Contains(fmt.Sprint(a["reason"]), tc.reason) || num(a, "sockets") != 3 {
				t.Errorf("stats dataplane.afxdp %v; want zerocopy %s, mode copy, need_wakeup %s, 3 sockets, a reason with %q", a, tc.zerocopy, tc.needWakeup, tc.reason)
			}
			for dev, queues := range map[string]int{"host0": 1, "link0": 2} {
				p, _ := doc["port_"+dev].(map[string]any)
				socks, _ := p["sockets"].([]any)
				if len(socks) != queues {
					t.Errorf("%s: %d sockets in the stats; want %d (one per queue)", dev, len(socks), queues)
				}
				for q, s := range socks {
					m, _ := s.(map[string]any)
					if num(m, "queue") != uint64(q) || m["mode"] != "copy" || fmt.Sprint(m["need_wakeup"]) != tc.needWakeup {
						t.Errorf("%s socket %d: %v; want queue %d, mode copy, need_wakeup %s", dev, q, m, q, tc.needWakeup)
					}
				}
			}
			for _, w := range []string{
				`msg="AF_XDP sockets bound" zerocopy=` + tc.zerocopy + ` mode=copy need_wakeup=` + tc.needWakeup,
				`dev=link0 role=link xdp=native queues=2 tx_lanes=2 afxdp=copy,copy`,
			} {
				if !strings.Contains(log, w) {
					t.Errorf("the log does not say %s:\n%s", w, log)
				}
			}
		})
	}
	t.Run("on", func(t *testing.T) {
		c.fails(t, []string{"run", "--netns", sw1, "--host-port", "host0", "--link-port", "link0", "--zerocopy", "on"},
			"--zerocopy on", "host0", "refused zero-copy", "--zerocopy auto", "--zerocopy off")
		if x := xdpOn(t, sw1); len(x) != 0 {
			t.Errorf("a refused --zerocopy on left XDP programs: %v", x)
		}
	})
	t.Run("bad-flag", func(t *testing.T) {
		c.fails(t, []string{"run", "--netns", sw1, "--host-port", "host0", "--link-port", "link0", "--zerocopy", "maybe"},
			"--zerocopy", "auto", "on", "off")
	})
}
