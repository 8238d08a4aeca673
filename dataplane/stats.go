package dataplane

import "sync/atomic"

// DirCounters count one direction of one port. The worker adds to them once
// per batch; readers may read them at any time.
type DirCounters struct {
	Frames atomic.Uint64
	Bytes  atomic.Uint64
	// Dropped counts frames that could not be placed on the TX ring or
	// found the port's egress buffer full (TX direction), or were dropped
	// by the pipeline (RX direction).
	Dropped atomic.Uint64
}

// PortCounters count both directions of one port.
type PortCounters struct {
	Name string
	Role PortRole
	RX   DirCounters
	TX   DirCounters
	// DownEvents counts times the interface was found down (ENETDOWN or
	// ENXIO on transmit); DownNs is the time it stayed down (events that
	// ended), Down whether it is down now.
	DownEvents atomic.Uint64
	DownNs     atomic.Int64
	Down       atomic.Bool
	// downWorkers is how many workers find the port down now, downAt
	// when the first did (worker clock: the workers share its zero).
	downWorkers atomic.Int32
	downAt      atomic.Int64
	// Egress counts the port's rate limiter and egress queue (nil: the
	// port has no rate limit).
	Egress *EgressCounters
}

// EgressCounters count a rate-limited port's egress queue (shaper.go).
// Frames and bytes sent are the port's TX counters.
type EgressCounters struct {
	Shape PortShape // in force, defaults filled in
	// Queued and QueuedBytes are what waits now; PeakFrames and PeakBytes
	// the most that ever waited.
	Queued, QueuedBytes   atomic.Uint64
	PeakFrames, PeakBytes atomic.Uint64
	// Dropped and DroppedBytes count frames that found the queue full
	// (tail drop; also counted in TX.Dropped).
	Dropped, DroppedBytes atomic.Uint64
	// LateNs is the port's time lost to its worker's lateness: frames
	// waited and the bucket was full (beyond what it caught up).
	LateNs atomic.Uint64
	// IdleNs is the port's time unused for want of frames: nothing waited
	// and the bucket was full (a port that stood empty longer than its
	// burst covers). A port meant to be busy (one flow at its rate) that
	// counts idle time was starved upstream: its worker's lateness is
	// LateNs instead.
	IdleNs atomic.Uint64
}

// Stats are the dataplane's live counters.
type Stats struct {
	// Ports count each port, in the worker's numbering (Dataplane.Ports).
	Ports []PortCounters
	// FramesExhausted counts times the UMEM had no free frame for a fill ring.
	FramesExhausted atomic.Uint64
	// Polls counts poll(2) sleeps; Loops counts worker loop iterations.
	Polls, Loops atomic.Uint64
	// PFC counts the class queues' PFC (modes whose host frames wait in
	// them: lg, lgnb, monitor, fec, and forward with --pfc).
	PFC PFCCounters
	// Workers count each worker's share (workers.go), one per worker.
	Workers []WorkerCounters
}

// DirSnapshot is a point-in-time copy of DirCounters.
type DirSnapshot struct {
	Frames  uint64 `json:"frames"`
	Bytes   uint64 `json:"bytes"`
	Dropped uint64 `json:"dropped"`
}

// EgressSnapshot is a point-in-time copy of EgressCounters.
type EgressSnapshot struct {
	PortShape
	SentFrames   uint64 `json:"sent_frames"`
	SentBytes    uint64 `json:"sent_bytes"`
	Queued       uint64 `json:"queued_frames"`
	QueuedBytes  uint64 `json:"queued_bytes"`
	PeakFrames   uint64 `json:"peak_queued_frames"`
	PeakBytes    uint64 `json:"peak_queued_bytes"`
	Dropped      uint64 `json:"dropped_frames"`
	DroppedBytes uint64 `json:"dropped_bytes"`
	LateNs       uint64 `json:"late_ns"`
	IdleNs       uint64 `json:"idle_ns"`
}

// PortSnapshot is a point-in-time copy of PortCounters.
type PortSnapshot struct {
	Name       string          `json:"name"`
	Role       PortRole        `json:"role,omitempty"`
	RX         DirSnapshot     `json:"rx"`
	TX         DirSnapshot     `json:"tx"`
	DownEvents uint64          `json:"down_events"`
	DownNs     int64           `json:"down_ns"`
	Down       bool            `json:"down"`
	Egress     *EgressSnapshot `json:"egress,omitempty"`
}

// Snapshot is a point-in-time copy of Stats, ready for JSON. Host and Link
// are the host port (zero and left out when the node has none) and the
// first link port; Ports lists every port in the worker's numbering.
type Snapshot struct {
	Mode  Mode           `json:"mode"`
	Host  PortSnapshot   `json:"host,omitzero"`
	Link  PortSnapshot   `json:"link"`
	Ports []PortSnapshot `json:"ports"`
	// FastPath is mode forward's two directions (Dataplane.FastPath); the
	// frames the kernel path carried are in the ports' counters too.
	FastPath []FastPathSnapshot `json:"fast_path,omitempty"`
	// PFC is per-class PFC: frames from the link port that gate the host
	// classes, frames sent toward the host port (nil: no class queues).
	PFC *PFCSnapshot `json:"pfc,omitempty"`
	// AFXDP is how the AF_XDP sockets were bound (Dataplane.AFXDP).
	AFXDP           AFXDPSnapshot `json:"afxdp"`
	FramesExhausted uint64        `json:"umem_frames_exhausted"`
	Polls           uint64        `json:"polls"`
	Loops           uint64        `json:"loops"`
	// Workers is each worker's share of the ports' counters above (only
	// with --workers above 1; worker i owns queue i of every port).
	Workers []WorkerSnapshot `json:"workers,omitempty"`
}

func (c *DirCounters) snapshot() DirSnapshot {
	return DirSnapshot{Frames: c.Frames.Load(), Bytes: c.Bytes.Load(), Dropped: c.Dropped.Load()}
}

func (c *PortCounters) snapshot() PortSnapshot {
	s := PortSnapshot{Name: c.Name, Role: c.Role, RX: c.RX.snapshot(), TX: c.TX.snapshot(),
		DownEvents: c.DownEvents.Load(), DownNs: c.DownNs.Load(), Down: c.Down.Load()}
	if e := c.Egress; e != nil {
		s.Egress = &EgressSnapshot{PortShape: e.Shape, SentFrames: s.TX.Frames, SentBytes: s.TX.Bytes,
			Queued: e.Queued.Load(), QueuedBytes: e.QueuedBytes.Load(),
			PeakFrames: e.PeakFrames.Load(), PeakBytes: e.PeakBytes.Load(),
			Dropped: e.Dropped.Load(), DroppedBytes: e.DroppedBytes.Load(), LateNs: e.LateNs.Load(),
			IdleNs: e.IdleNs.Load()}
	}
	return s
}

// Stats returns a snapshot of the counters. Safe to call while Run runs.
func (d *Dataplane) Stats() Snapshot {
	s := &d.stats
	snap := Snapshot{
		Mode:     d.cfg.Mode,
		FastPath: d.FastPath(), // folds the kernel's counts first
		AFXDP:    d.afxdp,

		FramesExhausted: s.FramesExhausted.Load(),
		Polls:           s.Polls.Load(),
		Loops:           s.Loops.Load(),
		Workers:         d.workerSnapshots(),
	}
	if d.cfg.classQueued() {
		snap.PFC = s.PFC.snapshot(&d.cfg.PFC)
	}
	for i := range s.Ports {
		snap.Ports = append(snap.Ports, s.Ports[i].snapshot())
	}
	if h := d.ports.Host; h >= 0 {
		snap.Host = snap.Ports[h]
	}
	snap.Link = snap.Ports[d.ports.Links[0]]
	return snap
}
