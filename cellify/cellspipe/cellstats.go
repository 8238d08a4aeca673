package cellspipe

import (
	"slices"
	"sync"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/metrics"
)

// Stats are the statistics of mode cells: the node's counters, copied
// by the worker every 20 ms (and when it stops) under a small mutex, and the
// integrity check of the link frames (live).
type Stats struct {
	mu   sync.Mutex
	snap Snapshot
	// Integrity counts the link frames' integrity check (integrity.go).
	Integrity dataplane.IntegrityStats
}

// Snapshot is the cells part of the statistics.
type Snapshot struct {
	NodeID   uint16 `json:"node_id"`
	Role     string `json:"role"` // edge or fabric
	Spray    string `json:"spray"`
	CellSize int    `json:"cell_size"`
	Credits  bool   `json:"credits"`
	Packing  bool   `json:"packing"`
	// LinkMode is what runs under the cells on every link (none, lg,
	// lgnb, monitor); CopyFails counts cells a link gave back that found no
	// UMEM frame to be copied into (lost).
	LinkMode  string `json:"link_mode"`
	CopyFails uint64 `json:"copy_fails,omitempty"`
	// PreCredit is each VOQ's standing pre-credit in bytes (with credits).
	PreCredit int `json:"pre_credit_bytes"`
	// LossBounds are the loss classes' bounds (none: classes off);
	// ClassMap[tc] the loss class of traffic class tc.
	LossBounds []float64 `json:"loss_bounds,omitempty"`
	ClassMap   []uint8   `json:"class_map,omitempty"`

	Links []LinkSnapshot `json:"links"`
	Hosts []HostSnapshot `json:"hosts,omitempty"`

	// Edge: bytes waiting in the VOQs; the credit loop's totals over
	// them (requested: ever enqueued on credit VOQs; granted; sent);
	// records the reassembly delivered and discarded (lost to holes,
	// resyncs, malformed), and the holes it skipped.
	VOQs            int    `json:"voqs"`
	VOQBacklog      uint64 `json:"voq_backlog_bytes"`
	CreditRequested uint64 `json:"credit_requested_bytes"`
	CreditGranted   uint64 `json:"credit_granted_bytes"`
	CreditSent      uint64 `json:"credit_sent_bytes"`
	ReasmDelivered  uint64 `json:"reasm_delivered"`
	ReasmDiscards   uint64 `json:"reasm_discarded"`
	ReasmTimeouts   uint64 `json:"reasm_timeouts"`

	// Exclusions counts links leaving the usable set (every reason);
	// UsableLinks is how many are usable now.
	Exclusions  uint64 `json:"exclusions"`
	UsableLinks int    `json:"usable_links"`
	// FCIMarks: cells this fabric node marked; FCISeen: cells arriving at
	// this edge marked. HopDrops: cells without a hop left. Malformed:
	// link frames no decoder accepted (bad cell, credit, REACH or type).
	FCIMarks  uint64 `json:"fci_marks"`
	FCISeen   uint64 `json:"fci_seen"`
	HopDrops  uint64 `json:"hop_drops"`
	Malformed uint64 `json:"malformed"`

	// UmemFree is the UMEM frames on the free list; FramesHeld the frames
	// the pipeline was given or allocated and has not released at the end
	// of its last Poll (always 0: the node holds no frame between calls).
	UmemFree   int   `json:"umem_free_frames"`
	FramesHeld int64 `json:"frames_held"`
	// MaxPollGap is the longest time (ns) the worker called later than
	// the deadline it slept until (or than its previous call, if that was
	// later): how long it was kept from running (a peer's such stall
	// longer than ReachTh intervals excludes its links). Stalled is the
	// time the node's clock did not count: every such lateness beyond 2 ms.
	MaxPollGap int64 `json:"max_poll_gap_ns"`
	Stalled    int64 `json:"stalled_ns"`

	Node  cellify.NodeStats  `json:"node"`
	Reasm cellify.ReasmStats `json:"reasm"`
	// Kernel is a fabric node's kernel path (nil when off); what it
	// forwarded is counted in Links and Node.Forwarded as well.
	Kernel *KernelSnapshot `json:"kernel,omitempty"`
	// KernelTx is an edge's ingress kernel path (nil when off); the cells it
	// sent are counted in Hosts, Links and Node.CellsCut as well.
	KernelTx *KernelTxSnapshot `json:"kernel_tx,omitempty"`
	// KernelRx is an edge's egress kernel path (cellrx.go), nil when off.
	KernelRx *KernelRxSnapshot `json:"kernel_rx,omitempty"`
}

// LinkSnapshot is one link port of a cell node.
type LinkSnapshot struct {
	Name       string `json:"name"`
	Up         bool   `json:"up"`
	Usable     bool   `json:"usable"`
	Peer       uint16 `json:"peer"`
	Exclusions uint64 `json:"exclusions"`
	LastReason string `json:"last_exclusion,omitempty"`
	// LastExclusionAt is when the worker saw the last exclusion (Unix
	// ns, wall clock; within one Poll of it).
	LastExclusionAt int64 `json:"last_exclusion_unix_ns,omitempty"`
	// Frames and bytes on the link (cells and control), cells and control
	// frames (credit, REACH) among them.
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	TxCells  uint64 `json:"tx_cells"`
	TxCtrl   uint64 `json:"tx_ctrl"`
	RxFrames uint64 `json:"rx_frames"`
	RxBytes  uint64 `json:"rx_bytes"`
	RxCells  uint64 `json:"rx_cells"`
	RxCtrl   uint64 `json:"rx_ctrl"`
	// With loss classes: the class the link serves (the worse of the two
	// ends' measurements; the loosest while either is unmeasured), this
	// end's and the peer's measurement (0: none yet), and the cell bytes
	// sent per loss class (index k-1: class k).
	Class         uint8    `json:"loss_class,omitempty"`
	MeasuredClass uint8    `json:"measured_class,omitempty"`
	PeerClass     uint8    `json:"peer_class,omitempty"`
	TxClassBytes  []uint64 `json:"tx_class_bytes,omitempty"`
	// LG is the link layer under the cells (nil with --cells-link-mode none).
	LG *linkpipe.CellLinkLG `json:"link_layer,omitempty"`
}

// HostSnapshot is one host port of an edge.
type HostSnapshot struct {
	Name string `json:"name"`
	// Frames and bytes from the host (rx) and delivered to it (tx).
	RxFrames uint64 `json:"rx_frames"`
	RxBytes  uint64 `json:"rx_bytes"`
	TxFrames uint64 `json:"tx_frames"`
	TxBytes  uint64 `json:"tx_bytes"`
	// EgressQueue is what the egress scheduler was last told is queued
	// toward the port (bytes).
	EgressQueue int `json:"egress_queue_bytes"`
	// Queued: deliveries waiting for room on the port's TX ring (a burst
	// released by a filled reassembly hole); QueueDrops: those that found
	// that queue full too.
	Queued     int    `json:"queued"`
	QueueDrops uint64 `json:"queue_drops"`
	// The port's credit loop (with credits): the round trip its egress
	// scheduler measures (a grant out, the first byte it let the source
	// send back; smoothed, and its variation), the credit granted and not
	// arrived, the window (egress queue plus credit in flight) that stops
	// grants, the Polls stopped there, the turns passed by VOQs at their
	// share of it or late (credit in flight, nothing back for the loop's
	// timeout: their source kept from running) and the times a VOQ was
	// found late, the credit granted back to VOQs for the turns they
	// passed late, the Polls that held a grant for a VOQ whose window was
	// in the port's queue, and the credit taken for lost.
	CreditRTT     int64  `json:"credit_rtt_ns,omitempty"`
	CreditRTTVar  int64  `json:"credit_rtt_var_ns,omitempty"`
	CreditFlight  int    `json:"credit_inflight_bytes"`
	CreditWindow  int    `json:"credit_window_bytes,omitempty"`
	WindowFull    uint64 `json:"credit_window_full,omitempty"`
	ShareFull     uint64 `json:"credit_share_full,omitempty"`
	LateFull      uint64 `json:"credit_late_full,omitempty"`
	Late          uint64 `json:"credit_late,omitempty"`
	CaughtUp      uint64 `json:"credit_caught_up_bytes,omitempty"`
	WaitedFor     uint64 `json:"credit_waited_for,omitempty"`
	Stopped       uint64 `json:"credit_stopped,omitempty"`
	Credits       uint64 `json:"credits,omitempty"`
	CreditExpired uint64 `json:"credit_expired_bytes,omitempty"`
}

// newCellStats makes the statistics of d's cell node, its configuration
// and ports filled in.
func newCellStats(d *dataplane.Dataplane) *Stats {
	cfg := d.Config()
	cc, ps := *ConfigOf(&cfg), d.Ports()
	s := &Stats{}
	c := &s.snap
	c.NodeID, c.Spray, c.CellSize, c.Role, c.LinkMode = cc.NodeID, cc.Spray, cc.CellSize, "fabric", cc.LinkMode
	if len(ps.Hosts) > 0 {
		c.Role, c.Credits, c.Packing = "edge", !cc.NoCredits, !cc.NoPacking
		if c.Credits {
			c.PreCredit = max(cc.PreCredit, 0)
		}
	}
	if lc := &cc.classes; lc.On() {
		c.LossBounds = lc.Bounds
		for tc := range cellify.Classes {
			c.ClassMap = append(c.ClassMap, uint8(lc.For(cellify.Class(tc))))
		}
	}
	c.Links = make([]LinkSnapshot, len(ps.Links))
	for l := range ps.Links {
		c.Links[l].Name = cfg.LinkPorts[l]
	}
	c.Hosts = make([]HostSnapshot, len(ps.Hosts))
	for k := range ps.Hosts {
		c.Hosts[k].Name = cfg.HostPorts[k]
	}
	return s
}

// Snapshot returns a copy of the statistics as last published.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.snap
	c.Links = slices.Clone(c.Links)
	for i := range c.Links {
		c.Links[i].TxClassBytes = slices.Clone(c.Links[i].TxClassBytes)
		if g := c.Links[i].LG; g != nil {
			v := *g
			if g.FEC != nil {
				v.FEC = g.FEC.CopyPart()
			}
			c.Links[i].LG = &v
		}
	}
	c.Hosts = slices.Clone(c.Hosts)
	return c
}

// registerCells exports mode cells' counters (as last published).
func registerCells(r *metrics.Registry, c *Stats) error {
	var errs metrics.Errs
	add := errs.Add
	snap := c.Snapshot()
	for i, l := range snap.Links {
		link := func(f func(*LinkSnapshot) uint64) func() uint64 {
			return func() uint64 {
				s := c.Snapshot()
				return f(&s.Links[i])
			}
		}
		for _, dir := range []struct {
			dir          string
			bytes, cells func(*LinkSnapshot) uint64
		}{
			{"tx", func(s *LinkSnapshot) uint64 { return s.TxBytes }, func(s *LinkSnapshot) uint64 { return s.TxCells }},
			{"rx", func(s *LinkSnapshot) uint64 { return s.RxBytes }, func(s *LinkSnapshot) uint64 { return s.RxCells }},
		} {
			add(r.CounterFunc("linkfabric_cells_link_bytes_total", "Bytes of cell-family frames on a link port.", link(dir.bytes), "port", l.Name, "dir", dir.dir))
			add(r.CounterFunc("linkfabric_cells_link_cells_total", "Cells on a link port.", link(dir.cells), "port", l.Name, "dir", dir.dir))
		}
		add(r.CounterFunc("linkfabric_cells_link_exclusions_total", "Times a link left the routes.", link(func(s *LinkSnapshot) uint64 { return s.Exclusions }), "port", l.Name))
	}
	for name, fn := range map[string]func(*Snapshot) uint64{
		"reasm_delivered":        func(s *Snapshot) uint64 { return s.ReasmDelivered },
		"reasm_discarded":        func(s *Snapshot) uint64 { return s.ReasmDiscards },
		"malformed":              func(s *Snapshot) uint64 { return s.Malformed },
		"hop_drops":              func(s *Snapshot) uint64 { return s.HopDrops },
		"fci_marks":              func(s *Snapshot) uint64 { return s.FCIMarks },
		"voq_drops":              func(s *Snapshot) uint64 { return s.Node.VOQDrops },
		"no_route":               func(s *Snapshot) uint64 { return s.Node.NoRoute },
		"credit_granted":         func(s *Snapshot) uint64 { return s.CreditGranted },
		"credit_requested":       func(s *Snapshot) uint64 { return s.CreditRequested },
		"credit_settings_differ": func(s *Snapshot) uint64 { return s.Node.SettingsDiffer },
	} {
		add(r.CounterFunc("linkfabric_cells_"+name+"_total", "Cells: "+name+".", func() uint64 { s := c.Snapshot(); return fn(&s) }))
	}
	add(r.GaugeFunc("linkfabric_cells_voq_backlog_bytes", "Bytes waiting in the edge's VOQs.", func() float64 { return float64(c.Snapshot().VOQBacklog) }))
	add(r.Counter("linkfabric_cells_corrupt_frames_total", "Link frames that failed the integrity check.", &c.Integrity.Corrupt))
	add(r.Counter("linkfabric_cells_other_check_frames_total", "Session frames sealed with another integrity check than this end's, passed to the link session so that it names the mismatch.", &c.Integrity.OtherCheck))
	return errs.Err()
}

// cellsDoc is the cells part of /stats.json.
type cellsDoc struct {
	Snapshot
	Corrupt uint64 `json:"corrupt_frames"`
	NoRoom  uint64 `json:"integrity_no_room"`
}
