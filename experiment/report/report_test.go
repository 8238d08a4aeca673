package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestRatio(t *testing.T) {
	if Ratio(3, 2) != 1.5 || Ratio(3, 0) != 0 {
		t.Errorf("Ratio: %v %v", Ratio(3, 2), Ratio(3, 0))
	}
	if RatioNaN(3, 2) != 1.5 || !math.IsNaN(RatioNaN(3, 0)) {
		t.Errorf("RatioNaN: %v %v", RatioNaN(3, 2), RatioNaN(3, 0))
	}
}

func TestMicros(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0.0", 1500 * time.Microsecond: "1500.0", 1234: "1.2", 1250: "1.2", 1251: "1.3"} {
		if got := Micros(d); got != want {
			t.Errorf("Micros(%d) = %q, want %q", d, got, want)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5}, // mean of the middle two
		{[]float64{10, 1, 1, 10}, 5.5},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestMedianBy(t *testing.T) {
	type run struct {
		id int
		s  float64
	}
	if _, ok := MedianBy([]run(nil), func(r run) float64 { return r.s }); ok {
		t.Error("MedianBy of nothing found a run")
	}
	// Even count: the lower middle one, a real run, not a mean of two.
	rs := []run{{1, 4}, {2, 1}, {3, 3}, {4, 2}}
	got, ok := MedianBy(rs, func(r run) float64 { return r.s })
	if !ok || got.id != 4 {
		t.Errorf("MedianBy = %+v, %v; want run 4 (key 2)", got, ok)
	}
	if rs[0].id != 1 || rs[3].id != 4 {
		t.Errorf("MedianBy reordered its input: %+v", rs)
	}
	// Ties keep the input's order.
	got, _ = MedianBy([]run{{1, 5}, {2, 5}, {3, 5}}, func(r run) float64 { return r.s })
	if got.id != 2 {
		t.Errorf("MedianBy of ties = run %d, want 2", got.id)
	}
}

// TestPercentileNearestRank shows the definition on a small sample: the
// value at rank ceil(p/100·n), always an observed one, where Median takes
// the mean of the middle two.
func TestPercentileNearestRank(t *testing.T) {
	v := []float64{10, 20, 30, 40}
	for _, c := range []struct{ p, want float64 }{
		{0.1, 10}, {25, 10}, {25.1, 20}, {50, 20}, {75, 30}, {99, 40}, {100, 40},
	} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", v, c.p, got, c.want)
		}
	}
	if m := Median(append([]float64(nil), v...)); m != 25 {
		t.Errorf("Median(%v) = %v, want 25", v, m)
	}
	if got := Percentile([]int(nil), 50); got != 0 {
		t.Errorf("Percentile of nothing = %v", got)
	}
}

// TestPercentileAbove shows the second definition beside the first: one
// rank higher exactly where p/100·n is a whole number.
func TestPercentileAbove(t *testing.T) {
	v := []float64{10, 20, 30, 40}
	for _, c := range []struct{ p, nearest, above float64 }{
		{0, 10, 10}, {25, 10, 20}, {30, 20, 20}, {50, 20, 30}, {60, 30, 30}, {75, 30, 40}, {99, 40, 40}, {100, 40, 40},
	} {
		if got := Percentile(v, c.p); c.p > 0 && got != c.nearest {
			t.Errorf("Percentile(%v, %v) = %v, want %v", v, c.p, got, c.nearest)
		}
		if got := PercentileAbove(v, c.p); got != c.above {
			t.Errorf("PercentileAbove(%v, %v) = %v, want %v", v, c.p, got, c.above)
		}
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	if a, b := Percentile(hundred, 99), PercentileAbove(hundred, 99); a != 99 || b != 100 {
		t.Errorf("p99 of 1..100: nearest rank %d (want 99), above %d (want 100)", a, b)
	}
	// The form it replaces: v[min(n-1, n*99/100)].
	all := make([]int, 2000)
	for i := range all {
		all[i] = i
	}
	for n := 1; n <= len(all); n++ {
		if got, want := PercentileAbove(all[:n], 99), min(n-1, n*99/100); got != want {
			t.Fatalf("n=%d: index %d, want %d", n, got, want)
		}
	}
	if PercentileAbove([]int(nil), 99) != 0 {
		t.Error("PercentileAbove of nothing")
	}
}

// TestPercentileKnown: 1..10000 and a sample of five, as fct reports them.
func TestPercentileKnown(t *testing.T) {
	d := make([]time.Duration, 10000)
	for i := range d {
		d[i] = time.Duration(i + 1)
	}
	for p, want := range map[float64]time.Duration{50: 5000, 90: 9000, 99: 9900, 99.9: 9990, 99.99: 9999, 100: 10000, 0.01: 1} {
		if got := Percentile(d, p); got != want {
			t.Errorf("p%v of 1..10000 = %d, want %d", p, got, want)
		}
	}
	// Ranks ceil(p*n): n=5 -> p50 rank 3, p90 rank 5.
	s := []time.Duration{10, 20, 30, 40, 50}
	for p, want := range map[float64]time.Duration{50: 30, 90: 50, 20: 10, 40: 20, 41: 30, 99.99: 50} {
		if got := Percentile(s, p); got != want {
			t.Errorf("p%v of %v = %d, want %d", p, s, got, want)
		}
	}
}

func TestQuantiles(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	if got, want := Quantiles(v, 50, 95, 100), []float64{3, 5, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("Quantiles = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(v, []float64{1, 2, 3, 4, 5}) {
		t.Errorf("Quantiles left %v unsorted", v)
	}
	if q := Quantiles([]float64{}, 50); q != nil {
		t.Errorf("Quantiles of nothing = %v", q)
	}
}

// TestPercentileAgreesWithCeil: the rank in integer arithmetic equals
// ceil(p·n) for the fractions the experiments report, at every count up
// to 20,000 (the float form's rounding never moves a rank there).
func TestPercentileAgreesWithCeil(t *testing.T) {
	all := make([]int, 20000)
	for i := range all {
		all[i] = i
	}
	for _, p := range []float64{0.5, 0.9, 0.95, 0.99, 0.999, 0.9999} {
		for n := 1; n <= len(all); n++ {
			v := all[:n]
			want := max(int(math.Ceil(p*float64(n)))-1, 0)
			if got := Percentile(v, p*100); got != want {
				t.Fatalf("p%v of %d values: index %d, ceil gives %d", p*100, n, got, want)
			}
		}
	}
}

type sample struct {
	Name string        `json:"name"`
	P50  time.Duration `json:"p50_ns"`
	Note string        `json:"note,omitempty"`
}

func TestWriteJSONRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "r.json")
	in := []sample{{"lg <1>", 1500, ""}, {"fwd & co", 3, "x"}}
	if err := WriteJSON(path, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []sample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("read back %+v, wrote %+v", out, in)
	}
	// The same bytes as a json.Encoder with a two-space indent.
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want.Bytes()) {
		t.Errorf("WriteJSON wrote\n%s\nan indented json.Encoder writes\n%s", b, want.Bytes())
	}
	var got bytes.Buffer
	if err := Encode(&got, in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), b) {
		t.Errorf("Encode wrote\n%s\nWriteJSON\n%s", got.Bytes(), b)
	}
}

func TestSprint(t *testing.T) {
	got := Sprint(func(w io.Writer) { fmt.Fprintf(w, "a %d\n", 1); fmt.Fprint(w, "b") })
	if got != "a 1\nb" {
		t.Errorf("Sprint = %q", got)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "r.csv")
	header := []string{"arm", "note"}
	rows := [][]string{{"lg", "a, b"}, {"fwd", `say "hi"`}}
	if err := WriteCSV(path, header, rows); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := append([][]string{header}, rows...); !reflect.DeepEqual(got, want) {
		t.Errorf("read back %q, wrote %q", got, want)
	}
}

// WriteTable writes the JSON and the CSV under one name, and says where.
func TestWriteTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	paths, err := WriteTable(dir, "t", map[string]int{"a": 1}, []string{"x", "y"}, [][]string{{"1", "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "t.json"), filepath.Join(dir, "t.csv")}; !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	var v map[string]int
	if b, err := os.ReadFile(paths[0]); err != nil || json.Unmarshal(b, &v) != nil || v["a"] != 1 {
		t.Fatalf("json: %v %v", v, err)
	}
	f, err := os.Open(paths[1])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || !reflect.DeepEqual(rows, [][]string{{"x", "y"}, {"1", "2"}}) {
		t.Fatalf("csv %v, %v", rows, err)
	}
}

// TestResultJSON: a Result's JSON is flat, in the order every experiment's
// has: config, the machine, runs, summary.
func TestResultJSON(t *testing.T) {
	type cfg struct {
		Runs int `json:"runs_per_arm"`
	}
	type run struct {
		Arm string `json:"arm"`
	}
	res := NewResult[cfg, run](cfg{Runs: 2})
	res.Runs = append(res.Runs, run{Arm: "lg"})
	res.Summary = map[string]any{"pass": true}
	b, err := json.Marshal(struct{ Result[cfg, run] }{res})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token() // {
	for dec.More() {
		k, _ := dec.Token()
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"config", "kernel", "cpus", "date", "runs", "summary"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v (%s)", keys, want, b)
	}
	if res.Kernel == "" || res.CPUs < 1 || res.Date.IsZero() {
		t.Errorf("run info not filled: %+v", res.RunInfo)
	}
}

// WriteTablePlot returns every path it wrote: the JSON, the CSV and the
// plot; on a plot error the two before it and the error.
func TestWriteTablePlot(t *testing.T) {
	dir := t.TempDir()
	draw := func(path string) error { return os.WriteFile(path, []byte("png"), 0o644) }
	files, err := WriteTablePlot(dir, "x", map[string]int{"a": 1}, []string{"a"}, [][]string{{"1"}}, "x.png", draw)
	want := []string{filepath.Join(dir, "x.json"), filepath.Join(dir, "x.csv"), filepath.Join(dir, "x.png")}
	if err != nil || !slices.Equal(files, want) {
		t.Fatalf("WriteTablePlot = %v, %v; want %v", files, err, want)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	bad := errors.New("no plot")
	files, err = WriteTablePlot(dir, "y", 1, []string{"a"}, nil, "y.png", func(string) error { return bad })
	if !errors.Is(err, bad) || !slices.Equal(files, []string{filepath.Join(dir, "y.json"), filepath.Join(dir, "y.csv")}) {
		t.Fatalf("WriteTablePlot with a failing plot = %v, %v; want the JSON and CSV and the plot's error", files, err)
	}
}
