package main

// systemd's service notification (sd_notify): a unit with Type=notify
// (deploy/linkfabric@.service) learns from run when the dataplane is ready,
// what it is doing (STATUS=), and, with WatchdogSec=, that its worker
// loops still advance.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
)

// readyWait bounds how long run waits for its link sessions before it
// tells systemd it is ready anyway (the status says so).
const readyWait = 10 * time.Second

// notifier sends sd_notify messages to $NOTIFY_SOCKET.
type notifier struct{ conn *net.UnixConn }

// newNotifier connects to $NOTIFY_SOCKET (nil, nil when it is not set:
// run was not started by systemd with Type=notify).
func newNotifier() (*notifier, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET %s: %w", os.Getenv("NOTIFY_SOCKET"), err)
	}
	return &notifier{c}, nil
}

func (n *notifier) send(msg string) {
	if _, err := n.conn.Write([]byte(msg)); err != nil {
		log.Warn("cannot notify systemd", "msg", msg, "err", err)
	}
}

// watchdogPeriod is half of $WATCHDOG_USEC (0: no watchdog, or one meant
// for another process by $WATCHDOG_PID).
func watchdogPeriod() time.Duration {
	if p := os.Getenv("WATCHDOG_PID"); p != "" && p != strconv.Itoa(os.Getpid()) {
		return 0
	}
	us, err := strconv.ParseUint(os.Getenv("WATCHDOG_USEC"), 10, 63)
	if err != nil || us == 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond / 2
}

// liveness is what the notifier watches of a running dataplane.
type liveness interface {
	// loops are the worker loops' iterations, one count per worker.
	loops() []uint64
	// sessions are the states of the mode's link sessions ("up", "down",
	// "hello-sent", "mismatch"; none in a mode without one).
	sessions() []string
}

// dataplaneLiveness is the liveness of a running Dataplane.
type dataplaneLiveness struct{ d *dataplane.Dataplane }

func (l dataplaneLiveness) loops() []uint64 {
	s := l.d.Stats()
	if len(s.Workers) == 0 {
		return []uint64{s.Loops}
	}
	out := make([]uint64, len(s.Workers))
	for i, w := range s.Workers {
		out[i] = w.Loops
	}
	return out
}

func (l dataplaneLiveness) sessions() []string {
	b, err := json.Marshal(l.d.ModeStats())
	if err != nil {
		return nil
	}
	var doc any
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	return sessionStates(doc, nil)
}

// sessionStates collects the state of every "session" entry of a stats
// document: an object's "state" (lg, lgnb, monitor, fec) or a string
// (each link under the cells).
func sessionStates(v any, out []string) []string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "session" {
				switch s := e.(type) {
				case string:
					out = append(out, s)
					continue
				case map[string]any:
					if st, ok := s["state"].(string); ok {
						out = append(out, st)
						continue
					}
				}
			}
			out = sessionStates(e, out)
		}
	case []any:
		for _, e := range v {
			out = sessionStates(e, out)
		}
	}
	return out
}

// sessionStatus is the STATUS= text for the link sessions' states, and
// whether every one is up (true when there is none).
func sessionStatus(states []string) (string, bool) {
	if len(states) == 0 {
		return "ports attached; no link session in this mode", true
	}
	up := 0
	for _, s := range states {
		if s == "up" {
			up++
		}
	}
	if up == len(states) {
		if len(states) == 1 {
			return "ports attached; link session up", true
		}
		return fmt.Sprintf("ports attached; all %d link sessions up", len(states)), true
	}
	return fmt.Sprintf("ports attached; link sessions up: %d of %d (%s)", up, len(states), strings.Join(states, ", ")), false
}

// notifyLoop tells systemd READY=1 once the link sessions are up, or
// readyWait passed (STATUS= says which), keeps STATUS= current, and sends
// WATCHDOG=1 every watchdog period (half of systemd's) in which every
// worker loop advanced;
// STOPPING=1 when ctx ends. poll is the period it checks at before it is
// ready.
func notifyLoop(ctx context.Context, n *notifier, src liveness, readyWait, watchdog, poll time.Duration) {
	start := time.Now()
	ready, shown := false, ""
	last := src.loops()
	lastCheck := start
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		now := time.Now()
		text, up := sessionStatus(src.sessions())
		switch {
		case !ready && (up || now.Sub(start) >= readyWait):
			ready, shown = true, text
			if !up {
				text = fmt.Sprintf("%s after %v: forwarding as --session-wait and --session-pass say; is the peer running?", text, readyWait)
			}
			n.send("READY=1\nSTATUS=" + text)
			period := time.Second
			if watchdog > 0 {
				period = min(period, watchdog)
			}
			t.Reset(period)
		case ready && text != shown:
			shown = text
			n.send("STATUS=" + text)
		}
		// A tick may come a little early: a check is due at 3/4 of the
		// period, so that one is never skipped.
		if watchdog > 0 && now.Sub(lastCheck) >= watchdog*3/4 {
			cur := src.loops()
			if advanced(last, cur) {
				n.send("WATCHDOG=1")
			}
			last, lastCheck = cur, now
		}
		select {
		case <-ctx.Done():
			n.send("STOPPING=1")
			return
		case <-t.C:
		}
	}
}

// advanced reports whether every worker's loop count grew.
func advanced(before, after []uint64) bool {
	if len(before) != len(after) {
		return false
	}
	for i := range after {
		if after[i] == before[i] {
			return false
		}
	}
	return true
}

// startNotify runs notifyLoop for d when run was started by systemd with
// Type=notify; the function it returns stops it (call it before the
// dataplane closes).
func startNotify(ctx context.Context, d *dataplane.Dataplane) func() {
	n, err := newNotifier()
	if err != nil {
		log.Warn("cannot notify systemd", "err", err)
	}
	if n == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		notifyLoop(ctx, n, dataplaneLiveness{d}, readyWait, watchdogPeriod(), 50*time.Millisecond)
	}()
	return func() {
		cancel()
		<-done
		n.conn.Close()
	}
}
