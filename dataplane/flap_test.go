package dataplane_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/netns"
	"golang.org/x/sys/unix"
)

// TestLGLinkFlap: under iperf3 TCP both ways through lg (and forward), sw1's link port
// goes down for 2 s and up again (what a failing fibre or a NIC reset does).
// The dataplanes keep running (a down interface is link state, not an
// error), count the flap, and TCP flows again both ways afterwards. How
// long after `up` bytes reach each host again is logged, not asserted.
func TestLGLinkFlap(t *testing.T) {
	dataplane.RequireIperf3(t)
	for _, mode := range []dataplane.Mode{lgpipe.ModeLG, dataplane.ModeForward} {
		t.Run(string(mode), func(t *testing.T) { linkFlap(t, mode) })
	}
}

func linkFlap(t *testing.T, mode dataplane.Mode) {
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: lgLinkQueues()})
	cfg := dataplane.Config{Mode: mode}
	if lgOnFastPath && mode != dataplane.ModeForward {
		cfg.FastPath = lgFastPathMode()
	}
	sw1, sw2 := dataplane.StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), cfg)
	h1, h2, ns1 := tb.NS("h1"), tb.NS("h2"), tb.NS("sw1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through lg: %v", err)
	}
	dataplane.StartIperfServer(t, ctx, h2, 5301)

	// 12 s of iperf3 with the flap at 3..5 s (at full size), else 6 s with
	// the flap at 1..3 s: 3 s after `up` for TCP to carry 1 MB each way
	// again, which took 7-30 ms here.
	secs, before := sized(6, 12), sized(time.Second, 3*time.Second)
	var out []byte
	var iperfErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, iperfErr = dataplane.RunIperfClient(ctx, h1, 5301, "--bidir", "-t", strconv.Itoa(secs), "-i", "0")
	}()
	time.Sleep(before)
	toH2, toH1 := sw2.D.Stats().Host.TX.Bytes, sw1.D.Stats().Host.TX.Bytes
	t.Logf("before the flap: %d B delivered to h2, %d B to h1", toH2, toH1)
	ipIn(t, ns1, "link", "set", "link0", "down")
	time.Sleep(2 * time.Second)
	// Frames queued before `down` may still trickle out; measure from `up`.
	ipIn(t, ns1, "link", "set", "link0", "up")
	up := time.Now()
	toH2, toH1 = sw2.D.Stats().Host.TX.Bytes, sw1.D.Stats().Host.TX.Bytes
	// Time from `up` until bytes reach each host again, and until 1 MB has.
	var first2, first1, mb2, mb1 time.Duration
	for time.Since(up) < 8*time.Second && (mb1 == 0 || mb2 == 0) {
		b2, b1 := sw2.D.Stats().Host.TX.Bytes, sw1.D.Stats().Host.TX.Bytes
		el := time.Since(up)
		if first2 == 0 && b2 > toH2 {
			first2 = el
		}
		if first1 == 0 && b1 > toH1 {
			first1 = el
		}
		if mb2 == 0 && b2 > toH2+1<<20 {
			mb2 = el
		}
		if mb1 == 0 && b1 > toH1+1<<20 {
			mb1 = el
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("after `up`: first bytes to h2 after %v (1 MB after %v), to h1 after %v (1 MB after %v)", first2, mb2, first1, mb1)
	for name, s := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
		if gone, err := s.Exited(); gone {
			t.Errorf("%s's dataplane exited during the flap: %v", name, err)
		}
	}
	wg.Wait()
	if iperfErr != nil {
		t.Errorf("iperf3 --bidir h1↔h2 across the flap: %v\n%s", iperfErr, dataplane.LastLines(string(out), 8))
	} else {
		t.Logf("iperf3:\n%s", dataplane.LastLines(string(out), 6))
	}
	if mb2 == 0 || mb1 == 0 {
		t.Errorf("TCP did not carry 1 MB each way again after `up` while iperf3 ran (to h2 after %v, to h1 after %v)", mb2, mb1)
	}
	if cfg.FastPath == dataplane.FastPathXDP {
		// The kernel delivered at both ends, and the point changed hands
		// around the flap (the session's reset claims it).
		for name, s := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
			c := lgpipe.StatsOf(s.D).Core()
			rs := c.Receiver
			t.Logf("%s receiver: %+v", name, rs)
			if rs == nil || rs.FastDelivered == 0 || rs.FastHandOffs < 2 || rs.FastClaims == 0 {
				t.Errorf("%s's receiver %+v: want frames delivered by the kernel and the point handed over again after the flap", name, rs)
			}
		}
	}
	if mode != dataplane.ModeForward && lgFastSend {
		// Both halves ran: the kernel sent host frames, and the flap (the
		// session leaving Up) took sending back to the core at least once.
		for name, s := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
			ss := lgpipe.StatsOf(s.D).Core().Sender
			t.Logf("%s sender: %+v", name, ss)
			if ss == nil || ss.FastSent == 0 || ss.FastSendHandOffs < 2 || ss.FastSendClaims == 0 {
				t.Errorf("%s's sender %+v: want frames sent by the kernel, sending claimed across the flap and handed back", name, ss)
			}
		}
	}
	st := sw1.D.Stats()
	t.Logf("sw1 link port: %+v", st.Link)
	if st.Link.DownEvents != 1 || st.Link.DownNs <= 0 || st.Link.Down {
		t.Errorf("sw1 link port: %d down events, down for %v, down now %v; want one event, a positive time, up now",
			st.Link.DownEvents, time.Duration(st.Link.DownNs), st.Link.Down)
	}
	reg := metrics.NewRegistry()
	if err := sw1.D.Register(reg); err != nil {
		t.Fatal(err)
	}
	if v := reg.Values()[`linkfabric_port_down_total{port="link0"}`]; v != float64(st.Link.DownEvents) {
		t.Errorf("exported link0 down events %v, counters say %d", v, st.Link.DownEvents)
	}
}

// TestLGFlapHoldsHostFrames: while sw1's link port is down for about 2 s,
// h1 sends 40 numbered UDP datagrams in traffic class 5, 40 ms apart. The
// session with sw2 was agreed before the outage, so they wait
// (--session-hold) instead of being dropped after --session-wait: when the
// port comes back, all 40 reach h2, in order. An outage is a pause to the
// hosts, not a loss (linksession.Policy.HoldUpTo says why TCP needs that).
func TestLGFlapHoldsHostFrames(t *testing.T) {
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	cfg := dataplane.Config{Mode: lgpipe.ModeLG}
	sw1, _ := dataplane.StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through lg: %v", err)
	}
	tx, rx := class5UDP(t, tb)
	ipIn(t, tb.NS("sw1"), "link", "set", "link0", "down")
	waitLinkDown(t, sw1)
	const sent = 40
	sendNumbered(t, tx, 0, sent, 40*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	ipIn(t, tb.NS("sw1"), "link", "set", "link0", "up")
	got := receiveNumbered(rx)
	var want []int
	for i := range sent {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("h2 got datagrams %v after a 2 s outage, want all of %v in order", got, want)
	}
	t.Logf("h2 got %d datagrams; sw1 session: %+v", len(got), lgpipe.StatsOf(sw1.D).Session.Snapshot())
}

// TestLGSessionKeepsNewest: sw1 runs lg; sw2 runs too but its link port is
// down, so sw1 hears no peer and the link session is never agreed. h1 sends
// 5 numbered UDP datagrams in traffic class 5 (stale), and once sw1 has
// dropped them, after a gap, 20 more (fresh). A host frame waits
// --session-wait; then all but the newest --session-keep of its class are
// dropped, and of those any that arrived before the second half of the
// outage (keptSince, the outage counted from sw1's first poll) — and this
// again every --session-wait while frames wait. When sw2's port comes up
// and the session is agreed, the frames still kept reach h2. The test
// evaluates the rule at the times it observed: h2 gets no stale datagram,
// none but the newest --session-keep of the fresh ones, in order, and every
// one of those sent in the second half of the outage as it stood when the
// session came up (a later pass can only have dropped fewer). With
// --session-keep -1 nothing reaches h2. Every datagram is either delivered
// or counted dropped. If the session came up so late that the rule no
// longer decides for the newest frames, the test runs again with a longer
// gap. (The newest frames are the hosts' latest TCP retransmissions:
// delivering them restarts TCP without waiting for its backed-off
// retransmission timer. Older ones are stale ACKs and data whose delay TCP
// would take for its round-trip time.)
func TestLGSessionKeepsNewest(t *testing.T) {
	for _, keep := range []int{16, 4, -1} {
		t.Run(strconv.Itoa(keep), func(t *testing.T) {
			for gap := time.Second; ; gap *= 2 {
				if sessionKeep(t, keep, gap) || t.Failed() {
					return
				}
				if gap >= 8*time.Second {
					t.Fatalf("--session-keep %d: even after a gap of %v the session came up too late for the rule to decide which datagrams are kept", keep, gap)
				}
			}
		})
	}
}

// sessionKeep runs TestLGSessionKeepsNewest's scenario with gap between the
// stale datagrams' drop and the fresh ones, and reports whether the rule
// decided for every one of the newest --session-keep fresh datagrams.
func sessionKeep(t *testing.T, keep int, gap time.Duration) (decided bool) {
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	// --session-hold (the keep ends when the outage is that old) is not
	// this test's subject: far beyond the scenario.
	cfg := withSession(dataplane.Config{Mode: lgpipe.ModeLG}, linkpipe.SessionConfig{SessionKeep: keep, SessionHold: time.Minute})
	staticNeighbour(t, tb) // no ARP can cross
	ipIn(t, tb.NS("sw2"), "link", "set", "link0", "down")
	sw1, sw2 := dataplane.StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), dataplane.Config{Mode: lgpipe.ModeLG})
	// The outage starts at sw1's first poll, done once its worker loops
	// again: at or before polled.
	waitFor(t, "sw1's worker polled", func() bool { return sw1.D.Stats().Loops >= 2 })
	polled := time.Now()
	tx, rx := class5UDP(t, tb)
	dropped := func() uint64 { return lgpipe.StatsOf(sw1.D).Session.Snapshot().Held.Dropped }

	const stale, fresh = 100, 20
	sendNumbered(t, tx, stale, 5, 0)
	waitFor(t, "sw1 dropped the 5 stale datagrams", func() bool { return dropped() >= 5 })
	time.Sleep(gap)
	sent := sendNumbered(t, tx, 0, fresh, 0)
	// The first pass over them drops all but the newest keep (none with
	// -1), and any sent before the second half of the outage so far.
	kept := min(max(keep, 0), fresh)
	first := fresh - kept // the oldest of the newest kept
	waitFor(t, "sw1's first pass over the fresh datagrams", func() bool { return dropped() > 5 })
	pass, n := time.Now(), dropped()
	if (kept == 0 || !sent[first].Before(polled.Add(pass.Sub(polled)/2))) && n != uint64(5+fresh-kept) {
		t.Errorf("--session-keep %d: after its first pass over %d fresh datagrams sw1 had dropped %d of them; want all but the newest %d",
			keep, fresh, n-5, kept)
	}
	ipIn(t, tb.NS("sw2"), "link", "set", "link0", "up")
	waitFor(t, "the link session is up", func() bool {
		return lgpipe.StatsOf(sw1.D).Session.Snapshot().State == "up" && lgpipe.StatsOf(sw2.D).Session.Snapshot().State == "up"
	})
	up := time.Now()
	got := receiveNumbered(rx)
	snap := lgpipe.StatsOf(sw1.D).Session.Snapshot()
	t.Logf("--session-keep %d, gap %v: h2 got %v; sw1 session: %+v", keep, gap, got, snap)

	// A fresh datagram is surely kept if sent (before it arrived) in the
	// second half of the outage until up (after the last pass).
	cut := polled.Add(up.Sub(polled) / 2)
	mustFrom := first
	for mustFrom < fresh && sent[mustFrom].Before(cut) {
		mustFrom++
	}
	// got must be fresh datagrams k..19, with first ≤ k ≤ mustFrom.
	var want []int
	for i := fresh - len(got); i < fresh; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) || len(got) > fresh-first || fresh-len(got) > mustFrom {
		t.Errorf("--session-keep %d: h2 got datagrams %v once the session was up, want a tail of %d..%d in order, with at least %d..%d (the fresh sent %v..%v after the outage began, up %v after)",
			keep, got, first, fresh-1, mustFrom, fresh-1, sent[0].Sub(polled), sent[fresh-1].Sub(polled), up.Sub(polled))
	}
	if n := uint64(5 + fresh - len(got)); snap.Held.Dropped != n {
		t.Errorf("sw1 counted %d host frames dropped waiting; %d datagrams of %d were not delivered", snap.Held.Dropped, n, 5+fresh)
	}
	if mustFrom > first {
		t.Logf("the session came up %v after the fresh datagrams: the rule does not decide for %d of them", up.Sub(sent[fresh-1]), mustFrom-first)
		return false
	}
	return true
}

// waitFor waits up to 20 s until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("waited 20 s: %s", what)
	}
}

// eventually waits up to 20 s until cond holds, and reports whether it
// did (for goroutines other than the test's, which cannot t.Fatal).
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

// class5UDP returns a UDP socket in h1 sending to h2 in traffic class 5
// (DSCP CS5) and the socket in h2 receiving it.
func class5UDP(t *testing.T, tb *netns.Testbed) (tx, rx *net.UDPConn) {
	t.Helper()
	if err := netns.Do(tb.NS("h2"), func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 5310})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rx.Close() })
	if err := netns.Do(tb.NS("h1"), func() (err error) {
		tx, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 5310})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	raw, err := tx.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) { err = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, 0xa0) }) // CS5: class 5
	if err != nil {
		t.Fatal(err)
	}
	return tx, rx
}

// sendNumbered sends one-byte datagrams first, first+1, ... (n of them),
// gap apart, and returns when each was sent (just before).
func sendNumbered(t *testing.T, tx *net.UDPConn, first, n int, gap time.Duration) []time.Time {
	t.Helper()
	var at []time.Time
	for i := first; i < first+n; i++ {
		at = append(at, time.Now())
		if _, err := tx.Write([]byte{byte(i)}); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		time.Sleep(gap)
	}
	return at
}

// receiveNumbered returns the numbers of the one-byte datagrams rx gets
// until none comes for 2 s, or once one came, for 500 ms: the frames held
// leave together once the session is up, within a worker's loop or two
// (milliseconds), and so would one delivered twice or out of order.
func receiveNumbered(rx *net.UDPConn) []int {
	var got []int
	buf := make([]byte, 16)
	for {
		quiet := 2 * time.Second
		if len(got) > 0 {
			quiet = 500 * time.Millisecond
		}
		rx.SetReadDeadline(time.Now().Add(quiet))
		n, err := rx.Read(buf)
		if err != nil {
			return got
		}
		if n == 1 {
			got = append(got, int(buf[0]))
		}
	}
}

// waitLinkDown waits until s has marked its link port down.
func waitLinkDown(t *testing.T, s *dataplane.RunningSwitch) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !s.D.Stats().Link.Down; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dataplane did not mark link0 down within 2 s")
		}
	}
}

// staticNeighbour gives h1 h2's address, for tests through which no ARP
// can cross.
func staticNeighbour(t *testing.T, tb *netns.Testbed) {
	t.Helper()
	out, err := netns.Command(context.Background(), tb.NS("h2"), "cat", "/sys/class/net/eth0/address").Output()
	if err != nil {
		t.Fatal(err)
	}
	ipIn(t, tb.NS("h1"), "neigh", "replace", "10.0.0.2", "lladdr", strings.TrimSpace(string(out)), "dev", "eth0")
}
