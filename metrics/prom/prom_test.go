package prom

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/linkfabric/linkfabric/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func testRegistry(t *testing.T) (*metrics.Registry, *atomic.Uint64, *metrics.Histogram) {
	t.Helper()
	r := metrics.NewRegistry()
	var rx atomic.Uint64
	var depth atomic.Int64
	h := new(metrics.Histogram)
	for _, err := range []error{
		r.Counter("lf_rx_frames_total", "Frames received on a port.", &rx, "port", "eth0"),
		r.CounterFunc("lf_rx_frames_total", "Frames received on a port.", func() uint64 { return 7 }, "port", "eth1"),
		r.Gauge("lf_reorder_depth_frames", "Frames in the reorder buffer.", &depth),
		r.Histogram("lf_retx_delay_seconds", "Retransmission delay.", h, 1e-9),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rx.Store(42)
	depth.Store(5)
	for i := uint64(1); i <= 1000; i++ {
		h.Record(i * 1000) // 1 µs .. 1 ms
	}
	return r, &rx, h
}

func TestCollectorOutput(t *testing.T) {
	r, rx, _ := testRegistry(t)
	c := NewCollector(r)
	want := `
# HELP lf_reorder_depth_frames Frames in the reorder buffer.
# TYPE lf_reorder_depth_frames gauge
lf_reorder_depth_frames 5
# HELP lf_rx_frames_total Frames received on a port.
# TYPE lf_rx_frames_total counter
lf_rx_frames_total{port="eth0"} 42
lf_rx_frames_total{port="eth1"} 7
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "lf_rx_frames_total", "lf_reorder_depth_frames"); err != nil {
		t.Fatal(err)
	}
	// Values are read at scrape time, not at registration.
	rx.Add(8)
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "42", "50", 1)), "lf_rx_frames_total", "lf_reorder_depth_frames"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 4 {
		t.Fatalf("CollectAndCount = %d", n)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestServe(t *testing.T) {
	r, _, _ := testRegistry(t)
	s, err := ServeRegistry("127.0.0.1:0", r)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(path string) (string, string) {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
		}
		return string(b), resp.Header.Get("Content-Type")
	}

	body, ct := get("/metrics")
	t.Logf("/metrics (%s):\n%s", ct, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("Prometheus text does not parse: %v", err)
	}
	sum := fams["lf_retx_delay_seconds"]
	if sum == nil || sum.GetType().String() != "SUMMARY" {
		t.Fatalf("histogram family: %v", sum)
	}
	m := sum.GetMetric()[0].GetSummary()
	if m.GetSampleCount() != 1000 || m.GetSampleSum() < 0.50049 || m.GetSampleSum() > 0.50051 {
		t.Fatalf("summary count %d sum %g", m.GetSampleCount(), m.GetSampleSum())
	}
	for _, q := range m.GetQuantile() {
		exact := q.GetQuantile() * 1e-3 // values are uniform i µs, i = 1..1000
		if q.GetQuantile() >= 0.999 {
			exact = 999e-6
			if q.GetQuantile() > 0.999 {
				exact = 1e-3
			}
		}
		if rel := (q.GetValue() - exact) / exact; rel > metrics.MaxRelativeError || rel < -metrics.MaxRelativeError {
			t.Errorf("quantile %g = %g, exact %g", q.GetQuantile(), q.GetValue(), exact)
		}
	}
	if fams["lf_rx_frames_total"].GetMetric()[0].GetCounter().GetValue() != 42 {
		t.Error("counter value")
	}

	body, ct = get("/stats.json")
	if ct != "application/json" {
		t.Errorf("/stats.json Content-Type %q", ct)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(body), &js); err != nil {
		t.Fatal(err)
	}
	if js[`lf_rx_frames_total{port="eth0"}`] != 42.0 {
		t.Errorf("JSON: %v", js)
	}
	if h, ok := js["lf_retx_delay_seconds"].(map[string]any); !ok || h["count"] != 1000.0 {
		t.Errorf("JSON histogram: %v", js["lf_retx_delay_seconds"])
	}
}

func TestLoopbackDefault(t *testing.T) {
	cases := map[string]string{
		"":             DefaultAddr,
		":9464":        "127.0.0.1:9464",
		"0.0.0.0:1":    "0.0.0.0:1",
		"[::1]:9":      "[::1]:9",
		"localhost:80": "localhost:80",
	}
	for in, want := range cases {
		got, err := LoopbackDefault(in)
		if err != nil || got != want {
			t.Errorf("LoopbackDefault(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := LoopbackDefault("9464"); err == nil {
		t.Error("port without colon accepted")
	}
	s, err := ServeRegistry("127.0.0.1:0", metrics.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := ServeRegistry(s.Addr(), metrics.NewRegistry()); err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("second listener on %s: %v", s.Addr(), err)
	}
}
