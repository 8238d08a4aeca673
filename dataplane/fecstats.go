package dataplane

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/metrics"
)

// FECStats are mode fec's statistics: the cores' counters and the link
// policy, copied by the worker every 20 ms.
type FECStats struct {
	mu sync.Mutex
	v  FECSnapshot
	// Session is the link session (session.go); Integrity the link frames'
	// check (integrity.go).
	Session   SessionStats
	Integrity IntegrityStats
	// PFCRx counts PAUSE/PFC frames received on the link port (they gate
	// the host frames' classes).
	PFCRx atomic.Uint64
	// PolicyChanges counts changes of the link policy's decision.
	PolicyChanges atomic.Uint64
}

// FECSnapshot is a copy of mode fec's state and counters.
type FECSnapshot struct {
	// Sender protects what this end sends (its N and Copies are in force);
	// Receiver recovers what it receives: Recovered frames rebuilt from
	// parity, Skipped holes given up on (in order, after Wait), Lost
	// numbers never delivered (the residual), Dup replication copies dropped.
	Sender   fec.SenderStats   `json:"sender"`
	Receiver fec.ReceiverStats `json:"receiver"`
	// N and Copies are the sender's protection in force; Basis says where
	// it comes from: "fixed" (--fec-n), "given loss" (--fec-loss) or
	// "measured loss" (the policy on the peer's reports).
	N      int    `json:"n"`
	Copies int    `json:"copies"`
	Basis  string `json:"basis"`
	// WaitNs is the receiver's bounded wait in order (0: --fec-immediate).
	WaitNs int64 `json:"wait_ns"`
	// RxLoss and RxBurst are the loss rate (per transmission) and mean loss
	// run of the frames this end receives, over the monitor's window
	// (RxMeasured: enough frames in it); TxLoss and TxBurst the same for
	// what it sends, as the peer reported (TxMeasured).
	RxLoss     float64 `json:"rx_loss_rate"`
	RxBurst    float64 `json:"rx_mean_burst"`
	RxMeasured bool    `json:"rx_measured"`
	TxLoss     float64 `json:"tx_loss_rate"`
	TxBurst    float64 `json:"tx_mean_burst"`
	TxMeasured bool    `json:"tx_measured"`
	// Policy is the link policy's view of the outgoing direction.
	Policy FECPolicy `json:"policy"`
	// RxHeld is the frames the Receiver holds (its window); HostQueued
	// the host frames waiting for the link; UmemFree the UMEM frames free.
	RxHeld     int `json:"rx_held_frames"`
	HostQueued int `json:"host_queued_frames"`
	UmemFree   int `json:"umem_free_frames"`
}

// FECPolicy is the link policy's decision for the direction this end sends.
type FECPolicy struct {
	Target   float64       `json:"target"`
	Decision string        `json:"decision"` // "" until the peer reported a measured loss
	State    fec.LinkState `json:"state"`
	// Applied: the sender runs the decision. It does not with --fec-n or
	// --fec-loss, and for lg or exclude, which mode fec cannot do (Note).
	Applied bool   `json:"applied"`
	Note    string `json:"note,omitempty"`
	Changes uint64 `json:"changes"`
}

// Snapshot returns a copy of the last published state.
func (s *FECStats) Snapshot() FECSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v
}

func (s *FECStats) store(v *FECSnapshot) {
	s.mu.Lock()
	s.v = *v
	s.mu.Unlock()
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

// fecDoc is mode fec's part of /stats.json.
type fecDoc struct {
	FECSnapshot
	Session SessionSnapshot `json:"session"`
	Corrupt uint64          `json:"corrupt_frames"`
	NoRoom  uint64          `json:"integrity_no_room"`
	PFCRx   uint64          `json:"pfc_rx"`
}
