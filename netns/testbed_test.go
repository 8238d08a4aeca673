package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// netnsList returns "ip netns list" names starting with prefix.
func netnsList(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestPairForwardingSwitch(t *testing.T) {
	tb := TestUp(t, "lfn", "pair", Options{Forwarding: ForwardingKernel})
	h1, h2 := tb.NS("h1"), tb.NS("h2")

	if err := WaitPing(ctxT(t, 5*time.Second), h1, "10.0.0.2"); err != nil {
		t.Fatalf("kernel forwarding: %v", err)
	}
	if err := WaitPing(ctxT(t, 5*time.Second), h2, "10.0.0.1"); err != nil {
		t.Fatalf("kernel forwarding h2->h1: %v", err)
	}

	if err := tb.SetForwarding(ForwardingNone); err != nil {
		t.Fatal(err)
	}
	st, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Find(tb.NS("sw1"), "br0"); ok {
		t.Errorf("br0 still exists with forwarding none:\n%s", st)
	}
	if st.Forwarding != ForwardingNone {
		t.Errorf("recorded forwarding %q, want none", st.Forwarding)
	}
	for _, sw := range []string{"sw1", "sw2"} {
		for _, dev := range []string{"host0", "link0"} {
			l, ok := st.Find(tb.NS(sw), dev)
			if !ok || l.State != "up" || l.Master != "" {
				t.Errorf("%s:%s with forwarding none = %+v, want up with no master", sw, dev, l)
			}
		}
	}
	if err := Ping(ctxT(t, 5*time.Second), h1, "10.0.0.2"); err == nil {
		t.Fatal("ping h1->h2 works with forwarding none; the switches must not forward")
	}

	if err := tb.SetForwarding(ForwardingKernel); err != nil {
		t.Fatal(err)
	}
	if err := WaitPing(ctxT(t, 5*time.Second), h1, "10.0.0.2"); err != nil {
		t.Fatalf("back to kernel forwarding: %v", err)
	}
	st, err = tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := st.Find(tb.NS("sw2"), "link0"); !ok || l.Master != "br0" || l.BridgeState != "forwarding" {
		t.Errorf("sw2 link0 = %+v, want port of br0, forwarding", l)
	}
	t.Logf("status:\n%s", st)
}

func TestPairMTUAndOffloads(t *testing.T) {
	tb := TestUp(t, "lfn", "pair", Options{Forwarding: ForwardingNone, MTU: 3000, LinkHeaderLen: 20})
	st, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Namespaces) != 4 || !st.Recorded || st.Topology != "pair" || st.Forwarding != ForwardingNone {
		t.Fatalf("status:\n%s", st)
	}
	want := map[[2]string]int{
		{"h1", "eth0"}: 3000, {"sw1", "host0"}: 3000, {"sw1", "link0"}: 3020,
		{"sw2", "link0"}: 3020, {"sw2", "host0"}: 3000, {"h2", "eth0"}: 3000,
	}
	for k, mtu := range want {
		l, ok := st.Find(tb.NS(k[0]), k[1])
		if !ok {
			t.Errorf("%s:%s missing", k[0], k[1])
			continue
		}
		if l.MTU != mtu || l.State != "up" || l.Type != "veth" {
			t.Errorf("%s:%s = %+v, want veth up MTU %d", k[0], k[1], l, mtu)
		}
		if l.TxChecksum == nil || *l.TxChecksum {
			t.Errorf("%s:%s tx checksum offload not off: %+v", k[0], k[1], l)
		}
		// Cross-check with ethtool itself.
		out, err := Command(ctxT(t, 5*time.Second), tb.NS(k[0]), "ethtool", "-k", k[1]).CombinedOutput()
		if err == nil && !strings.Contains(string(out), "tx-checksumming: off") {
			t.Errorf("%s:%s ethtool -k says:\n%s", k[0], k[1], out)
		}
		if err == nil && !strings.Contains(string(out), "generic-segmentation-offload: on") {
			t.Errorf("%s:%s GSO not on:\n%s", k[0], k[1], out)
		}
	}
	if l, _ := st.Find(tb.NS("h1"), "eth0"); strings.Join(l.Addrs, ",") != "10.0.0.1/24" {
		t.Errorf("h1 eth0 addresses %v (IPv6 must be off)", l.Addrs)
	}
	if l, _ := st.Find(tb.NS("h2"), "lo"); l.State != "unknown" && l.State != "up" {
		t.Errorf("h2 lo = %+v, want up", l)
	}
	for _, short := range []string{"h1", "sw1", "sw2", "h2"} {
		v, err := ReadSysctl(tb.NS(short), "net.ipv6.conf.all.disable_ipv6")
		if err != nil || v != "1" {
			t.Errorf("%s ipv6 disable_ipv6 = %q, %v", short, v, err)
		}
	}
	// JSON form carries the same facts.
	if j := string(st.JSON()); !strings.Contains(j, `"tx_checksum": false`) || !strings.Contains(j, `"mtu": 3020`) {
		t.Errorf("JSON status:\n%s", j)
	}
	// Hosts reach each other only once something forwards; with "none"
	// nothing does.
	if err := Ping(ctxT(t, 5*time.Second), tb.NS("h1"), "10.0.0.2"); err == nil {
		t.Error("ping works with forwarding none")
	}
}

func TestRunHelpers(t *testing.T) {
	tb := TestUp(t, "lfn", "pair", Options{})
	h1 := tb.NS("h1")
	if err := Sysctl(h1, "net.ipv4.tcp_sack", "0"); err != nil {
		t.Fatal(err)
	}
	if v, _ := ReadSysctl(h1, "net.ipv4.tcp_sack"); v != "0" {
		t.Errorf("tcp_sack in %s = %q after Sysctl", h1, v)
	}
	if v, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_sack"); strings.TrimSpace(string(v)) != "1" {
		t.Logf("note: root namespace tcp_sack = %q", v)
	}
	if err := SetRouteRTOMin(h1, "eth0", "10.0.0.0/24", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	out, err := Command(ctxT(t, 5*time.Second), h1, "ip", "route", "show", "10.0.0.0/24").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rto_min 1ms") || !strings.Contains(string(out), "dev eth0") {
		t.Errorf("route after SetRouteRTOMin: %v: %s", err, out)
	}
	if d, err := RouteRTOMin(h1, "eth0", "10.0.0.0/24"); err != nil || d != time.Millisecond {
		t.Errorf("RouteRTOMin = %v, %v", d, err)
	}
	if err := SetRouteRTOMin(h1, "eth0", "10.0.0.0/24", 500*time.Microsecond); err == nil {
		t.Error("rto_min 500µs accepted; the kernel keeps milliseconds")
	}
	if err := WaitPing(ctxT(t, 5*time.Second), h1, "10.0.0.2"); err != nil {
		t.Fatal(err)
	}
	// Do: a socket made inside stays in the namespace.
	var names []string
	err = Do(tb.NS("sw1"), func() error {
		// /proc/net is /proc/self/net (the main thread's namespace);
		// /proc/thread-self/net follows the calling thread.
		out, err := os.ReadFile("/proc/thread-self/net/dev")
		for _, l := range strings.Split(string(out), "\n")[2:] {
			if f := strings.Fields(l); len(f) > 0 {
				names = append(names, strings.TrimSuffix(f[0], ":"))
			}
		}
		return err
	})
	if err != nil || !strings.Contains(strings.Join(names, " "), "link0") {
		t.Errorf("Do in sw1 saw devices %v, %v", names, err)
	}
	// Sockets made inside Do stay in their namespace after Do returns:
	// a UDP socket in h2 bound to 10.0.0.2 receives what a socket made in
	// h1 sends, both used from this (root namespace) goroutine.
	var rx, tx int
	if err := Do(tb.NS("h2"), func() (err error) {
		if rx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err != nil {
			return err
		}
		return unix.Bind(rx, &unix.SockaddrInet4{Port: 9999, Addr: [4]byte{10, 0, 0, 2}})
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rx)
	if err := Do(h1, func() (err error) {
		tx, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(tx)
	if err := unix.Sendto(tx, []byte("hi"), 0, &unix.SockaddrInet4{Port: 9999, Addr: [4]byte{10, 0, 0, 2}}); err != nil {
		t.Fatalf("send from h1 socket outside Do: %v", err)
	}
	unix.SetsockoptTimeval(rx, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	buf := make([]byte, 16)
	if n, _, err := unix.Recvfrom(rx, buf, 0); err != nil {
		t.Errorf("h2 socket outside Do: %v", err)
	} else if string(buf[:n]) != "hi" {
		t.Errorf("h2 socket outside Do received %q", buf[:n])
	}

	if err := Do(tb.NS("sw1"), func() error { return errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Errorf("Do did not return fn's error: %v", err)
	}
	if err := Do("lfn-does-not-exist", func() error { return nil }); err == nil {
		t.Error("Do in a missing namespace succeeded")
	}
}

func TestDownTwiceAndLeavesNothing(t *testing.T) {
	RequireRoot(t)
	p := TestPrefix(t, "lfn")
	topo := MustPreset(t, "pair")
	if _, err := Up(topo, Options{Prefix: p}); err != nil {
		t.Fatal(err)
	}
	if got := netnsList(t, p); len(got) != 4 {
		t.Fatalf("ip netns list after Up: %v", got)
	}
	// A second Up with the same prefix is refused and leaves the first alone.
	if _, err := Up(topo, Options{Prefix: p}); err == nil || !strings.Contains(err.Error(), "linkfabric testbed down --prefix "+p) {
		t.Errorf("second Up with prefix %s: %v", p, err)
	}
	if got := netnsList(t, p); len(got) != 4 {
		t.Fatalf("second Up disturbed the first: %v", got)
	}
	if err := Down(p); err != nil {
		t.Fatal(err)
	}
	if err := Down(p); err != nil {
		t.Fatalf("second Down: %v", err)
	}
	if got := netnsList(t, p); len(got) != 0 {
		t.Errorf("namespaces left after Down: %v", got)
	}
	if _, err := os.Stat(statePath(p)); !os.IsNotExist(err) {
		t.Errorf("state file left: %v", err)
	}
	st, err := Status(p)
	if err != nil || len(st.Namespaces) != 0 || st.Recorded {
		t.Errorf("Status after Down: %v\n%s", err, st)
	}
}

func TestDownOnlyItsOwnPrefix(t *testing.T) {
	RequireRoot(t)
	p := TestPrefix(t, "lfn")
	longer := p + "x" // a prefix that extends p: its namespaces start with p
	t.Cleanup(func() { Down(longer) })
	topo := MustPreset(t, "pair")
	if _, err := Up(topo, Options{Prefix: p, Forwarding: ForwardingNone}); err != nil {
		t.Fatal(err)
	}
	if _, err := Up(topo, Options{Prefix: longer, Forwarding: ForwardingNone}); err != nil {
		t.Fatal(err)
	}
	// A foreign namespace whose name starts with p.
	foreign := p + "foreign"
	if out, err := exec.Command("ip", "netns", "add", foreign).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", foreign).Run() })

	if err := Down(p); err != nil {
		t.Fatal(err)
	}
	got := netnsList(t, p)
	want := append(topo.NamespaceNames(longer), foreign)
	if strings.Join(sorted(got), " ") != strings.Join(sorted(want), " ") {
		t.Errorf("after Down(%s): namespaces %v, want exactly %v", p, got, want)
	}
	if err := Down(longer); err != nil {
		t.Fatal(err)
	}
	if got := netnsList(t, p); len(got) != 1 || got[0] != foreign {
		t.Errorf("after Down(%s): %v, want only %s", longer, got, foreign)
	}
}

func sorted(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

func TestUpCollisionRollsBack(t *testing.T) {
	RequireRoot(t)
	p := TestPrefix(t, "lfn")
	topo := MustPreset(t, "pair")
	// Someone else's namespace with the name the testbed wants for sw2.
	taken := p + "sw2"
	if out, err := exec.Command("ip", "netns", "add", taken).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", taken).Run() })
	_, err := Up(topo, Options{Prefix: p})
	if err == nil {
		t.Fatal("Up succeeded over an existing namespace")
	}
	if !strings.Contains(err.Error(), taken) || !strings.Contains(err.Error(), "ip netns del") {
		t.Errorf("error does not name the namespace and the fix: %v", err)
	}
	if got := netnsList(t, p); len(got) != 1 || got[0] != taken {
		t.Errorf("after failed Up: %v, want only the foreign %s", got, taken)
	}
	if err := Down(p); err != nil {
		t.Fatal(err)
	}
	if got := netnsList(t, p); len(got) != 1 {
		t.Errorf("Down removed a foreign namespace: %v", got)
	}
}

func TestUpFailureMidwayRollsBack(t *testing.T) {
	RequireRoot(t)
	for _, step := range []string{"namespaces", "veths", "links", "bridges"} {
		t.Run(step, func(t *testing.T) {
			p := TestPrefix(t, "lfn")
			topo := MustPreset(t, "pair")
			testHook = func(s string) error {
				if s == step {
					return errors.New("injected failure after " + s)
				}
				return nil
			}
			defer func() { testHook = nil }()
			_, err := Up(topo, Options{Prefix: p})
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("Up error = %v", err)
			}
			checkNothingLeft(t, p)
		})
	}
}

func TestUpKernelFailureRollsBack(t *testing.T) {
	RequireRoot(t)
	p := TestPrefix(t, "lfn")
	// Valid as data, refused by the kernel after namespaces and veths
	// exist: an IPv6 address where Up has disabled IPv6.
	topo := MustPreset(t, "pair")
	topo.Addresses["h2:eth0"] = append(topo.Addresses["h2:eth0"], "fd00::2/64")
	_, err := Up(topo, Options{Prefix: p})
	if err == nil {
		t.Fatal("Up added an IPv6 address with IPv6 disabled")
	}
	t.Logf("Up error: %v", err)
	if !strings.Contains(err.Error(), p+"h2") || !strings.Contains(err.Error(), "eth0") {
		t.Errorf("error does not name the namespace and interface: %v", err)
	}
	checkNothingLeft(t, p)
}

// checkNothingLeft fails the test if a failed Up of prefix p left a
// namespace or its state file behind.
func checkNothingLeft(t *testing.T, p string) {
	t.Helper()
	if got := netnsList(t, p); len(got) != 0 {
		t.Errorf("namespaces left after failed Up: %v", got)
	}
	if _, err := os.Stat(statePath(p)); !os.IsNotExist(err) {
		t.Errorf("state file left after failed Up: %v", err)
	}
}

func TestBundleUpDown(t *testing.T) {
	tb := TestUp(t, "lfn", "bundle", Options{Forwarding: ForwardingKernel})
	st, err := tb.Status()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		dev := "link" + string(rune('0'+i))
		for _, sw := range []string{"sw1", "sw2"} {
			if l, ok := st.Find(tb.NS(sw), dev); !ok || l.State != "up" || l.MTU != 1526 {
				t.Errorf("%s:%s = %+v", sw, dev, l)
			}
		}
	}
	if err := WaitPing(ctxT(t, 5*time.Second), tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Errorf("bundle over link0 bridge: %v", err)
	}
	// The hosts' GRO follows the mode: off with none known (Up's), on for
	// forward, off again for cells, and recorded with the testbed.
	for _, step := range []struct {
		mode string
		gro  bool
	}{{"", false}, {"forward", true}, {"cells", false}, {"lg", true}} {
		if step.mode != "" {
			if err := tb.SetMode(step.mode); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range []string{"h1", "h2"} {
			if on, err := GRO(tb.NS(h), "eth0"); err != nil || on != step.gro {
				t.Errorf("mode %q: %s:eth0 GRO %v (%v), want %v", step.mode, h, on, err, step.gro)
			}
		}
		if o, err := Open(tb.Prefix); err != nil {
			t.Error(err)
		} else if o.Options.Mode != step.mode {
			t.Errorf("mode %q: the recorded testbed says mode %q", step.mode, o.Options.Mode)
		}
	}
	if err := tb.Down(); err != nil {
		t.Fatal(err)
	}
	if got := netnsList(t, tb.Prefix); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
}

// A daemon left in a host namespace (`ip netns exec h2 iperf3 -s -D`, as
// the tour suggests) does not outlive Down: it is stopped first, whether it
// leaves on SIGTERM or needs SIGKILL; a process outside the testbed is left
// alone.
func TestDownStopsLeftoverProcesses(t *testing.T) {
	RequireRoot(t)
	p := TestPrefix(t, "lfn")
	topo := MustPreset(t, "pair")
	tb, err := Up(topo, Options{Prefix: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(p) })
	start := func(ns string, script string) *exec.Cmd {
		c := exec.Command("ip", "netns", "exec", ns, "sh", "-c", script)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		go c.Wait()
		return c
	}
	polite := start(tb.NS("h2"), "exec sleep 60")
	stubborn := start(tb.NS("sw1"), "trap '' TERM; while :; do sleep 0.05; done")
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer outside.Process.Kill()
	time.Sleep(200 * time.Millisecond) // ip netns exec has entered the namespaces
	if n := len(nsPids(tb.NS("h2"))) + len(nsPids(tb.NS("sw1"))); n < 2 {
		t.Fatalf("%d processes found in the namespaces, want at least 2", n)
	}
	if err := Down(p); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{polite, stubborn} {
		if syscall.Kill(c.Process.Pid, 0) == nil {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid)); err == nil && !strings.Contains(string(b), ") Z ") {
				t.Errorf("process %d (%v) still runs after Down", c.Process.Pid, c.Args)
			}
		}
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process outside the testbed was stopped: %v", err)
	}
}

// A testbed whose test process was killed before its cleanups ran (go
// test's -timeout, SIGKILL) is taken down by the next test process's
// TestPrefix: its owner file names a process that is gone.
func TestPrefixSweepsOrphans(t *testing.T) {
	tb := TestUp(t, "lfo", "pair", Options{Forwarding: ForwardingNone})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(TestOwners, tb.Prefix)
	if err := os.WriteFile(mark, []byte(strconv.Itoa(gone.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	sweepOrphans()
	for _, n := range tb.Topology.NamespaceNames(tb.Prefix) {
		if _, err := os.Stat(filepath.Join(RunDir, n)); err == nil {
			t.Errorf("namespace %s of the orphaned testbed is still there", n)
		}
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Errorf("owner file %s: %v, want it removed", mark, err)
	}
}
