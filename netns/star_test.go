package netns

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStarMatchesPreset(t *testing.T) {
	p := MustPreset(t, "star4")
	s, err := Star(4, StarOptions{Shape: &Shape{Rate: 100_000_000, Burst: 16 << 10, Limit: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	s.Roles = p.Roles
	if !reflect.DeepEqual(p.Links, s.Links) || !reflect.DeepEqual(p.Addresses, s.Addresses) || !reflect.DeepEqual(p.Bridges, s.Bridges) {
		t.Errorf("Star(4) differs from the star4 preset:\n%+v\n%+v", s, p)
	}
	for _, n := range []int{1, 9} {
		if _, err := Star(n, StarOptions{}); err == nil {
			t.Errorf("Star(%d) accepted", n)
		}
	}
}

func TestShapeValidate(t *testing.T) {
	bad := `name: x
namespaces: [a, b]
links:
  - {ends: [a:eth0, b:eth0], shape: {rate: 100mbit, burst: 100, limit: 64k}}
`
	if _, err := ParseTopology([]byte(bad)); err == nil || !strings.Contains(err.Error(), "burst") {
		t.Errorf("a 100-byte burst: %v", err)
	}
}

// TestStarShapedUp (root): the star comes up with a TBF on both ends of
// every host link, and the qdisc reader sees them.
func TestStarShapedUp(t *testing.T) {
	tb := TestUp(t, "lft", "star4", Options{})
	r, err := NewQdiscReader(tb.NS("sw"), []string{"p1", "p2", "p3", "p4", "pfm"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := make([]QdiscStat, 5)
	if err := WaitPing(t.Context(), tb.NS("h1"), StarAddr(2)); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(st); err != nil {
		t.Fatal(err)
	}
	for _, s := range st[:4] {
		if s.Kind != "tbf" || s.SentBytes == 0 {
			t.Errorf("%s: no TBF bytes sent after pings: %+v", s.Dev, s)
		}
	}
	if st[4].Kind == "tbf" {
		t.Errorf("pfm should be unshaped: %+v", st[4])
	}
}

// TestTBFRateKeepsQueue: a switch port's TBF slowed to 1 Mbit/s holds
// what a burst of 40 datagrams leaves beyond its bucket; its rate changed
// back to the line rate while they wait, every datagram arrives and the qdisc drops none: a rate change
// keeps the queue (tdma oscillate changes it every phase).
func TestTBFRateKeepsQueue(t *testing.T) {
	tb := TestUp(t, "lft", "star4", Options{})
	if err := WaitPing(t.Context(), tb.NS("h1"), StarAddr(2)); err != nil {
		t.Fatal(err)
	}
	shape := Shape{Rate: 100e6, Burst: 16 << 10, Limit: 64 << 10}
	tr, err := NewTBFRate(tb.NS("sw"), "p2", shape)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r, err := NewQdiscReader(tb.NS("sw"), []string{"p2"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := make([]QdiscStat, 1)
	var rx *net.UDPConn
	if err := Do(tb.NS("h2"), func() (err error) {
		rx, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(StarAddr(2)), Port: 5999})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := tr.Set(1e6); err != nil {
		t.Fatal(err)
	}
	if err := r.Read(st); err != nil {
		t.Fatal(err)
	}
	drops0 := st[0].Drops
	const n = 40
	if err := Do(tb.NS("h1"), func() error {
		c, err := net.Dial("udp4", StarAddr(2)+":5999")
		if err != nil {
			return err
		}
		defer c.Close()
		for i := 0; i < n; i++ {
			if _, err := c.Write(make([]byte, 1000)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := r.Read(st); err != nil {
		t.Fatal(err)
	}
	if st[0].BacklogPkts < 10 {
		t.Fatalf("p2 at 1 Mbit/s holds %d datagrams of %d: the test builds no queue", st[0].BacklogPkts, n)
	}
	if err := tr.Set(shape.Rate); err != nil {
		t.Fatal(err)
	}
	got := 0
	rx.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2048)
	for got < n {
		if _, err := rx.Read(buf); err != nil {
			break
		}
		got++
	}
	if err := r.Read(st); err != nil {
		t.Fatal(err)
	}
	if got != n || st[0].Drops != drops0 {
		t.Fatalf("%d of %d datagrams arrived, the qdisc dropped %d: the rate change lost the queue", got, n, st[0].Drops-drops0)
	}
}
