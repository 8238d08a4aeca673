package fct

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"143": 143, "143B": 143, " 24387 ": 24387, "2MB": 2000000, "2mb": 2000000, "2M": 2000000,
		"2MiB": 2097152, "64KiB": 65536, "10KB": 10000, "10k": 10000, "1.5KB": 1500, "1GB": 1e9, "0": 0,
	} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1.5B", "abc", "1.0001KiB", "12XB"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want error", in, got)
		}
	}
	got, err := ParseSizes("143,24387,2MB")
	if err != nil || !reflect.DeepEqual(got, []int64{143, 24387, 2000000}) {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	if _, err := ParseSizes(" , "); err == nil {
		t.Error("ParseSizes of empty list: want error")
	}
	for n, want := range map[int64]string{143: "143B", 24387: "24387B", 2000000: "2MB", 2097152: "2MiB", 10000: "10KB", 65536: "64KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func testFlows() []Flow {
	var fl []Flow
	add := func(arm string, size int64, fcts ...int) {
		for i, v := range fcts {
			fl = append(fl, Flow{Arm: arm, Tool: "builtin", ID: i, Size: size, FCT: time.Duration(v) * time.Microsecond,
				Start: time.Unix(1700000000, int64(i)*1000)})
		}
	}
	add("noloss", 143, 10, 20, 30, 40, 50)
	add("loss", 143, 10, 20, 30, 40, 5000)
	add("noloss", 24387, 100, 200)
	add("loss", 24387, 100, 400)
	fl[6].Retrans, fl[6].Retransmitted = 1, true // loss 143 B, 20 µs... mark one retransmitting flow
	fl = append(fl, Flow{Arm: "loss", Tool: "builtin", ID: 9, Size: 143, Failed: true, Err: "timeout, with \"quotes\""})
	return fl
}

func TestSummarizeAndRatios(t *testing.T) {
	r := NewResults(testFlows(), "")
	if len(r.Summaries) != 4 {
		t.Fatalf("summaries: %+v", r.Summaries)
	}
	// Arm order of first appearance, sizes ascending.
	var keys []string
	for _, s := range r.Summaries {
		keys = append(keys, s.Arm+"/"+FormatSize(s.Size))
	}
	if want := []string{"noloss/143B", "noloss/24387B", "loss/143B", "loss/24387B"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("order %v, want %v", keys, want)
	}
	l := r.Summaries[2]
	us := time.Microsecond
	if l.Count != 5 || l.Failed != 1 || l.Retransmitted != 1 || l.P50 != 30*us || l.P90 != 5000*us ||
		l.Max != 5000*us || l.Min != 10*us || l.Mean != 1020*us {
		t.Fatalf("loss/143 summary %+v", l)
	}
	if len(r.Ratios) != 4 {
		t.Fatalf("ratios %+v", r.Ratios)
	}
	q := r.Ratios[2]
	if q.Arm != "loss" || q.Ref != "noloss" || q.P50 != 1 || q.P90 != 100 || q.Max != 100 || math.Abs(q.Mean-1020.0/30) > 1e-9 {
		t.Fatalf("loss/noloss ratio %+v", q)
	}
	if q := r.Ratios[0]; q.P50 != 1 || q.P9999 != 1 || q.Mean != 1 {
		t.Fatalf("reference self-ratio %+v", q)
	}
	if q := r.Ratios[3]; q.P50 != 1 || q.Max != 2 {
		t.Fatalf("24387 ratio %+v", q)
	}
	if got := Ratios(r.Summaries, "nonexistent"); len(got) != 0 {
		t.Fatalf("ratios without reference: %+v", got)
	}

	var tb bytes.Buffer
	if err := WriteTable(&tb, r); err != nil {
		t.Fatal(err)
	}
	txt := tb.String()
	for _, want := range []string{"p99.99", "ratio to noloss", "100.00x", "5000.0"} {
		if !strings.Contains(txt, want) {
			t.Errorf("table lacks %q:\n%s", want, txt)
		}
	}
	lines := strings.Split(txt, "\n")
	if len(lines[0]) != len(lines[1]) { // aligned columns
		t.Errorf("table not aligned:\n%s", txt)
	}
	t.Logf("\n%s", txt)
}

func TestJSONShape(t *testing.T) {
	r := NewResults(testFlows(), "noloss")
	var b bytes.Buffer
	if err := report.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reference", "percentile_definition", "summaries", "ratios"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	s0 := m["summaries"].([]any)[0].(map[string]any)
	for _, k := range []string{"arm", "size", "count", "failed", "retransmitted", "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "p99_99_ns", "max_ns", "mean_ns"} {
		if _, ok := s0[k]; !ok {
			t.Errorf("summary JSON lacks %q: %v", k, s0)
		}
	}
	if s0["p50_ns"].(float64) != 30000 {
		t.Errorf("p50_ns = %v", s0["p50_ns"])
	}
	r0 := m["ratios"].([]any)[2].(map[string]any)
	if r0["p90"].(float64) != 100 || r0["ref"] != "noloss" {
		t.Errorf("ratio JSON %v", r0)
	}
	var back Results
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !reflect.DeepEqual(back.Summaries, r.Summaries) {
		t.Errorf("JSON round trip: %v", err)
	}
}

func TestCSV(t *testing.T) {
	fl := testFlows()
	var b bytes.Buffer
	if err := WriteCSV(&b, fl); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(fl)+1 || !reflect.DeepEqual(rows[0], CSVHeader) {
		t.Fatalf("CSV has %d rows, header %v", len(rows), rows[0])
	}
	if got := strings.Join(rows[1], ","); got != "noloss,builtin,143,0,1700000000000000000,10000,false,0,false," {
		t.Errorf("first row %q", got)
	}
	if got := rows[len(rows)-1]; got[6] != "true" || got[4] != "" || got[9] != `timeout, with "quotes"` {
		t.Errorf("failed row %q", got)
	}
	back, err := ReadCSV(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range fl {
		a, c := fl[i], back[i]
		if a.Arm != c.Arm || a.Size != c.Size || a.FCT != c.FCT || a.Failed != c.Failed || a.Err != c.Err ||
			a.Retrans != c.Retrans || a.Retransmitted != c.Retransmitted || !a.Start.Equal(c.Start) {
			t.Errorf("row %d: %+v != %+v", i, c, a)
		}
	}
}

func TestPlotPNG(t *testing.T) {
	var fl []Flow
	for i := 0; i < 5000; i++ { // heavy tail for "loss"
		v := 100 + i%50
		fl = append(fl, Flow{Arm: "noloss", Size: 143, FCT: time.Duration(v) * time.Microsecond})
		if i%1000 == 7 {
			v = 5000 + i
		}
		fl = append(fl, Flow{Arm: "loss", Size: 143, FCT: time.Duration(v) * time.Microsecond})
		fl = append(fl, Flow{Arm: "lg", Size: 24387, FCT: time.Duration(v+50) * time.Microsecond})
	}
	dir := t.TempDir()
	paths, err := PlotAllSizes(fl, dir, "fct", PlotOptions{TailFrom: 0.99})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "fct-143B.png" {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
			t.Errorf("%s: tiny image %v", p, b)
		}
	}
	if os.Getenv("FCT_KEEP_PLOT") != "" {
		PlotTailCDF(fl, 143, os.Getenv("FCT_KEEP_PLOT"), PlotOptions{TailFrom: 0.99})
	}
	if err := PlotTailCDF(fl, 999, filepath.Join(dir, "none.png"), PlotOptions{}); err == nil {
		t.Error("plot of absent size: want error")
	}
}

func TestGoodputTable(t *testing.T) {
	cells := []GoodputCell{
		{"None", 0, 9.49e9}, {"None", 1e-5, 9.48e9}, {"None", 1e-3, 3.48e9},
		{"Wharf", 1e-5, 9.13e9}, {"Wharf", 1e-3, 9.13e9},
		{"LinkGuardian", 0, 9.47e9}, {"LinkGuardian", 1e-3, 9.46e9},
	}
	g := NewGoodputTable(cells, "None")
	if !reflect.DeepEqual(g.LossRates, []float64{0, 1e-5, 1e-3}) || len(g.Rows) != 3 {
		t.Fatalf("table %+v", g)
	}
	w := g.Rows[1]
	if w.Arm != "Wharf" || w.Bps[0] != nil || *w.Bps[1] != 9.13e9 || math.Abs(*w.Ratio[1]-9.13/9.49) > 1e-12 {
		t.Fatalf("wharf row %+v", w)
	}
	lg := g.Rows[2]
	if lg.Bps[1] != nil || math.Abs(*lg.Ratio[2]-9.46/9.47) > 1e-12 || *lg.Ratio[0] != 1 {
		t.Fatalf("lg row %+v", lg)
	}
	var b bytes.Buffer
	if err := g.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"10^-5", "10^-3", "n/a", "3.48 (0.37x)", "9.46 (1.00x)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	var jb bytes.Buffer
	if err := report.Encode(&jb, g); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(jb.String(), `"goodput_bps": [`) || !strings.Contains(jb.String(), "null") {
		t.Errorf("JSON %s", jb.String())
	}
	t.Logf("\n%s", b.String())
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := ProgressBar(&b, "flows")
	for i := 1; i <= 50; i++ {
		p(i, 50)
	}
	if !strings.Contains(b.String(), "50/50") {
		t.Errorf("progress output %q", b.String())
	}
}
