package linkguardian

// SenderStats counts what a Sender did. Occupancy fields are current values.
type SenderStats struct {
	DataSent        uint64 // normal frames numbered and sent
	Acked           uint64 // frames released by cumulative ACKs
	AcksRx          uint64 // explicit ACK frames received
	AckInvalid      uint64 // ACKs beyond the latest sent sequence number (ignored)
	Resyncs         uint64 // the receiver was found ahead of the sender: continued at its ACK
	ResyncDropped   uint64 // unacknowledged frames given up by resyncs
	LossNotifsRx    uint64 // loss notifications received
	RetxRequests    uint64 // frames retransmitted (once per notification round)
	RetxCopies      uint64 // retransmitted copies sent (RetxRequests × N)
	RetxSuppressed  uint64 // duplicate notifications ignored (holdoff, round cap)
	RetxUnknown     uint64 // notified frames already acknowledged (stale notification)
	LossInvalid     uint64 // loss notifications naming frames never sent or more than the TX buffer (dropped)
	DummiesSent     uint64
	TxFull          uint64 // frames refused because the TX buffer was full
	PausedRefusals  uint64 // frames refused because a pause was in force
	PausesRx        uint64
	ResumesRx       uint64
	TxBufFrames     uint64
	TxBufBytes      uint64
	TxBufPeakFrames uint64
	TxBufPeakBytes  uint64
	// The send fast path (fasttx.go): frames the kernel numbered and sent
	// (counted in DataSent too), and how often the core took sending back
	// and handed it to the kernel.
	FastSent         uint64
	FastSendClaims   uint64
	FastSendHandOffs uint64
	// FastOverrun counts frames the kernel sent past the TX buffer that no
	// ACK covered (must stay 0; see adopt).
	FastOverrun uint64
}

// ReceiverStats counts what a Receiver did. Occupancy fields are current values.
type ReceiverStats struct {
	DataRx            uint64 // original data frames received
	RetxRx            uint64 // retransmitted copies received
	DummiesRx         uint64
	Delivered         uint64 // frames handed to the host
	DupDropped        uint64 // duplicates removed
	HolesDetected     uint64 // gaps detected (one per loss notification)
	LostDetected      uint64 // frames in those gaps (loss monitor input)
	LossNotifsSent    uint64 // first notifications
	Renotifies        uint64 // repeated notifications
	Recovered         uint64 // missing frames that arrived
	RecoveredLate     uint64 // ... of which arrived without the Retx flag (link reordering)
	AckNoTimeouts     uint64 // missing frames given up on by ackNoTimeout
	LostUnprotected   uint64 // frames lost under Monitor delivery (not asked for)
	LateDelivered     uint64 // ... of which arrived late (reordered) and were delivered
	ModeChanges       uint64 // SetDelivery calls that changed the delivery
	ForcedSkips       uint64 // frames skipped because a frame was beyond the window
	ExplicitAcksSent  uint64 // including repeats
	AckRepeats        uint64 // explicit ACKs sent again because no data followed them
	PiggyAcksSent     uint64 // pending ACKs carried by data, dummies or loss notifications
	PausesSent        uint64 // pause events (including refreshes)
	ResumesSent       uint64
	ReorderFrames     uint64
	ReorderBytes      uint64
	ReorderPeakFrames uint64
	ReorderPeakBytes  uint64
	// The kernel fast path (fastrx.go): frames it delivered in order
	// (counted in DataRx and Delivered too), and how often the core took
	// the in-order point back and handed it to the kernel.
	FastDelivered uint64
	FastClaims    uint64
	FastHandOffs  uint64
	// ACKs the kernel's send path piggybacked that were newer than the
	// last one the core knew of.
	FastPiggyAcks uint64
}

// PortStats counts port-level events.
type PortStats struct {
	RxPassthrough uint64 // received frames without a link header, delivered as they are
	RxUnseq       uint64 // received unsequenced frames (only carrying an ACK)
	RxUnprotected uint64 // sequenced data received on a port without Receiver
	RxBad         uint64 // link frames that failed to decode (freed)
	TxPassthrough uint64 // host frames sent without protection
	TxBad         uint64 // host frames that cannot be protected (runts, 0x88B5), dropped
	AllocFail     uint64 // control frames not sent for lack of buffers
	Resets        uint64 // Endpoint.Reset calls (link session agreements after a peer restart)
}
