package dataplane

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
)

// RunningSwitch is a dataplane on host0/link0 of a namespace whose Run error
// is visible while the test runs (Exited), and reported when the test ends.
type RunningSwitch struct {
	D *Dataplane
	*netns.Running
}

// StartWatched runs a dataplane on host0/link0 of namespace ns (or on the
// ports cfg names, if it names link ports) until the test ends.
func StartWatched(t *testing.T, ns string, cfg Config) *RunningSwitch {
	t.Helper()
	if len(cfg.LinkPorts) == 0 {
		cfg.HostPort, cfg.LinkPort = "host0", "link0"
	}
	d, r := netns.TestRun(t, ns, func() (*Dataplane, error) { return New(cfg) })
	return &RunningSwitch{D: d, Running: r}
}

// StartBoth is StartWatched for sw1 (namespace ns1, configuration cfg1)
// and sw2 at once: each dataplane loads a program per port, and the two
// overlap.
func StartBoth(t *testing.T, ns1 string, cfg1 Config, ns2 string, cfg2 Config) (*RunningSwitch, *RunningSwitch) {
	t.Helper()
	s := StartEach(t, []string{ns1, ns2}, []Config{cfg1, cfg2})
	return s[0], s[1]
}

// StartEach is StartWatched in each namespace of nss (with the
// configuration of the same index) at once.
func StartEach(t *testing.T, nss []string, cfgs []Config) []*RunningSwitch {
	t.Helper()
	cfgs = slices.Clone(cfgs)
	for i := range cfgs {
		if len(cfgs[i].LinkPorts) == 0 {
			cfgs[i].HostPort, cfgs[i].LinkPort = "host0", "link0"
		}
	}
	d, r := netns.TestRunEach(t, nss, func(i int) (*Dataplane, error) { return New(cfgs[i]) })
	s := make([]*RunningSwitch, len(nss))
	for i := range s {
		s[i] = &RunningSwitch{D: d[i], Running: r[i]}
	}
	return s
}

// StartSwitch runs a dataplane on host0/link0 of namespace ns until the test ends.
func StartSwitch(t *testing.T, ns string, cfg Config) *Dataplane {
	t.Helper()
	return StartWatched(t, ns, cfg).D
}

func TestForwardPingAndTCP(t *testing.T) {
	tb := netns.TestUp(t, "lfd", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	r1, r2 := StartBoth(t, tb.NS("sw1"), Config{}, tb.NS("sw2"), Config{})
	sw1, sw2 := r1.D, r2.D

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through the dataplane: %v", err)
	}
	out, err := netns.Command(ctx, tb.NS("h1"), "ping", "-c", "20", "-i", "0.01", "-q", "10.0.0.2").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0% packet loss") {
		t.Fatalf("20 pings h1→h2: %v\n%s", err, out)
	}

	RequireIperf3(t)
	StartIperfServer(t, ctx, tb.NS("h2"), 5299)
	out, err = RunIperfClient(ctx, tb.NS("h1"), 5299, "-n", "50M")
	if err != nil {
		t.Fatalf("iperf3 50 MB h1→h2 through the dataplane: %v\n%s", err, out)
	}
	t.Logf("iperf3:\n%s", LastLines(string(out), 4))

	// Every frame sw1 took from its host port left on its link port, and the
	// counters of both switches agree with each other.
	s1, s2 := sw1.Stats(), sw2.Stats()
	if s1.Host.RX.Frames < 30000 {
		t.Errorf("sw1 host port received %d frames; 50 MB needs > 30000", s1.Host.RX.Frames)
	}
	if s1.Link.TX.Frames+s1.Link.TX.Dropped != s1.Host.RX.Frames {
		t.Errorf("sw1: host rx %d != link tx %d + dropped %d", s1.Host.RX.Frames, s1.Link.TX.Frames, s1.Link.TX.Dropped)
	}
	if s2.Link.RX.Frames > s1.Link.TX.Frames || s2.Link.RX.Frames < s1.Link.TX.Frames*99/100 {
		t.Errorf("sw2 link rx %d frames vs sw1 link tx %d", s2.Link.RX.Frames, s1.Link.TX.Frames)
	}
	// The Prometheus/JSON export reads the same counters.
	reg := metrics.NewRegistry()
	if err := sw1.Register(reg); err != nil {
		t.Fatal(err)
	}
	if v := reg.Values()[`linkfabric_frames_total{dir="rx",port="host0"}`]; v != float64(sw1.Stats().Host.RX.Frames) {
		t.Errorf("exported host0 rx frames %v, counters say %d", v, sw1.Stats().Host.RX.Frames)
	}
	c, err := sw2.Link().Program().Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c.Redirected < s2.Link.RX.Frames {
		t.Errorf("sw2 link XDP redirected %d < frames the dataplane received %d", c.Redirected, s2.Link.RX.Frames)
	}
}

func TestNewErrors(t *testing.T) {
	tb := netns.TestUp(t, "lfd", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1 := tb.NS("sw1")
	try := func(cfg Config) error {
		return netns.Do(sw1, func() error {
			d, err := New(cfg)
			if err == nil {
				d.Close()
			}
			return err
		})
	}
	// A missing interface is named in the error.
	err := try(Config{HostPort: "host0", LinkPort: "nosuch0"})
	if err == nil || !strings.Contains(err.Error(), "nosuch0") {
		t.Errorf("missing interface: got %v, want an error naming nosuch0", err)
	}
	// After that failure nothing is left attached to host0.
	assertNoXDP(t, sw1, "host0")

	// An interface already carrying an XDP program is refused, with the fix.
	netns.TestIn(t, sw1, func() (*bpf.Impairer, error) {
		return bpf.AttachImpairer("link0", bpf.ImpairConfig{Loss: 0.5})
	}).Close()
	err = try(Config{HostPort: "host0", LinkPort: "link0"})
	var busy *bpf.BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "link0") {
		t.Errorf("link0 with an XDP program: got %v, want a BusyError naming link0", err)
	}
	assertNoXDP(t, sw1, "host0")
	netns.Do(sw1, func() error { return bpf.DetachImpairer("link0") })

	// A link MTU beyond an explicit --frame-size is refused with the fix
	// (the programs have frags: native XDP on veth takes any MTU, and the
	// default frame size would fit it).
	for _, ns := range []string{sw1, tb.NS("sw2")} {
		if err := netns.Do(ns, func() error {
			l, err := netlink.LinkByName("link0")
			if err != nil {
				return err
			}
			return netlink.LinkSetMTU(l, 4000)
		}); err != nil {
			t.Fatal(err)
		}
	}
	err = try(Config{HostPort: "host0", LinkPort: "link0", FrameSize: 4096})
	if err == nil || !strings.Contains(err.Error(), "link0") || !strings.Contains(err.Error(), "--frame-size 8192") {
		t.Errorf("link0 MTU 4000, --frame-size 4096: got %v, want a refusal naming link0 and --frame-size 8192", err)
	}
	assertNoXDP(t, sw1, "host0")

	// Same port twice and an unknown mode are refused before touching anything.
	if err := try(Config{HostPort: "host0", LinkPort: "host0"}); err == nil {
		t.Error("host port == link port accepted")
	}
	if err := try(Config{HostPort: "host0", LinkPort: "link0", Mode: "teleport"}); err == nil || !strings.Contains(err.Error(), "teleport") {
		t.Errorf("unknown mode: %v", err)
	}
}

func assertNoXDP(t *testing.T, ns, dev string) {
	t.Helper()
	netns.Do(ns, func() error {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			t.Errorf("%s in %s: %v", dev, ns, err)
			return nil
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			t.Errorf("%s in %s still carries XDP program %d after a failed New", dev, ns, x.ProgId)
		}
		return nil
	})
}

func LastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
