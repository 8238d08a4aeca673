package fecpipe

import (
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link/linkpipe"
)

// Snapshot is a copy of mode fec's state and counters, and of the fec
// layer's under the cells (linkpipe.CellLinkLG.FEC).
type Snapshot struct {
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
	Policy Policy `json:"policy"`
	// RxHeld is the frames the Receiver holds (its window); HostQueued
	// the host frames waiting for the link; UmemFree the UMEM frames free.
	RxHeld     int `json:"rx_held_frames"`
	HostQueued int `json:"host_queued_frames"`
	UmemFree   int `json:"umem_free_frames"`
}

// Policy is the link policy's decision for the direction this end sends.
type Policy struct {
	Target   float64       `json:"target"`
	Decision string        `json:"decision"` // "" until the peer reported a measured loss
	State    fec.LinkState `json:"state"`
	// Applied: the sender runs the decision. It does not with --fec-n or
	// --fec-loss, and for lg or exclude, which mode fec cannot do (Note).
	Applied bool   `json:"applied"`
	Note    string `json:"note,omitempty"`
	Changes uint64 `json:"changes"`
}

// CopyPart is a copy of s (linkpipe.LayerPart).
func (s *Snapshot) CopyPart() linkpipe.LayerPart {
	c := *s
	return &c
}
