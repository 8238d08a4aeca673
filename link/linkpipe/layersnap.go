package linkpipe

import "github.com/linkfabric/linkfabric/fec"

// The snapshots of the link layers under the cells (Layer.Snapshot): the
// LinkGuardian layer's, with the fec layer's coding in FEC (also mode
// fec's own snapshot).

// CellLinkLG is the link layer under the cells of one link port.
type CellLinkLG struct {
	Session string `json:"session"`
	// Mismatch names the settings of the peer that do not fit (session
	// mismatch): "--integrity csum here, crc32c at the peer".
	Mismatch   string `json:"mismatch,omitempty"`
	PeerNode   uint16 `json:"peer_node,omitempty"`
	Queued     int    `json:"queued_cells"`
	Unacked    int    `json:"unacked_cells"`
	Sent       uint64 `json:"sent"`
	RetxCopies uint64 `json:"retx_copies"`
	LostSeen   uint64 `json:"lost_detected"`
	Recovered  uint64 `json:"recovered"`
	GaveUp     uint64 `json:"gave_up"`
	// HandedBack counts cells given back to the sprayer when the link left
	// the usable set (copies of the un-ACKed ones) or its session reset;
	// Resets counts the session's resets (agreements with a new peer epoch).
	HandedBack uint64 `json:"handed_back"`
	Resets     uint64 `json:"resets"`
	// QueueDrops: cells that found the credit queue full (lost).
	QueueDrops uint64 `json:"queue_drops"`
	// NodeCollisions: HELLOs refused because the peer has this node's id.
	NodeCollisions uint64 `json:"node_collisions"`
	// GiveUps: times the link was taken out because its cells went
	// un-ACKed for ReachTh REACH intervals.
	GiveUps uint64 `json:"give_ups"`
	// NotAgreed: link frames dropped before the session agreed.
	NotAgreed uint64  `json:"not_agreed"`
	LossRate  float64 `json:"loss_rate,omitempty"`
	// FEC is the coding with --cells-link-mode fec (cellfec.go): the sender's n
	// and copies in force and where they come from, its counters (data
	// cells, parity frames), the receiver's (recovered, lost: never
	// delivered), the loss measured each way and the link policy. The
	// fields above then say: Sent data cells, LostSeen cells found missing,
	// Recovered rebuilt from parity, GaveUp lost for good, LossRate the
	// raw loss of what this end receives (before recovery), QueueDrops
	// cells given to the link while its session was not up.
	FEC *FECSnapshot `json:"fec,omitempty"`
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
