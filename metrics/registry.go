package metrics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/internal/enum"
)

// Kind is the type of a registered metric.
type Kind int

const (
	KindCounter   Kind = iota // monotonically increasing uint64
	KindGauge                 // value that goes up and down
	KindHistogram             // a *Histogram
)

var kindNames = [...]string{KindCounter: "counter", KindGauge: "gauge", KindHistogram: "histogram"}

func (k Kind) String() string { return enum.Name(k, "Kind", kindNames[:]) }

// Metric is one registered, named value. Exporters read it through Value or
// Histogram at scrape time; the hot path only touches the underlying atomics.
type Metric struct {
	Name   string
	Help   string
	Kind   Kind
	Labels []Label // sorted by name

	// Scale multiplies histogram values on export (for example 1e-9 to
	// export nanoseconds as Prometheus' base unit, seconds). 0 means 1.
	Scale float64

	key   string
	value func() float64 // counters and gauges
	hist  *Histogram
	// dynNames are the names of the labels whose values dynValues gives
	// at export (InfoFunc), sorted.
	dynNames  []string
	dynValues func() []string
}

// LabelsNow are the metric's labels as exported now: its constant Labels
// and, for an InfoFunc, the values its function gives, sorted by name.
func (m *Metric) LabelsNow() []Label {
	if m.dynValues == nil {
		return m.Labels
	}
	vals := m.dynValues()
	out := append([]Label(nil), m.Labels...)
	for i, n := range m.dynNames {
		v := ""
		if i < len(vals) {
			v = vals[i]
		}
		out = append(out, Label{n, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KeyNow is Key with the labels of LabelsNow.
func (m *Metric) KeyNow() string {
	if m.dynValues == nil {
		return m.Key()
	}
	return keyOf(m.Name, m.LabelsNow())
}

// Label is a constant label attached to a metric (such as port="eth0").
type Label struct{ Name, Value string }

// Value returns the current value of a counter or gauge (0 for a histogram).
func (m *Metric) Value() float64 {
	if m.value == nil {
		return 0
	}
	return m.value()
}

// Histogram returns the histogram of a KindHistogram metric, else nil.
func (m *Metric) Histogram() *Histogram { return m.hist }

// Key is the metric's name with its labels in Prometheus text syntax,
// e.g. `rx_frames_total{port="eth0"}`; unique within a Registry.
func (m *Metric) Key() string {
	if m.key != "" {
		return m.key
	}
	return keyOf(m.Name, m.Labels)
}

func keyOf(name string, labels []Label) string {
	if len(labels) == 0 {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", l.Name, l.Value)
	}
	b.WriteByte('}')
	return b.String()
}

// Registry is a set of named metrics. Registration takes a lock (do it at
// start-up or when a port is added); reading values for export takes the
// lock briefly to copy the list; recording never touches the Registry.
type Registry struct {
	mu      sync.Mutex
	metrics []*Metric
	keys    map[string]bool
	names   map[string]*Metric // first metric registered under each name
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{keys: map[string]bool{}, names: map[string]*Metric{}}
}

// Default is the process-wide registry used by the package-level helpers of
// metrics/prom.
var Default = NewRegistry()

var nameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
var labelRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Counter registers a counter read from v. labels are name/value pairs.
func (r *Registry) Counter(name, help string, v *atomic.Uint64, labels ...string) error {
	return r.add(&Metric{Name: name, Help: help, Kind: KindCounter, value: func() float64 { return float64(v.Load()) }}, labels)
}

// CounterFunc registers a counter whose value fn returns (fn must be cheap
// and safe to call from the exporter's goroutine).
func (r *Registry) CounterFunc(name, help string, fn func() uint64, labels ...string) error {
	return r.add(&Metric{Name: name, Help: help, Kind: KindCounter, value: func() float64 { return float64(fn()) }}, labels)
}

// Gauge registers a gauge read from v.
func (r *Registry) Gauge(name, help string, v *atomic.Int64, labels ...string) error {
	return r.add(&Metric{Name: name, Help: help, Kind: KindGauge, value: func() float64 { return float64(v.Load()) }}, labels)
}

// GaugeFunc registers a gauge whose value fn returns (fn must be cheap and
// safe to call from the exporter's goroutine).
func (r *Registry) GaugeFunc(name, help string, fn func() float64, labels ...string) error {
	return r.add(&Metric{Name: name, Help: help, Kind: KindGauge, value: fn}, labels)
}

// InfoFunc registers an info-style gauge: its value is 1 and, besides the
// constant labels, it carries the labels named names whose values fn
// returns at export (in the order of names), such as a state and the
// reason for it. fn must be cheap and safe to call from the exporter's
// goroutine.
func (r *Registry) InfoFunc(name, help string, names []string, fn func() []string, labels ...string) error {
	for _, n := range names {
		if !labelRE.MatchString(n) || strings.HasPrefix(n, "__") || n == "quantile" || n == "le" {
			return fmt.Errorf("metrics: %s: invalid or reserved label name %q", name, n)
		}
		for i := 0; i < len(labels); i += 2 {
			if labels[i] == n {
				return fmt.Errorf("metrics: %s: label %q given twice", name, n)
			}
		}
	}
	dn := append([]string(nil), names...)
	return r.add(&Metric{Name: name, Help: help, Kind: KindGauge, value: func() float64 { return 1 }, dynNames: dn, dynValues: fn}, labels)
}

// Histogram registers h. scale multiplies its values on export (1e-9 turns
// nanoseconds into seconds; 0 or 1 exports them as recorded).
func (r *Registry) Histogram(name, help string, h *Histogram, scale float64, labels ...string) error {
	if h == nil {
		return fmt.Errorf("metrics: histogram %q is nil", name)
	}
	return r.add(&Metric{Name: name, Help: help, Kind: KindHistogram, hist: h, Scale: scale}, labels)
}

func (r *Registry) add(m *Metric, labels []string) error {
	if !nameRE.MatchString(m.Name) {
		return fmt.Errorf("metrics: invalid metric name %q (want [a-zA-Z_:][a-zA-Z0-9_:]*)", m.Name)
	}
	if len(labels)%2 != 0 {
		return fmt.Errorf("metrics: %s: labels must be name/value pairs, got %d strings", m.Name, len(labels))
	}
	for i := 0; i < len(labels); i += 2 {
		if !labelRE.MatchString(labels[i]) || strings.HasPrefix(labels[i], "__") || labels[i] == "quantile" || labels[i] == "le" {
			return fmt.Errorf("metrics: %s: invalid or reserved label name %q", m.Name, labels[i])
		}
		m.Labels = append(m.Labels, Label{labels[i], labels[i+1]})
	}
	sort.Slice(m.Labels, func(i, j int) bool { return m.Labels[i].Name < m.Labels[j].Name })
	for i := 1; i < len(m.Labels); i++ {
		if m.Labels[i].Name == m.Labels[i-1].Name {
			return fmt.Errorf("metrics: %s: label %q given twice", m.Name, m.Labels[i].Name)
		}
	}
	if m.Scale == 0 {
		m.Scale = 1
	}
	key := m.Key()
	m.key = key
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys[key] {
		return fmt.Errorf("metrics: %s already registered", key)
	}
	if first := r.names[m.Name]; first != nil {
		// Prometheus requires one type, help text and label set per name.
		if first.Kind != m.Kind || first.Help != m.Help || !sameLabelNames(first.Labels, m.Labels) || strings.Join(first.dynNames, ",") != strings.Join(m.dynNames, ",") {
			return fmt.Errorf("metrics: %s: kind, help and label names must match the earlier %s (%s)", key, first.Key(), first.Kind)
		}
	} else {
		r.names[m.Name] = m
	}
	r.keys[key] = true
	r.metrics = append(r.metrics, m)
	return nil
}

func sameLabelNames(a, b []Label) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// Unregister removes every metric registered under name (for example when
// a port is removed) and reports how many it removed.
func (r *Registry) Unregister(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.metrics[:0]
	n := 0
	for _, m := range r.metrics {
		if m.Name == name {
			delete(r.keys, m.Key())
			n++
			continue
		}
		kept = append(kept, m)
	}
	clear(r.metrics[len(kept):])
	r.metrics = kept
	delete(r.names, name)
	return n
}

// Metrics returns the registered metrics sorted by Key. The Metric values
// are shared, not copied; do not modify them.
func (r *Registry) Metrics() []*Metric {
	r.mu.Lock()
	out := append([]*Metric(nil), r.metrics...)
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// HistogramSummary is the JSON form of a histogram, values multiplied by
// the metric's Scale.
type HistogramSummary struct {
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
}

// ApplyScale returns v·scale (scale 0 means 1). A scale that is the
// reciprocal of an integer, such as 1e-9, divides by that integer instead,
// so that 1000 ns prints as 1e-06 s and not 1.0000000000000002e-06.
func ApplyScale(v, scale float64) float64 {
	if scale == 0 || scale == 1 {
		return v
	}
	if scale < 1 {
		if inv := math.Round(1 / scale); math.Abs(inv*scale-1) < 1e-12 {
			return v / inv
		}
	}
	return v * scale
}

// Summarize returns the summary of a snapshot with values multiplied by scale.
func Summarize(s *Snapshot, scale float64) HistogramSummary {
	f := func(v uint64) float64 { return ApplyScale(float64(v), scale) }
	return HistogramSummary{
		Count: s.Count, Sum: f(s.Sum), Min: f(s.Min), Max: f(s.Max), Mean: ApplyScale(s.Mean(), scale),
		P50: f(s.Quantile(0.5)), P90: f(s.Quantile(0.9)), P99: f(s.Quantile(0.99)),
		P999: f(s.Quantile(0.999)), P9999: f(s.Quantile(0.9999)),
	}
}

// Values returns every metric's current value keyed by Key: a float64 for
// counters and gauges (NaN and ±Inf gauges become nil, which JSON can
// carry), a HistogramSummary for histograms.
func (r *Registry) Values() map[string]any {
	ms := r.Metrics()
	out := make(map[string]any, len(ms))
	var snap Snapshot
	for _, m := range ms {
		switch m.Kind {
		case KindHistogram:
			m.hist.SnapshotInto(&snap)
			out[m.Key()] = Summarize(&snap, m.Scale)
		default:
			v := m.Value()
			if math.IsNaN(v) || math.IsInf(v, 0) {
				out[m.KeyNow()] = nil
			} else {
				out[m.KeyNow()] = v
			}
		}
	}
	return out
}

// WriteJSON writes Values as one indented JSON object with sorted keys.
func (r *Registry) WriteJSON(w interface{ Write([]byte) (int, error) }) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.Values())
}

// JSONHandler serves r's values as JSON (the /stats.json endpoint).
func JSONHandler(r *Registry) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err := r.WriteJSON(w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// Errs gathers the errors of a series of registrations: Add each, then
// return Err.
type Errs []error

// Add keeps err (a nil one too: Err leaves it out).
func (e *Errs) Add(err error) { *e = append(*e, err) }

// Err is every error added, joined; nil when none was.
func (e Errs) Err() error { return errors.Join(e...) }
