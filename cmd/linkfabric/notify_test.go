package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLive is a liveness whose loops and sessions the test sets; calls
// counts the notifier's reads of the loops (one per watchdog check).
type fakeLive struct {
	mu      sync.Mutex
	loop    uint64
	advance bool // each read of the loops finds them advanced
	state   []string
	calls   atomic.Int64
}

func (f *fakeLive) loops() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.advance {
		f.loop++
	}
	f.calls.Add(1)
	return []uint64{f.loop}
}

func (f *fakeLive) sessions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.state...)
}

func (f *fakeLive) set(advance bool, state ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance = advance
	if state != nil {
		f.state = state
	}
}

// notifySocket listens on a unixgram socket as systemd does and returns a
// notifier writing to it and a function reading the next message.
func notifySocket(t *testing.T) (*notifier, func() string, func() []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	n, err := newNotifier()
	if err != nil || n == nil {
		t.Fatalf("newNotifier: %v, %v", n, err)
	}
	t.Cleanup(func() { n.conn.Close() })
	buf := make([]byte, 4096)
	next := func() string {
		ln.SetReadDeadline(time.Now().Add(30 * time.Second))
		k, err := ln.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:k])
	}
	// queued returns the messages already sent (in the socket's queue: a
	// read finds them at once; the deadline only ends the last, empty one).
	queued := func() []string {
		var out []string
		for {
			ln.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			k, err := ln.Read(buf)
			if err != nil {
				return out
			}
			out = append(out, string(buf[:k]))
		}
	}
	return n, next, queued
}

// waitCalls waits until the notifier has read the loops k more times
// than now: every message of the checks before the last is sent by then.
func waitCalls(t *testing.T, f *fakeLive, k int64) {
	t.Helper()
	target := f.calls.Load() + k
	for f.calls.Load() < target {
		time.Sleep(time.Millisecond)
	}
}

// READY=1 comes once the link session is up, with a STATUS saying so;
// WATCHDOG=1 only while the worker loops advance; STOPPING=1 at the end.
func TestNotifyReadyAndWatchdog(t *testing.T) {
	n, next, queued := notifySocket(t)
	f := &fakeLive{state: []string{"hello-sent"}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		notifyLoop(ctx, n, f, time.Hour, 5*time.Millisecond, time.Millisecond)
	}()
	// The session is not up and the loops do not advance: nothing is sent.
	waitCalls(t, f, 5)
	if q := queued(); len(q) != 0 {
		t.Fatalf("sent %d messages (the first %q) before the session was up, with the loops stalled", len(q), q[0])
	}
	f.set(false, "up")
	if m := next(); m != "READY=1\nSTATUS=ports attached; link session up" {
		t.Fatalf("first notification %q, want READY=1 with the session up", m)
	}
	f.set(true)
	if m := next(); m != "WATCHDOG=1" {
		t.Fatalf("with the loops advancing: %q, want WATCHDOG=1", m)
	}
	// Stalled: checks go on, pings stop. One check in flight may still
	// have seen the loops advance.
	f.set(false)
	waitCalls(t, f, 2)
	queued()
	waitCalls(t, f, 5)
	if q := queued(); len(q) != 0 {
		t.Fatalf("sent %d messages (the first %q) while the loops were stalled", len(q), q[0])
	}
	f.set(true, "down")
	got := map[string]bool{}
	for !got["WATCHDOG=1"] || !got["STATUS=ports attached; link sessions up: 0 of 1 (down)"] {
		got[next()] = true
	}
	cancel()
	<-done
	q := queued()
	if len(q) == 0 || q[len(q)-1] != "STOPPING=1" {
		t.Fatalf("at the end: %q, want STOPPING=1 last", q)
	}
}

// Without a link session (mode forward) run is ready at once; with one
// that does not come up, after the bounded wait, and the status says so.
func TestNotifyReadyWithoutSession(t *testing.T) {
	for _, c := range []struct {
		state []string
		want  string
	}{
		{nil, "READY=1\nSTATUS=ports attached; no link session in this mode"},
		{[]string{"up", "hello-sent"}, "READY=1\nSTATUS=ports attached; link sessions up: 1 of 2 (up, hello-sent) after 0s"},
	} {
		n, next, _ := notifySocket(t)
		f := &fakeLive{state: c.state}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			notifyLoop(ctx, n, f, 0, 0, time.Millisecond)
		}()
		if m := next(); !strings.HasPrefix(m, c.want) {
			t.Errorf("sessions %v: %q, want %q", c.state, m, c.want)
		}
		cancel()
		<-done
	}
}

// The states of the link sessions in a /stats.json document: lg's object,
// the cells' strings per link.
func TestSessionStates(t *testing.T) {
	doc := map[string]any{
		"linkguardian": map[string]any{"session": map[string]any{"state": "up", "epoch": 3.0}},
		"cells":        map[string]any{"links": []any{map[string]any{"session": "up"}, map[string]any{"session": "down"}}},
	}
	got := sessionStates(doc, nil)
	up, down := 0, 0
	for _, s := range got {
		switch s {
		case "up":
			up++
		case "down":
			down++
		}
	}
	if len(got) != 3 || up != 2 || down != 1 {
		t.Errorf("sessionStates = %v, want up, up, down", got)
	}
}

// systemd-analyze verify finds nothing to say of the unit.
func TestUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile(filepath.Join("..", "..", "deploy", "linkfabric@.service"))
	if err != nil {
		t.Fatal(err)
	}
	// verify wants the ExecStart binary to exist, and an instance.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/linkfabric", exe)
	if text == string(unit) {
		t.Fatal("the unit does not start /usr/local/bin/linkfabric")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "linkfabric@a.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", path, err, out)
	}
	for _, want := range []string{"Type=notify", "WatchdogSec=", "Restart=on-failure", "LimitMEMLOCK=infinity",
		"AmbientCapabilities=CAP_NET_ADMIN CAP_NET_RAW CAP_BPF CAP_PERFMON CAP_IPC_LOCK\n",
		"CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_RAW CAP_BPF CAP_PERFMON CAP_IPC_LOCK\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
}
