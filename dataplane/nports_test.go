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

// ModeSpray is a test mode on one host port and 1 to 16 link ports: host
// frames leave round-robin over the link ports, link frames go to the host.
const ModeSpray Mode = "test-spray"

func init() {
	Register(ModeSpray, Spec{Hosts: [2]int{1, 1}, Links: [2]int{1, MaxLinkPorts}, Wire: true,
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
	s := StartWatched(t, tb.NS("f1"), Config{Mode: modeSink, LinkPorts: links})
	d := s.D
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
	s.CheckRunning(t, "f1")
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
