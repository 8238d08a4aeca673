package dataplane

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// logBuffer collects a dataplane's log; the worker and the test use it
// concurrently.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newLogBuffer returns a logger writing text lines into a logBuffer.
func newLogBuffer() (*logBuffer, *slog.Logger) {
	b := &logBuffer{}
	return b, slog.New(slog.NewTextHandler(b, nil))
}

// TestParseZeroCopy: --zerocopy takes auto, on and off in any case, ""
// is auto, anything else is refused with the choices named.
func TestParseZeroCopy(t *testing.T) {
	for in, want := range map[string]ZeroCopy{"": ZeroCopyAuto, "auto": ZeroCopyAuto, "on": ZeroCopyOn, "OFF": ZeroCopyOff} {
		if got, err := ParseZeroCopy(in); err != nil || got != want {
			t.Errorf("ParseZeroCopy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"yes", "zerocopy", "copy", "1"} {
		_, err := ParseZeroCopy(in)
		if err == nil {
			t.Errorf("ParseZeroCopy(%q) accepted", in)
			continue
		}
		for _, w := range []string{"--zerocopy", "auto", "on", "off"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseZeroCopy(%q): error %q does not name %s", in, err, w)
			}
		}
	}
}

// TestZeroCopyVeth: on veth (no AF_XDP zero-copy driver in this kernel)
// --zerocopy off and auto bind every socket in copy mode, report it (auto
// with the port that refused zero-copy and why) and forward; need_wakeup
// is in effect unless turned off; --zerocopy on refuses to start, naming
// the port and the fix, and leaves no program attached.
func TestZeroCopyVeth(t *testing.T) {
	tb := netns.TestUp(t, "lfzc", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: 2})
	for _, tc := range []struct {
		zc       ZeroCopy
		noWakeup bool
		reason   string
	}{
		{ZeroCopyOff, false, "--zerocopy off"},
		{ZeroCopyAuto, true, "host0 queue 0 refused zero-copy"},
	} {
		t.Run(string(tc.zc), func(t *testing.T) {
			logs := make([]*logBuffer, 2)
			sws := make([]*runningSwitch, 2)
			for i, sw := range []string{"sw1", "sw2"} {
				var log *slog.Logger
				logs[i], log = newLogBuffer()
				sws[i] = startWatched(t, tb.NS(sw), Config{ZeroCopy: tc.zc, NoNeedWakeup: tc.noWakeup, FastPath: FastPathAFXDP, Logger: log})
			}
			for i, s := range sws {
				a := s.d.AFXDP()
				if a.ZeroCopy != tc.zc || a.Mode != "copy" || !strings.Contains(a.Reason, tc.reason) || a.NeedWakeup == tc.noWakeup {
					t.Errorf("sw%d: AF_XDP %+v; want zerocopy %s, mode copy, a reason with %q, need_wakeup %v", i+1, a, tc.zc, tc.reason, !tc.noWakeup)
				}
				if a.Sockets != 3 || a.Frames != 3*a.FramesPerQueue+uint32(s.d.Config().Batch) {
					t.Errorf("sw%d: %d sockets, %d UMEM frames for %d per queue; want 3 sockets (host0 1 queue, link0 2) and 3 × per queue + a batch", i+1, a.Sockets, a.Frames, a.FramesPerQueue)
				}
				if got := s.d.Stats().AFXDP; got != a {
					t.Errorf("sw%d: Stats().AFXDP %+v differs from AFXDP() %+v", i+1, got, a)
				}
				for p := range s.d.Ports().N() {
					for _, k := range s.d.Port(p).Sockets() {
						if k.Mode() != xdp.ModeCopy || k.NeedWakeup() == tc.noWakeup {
							t.Errorf("sw%d %s queue %d: mode %s need_wakeup %v", i+1, k.Ifname(), k.Queue(), k.Mode(), k.NeedWakeup())
						}
					}
				}
				if l := logs[i].String(); !strings.Contains(l, `msg="AF_XDP sockets bound" zerocopy=`+string(tc.zc)+" mode=copy") {
					t.Errorf("sw%d: the log does not say how the sockets were bound:\n%s", i+1, l)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
				t.Errorf("ping h1→h2 through copy-mode sockets: %v", err)
			}
			for _, s := range sws {
				s.stop(t)
			}
		})
	}
	t.Run("on", func(t *testing.T) {
		var d *Dataplane
		err := netns.Do(tb.NS("sw1"), func() error {
			var err error
			d, err = New(Config{HostPort: "host0", LinkPort: "link0", ZeroCopy: ZeroCopyOn})
			return err
		})
		if err == nil {
			d.Close()
			t.Fatal("--zerocopy on started on veth; this kernel's veth has no AF_XDP zero-copy (if it has gained it, assert the reported mode instead)")
		}
		if !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("err %v; want EOPNOTSUPP from the bind", err)
		}
		for _, w := range []string{"--zerocopy on", "host0", "zero-copy", "--zerocopy auto", "--zerocopy off"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error does not name %q: %v", w, err)
			}
		}
		for _, dev := range []string{"host0", "link0"} {
			assertNoXDP(t, tb.NS("sw1"), dev)
		}
	})
}

// TestSingleTxQueueLink: a link port with two receive queues but a single
// TX queue (ethtool -L link0 rx 2 tx 1, as on NICs with more RX than TX
// queues) transmits on one lane: it says so once at start, offers one lane,
// the session agrees on one at both ends (the peer says so once too), and
// lg runs over it with nothing sent on a priority lane.
func TestSingleTxQueueLink(t *testing.T) {
	tb := netns.TestUp(t, "lfzc", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: 2})
	out, err := netns.Command(context.Background(), tb.NS("sw2"), "ethtool", "-L", "link0", "rx", "2", "tx", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool -L link0 rx 2 tx 1 in %s: %v: %s", tb.NS("sw2"), err, out)
	}
	log1, l1 := newLogBuffer()
	log2, l2 := newLogBuffer()
	lgc := LGConfig{AckTimeout: lgAckTimeout}
	sw1 := startSwitch(t, tb.NS("sw1"), withLG(Config{Mode: ModeLG, Logger: l1}, lgc))
	sw2 := startSwitch(t, tb.NS("sw2"), withLG(Config{Mode: ModeLG, Logger: l2}, lgc))
	if p := sw2.Link(); len(p.Sockets()) != 2 || p.Lanes() != 1 {
		t.Fatalf("sw2 link0: %d sockets, %d lanes; want 2 sockets (one per RX queue), 1 lane", len(p.Sockets()), p.Lanes())
	}
	for i := 0; LGStatsOf(sw1).Session.Snapshot().State != "up" || LGStatsOf(sw2).Session.Snapshot().State != "up"; i++ {
		if i == 500 {
			t.Fatal("link session not up after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b := &lgBed{tb: tb, sw1: sw1, sw2: sw2}
	prio0 := waitCore(t, sw1).PriorityFrames
	r := b.send(t, 20_000, lgFrameSize, lgRate)
	checkDelivery(t, r, true)
	for i, d := range []*Dataplane{sw1, sw2} {
		if a := LGStatsOf(d).Session.Snapshot().Agreed; a == nil || a.Lanes != 1 {
			t.Errorf("sw%d agreed %+v; want 1 lane", i+1, a)
		}
	}
	if c := waitCore(t, sw1); c.PriorityFrames != prio0 {
		t.Errorf("sw1 sent %d frames on a priority lane after agreeing on one lane", c.PriorityFrames-prio0)
	}
	const own, peer = `msg="link port has a single TX queue`, `msg="link session agreed on one lane`
	if l := log2.String(); strings.Count(l, own) != 1 || strings.Contains(l, peer) {
		t.Errorf("sw2's log should say %q once (and not %q):\n%s", own, peer, l)
	}
	if l := log1.String(); strings.Count(l, peer) != 1 || strings.Contains(l, own) {
		t.Errorf("sw1's log should say %q once (and not %q):\n%s", peer, own, l)
	}
}
