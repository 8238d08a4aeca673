package netns

import (
	"reflect"
	"strings"
	"testing"
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
