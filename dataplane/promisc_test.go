package dataplane_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
)

// promiscOf reads IFF_PROMISC of dev in namespace ns.
func promiscOf(t *testing.T, ns, dev string) bool {
	t.Helper()
	return netns.TestIn(t, ns, func() (bool, error) {
		l, err := netlink.LinkByName(dev)
		if err != nil {
			return false, err
		}
		return l.Attrs().Promisc != 0, nil
	})
}

// A running dataplane keeps its link ports promiscuous (they carry other
// hosts' frames) and puts them back as they were when it closes; host
// ports are left alone, and a port already promiscuous stays so.
func TestLinkPortPromiscWhileRunning(t *testing.T) {
	tb := netns.TestUp(t, "lfm", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	sw1, sw2 := tb.NS("sw1"), tb.NS("sw2")
	if promiscOf(t, sw1, "link0") || promiscOf(t, sw1, "host0") {
		t.Fatal("the testbed's ports are promiscuous before any dataplane runs")
	}
	if err := netns.Do(sw2, func() error {
		l, err := netlink.LinkByName("link0")
		if err != nil {
			return err
		}
		return netlink.SetPromiscOn(l)
	}); err != nil {
		t.Fatal(err)
	}
	s1, s2 := dataplane.StartBoth(t, sw1, dataplane.Config{}, sw2, dataplane.Config{})
	if !promiscOf(t, sw1, "link0") {
		t.Error("sw1 link0 not promiscuous while the dataplane runs")
	}
	if promiscOf(t, sw1, "host0") {
		t.Error("sw1 host0 made promiscuous: only link ports are")
	}
	s1.Stop(t)
	s2.Stop(t)
	if promiscOf(t, sw1, "link0") {
		t.Error("sw1 link0 still promiscuous after the dataplane closed")
	}
	if !promiscOf(t, sw2, "link0") {
		t.Error("sw2 link0, promiscuous before the dataplane, turned off by it")
	}
}
