package fct

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
)

// Percentiles reported for every arm and size, in percent.
var Percentiles = []float64{50, 90, 99, 99.9, 99.99}

// Summary is the statistics of one arm and flow size. Percentiles, Min, Max
// and Mean are over the completed flows only; failed flows (timeouts,
// errors) are counted in Failed. Durations are nanoseconds in JSON.
type Summary struct {
	Arm           string        `json:"arm"`
	Size          int64         `json:"size"`
	Count         int           `json:"count"`  // completed flows
	Failed        int           `json:"failed"` // flows that did not complete
	Retransmitted int           `json:"retransmitted"`
	Min           time.Duration `json:"min_ns"`
	P50           time.Duration `json:"p50_ns"`
	P90           time.Duration `json:"p90_ns"`
	P99           time.Duration `json:"p99_ns"`
	P999          time.Duration `json:"p99_9_ns"`
	P9999         time.Duration `json:"p99_99_ns"`
	Max           time.Duration `json:"max_ns"`
	Mean          time.Duration `json:"mean_ns"`
}

// values returns the reported statistics in table order:
// p50 p90 p99 p99.9 p99.99 max mean.
func (s Summary) values() []time.Duration {
	return []time.Duration{s.P50, s.P90, s.P99, s.P999, s.P9999, s.Max, s.Mean}
}

var statNames = []string{"p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"}

// Summarize groups flows by (Arm, Size) and computes exact order statistics
// per group. Arms keep the order of their first appearance, sizes ascend.
func Summarize(flows []Flow) []Summary {
	type key struct {
		arm  string
		size int64
	}
	armOrder := map[string]int{}
	groups := map[key][]Flow{}
	for _, f := range flows {
		if _, ok := armOrder[f.Arm]; !ok {
			armOrder[f.Arm] = len(armOrder)
		}
		k := key{f.Arm, f.Size}
		groups[k] = append(groups[k], f)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(armOrder[a.arm], armOrder[b.arm]), cmp.Compare(a.size, b.size))
	})
	out := make([]Summary, 0, len(keys))
	for _, k := range keys {
		s := Summary{Arm: k.arm, Size: k.size}
		var d []time.Duration
		var sum float64
		for _, f := range groups[k] {
			if f.Retransmitted {
				s.Retransmitted++
			}
			if f.Failed {
				s.Failed++
				continue
			}
			d = append(d, f.FCT)
			sum += float64(f.FCT)
		}
		slices.Sort(d)
		s.Count = len(d)
		if len(d) > 0 {
			s.Min, s.Max = d[0], d[len(d)-1]
			s.Mean = time.Duration(math.Round(sum / float64(len(d))))
			s.P50 = report.Percentile(d, 50)
			s.P90 = report.Percentile(d, 90)
			s.P99 = report.Percentile(d, 99)
			s.P999 = report.Percentile(d, 99.9)
			s.P9999 = report.Percentile(d, 99.99)
		}
		out = append(out, s)
	}
	return out
}

// Ratio is one arm's statistics divided by the reference arm's for the same
// size (e.g. loss/noloss p99.9 = 20 means the loss arm's 99.9th percentile is
// 20x the lossless one). A ratio whose reference value is 0 is reported as 0.
type Ratio struct {
	Arm   string  `json:"arm"`
	Ref   string  `json:"ref"`
	Size  int64   `json:"size"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	P9999 float64 `json:"p99_99"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

func (r Ratio) values() []float64 {
	return []float64{r.P50, r.P90, r.P99, r.P999, r.P9999, r.Max, r.Mean}
}

// Ratios divides every summary by the summary of arm ref with the same size
// (ref's own rows are 1). Sizes without a ref summary get no ratio rows.
func Ratios(sums []Summary, ref string) []Ratio {
	refs := map[int64]Summary{}
	for _, s := range sums {
		if s.Arm == ref {
			refs[s.Size] = s
		}
	}
	div := func(a, b time.Duration) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	var out []Ratio
	for _, s := range sums {
		r, ok := refs[s.Size]
		if !ok {
			continue
		}
		out = append(out, Ratio{
			Arm: s.Arm, Ref: ref, Size: s.Size,
			P50: div(s.P50, r.P50), P90: div(s.P90, r.P90), P99: div(s.P99, r.P99),
			P999: div(s.P999, r.P999), P9999: div(s.P9999, r.P9999),
			Max: div(s.Max, r.Max), Mean: div(s.Mean, r.Mean),
		})
	}
	return out
}

// DefaultReference is the reference arm for ratios.
const DefaultReference = "noloss"

// Results is the JSON document of one FCT experiment.
type Results struct {
	Reference string `json:"reference"`
	// PercentileDefinition documents how percentiles were computed.
	PercentileDefinition string    `json:"percentile_definition"`
	Summaries            []Summary `json:"summaries"`
	Ratios               []Ratio   `json:"ratios"`
	// Settings are the TCP settings reports of the namespaces involved.
	Settings []Report `json:"settings,omitempty"`
	// Meta is free-form context (tool, congestion control, loss rate, ...).
	Meta map[string]string `json:"meta,omitempty"`
}

// PercentileDefinition is stored in Results.
const PercentileDefinition = "nearest rank over completed flows: value at 1-based rank ceil(p/100*n) of the sorted FCTs; failed flows excluded and counted separately"

// NewResults summarizes flows and computes ratios against ref ("" = DefaultReference).
func NewResults(flows []Flow, ref string) Results {
	if ref == "" {
		ref = DefaultReference
	}
	sums := Summarize(flows)
	return Results{Reference: ref, PercentileDefinition: PercentileDefinition, Summaries: sums, Ratios: Ratios(sums, ref)}
}

// WriteTable writes an aligned text table of the summaries (FCTs in µs)
// followed, when ratio rows exist, by a table of ratios to the reference.
func WriteTable(w io.Writer, r Results) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "arm\tsize\tflows\tfailed\tretx\t")
	for _, n := range statNames {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw, "\t")
	for _, s := range r.Summaries {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t", s.Arm, FormatSize(s.Size), s.Count, s.Failed, s.Retransmitted)
		for _, v := range s.values() {
			fmt.Fprintf(tw, "%s\t", report.Micros(v))
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(FCT in µs; percentiles nearest-rank over completed flows; retx = flows with a TCP retransmission)")
	if len(r.Ratios) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nratio to %s:\n", r.Reference)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "arm\tsize\t")
	for _, n := range statNames {
		fmt.Fprintf(tw, "%s\t", n)
	}
	fmt.Fprintln(tw, "\t")
	for _, q := range r.Ratios {
		fmt.Fprintf(tw, "%s\t%s\t", q.Arm, FormatSize(q.Size))
		for _, v := range q.values() {
			fmt.Fprintf(tw, "%.2fx\t", v)
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

// CSVHeader is the header row written by WriteCSV.
var CSVHeader = []string{"arm", "tool", "size", "id", "start_unix_ns", "fct_ns", "failed", "retrans", "retransmitted", "error"}

// WriteCSV writes one row per flow (see CSVHeader).
func WriteCSV(w io.Writer, flows []Flow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, f := range flows {
		start := ""
		if !f.Start.IsZero() {
			start = strconv.FormatInt(f.Start.UnixNano(), 10)
		}
		if err := cw.Write([]string{
			f.Arm, f.Tool, strconv.FormatInt(f.Size, 10), strconv.Itoa(f.ID), start,
			strconv.FormatInt(int64(f.FCT), 10), strconv.FormatBool(f.Failed),
			strconv.FormatUint(uint64(f.Retrans), 10), strconv.FormatBool(f.Retransmitted), f.Err,
		}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// ReadCSV reads flows written by WriteCSV (e.g. to re-plot or merge runs).
func ReadCSV(r io.Reader) ([]Flow, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(CSVHeader)
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || !slices.Equal(rows[0], CSVHeader) {
		return nil, fmt.Errorf("fct: CSV header is not %v", CSVHeader)
	}
	flows := make([]Flow, 0, len(rows)-1)
	for i, row := range rows[1:] {
		var f Flow
		var errs [6]error
		f.Arm, f.Tool, f.Err = row[0], row[1], row[9]
		f.Size, errs[0] = strconv.ParseInt(row[2], 10, 64)
		f.ID, errs[1] = strconv.Atoi(row[3])
		if row[4] != "" {
			var ns int64
			ns, errs[2] = strconv.ParseInt(row[4], 10, 64)
			f.Start = time.Unix(0, ns)
		}
		var fct int64
		fct, errs[3] = strconv.ParseInt(row[5], 10, 64)
		f.FCT = time.Duration(fct)
		f.Failed, errs[4] = strconv.ParseBool(row[6])
		var rt uint64
		rt, errs[5] = strconv.ParseUint(row[7], 10, 32)
		f.Retrans = uint32(rt)
		var err error
		f.Retransmitted, err = strconv.ParseBool(row[8])
		for _, e := range append(errs[:], err) {
			if e != nil {
				return nil, fmt.Errorf("fct: CSV row %d: %w", i+2, e)
			}
		}
		flows = append(flows, f)
	}
	return flows, nil
}
