package dataplane_test

// The Prometheus exposition of running dataplanes (lg, fec, cells on veth):
// promtool's and client_golang's lint find nothing in it, the metrics an
// operator alerts on are there, and every query of the Grafana dashboard
// in deploy/grafana names a metric it holds.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/linkfabric/linkfabric/linkguardian/lgpipe"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/metrics/prom"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// exposition is d's /metrics as Prometheus' text format.
func exposition(t *testing.T, d *dataplane.Dataplane) string {
	t.Helper()
	reg := metrics.NewRegistry()
	if err := d.Register(reg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	h, err := prom.Handler(reg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(b)
}

// lintExposition fails on any problem promlint (what `promtool check
// metrics` runs) or promtool itself, when installed, finds in text.
func lintExposition(t *testing.T, text string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not installed: checked with client_golang's promlint only")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

var sampleRE = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? `)

// metricNames are the names of the samples in text (a summary's quantiles
// under its own name, its _sum and _count under theirs).
func metricNames(text string) map[string]bool {
	names := map[string]bool{}
	for _, m := range sampleRE.FindAllStringSubmatch(text, -1) {
		names[m[1]] = true
	}
	return names
}

// wantSample fails unless text holds a sample of name whose labels
// include every label="value" of labels.
func wantSample(t *testing.T, text, name string, labels ...string) {
	t.Helper()
	for _, m := range sampleRE.FindAllStringSubmatch(text, -1) {
		if m[1] != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[2], l)
		}
		if ok {
			return
		}
	}
	t.Errorf("no sample %s with %v in the exposition", name, labels)
}

// dashboardExprs are the queries of deploy/grafana/linkfabric.json: each
// target's expr and each templating query.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../deploy/grafana/linkfabric.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type == "query" {
			exprs = append(exprs, v.Definition)
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("dashboard has %d queries", len(exprs))
	}
	return exprs
}

var exprMetricRE = regexp.MustCompile(`\blinkfabric_[a-zA-Z0-9_]+`)

func TestMetricsExpositionAndDashboard(t *testing.T) {
	names := map[string]bool{}
	ran := 0 // subtests that exported (veth subtests skip with -short)
	t.Run("lg", func(t *testing.T) {
		b := upLG(t, lgpipe.ModeLG, lgpipe.Config{}, nil)
		text := exposition(t, b.sw1)
		lintExposition(t, text)
		for n := range metricNames(text) {
			names[n] = true
		}
		wantSample(t, text, "linkfabric_build_info", `version="`, `revision="`, `goversion="go`)
		wantSample(t, text, "linkfabric_link_session_up", `port="link0"`, `lane="0"`)
		wantSample(t, text, "linkfabric_link_session_info", `state="up"`, `lane="0"`)
		wantSample(t, text, "linkfabric_lg_sender_retx_copies_total", `port="link0"`, `lane="0"`)
		wantSample(t, text, "linkfabric_fastpath_info", `from="link0"`, `path="afxdp"`, `reason="`)
		wantSample(t, text, "linkfabric_afxdp_zerocopy", `port="link0"`, `queue="0"`)
		wantSample(t, text, "linkfabric_integrity_errors_total", `worker="0"`)
		wantSample(t, text, "linkfabric_xdp_dropped_total", `reason="foreign_control"`)
		wantSample(t, text, "linkfabric_xdp_frames_total", `port="link0"`, `action="forwarded"`)
		wantSample(t, text, "linkfabric_afxdp_dropped_total", `port="link0"`, `reason="tx_invalid_descs"`)
		ran++
	})
	t.Run("fec", func(t *testing.T) {
		_, sw1, _ := upFEC(t, fecpipe.Config{})
		text := exposition(t, sw1.D)
		lintExposition(t, text)
		for n := range metricNames(text) {
			names[n] = true
		}
		wantSample(t, text, "linkfabric_link_session_info", `port="link0"`)
		wantSample(t, text, "linkfabric_fec_receiver_recovered_total")
		ran++
	})
	t.Run("cells", func(t *testing.T) {
		b := upBundleCells(t, "lfm", cellspipe.Config{})
		text := exposition(t, b.sw1)
		lintExposition(t, text)
		for n := range metricNames(text) {
			names[n] = true
		}
		wantSample(t, text, "linkfabric_cells_link_usable", `port="`+bundleLinks[0]+`"`)
		wantSample(t, text, "linkfabric_link_session_info", `port="`+bundleLinks[0]+`"`)
		ran++
	})
	if t.Failed() {
		return
	}
	if ran < 3 {
		t.Skip("a dataplane did not run: the dashboard is checked against the three modes' metrics only")
	}
	var missing []string
	for _, e := range dashboardExprs(t) {
		found := exprMetricRE.FindAllString(e, -1)
		if len(found) == 0 {
			t.Errorf("dashboard query %q names no linkfabric metric", e)
		}
		for _, n := range found {
			if !names[n] {
				missing = append(missing, n+" (in "+e+")")
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("dashboard names a metric no dataplane exported: %s", m)
	}
}
