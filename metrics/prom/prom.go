// Package prom exports a metrics.Registry to Prometheus and serves it over
// HTTP together with the registry's JSON view.
//
// The Collector reads the registry's atomic values when Prometheus scrapes;
// nothing on the dataplane's per-frame path calls into client_golang.
// Histograms are exported as Prometheus summaries (quantiles 0.5, 0.9, 0.99,
// 0.999, 0.9999 plus _sum and _count), computed from a snapshot at scrape time.
package prom

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/linkfabric/linkfabric/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Quantiles are the quantiles exported for every histogram.
var Quantiles = []float64{0.5, 0.9, 0.99, 0.999, 0.9999}

// Collector is a prometheus.Collector over a metrics.Registry. It is
// "unchecked" (Describe sends nothing) because the registry's contents can
// change at run time (ports come and go); the Registry itself enforces one
// kind, help and label set per name.
type Collector struct{ r *metrics.Registry }

// NewCollector returns a Collector for r.
func NewCollector(r *metrics.Registry) *Collector { return &Collector{r: r} }

// Describe implements prometheus.Collector (unchecked collector: sends nothing).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var snap metrics.Snapshot
	for _, m := range c.r.Metrics() {
		labels := prometheus.Labels{}
		for _, l := range m.LabelsNow() {
			labels[l.Name] = l.Value
		}
		desc := prometheus.NewDesc(m.Name, m.Help, nil, labels)
		var pm prometheus.Metric
		var err error
		switch m.Kind {
		case metrics.KindCounter:
			pm, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, m.Value())
		case metrics.KindGauge:
			pm, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.Value())
		case metrics.KindHistogram:
			m.Histogram().SnapshotInto(&snap)
			q := make(map[float64]float64, len(Quantiles))
			for _, x := range Quantiles {
				q[x] = metrics.ApplyScale(float64(snap.Quantile(x)), m.Scale)
			}
			pm, err = prometheus.NewConstSummary(desc, snap.Count, metrics.ApplyScale(float64(snap.Sum), m.Scale), q)
		default:
			err = fmt.Errorf("unknown kind %v", m.Kind)
		}
		if err != nil {
			pm = prometheus.NewInvalidMetric(desc, err)
		}
		ch <- pm
	}
}

// Handler returns an http.Handler serving /metrics (Prometheus text or
// OpenMetrics, by content negotiation) and /stats.json (metrics.JSONHandler)
// for r.
func Handler(r *metrics.Registry) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewCollector(r)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.Handle("/stats.json", metrics.JSONHandler(r))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "linkfabric metrics: /metrics (Prometheus), /stats.json (JSON)")
	})
	return mux, nil
}

// DefaultAddr is where Serve listens when given "".
const DefaultAddr = "127.0.0.1:9464"

// Serve serves metrics.Default on addr; see ServeRegistry.
func Serve(addr string) (*Server, error) { return ServeRegistry(addr, metrics.Default) }

// Server is a running metrics HTTP server.
type Server struct {
	srv *http.Server
	ln  net.Listener
	err chan error
}

// Addr returns the address the server listens on (useful with port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to 2 s for in-flight scrapes.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if e := <-s.err; e != nil && !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = e
	}
	return err
}

// ServeRegistry listens on addr and serves r in a background goroutine
// until Close. The address defaults to loopback: "" means DefaultAddr and a
// port-only address such as ":9464" binds 127.0.0.1, because the stats of a
// dataplane are not for the whole network; give "0.0.0.0:9464" or a
// specific address to expose them. The listen error (port in use, bad
// address) is returned at once.
func ServeRegistry(addr string, r *metrics.Registry) (*Server, error) {
	addr, err := LoopbackDefault(addr)
	if err != nil {
		return nil, err
	}
	h, err := Handler(r)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w (choose another address, e.g. 127.0.0.1:0)", addr, err)
	}
	s := &Server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		ln:  ln,
		err: make(chan error, 1),
	}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

// LoopbackDefault is the address to listen on for addr: "" is DefaultAddr
// and a port-only address (":9464") binds 127.0.0.1; others are kept.
func LoopbackDefault(addr string) (string, error) {
	if addr == "" {
		return DefaultAddr, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("metrics: address %q: %w (want host:port, e.g. 127.0.0.1:9464)", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}
