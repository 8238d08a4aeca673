package dataplane

import "sync/atomic"

// DirCounters count one direction of one port. The worker adds to them once
// per batch; readers may read them at any time.
type DirCounters struct {
	Frames atomic.Uint64
	Bytes  atomic.Uint64
	// Dropped counts frames that could not be placed on the TX ring (TX
	// direction) or were dropped by the pipeline (RX direction).
	Dropped atomic.Uint64
}

// PortCounters count both directions of one port.
type PortCounters struct {
	Name string
	RX   DirCounters
	TX   DirCounters
	// DownEvents counts times the interface was found down (ENETDOWN or
	// ENXIO on transmit); DownNs is the time it stayed down (events that
	// ended), Down whether it is down now.
	DownEvents atomic.Uint64
	DownNs     atomic.Int64
	Down       atomic.Bool
}

// Stats are the dataplane's live counters.
type Stats struct {
	Host, Link PortCounters
	// FramesExhausted counts times the UMEM had no free frame for a fill ring.
	FramesExhausted atomic.Uint64
	// Polls counts poll(2) sleeps; Loops counts worker loop iterations.
	Polls, Loops atomic.Uint64
}

// DirSnapshot is a point-in-time copy of DirCounters.
type DirSnapshot struct {
	Frames  uint64 `json:"frames"`
	Bytes   uint64 `json:"bytes"`
	Dropped uint64 `json:"dropped"`
}

// PortSnapshot is a point-in-time copy of PortCounters.
type PortSnapshot struct {
	Name       string      `json:"name"`
	RX         DirSnapshot `json:"rx"`
	TX         DirSnapshot `json:"tx"`
	DownEvents uint64      `json:"down_events"`
	DownNs     int64       `json:"down_ns"`
	Down       bool        `json:"down"`
}

// Snapshot is a point-in-time copy of Stats, ready for JSON.
type Snapshot struct {
	Mode            Mode         `json:"mode"`
	Host            PortSnapshot `json:"host"`
	Link            PortSnapshot `json:"link"`
	FramesExhausted uint64       `json:"umem_frames_exhausted"`
	Polls           uint64       `json:"polls"`
	Loops           uint64       `json:"loops"`
}

func (c *DirCounters) snapshot() DirSnapshot {
	return DirSnapshot{Frames: c.Frames.Load(), Bytes: c.Bytes.Load(), Dropped: c.Dropped.Load()}
}

func (c *PortCounters) snapshot() PortSnapshot {
	return PortSnapshot{Name: c.Name, RX: c.RX.snapshot(), TX: c.TX.snapshot(),
		DownEvents: c.DownEvents.Load(), DownNs: c.DownNs.Load(), Down: c.Down.Load()}
}

// Stats returns a snapshot of the counters. Safe to call while Run runs.
func (d *Dataplane) Stats() Snapshot {
	s := &d.stats
	return Snapshot{
		Mode:            d.cfg.Mode,
		Host:            s.Host.snapshot(),
		Link:            s.Link.snapshot(),
		FramesExhausted: s.FramesExhausted.Load(),
		Polls:           s.Polls.Load(),
		Loops:           s.Loops.Load(),
	}
}
