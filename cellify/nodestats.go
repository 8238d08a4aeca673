package cellify

// LinkStats counts one link port's traffic. Cells are counted within
// frames; Ctrl counts credit and REACH frames.
type LinkStats struct {
	TxFrames, TxBytes, TxCells, TxCtrl uint64
	RxFrames, RxBytes, RxCells, RxCtrl uint64
	// TxClassBytes[k-1]: cell frame bytes sent of loss class k, the
	// cells' own (one that took a looser class counts in its own; all
	// in [0] with loss classes off).
	TxClassBytes [MaxLossClasses]uint64
}

// HostStats counts one host port's traffic: Rx from the host, Tx
// delivered to it.
type HostStats struct {
	RxFrames, RxBytes uint64
	TxFrames, TxBytes uint64
}

// NodeStats counts what a Node did. Every frame dropped is counted in
// exactly one of the drop counters.
type NodeStats struct {
	// Host side (edge).
	HostBad       uint64 // host frames shorter than an Ethernet header or above MaxHostFrame
	Local         uint64 // host frames switched to another host port of this edge
	Hairpin       uint64 // host frames for the port they came from (dropped)
	Floods        uint64 // host frames flooded (unknown or group destination)
	FloodDrop     uint64 // flood copies over FloodRate (dropped)
	FloodHeld     uint64 // floods kept while the edge converged (its table reached no other edge, or changed within the hold)
	FloodLate     uint64 // copies of kept floods to edges reached after they came
	FloodHeldDrop uint64 // kept floods that reached no edge within the hold, or found it full while the table reached none (dropped)
	VOQDrops      uint64 // host frames a VOQ refused (full) or no VOQ could take
	CellsCut      uint64
	Stalls        uint64 // VOQ services stopped for want of a route or a buffer (retried)
	LinkFull      uint64 // ... of them, for want of room on every link of their class toward their edge (NodeConfig.LinkRoom)

	// Egress (edge).
	Delivered      uint64 // frames listed in Deliver
	DeliveredBytes uint64
	DeliverFail    uint64 // frames lost for want of a buffer
	BadRecord      uint64 // records too short to hold a source port and a frame
	FCISeen        uint64 // cells arriving with FCI

	// Credits (edge).
	CreditReqTx, CreditReqRx     uint64
	CreditGrantTx, CreditGrantRx uint64
	UnknownVOQ                   uint64 // grant entries for no VOQ of this edge
	CreditsOff                   uint64 // credit frames at an edge without credits (dropped)
	// SettingsDiffer counts credit frames from edges whose credit settings
	// (--cells-pre-credit, --cells-credit-ahead) differ from this edge's
	// (taken all the same; Node.SettingsDiffer names the last such edge).
	SettingsDiffer uint64

	// Epochs (edge): other edges' boots.
	PeerRestarts  uint64 // new boots of other edges seen as sources: their totals restart under a new session
	SessionResets uint64 // new sessions of destinations (they restarted, or restarted this edge's totals): VOQ totals restart
	StaleEpoch    uint64 // cells and credit frames of a peer's epoch or session before its current one (dropped)
	StaleSession  uint64 // credit requests naming another session (dropped; answered with grants naming the current one)

	// Fabric and both.
	Forwarded    uint64 // cells forwarded (fabric)
	CtrlFwd      uint64 // credit frames forwarded (fabric)
	ReachTx      uint64
	ReachRx      uint64
	FCIMarks     uint64 // cells this node marked
	HopDrops     uint64 // cells that had no hop left
	NoRoute      uint64 // frames dropped: no usable link toward their edge
	WrongDst     uint64 // frames at an edge addressed to another edge
	BadPort      uint64 // frames naming a host port this edge has not
	BadLink      uint64 // calls naming a link port out of range
	Resprayed    uint64 // frames taken back from a dead link and sent again
	RespraysDrop uint64 // ... that could not be (no other route, not a cell-family frame)
	AllocFail    uint64

	// ClassFallback counts cells already cut (forwarded, or handed back by
	// a link that left) that found no usable link of their loss class
	// toward their edge and took the next looser class that had one.
	ClassFallback uint64

	// Malformed frames: every decoder error, by family.
	BadCell, BadCredit, BadReach, BadType uint64
}

// VOQInfo is one VOQ's state at an edge.
type VOQInfo struct {
	Key       VOQKey
	Flood     bool   // an unscheduled flood queue
	Backlog   int    // stream bytes waiting
	Enqueued  uint64 // stream bytes ever enqueued
	Sent      uint64 // stream bytes ever cut into cells
	Granted   uint64 // grant total (credits)
	Drops     uint64 // frames refused
	DropBytes uint64
	Client    CreditClientStats
}

// CreditTotals sums an edge's credit loop state over its VOQs (bytes).
type CreditTotals struct {
	Backlog   uint64 // waiting in VOQs
	Requested uint64 // ever enqueued on credit VOQs (what requests announce)
	Granted   uint64 // grant totals
	Sent      uint64
}
