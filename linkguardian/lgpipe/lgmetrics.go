package lgpipe

import (
	"errors"
	"strconv"

	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/metrics"
)

// Register exports every lane's LinkGuardian counters and link session,
// labelled with the link port and the lane (the worker).
func (in *lgInstance) Register(r *metrics.Registry) error {
	var errs []error
	for i, s := range in.lanes {
		errs = append(errs, registerLG(r, s, "port", in.d.Link().Name, "lane", strconv.Itoa(i)))
	}
	return errors.Join(errs...)
}

// registerLG registers the LinkGuardian counters and histograms of lane
// s, and its link session; l are the lane's labels (port and lane).
func registerLG(r *metrics.Registry, s *Stats, l ...string) error {
	var errs metrics.Errs
	add := errs.Add
	add(r.Histogram("linkfabric_lg_retx_delay_seconds", "Loss detected to retransmission received (Appendix B.1).", &s.RetxDelay, 1e-9, l...))
	add(r.Histogram("linkfabric_lg_tx_buffer_frames", "TX buffer occupancy, sampled per busy loop.", &s.TxBuf, 1, l...))
	add(r.Histogram("linkfabric_lg_reorder_buffer_bytes", "Reorder buffer occupancy, sampled per busy loop.", &s.Reorder, 1, l...))
	add(r.Counter("linkfabric_lg_pfc_rx_total", "PAUSE/PFC frames received on the link port (they pause host traffic classes).", &s.PFCRx, l...))
	add(r.Counter("linkfabric_lg_pause_tx_total", "LinkGuardian PAUSE/RESUME link-header frames sent (the reorder buffer's backpressure).", &s.PauseTx, l...))
	add(r.Counter("linkfabric_lg_link_tx_ring_full_total", "Link frames that found the TX ring full.", &s.LinkTxRingFull, l...))
	add(r.Counter("linkfabric_lg_host_tx_ring_full_total", "Delivered frames dropped: host TX ring full.", &s.HostTxRingFull, l...))
	add(r.Counter("linkfabric_lg_corrupt_frames_total", "Link frames that failed the integrity check (dropped as lost).", &s.Integrity.Corrupt, l...))
	add(r.Counter("linkfabric_lg_other_check_frames_total", "Session frames sealed with another integrity check than this end's, passed to the link session so that it names the mismatch.", &s.Integrity.OtherCheck, l...))
	add(r.Counter("linkfabric_lg_mode_changes_total", "Receiving-mode changes made by the protection policy.", &s.ModeChanges, l...))
	add(r.Gauge("linkfabric_lg_copies", "N, retransmitted copies per lost frame.", &s.Copies, l...))
	add(r.GaugeFunc("linkfabric_lg_tx_loss_rate", "Loss rate of the outgoing direction, from loss notifications.", s.LossRate, l...))
	add(r.GaugeFunc("linkfabric_lg_rx_loss_rate", "Loss rate of the incoming direction, from sequence gaps.", s.RxLossRate, l...))
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
		add(r.CounterFunc("linkfabric_lg_sender_"+name+"_total", "LinkGuardian sender: "+name+".", sender(fn), l...))
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
		add(r.CounterFunc("linkfabric_lg_receiver_"+name+"_total", "LinkGuardian receiver: "+name+".", receiver(fn), l...))
	}
	add(linkpipe.RegisterSession(r, &s.Session, l...))
	return errs.Err()
}
