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

// LogBuffer collects a dataplane's log; the worker and the test use it
// concurrently.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// NewLogBuffer returns a logger writing text lines into a logBuffer.
func NewLogBuffer() (*LogBuffer, *slog.Logger) {
	b := &LogBuffer{}
	return b, slog.New(slog.NewTextHandler(b, nil))
}

// TestParseZeroCopy: --zerocopy takes auto, on and off in any case, ""
// is auto, anything else is refused with the choices named.
func TestParseZeroCopy(t *testing.T) {
	checkParse(t, "--zerocopy", ParseZeroCopy, map[string]ZeroCopy{"": ZeroCopyAuto, "auto": ZeroCopyAuto, "on": ZeroCopyOn, "OFF": ZeroCopyOff},
		[]string{"yes", "zerocopy", "copy", "1"}, "auto", "on", "off")
}

// TestParseFastPath: --fastpath takes afxdp, xdp and auto, "" is afxdp,
// anything else is refused with the choices named.
func TestParseFastPath(t *testing.T) {
	checkParse(t, "--fastpath", ParseFastPath, map[string]FastPath{"": FastPathAFXDP, "afxdp": FastPathAFXDP, "xdp": FastPathXDP, "auto": FastPathAuto},
		[]string{"kernel", "XDP", "on"}, "afxdp", "xdp", "auto")
}

// checkParse checks that parse, the parser of flag, returns for each of good
// its value, and refuses each of bad with an error that names the flag and
// every one of choices.
func checkParse[T ~string](t *testing.T, flag string, parse func(string) (T, error), good map[string]T, bad []string, choices ...string) {
	t.Helper()
	for in, want := range good {
		if got, err := parse(in); err != nil || got != want {
			t.Errorf("%s %q: %q, %v; want %q", flag, in, got, err, want)
		}
	}
	for _, in := range bad {
		_, err := parse(in)
		if err == nil {
			t.Errorf("%s %q accepted", flag, in)
			continue
		}
		for _, w := range append([]string{flag}, choices...) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s %q: error %q does not name %s", flag, in, err, w)
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
			logs := make([]*LogBuffer, 2)
			sws := make([]*RunningSwitch, 2)
			for i, sw := range []string{"sw1", "sw2"} {
				var log *slog.Logger
				logs[i], log = NewLogBuffer()
				sws[i] = StartWatched(t, tb.NS(sw), Config{ZeroCopy: tc.zc, NoNeedWakeup: tc.noWakeup, FastPath: FastPathAFXDP, Logger: log})
			}
			for i, s := range sws {
				a := s.D.AFXDP()
				if a.ZeroCopy != tc.zc || a.Mode != "copy" || !strings.Contains(a.Reason, tc.reason) || a.NeedWakeup == tc.noWakeup {
					t.Errorf("sw%d: AF_XDP %+v; want zerocopy %s, mode copy, a reason with %q, need_wakeup %v", i+1, a, tc.zc, tc.reason, !tc.noWakeup)
				}
				if a.Sockets != 3 || a.Frames != 3*a.FramesPerQueue+uint32(s.D.Config().Batch) {
					t.Errorf("sw%d: %d sockets, %d UMEM frames for %d per queue; want 3 sockets (host0 1 queue, link0 2) and 3 × per queue + a batch", i+1, a.Sockets, a.Frames, a.FramesPerQueue)
				}
				if got := s.D.Stats().AFXDP; got != a {
					t.Errorf("sw%d: Stats().AFXDP %+v differs from AFXDP() %+v", i+1, got, a)
				}
				for p := range s.D.Ports().N() {
					for _, k := range s.D.Port(p).Sockets() {
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
				s.Stop(t)
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
