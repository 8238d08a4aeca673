package fct

import "time"

// Flow is the outcome of one measured flow (one TCP connection carrying
// Size bytes from the sender to the receiver).
type Flow struct {
	Arm  string `json:"arm"`  // experiment arm label (noloss, loss, lg, lgnb, kernel, ...)
	Tool string `json:"tool"` // "builtin" or "iperf"
	ID   int    `json:"id"`   // index of the flow within its run (warm-up flows excluded)
	Size int64  `json:"size"` // bytes of TCP payload sent by the sender
	// Start is the wall-clock time the flow started (builtin: just before
	// connect(); iperf: capture timestamp of the SYN).
	Start time.Time `json:"start"`
	// FCT is the flow completion time; see the package documentation for
	// its exact definition per tool. Zero when Failed.
	FCT    time.Duration `json:"fct_ns"`
	Failed bool          `json:"failed"`
	Err    string        `json:"error,omitempty"`
	// Retrans counts retransmissions by the sender: tcpi_total_retrans of
	// the sender socket (builtin) or retransmitted data segments + SYNs seen
	// in the capture (iperf).
	Retrans       uint32 `json:"retrans"`
	Retransmitted bool   `json:"retransmitted"`
}
