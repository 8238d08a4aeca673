package dataplane

// Mode cells on veth: in-process dataplanes on the bundle's sw1 and sw2
// (two edges joined by four parallel links) and on fabric3's edges and
// fabric nodes; ping, iperf3 and numbered frames (traffic.Generator/Sink)
// through them, and hostile frames injected on a link port.

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

var bundleLinks = []string{"link0", "link1", "link2", "link3"}

// startCells runs mode cells on host0 (unless hosts is given) and links of
// namespace ns as node id.
func startCells(t *testing.T, ns string, id uint16, hosts, links []string, cc CellsConfig) *runningSwitch {
	t.Helper()
	cc.NodeID = id
	if hosts == nil {
		hosts = []string{"host0"}
	}
	return startWatched(t, ns, Config{Mode: ModeCells, HostPorts: hosts, LinkPorts: links, Cells: cc})
}

// cellsSnap returns d's cells statistics once a publication after now is
// in (the worker publishes every 20 ms).
func cellsSnap(t *testing.T, d *Dataplane) CellsSnapshot {
	t.Helper()
	time.Sleep(3 * time.Duration(cellPublish))
	return d.CellStats().Snapshot()
}

// upBundleCells brings up a bundle testbed with mode cells on sw1 (node 1)
// and sw2 (node 2), and waits until h1 pings h2 through them.
func upBundleCells(t *testing.T, cc CellsConfig) *lgBed {
	t.Helper()
	tb := netns.TestUp(t, "lfc", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	b := &lgBed{tb: tb}
	b.sw1 = startCells(t, tb.NS("sw1"), 1, nil, bundleLinks, cc).d
	b.sw2 = startCells(t, tb.NS("sw2"), 2, nil, bundleLinks, cc).d
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through cells: %v\nsw1 %+v\nsw2 %+v", err, b.sw1.CellStats().Snapshot(), b.sw2.CellStats().Snapshot())
	}
	return b
}

// pings sends n quick pings from ns to addr and fails unless all return.
func pings(t *testing.T, ns, addr string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := netns.Command(ctx, ns, "ping", "-c", fmt.Sprint(n), "-i", "0.01", "-q", addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 0% packet loss") {
		t.Fatalf("%d pings %s→%s: %v\n%s", n, ns, addr, err, out)
	}
}

// iperfTCP runs iperf3 TCP from client to server (at addr) for secs
// seconds and returns the receiver's throughput in bit/s.
func iperfTCP(t *testing.T, client, server, addr string, port int, secs int) float64 {
	t.Helper()
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs+30)*time.Second)
	defer cancel()
	p := fmt.Sprint(port)
	srv := netns.Command(ctx, server, "iperf3", "-s", "-1", "-p", p)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	var out []byte
	var err error
	for i := 0; i < 30; i++ { // until the server listens (iperf3 -J may exit 0 on an error)
		out, err = netns.Command(ctx, client, "iperf3", "-c", addr, "-p", p, "-t", fmt.Sprint(secs), "-J", "--connect-timeout", "3000").CombinedOutput()
		if !strings.Contains(string(out), "Connection refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("iperf3 -t %d %s→%s: %v\n%s", secs, client, addr, err, lastLines(string(out), 20))
	}
	var r struct {
		End struct {
			SumSent struct {
				Retransmits int `json:"retransmits"`
			} `json:"sum_sent"`
			SumReceived struct {
				Bytes float64 `json:"bytes"`
				BPS   float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("iperf3 JSON: %v\n%s", err, lastLines(string(out), 20))
	}
	t.Logf("iperf3 TCP %s→%s %d s: %.0f Mbit/s received (%.0f MB), %d retransmits", client, addr, secs,
		r.End.SumReceived.BPS/1e6, r.End.SumReceived.Bytes/1e6, r.End.SumSent.Retransmits)
	if r.End.SumReceived.Bytes == 0 {
		t.Logf("iperf3 output:\n%s", out)
	}
	return r.End.SumReceived.BPS
}

// linkBalance returns max/mean of the cell bytes sent per link of s.
func linkBalance(s CellsSnapshot) (ratio float64, bytes []uint64) {
	var sum, most uint64
	for _, l := range s.Links {
		bytes = append(bytes, l.TxBytes)
		sum += l.TxBytes
		most = max(most, l.TxBytes)
	}
	if sum == 0 {
		return 0, bytes
	}
	return float64(most) * float64(len(s.Links)) / float64(sum), bytes
}

// checkCellsClean fails the test if a node of a clean run counted
// malformed frames, leaked a frame, or lost one inside the fabric. (VOQ
// drops are the ingress edge's buffer overflowing under TCP: its loss
// signal, as at a switch.)
func checkCellsClean(t *testing.T, name string, s CellsSnapshot) {
	t.Helper()
	if s.Malformed != 0 || s.FramesHeld != 0 || s.HopDrops != 0 {
		t.Errorf("%s: malformed %d, frames held %d, hop drops %d; want 0", name, s.Malformed, s.FramesHeld, s.HopDrops)
	}
	if s.Node.NoRoute != 0 || s.Node.AllocFail != 0 || s.ReasmDiscards != 0 || s.ReasmTimeouts != 0 {
		t.Errorf("%s: no route %d, alloc failures %d, reassembly discarded %d records and skipped %d holes",
			name, s.Node.NoRoute, s.Node.AllocFail, s.ReasmDiscards, s.ReasmTimeouts)
	}
}

// bundleCells: ping, iperf3 TCP for 3 s and numbered UDP frames from h1
// to h2 through two cell edges over the bundle; every frame the edges took
// arrives once and in order, and with perm the links carry equal bytes.
func bundleCells(t *testing.T, cc CellsConfig) {
	b := upBundleCells(t, cc)
	h1, h2 := b.tb.NS("h1"), b.tb.NS("h2")
	pings(t, h1, "10.0.0.2", 20)
	if bps := iperfTCP(t, h1, h2, "10.0.0.2", 5299, 3); bps <= 0 {
		t.Errorf("iperf3 TCP h1→h2 through cells: %.0f bit/s", bps)
	}
	before := cellsSnap(t, b.sw1)
	r := b.send(t, 50_000, 500, 25_000)
	if r.Other != 0 {
		t.Logf("note: h2's sink saw %d frames besides the stream (h1's own multicast, flooded)", r.Other)
		r.Other = 0
	}
	checkDelivery(t, r, true)
	s1, s2 := cellsSnap(t, b.sw1), cellsSnap(t, b.sw2)
	st := b.sw1.Stats()
	t.Logf("max poll gap: sw1 %v, sw2 %v", time.Duration(s1.MaxPollGap), time.Duration(s2.MaxPollGap))
	t.Logf("sw1 cells: %+v", s1)
	t.Logf("sw2 cells: %+v", s2)
	checkCellsClean(t, "sw1", s1)
	checkCellsClean(t, "sw2", s2)
	if d := s1.Node.VOQDrops - before.Node.VOQDrops; d != 0 {
		t.Errorf("sw1 dropped %d numbered frames at its VOQ (25k frames/s of 500 B is far below the links' rate)", d)
	}
	if s1.Credits != !cc.NoCredits || s1.Packing != !cc.NoPacking {
		t.Errorf("sw1 reports credits %v packing %v; configured %+v", s1.Credits, s1.Packing, cc)
	}
	if cc.NoCredits && (s1.CreditRequested != 0 || s1.Node.CreditReqTx != 0) || !cc.NoCredits && s1.CreditGranted == 0 {
		t.Errorf("sw1 credits: requested %d, granted %d, requests sent %d", s1.CreditRequested, s1.CreditGranted, s1.Node.CreditReqTx)
	}
	ratio, bytes := linkBalance(s1)
	t.Logf("sw1 bytes per link %v: max/mean %.4f", bytes, ratio)
	if cc.Spray == "perm" && ratio > 1.05 {
		t.Errorf("perm: bytes per link %v, max/mean %.3f; want ≤ 1.05", bytes, ratio)
	}
	// The ports' counters agree with the node's (read up to 20 ms later:
	// REACH and credit refreshes go on).
	for k, l := range s1.Links {
		p := st.Ports[b.sw1.Ports().Links[k]]
		if n := p.TX.Frames + p.TX.Dropped; n < l.TxFrames || n > l.TxFrames+100 {
			t.Errorf("sw1 %s: the port sent %d (+%d dropped) frames, the node %d", l.Name, p.TX.Frames, p.TX.Dropped, l.TxFrames)
		}
		if p.TX.Dropped != 0 {
			t.Logf("sw1 %s: %d frames found the TX ring full", l.Name, p.TX.Dropped)
		}
	}
}

func TestCellsBundle(t *testing.T) {
	bundleCells(t, CellsConfig{Spray: "perm"})
}

func TestCellsBundlePushUnpacked(t *testing.T) {
	bundleCells(t, CellsConfig{Spray: "perm", NoCredits: true, NoPacking: true})
}
