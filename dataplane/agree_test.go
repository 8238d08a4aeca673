package dataplane_test

// Settings both ends of a link must share, on veth: a difference is named
// by both link sessions and nothing crosses.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestIntegrityMismatchNamed: two ends with different --integrity (two
// checks, or a check at sw1 and none at sw2): both sessions reach
// mismatch, their snapshots and logs name --integrity with both values,
// and of the datagrams h1 sends h2 (sw1 passes them unprotected after
// --session-wait: --session-pass) none reaches h2, not even at an sw2
// that checks nothing.
func TestIntegrityMismatchNamed(t *testing.T) {
	netns.RequireRoot(t)
	for _, c := range [][2]linkcrc.Integrity{{linkcrc.Csum, linkcrc.CRC32C}, {linkcrc.CRC32C, linkcrc.Off}} {
		t.Run(fmt.Sprintf("%v_%v", c[0], c[1]), func(t *testing.T) {
			tb := netns.TestUp(t, "lfi", "pair", netns.Options{Forwarding: netns.ForwardingNone})
			var logs [2]*dataplane.LogBuffer
			var sws [2]*dataplane.Dataplane
			for i, ns := range []string{"sw1", "sw2"} {
				buf, log := dataplane.NewLogBuffer()
				logs[i] = buf
				sws[i] = dataplane.StartSwitch(t, tb.NS(ns), withSession(dataplane.Config{Mode: lgpipe.ModeLG, Link: dataplane.LinkConfig{Integrity: c[i]}, Logger: log}, linkpipe.SessionConfig{SessionPass: true}))
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				s1, s2 := lgpipe.StatsOf(sws[0]).Session.Snapshot(), lgpipe.StatsOf(sws[1]).Session.Snapshot()
				if s1.State == "mismatch" && s2.State == "mismatch" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("--integrity %v against %v: sessions %q and %q after 5 s, want mismatch at both\nsw1: %+v\nsw2: %+v",
						c[0], c[1], s1.State, s2.State, s1, s2)
				}
			}
			for i := range sws {
				here, there := c[i], c[1-i]
				s := lgpipe.StatsOf(sws[i]).Session.Snapshot()
				want := fmt.Sprintf("--integrity %v here, %v at the peer", here, there)
				if !strings.Contains(s.Mismatch, "integrity") || !strings.Contains(s.Mismatch, want) {
					t.Errorf("sw%d's session snapshot: mismatch %q, want it to name %q", i+1, s.Mismatch, want)
				}
				if !strings.Contains(logs[i].String(), want) {
					t.Errorf("sw%d's log does not say %q:\n%s", i+1, want, logs[i].String())
				}
				if s.Agreed != nil {
					t.Errorf("sw%d's session agreed with a mismatched peer: %+v", i+1, s.Agreed)
				}
			}
			staticNeighbour(t, tb) // no ARP crosses
			r := dataplane.UdpFlows(t, tb, 2, 100, 200, 2000)
			for i, got := range r.Got {
				if len(got) != 0 {
					t.Errorf("flow %d: h2 received %d datagrams through mismatched ends", i, len(got))
				}
			}
			if p := lgpipe.StatsOf(sws[0]).Session.Snapshot().Held.Passed; p == 0 {
				t.Errorf("sw1 passed no host frame unprotected: the test sent nothing across")
			}
			for i, d := range sws {
				t.Logf("sw%d: session %+v, integrity: corrupt %d, other check %d", i+1, lgpipe.StatsOf(d).Session.Snapshot(), lgpipe.StatsOf(d).Integrity.Corrupt.Load(), lgpipe.StatsOf(d).Integrity.OtherCheck.Load())
			}
		})
	}
}

// TestMismatchText: the snapshot's and log's words for what does not fit
// name the flags with the values at both ends.
func TestMismatchText(t *testing.T) {
	lg := linksession.Protect{Tx: true, Rx: true}
	for _, c := range []struct {
		a    linksession.Agreed
		want string
	}{
		{linksession.Agreed{Conflict: linksession.ConflictIntegrity, LocalCaps: linksession.Caps{Known: true, Integrity: linkcrc.Csum},
			PeerCaps: linksession.Caps{Known: true, Integrity: linkcrc.CRC32C}}, "--integrity csum here, crc32c at the peer"},
		{linksession.Agreed{Conflict: linksession.ConflictProtect, Local: linksession.Protect{Tx: true}, Peer: linksession.Protect{Tx: true, Rx: true, RxMode: 1}},
			"--mode lg|lgnb|monitor --lg-protect tx here, --mode lgnb --lg-protect both at the peer"},
		{linksession.Agreed{Conflict: linksession.ConflictProtect | linksession.ConflictIntegrity, Local: lg, Peer: linksession.Protect{Tx: true, Rx: true, FEC: true},
			LocalCaps: linksession.Caps{Known: true, Integrity: linkcrc.Off}, PeerCaps: linksession.Caps{Known: true, Integrity: linkcrc.CRC32C}},
			"--mode lg --lg-protect both here, --mode fec at the peer; --integrity off here, crc32c at the peer"},
	} {
		if got := linkpipe.MismatchText(c.a); got != c.want {
			t.Errorf("mismatchText(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
	a := linksession.Agreed{Conflict: linksession.ConflictProtect | linksession.ConflictIntegrity, Local: lg, Peer: linksession.Protect{Tx: true, Rx: true, FEC: true},
		LocalCaps: linksession.Caps{Known: true, Integrity: linkcrc.Csum}, PeerCaps: linksession.Caps{Known: true}}
	if got, want := linkpipe.CellMismatchText(a), "--cells-link-mode lg here, fec at the peer; --integrity csum here, crc32c at the peer"; got != want {
		t.Errorf("cellMismatchText = %q, want %q", got, want)
	}
	buf, log := dataplane.NewLogBuffer()
	linkpipe.SayMismatch(log, "link0", a)
	for _, want := range []string{"--mode lg --lg-protect both here, --mode fec at the peer", "--integrity csum here, crc32c at the peer; nothing is delivered until both ends run the same --integrity"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, buf.String())
		}
	}
}
