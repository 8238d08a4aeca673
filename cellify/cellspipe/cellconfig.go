package cellspipe

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/linkpipe"
)

// ModeCells runs a cell node (cellify.Node): an edge when the node has host
// ports (host frames packed into cells, sprayed over the link ports, with
// credits from the destination's egress scheduler; cells reassembled and
// delivered to the host ports), a fabric node when it has none (cells
// sprayed again toward their edge).
const ModeCells dataplane.Mode = "cells"

// Config configures mode cells. Zero fields take the defaults.
type Config struct {
	// NodeID is the node's fabric address; every node of a fabric needs its
	// own. An edge's is 1..CellMaxEdges-1 (its bit in the reachability
	// bitmaps), a fabric node's 1..65535. 0: derived from the MAC of the
	// node's first port (CellNodeID), which two nodes share only by chance.
	NodeID uint16
	// Spray is how cells pick a link: perm (default), p2c or hash.
	Spray string
	// CellSize is the payload bytes per cell. 0: what fits the smallest
	// link MTU with the link and cell headers and, unless the integrity
	// check is off, its trailer.
	CellSize int
	// NoCredits sends cells as host frames arrive (push) instead of within
	// the destination's grants (pull, the default); NoPacking cuts each
	// host frame into its own cells instead of packing a VOQ's frames
	// into one stream of cells (the default).
	NoCredits, NoPacking bool
	// LinkMode is what runs under the cells on every link port: none (the
	// default: cells as they are), lg (LinkGuardian: cells sequenced,
	// retransmitted on loss, delivered in order per link; a link that
	// leaves the usable set hands its un-ACKed cells back to the sprayer,
	// so a link failure loses no packet), lgnb (the same, delivered as
	// they come: the reassembly orders them anyway), monitor (sequenced,
	// not retransmitted: each link's loss rate is measured and a link above
	// ReachConfig.LossFaulty leaves the usable set) or fec (RAIL's XOR
	// parity after every n cells, a single loss per group rebuilt, cells
	// delivered as they come; n as fecpipe.Config says; the loss measured as
	// monitor does; cells 22 bytes smaller, for the parity header:
	// cellfec.go). All but none run the link session, which carries the
	// node id; both ends need the same mode. lgpipe.Config sizes and tunes the
	// link layer (TxBuffer default defaultCellTxBuffer).
	LinkMode string
	// ReachInterval is the REACH period on every link (default 5 ms);
	// ReachTh the intervals in a row without one that exclude a link
	// (default 30), ReachUp the good ones in a row that bring it back
	// (default 3). ReachTh × ReachInterval is the longest scheduling stall
	// of a peer that its links survive: on a loaded two-core machine
	// workers were measured kept from running for 55 ms, and 300 ms with
	// five dataplanes in one process. A short ReachUp matters as much:
	// under such jitter 100 on-time REACHes in a row (at 1 ms) were rare, and links
	// that needed them never came up. A link whose interface goes down
	// leaves at once whatever they are.
	ReachInterval time.Duration
	ReachTh       int
	ReachUp       int
	// ReasmTimeout is how long a missing cell may hold up its stream before
	// the reassembly skips it (default 30 ms: above the scheduling stalls
	// of a fabric node on a loaded machine, whose cells arrive that late;
	// with 10 ms fabric3 skipped holes whose cells came after). The
	// reassembly holds up to 4095 cells per stream meanwhile (49 ms of
	// 1500-byte cells at 1 Gbit/s).
	ReasmTimeout time.Duration
	// EdgeDelivery is how an edge's kernel path (cellrx.go) puts a host
	// frame on its host port: "tc" (default: up the link port's stack to
	// a TCX program that redirects it) or "xdp" (redirected from XDP,
	// which a veth host port takes only while its peer has NAPI: GRO on
	// or an XDP program).
	EdgeDelivery string
	// HostRate is the egress schedulers' rate (bit/s) for a host port
	// without a --port-rate (default 10 Gbit/s); a rate-limited host port
	// uses its rate. Grants also stop while the port's egress queue plus
	// the credit in flight reach the credit loop's measured round trip at
	// that rate plus 4 credits (cellify.SchedConfig.MaxInFlight).
	HostRate uint64
	// Seed seeds the spraying (0: the node id).
	Seed uint64
	// LossClasses turns on loss classes (RAIL's virtual topologies, per
	// link; package cellify, lossclass.go): the bounds of classes 1, 2,
	// ... on a link's measured loss rate, ascending, e.g. "1e-6,1e-3,1e-1"
	// ("default": those). A link above the last bound is excluded. Needs a
	// link mode that measures loss (not none). "": off.
	LossClasses string
	// ClassMap binds traffic classes (a host frame's 802.1p priority, or
	// the DSCP class selector of untagged IP: DSCP/8) to loss classes,
	// "tc=k,...", e.g. "5=1" for DSCP EF (46) on the clean class; traffic
	// classes not named take the loosest. Every node of a fabric needs the
	// same bounds and map.
	ClassMap string
	classes  cellify.LossClasses

	// Tests: the reassembly window (cells per stream) and the VOQ ring
	// bytes (0: the defaults; small ones keep a fuzzer's memory small).
	reasmWindow, voqBytes int
	// PreCredit is a standing pre-credit (cellify.CreditClientConfig.Lead):
	// the bytes each VOQ may send ahead of its grant, so the first packets
	// after an idle spell do not wait a credit round trip. 0: the default
	// (DefaultPreCredit); negative: none.
	PreCredit int
	// CreditAhead is the bytes a VOQ's credit request names beyond its
	// backlog (cellify.CreditClientConfig.Ahead): granted and paced by
	// the scheduler (counted in flight once bytes are enqueued to use
	// them), they make a credit loop per CreditAhead plus half the
	// pre-credit bytes of a short flow's traffic instead of per half the
	// pre-credit. 0: the default (DefaultCreditAhead); negative: none.
	CreditAhead int

	// flags are what the flags the other way round fill (flags.go).
	flags cellsFlags
}

// Cells defaults.
const (
	// CellMaxEdges is the edges a reachability bitmap covers: edge ids are
	// below it.
	CellMaxEdges = cellify.MaxReachEdges
	// REACH every 5 ms, 30 missed to exclude: a fifth of the frames and
	// wakeups of 1 ms × 100 (an idle fabric3, five nodes: 1.07 cores at
	// 1 ms, 0.62 at 5 ms, on the 2-core test machine), and a peer's
	// scheduling stall of up to 150 ms ridden out. A link is silent for a
	// stall plus up to an interval (the peer's next REACH is due on its
	// clock, which skipped the stall), and incast on fabric3 saw workers
	// late by up to 125 ms: with 5 ms × 20 the fabric nodes excluded every
	// edge link in 4 of 4 UDP runs, with 1 ms × 100 in none of 3.
	defaultReachInterval = 5 * time.Millisecond
	defaultReachTh       = 30
	defaultReachUp       = 3
	defaultReasmTimeout  = 30 * time.Millisecond
	defaultReasmWindow   = 4095 // 4096 slots
	defaultCellHostRate  = 10_000_000_000
	// DefaultPreCredit is the standing pre-credit of a VOQ: two
	// full-size frames' records.
	DefaultPreCredit = 4096
	// DefaultCreditAhead is what a credit request names beyond the
	// backlog: on the bundle, 143-byte TCP flows back to back made a
	// credit loop (three worker wakeups) every three flows with none, one
	// every ten with it.
	DefaultCreditAhead = 4096
	// MinCellSize is the least --cells-size: a cell carries at least as
	// much payload as its own header.
	MinCellSize = cellify.CellHeaderLen
)

// defaults checks c for an edge (a node with host ports) or a fabric node
// and fills in the defaults.
// ConfigOf is c's configuration of mode cells (Mech "cells").
func ConfigOf(c *dataplane.Config) *Config { return dataplane.Mech[Config](c, "cells") }

func (c *Config) defaults(edge bool) error {
	if c.Spray == "" {
		c.Spray = "perm"
	}
	if _, err := cellify.ParseSprayMode(c.Spray); err != nil {
		return fmt.Errorf("dataplane: --cells-spray %q: want perm, p2c or hash", c.Spray)
	}
	switch c.LinkMode {
	case "", "none":
		c.LinkMode = "none"
	default:
		if linkpipe.FindLayer(c.LinkMode) != nil {
			break
		}
		return fmt.Errorf("dataplane: --cells-link-mode %q: want none, lg, lgnb, monitor or fec", c.LinkMode)
	}
	if edge && int(c.NodeID) >= CellMaxEdges {
		return fmt.Errorf("dataplane: --cells-node-id %d: an edge's id must be 1..%d (its bit in the reachability bitmaps); fabric nodes take 1..65535", c.NodeID, CellMaxEdges-1)
	}
	if c.CellSize < 0 {
		return fmt.Errorf("dataplane: --cells-size %d: want a positive size, or 0 for what fits the link MTU", c.CellSize)
	}
	c.ReachInterval = cmp.Or(c.ReachInterval, defaultReachInterval)
	c.ReachTh = cmp.Or(c.ReachTh, defaultReachTh)
	c.ReachUp = cmp.Or(c.ReachUp, defaultReachUp)
	if c.ReachInterval < 10*time.Microsecond || c.ReachTh < 1 || c.ReachTh > 10000 || c.ReachUp < 1 || c.ReachUp > 10000 {
		return fmt.Errorf("dataplane: --cells-reach-interval %v, --cells-reach-th %d, --cells-reach-up %d: want at least 10µs, and 1..10000 intervals", c.ReachInterval, c.ReachTh, c.ReachUp)
	}
	c.ReasmTimeout = cmp.Or(c.ReasmTimeout, defaultReasmTimeout)
	if c.ReasmTimeout < 0 {
		return fmt.Errorf("dataplane: --cells-reasm-timeout %v: want a positive duration", c.ReasmTimeout)
	}
	c.EdgeDelivery = cmp.Or(c.EdgeDelivery, edgeDeliveryTC)
	if c.EdgeDelivery != edgeDeliveryTC && c.EdgeDelivery != edgeDeliveryXDP {
		return fmt.Errorf("dataplane: --cells-edge-delivery %q: want tc or xdp", c.EdgeDelivery)
	}
	c.HostRate = cmp.Or(c.HostRate, defaultCellHostRate)
	c.PreCredit = cmp.Or(c.PreCredit, DefaultPreCredit)
	c.CreditAhead = cmp.Or(c.CreditAhead, DefaultCreditAhead)
	return c.parseClasses()
}

// parseClasses parses LossClasses and ClassMap into classes.
func (c *Config) parseClasses() error {
	c.classes = cellify.LossClasses{}
	switch c.LossClasses {
	case "", "off", "none":
		if c.ClassMap != "" {
			return fmt.Errorf("dataplane: --cells-class-map %q needs --cells-loss-classes (e.g. default: 1e-6,1e-3,1e-1)", c.ClassMap)
		}
		return nil
	case "default":
		c.classes.Bounds = cellify.DefaultLossBounds
	default:
		for _, f := range strings.Split(c.LossClasses, ",") {
			b, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return fmt.Errorf("dataplane: --cells-loss-classes %q: want ascending loss rates like 1e-6,1e-3,1e-1, or default", c.LossClasses)
			}
			c.classes.Bounds = append(c.classes.Bounds, b)
		}
	}
	if c.LinkMode == "none" {
		return fmt.Errorf("dataplane: --cells-loss-classes needs a link mode that measures each link's loss: --cells-link-mode monitor (or lg, lgnb, fec), on every node of the fabric")
	}
	if err := cellify.ParseClassMap(c.ClassMap, len(c.classes.Bounds), &c.classes.Of); err != nil {
		return fmt.Errorf("dataplane: --cells-class-map: %w", err)
	}
	cfg := cellify.DefaultReachConfig(1, cellify.TierEdge, 1)
	cfg.SetClasses(c.classes)
	if _, err := cellify.NewReachability(cfg); err != nil {
		return fmt.Errorf("dataplane: --cells-loss-classes %q: %w", c.LossClasses, err)
	}
	return nil
}

// fit checks CellSize against the smallest link MTU (of port link) and sets
// the default: a cell frame, its trailer included, fits the link MTU.
func (c *Config) fit(linkMTU int, integrity linkcrc.Integrity, link string) error {
	maxFrame := linkMTU + dataplane.EthHeaderLen - integrity.Overhead()
	most := maxFrame - cellify.CellPayloadOffset
	if most < MinCellSize {
		return fmt.Errorf("dataplane: link port %s has MTU %d: no cell fits (%d bytes of headers%s and %d of payload need MTU %d)",
			link, linkMTU, cellify.CellPayloadOffset, trailerNote(integrity), MinCellSize, cellify.CellPayloadOffset+MinCellSize+integrity.Overhead()-dataplane.EthHeaderLen)
	}
	switch {
	case c.CellSize == 0:
		c.CellSize = most
	case c.CellSize < MinCellSize:
		return fmt.Errorf("dataplane: --cells-size %d is below the cell header (%d bytes): want %d to %d", c.CellSize, MinCellSize, MinCellSize, most)
	case c.CellSize > most:
		return fmt.Errorf("dataplane: --cells-size %d does not fit link MTU %d (%s): a cell frame has %d bytes of headers%s besides its payload; want at most %d (the default)",
			c.CellSize, linkMTU, link, cellify.CellPayloadOffset, trailerNote(integrity), most)
	}
	return nil
}

func trailerNote(i linkcrc.Integrity) string {
	if i.Overhead() == 0 {
		return ""
	}
	return fmt.Sprintf(" and a %d-byte integrity trailer (--integrity %s)", i.Overhead(), i)
}

// CellNodeID derives a node id from a MAC address (FNV-1a): 1..CellMaxEdges-1
// for an edge, 1..65535 for a fabric node.
func CellNodeID(mac [6]byte, edge bool) uint16 {
	h := fnv.New32a()
	h.Write(mac[:])
	v := h.Sum32()
	if edge {
		return uint16(1 + v%(CellMaxEdges-1))
	}
	return uint16(1 + v%0xFFFF)
}

func init() {
	dataplane.Register(ModeCells, dataplane.Spec{Hosts: [2]int{0, dataplane.MaxHostPorts}, Links: [2]int{1, dataplane.MaxLinkPorts}, Wire: true,
		// Its nodes allocate every cell and delivery, and its bursts fill
		// every RX ring while the fill rings stay full.
		QueueRings:  3,
		NoPFC:       "mode cells has its own queues and credits; --pfc applies to forward, lg, lgnb, monitor and fec",
		Configure:   configureCells,
		PortOptions: cellPortOptions,
		Frames:      cellsFrames,
		New:         newCellsInstance})
}

// cellPortOptions is the cells' Spec.PortOptions: a fabric node's link
// ports after the first share the first one's cell maps (cellfast.go), an
// edge's its edge cell maps (cellrx.go).
func cellPortOptions(c *dataplane.Config, _ int, role dataplane.PortRole, attached []*dataplane.Port, o *bpf.PortOptions) {
	if role != dataplane.RoleLink {
		return
	}
	for _, p := range attached {
		if p.Role == dataplane.RoleLink {
			if len(c.HostPorts) > 0 {
				o.ShareCellRx = p.Program() // an edge's (cellrx.go)
			} else {
				o.ShareCells = p.Program()
			}
			return
		}
	}
}

// configureCells fills the defaults of the cells and of the link layer
// under them.
func configureCells(c *dataplane.Config) error {
	if err := ConfigOf(c).defaults(len(c.HostPorts) > 0); err != nil {
		return err
	}
	if ls := linkpipe.FindLayer(ConfigOf(c).LinkMode); ls != nil && ls.Configure != nil {
		return ls.Configure(c)
	}
	return nil
}

// cellsFrames is the cells' share of the UMEM: each link layer's buffers
// and the host ports' delivery queues.
func cellsFrames(c *dataplane.Config) (need uint64, what string, err error) {
	if ls := linkpipe.FindLayer(ConfigOf(c).LinkMode); ls != nil && ls.Frames != nil {
		if need, what, err = ls.Frames(c); err != nil {
			return 0, "", err
		}
	}
	n := uint64(len(c.HostPorts))
	need += n * hostQRings * uint64(c.RingSize)
	what += fmt.Sprintf(", the delivery queues of %d host ports (%d × --ring-size %d each)", n, hostQRings, c.RingSize)
	return need, what, nil
}

// cellsInstance is a cell node on a dataplane.
type cellsInstance struct {
	stats *Stats
	log   *slog.Logger
	ran   bool          // a pipeline was made: Close logs the counters
	fast  *bpf.CellFwd  // a fabric node's kernel path, prepared (cellfast.go); nil: off
	edge  *cellEdgePrep // an edge's ingress kernel path, prepared (celledge.go); nil: off
	rx    *bpf.CellRx   // an edge's egress kernel path, prepared (cellrx.go); nil: off
}

// newCellsInstance fits the cells to the link ports' MTU and derives the
// node ID from the first port's MAC if none was given.
func newCellsInstance(d *dataplane.Dataplane, cfg *dataplane.Config) (dataplane.Instance, error) {
	cellMTU := d.LinkMTU()
	ls := linkpipe.FindLayer(ConfigOf(cfg).LinkMode)
	if ls != nil {
		cellMTU -= ls.Overhead
	}
	if err := ConfigOf(cfg).fit(cellMTU, cfg.Link.Integrity, cfg.LinkPort); err != nil {
		return nil, err
	}
	if ConfigOf(cfg).NodeID == 0 {
		ConfigOf(cfg).NodeID = CellNodeID(d.Port(0).MAC(), len(cfg.HostPorts) > 0)
	}
	if ls != nil && ls.Start != nil {
		ls.Start(cfg)
	}
	in := &cellsInstance{stats: newCellStats(d), log: cfg.Logger}
	if len(cfg.HostPorts) == 0 {
		var why string
		if in.fast, why = prepareCellFast(d, cfg); in.fast != nil {
			in.log.Info("cells: the fabric node forwards cells in the kernel (XDP), the worker the rest")
		} else {
			in.log.Info("cells: the worker forwards every cell", "why", why)
		}
	} else {
		var why string
		if in.edge, why = prepareCellEdge(d, cfg); in.edge != nil {
			in.log.Info("cells: the edge's host port cuts host frames into cells in the kernel (XDP) while it owns their VOQ, the worker the rest")
		} else {
			in.log.Info("cells: the worker cuts every host frame into cells", "why", why)
		}
		if in.rx, why = prepareCellRx(d, cfg); in.rx != nil {
			in.log.Info("cells: the edge delivers in-order cells in the kernel (XDP), the worker the rest")
		} else {
			in.log.Info("cells: the worker delivers every cell", "why", why)
		}
	}
	return in, nil
}

func (in *cellsInstance) Pipeline(w *dataplane.Worker) (dataplane.Pipeline, error) {
	in.ran = true
	p, err := newCellPipelineEdge(w, in.fast, in.edge)
	if err == nil && in.rx != nil {
		err = openCellRx(p.(*cellPipeline), in.rx)
	}
	return p, err
}

func (in *cellsInstance) Integrity(int) *dataplane.IntegrityStats { return &in.stats.Integrity }

// Stats are "cells": the node's snapshot and its integrity counts.
func (in *cellsInstance) Stats() map[string]any {
	s := in.stats
	return map[string]any{"cells": cellsDoc{Snapshot: s.Snapshot(), Corrupt: s.Integrity.Corrupt.Load(), NoRoom: s.Integrity.NoRoom.Load()}}
}

// Close logs the node's counters at exit.
func (in *cellsInstance) Close() {
	if !in.ran {
		return
	}
	s := in.stats.Snapshot()
	for _, l := range s.Links {
		in.log.Info("cells link", "dev", l.Name, "usable", l.Usable, "tx_bytes", l.TxBytes, "tx_cells", l.TxCells,
			"rx_bytes", l.RxBytes, "rx_cells", l.RxCells, "exclusions", l.Exclusions)
	}
	in.log.Info("cells", "delivered", s.ReasmDelivered, "reasm_discarded", s.ReasmDiscards, "voq_drops", s.Node.VOQDrops,
		"malformed", s.Malformed, "hop_drops", s.HopDrops, "no_route", s.Node.NoRoute, "fci_marks", s.FCIMarks, "max_poll_gap", time.Duration(s.MaxPollGap).String())
}

// Stats are the cells statistics (nil in every mode but cells).
func StatsOf(d *dataplane.Dataplane) *Stats {
	if in, ok := d.Instance().(*cellsInstance); ok {
		return in.stats
	}
	return nil
}
