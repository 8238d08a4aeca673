package host

import (
	"context"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/fm"
	"github.com/linkfabric/linkfabric/tdma/gate"
)

func starHosts(n int) []netip.Addr {
	h := make([]netip.Addr, n)
	for i := range h {
		h[i] = netip.MustParseAddr(netns.StarAddr(i + 1))
	}
	return h
}

// runStar runs an FM and n host agents in-process on tb until every agent
// ends (or timeout), and returns their stats.
func runStar(t *testing.T, tb *netns.Testbed, n int, mode gate.Discipline, work Workload, drop float64, timeout time.Duration) (fm.Stats, []Stats) {
	return runStarWith(t, tb, n, mode, func(int) Workload { return work }, drop, false, timeout, nil)
}

// runStarWith is runStar with host i's workload work(i); with nfqueue the
// agents gate kernel traffic, and during (if set) runs while they do, after
// which they are stopped.
func runStarWith(t *testing.T, tb *netns.Testbed, n int, mode gate.Discipline, work func(i int) Workload, drop float64, nfqueue bool, timeout time.Duration, during func(context.Context)) (fm.Stats, []Stats) {
	t.Helper()
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), n+3)) // the FM's clock thread keeps its P while it sleeps
	hosts := starHosts(n)
	var m *fm.Manager
	err := netns.Do(tb.NS("fm"), func() error {
		var err error
		m, err = fm.New(fm.Config{Dev: "eth0", Hosts: hosts, SlotLen: 5 * time.Millisecond, Guard: 500 * time.Microsecond,
			Mode: mode, Scheduler: "rotor", LinkSpeed: 100e6, RT: 60})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	agents := make([]*Agent, n)
	for i := range agents {
		err := netns.Do(tb.NS("h"+string(rune('1'+i))), func() error {
			var err error
			agents[i], err = New(Config{Dev: "eth0", Index: i, Hosts: hosts, FM: netip.MustParseAddr(netns.StarFMAddr),
				Mode: mode, Rate: 100e6, RT: 50, DropControl: drop, Seed: 1, Work: work(i), ExitAfter: 30 * time.Millisecond,
				NFQ: nfqueue, Queue: 3})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		ns := tb.NS("h" + string(rune('1'+i)))
		defer netns.Do(ns, func() error { agents[i].Close(); return nil }) // nfqueue rules live in ns
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	fctx, fcancel := context.WithCancel(ctx)
	var fst fm.Stats
	var ferr error
	fdone := make(chan struct{})
	go func() { fst, ferr = m.Run(fctx); close(fdone) }()
	st := make([]Stats, n)
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if st[i], err = a.Run(ctx); err != nil {
				t.Errorf("host %d: %v", i, err)
			}
		}()
	}
	if during != nil {
		during(ctx)
		cancel()
	}
	wg.Wait()
	fcancel()
	<-fdone
	if ferr != nil {
		t.Fatal(ferr)
	}
	return fst, st
}

// TestStarRawShuffle (root): an FM and 4 raw-mode agents carry a 512 KiB
// shuffle over the shaped star (100 Mbit/s, 64 KB switch buffers, 5 ms
// slots): every flow completes, no frame is lost, no host sends beyond its
// window (overrun) and no switch port drops. Collisions (a frame received
// after its window's end) are logged, not asserted: they measure how late
// a busy machine schedules the agents (the FM's lateness is logged beside
// them), which `linkfabric tdma shuffle` reports as a figure.
func TestStarRawShuffle(t *testing.T) {
	tb := netns.TestUp(t, "lft", "star4", netns.Options{})
	const size = 512 << 10
	qr, err := netns.NewQdiscReader(tb.NS("sw"), []string{"p1", "p2", "p3", "p4"})
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Close()
	fst, st := runStar(t, tb, 4, gate.Lease, Workload{Kind: "shuffle", Bytes: size}, 0, 20*time.Second)
	t.Logf("fm: rounds %d slots %d idle %d frames %d late p99 %.0f µs, d_est %v", fst.Rounds, fst.Slots, fst.IdleSlots, fst.Frames, fst.LateP99us, fst.DelayEstNs)
	for i, s := range st {
		t.Logf("h%d: sent %v recv %v frames %d lost %d coll %d windows %v late opens %d ctl rx %d lost %d txshort %d bad %d", i+1, s.SentBytes, s.RecvBytes, s.RecvFrames, s.RecvLost, s.Collisions, s.ClassWindows, s.LateOpens, s.G.CtlRx, s.G.CtlLost, s.TxShort, s.BadData)
		for j, b := range s.RecvBytes {
			if j != i && (b != size || s.RecvDone[j] == 0) {
				t.Errorf("h%d received %d of %d bytes from h%d", i+1, b, size, j+1)
			}
		}
		if s.RecvLost != 0 || s.G.OverrunBytes != 0 {
			t.Errorf("h%d: %d frames lost, %d overrun bytes", i+1, s.RecvLost, s.G.OverrunBytes)
		}
	}
	q := make([]netns.QdiscStat, 4)
	if err := qr.Read(q); err != nil {
		t.Fatal(err)
	}
	for _, p := range q {
		if p.Drops != 0 {
			t.Errorf("switch port %s dropped %d frames", p.Dev, p.Drops)
		}
	}
}

// TestStarNFQueueHoldsTCP (root): nfqueue-mode agents on star4 gate a
// kernel TCP flow h1 → h2 (one slot in three is h1 → h2's): the flow is
// held (packets wait in the queue) and released by verdicts, completes,
// and the queue drops nothing; TCP retransmits at most one segment.
func TestStarNFQueueHoldsTCP(t *testing.T) {
	if _, err := exec.LookPath("iptables-legacy"); err != nil {
		t.Skip("iptables-legacy not on PATH (scripts/deps.sh installs the iptables package)")
	}
	tb := netns.TestUp(t, "lft", "star4", netns.Options{})
	// The gate holds h1 → h2 for two slots of three (10 ms): longer than
	// TCP's tail-loss-probe timeout, whose probes count as retransmissions
	// (measured: 1 in about 3 runs). Losses, not probes, are the question.
	if err := netns.Sysctl(tb.NS("h1"), "net.ipv4.tcp_early_retrans", "0"); err != nil {
		t.Fatal(err)
	}
	const size = 2 << 20
	var got int64
	var retrans0, retrans1 uint64
	var ext0, ext1 map[string]uint64
	flow := func(ctx context.Context) {
		var ln net.Listener
		var conn net.Conn
		err := netns.Do(tb.NS("h2"), func() (err error) {
			ln, err = net.Listen("tcp4", netns.StarAddr(2)+":5201")
			return err
		})
		if err != nil {
			t.Error(err)
			return
		}
		defer ln.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			got, _ = io.Copy(io.Discard, c)
			c.Close()
		}()
		time.Sleep(200 * time.Millisecond) // the FM's first round
		retrans0, _ = netns.SNMP(tb.NS("h1"), "Tcp", "RetransSegs")
		ext0, _ = netns.NetstatAll(tb.NS("h1"))
		if err := netns.Do(tb.NS("h1"), func() (err error) {
			conn, err = net.DialTimeout("tcp4", netns.StarAddr(2)+":5201", 5*time.Second)
			return err
		}); err != nil {
			t.Error(err)
			return
		}
		if _, err := conn.Write(make([]byte, size)); err != nil {
			t.Error(err)
		}
		conn.Close()
		select {
		case <-done:
		case <-ctx.Done():
		}
		retrans1, _ = netns.SNMP(tb.NS("h1"), "Tcp", "RetransSegs")
		ext1, _ = netns.NetstatAll(tb.NS("h1"))
	}
	_, st := runStarWith(t, tb, 4, gate.Lease, func(int) Workload { return Workload{Kind: "none"} }, 0, true, 30*time.Second, flow)
	if got != size {
		t.Errorf("h2 received %d of %d bytes", got, size)
	}
	// One retransmission with no drop anywhere (the queue's counters
	// below) came in 2 of about 45 runs on a quiet machine (with early
	// retransmission off): a segment held in the gate taken for lost, not
	// a loss. It is logged with h1's TcpExt counters that moved, which
	// name its kind; more than one fails.
	if n := retrans1 - retrans0; n > 0 {
		report := t.Logf
		if n > 1 {
			report = t.Errorf
		}
		report("h1 retransmitted %d TCP segments", n)
		for k, v := range ext1 {
			if v != ext0[k] {
				t.Logf("  h1 %s +%d", k, v-ext0[k])
			}
		}
	}
	s := st[0]
	t.Logf("h1: released %d packets (%v bytes to each host), held at most %d, windows %v, queue dropped %d, user dropped %d",
		s.NFQReleased, s.SentBytes, s.NFQHeldMax, s.ClassWindows, s.NFQQueueDropped, s.NFQUserDropped)
	if s.NFQHeldMax == 0 || s.SentBytes[1] < size {
		t.Errorf("h1's gate held %d packets at most and released %d bytes to h2: the flow did not go through the queue", s.NFQHeldMax, s.SentBytes[1])
	}
	for i, s := range st {
		if s.NFQQueueDropped != 0 || s.NFQUserDropped != 0 {
			t.Errorf("h%d: queue dropped %d, user dropped %d", i+1, s.NFQQueueDropped, s.NFQUserDropped)
		}
	}
}

// sleepFor is a during function for runStarWith: the agents run for d.
func sleepFor(d time.Duration) func(context.Context) {
	return func(ctx context.Context) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
}

// TestStarRPCAndRR (root): the §6.2 and §6.3 workloads once each, small.
// RPC: h1 and h2 send bulk into h3 while h4 pings h3 (three requests a
// batch, at 0, 1 and 2 ms into the window); every request is answered,
// samples exist, and an answer crosses in the request's slot (RTT below one
// slot). rr: blocks of half a slot's capacity from every host to every
// other; every host receives from every other and sends whole blocks.
func TestStarRPCAndRR(t *testing.T) {
	tb := netns.TestUp(t, "lfrr", "star4", netns.Options{})
	rpc := func(i int) Workload {
		switch i {
		case 0, 1:
			return Workload{Kind: "bulk", Dst: 2}
		case 2:
			return Workload{Kind: "pong", Dst: 3}
		}
		return Workload{Kind: "ping", Dst: 2, PingEvery: 60 * time.Millisecond,
			PingOffsets: []time.Duration{0, time.Millisecond, 2 * time.Millisecond}}
	}
	t0 := time.Now()
	fst, st := runStarWith(t, tb, 4, gate.Lease, rpc, 0, false, 20*time.Second, sleepFor(1500*time.Millisecond))
	t.Logf("rpc run %v; fm: rounds %d slots %d idle %d frames %d late p99 %.0f µs", time.Since(t0), fst.Rounds, fst.Slots, fst.IdleSlots, fst.Frames, fst.LateP99us)
	for i, s := range st {
		t.Logf("h%d: sent %v recv %v windows %v ctl rx %d reports %d schedules %d", i+1, s.SentBytes, s.RecvBytes, s.ClassWindows, s.G.CtlRx, s.Reports, s.Schedules)
	}
	p := st[3].Ping
	t.Logf("h4 ping: batches %d windows %d sent %d answered %d (late %d), missed offsets %d, RTT p50/p95/max %.0f/%.0f/%.0f µs, wait p50 %.0f µs; h3 served %d deferred %d",
		p.Batches, p.Windows, p.Sent, p.Answered, p.AnsweredLate, p.Missed, p.RTTP50us, p.RTTP95us, p.RTTMaxus, p.WaitP50us, st[2].Ping.Served, st[2].Ping.Deferred)
	if p.Sent == 0 || p.Answered != p.Sent || len(p.Samples) != int(p.Answered) {
		t.Errorf("h4 sent %d requests, %d answered, %d samples", p.Sent, p.Answered, len(p.Samples))
	}
	if p.RTTP50us <= 0 || p.RTTP50us >= 5000 {
		t.Errorf("RTT p50 %.0f µs: want an answer within the request's 5 ms slot", p.RTTP50us)
	}
	for _, src := range []int{0, 1} {
		if st[2].RecvBytes[src] == 0 {
			t.Errorf("h3 received nothing from h%d's bulk", src+1)
		}
	}
	const block = 28 << 10 // half of a 5 ms slot (500 µs guard) at 100 Mbit/s
	_, st = runStarWith(t, tb, 4, gate.Lease, func(int) Workload { return Workload{Kind: "rr", Bytes: block} }, 0, false, 20*time.Second, sleepFor(1500*time.Millisecond))
	for i, s := range st {
		t.Logf("h%d rr: blocks %d sent %v received %v lost %d", i+1, s.RRBlocks, s.SentBytes, s.RecvBytes, s.RecvLost)
		if s.RRBlocks == 0 {
			t.Errorf("h%d sent no whole block", i+1)
		}
		for j, b := range s.RecvBytes {
			if j != i && b == 0 {
				t.Errorf("h%d received nothing from h%d", i+1, j+1)
			}
		}
	}
}
