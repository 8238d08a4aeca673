package host

import (
	"math"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/internal/wanterr"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/sched"
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
		wanterr.Check(t, tc.w.check(3, 4, tc.nfq), tc.want, "%+v", tc.w)
	}
}

// TestPongReservation: the pong server reports one byte to its client,
// below any slot's worth, so the FM plans it one slot every round; the
// client reports its waiting batch's requests.
func TestPongReservation(t *testing.T) {
	var p pingState
	p.init(&Workload{Kind: "pong", Dst: 3})
	if d := p.demand(3); d != 1 {
		t.Errorf("the reservation reported as %d B, want 1", d)
	}
	if p.demand(1) != 0 {
		t.Errorf("demand to a host it does not reserve for")
	}
	var c pingState
	c.init(&Workload{Kind: "ping", Dst: 2, PingEvery: time.Millisecond, PingOffsets: []time.Duration{0, time.Millisecond}})
	if c.demand(2) != 0 {
		t.Error("a client with no batch waiting reports demand")
	}
	c.pending = true
	if d := c.demand(2); d != 2*pingFrame {
		t.Errorf("a waiting batch of 2: demand %d, want %d", d, 2*pingFrame)
	}
}

// TestPongDeferralCause: an answer the server defers is told apart by its
// cause as it is sent: the request came before the server's window back to
// the client in its slot opened (staggered windows: answered at its open,
// in that slot), after that window closed (its agent read it late; how
// late is kept), its slot had no such window (the round gave the answer
// none there), or its round's schedule is no longer held (none counted).
func TestPongDeferralCause(t *testing.T) {
	g, err := gate.New(gate.Config{Mode: gate.Lease, Rate: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: Config{Index: 2}, g: g}
	r := &rawState{}
	r.ping.init(&Workload{Kind: "pong", Dst: 3})
	var s wire.Schedule
	s.Host, s.Round, s.NHosts, s.NSlots = 2, 7, 4, 3
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	for i := range s.Slot {
		s.Slot[i] = -1
	}
	s.ClassMap[3], s.Slot[1] = 0, 0 // the server's window to the client: slot 1 only
	g.OnSchedule(&s)
	const now = int64(50_000_000)
	// slot 1, before the window back opened; slot 1, read long after; slot
	// 2: no window of the server's to the client; round 3: its schedule is
	// not held (long gone)
	for _, c := range []struct {
		rx          int64
		round, slot uint32
	}{{now - 10_000, 7, 1}, {now - 3_000_000, 7, 1}, {now - 100_000, 7, 2}, {now - 90_000_000, 3, 1}} {
		a.onRPC(now, c.rx, r, 3, &wire.DataHdr{Src: 3, Dst: 2, Flags: wire.DataPing, Round: c.round, Slot: uint8(c.slot)})
	}
	p := &r.ping
	for i, w := range []gate.Window{{Dst: 3, Round: 7, Slot: 1}, {Dst: 3, Round: 8, Slot: 1}, {Dst: 3, Round: 8, Slot: 1}, {Dst: 3, Round: 8, Slot: 1}} {
		p.deferredSent(&p.q[i], w)
	}
	if s := &p.s; s.Deferred != 4 || s.DeferredToOpen != 1 || s.DeferredInSlot != 1 || s.DeferredNoSlot != 1 || s.DeferredReadLateMaxus != 3000 {
		t.Errorf("deferred %d, of them before the server's window back opened %d, after it closed %d (read up to %.0f µs late), in a slot without %d: want 4, 1, 1 (3000 µs), 1",
			s.Deferred, s.DeferredToOpen, s.DeferredInSlot, s.DeferredReadLateMaxus, s.DeferredNoSlot)
	}
}

// TestPongPairedAcrossRounds: the RPC setup's rounds as the FM plans them
// (sched.Planner: each host's latest report, made as a new schedule
// reaches it, less what every round since carries), with each scheduler:
// h1 and h2 send endless bulk into the server h3, the client h4 has a
// batch waiting every other round. Every round has the server's answer
// slot, and every request's slot holds the server's window back to the
// client, however the rounds before were built.
func TestPongPairedAcrossRounds(t *testing.T) {
	const N, server, client, maxSlots = 4, 2, 3, 16
	const slotCap, slotLen = 60_000, int64(5_000_000)
	for _, name := range []string{"rotor", "wrr", "bvn"} {
		sch, err := sched.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		plan := sched.Planner{Sched: sch, SlotCap: slotCap, MaxSlots: maxSlots, SlotLen: slotLen, Guard: 300_000}
		var p pingState
		p.init(&Workload{Kind: "pong", Dst: client})
		rep, at := sched.NewDemand(N), make([]int64, N)
		rep.Bytes[0][server], rep.Bytes[1][server] = 1<<50, 1<<50
		now, running := int64(0), slotLen
		for id := uint32(1); id <= 40; id++ {
			ping := id%2 == 0
			d := sched.NewDemand(N)
			for i := range d.Bytes {
				copy(d.Bytes[i], rep.Bytes[i])
			}
			r := plan.Next(id, now, d, at)
			asked, answers := false, 0
			for k, m := range r.Slots {
				if m[server] == client {
					answers++
				}
				if m[client] == server {
					asked = true
					if m[server] != client {
						t.Errorf("%s, round %d: the request's slot %d has no window of the server's back to the client: %v", name, id, k, r.Slots)
					}
				}
			}
			if id > 1 && answers == 0 {
				t.Errorf("%s, round %d: no answer slot: %v", name, id, r.Slots)
			}
			if ping && id > 2 && !asked {
				t.Errorf("%s, round %d: a batch waits and the round has no slot for it: %v", name, id, r.Slots)
			}
			// The schedule reaches the hosts, which report.
			for i := range at {
				at[i] = now + 1000
			}
			rep.Bytes[server][client] = p.demand(client)
			rep.Bytes[client][server] = 0
			if !ping {
				rep.Bytes[client][server] = 9 * pingFrame // the next round's batch
			}
			now, running = now+running, int64(len(r.Slots))*slotLen
		}
	}
}

// TestPingHeldBack (root: it sends on lo): a client that has seen the
// server answer in 0.8 ms does not send a request with less of its window
// to the server left than that (the server's window back closes with it,
// and its answer would wait a round); the request goes at once in the next
// window to the server, and the batch is complete.
func TestPingHeldBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: sends on lo")
	}
	data, err := rawio.Open("lo", wire.DataEtherType, false)
	if err != nil {
		t.Fatal(err)
	}
	defer data.Close()
	g, err := gate.New(gate.Config{Mode: gate.Lease, Rate: 100_000_000, Overhead: 24, MinFrame: 60})
	if err != nil {
		t.Fatal(err)
	}
	udp, err := rawio.ListenUDP(0)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	a := &Agent{cfg: Config{Index: 3, Hosts: make([]netip.Addr, 4), FM: netip.MustParseAddr("127.0.0.1")}, g: g, ctl: data, data: data, udp: udp, macs: make([][6]byte, 4)}
	r := &rawState{remain: make([]int64, 4)}
	r.ret.init(4)
	r.queued = func(j int) int64 { return a.queued(r, j) }
	r.ping.init(&Workload{Kind: "ping", Dst: 2, PingEvery: 100 * time.Millisecond, PingOffsets: []time.Duration{0, 3 * time.Millisecond}})
	p := &r.ping
	const open, turn = int64(4_650_000), int64(800_000)
	t0 := clock.Now()
	win := func(round uint32, at int64) (gate.Window, uint64) {
		return gate.Window{Class: 1, Dst: 2, OpenAt: at, Close: at + open, Round: round, Slot: 3, SlotLen: 5_000_000, Guard: 300_000},
			uint64(round)<<8 | 3
	}
	// two batches answered in slot in 0.8 ms teach the client the server's turnaround
	for b := range 2 {
		w, key := win(uint32(1+b), t0+int64(b)*80_000_000)
		p.pending, p.idx, p.issueAt = true, 0, w.OpenAt
		for now := w.OpenAt; now != math.MaxInt64; {
			now = a.sendPings(now, r, w, key)
		}
		for id := p.id - 1; id <= p.id; id++ {
			o := p.out[id%pingOut]
			a.onRPC(o.sentAt+turn+50_000, o.sentAt+turn, r, 2, &wire.DataHdr{Src: 2, Dst: 3, Flags: wire.DataPong, Seq: id})
		}
	}
	if p.s.Sent != 4 || p.s.Answered != 4 {
		t.Fatalf("learning: sent %d, answered %d: want 4, 4", p.s.Sent, p.s.Answered)
	}
	// the third batch: the agent gets to its second request 4.3 ms into
	// the window, 0.35 ms before it closes
	w, key := win(3, t0+160_000_000)
	p.pending, p.idx, p.issueAt = true, 0, w.OpenAt
	if a.sendPings(w.OpenAt, r, w, key) != w.OpenAt+3_000_000 {
		t.Fatal("the first request of the batch did not go at its offset")
	}
	late := w.OpenAt + 4_300_000
	a.sendPings(late, r, w, key)
	if p.s.Sent != 5 {
		t.Errorf("with %d µs of the window left and the server's turnaround %d µs, the request was sent (sent %d, want 5): its answer would wait a round",
			(w.Close-late)/1000, turn/1000, p.s.Sent)
	}
	w2, key2 := win(5, t0+320_000_000)
	a.sendPings(w2.OpenAt, r, w2, key2)
	if p.s.Sent != 6 || p.pending {
		t.Errorf("the next window: sent %d, batch pending %v: want the held request sent at once (6), the batch done", p.s.Sent, p.pending)
	}
}
