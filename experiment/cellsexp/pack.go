package cellsexp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/link/linkcrc"
)

// CellsPackConfig sizes `linkfabric cells pack`.
type CellsPackConfig struct {
	// PacketSizes are Ethernet frame sizes with FCS (64 is the minimum
	// frame); the generator sends each 4 bytes shorter (veth has no FCS).
	PacketSizes []int `json:"packet_sizes"`
	// CellSizes are cell payload sizes; 0 is the largest the link MTU
	// takes (the dataplane's default).
	CellSizes []int `json:"cell_sizes"`
	// Duration is how long each packet size is offered at saturation.
	Duration time.Duration `json:"duration_ns"`
	// CPURate is trafgen's -b setting (frames/s) for the CPU comparison,
	// CPUDuration how long it runs per arm.
	CPURate     int           `json:"cpu_rate"`
	CPUDuration time.Duration `json:"cpu_duration_ns"`
	RunArgs     []string      `json:"run_args,omitempty"` // more `linkfabric run` arguments for the cells arms
}

// Normalize fills defaults and checks the configuration.
func (c *CellsPackConfig) Normalize() error {
	if len(c.PacketSizes) == 0 {
		c.PacketSizes = []int{64, 128, 256, 512, 1024, 1500}
	}
	for _, s := range c.PacketSizes {
		if s < 64 || s > 1518 {
			return fmt.Errorf("cells pack: packet size %d B: want 64..1518 (Ethernet frames with FCS at host MTU 1500)", s)
		}
	}
	if len(c.CellSizes) == 0 {
		c.CellSizes = []int{256, 512, 0}
	}
	for _, s := range c.CellSizes {
		if s != 0 && s < cellify.CellHeaderLen {
			return fmt.Errorf("cells pack: cell size %d B is below the cell header (%d B); 0 takes the link MTU", s, cellify.CellHeaderLen)
		}
	}
	c.Duration = cmp.Or(c.Duration, 2*time.Second)
	c.CPUDuration = cmp.Or(c.CPUDuration, 5*time.Second)
	c.CPURate = cmp.Or(c.CPURate, 200_000)
	if c.Duration < 200*time.Millisecond || c.CPUDuration < 200*time.Millisecond || c.CPURate < 0 {
		return fmt.Errorf("cells pack: --duration %v, --cpu-duration %v: want at least 200ms; --cpu-rate %d: want > 0", c.Duration, c.CPUDuration, c.CPURate)
	}
	return nil
}

// Arms of cells pack.
const (
	PackForward      = "forward"
	PackForwardAfxdp = "forward-afxdp" // CPU only: forward --fastpath afxdp
	PackPacked       = "packed"
	PackUnpacked     = "unpacked"
)

// PackRow is one packet size through one arm at saturation: what a packet
// costs on the link (sw1's link ports, sw1→sw2: frames and bytes of the
// link frames, without preamble and FCS), computed from the header sizes
// and measured by the interfaces' own counters per packet delivered to h2,
// and the packets per second offered (h1's eth0) and delivered (h2's).
type PackRow struct {
	PacketSize     int      `json:"packet_size"`
	Arm            string   `json:"arm"`
	CellSize       int      `json:"cell_size,omitempty"`
	ComputedFrames float64  `json:"computed_frames_per_packet"`
	ComputedBytes  float64  `json:"computed_bytes_per_packet"`
	MeasuredFrames float64  `json:"measured_frames_per_packet"`
	MeasuredBytes  float64  `json:"measured_bytes_per_packet"`
	OfferedPPS     float64  `json:"offered_pps"`
	DeliveredPPS   float64  `json:"delivered_pps"`
	Path           PackPath `json:"path"`
}

// PackPath is where the frames h1 offered were lost between two reads of
// both switches' statistics, and how often each switch's worker slept:
// Ingress, frames sw1's host port sockets had no room for (RX ring full
// or no fill buffer: its worker did not take them in time); VOQ, host
// frames sw1's VOQs refused (full: the credits or the cells did not keep
// up); Fabric, the rest inside the fabric (links, reassembly, floods over
// their rate, ...); Egress, what sw2 dropped toward h2 (its host port's
// queue and TX ring, and the deliveries waiting in front of a full one).
// Sleeps and Loops are per switch: a worker's poll(2) sleeps and loop
// iterations.
type PackPath struct {
	Ingress uint64            `json:"ingress_drops"`
	VOQ     uint64            `json:"voq_drops"`
	Fabric  uint64            `json:"fabric_drops"`
	Egress  uint64            `json:"egress_drops"`
	Sleeps  map[string]uint64 `json:"sleeps"`
	Loops   map[string]uint64 `json:"loops"`
	// Sent is per switch what it sent: link frames by kind (mode cells)
	// and sendto calls on its link and host ports.
	Sent map[string]PackSent `json:"sent"`
}

// PackSent is what a switch sent over a run: in mode cells, cells cut,
// REACHes (and those left out: the link was busy), credit requests and
// grants; the TX kicks (sendto calls) of its link ports' and host port's
// sockets.
type PackSent struct {
	Cells      uint64 `json:"cells"`
	Reach      uint64 `json:"reach"`
	ReachQuiet uint64 `json:"reach_quiet"`
	Requests   uint64 `json:"credit_requests"`
	Grants     uint64 `json:"credit_grants"`
	LinkKicks  uint64 `json:"link_kicks"`
	HostKicks  uint64 `json:"host_kicks"`
}

func (s PackSent) sub(o PackSent) PackSent {
	return PackSent{s.Cells - o.Cells, s.Reach - o.Reach, s.ReachQuiet - o.ReachQuiet, s.Requests - o.Requests,
		s.Grants - o.Grants, s.LinkKicks - o.LinkKicks, s.HostKicks - o.HostKicks}
}

func (s PackSent) String() string {
	return fmt.Sprintf("cells %d, REACH %d (%d left out), requests %d, grants %d; kicks link %d, host %d",
		s.Cells, s.Reach, s.ReachQuiet, s.Requests, s.Grants, s.LinkKicks, s.HostKicks)
}

// String is the path's drops and sleeps in one line.
func (p PackPath) String() string {
	return fmt.Sprintf("lost: sw1 host port RX %d, VOQ %d, fabric %d, egress %d; worker sleeps sw1 %d, sw2 %d",
		p.Ingress, p.VOQ, p.Fabric, p.Egress, p.Sleeps["sw1"], p.Sleeps["sw2"])
}

// SentString is what each switch sent, one line.
func (p PackPath) SentString() string {
	return fmt.Sprintf("sent: sw1 %s; sw2 %s", p.Sent["sw1"], p.Sent["sw2"])
}

// PackCPU is one arm of the CPU comparison: 60-byte frames at a fixed
// trafgen rate, the two switches' dataplanes' CPU time per delivered frame.
//
// IdleSeconds is what the dataplanes used over as long without traffic
// just before (a cell node sends and receives REACH on every link every
// interval); NetNsPerFrame leaves it out.
type PackCPU struct {
	Arm           string             `json:"arm"`
	OfferedPPS    float64            `json:"offered_pps"`
	DeliveredPPS  float64            `json:"delivered_pps"`
	CPUSeconds    map[string]float64 `json:"cpu_seconds"` // per switch
	IdleSeconds   float64            `json:"idle_cpu_seconds"`
	NsPerFrame    float64            `json:"cpu_ns_per_frame"`
	NetNsPerFrame float64            `json:"net_cpu_ns_per_frame"`
	Path          PackPath           `json:"path"`
}

// CellsPackSummary are the headline figures of cells pack.
type CellsPackSummary struct {
	Generator string `json:"generator"`
	// CPU per delivered 60-byte frame of the dataplanes. Forward runs on
	// its kernel fast path both ways (the XDP programs carry its frames in
	// softirq, which no dataplane's CPU time counts: near 0); the target
	// compares cells (packing, MTU cells) with forward-afxdp (--fastpath
	// afxdp), which takes every frame through the workers as cells do:
	// CPURatio = cells ÷ forward-afxdp ≤ 0.6. BothCarry: those two arms
	// delivered ≥ 99 % of what was offered.
	CPUNsForward      float64 `json:"cpu_ns_per_frame_forward"`
	CPUNsForwardAfxdp float64 `json:"cpu_ns_per_frame_forward_afxdp"`
	CPUNsCells        float64 `json:"cpu_ns_per_frame_cells"`
	CPURatio          float64 `json:"cpu_ratio"`
	// CPURatioNet compares the CPU beyond what the dataplanes use idle.
	CPURatioNet   float64 `json:"cpu_ratio_net"`
	CPUTarget     float64 `json:"cpu_ratio_target"`
	CPUOK         bool    `json:"cpu_ok"`
	CPUDelivered  float64 `json:"cpu_delivered_pps"`
	CPUBothCarry  bool    `json:"cpu_both_carried"`
	SatPacket     int     `json:"saturation_packet_size"`
	SatForwardPPS float64 `json:"saturation_forward_pps"`
	SatCellsPPS   float64 `json:"saturation_cells_pps"`
	SatRatio      float64 `json:"saturation_ratio"`
	SatTarget     float64 `json:"saturation_ratio_target"`
	SatOK         bool    `json:"saturation_ok"`
	// SatGenLimited: forward delivered ≥ 99 % of what the generator
	// offered, so saturation was the generator's, not the dataplane's.
	SatGenLimited bool `json:"saturation_generator_limited"`
}

// CellsPackResult is what `linkfabric cells pack` reports.
type CellsPackResult struct {
	Config CellsPackConfig `json:"config"`
	report.RunInfo
	Seconds float64          `json:"seconds"`
	Rows    []PackRow        `json:"rows"`
	CPU     []PackCPU        `json:"cpu"`
	Summary CellsPackSummary `json:"summary"`
}

// packArm is one dataplane configuration of the table.
type packArm struct {
	name     string
	cellSize int // asked (0: the MTU's)
}

// CellsPack runs `linkfabric cells pack` on a bundle testbed.
func CellsPack(ctx context.Context, e *bed.Env, cfg CellsPackConfig) (*CellsPackResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	if err := bed.CheckTrafgen(); err != nil {
		return nil, err
	}
	res := &CellsPackResult{Config: cfg, RunInfo: report.NewRunInfo()}
	arms := []packArm{{name: PackForward}}
	for _, c := range cfg.CellSizes {
		arms = append(arms, packArm{PackPacked, c}, packArm{PackUnpacked, c})
	}
	e.Printf("cells pack: bundle testbed %q; %d arms × %d packet sizes × %v at saturation (trafgen, one CPU), then CPU per frame at trafgen -b %d for %v per arm",
		e.Prefix, len(arms), len(cfg.PacketSizes), cfg.Duration, cfg.CPURate, cfg.CPUDuration)
	b, err := e.BedUp("bundle", 0)
	if err != nil {
		return nil, err
	}
	defer b.Down()
	src, dst, err := hostMACs(b)
	if err != nil {
		return nil, err
	}
	for i, a := range arms {
		cs, err := startPackArm(ctx, b, a, cfg.RunArgs)
		if err != nil {
			return nil, fmt.Errorf("cells pack %s: %w", a.label(), err)
		}
		e.Printf("cells pack: [%d/%d] %s", i+1, len(arms), a.labelSize(cs))
		for _, size := range cfg.PacketSizes {
			m, err := offer(ctx, b, bed.TrafgenConfig{Dst: dst, Src: src, Len: size - 4, Duration: cfg.Duration})
			if err != nil {
				return nil, fmt.Errorf("cells pack %s, %d B: %w", a.label(), size, err)
			}
			row := PackRow{PacketSize: size, Arm: a.name, CellSize: cs, OfferedPPS: m.offered, DeliveredPPS: m.delivered, Path: m.path}
			row.ComputedFrames, row.ComputedBytes = PackComputed(a.name, size-4, cs)
			row.MeasuredFrames, row.MeasuredBytes = report.Ratio(m.linkFrames, m.deliveredN), report.Ratio(m.linkBytes, m.deliveredN)
			res.Rows = append(res.Rows, row)
			e.Printf("cells pack:   %4d B: %.0f of %.0f pps delivered; %.3f frames, %.1f B per packet on the link (computed %.3f, %.1f)",
				size, m.delivered, m.offered, row.MeasuredFrames, row.MeasuredBytes, row.ComputedFrames, row.ComputedBytes)
			e.Printf("cells pack:          %s", m.path)
		}
	}
	for _, a := range []packArm{{name: PackForward}, {name: PackForwardAfxdp}, {name: PackPacked}} {
		if _, err := startPackArm(ctx, b, a, cfg.RunArgs); err != nil {
			return nil, fmt.Errorf("cells pack CPU, %s: %w", a.label(), err)
		}
		c, err := packCPU(ctx, b, a, bed.TrafgenConfig{Dst: dst, Src: src, Len: 60, Rate: cfg.CPURate, Duration: cfg.CPUDuration})
		if err != nil {
			return nil, fmt.Errorf("cells pack CPU, %s: %w", a.label(), err)
		}
		e.Printf("cells pack: CPU, %s: %.0f of %.0f pps delivered, %.0f ns of dataplane CPU per frame, %.0f beyond idle (%s; idle %.2f s)",
			a.label(), c.DeliveredPPS, c.OfferedPPS, c.NsPerFrame, c.NetNsPerFrame, cpuList(c.CPUSeconds), c.IdleSeconds)
		e.Printf("cells pack:   %s", c.Path)
		e.Printf("cells pack:   %s", c.Path.SentString())
		res.CPU = append(res.CPU, c)
	}
	b.Stop()
	res.Summary = packSummary(res)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func (a packArm) label() string {
	switch a.name {
	case PackForward:
		return "forward"
	case PackForwardAfxdp:
		return "forward --fastpath afxdp"
	}
	return fmt.Sprintf("cells %s, cell size %s", a.name, cellSizeName(a.cellSize))
}

func (a packArm) labelSize(actual int) string {
	if a.name == PackForward {
		return "forward (link0 only)"
	}
	return fmt.Sprintf("cells %s, %d-byte cells", a.name, actual)
}

func cellSizeName(c int) string {
	if c == 0 {
		return "MTU"
	}
	return strconv.Itoa(c)
}

func cpuList(m map[string]float64) string {
	var parts []string
	for _, sw := range []string{"sw1", "sw2"} {
		parts = append(parts, fmt.Sprintf("%s %.2f s", sw, m[sw]))
	}
	return strings.Join(parts, ", ")
}

// startPackArm starts the dataplanes of arm a and returns the cell size
// in force (0 for forward).
func startPackArm(ctx context.Context, b *bed.Bed, a packArm, extra []string) (int, error) {
	switch a.name {
	case PackForward:
		return 0, b.Start(ctx, bed.BedRun{Mode: "forward"})
	case PackForwardAfxdp:
		return 0, b.Start(ctx, bed.BedRun{Mode: "forward", Args: []string{"--fastpath", "afxdp"}})
	}
	// The cells arms go through the workers, as forward-afxdp does: the
	// edges' kernel paths would do part of the work in softirqs, which
	// the dataplanes' CPU time does not count.
	r := bed.BedRun{Mode: bed.ModeCells, Args: append([]string{"--fastpath", "afxdp"}, extra...)}
	if a.cellSize > 0 {
		r.Args = append([]string{"--cells-size", strconv.Itoa(a.cellSize)}, r.Args...)
	}
	if a.name == PackUnpacked {
		r.Args = append([]string{"--cells-packing=false"}, r.Args...)
	}
	if err := b.Start(ctx, r); err != nil {
		return 0, err
	}
	st, err := cellsStatsOf(ctx, b, "sw1")
	if err != nil {
		return 0, err
	}
	if st.Cells == nil || st.Cells.CellSize <= 0 {
		return 0, fmt.Errorf("the dataplane on sw1 reports no cell size")
	}
	return st.Cells.CellSize, nil
}

// hostMACs returns the MACs of the bundle's h1 and h2 eth0.
func hostMACs(b *bed.Bed) (src, dst []byte, err error) {
	h1, err := bed.Link(b.TB.NS(b.Hosts[0].Name), b.Hosts[0].Dev)
	if err != nil {
		return nil, nil, err
	}
	h2, err := bed.Link(b.TB.NS(b.Hosts[1].Name), b.Hosts[1].Dev)
	if err != nil {
		return nil, nil, err
	}
	return h1.Attrs().HardwareAddr, h2.Attrs().HardwareAddr, nil
}

// offered is what one trafgen run did.
type offered struct {
	seconds               float64
	offered, delivered    float64 // per second
	deliveredN            float64
	linkFrames, linkBytes float64 // sw1's link ports, transmitted
	path                  PackPath
}

// offer runs trafgen from the first host to the second (cfg's NS and Dev
// are filled in) and counts at h1's and h2's interfaces and sw1's link
// ports.
func offer(ctx context.Context, b *bed.Bed, cfg bed.TrafgenConfig) (offered, error) {
	h1, h2 := b.Hosts[0], b.Hosts[1]
	cfg.NS, cfg.Dev = b.TB.NS(h1.Name), h1.Dev
	links := b.LinkPorts(b.Switches[0])
	read := func() (bed.IfCounters, bed.IfCounters, bed.IfCounters, error) {
		a, err := bed.ReadIfCounters(cfg.NS, h1.Dev)
		if err != nil {
			return bed.IfCounters{}, bed.IfCounters{}, bed.IfCounters{}, err
		}
		z, err := bed.ReadIfCounters(b.TB.NS(h2.Name), h2.Dev)
		if err != nil {
			return bed.IfCounters{}, bed.IfCounters{}, bed.IfCounters{}, err
		}
		ls, err := bed.ReadIfCounters(b.TB.NS(b.Switches[0]), links...)
		var sum bed.IfCounters
		for _, l := range ls {
			sum.TxPackets += l.TxPackets
			sum.TxBytes += l.TxBytes
		}
		return a[0], z[0], sum, err
	}
	a0, z0, l0, err := read()
	if err != nil {
		return offered{}, err
	}
	s0, err := packStats(ctx, b)
	if err != nil {
		return offered{}, err
	}
	t0 := time.Now()
	if err := bed.Trafgen(ctx, cfg); err != nil {
		return offered{}, err
	}
	el := time.Since(t0).Seconds()
	time.Sleep(200 * time.Millisecond) // what is still on its way
	a1, z1, l1, err := read()
	if err != nil {
		return offered{}, err
	}
	if err := b.Dataplanes().Alive(); err != nil {
		return offered{}, err
	}
	s1, err := packStats(ctx, b)
	if err != nil {
		return offered{}, err
	}
	d := z1.Sub(z0).RxPackets
	lk := l1.Sub(l0)
	return offered{seconds: el, offered: float64(a1.Sub(a0).TxPackets) / el, delivered: float64(d) / el, deliveredN: float64(d),
		linkFrames: float64(lk.TxPackets), linkBytes: float64(lk.TxBytes), path: packPathBetween(s0, s1)}, nil
}

// packStat is what packPathBetween reads of one switch's statistics: the
// dataplane's loops and sleeps, its host port sockets' receive drops, its
// link ports' drops (their sockets' receive drops and the frames their TX
// rings refused) and its host port's transmit drops, and in mode cells the
// node's drops.
type packStat struct {
	polls, loops uint64
	hostRx       uint64
	linkDrops    uint64
	hostTx       uint64
	cells        *CellsNodeStats
	sent         PackSent
}

// packStats reads both switches' statistics.
func packStats(ctx context.Context, b *bed.Bed) (map[string]packStat, error) {
	m := map[string]packStat{}
	for _, sw := range b.Switches {
		var doc map[string]json.RawMessage
		if err := bed.FetchStats(ctx, b.TB.NS(sw), &doc); err != nil {
			return nil, err
		}
		var ps packStat
		var dp bed.DPStats
		if err := json.Unmarshal(doc["dataplane"], &dp.Dataplane); err != nil {
			return nil, fmt.Errorf("statistics of %s: %w", sw, err)
		}
		ps.polls, ps.loops = dp.Dataplane.Polls, dp.Dataplane.Loops
		ps.linkDrops, ps.hostTx = dp.Dataplane.Link.TX.Dropped, dp.Dataplane.Host.TX.Dropped
		for k, raw := range doc {
			if !strings.HasPrefix(k, "port_") {
				continue
			}
			var pd bed.PortDoc
			if err := json.Unmarshal(raw, &pd); err != nil {
				return nil, fmt.Errorf("statistics of %s: %w", sw, err)
			}
			if k == "port_host0" {
				ps.hostRx = pd.RxDrops()
				ps.sent.HostKicks = pd.TxKicks()
			} else {
				ps.sent.LinkKicks += pd.TxKicks()
				ps.linkDrops += pd.RxDrops()
			}
		}
		if doc["cells"] != nil {
			c, err := parseCellsStats(b.TB.NS(sw), doc)
			if err != nil {
				return nil, err
			}
			ps.cells = c
			n := &c.Cells.Node
			ps.sent.Cells, ps.sent.Reach, ps.sent.ReachQuiet = n.CellsCut+n.Forwarded, n.ReachTx, n.ReachQuiet
			ps.sent.Requests, ps.sent.Grants = n.CreditReqTx, n.CreditGrantTx
		}
		m[sw] = ps
	}
	return m, nil
}

// packPathBetween is the bundle's PackPath between two reads: sw1 is the
// ingress edge, sw2 the egress one. Forward's drops on the way count as
// Fabric (either switch's link ports: a socket's receive drops, a TX ring
// that refused a frame) and Egress (sw2's host port's transmit drops), as
// a cell node's do.
func packPathBetween(before, after map[string]packStat) PackPath {
	p := PackPath{Sleeps: map[string]uint64{}, Loops: map[string]uint64{}, Sent: map[string]PackSent{}}
	for sw, a := range after {
		b := before[sw]
		p.Sleeps[sw], p.Loops[sw] = a.polls-b.polls, a.loops-b.loops
		p.Sent[sw] = a.sent.sub(b.sent)
		if sw == "sw1" {
			p.Ingress += a.hostRx - b.hostRx
		}
		if a.cells == nil || b.cells == nil {
			p.Fabric += a.linkDrops - b.linkDrops
			if sw == "sw2" {
				p.Egress += a.hostTx - b.hostTx
			}
			continue
		}
		d := CellsDropsBetween(b.cells, a.cells)
		p.VOQ += d.VOQ
		p.Fabric += d.Link + d.Reasm + d.Other
		if sw == "sw2" {
			p.Egress += d.Egress
		}
	}
	return p
}

// packCPU offers cfg's frames and measures the switches' dataplane CPU
// time per delivered frame.
func packCPU(ctx context.Context, b *bed.Bed, a packArm, cfg bed.TrafgenConfig) (PackCPU, error) {
	i0, err := b.Dataplanes().CPUTime()
	if err != nil {
		return PackCPU{}, err
	}
	select {
	case <-ctx.Done():
		return PackCPU{}, ctx.Err()
	case <-time.After(cfg.Duration):
	}
	c0, err := b.Dataplanes().CPUTime()
	if err != nil {
		return PackCPU{}, err
	}
	var idle time.Duration
	for sw, t := range c0 {
		idle += t - i0[sw]
	}
	m, err := offer(ctx, b, cfg)
	if err != nil {
		return PackCPU{}, err
	}
	c1, err := b.Dataplanes().CPUTime()
	if err != nil {
		return PackCPU{}, err
	}
	p := PackCPU{Arm: a.name, OfferedPPS: m.offered, DeliveredPPS: m.delivered, CPUSeconds: map[string]float64{}, Path: m.path}
	var total time.Duration
	for sw, t := range c1 {
		p.CPUSeconds[sw] = (t - c0[sw]).Seconds()
		total += t - c0[sw]
	}
	p.IdleSeconds = idle.Seconds()
	p.NsPerFrame = report.Ratio(float64(total.Nanoseconds()), m.deliveredN)
	// The idle run lasted the generator's time; the loaded one a little longer.
	p.NetNsPerFrame = report.Ratio(float64(total.Nanoseconds())-float64(idle.Nanoseconds())*m.seconds/cfg.Duration.Seconds(), m.deliveredN)
	return p, nil
}

// PackComputed returns the link frames and bytes (without preamble and
// FCS) a host frame of frameLen bytes costs: forward sends it as it is; a
// cell node adds a record header and the source port to it (a record) and
// carries records in cells of cellSize payload bytes, each with the link
// and cell headers and the integrity trailer (packed: records back to back,
// so a record costs its share of full cells; unpacked: each record in
// cells of its own, a short last one padded to the minimum frame).
func PackComputed(arm string, frameLen, cellSize int) (frames, bytes float64) {
	rec := cellify.RecordHeaderLen + 1 + frameLen
	per := float64(cellify.CellPayloadOffset + linkcrc.TrailerLen) // per cell, besides its payload
	switch arm {
	case PackForward:
		return 1, float64(frameLen)
	case PackPacked:
		frames = float64(rec) / float64(cellSize)
		return frames, float64(rec) + frames*per
	}
	for left := rec; left > 0; left -= cellSize {
		p := min(left, cellSize)
		frames++
		bytes += float64(cellify.CellFrameLen(p) + linkcrc.TrailerLen)
	}
	return frames, bytes
}

func packSummary(r *CellsPackResult) CellsPackSummary {
	s := CellsPackSummary{Generator: "trafgen (netsniff-ng), one CPU", CPUTarget: 0.6, SatTarget: 1}
	var fw, cl *PackCPU
	for i := range r.CPU {
		switch r.CPU[i].Arm {
		case PackForward:
			s.CPUNsForward = r.CPU[i].NsPerFrame
		case PackForwardAfxdp:
			fw = &r.CPU[i]
		case PackPacked:
			cl = &r.CPU[i]
		}
	}
	if fw != nil && cl != nil {
		s.CPUNsForwardAfxdp, s.CPUNsCells = fw.NsPerFrame, cl.NsPerFrame
		s.CPURatio = report.Ratio(cl.NsPerFrame, fw.NsPerFrame)
		s.CPURatioNet = report.Ratio(cl.NetNsPerFrame, fw.NetNsPerFrame)
		s.CPUOK = s.CPURatio > 0 && s.CPURatio <= s.CPUTarget
		s.CPUDelivered = math.Min(fw.DeliveredPPS, cl.DeliveredPPS)
		s.CPUBothCarry = fw.DeliveredPPS >= 0.99*fw.OfferedPPS && cl.DeliveredPPS >= 0.99*cl.OfferedPPS
	}
	// Saturation: the smallest packet, forward against packed cells of the
	// largest cell size.
	if len(r.Config.PacketSizes) > 0 {
		s.SatPacket = r.Config.PacketSizes[0]
		for _, p := range r.Config.PacketSizes {
			s.SatPacket = min(s.SatPacket, p)
		}
		best := -1
		for _, row := range r.Rows {
			if row.PacketSize != s.SatPacket {
				continue
			}
			switch {
			case row.Arm == PackForward:
				s.SatForwardPPS = row.DeliveredPPS
				s.SatGenLimited = row.DeliveredPPS >= 0.99*row.OfferedPPS
			case row.Arm == PackPacked && row.CellSize > best:
				best, s.SatCellsPPS = row.CellSize, row.DeliveredPPS
			}
		}
		s.SatRatio = report.Ratio(s.SatCellsPPS, s.SatForwardPPS)
		s.SatOK = s.SatRatio >= s.SatTarget
	}
	return s
}

// Text renders the result.
func (r *CellsPackResult) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "linkfabric cells pack: h1 → sw1 ═4 links═ sw2 → h2 (bundle), trafgen frames from h1; kernel %s, %d CPUs; %.0fs\n", r.Kernel, r.CPUs, r.Seconds)
	fmt.Fprintf(&b, "per packet on sw1's link ports (frames and bytes without preamble/FCS, interface counters ÷ packets h2 received); %v per size at saturation\n\n", r.Config.Duration)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "packet B\tarm\tcell B\tframes/pkt\tmeasured\tbytes/pkt\tmeasured\toffered kpps\tdelivered kpps\t")
	for _, size := range r.Config.PacketSizes {
		for _, row := range r.Rows {
			if row.PacketSize != size {
				continue
			}
			cs := "-"
			if row.CellSize > 0 {
				cs = strconv.Itoa(row.CellSize)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", row.PacketSize, row.Arm, cs,
				row.ComputedFrames, row.MeasuredFrames, row.ComputedBytes, row.MeasuredBytes, row.OfferedPPS/1e3, row.DeliveredPPS/1e3)
		}
	}
	w.Flush()
	s := r.Summary
	fmt.Fprintf(&b, "\nCPU per delivered 60-byte frame, both switches' dataplanes (/proc/PID/stat), trafgen -b %d for %v:\n", r.Config.CPURate, r.Config.CPUDuration)
	for _, c := range r.CPU {
		fmt.Fprintf(&b, "  %-13s %6.0f ns/frame, %6.0f beyond idle  (%.0f of %.0f pps delivered; %s; idle %.2f s)\n",
			c.Arm, c.NsPerFrame, c.NetNsPerFrame, c.DeliveredPPS, c.OfferedPPS, cpuList(c.CPUSeconds), c.IdleSeconds)
		fmt.Fprintf(&b, "  %-13s %s\n", "", c.Path)
		fmt.Fprintf(&b, "  %-13s %s\n", "", c.Path.SentString())
	}
	carried := "both arms carried what was offered"
	if !s.CPUBothCarry {
		carried = "NOT both carried what was offered: the comparison is at different loads"
	}
	fmt.Fprintf(&b, "  cells/forward-afxdp %.2f× (target ≤ %.1f: %s), %.2f× beyond idle; %s (both through the workers; forward on its kernel fast path leaves the dataplanes %.0f ns/frame)\n",
		s.CPURatio, s.CPUTarget, report.MetWord(s.CPUOK), s.CPURatioNet, carried, s.CPUNsForward)
	gen := ""
	if s.SatGenLimited {
		gen = "; forward kept up with the generator: this is the generator's rate, not forward's limit"
	}
	fmt.Fprintf(&b, "saturation at %d B: cells (packed, largest cells) %.0f pps, forward %.0f pps: %.2f× (target ≥ %.0f: %s)%s\n",
		s.SatPacket, s.SatCellsPPS, s.SatForwardPPS, s.SatRatio, s.SatTarget, report.MetWord(s.SatOK), gen)
	return b.String()
}

// WriteFiles writes pack.json and pack.csv into dir.
func (r *CellsPackResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, row := range r.Rows {
		rows = append(rows, []string{strconv.Itoa(row.PacketSize), row.Arm, strconv.Itoa(row.CellSize), f(row.ComputedFrames), f(row.MeasuredFrames),
			f(row.ComputedBytes), f(row.MeasuredBytes), f(row.OfferedPPS), f(row.DeliveredPPS)})
	}
	return report.WriteTable(dir, "pack", r, []string{"packet_size", "arm", "cell_size", "computed_frames_per_packet", "measured_frames_per_packet",
		"computed_bytes_per_packet", "measured_bytes_per_packet", "offered_pps", "delivered_pps"}, rows)
}
