package dataplane_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/netns"
)

// TestWorkersForward: mode forward with two workers per switch delivers
// every datagram of 16 flows once and in order, less those a socket or ring
// at either end counted dropped, and both workers of both switches carried
// frames both ways (the ARP and the echo, and the flows).
func TestWorkersForward(t *testing.T) {
	tb, sw1, sw2 := dataplane.UpWorkersBed(t, dataplane.ModeForward, nil)
	before := endDrops(t, tb, sw1, sw2)
	r := dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, dataplane.WorkerPerFlow, dataplane.WorkerSize, dataplane.WorkerRate)
	assertAccounted(t, r, fmt.Sprintf("%d flows × %d datagrams", dataplane.WorkerFlows, dataplane.WorkerPerFlow), before, endDrops(t, tb, sw1, sw2))
	dataplane.CheckBothWorkers(t, "sw1", sw1, dataplane.PortHost, dataplane.PortLink)
	dataplane.CheckBothWorkers(t, "sw2", sw2, dataplane.PortLink, dataplane.PortHost)
}

// TestWorkersLG: mode lg with two workers per switch, one LinkGuardian
// instance per lane, Bernoulli loss 1 % on sw1→sw2: every datagram of 16
// flows arrives once and in order per flow, both workers carried frames,
// and both lanes detected losses and recovered every one (none given up).
func TestWorkersLG(t *testing.T) {
	tb, sw1, sw2 := dataplane.UpWorkersBed(t, lgpipe.ModeLG, &bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 61}, lgWorkers)
	in0 := socketDrops(t, sw1.Host())
	r := dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, dataplane.WorkerPerFlow, dataplane.WorkerSize, dataplane.WorkerRate)
	missing, dups, ooo, detail := r.Check()
	ingress := socketDrops(t, sw1.Host()) - in0
	t.Logf("%d flows × %d datagrams: %d missing, %d duplicated, %d out of order; %d dropped at sw1's host port sockets (before the link)", dataplane.WorkerFlows, dataplane.WorkerPerFlow, missing, dups, ooo, ingress)
	if missing > int(ingress) || dups > 0 || ooo > 0 {
		for _, l := range detail {
			t.Error(l)
		}
	}
	dataplane.CheckBothWorkers(t, "sw1", sw1, dataplane.PortHost, dataplane.PortLink)
	dataplane.CheckBothWorkers(t, "sw2", sw2, dataplane.PortLink, dataplane.PortHost)
	st, err := sw2.Link().Program().ImpairStats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("impairment on sw2 link0: %+v", st)
	lanes1, lanes2 := lgpipe.LaneStatsOf(sw1), lgpipe.LaneStatsOf(sw2)
	if len(lanes1) != 2 || len(lanes2) != 2 {
		t.Fatalf("LinkGuardian lanes: sw1 %d, sw2 %d; want 2", len(lanes1), len(lanes2))
	}
	for i := range 2 {
		c1, c2 := waitLaneCore(t, lanes1[i]), waitLaneCore(t, lanes2[i])
		rs, ss := c2.Receiver, c1.Sender
		sess1, sess2 := lanes1[i].Session.Snapshot(), lanes2[i].Session.Snapshot()
		t.Logf("lane %d: sw1 sender %+v", i, *ss)
		t.Logf("lane %d: sw2 receiver %+v", i, *rs)
		t.Logf("lane %d: sessions sw1 %s epoch %x, sw2 %s epoch %x; priority lane %v/%v", i, sess1.State, sess1.Epoch, sess2.State, sess2.Epoch, c1.PriorityLane, c2.PriorityLane)
		if sess1.State != "up" || sess2.State != "up" || sess1.Agreed == nil || sess1.Agreed.Lanes != 1 {
			t.Errorf("lane %d: sessions %s/%s, agreed %+v; want up with 1 lane", i, sess1.State, sess2.State, sess1.Agreed)
		}
		if c1.PriorityLane || c2.PriorityLane {
			t.Errorf("lane %d: a priority lane with 2 workers on 2 queues", i)
		}
		if ss.DataSent < dataplane.WorkerFlows*dataplane.WorkerPerFlow/8 {
			t.Errorf("lane %d: sw1 sent %d data frames; the flows did not spread", i, ss.DataSent)
		}
		if rs.LostDetected == 0 || rs.Recovered != rs.LostDetected || rs.AckNoTimeouts != 0 || rs.ForcedSkips != 0 {
			t.Errorf("lane %d: sw2 detected %d lost, recovered %d, gave up %d, skipped %d; want losses, all recovered", i, rs.LostDetected, rs.Recovered, rs.AckNoTimeouts, rs.ForcedSkips)
		}
		if rs.Delivered != ss.DataSent {
			t.Errorf("lane %d: sw2 delivered %d; sw1 sent %d", i, rs.Delivered, ss.DataSent)
		}
	}
}

// waitLaneCore returns a lane's core counters once published and stable
// with every hole settled.
func waitLaneCore(t *testing.T, s *lgpipe.Stats) lgpipe.Core {
	t.Helper()
	var c lgpipe.Core
	for i := 0; i < 80; i++ {
		time.Sleep(25 * time.Millisecond)
		n := s.Core()
		if i > 0 && n.Receiver != nil && c.Receiver != nil && *n.Receiver == *c.Receiver &&
			n.Sender != nil && c.Sender != nil && *n.Sender == *c.Sender && holesSettled(n.Receiver) {
			return n
		}
		c = n
	}
	if c.Receiver == nil || c.Sender == nil {
		t.Fatal("LinkGuardian counters never published")
	}
	return c
}

// TestWorkersLGRestart: lg with two workers per switch; sw2's dataplane is
// replaced by a new one (new epochs) while 16 flows run. Each of sw1's two
// lane sessions sees the peer restart once and comes up again; nothing is
// delivered twice or out of order in any flow across the restart, and
// after it every datagram of a second run arrives (both workers again).
func TestWorkersLGRestart(t *testing.T) {
	tb, sw1, sw2, cfg := dataplane.UpWorkersSwitches(t, lgpipe.ModeLG, nil, lgWorkers)
	restarts := func() (n [2]uint64) {
		for i, s := range lgpipe.LaneStatsOf(sw1.D) {
			n[i] = s.Session.Snapshot().Counters.PeerRestarts
		}
		return n
	}
	before := restarts()
	ran := make(chan *dataplane.FlowRun)
	go func() { ran <- dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, 3000, dataplane.WorkerSize, 16000) }() // 3 s
	time.Sleep(time.Second)
	sw2.Stop(t)
	sw2 = dataplane.StartWatched(t, tb.NS("sw2"), cfg)
	(<-ran).Assert(t, "across the restart", true)
	waitLanesUp(t, sw1, sw2, "restart")
	after := restarts()
	for i := range 2 {
		if after[i]-before[i] != 1 {
			t.Errorf("sw1 lane %d saw %d peer restarts; want 1", i, after[i]-before[i])
		}
	}
	dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, 1000, dataplane.WorkerSize, dataplane.WorkerRate).Assert(t, "after the restart", false)
	for _, w := range sw2.D.Stats().Workers {
		if w.Ports[dataplane.PortHost].TX.Frames < dataplane.WorkerFlows*1000/10 {
			t.Errorf("restarted sw2: worker %d delivered %d frames to host0", w.Worker, w.Ports[dataplane.PortHost].TX.Frames)
		}
	}
}

// TestWorkersLGLinkFlap: lg with two workers per switch; sw1's link port
// goes down for 1 s while 16 flows run. Both workers keep running (each
// finds the port down on its own queue), the port counts one down event,
// nothing is delivered twice or out of order in any flow, both lane
// sessions are up afterwards, and a second run is delivered whole.
func TestWorkersLGLinkFlap(t *testing.T) {
	tb, sw1, sw2, _ := dataplane.UpWorkersSwitches(t, lgpipe.ModeLG, nil, lgWorkers)
	ns1 := tb.NS("sw1")
	ran := make(chan *dataplane.FlowRun)
	go func() { ran <- dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, 3000, dataplane.WorkerSize, 16000) }() // 3 s
	time.Sleep(time.Second)
	ipIn(t, ns1, "link", "set", "link0", "down")
	time.Sleep(time.Second)
	ipIn(t, ns1, "link", "set", "link0", "up")
	(<-ran).Assert(t, "across the flap", true)
	for name, s := range map[string]*dataplane.RunningSwitch{"sw1": sw1, "sw2": sw2} {
		s.CheckRunning(t, name)
	}
	waitLanesUp(t, sw1, sw2, "flap")
	st := sw1.D.Stats()
	t.Logf("sw1 link port: %+v", st.Link)
	if st.Link.DownEvents != 1 || st.Link.DownNs <= 0 || st.Link.Down {
		t.Errorf("sw1 link port: %d down events, down for %v, down now %v; want one event (however many workers found it down), a positive time, up now",
			st.Link.DownEvents, time.Duration(st.Link.DownNs), st.Link.Down)
	}
	before := endDrops(t, tb, sw1.D, sw2.D)
	r := dataplane.UdpFlows(t, tb, dataplane.WorkerFlows, 1000, dataplane.WorkerSize, dataplane.WorkerRate)
	assertAccounted(t, r, "after the flap", before, endDrops(t, tb, sw1.D, sw2.D))
	for i, s := range lgpipe.LaneStatsOf(sw2.D) {
		rs := waitLaneCore(t, s).Receiver
		t.Logf("sw2 lane %d receiver: detected %d lost, recovered %d, gave up %d, skipped %d, delivered %d", i, rs.LostDetected, rs.Recovered, rs.AckNoTimeouts, rs.ForcedSkips, rs.Delivered)
	}
}

// endDrops reads the counters of the places where a datagram h1→h2 can be
// dropped outside the link, which LinkGuardian does not protect: h1's veth
// (sw1's host port did not take the frame), sw1's host-port sockets (RX
// ring full, fill ring empty), sw2's host port (TX ring full; or the
// kernel's, the input backlog of the CPU that sent the frame to h2 full:
// veth counts it on the sending end) and h2's sockets (receive buffer
// full).
func endDrops(t *testing.T, tb *netns.Testbed, sw1, sw2 *dataplane.Dataplane) map[string]uint64 {
	t.Helper()
	veth, err := netns.LinkTxDrops(tb.NS("h1"), "eth0")
	if err != nil {
		t.Fatal(err)
	}
	deliver, err := netns.LinkTxDrops(tb.NS("sw2"), "host0")
	if err != nil {
		t.Fatal(err)
	}
	return map[string]uint64{
		"h1 eth0 TX dropped":                  veth,
		"sw2 host0 TX dropped by the kernel":  deliver,
		"sw1 host0 AF_XDP RX ring full/drops": socketDrops(t, sw1.Host()),
		"sw2 host0 TX dropped":                sw2.Stats().Host.TX.Dropped,
		"h2 UDP RcvbufErrors":                 dataplane.SNMPFields(t, tb.NS("h2"), "Udp", "RcvbufErrors")["RcvbufErrors"],
	}
}

// outsideLink sums what endDrops counted between before and after and
// says where.
func outsideLink(before, after map[string]uint64) (uint64, string) {
	var n uint64
	var where []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		d := after[k] - before[k]
		n += d
		where = append(where, fmt.Sprintf("%s %d", k, d))
	}
	return n, strings.Join(where, ", ")
}

// assertAccounted fails the test for each flow of r (what: which run) with
// a datagram duplicated or out of order, and if more datagrams are missing
// than endDrops counted dropped outside the link between before and after:
// a datagram a socket or ring at either end dropped is not one the link
// lost.
func assertAccounted(t *testing.T, r *dataplane.FlowRun, what string, before, after map[string]uint64) {
	t.Helper()
	missing, dups, ooo, detail := r.Check()
	counted, where := outsideLink(before, after)
	t.Logf("%s: %d missing, %d duplicated, %d out of order; dropped outside the link: %s", what, missing, dups, ooo, where)
	if uint64(missing) > counted || dups > 0 || ooo > 0 {
		t.Errorf("%s: %d missing, %d dropped outside the link", what, missing, counted)
		for _, l := range detail {
			t.Error(l)
		}
	}
}

// TestWorkersMismatchSaid: sw1 runs lg with 2 workers (a session per
// queue), sw2 with 1 (one session, queue 1 its priority lane). sw2 sees two
// peers take turns; it says so, naming --workers, and the link delivers
// nothing rather than anything stale.
func TestWorkersMismatchSaid(t *testing.T) {
	netns.RequireRoot(t)
	tb := netns.TestUp(t, "lfq6", "pair", netns.Options{Forwarding: netns.ForwardingNone, Queues: 2})
	dataplane.StartSwitch(t, tb.NS("sw1"), dataplane.Config{Mode: lgpipe.ModeLG, Workers: 2})
	buf, log := dataplane.NewLogBuffer()
	dataplane.StartSwitch(t, tb.NS("sw2"), dataplane.Config{Mode: lgpipe.ModeLG, Logger: log})
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(buf.String(), "same --workers"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sw2 (1 worker) facing 2 workers did not say so within 5 s:\n%s", buf.String())
		}
	}
	r := dataplane.UdpFlows(t, tb, 4, 100, 200, 2000)
	missing, dups, ooo, _ := r.Check()
	t.Logf("through mismatched ends: %d missing, %d duplicated, %d out of order", missing, dups, ooo)
	if dups > 0 || ooo > 0 {
		t.Errorf("mismatched ends delivered %d duplicates and %d out of order", dups, ooo)
	}
}

// TestWorkersTCP: iperf3 -P 16 h1→h2 through lg with two workers per
// switch and 1 % loss on sw1→sw2 runs to completion, the streams spread
// over both workers (16 streams: h1 hashes each to a queue, and all on one
// has odds 2^-15), and both lanes recovered losses with none given up.
func TestWorkersTCP(t *testing.T) {
	dataplane.RequireIperf3(t)
	tb, sw1, sw2 := dataplane.UpWorkersBed(t, lgpipe.ModeLG, &bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: lgLoss, Seed: 62}, lgWorkers)
	h1, h2 := tb.NS("h1"), tb.NS("h2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dataplane.StartIperfServer(t, ctx, h2, 5306)
	out, err := dataplane.RunIperfClient(ctx, h1, 5306, "-P", "16", "-t", "3", "-i", "0")
	if err != nil {
		t.Fatalf("iperf3 -P 16 through lg with 2 workers: %v\n%s", err, dataplane.LastLines(string(out), 8))
	}
	t.Logf("iperf3 -P 16:\n%s", dataplane.LastLines(string(out), 4))
	for i, d := range []*dataplane.Dataplane{sw1, sw2} {
		for _, w := range d.Stats().Workers {
			in := w.Ports[dataplane.PortHost].RX.Frames
			if i == 1 {
				in = w.Ports[dataplane.PortLink].RX.Frames
			}
			t.Logf("sw%d worker %d: %d frames in", i+1, w.Worker, in)
			if in < 1000 {
				t.Errorf("sw%d worker %d took %d frames in: the 16 streams did not spread over both queues", i+1, w.Worker, in)
			}
		}
	}
	for i, s := range lgpipe.LaneStatsOf(sw2) {
		rs := waitLaneCore(t, s).Receiver
		t.Logf("lane %d: sw2 detected %d lost, recovered %d, gave up %d", i, rs.LostDetected, rs.Recovered, rs.AckNoTimeouts)
		if rs.LostDetected == 0 || rs.Recovered != rs.LostDetected || rs.AckNoTimeouts != 0 {
			t.Errorf("lane %d: sw2 detected %d lost, recovered %d, gave up %d; want losses, all recovered", i, rs.LostDetected, rs.Recovered, rs.AckNoTimeouts)
		}
	}
}

// waitLanesUp waits up to 5 s for all four lane sessions of sw1 and sw2 to
// be up after what happened.
func waitLanesUp(t *testing.T, sw1, sw2 *dataplane.RunningSwitch, what string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		up := 0
		for _, s := range append(lgpipe.LaneStatsOf(sw1.D), lgpipe.LaneStatsOf(sw2.D)...) {
			if s.Session.Snapshot().State == "up" {
				up++
			}
		}
		if up == 4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 lane sessions up 5 s after the %s", up, what)
		}
	}
}

// lgWorkers is the LinkGuardian configuration of the workers' testbed.
func lgWorkers(c *dataplane.Config) {
	*lgpipe.ConfigOf(c) = lgpipe.Config{Copies: 3, AckTimeout: lgAckTimeout}
}
