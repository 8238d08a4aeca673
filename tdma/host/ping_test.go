package host

import (
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/tdma/wire"
)

func TestWorkloadCheck(t *testing.T) {
	for _, tc := range []struct {
		w    Workload
		nfq  bool
		want string // "" valid, else a word of the error
	}{
		{Workload{Kind: "rr", Bytes: 1000}, false, ""},
		{Workload{Kind: "rr"}, false, "block size"},
		{Workload{Kind: "ping", Dst: 2, PingEvery: time.Millisecond}, false, ""},
		{Workload{Kind: "ping", Dst: 2}, false, "--ping-every"},
		{Workload{Kind: "ping", Dst: 3, PingEvery: time.Millisecond}, false, "another host"}, // itself
		{Workload{Kind: "ping", Dst: 2, PingEvery: time.Millisecond, PingOffsets: []time.Duration{-1}}, false, "negative"},
		{Workload{Kind: "pong", Dst: 9}, false, "another host"},
		{Workload{Kind: "bulk", Dst: 0}, true, "--gate raw"},
		{Workload{Kind: "none"}, true, ""},
		{Workload{Kind: "udp"}, false, "want shuffle"},
	} {
		err := tc.w.check(3, 4, tc.nfq)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.w, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: err %v, want one about %q", tc.w, err, tc.want)
		}
	}
}

// TestPongReservation: the pong server reports one slot a round more than
// the next round books to its client, so the FM (latest report less the
// round before) gives it one slot every round.
func TestPongReservation(t *testing.T) {
	var p pingState
	p.init(&Workload{Kind: "pong", Dst: 3})
	const slotCap = 1000
	var s wire.Schedule
	s.NHosts, s.NSlots = 4, 3
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	s.ClassMap[3] = 1
	s.Slot[0], s.Slot[1], s.Slot[2] = 0, 1, -1
	for booked, slots := range [][]int8{{0, -1, -1}, {0, 1, -1}, {1, 1, 0}} {
		copy(s.Slot[:], slots)
		p.onSchedule(&s)
		d := p.demand(3, slotCap)
		if after := d - int64(booked)*slotCap; after <= 0 || after > slotCap {
			t.Errorf("%d slots booked: reported %d B, %d B after the FM's subtraction: want one slot's worth", booked, d, after)
		}
		if p.demand(1, slotCap) != 0 {
			t.Errorf("demand to a host it does not reserve for")
		}
	}
	var c pingState
	c.init(&Workload{Kind: "ping", Dst: 2, PingEvery: time.Millisecond, PingOffsets: []time.Duration{0, time.Millisecond}})
	if c.demand(2, slotCap) != 0 {
		t.Error("a client with no batch waiting reports demand")
	}
	c.pending = true
	if d := c.demand(2, slotCap); d != 2*pingFrame {
		t.Errorf("a waiting batch of 2: demand %d, want %d", d, 2*pingFrame)
	}
}
