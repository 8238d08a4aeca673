package cellsexp

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
)

func TestCellsNodeArgs(t *testing.T) {
	topo, err := fabric3PushPull(100e6, 55e6, 512<<10)
	if err != nil {
		t.Fatal(err)
	}
	tb := &netns.Testbed{Prefix: "lfvq", Topology: topo}
	args, err := CellsNodeArgs(tb, "e3", 3, "--cells-credits=false")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"--netns lfvqe3", "--cells-node-id 3", "--host-port host0,host1", "--link-port up0,up1,up2,up3",
		"host0=100M", "host1=100M", "up0=55M", "up3=55M", "host0=512KiB", "--cells-credits=false"} {
		if !strings.Contains(got, want) {
			t.Errorf("e3's arguments %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "up0=256") {
		t.Errorf("a link without a buffer got one: %q", got)
	}
	args, err = CellsNodeArgs(tb, "f1", 4)
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(args, " ")
	if strings.Contains(got, "--host-port") || !strings.Contains(got, "e3a=55M") || !strings.Contains(got, "e1a=500M") {
		t.Errorf("f1's arguments %q: want no host port, e3a at 55M, e1a at the preset's 500M", got)
	}
	if err := SetCellsLinkShape(topo, "e3", "nosuch", 1e6, 0); err == nil {
		t.Error("SetCellsLinkShape matched no link and did not say so")
	}
}

func TestFlowStats(t *testing.T) {
	arr := []bed.UDPArrival{
		{T: 1e6, Flow: 0, Seq: 0, Len: 100}, {T: 2e6, Flow: 1, Seq: 0, Len: 100}, {T: 3e6, Flow: 0, Seq: 2, Len: 100},
		{T: 4e6, Flow: 0, Seq: 1, Len: 100}, {T: 5e6, Flow: 0, Seq: 2, Len: 100}, {T: 9e6, Flow: 0, Seq: 7, Len: 100},
	}
	st := bed.FlowStats(arr, 0, "a", 5, 0)
	if st.Received != 3 || st.Lost != 2 || st.OutOfOrder != 1 || st.Duplicates != 1 || st.FirstMs != 1 || st.LastMs != 9 {
		t.Errorf("flow 0: %+v; want 3 received (0, 1, 2), 2 lost (3, 4), 1 out of order (1 after 2), 1 duplicate (2 again), 1..9 ms", st)
	}
	if st := bed.FlowStats(arr, 1, "b", 1, 0); st.Received != 1 || st.Lost != 0 || st.OutOfOrder != 0 {
		t.Errorf("flow 1: %+v", st)
	}
	// Flow 0's datagrams at 3, 4 and 5 ms: 3 × (100 + overhead) bytes.
	if b, want := bed.WireBits(arr, 1, 3e6, 6e6), 3*float64(100+bed.UDPWireOverhead)*8; b != want {
		t.Errorf("WireBits = %v, want %v", b, want)
	}
	if b := bed.WireBits(arr, 2, 3e6, 6e6); b != 0 {
		t.Errorf("WireBits of flow 1 in [3, 6) ms = %v, want 0", b)
	}
	if f, l := bed.ArrivalSpan(arr, 3); f != 1e6 || l != 9e6 {
		t.Errorf("ArrivalSpan = %d, %d", f, l)
	}
	if s := bed.UDPSeries(arr, []string{"a", "b"}, 0, 5*time.Millisecond); len(s[0]) != 2 || len(s[1]) != 1 || s[0][0] <= s[0][1] {
		t.Errorf("UDPSeries = %v: want flow a in two 5 ms bins, more in the first, flow b in one", s)
	}
}

func TestShareDeviation(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{[]float64{1, 1}, 0}, {[]float64{3, 1}, 0.5}, {[]float64{1, 1, 4}, 1}, {[]float64{0, 0}, 1}} {
		if got := bed.ShareDeviation(c.v); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ShareDeviation(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestCellsDropsBetween(t *testing.T) {
	mk := func(hostTx, hostRx, linkTx, linkRx, voq, reasm, hop uint64) *CellsNodeStats {
		s := &CellsNodeStats{Ports: []CellsPortStats{{Name: "host0", Role: "host"}, {Name: "up0", Role: "link"}}}
		s.Ports[0].TX.Dropped, s.Ports[0].RxSocketDrops = hostTx, hostRx
		s.Ports[1].TX.Dropped, s.Ports[1].RxSocketDrops = linkTx, linkRx
		s.Cells.Node.VOQDrops, s.Cells.ReasmDiscards, s.Cells.Node.HopDrops = voq, reasm, hop
		return s
	}
	d := CellsDropsBetween(mk(1, 2, 3, 4, 5, 6, 7), mk(11, 22, 33, 44, 55, 66, 77))
	want := CellsDrops{Link: 30 + 40, VOQ: 50, Reasm: 60, Other: 70, Egress: 10, Ingress: 20}
	if d != want {
		t.Errorf("drops %+v, want %+v", d, want)
	}
	if d.Fabric() != 70+50+60+70 {
		t.Errorf("Fabric() = %d", d.Fabric())
	}
}

func TestCellsConfigNormalize(t *testing.T) {
	var c CellsIncastConfig
	if err := c.Normalize(); err != nil || c.PortRate != 100e6 || !slices.Equal(c.Arms, CellsArms) || c.Burst != 3<<20 {
		t.Errorf("incast defaults: %+v, %v", c, err)
	}
	bedtest.RefusesAll(t, []CellsIncastConfig{{Arms: []string{"pull"}}, {Transports: []string{"sctp"}}, {Burst: 1000}, {Duration: time.Second}, {PortBuffer: 1024}}...)
	var p CellsPushPullConfig
	if err := p.Normalize(); err != nil || p.FabricRate != 55e6 {
		t.Errorf("pushpull defaults: %+v, %v", p, err)
	}
	// Links into e3 that cannot carry A and B, or that carry all three flows.
	for _, fr := range []netns.BitRate{40e6, 80e6} {
		bad := CellsPushPullConfig{FabricRate: fr}
		if err := bad.Normalize(); err == nil || !strings.Contains(err.Error(), "--fabric-rate") {
			t.Errorf("pushpull fabric rate %s: %v", fr, err)
		}
	}
}

// TestCellsIncastReport runs `cells incast` on tiny parameters: every arm
// and transport gives a run with two sources' shares, the UDP sources'
// datagrams accounted for, and a summary per arm and transport. The
// figures themselves are the command's to measure.
func TestCellsIncastReport(t *testing.T) {
	netns.RequireRoot(t)
	e := bedtest.Env(t, "lfvi")
	cfg := CellsIncastConfig{Burst: 256 << 10, Duration: 2 * time.Second}
	ctx := bedtest.Context(t, 3*time.Minute)
	res := bedtest.Run(t, ctx, CellsIncast, e, cfg)
	if len(res.Runs) != len(CellsArms)*len(CellsTransports) {
		t.Fatalf("%d runs, want %d", len(res.Runs), len(CellsArms)*len(CellsTransports))
	}
	for _, r := range res.Runs {
		if len(r.Shares) != 2 || math.Abs(r.Shares[0]+r.Shares[1]-1) > 1e-9 {
			t.Errorf("%s %s: shares %v", r.Arm, r.Transport, r.Shares)
		}
		if !(r.PortBusy > 0 && r.PortBusy < 1.5) { // something arrived, and not faster than the port
			t.Errorf("%s %s: port busy %v", r.Arm, r.Transport, r.PortBusy)
		}
		if len(r.DropsByNode) != 5 || len(r.StalledMs) != 5 {
			t.Errorf("%s %s: drops of %d switches, stalls of %d; want 5", r.Arm, r.Transport, len(r.DropsByNode), len(r.StalledMs))
		}
		if r.Transport == "udp" {
			for _, f := range r.Flows {
				want := uint64((cfg.Burst + 1399) / 1400)
				if f.Sent != want || f.Received+f.Lost != f.Sent {
					t.Errorf("%s udp flow %s: %+v; want %d sent, some received", r.Arm, f.Name, f, want)
				}
			}
		} else if len(r.TCPBps) != 2 || r.TCPBps[0] <= 0 || r.TCPBps[1] <= 0 {
			t.Errorf("%s tcp: %v bit/s", r.Arm, r.TCPBps)
		}
	}
	for _, k := range []string{"credits_udp_port_busy", "push_tcp_egress_drops", "credits_tcp_share_dev", "pass"} {
		if _, ok := res.Summary[k]; !ok {
			t.Errorf("summary lacks %s: %v", k, res.Summary)
		}
	}
	if len(res.series) == 0 {
		t.Error("no time series for the CSV")
	}
}

// TestCellsPushPullReport runs `cells pushpull` on tiny parameters: both
// arms give B's and A's throughput, the three flows' datagrams accounted
// for, and the summary's figures.
func TestCellsPushPullReport(t *testing.T) {
	netns.RequireRoot(t)
	e := bedtest.Env(t, "lfvp")
	ctx := bedtest.Context(t, 3*time.Minute)
	res := bedtest.Run(t, ctx, CellsPushPull, e, CellsPushPullConfig{Duration: time.Second})
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	for _, r := range res.Runs {
		if len(r.Flows) != 3 || !(r.B >= 0 && r.B < 1.5) || !(r.A >= 0 && r.A < 1.5) {
			t.Errorf("%s: B %v, A %v, flows %+v", r.Arm, r.B, r.A, r.Flows)
		}
		var got uint64
		for _, f := range r.Flows {
			got += f.Received
			if f.Sent == 0 || f.Received+f.Lost != f.Sent {
				t.Errorf("%s flow %s: %+v", r.Arm, f.Name, f)
			}
		}
		if got == 0 {
			t.Errorf("%s: nothing arrived", r.Arm)
		}
	}
	for _, k := range []string{"credits_b_throughput", "push_b_throughput", "push_b_predicted", "pass"} {
		if _, ok := res.Summary[k]; !ok {
			t.Errorf("summary lacks %s", k)
		}
	}
}

// TestCellsDropsHostQueue: deliveries an edge drops because its host
// port's TX ring and the queue in front of it are full are egress drops,
// read from the statistics document as the dataplane serves it.
func TestCellsDropsHostQueue(t *testing.T) {
	doc := func(queueDrops, txDropped int) map[string]json.RawMessage {
		return map[string]json.RawMessage{
			"dataplane": json.RawMessage(fmt.Sprintf(`{"ports":[{"name":"host0","role":"host","tx":{"frames":9,"dropped":%d}}]}`, txDropped)),
			"cells":     json.RawMessage(fmt.Sprintf(`{"role":"edge","hosts":[{"name":"host0","queued":3,"queue_drops":%d}]}`, queueDrops)),
		}
	}
	before, err := parseCellsStats("sw2", doc(5, 1))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseCellsStats("sw2", doc(36244, 2))
	if err != nil {
		t.Fatal(err)
	}
	if d := CellsDropsBetween(before, after); d.Egress != 36239+1 || d.Fabric() != 0 {
		t.Errorf("drops %+v, want egress %d (the host queue's 36239 and the port's 1), none in the fabric", d, 36239+1)
	}
}
