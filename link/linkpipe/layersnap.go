package linkpipe

// The snapshots of the link layers under the cells (Layer.Snapshot): what
// every layer fills, and in FEC the fec layer's own part (its coding).

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
	// FEC is the coding with --cells-link-mode fec (fecpipe/cellfec.go): the sender's n
	// and copies in force and where they come from, its counters (data
	// cells, parity frames), the receiver's (recovered, lost: never
	// delivered), the loss measured each way and the link policy. The
	// fields above then say: Sent data cells, LostSeen cells found missing,
	// Recovered rebuilt from parity, GaveUp lost for good, LossRate the
	// raw loss of what this end receives (before recovery), QueueDrops
	// cells given to the link while its session was not up.
	FEC LayerPart `json:"fec,omitempty"`
}

// LayerPart is a layer's own part of its snapshot (CellLinkLG.FEC: the fec
// layer's, a *fecpipe.Snapshot).
type LayerPart interface {
	// CopyPart is a copy that the layer does not change.
	CopyPart() LayerPart
}
