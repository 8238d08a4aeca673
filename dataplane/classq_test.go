package dataplane

import (
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/pfc"
)

func TestClassify(t *testing.T) {
	frame := func(et uint16, b14, b15 byte) []byte {
		b := make([]byte, 60)
		b[12], b[13], b[14], b[15] = byte(et>>8), byte(et), b14, b15
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want int
	}{
		{"vlan pcp 5", frame(0x8100, 5<<5|0x01, 0x23), 5},
		{"qinq pcp 3", frame(0x88A8, 3<<5, 0), 3},
		{"ipv4 dscp 46 (EF)", frame(0x0800, 0x45, 46<<2), 5},
		{"ipv4 dscp 0", frame(0x0800, 0x45, 0), 0},
		{"ipv6 tc 0xb8 (EF)", frame(0x86DD, 0x6b, 0x80), 5},
		{"arp", frame(0x0806, 0xff, 0xff), 0},
		{"runt", []byte{1, 2, 3}, 0},
		{"vlan runt", frame(0x8100, 0, 0)[:15], 0},
	} {
		if got := Classify(tc.b); got != tc.want {
			t.Errorf("%s: class %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Strict priority between classes, FIFO within one, paused classes skipped
// until their pause ends, and one limit over all classes.
func TestClassQueuesStrictPriorityAndPause(t *testing.T) {
	c := newClassQueues(4)
	c.push(0, link.Frame{H: 10}, 0)
	c.push(3, link.Frame{H: 30}, 0)
	c.push(3, link.Frame{H: 31}, 0)
	c.push(7, link.Frame{H: 70}, 0)
	if c.room() != 0 {
		t.Fatalf("room %d after 4 frames with limit 4", c.room())
	}
	// Pause class 7 for 1000 quanta at 10 Gbit/s (51.2 µs) and class 0.
	var q [pfc.NumClasses]uint16
	q[7], q[0] = 1000, 1000
	f := pfc.NewPFC([6]byte{}, 1<<7|1<<0, q)
	if err := c.Gate.Apply(&f, 0, pfc.Speed10G); err != nil {
		t.Fatal(err)
	}
	var order []int
	for {
		class, ok := c.Head(100)
		if !ok {
			break
		}
		order = append(order, int(c.Front(class).H))
		c.Pop(class)
	}
	if len(order) != 2 || order[0] != 30 || order[1] != 31 {
		t.Fatalf("while 7 and 0 are paused, sent %v, want [30 31]", order)
	}
	end, ok := c.Gate.NextResume(100)
	if !ok {
		t.Fatal("no resume time while paused")
	}
	class, ok := c.Head(end)
	if !ok || class != 7 {
		t.Fatalf("after the pause ends, head is class %d (%v), want 7", class, ok)
	}
	c.Pop(7)
	class, _ = c.Head(end)
	if class != 0 || c.Front(0).H != 10 {
		t.Fatalf("last frame: class %d frame %d", class, c.Front(0).H)
	}
	c.Pop(0)
	if !c.Empty() || c.room() != 4 {
		t.Fatalf("not empty after popping everything: n %d", c.n)
	}
}

// dropOldest keeps at most keep frames of each class, and of those only
// the ones that arrived at or after since (a link session's keptSince: the
// second half of the outage).
func TestClassQueuesDropOldestByCountAndAge(t *testing.T) {
	c := newClassQueues(16)
	for i := range 6 {
		c.push(2, link.Frame{H: link.Handle(20 + i)}, int64(i*100))
	}
	c.push(6, link.Frame{H: 60}, 50)
	c.push(6, link.Frame{H: 61}, 450)
	var dropped []int
	release := func(h uint64) { dropped = append(dropped, int(h)) }
	// Down since 0, now 800: frames from 400 on may stay, at most 3 a class.
	since := int64(400)
	// Class 2: the count leaves 23..25, the age 24..25; class 6: 61.
	if n := c.DropOldest(3, since, release); n != 5 || !slices.Equal(dropped, []int{20, 21, 22, 23, 60}) {
		t.Fatalf("dropped %d frames %v, want [20 21 22 23 60]", n, dropped)
	}
	var left []int
	for class := range 8 {
		for !c.q[class].empty() {
			left = append(left, int(c.Front(class).H))
			c.Pop(class)
		}
	}
	if want := []int{24, 25, 61}; !slices.Equal(left, want) {
		t.Fatalf("kept %v, want %v", left, want)
	}
}
