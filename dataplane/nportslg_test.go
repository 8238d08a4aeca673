package dataplane_test

import (
	"testing"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
)

// TestNLinkPorts: a worker over the bundle's four link ports. Numbered
// frames from h1 leave sw1 round-robin over link0..link3 (each carries a
// quarter), arrive on all four of sw2's link ports, and reach h2.
func TestNLinkPorts(t *testing.T) {
	tb := netns.TestUp(t, "lfn", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	links := []string{"link0", "link1", "link2", "link3"}
	b := &lgBed{tb: tb}
	cfg := dataplane.Config{Mode: dataplane.ModeSpray, HostPort: "host0", LinkPorts: links}
	r1, r2 := dataplane.StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), cfg)
	b.sw1, b.sw2 = r1.D, r2.D
	if ps := b.sw1.Ports(); ps.Host != 0 || len(ps.Links) != 4 || b.sw1.Port(ps.Links[3]).Name != "link3" {
		t.Fatalf("sw1 ports %+v", ps)
	}
	const n = 20_000
	r := b.send(t, n, 500, 20_000)
	s1, s2 := b.sw1.Stats(), b.sw2.Stats()
	var tx uint64
	for k, l := range links {
		p1, p2 := s1.Ports[1+k], s2.Ports[1+k]
		if p1.Name != l || p1.Role != dataplane.RoleLink || p2.Name != l {
			t.Fatalf("port %d: %+v", 1+k, p1)
		}
		// Round-robin: each link took a quarter of what sw1 accepted.
		if d := int64(p1.TX.Frames+p1.TX.Dropped) - int64(r.Accepted/4); d < 0 || d > 1 {
			t.Errorf("sw1 %s sent %d (+%d dropped) of %d accepted frames; want a quarter", l, p1.TX.Frames, p1.TX.Dropped, r.Accepted)
		}
		if p2.RX.Frames < p1.TX.Frames*99/100 || p2.RX.Frames > p1.TX.Frames {
			t.Errorf("sw2 %s received %d; sw1 sent %d on it", l, p2.RX.Frames, p1.TX.Frames)
		}
		tx += p1.TX.Frames
	}
	if got := r.Unique + r.SinkLost; got < tx*99/100 {
		t.Errorf("h2 saw %d (%d more dropped at its sink) of %d frames sw1 sent over the bundle", r.Unique, r.SinkLost, tx)
	}
	if s2.Host.TX.Frames < tx*99/100 {
		t.Errorf("sw2 host0 sent %d of %d frames", s2.Host.TX.Frames, tx)
	}
	t.Logf("sw1 per link: %d %d %d %d", s1.Ports[1].TX.Frames, s1.Ports[2].TX.Frames, s1.Ports[3].TX.Frames, s1.Ports[4].TX.Frames)
}
