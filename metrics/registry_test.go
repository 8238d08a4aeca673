package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func TestRegistryJSON(t *testing.T) {
	r := NewRegistry()
	var rx atomic.Uint64
	var depth atomic.Int64
	var lat Histogram
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.Counter("lf_rx_frames_total", "Frames received.", &rx, "port", "eth0"))
	must(r.CounterFunc("lf_rx_frames_total", "Frames received.", func() uint64 { return 7 }, "port", "eth1"))
	must(r.Gauge("lf_reorder_depth", "Frames in the reorder buffer.", &depth))
	must(r.GaugeFunc("lf_loss_rate", "Measured loss rate.", func() float64 { return math.NaN() }))
	must(r.Histogram("lf_retx_delay_seconds", "Retransmission delay.", &lat, 1e-9))
	rx.Store(42)
	depth.Store(-3)
	for v := uint64(1000); v <= 100_000; v += 1000 {
		lat.Record(v) // ns
	}

	rec := httptest.NewRecorder()
	JSONHandler(r).ServeHTTP(rec, httptest.NewRequest("GET", "/stats.json", nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	t.Logf("/stats.json:\n%s", rec.Body.String())
	var got map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		`lf_rx_frames_total{port="eth0"}`: "42",
		`lf_rx_frames_total{port="eth1"}`: "7",
		`lf_reorder_depth`:                "-3",
		`lf_loss_rate`:                    "null",
	}
	for k, v := range want {
		if string(got[k]) != v {
			t.Errorf("%s = %s, want %s", k, got[k], v)
		}
	}
	var hs HistogramSummary
	if err := json.Unmarshal(got["lf_retx_delay_seconds"], &hs); err != nil {
		t.Fatal(err)
	}
	if hs.Count != 100 || hs.Min != 1e-6 || hs.Max != 1e-4 || math.Abs(hs.Mean-50.5e-6) > 1e-12 {
		t.Fatalf("histogram summary %+v", hs)
	}
	if math.Abs(hs.P50-50e-6)/50e-6 > MaxRelativeError || math.Abs(hs.P99-99e-6)/99e-6 > MaxRelativeError {
		t.Fatalf("p50 %g p99 %g", hs.P50, hs.P99)
	}
	var fields map[string]any
	json.Unmarshal(got["lf_retx_delay_seconds"], &fields)
	for _, k := range []string{"count", "sum", "min", "max", "mean", "p50", "p90", "p99", "p999", "p9999"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("histogram JSON lacks %q", k)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d keys, want 5", len(got))
	}
}

func TestRegistryErrors(t *testing.T) {
	r := NewRegistry()
	var c atomic.Uint64
	if err := r.Counter("a_total", "h", &c, "port", "x"); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		err  error
	}{
		{"duplicate", r.Counter("a_total", "h", &c, "port", "x")},
		{"different help", r.Counter("a_total", "other", &c, "port", "y")},
		{"different labels", r.Counter("a_total", "h", &c, "queue", "1")},
		{"different kind", r.GaugeFunc("a_total", "h", func() float64 { return 0 }, "port", "z")},
		{"bad name", r.Counter("a-b", "h", &c)},
		{"odd labels", r.Counter("b_total", "h", &c, "port")},
		{"reserved label", r.Counter("c_total", "h", &c, "le", "1")},
		{"bad label", r.Counter("d_total", "h", &c, "1x", "1")},
		{"repeated label", r.Counter("e_total", "h", &c, "a", "1", "a", "2")},
		{"nil histogram", r.Histogram("f", "h", nil, 0)},
	}
	for _, b := range bad {
		if b.err == nil || !strings.HasPrefix(b.err.Error(), "metrics: ") {
			t.Errorf("%s: err = %v", b.name, b.err)
		}
	}
	if err := r.Counter("a_total", "h", &c, "port", "y"); err != nil {
		t.Fatalf("same name, new label value: %v", err)
	}
	if n := r.Unregister("a_total"); n != 2 || len(r.Metrics()) != 0 {
		t.Fatalf("Unregister removed %d, %d left", n, len(r.Metrics()))
	}
	if err := r.Gauge("a_total", "now a gauge", new(atomic.Int64)); err != nil {
		t.Fatalf("re-register after Unregister: %v", err)
	}
}

func TestInfoFuncLabelsAtExport(t *testing.T) {
	r := NewRegistry()
	state := "down"
	if err := r.InfoFunc("x_info", "X.", []string{"state", "reason"}, func() []string { return []string{state, "why " + state} }, "port", "p0"); err != nil {
		t.Fatal(err)
	}
	if err := r.InfoFunc("x_info", "X.", []string{"state"}, func() []string { return nil }, "port", "p1"); err == nil {
		t.Error("second x_info with other label names accepted")
	}
	if err := r.InfoFunc("y_info", "Y.", []string{"port"}, func() []string { return nil }, "port", "p0"); err == nil {
		t.Error("a dynamic label named like a constant one accepted")
	}
	v := r.Values()
	if _, ok := v[`x_info{port="p0",reason="why down",state="down"}`]; !ok {
		t.Errorf("values %v: want x_info with state down", v)
	}
	state = "up"
	v = r.Values()
	if got, ok := v[`x_info{port="p0",reason="why up",state="up"}`]; !ok || got != 1.0 {
		t.Errorf("values %v: want x_info 1 with state up", v)
	}
}

func TestBuildInfoRegistered(t *testing.T) {
	r := NewRegistry()
	if err := RegisterBuildInfo(r); err != nil {
		t.Fatal(err)
	}
	ms := r.Metrics()
	if len(ms) != 1 || ms[0].Name != "linkfabric_build_info" || ms[0].Value() != 1 || len(ms[0].Labels) != 3 {
		t.Fatalf("got %+v", ms)
	}
}

// TestErrs: registrations that all succeed give no error; a failed one is
// in Err.
func TestErrs(t *testing.T) {
	var ok Errs
	ok.Add(nil)
	ok.Add(nil)
	if err := ok.Err(); err != nil {
		t.Errorf("no failure: %v", err)
	}
	var bad Errs
	add := bad.Add
	add(nil)
	add(errors.New("taken"))
	if err := bad.Err(); err == nil || err.Error() != "taken" {
		t.Errorf("one failure: %v", err)
	}
}
