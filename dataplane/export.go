package dataplane

import (
	"errors"
	"strconv"

	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/pfc"
)

// Register exports the dataplane's statistics into r (for Prometheus and
// JSON): frames, bytes and drops per port and direction, the egress queue of
// a rate-limited port, and in modes lg and lgnb the LinkGuardian counters
// and histograms. Values are read when r is exported, never on the hot path.
func (d *Dataplane) Register(r *metrics.Registry) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
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
		}
		add(r.Counter("linkfabric_port_down_total", "Times the interface was found down (ENETDOWN/ENXIO on transmit).", &p.DownEvents, "port", p.Name))
		add(r.GaugeFunc("linkfabric_port_down_seconds", "Time the interface was down (ended events).", func() float64 { return float64(p.DownNs.Load()) / 1e9 }, "port", p.Name))
	}
	add(r.Counter("linkfabric_umem_exhausted_total", "Times no free UMEM frame was left for a fill ring.", &d.stats.FramesExhausted))
	if d.cfg.classQueued() {
		add(registerPFC(r, &d.stats.PFC))
	}
	if c := d.cellStats; c != nil {
		add(registerCells(r, c))
	}
	if f := d.fecStats; f != nil {
		add(registerFEC(r, f))
	}
	s := d.lgStats
	if s == nil {
		return errors.Join(errs...)
	}
	add(r.Histogram("linkfabric_lg_retx_delay_seconds", "Loss detected to retransmission received (Appendix B.1).", &s.RetxDelay, 1e-9))
	add(r.Histogram("linkfabric_lg_tx_buffer_frames", "TX buffer occupancy, sampled per busy loop.", &s.TxBuf, 1))
	add(r.Histogram("linkfabric_lg_reorder_buffer_bytes", "Reorder buffer occupancy, sampled per busy loop.", &s.Reorder, 1))
	add(r.Counter("linkfabric_lg_pfc_rx_total", "PAUSE/PFC frames received on the link port (they pause host traffic classes).", &s.PFCRx))
	add(r.Counter("linkfabric_lg_pause_tx_total", "LinkGuardian PAUSE/RESUME link-header frames sent (the reorder buffer's backpressure).", &s.PauseTx))
	add(r.Counter("linkfabric_lg_link_tx_ring_full_total", "Link frames that found the TX ring full.", &s.LinkTxRingFull))
	add(r.Counter("linkfabric_lg_host_tx_ring_full_total", "Delivered frames dropped: host TX ring full.", &s.HostTxRingFull))
	add(r.Counter("linkfabric_lg_corrupt_frames_total", "Link frames that failed the integrity check (dropped as lost).", &s.Integrity.Corrupt))
	add(r.Counter("linkfabric_lg_other_check_frames_total", "Session frames sealed with another integrity check than this end's, passed to the link session so that it names the mismatch.", &s.Integrity.OtherCheck))
	add(r.Counter("linkfabric_lg_mode_changes_total", "Receiving-mode changes made by the protection policy.", &s.ModeChanges))
	add(r.Gauge("linkfabric_lg_copies", "N, retransmitted copies per lost frame.", &s.Copies))
	add(r.GaugeFunc("linkfabric_lg_tx_loss_rate", "Loss rate of the outgoing direction, from loss notifications.", s.LossRate))
	add(r.GaugeFunc("linkfabric_lg_rx_loss_rate", "Loss rate of the incoming direction, from sequence gaps.", s.RxLossRate))
	sender := func(f func(*linkguardian.SenderStats) uint64) func() uint64 {
		return func() uint64 {
			if c := s.Core(); c.Sender != nil {
				return f(c.Sender)
			}
			return 0
		}
	}
	receiver := func(f func(*linkguardian.ReceiverStats) uint64) func() uint64 {
		return func() uint64 {
			if c := s.Core(); c.Receiver != nil {
				return f(c.Receiver)
			}
			return 0
		}
	}
	for name, fn := range map[string]func(*linkguardian.SenderStats) uint64{
		"data_sent":      func(x *linkguardian.SenderStats) uint64 { return x.DataSent },
		"retx_requests":  func(x *linkguardian.SenderStats) uint64 { return x.RetxRequests },
		"retx_copies":    func(x *linkguardian.SenderStats) uint64 { return x.RetxCopies },
		"dummies_sent":   func(x *linkguardian.SenderStats) uint64 { return x.DummiesSent },
		"tx_full":        func(x *linkguardian.SenderStats) uint64 { return x.TxFull },
		"pause_refusals": func(x *linkguardian.SenderStats) uint64 { return x.PausedRefusals },
	} {
		add(r.CounterFunc("linkfabric_lg_sender_"+name+"_total", "LinkGuardian sender: "+name+".", sender(fn)))
	}
	for name, fn := range map[string]func(*linkguardian.ReceiverStats) uint64{
		"data_rx":            func(x *linkguardian.ReceiverStats) uint64 { return x.DataRx },
		"holes_detected":     func(x *linkguardian.ReceiverStats) uint64 { return x.HolesDetected },
		"lost_detected":      func(x *linkguardian.ReceiverStats) uint64 { return x.LostDetected },
		"recovered":          func(x *linkguardian.ReceiverStats) uint64 { return x.Recovered },
		"ack_no_timeouts":    func(x *linkguardian.ReceiverStats) uint64 { return x.AckNoTimeouts },
		"lost_unprotected":   func(x *linkguardian.ReceiverStats) uint64 { return x.LostUnprotected },
		"duplicates_dropped": func(x *linkguardian.ReceiverStats) uint64 { return x.DupDropped },
		"explicit_acks_sent": func(x *linkguardian.ReceiverStats) uint64 { return x.ExplicitAcksSent },
		"pauses_sent":        func(x *linkguardian.ReceiverStats) uint64 { return x.PausesSent },
		"resumes_sent":       func(x *linkguardian.ReceiverStats) uint64 { return x.ResumesSent },
	} {
		add(r.CounterFunc("linkfabric_lg_receiver_"+name+"_total", "LinkGuardian receiver: "+name+".", receiver(fn)))
	}
	return errors.Join(errs...)
}

// registerCells exports mode cells' counters (as last published).
func registerCells(r *metrics.Registry, c *CellStats) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	snap := c.Snapshot()
	for i, l := range snap.Links {
		link := func(f func(*CellLinkSnapshot) uint64) func() uint64 {
			return func() uint64 {
				s := c.Snapshot()
				return f(&s.Links[i])
			}
		}
		for _, dir := range []struct {
			dir          string
			bytes, cells func(*CellLinkSnapshot) uint64
		}{
			{"tx", func(s *CellLinkSnapshot) uint64 { return s.TxBytes }, func(s *CellLinkSnapshot) uint64 { return s.TxCells }},
			{"rx", func(s *CellLinkSnapshot) uint64 { return s.RxBytes }, func(s *CellLinkSnapshot) uint64 { return s.RxCells }},
		} {
			add(r.CounterFunc("linkfabric_cells_link_bytes_total", "Bytes of cell-family frames on a link port.", link(dir.bytes), "port", l.Name, "dir", dir.dir))
			add(r.CounterFunc("linkfabric_cells_link_cells_total", "Cells on a link port.", link(dir.cells), "port", l.Name, "dir", dir.dir))
		}
		add(r.CounterFunc("linkfabric_cells_link_exclusions_total", "Times a link left the routes.", link(func(s *CellLinkSnapshot) uint64 { return s.Exclusions }), "port", l.Name))
	}
	for name, fn := range map[string]func(*CellsSnapshot) uint64{
		"reasm_delivered":  func(s *CellsSnapshot) uint64 { return s.ReasmDelivered },
		"reasm_discarded":  func(s *CellsSnapshot) uint64 { return s.ReasmDiscards },
		"malformed":        func(s *CellsSnapshot) uint64 { return s.Malformed },
		"hop_drops":        func(s *CellsSnapshot) uint64 { return s.HopDrops },
		"fci_marks":        func(s *CellsSnapshot) uint64 { return s.FCIMarks },
		"voq_drops":        func(s *CellsSnapshot) uint64 { return s.Node.VOQDrops },
		"no_route":         func(s *CellsSnapshot) uint64 { return s.Node.NoRoute },
		"credit_granted":   func(s *CellsSnapshot) uint64 { return s.CreditGranted },
		"credit_requested": func(s *CellsSnapshot) uint64 { return s.CreditRequested },
	} {
		add(r.CounterFunc("linkfabric_cells_"+name+"_total", "Cells: "+name+".", func() uint64 { s := c.Snapshot(); return fn(&s) }))
	}
	add(r.GaugeFunc("linkfabric_cells_voq_backlog_bytes", "Bytes waiting in the edge's VOQs.", func() float64 { return float64(c.Snapshot().VOQBacklog) }))
	add(r.Counter("linkfabric_cells_corrupt_frames_total", "Link frames that failed the integrity check.", &c.Integrity.Corrupt))
	add(r.Counter("linkfabric_cells_other_check_frames_total", "Session frames sealed with another integrity check than this end's, passed to the link session so that it names the mismatch.", &c.Integrity.OtherCheck))
	return errors.Join(errs...)
}

// registerFEC exports mode fec's counters (as last published).
func registerFEC(r *metrics.Registry, f *FECStats) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	for name, fn := range map[string]func(*FECSnapshot) uint64{
		"sender_data":           func(s *FECSnapshot) uint64 { return s.Sender.Data },
		"sender_parity":         func(s *FECSnapshot) uint64 { return s.Sender.Parity },
		"sender_copies":         func(s *FECSnapshot) uint64 { return s.Sender.Copies },
		"sender_wire_bytes":     func(s *FECSnapshot) uint64 { return s.Sender.WireBytes },
		"sender_unprotected":    func(s *FECSnapshot) uint64 { return s.Sender.Unprotect },
		"sender_too_long":       func(s *FECSnapshot) uint64 { return s.Sender.TooLong },
		"receiver_data":         func(s *FECSnapshot) uint64 { return s.Receiver.DataRx },
		"receiver_parity":       func(s *FECSnapshot) uint64 { return s.Receiver.Parity },
		"receiver_gaps":         func(s *FECSnapshot) uint64 { return s.Receiver.Gaps },
		"receiver_recovered":    func(s *FECSnapshot) uint64 { return s.Receiver.Recovered },
		"receiver_given_up":     func(s *FECSnapshot) uint64 { return s.Receiver.Skipped },
		"receiver_lost":         func(s *FECSnapshot) uint64 { return s.Receiver.Lost },
		"receiver_late":         func(s *FECSnapshot) uint64 { return s.Receiver.Late },
		"receiver_duplicates":   func(s *FECSnapshot) uint64 { return s.Receiver.Dup },
		"receiver_delivered":    func(s *FECSnapshot) uint64 { return s.Receiver.Delivered },
		"receiver_bad_parity":   func(s *FECSnapshot) uint64 { return s.Receiver.BadParity + s.Receiver.BadRecovery },
		"receiver_bad_data":     func(s *FECSnapshot) uint64 { return s.Receiver.BadData },
		"receiver_parity_short": func(s *FECSnapshot) uint64 { return s.Receiver.ParityShort },
	} {
		add(r.CounterFunc("linkfabric_fec_"+name+"_total", "FEC: "+name+".", func() uint64 { s := f.Snapshot(); return fn(&s) }))
	}
	add(r.GaugeFunc("linkfabric_fec_n", "FEC: data frames per parity frame in force (0: none).", func() float64 { return float64(f.Snapshot().N) }))
	add(r.GaugeFunc("linkfabric_fec_copies", "FEC: transmissions per frame in force.", func() float64 { return float64(f.Snapshot().Copies) }))
	add(r.GaugeFunc("linkfabric_fec_rx_loss_rate", "FEC: loss rate per transmission of the incoming direction (monitor window).", func() float64 { return f.Snapshot().RxLoss }))
	add(r.GaugeFunc("linkfabric_fec_tx_loss_rate", "FEC: loss rate of the outgoing direction, as the peer reports it.", func() float64 { return f.Snapshot().TxLoss }))
	add(r.GaugeFunc("linkfabric_fec_policy_action", "FEC: the link policy's action for the outgoing direction (0 none, 1 fec, 2 replicate, 3 lg, 4 exclude).", func() float64 { return float64(f.Snapshot().Policy.State.Choice.Action) }))
	add(r.Counter("linkfabric_fec_policy_changes_total", "FEC: changes of the link policy's decision.", &f.PolicyChanges))
	add(r.Counter("linkfabric_fec_corrupt_frames_total", "Link frames that failed the integrity check (dropped as lost).", &f.Integrity.Corrupt))
	add(r.Counter("linkfabric_fec_other_check_frames_total", "Session frames sealed with another integrity check than this end's, passed to the link session so that it names the mismatch.", &f.Integrity.OtherCheck))
	add(r.Counter("linkfabric_fec_pfc_rx_total", "PAUSE/PFC frames received on the link port.", &f.PFCRx))
	return errors.Join(errs...)
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
