package dataplane

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
)

// modeSpray is a test mode on one host port and 1 to 16 link ports: host
// frames leave round-robin over the link ports, link frames go to the host.
const modeSpray Mode = "test-spray"

func init() {
	Register(modeSpray, Spec{Hosts: [2]int{1, 1}, Links: [2]int{1, MaxLinkPorts}, Wire: true,
		New: Stateless(func(w *Worker) (Pipeline, error) { return &sprayPipeline{ps: w.d.Ports()}, nil })})
}

type sprayPipeline struct {
	ps   Ports
	next int // link port of the next host frame
}

func (*sprayPipeline) Room(int) int { return math.MaxInt }

func (s *sprayPipeline) Receive(_ int64, port, _ int, descs []xdp.Desc, tx *Tx) {
	for _, d := range descs {
		out := s.ps.Host
		if port == s.ps.Host {
			out = s.ps.Links[s.next]
			s.next = (s.next + 1) % len(s.ps.Links)
		}
		tx.Send(out, LaneData, d.Addr, int(d.Len))
		tx.Release(d.Addr)
	}
}

func (*sprayPipeline) Poll(int64, *Tx) int64 { return math.MaxInt64 }

func (*sprayPipeline) Stop() {}

// TestNLinkPorts: a worker over the bundle's four link ports. Numbered
// frames from h1 leave sw1 round-robin over link0..link3 (each carries a
// quarter), arrive on all four of sw2's link ports, and reach h2.
func TestNLinkPorts(t *testing.T) {
	tb := netns.TestUp(t, "lfn", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	links := []string{"link0", "link1", "link2", "link3"}
	b := &lgBed{tb: tb}
	b.sw1 = startSwitch(t, tb.NS("sw1"), Config{Mode: modeSpray, HostPort: "host0", LinkPorts: links})
	b.sw2 = startSwitch(t, tb.NS("sw2"), Config{Mode: modeSpray, HostPort: "host0", LinkPorts: links})
	if ps := b.sw1.Ports(); ps.Host != 0 || len(ps.Links) != 4 || b.sw1.Port(ps.Links[3]).Name != "link3" {
		t.Fatalf("sw1 ports %+v", ps)
	}
	const n = 20_000
	r := b.send(t, n, 500, 20_000)
	s1, s2 := b.sw1.Stats(), b.sw2.Stats()
	var tx uint64
	for k, l := range links {
		p1, p2 := s1.Ports[1+k], s2.Ports[1+k]
		if p1.Name != l || p1.Role != RoleLink || p2.Name != l {
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

// modeSink is a test mode for a node without a host port: it takes frames
// on 1 to 16 link ports and frees them.
const modeSink Mode = "test-sink"

func init() {
	Register(modeSink, Spec{Hosts: [2]int{0, 0}, Links: [2]int{1, MaxLinkPorts}, Wire: true,
		New: Stateless(func(*Worker) (Pipeline, error) { return sinkPipeline{}, nil })})
}

type sinkPipeline struct{}

func (sinkPipeline) Room(int) int { return math.MaxInt }

func (sinkPipeline) Receive(_ int64, _, _ int, descs []xdp.Desc, tx *Tx) {
	for _, d := range descs {
		tx.Release(d.Addr)
	}
}

func (sinkPipeline) Poll(int64, *Tx) int64 { return math.MaxInt64 }

func (sinkPipeline) Stop() {}

// TestFabricNodePorts: a node with six two-queue link ports and no host
// port (fabric3's f1) opens every port, numbers them from 0, grows the
// default UMEM for its 12 sockets, runs, leaves the host out of its
// statistics, and the mode checks refuse a host port it does not take.
func TestFabricNodePorts(t *testing.T) {
	tb := netns.TestUp(t, "lfn", "fabric3", netns.Options{Forwarding: netns.ForwardingNone})
	links := []string{"e1a", "e1b", "e2a", "e2b", "e3a", "e3b"}
	s := startWatched(t, tb.NS("f1"), Config{Mode: modeSink, LinkPorts: links})
	d := s.d
	ps := d.Ports()
	if ps.Host != -1 || len(ps.Links) != 6 || d.Host() != nil || d.Link().Name != "e1a" {
		t.Fatalf("f1 ports %+v, host %v, first link %s", ps, d.Host(), d.Link().Name)
	}
	for k, l := range links {
		if p := d.Port(ps.Links[k]); p.Name != l || p.Role != RoleLink || len(p.Sockets()) != 2 {
			t.Errorf("link %d: %s %s with %d sockets; want %s, 2 sockets", k, p.Name, p.Role, len(p.Sockets()), l)
		}
	}
	if c := d.Config(); c.FrameCount < 12*c.RingSize+uint32(c.Batch) {
		t.Errorf("--frames %d for 12 sockets of --ring-size %d", c.FrameCount, c.RingSize)
	}
	time.Sleep(100 * time.Millisecond)
	if done, err := s.exited(); done {
		t.Fatalf("worker ended: %v", err)
	}
	b, err := json.Marshal(d.Stats())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"host"`) || !strings.Contains(string(b), `"name":"e3b","role":"link"`) {
		t.Errorf("stats of a node without a host port: %s", b)
	}
	err = netns.Do(tb.NS("f1"), func() error {
		_, err := New(Config{Mode: modeSink, HostPort: "e1a", LinkPorts: []string{"e2a"}})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "--mode test-sink takes no --host-port; got e1a") {
		t.Errorf("a host port for a mode without one: %v", err)
	}
}
