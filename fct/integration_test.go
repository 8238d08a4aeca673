package fct

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestIntegrationBuiltin(t *testing.T) {
	h1, h2 := testPair(t)
	for _, ns := range []string{h1, h2} {
		rep, err := ApplyTCPSettings(ns, "eth0", "10.99.0.0/24", PaperTCPSettings("cubic"))
		t.Logf("%s", rep)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatal("settings not applied")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		size  int64
		flows int
	}{{143, 2000}, {24387, 200}} {
		t0 := time.Now()
		flows, err := RunBuiltin(ctx, BuiltinConfig{
			Arm: "noloss", ServerNS: h2, ClientNS: h1, ServerAddr: "10.99.0.2:0",
			Sizes: []int64{tc.size}, FlowsPerSize: tc.flows, Warmup: 10,
			CongestionControl: "cubic", Timeout: 5 * time.Second,
		})
		el := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		if len(flows) != tc.flows {
			t.Fatalf("got %d flows, want %d", len(flows), tc.flows)
		}
		sums := Summarize(flows)
		if len(sums) != 1 {
			t.Fatalf("summaries: %+v", sums)
		}
		s := sums[0]
		t.Logf("builtin %d B: %d flows in %v (%.0f flows/s): p50=%v p90=%v p99=%v p99.9=%v max=%v mean=%v retransmitted=%d",
			tc.size, len(flows), el.Round(time.Millisecond), float64(len(flows))/el.Seconds(),
			s.P50, s.P90, s.P99, s.P999, s.Max, s.Mean, s.Retransmitted)
		if s.Count != tc.flows || s.Failed != 0 {
			t.Fatalf("count=%d failed=%d", s.Count, s.Failed)
		}
		if !(s.P50 > 0 && s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.P999 && s.P999 <= s.P9999 && s.P9999 <= s.Max) {
			t.Fatalf("percentiles not ordered: %+v", s)
		}
	}
	out, _ := exec.Command("ip", "netns", "exec", h1, "ss", "-tan").Output()
	if n := strings.Count(string(out), "TIME-WAIT"); n > 0 {
		t.Errorf("%d TIME-WAIT sockets left in client namespace by the builtin tool", n)
	}

	t.Run("iperf", func(t *testing.T) {
		for _, bin := range []string{"iperf", "tcpdump"} {
			if _, err := exec.LookPath(bin); err != nil {
				t.Skipf("%s not installed", bin)
			}
		}
		if out, _ := exec.Command("iperf", "-v").CombinedOutput(); !strings.Contains(string(out), "iperf version 2") {
			t.Skipf("iperf is not iperf 2: %s", out)
		}
		pcap := filepath.Join(t.TempDir(), "sender.pcap")
		if d := os.Getenv("FCT_KEEP_PCAP"); d != "" {
			pcap = d
		}
		res, err := RunIperf(ctx, IperfConfig{
			Arm: "noloss", ServerNS: h2, ClientNS: h1, ServerIP: "10.99.0.2", Port: 5399,
			Sizes: []int64{143}, FlowsPerSize: 20, CongestionControl: "cubic", PcapPath: pcap,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Flows) != 20 || len(res.Conns) != 20 {
			t.Fatalf("flows=%d conns=%d, want 20 each; first flow %+v", len(res.Flows), len(res.Conns), res.Flows[0])
		}
		for _, f := range res.Flows {
			if f.Failed || f.FCT <= 0 {
				t.Fatalf("flow %+v", f)
			}
		}
		s := Summarize(res.Flows)[0]
		t.Logf("iperf 143 B: %d flows p50=%v p90=%v max=%v (capture dropped %d)", s.Count, s.P50, s.P90, s.Max, res.CaptureDropped)
	})
}
