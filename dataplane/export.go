package dataplane

import (
	"errors"
	"strconv"

	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/pfc"
)

// Register exports the dataplane's statistics into r (for Prometheus and
// JSON): frames, bytes and drops per port and direction, the egress queue of
// a rate-limited port, the class queues' PFC, and what the mode registers
// (Instance.Register). Values are read when r is exported, never on the hot path.
func (d *Dataplane) Register(r *metrics.Registry) error {
	var errs metrics.Errs
	add := errs.Add
	for i := range d.stats.Ports {
		p := &d.stats.Ports[i]
		for dir, c := range map[string]*DirCounters{"rx": &p.RX, "tx": &p.TX} {
			l := []string{"port", p.Name, "dir", dir}
			add(r.Counter("linkfabric_frames_total", "Frames moved by the dataplane.", &c.Frames, l...))
			add(r.Counter("linkfabric_bytes_total", "Bytes moved by the dataplane.", &c.Bytes, l...))
			add(r.Counter("linkfabric_dropped_total", "Frames dropped (TX ring or egress queue full, or by the pipeline).", &c.Dropped, l...))
		}
		if e := p.Egress; e != nil {
			add(r.Counter("linkfabric_egress_dropped_total", "Frames dropped at the rate-limited port's full egress queue (tail drop).", &e.Dropped, "port", p.Name))
			add(r.Counter("linkfabric_egress_dropped_bytes_total", "Bytes dropped at the rate-limited port's full egress queue.", &e.DroppedBytes, "port", p.Name))
			add(r.GaugeFunc("linkfabric_egress_queued_bytes", "Bytes waiting in the rate-limited port's egress queue.", func() float64 { return float64(e.QueuedBytes.Load()) }, "port", p.Name))
			add(r.GaugeFunc("linkfabric_egress_peak_queued_bytes", "Most bytes that waited in the port's egress queue.", func() float64 { return float64(e.PeakBytes.Load()) }, "port", p.Name))
			add(r.GaugeFunc("linkfabric_egress_rate_bps", "The port's rate limit, bit/s on the wire.", func() float64 { return float64(e.Shape.Rate) }, "port", p.Name))
			add(r.GaugeFunc("linkfabric_egress_late_seconds", "Time the rate-limited port lost to its worker's lateness (frames waited, the bucket full).", func() float64 { return float64(e.LateNs.Load()) / 1e9 }, "port", p.Name))
			add(r.GaugeFunc("linkfabric_egress_idle_seconds", "Time the rate-limited port had nothing to send and a full bucket (starved by what feeds it).", func() float64 { return float64(e.IdleNs.Load()) / 1e9 }, "port", p.Name))
		}
		add(r.Counter("linkfabric_port_down_total", "Times the interface was found down (ENETDOWN/ENXIO on transmit).", &p.DownEvents, "port", p.Name))
		add(r.GaugeFunc("linkfabric_port_down_seconds", "Time the interface was down (ended events).", func() float64 { return float64(p.DownNs.Load()) / 1e9 }, "port", p.Name))
	}
	add(r.Counter("linkfabric_umem_exhausted_total", "Times no free UMEM frame was left for a fill ring.", &d.stats.FramesExhausted))
	add(d.registerOps(r))
	if d.cfg.classQueued() {
		add(registerPFC(r, &d.stats.PFC))
	}
	if d.inst != nil {
		add(d.inst.Register(r))
	}
	return errs.Err()
}

// registerPFC exports per-class PFC (hostpfc.go).
func registerPFC(r *metrics.Registry, c *PFCCounters) error {
	errs := []error{r.Counter("linkfabric_pfc_rx_total", "PAUSE/PFC frames received on the link port (they gate the host classes).", &c.Rx)}
	for i := range pfc.NumClasses {
		class := strconv.Itoa(i)
		errs = append(errs,
			r.Counter("linkfabric_pfc_rx_pause_total", "PAUSE/PFC frames from the link port that paused the class.", &c.RxPause[i], "class", class),
			r.Counter("linkfabric_pfc_tx_total", "PFC frames sent toward the host port naming the class.", &c.Tx[i], "class", class),
			r.Counter("linkfabric_pfc_xoff_total", "Pauses of the class sent toward the host (its queue reached XOFF).", &c.Xoff[i], "class", class),
			r.Counter("linkfabric_pfc_xon_total", "Resumes of the class sent toward the host (its queue fell to XON).", &c.Xon[i], "class", class))
	}
	return errors.Join(errs...)
}
