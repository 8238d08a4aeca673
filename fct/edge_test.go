package fct

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestIntegrationEdgeCases(t *testing.T) {
	h1, h2 := testPair(t)
	avail, err := AvailableCongestionControl(h1)
	if err != nil || !slices.Contains(avail, "reno") {
		t.Fatalf("available CC %v, %v", avail, err)
	}
	cc := "bbr"
	if !slices.Contains(avail, cc) {
		cc = "reno"
	}
	base := BuiltinConfig{Arm: "x", ServerNS: h2, ClientNS: h1, ServerAddr: "10.99.0.2:0", Timeout: 2 * time.Second}

	t.Run("concurrency", func(t *testing.T) {
		cfg := base
		cfg.Sizes, cfg.FlowsPerSize, cfg.Concurrency, cfg.CongestionControl = []int64{143, 100000}, 300, 4, cc
		calls, last := 0, 0
		cfg.Progress = func(done, total int) { calls++; last = done; _ = total }
		flows, err := RunBuiltin(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(flows) != 600 || calls != 600 || last != 600 {
			t.Fatalf("flows=%d progress calls=%d last=%d", len(flows), calls, last)
		}
		for i, f := range flows {
			if f.Failed || f.FCT <= 0 || f.ID != i {
				t.Fatalf("flow %d: %+v", i, f)
			}
		}
		if flows[0].Size != 143 || flows[599].Size != 100000 {
			t.Fatal("sizes out of order")
		}
	})

	t.Run("bad congestion control", func(t *testing.T) {
		cfg := base
		cfg.Sizes, cfg.FlowsPerSize, cfg.CongestionControl = []int64{143}, 1, "nonexistentcc"
		if _, err := RunBuiltin(context.Background(), cfg); err == nil {
			t.Fatal("want error")
		}
	})

	t.Run("cancel", func(t *testing.T) {
		cfg := base
		cfg.Sizes, cfg.FlowsPerSize = []int64{143}, 100000
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		flows, err := RunBuiltin(ctx, cfg)
		if !errors.Is(err, context.DeadlineExceeded) || len(flows) == 0 || time.Since(t0) > 3*time.Second {
			t.Fatalf("err=%v flows=%d after %v", err, len(flows), time.Since(t0))
		}
		for _, f := range flows {
			if f.Failed {
				t.Fatalf("cancelled run recorded a failed flow: %+v", f)
			}
		}
	})

	t.Run("timeout", func(t *testing.T) {
		// The receiver's interface down: h1's SYNs go nowhere.
		run(t, "ip", "-n", h2, "link", "set", "eth0", "down")
		defer run(t, "ip", "-n", h2, "link", "set", "eth0", "up")
		cfg := base
		cfg.Sizes, cfg.FlowsPerSize, cfg.Timeout = []int64{143}, 3, 200*time.Millisecond
		t0 := time.Now()
		flows, err := RunBuiltin(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(flows) != 3 || time.Since(t0) > 3*time.Second {
			t.Fatalf("flows=%d after %v", len(flows), time.Since(t0))
		}
		for _, f := range flows {
			if !f.Failed || f.Err == "" {
				t.Fatalf("flow should have failed: %+v", f)
			}
		}
		s := Summarize(flows)[0]
		if s.Count != 0 || s.Failed != 3 {
			t.Fatalf("summary %+v", s)
		}
	})

	// FCT_FLOWS=10000 go test -run IntegrationEdgeCases/many ./fct
	t.Run("many", func(t *testing.T) {
		n, _ := strconv.Atoi(os.Getenv("FCT_FLOWS"))
		if n == 0 {
			t.Skip("set FCT_FLOWS")
		}
		cfg := base
		cfg.Sizes, cfg.FlowsPerSize = []int64{143}, n
		t0 := time.Now()
		flows, err := RunBuiltin(context.Background(), cfg)
		el := time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(flows)[0]
		t.Logf("%d flows in %v (%.0f/s): failed=%d p50=%v p99=%v p99.9=%v p99.99=%v max=%v", len(flows), el, float64(len(flows))/el.Seconds(), s.Failed, s.P50, s.P99, s.P999, s.P9999, s.Max)
	})
}
