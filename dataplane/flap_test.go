package dataplane

import (
	"context"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	if _, err := exec.LookPath("iperf3"); err != nil {
		netns.RequireRoot(t)
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
	for _, mode := range []Mode{ModeLG, ModeForward} {
		t.Run(string(mode), func(t *testing.T) { linkFlap(t, mode) })
	}
}

func linkFlap(t *testing.T, mode Mode) {
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone, LinkQueues: lgLinkQueues()})
	cfg := Config{Mode: mode}
	if lgOnFastPath && mode != ModeForward {
		cfg.FastPath = lgFastPathMode()
	}
	sw1 := startWatched(t, tb.NS("sw1"), cfg)
	sw2 := startWatched(t, tb.NS("sw2"), cfg)
	h1, h2, ns1 := tb.NS("h1"), tb.NS("h2"), tb.NS("sw1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through lg: %v", err)
	}
	startIperfServer(t, ctx, h2, 5301)

	// 12 s of iperf3; the flap is at 3..5 s.
	var out []byte
	var iperfErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		out, iperfErr = runIperfClient(ctx, h1, 5301, "--bidir", "-t", "12", "-i", "0")
	}()
	time.Sleep(3 * time.Second)
	toH2, toH1 := sw2.d.Stats().Host.TX.Bytes, sw1.d.Stats().Host.TX.Bytes
	t.Logf("before the flap: %d B delivered to h2, %d B to h1", toH2, toH1)
	ipIn(t, ns1, "link", "set", "link0", "down")
	time.Sleep(2 * time.Second)
	// Frames queued before `down` may still trickle out; measure from `up`.
	ipIn(t, ns1, "link", "set", "link0", "up")
	up := time.Now()
	toH2, toH1 = sw2.d.Stats().Host.TX.Bytes, sw1.d.Stats().Host.TX.Bytes
	// Time from `up` until bytes reach each host again, and until 1 MB has.
	var first2, first1, mb2, mb1 time.Duration
	for time.Since(up) < 8*time.Second && (mb1 == 0 || mb2 == 0) {
		b2, b1 := sw2.d.Stats().Host.TX.Bytes, sw1.d.Stats().Host.TX.Bytes
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
	for name, s := range map[string]*runningSwitch{"sw1": sw1, "sw2": sw2} {
		if gone, err := s.exited(); gone {
			t.Errorf("%s's dataplane exited during the flap: %v", name, err)
		}
	}
	wg.Wait()
	if iperfErr != nil {
		t.Errorf("iperf3 --bidir h1↔h2 across the flap: %v\n%s", iperfErr, lastLines(string(out), 8))
	} else {
		t.Logf("iperf3:\n%s", lastLines(string(out), 6))
	}
	if mb2 == 0 || mb1 == 0 {
		t.Errorf("TCP did not resume both ways within 8 s of `up` (1 MB to h2 after %v, to h1 after %v)", mb2, mb1)
	}
	if cfg.FastPath == FastPathXDP {
		// The kernel delivered at both ends, and the point changed hands
		// around the flap (the session's reset claims it).
		for name, s := range map[string]*runningSwitch{"sw1": sw1, "sw2": sw2} {
			c := s.d.LGStats().Core()
			rs := c.Receiver
			t.Logf("%s receiver: %+v", name, rs)
			if rs == nil || rs.FastDelivered == 0 || rs.FastHandOffs < 2 || rs.FastClaims == 0 {
				t.Errorf("%s's receiver %+v: want frames delivered by the kernel and the point handed over again after the flap", name, rs)
			}
		}
	}
	if mode != ModeForward && lgFastSend {
		// Both halves ran: the kernel sent host frames, and the flap (the
		// session leaving Up) took sending back to the core at least once.
		for name, s := range map[string]*runningSwitch{"sw1": sw1, "sw2": sw2} {
			ss := s.d.LGStats().Core().Sender
			t.Logf("%s sender: %+v", name, ss)
			if ss == nil || ss.FastSent == 0 || ss.FastSendHandOffs < 2 || ss.FastSendClaims == 0 {
				t.Errorf("%s's sender %+v: want frames sent by the kernel, sending claimed across the flap and handed back", name, ss)
			}
		}
	}
	st := sw1.d.Stats()
	t.Logf("sw1 link port: %+v", st.Link)
	if st.Link.DownEvents != 1 || st.Link.DownNs <= 0 || st.Link.Down {
		t.Errorf("sw1 link port: %d down events, down for %v, down now %v; want one event, a positive time, up now",
			st.Link.DownEvents, time.Duration(st.Link.DownNs), st.Link.Down)
	}
	reg := metrics.NewRegistry()
	if err := sw1.d.Register(reg); err != nil {
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
	cfg := Config{Mode: ModeLG}
	sw1 := startWatched(t, tb.NS("sw1"), cfg)
	startWatched(t, tb.NS("sw2"), cfg)
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
	t.Logf("h2 got %d datagrams; sw1 session: %+v", len(got), sw1.d.LGStats().Session.Snapshot())
}

// TestLGSessionKeepsNewest: sw1 runs lg and sw2 does not run yet, so the
// link session was never agreed. h1 sends 5 numbered UDP datagrams in
// traffic class 5, then after 1.5 s 10 more; after --session-wait they are
// dropped but for the newest --session-keep. When sw2 starts, the newest
// --session-keep of the 10 (and only those) reach h2, in order; the first
// 5, older than half the wait, never do; with --session-keep -1 none do.
// (The newest frames are the hosts' latest TCP retransmissions: delivering
// them restarts TCP without waiting for its backed-off retransmission
// timer. Older ones are stale ACKs and data whose delay TCP would take for
// its round-trip time.)
func TestLGSessionKeepsNewest(t *testing.T) {
	for _, keep := range []int{16, 4, -1} {
		t.Run(strconv.Itoa(keep), func(t *testing.T) { sessionKeep(t, keep) })
	}
}

func sessionKeep(t *testing.T, keep int) {
	tb := netns.TestUp(t, "lfe", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	cfg := Config{Mode: ModeLG, LG: LGConfig{SessionKeep: keep}}
	sw1 := startWatched(t, tb.NS("sw1"), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No ARP can cross yet: give h1 h2's address.
	mac, err := netns.Command(ctx, tb.NS("h2"), "cat", "/sys/class/net/eth0/address").Output()
	if err != nil {
		t.Fatal(err)
	}
	ipIn(t, tb.NS("h1"), "neigh", "replace", "10.0.0.2", "lladdr", strings.TrimSpace(string(mac)), "dev", "eth0")
	tx, rx := class5UDP(t, tb)
	const stale, sent = 100, 10
	sendNumbered(t, tx, stale, 5, 20*time.Millisecond)
	time.Sleep(1500 * time.Millisecond)
	sendNumbered(t, tx, 0, sent, 10*time.Millisecond)
	time.Sleep(3 * defaultSessionWait) // every datagram waited longer than --session-wait
	startWatched(t, tb.NS("sw2"), Config{Mode: ModeLG})
	got := receiveNumbered(rx)
	var want []int
	for i := max(sent-max(keep, 0), 0); i < sent; i++ {
		want = append(want, i)
	}
	if !slices.Equal(got, want) {
		t.Errorf("--session-keep %d: h2 got datagrams %v once sw2 started, want %v", keep, got, want)
	}
	t.Logf("--session-keep %d: h2 got %v; sw1 session: %+v", keep, got, sw1.d.LGStats().Session.Snapshot())
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
// gap apart.
func sendNumbered(t *testing.T, tx *net.UDPConn, first, n int, gap time.Duration) {
	t.Helper()
	for i := first; i < first+n; i++ {
		if _, err := tx.Write([]byte{byte(i)}); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		time.Sleep(gap)
	}
}

// receiveNumbered returns the numbers of the one-byte datagrams rx gets
// until none comes for 2 s.
func receiveNumbered(rx *net.UDPConn) []int {
	var got []int
	buf := make([]byte, 16)
	for {
		rx.SetReadDeadline(time.Now().Add(2 * time.Second))
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
func waitLinkDown(t *testing.T, s *runningSwitch) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !s.d.Stats().Link.Down; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dataplane did not mark link0 down within 2 s")
		}
	}
}
