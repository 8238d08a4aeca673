package cellsexp

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/netns"
)

// A packed record costs its share of full cells, an unpacked one whole
// cells (a short one padded to the minimum frame), forward the frame.
func TestPackComputed(t *testing.T) {
	per := float64(cellify.CellPayloadOffset + linkcrc.TrailerLen)
	for _, c := range []struct{ frame, cell int }{{60, 256}, {1496, 256}, {1496, 1486}, {508, 512}} {
		rec := float64(c.frame + cellify.RecordHeaderLen + 1)
		f, b := PackComputed(PackPacked, c.frame, c.cell)
		if f != rec/float64(c.cell) || math.Abs(b-(rec+f*per)) > 1e-9 {
			t.Errorf("packed %d B in %d-byte cells: %v frames %v bytes", c.frame, c.cell, f, b)
		}
		uf, ub := PackComputed(PackUnpacked, c.frame, c.cell)
		if uf != math.Ceil(rec/float64(c.cell)) || ub < rec+uf*per || ub < b {
			t.Errorf("unpacked %d B in %d-byte cells: %v frames %v bytes (packed %v)", c.frame, c.cell, uf, ub, b)
		}
		if ff, fb := PackComputed(PackForward, c.frame, c.cell); ff != 1 || fb != float64(c.frame) {
			t.Errorf("forward %d B: %v frames %v bytes", c.frame, ff, fb)
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// comm may hold spaces and parentheses; utime and stime are fields 14, 15.
	line := "4242 (link (fabric) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 75 0 0 20 0 9 0 1234 0 0"
	got, err := bed.ParseProcStatCPU(line)
	if err != nil || got != 2250*time.Millisecond {
		t.Fatalf("got %v, %v; want 2.25s (225 ticks)", got, err)
	}
	if _, err := bed.ParseProcStatCPU("4242 (x) S 1"); err == nil {
		t.Fatal("a short line parsed")
	}
}

func TestMaxMean(t *testing.T) {
	if bed.MaxMean(nil) != 0 || bed.MaxMean([]float64{0, 0}) != 0 || bed.MaxMean([]float64{1, 1, 1, 1}) != 1 || bed.MaxMean([]float64{3, 1, 1, 3}) != 1.5 {
		t.Fatal("MaxMean")
	}
}

// joinFloats gives the progress lines' and tables' lists: MB per link,
// link shares, incast shares.
func TestJoinFloats(t *testing.T) {
	for _, c := range []struct {
		v      []float64
		div    float64
		f, sep string
		want   string
	}{
		{[]float64{1.25e6, 3e6}, 1e6, "%.1f", " / ", "1.2 / 3.0"},
		{[]float64{0.5, 0.256}, 1, "%.2f", " ", "0.50 0.26"},
		{[]float64{0.3333, 0.6667}, 1, "%.3f", "/", "0.333/0.667"},
		{nil, 1, "%.3f", "/", ""},
	} {
		if got := joinFloats(c.v, c.div, c.f, c.sep); got != c.want {
			t.Errorf("joinFloats(%v, %g, %q, %q) = %q, want %q", c.v, c.div, c.f, c.sep, got, c.want)
		}
	}
}

// The balance and elephants results give the machine, their length and
// the links at the top level of their JSON, and a table column per link.
func TestSprayResults(t *testing.T) {
	sr := sprayResult{RunInfo: report.RunInfo{Kernel: "k", CPUs: 2}, Seconds: 3, Links: []string{"link0", "link1"}}
	load := loadSample{LinkBytes: []float64{1e6, 2e6}, LinkFrames: []float64{1, 2}}
	for _, c := range []struct {
		res    interface{ Text() string }
		header string
	}{
		{&CellsBalanceResult{sprayResult: sr, Arms: []BalanceArm{{Spray: "perm", Load: load}}},
			"spray link0 MB link1 MB max/mean Gbit/s TCP retrans"},
		{&CellsElephantsResult{sprayResult: sr, Trials: []ElephantTrial{{Spray: "perm", Trial: 1, Load: load, LinkUtil: []float64{0.5, 0.5}}}},
			"spray trial link0 link1 links used aggregate goodput Mbit/s TCP retrans"},
	} {
		b, err := json.Marshal(c.res)
		var doc map[string]any
		if err != nil || json.Unmarshal(b, &doc) != nil || doc["kernel"] != "k" || doc["cpus"] != 2.0 || doc["seconds"] != 3.0 || len(doc["links"].([]any)) != 2 {
			t.Errorf("%T: JSON %s (%v)", c.res, b, err)
		}
		if text := c.res.Text(); !slices.ContainsFunc(strings.Split(text, "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == c.header }) {
			t.Errorf("%T: no header %q in\n%s", c.res, c.header, text)
		}
	}
}

// Each cells experiment on the bundle, at tiny sizes: its report has its
// rows and summary, and the figures are sane (links carried bytes, frames
// were delivered, flows completed). Performance targets are the
// commands' to report, not asserted.
func TestCellsBundleExperiments(t *testing.T) {
	netns.RequireRoot(t)
	ctx := bedtest.Context(t, 5*time.Minute)
	env := func() *bed.Env {
		return bedtest.Env(t, "lfu")
	}

	t.Run("pack", func(t *testing.T) {
		if err := bed.CheckTrafgen(); err != nil {
			t.Skip(err)
		}
		res := bedtest.Run(t, ctx, CellsPack, env(), CellsPackConfig{PacketSizes: []int{64}, CellSizes: []int{0},
			Duration: 500 * time.Millisecond, CPUDuration: 500 * time.Millisecond, CPURate: 20000})
		if len(res.Rows) != 3 || len(res.CPU) != 3 {
			t.Fatalf("%d rows and %d CPU arms, want 3 (forward, packed, unpacked) and 3 (forward, forward-afxdp, packed)", len(res.Rows), len(res.CPU))
		}
		for _, r := range res.Rows {
			if r.DeliveredPPS <= 0 || r.MeasuredBytes <= 0 || r.MeasuredFrames <= 0 || r.ComputedBytes <= 0 {
				t.Errorf("%s: delivered %v pps, %v frames and %v bytes per packet measured, %v computed", r.Arm, r.DeliveredPPS, r.MeasuredFrames, r.MeasuredBytes, r.ComputedBytes)
			}
			if r.Arm != PackForward && r.CellSize < 256 {
				t.Errorf("%s: cell size %d: the MTU's should be reported", r.Arm, r.CellSize)
			}
		}
		s := res.Summary
		// Forward's frames cross in the kernel (its dataplane CPU may be 0);
		// forward-afxdp's and the cells' cross the workers.
		if s.CPUNsForward < 0 || s.CPUNsCells <= 0 || s.CPURatio <= 0 || s.CPUNsForwardAfxdp <= 0 || s.SatForwardPPS <= 0 || s.SatCellsPPS <= 0 {
			t.Errorf("summary %+v", s)
		}
	})
	t.Run("balance", func(t *testing.T) {
		res := bedtest.Run(t, ctx, CellsBalance, env(), CellsBalanceConfig{Sprays: []string{"perm", "hash"}, Flows: 2, Duration: time.Second})
		if len(res.Arms) != 2 || len(res.Links) != 4 {
			t.Fatalf("%d arms over %d links, want 2 over 4", len(res.Arms), len(res.Links))
		}
		for i, b := range res.Arms[0].Load.LinkBytes {
			if b <= 0 {
				t.Errorf("perm: link %s sent nothing", res.Links[i])
			}
		}
		for _, k := range []string{"perm_max_mean", "hash_max_mean", "perm_ok"} {
			if _, ok := res.Summary[k]; !ok {
				t.Errorf("summary lacks %s", k)
			}
		}
		if v := res.Summary["perm_max_mean"].(float64); v < 1 {
			t.Errorf("perm max/mean %v < 1", v)
		}
	})
	t.Run("elephants", func(t *testing.T) {
		res := bedtest.Run(t, ctx, CellsElephants, env(), CellsElephantsConfig{Sprays: []string{"perm"}, Trials: 1, Duration: time.Second, LinkRate: 50e6})
		if len(res.Trials) != 1 || len(res.Trials[0].LinkUtil) != 4 {
			t.Fatalf("trials %+v", res.Trials)
		}
		tr := res.Trials[0]
		if tr.Aggregate <= 0 || tr.Load.Bps <= 0 || tr.Effective <= 0 {
			t.Errorf("trial: aggregate %v, %v bit/s, effective links %v", tr.Aggregate, tr.Load.Bps, tr.Effective)
		}
		// The links are rate-limited: none can carry much more than its rate.
		for i, u := range tr.LinkUtil {
			if u > 1.2 {
				t.Errorf("link %s at %.2f of its rate", res.Links[i], u)
			}
		}
		for _, k := range []string{"perm_aggregate_share", "hash_expected_links_used", "perm_ok"} {
			if _, ok := res.Summary[k]; !ok {
				t.Errorf("summary lacks %s", k)
			}
		}
	})
	t.Run("latency", func(t *testing.T) {
		res := bedtest.Run(t, ctx, CellsLatency, env(), CellsLatencyConfig{Arms: []string{"forward", "cells"}, Flows: 20, Rounds: 2, Warmup: 2})
		if len(res.FCT.Summaries) != 2 {
			t.Fatalf("%d summaries, want 2", len(res.FCT.Summaries))
		}
		for _, s := range res.FCT.Summaries {
			if s.Count+s.Failed != 20 || s.Count == 0 || s.P50 <= 0 {
				t.Errorf("%s: %d completed, %d failed, p50 %v", s.Arm, s.Count, s.Failed, s.P50)
			}
		}
		if len(res.Rounds) != 2 || len(res.Rounds[1].P50us) != 2 || res.Rounds[1].Order[0] != "cells" {
			t.Errorf("rounds %+v: want 2, each with both arms' p50, the second in reverse order", res.Rounds)
		}
		for _, k := range []string{"forward_p50_us", "cells_p50_us", "cells_p50_ratio", "cells_p50_ratio_median", "cells_ok"} {
			if _, ok := res.Summary[k]; !ok {
				t.Errorf("summary lacks %s", k)
			}
		}
		// The cells edges' workers run during the flows (credit, REACH);
		// forward's may sleep throughout 22 flows.
		if d := res.DP["cells"]; d.CPUus <= 0 || d.Runs <= 0 {
			t.Errorf("cells' dataplanes %+v over the flows: want time on a CPU and runs", d)
		}
		if _, ok := res.DP["forward"]; !ok || len(res.Rounds[0].DP) != 2 {
			t.Errorf("dataplanes %+v, first round's %+v: want both arms", res.DP, res.Rounds[0].DP)
		}
	})
}

// A schedstat line is ns on a CPU, ns waiting, times run; a difference of
// two readings never goes below 0 (a thread that exited between them).
func TestParseSchedstat(t *testing.T) {
	got, err := bed.ParseSchedstat("1500000 250000 42\n")
	if err != nil || got != (bed.SchedTotals{Run: 1500 * time.Microsecond, Wait: 250 * time.Microsecond, Runs: 42}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	for _, bad := range []string{"", "1 2", "1 x 3"} {
		if _, err := bed.ParseSchedstat(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	d := bed.SchedTotals{Run: time.Millisecond, Runs: 3}.Sub(bed.SchedTotals{Run: 2 * time.Millisecond, Wait: time.Microsecond, Runs: 5})
	if d != (bed.SchedTotals{}) {
		t.Errorf("smaller minus larger: %+v, want zeros", d)
	}
	if l := latencyDP(bed.SchedTotals{Run: 35 * time.Millisecond, Wait: 40 * time.Millisecond, Runs: 1400}, 1000); l != (LatencyDP{CPUus: 35, WaitUs: 40, Runs: 1.4}) {
		t.Errorf("per flow: %+v", l)
	}
}

// forward-afxdp runs forward with every frame through the worker, and the
// summary gives cells' p50 against it beside the ratio to forward.
func TestCellsLatencyAfxdpArm(t *testing.T) {
	var c CellsLatencyConfig
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if r := c.bedRun("forward-afxdp"); r.Mode != "forward" || len(r.Args) != 2 || r.Args[1] != "afxdp" {
		t.Fatalf("forward-afxdp runs %+v", r)
	}
	if r := c.bedRun("forward"); r.Mode != "forward" || len(r.Args) != 0 {
		t.Fatalf("forward runs %+v", r)
	}
	var flows []fct.Flow
	for i, arm := range []string{"forward", "forward-afxdp", "cells"} {
		for j := 0; j < 5; j++ {
			flows = append(flows, fct.Flow{Arm: arm, Size: 143, FCT: time.Duration(100*(i+1)) * time.Microsecond})
		}
	}
	r := &CellsLatencyResult{Config: c}
	r.FCT = fct.NewResults(flows, "forward")
	s := latencySummary(r, "forward")
	if s["cells_p50_ratio"] != 3.0 || s["cells_p50_ratio_afxdp"] != 1.5 || s["cells_ok"] != false {
		t.Fatalf("summary %v", s)
	}
}

// With rounds, the summary gives each arm's spread over the rounds and
// the median of the rounds' ratios, which the verdict is taken on: rounds
// at different loads mix into the pooled p50s (here 1.30× where no round
// is above it) but not into a round's own ratio.
func TestCellsLatencyRounds(t *testing.T) {
	c := CellsLatencyConfig{Arms: []string{"forward", "cells"}, Flows: 6, Rounds: 3}
	if err := c.Normalize(); err != nil {
		t.Fatal(err)
	}
	if got := roundOrder(c.Arms, 1); got[0] != "cells" || got[1] != "forward" {
		t.Fatalf("round 2 runs %v, want the arms reversed", got)
	}
	c.Arms = append(c.Arms, "forward-afxdp")
	r := &CellsLatencyResult{Config: c, Load: []float64{1, 2, 3}}
	var flows []fct.Flow
	for i, p := range [][2]float64{{100, 130}, {300, 330}, {50, 59}} {
		l := LatencyRound{Order: roundOrder(c.Arms, i), P50us: map[string]float64{"forward": p[0], "cells": p[1], "forward-afxdp": p[1] / 2},
			Ratio: map[string]float64{"forward": 1, "cells": p[1] / p[0], "forward-afxdp": p[1] / p[0] / 2}}
		r.Rounds = append(r.Rounds, l)
		for j := 0; j < 2; j++ {
			flows = append(flows, fct.Flow{Arm: "forward", Size: 143, FCT: time.Duration(p[0]) * time.Microsecond},
				fct.Flow{Arm: "cells", Size: 143, FCT: time.Duration(p[1]) * time.Microsecond},
				fct.Flow{Arm: "forward-afxdp", Size: 143, FCT: time.Duration(p[1]*500) * time.Nanosecond})
		}
	}
	r.FCT = fct.NewResults(flows, "forward")
	s := latencySummary(r, "forward")
	want := map[string]float64{"cells_p50_ratio_median": 1.18, "cells_p50_ratio_min": 1.1, "cells_p50_ratio_max": 1.3, "cells_p50_us_min": 59, "cells_p50_us_max": 330, "forward_p50_us_max": 300, "cells_p50_ratio": 1.3, "cells_p50_ratio_afxdp_median": 2}
	for k, v := range want {
		if got, _ := s[k].(float64); math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, s[k], v)
		}
	}
	if s["cells_ok"] != true {
		t.Errorf("verdict %v: want it taken on the median", s["cells_ok"])
	}
	if _, ok := s["forward_p50_ratio_median"]; ok {
		t.Error("the reference has a ratio to itself")
	}
	r.Summary = s
	r.DP = map[string]LatencyDP{"forward": {CPUus: 3.5, WaitUs: 1, Runs: 0.1}, "cells": {CPUus: 35, WaitUs: 40, Runs: 1.4}}
	if txt := r.Text(); !strings.Contains(txt, "in 3 interleaved rounds") || !strings.Contains(txt, "cells p50 over forward's: median 1.18× of 3 rounds (1.10-1.30)") ||
		!strings.Contains(txt, "  cells           35.0 µs    40.0 µs   1.40\n") {
		t.Errorf("text:\n%s", txt)
	}
	c.Flows = 2
	if err := c.Normalize(); err == nil {
		t.Error("2 flows in 3 rounds accepted")
	}
}

// TestPackPathBetween: sw1's host port drops are the ingress's, sw2's
// egress drops the egress's, VOQ drops apart from the rest of the fabric;
// a forward arm (no cells statistics) has the ingress, its link ports'
// drops on both switches as the fabric's and sw2's host port transmit
// drops as the egress's.
func TestPackPathBetween(t *testing.T) {
	node := func(voq, reasm, hostQ uint64) *CellsNodeStats {
		s := &CellsNodeStats{Ports: []CellsPortStats{{Name: "host0", Role: "host"}}}
		s.Cells.Node.VOQDrops, s.Cells.ReasmDiscards = voq, reasm
		s.Cells.Hosts = []CellsHostStats{{QueueDrops: hostQ}}
		return s
	}
	before := map[string]packStat{"sw1": {polls: 1, hostRx: 10, cells: node(5, 0, 0)}, "sw2": {polls: 2, hostRx: 7, cells: node(0, 1, 3)}}
	after := map[string]packStat{"sw1": {polls: 11, hostRx: 110, cells: node(55, 0, 0)}, "sw2": {polls: 22, hostRx: 77, cells: node(0, 4, 33)}}
	p := packPathBetween(before, after)
	if p.Ingress != 100 || p.VOQ != 50 || p.Fabric != 3 || p.Egress != 30 || p.Sleeps["sw1"] != 10 || p.Sleeps["sw2"] != 20 {
		t.Errorf("cells: %+v", p)
	}
	for sw, s := range after {
		s.cells = nil
		after[sw] = s
	}
	if p := packPathBetween(before, after); p.Ingress != 100 || p.VOQ+p.Fabric+p.Egress != 0 {
		t.Errorf("forward without drops on the way: %+v", p)
	}
	// A forward arm: sw2's link port socket dropped 24 (fill ring empty),
	// sw1's TX ring refused 2; sw2's host port dropped 5, sw1's 9 (the
	// other way).
	for sw, n := range map[string][2]uint64{"sw1": {2, 9}, "sw2": {24, 5}} {
		s := after[sw]
		s.linkDrops, s.hostTx = n[0], n[1]
		after[sw] = s
	}
	if p := packPathBetween(before, after); p.Ingress != 100 || p.VOQ != 0 || p.Fabric != 26 || p.Egress != 5 {
		t.Errorf("forward: %+v", p)
	}
}

// TestCellsDropsCountHeldFloods: floods a converging edge kept and then
// dropped (cellify's FloodHeldDrop) are drops inside the fabric like the
// other flood drops, read from the node's stats by its field name.
func TestCellsDropsCountHeldFloods(t *testing.T) {
	var before, after CellsNodeStats
	if err := json.Unmarshal([]byte(`{"cells":{"node":{"FloodDrop":1,"FloodHeldDrop":2}}}`), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"cells":{"node":{"FloodDrop":1,"FloodHeldDrop":5}}}`), &after); err != nil {
		t.Fatal(err)
	}
	if d := CellsDropsBetween(&before, &after); d.Other != 3 || d.Fabric() != 3 {
		t.Fatalf("drops %+v: want 3 in Other, 3 in the fabric", d)
	}
}
