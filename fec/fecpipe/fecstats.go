package fecpipe

import (
	"sync"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/metrics"
)

// Stats are mode fec's statistics: the cores' counters and the link
// policy, copied by the worker every 20 ms.
type Stats struct {
	mu sync.Mutex
	v  Snapshot
	// Session is the link session (session.go); Integrity the link frames'
	// check (integrity.go).
	Session   linkpipe.SessionStats
	Integrity dataplane.IntegrityStats
	// PFCRx counts PAUSE/PFC frames received on the link port (they gate
	// the host frames' classes).
	PFCRx atomic.Uint64
	// PolicyChanges counts changes of the link policy's decision.
	PolicyChanges atomic.Uint64
}

// Snapshot returns a copy of the last published state.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

func (s *Stats) store(v *Snapshot) {
	s.mu.Lock()
	s.v = *v
	s.mu.Unlock()
}

// registerFEC exports mode fec's counters (as last published).
func registerFEC(r *metrics.Registry, f *Stats) error {
	var errs metrics.Errs
	add := errs.Add
	for name, fn := range map[string]func(*Snapshot) uint64{
		"sender_data":           func(s *Snapshot) uint64 { return s.Sender.Data },
		"sender_parity":         func(s *Snapshot) uint64 { return s.Sender.Parity },
		"sender_copies":         func(s *Snapshot) uint64 { return s.Sender.Copies },
		"sender_wire_bytes":     func(s *Snapshot) uint64 { return s.Sender.WireBytes },
		"sender_unprotected":    func(s *Snapshot) uint64 { return s.Sender.Unprotect },
		"sender_too_long":       func(s *Snapshot) uint64 { return s.Sender.TooLong },
		"receiver_data":         func(s *Snapshot) uint64 { return s.Receiver.DataRx },
		"receiver_parity":       func(s *Snapshot) uint64 { return s.Receiver.Parity },
		"receiver_gaps":         func(s *Snapshot) uint64 { return s.Receiver.Gaps },
		"receiver_recovered":    func(s *Snapshot) uint64 { return s.Receiver.Recovered },
		"receiver_given_up":     func(s *Snapshot) uint64 { return s.Receiver.Skipped },
		"receiver_lost":         func(s *Snapshot) uint64 { return s.Receiver.Lost },
		"receiver_late":         func(s *Snapshot) uint64 { return s.Receiver.Late },
		"receiver_duplicates":   func(s *Snapshot) uint64 { return s.Receiver.Dup },
		"receiver_delivered":    func(s *Snapshot) uint64 { return s.Receiver.Delivered },
		"receiver_bad_parity":   func(s *Snapshot) uint64 { return s.Receiver.BadParity + s.Receiver.BadRecovery },
		"receiver_bad_data":     func(s *Snapshot) uint64 { return s.Receiver.BadData },
		"receiver_parity_short": func(s *Snapshot) uint64 { return s.Receiver.ParityShort },
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
	return errs.Err()
}

// fecDoc is mode fec's part of /stats.json.
type fecDoc struct {
	Snapshot
	Session linkpipe.SessionSnapshot `json:"session"`
	Corrupt uint64                   `json:"corrupt_frames"`
	NoRoom  uint64                   `json:"integrity_no_room"`
	PFCRx   uint64                   `json:"pfc_rx"`
}
