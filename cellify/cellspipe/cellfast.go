package cellspipe

import (
	"cmp"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
)

// The kernel path of a fabric node: its link ports' XDP program forwards
// data cells and credit frames itself (lf_cell_fwd in bpf/c/port.c), and
// the worker keeps what the program decides by (bpf.CellFwd) and takes
// everything else.
//
// What the kernel does with a cell is what Node.rxCell would: the same
// checks (the trailer, ParseCell's, the hop count), the hop count
// decremented and the header's checksum fixed, a link of the cell's loss
// class that reaches its destination edge, round-robin among them, the
// link's own MAC as the source, the trailer resealed. A credit frame goes
// as Node.rxCredit sends it: toward the destination of a request or the
// source of a grant over the loosest class's routes, round-robin, unchanged
// but for the MACs and the trailer; the kernel checks its header and
// length but not its CRC-32C, which the edge that reads it checks
// (ParseCredit there drops and counts a bad one, as the worker here
// would: the frame's trailer, checked here, covers this link). Whenever
// any of that cannot be decided from the maps the frame goes to the worker
// untouched, and the worker decides as it always did: REACH frames, a
// malformed cell or credit frame (counted there: Malformed), a frame that
// fails its trailer (Corrupt), the last hop (HopDrops), a destination
// without a route in the cell's own class (the worker's class fallback,
// NoRoute), a link whose rate limit has no token left. Redirected frames
// arrive at the peer on the receive queue of the CPU that sent them, not
// on the lane the worker would have picked (credit frames on the priority
// lane): the edges read every lane.
//
// The hand-over, and why no cell goes where the worker would not send it:
//
//   - Routes. After every call the worker compares its reachability
//     table's generation (ReachStats.Rebuilds) with the one it wrote and,
//     if it moved, writes every (loss class, destination) mask again. The
//     table is rebuilt at once when a link goes down or leaves the usable
//     set (REACH missed, loss, a peer's fault), in the call that learns
//     it, so the kernel follows the worker's own view within that call:
//     the worker itself sprays on a dead link until it learns of it, and
//     so does the kernel, no longer. A cell already redirected is in the
//     peer's receive queue, as one the worker had put on the TX ring.
//   - Held links. A link that is down (the worker's view) or has frames
//     queued behind its rate limit (the shaper: the emulated link's queue,
//     where the worker marks FCI and the link is full) is held: the kernel
//     leaves its cells to the worker, which queues them behind the rest.
//     Mode cells runs no PFC (Spec.NoPFC): no link is paused.
//   - Rate. The kernel sends on a rate-limited link only while the link's
//     GCRA time is at most the shaper's burst ahead of now, and moves it by
//     each frame's cost; the worker moves it by what it lists for the link
//     (Charge). Over any interval the two together send at most the rate
//     times the interval plus the larger of the kernel's burst (and one
//     frame) and the worker's own bucket: the worker's sends are bounded
//     by its shaper, the kernel's by a time that counts both.
//   - Link layers (lg, lgnb, monitor, fec under the cells) number and
//     repair each link's frames: the kernel path stays off with one, as
//     it does on an edge (reassembly, credits), with spray hash (its
//     flows pick links by hash in the worker), with more than one worker
//     (each has its own node), on a port attached in generic XDP, and
//     unless --fastpath is auto (linkfabric run's default).
//   - Counting. The kernel counts what it forwards per arriving and
//     leaving link (cells, credit frames, bytes without the trailer, a
//     cell's per loss class); publish adds it to the links' counters, to
//     Forwarded and CtrlFwd, so /stats.json counts every frame once,
//     whichever path it took.
//   - A worker kept from running leaves the kernel forwarding by the
//     routes it last wrote; its neighbours stop hearing its REACHes and
//     exclude its links meanwhile, as they would with the worker path,
//     where its cells would wait in its receive rings instead.
//   - A redirect into a link whose peer cannot take it (a veth whose
//     peer has no XDP program) is lost; every node of a cell fabric runs
//     the dataplane, so a peer without its program is a peer not running,
//     whose cells the worker would lose as well.
type cellFast struct {
	fwd   *bpf.CellFwd
	gen   uint64 // the reachability generation last written
	wrote bool
	held  uint64
	ports []int
	mono  int64 // CLOCK_MONOTONIC read in this drain (0: not yet)
	// An edge's (celledge.go): the links' peers are checked every
	// edgePeerEvery for taking redirected frames; noPeer holds those that
	// do not.
	peers  *bpf.FeatureReader
	ifx    []int
	peerAt int64
	noPeer uint64
}

// prepareCellFast readies the kernel path of a fabric node's link ports
// if it can run (in the ports' network namespace: the redirect targets
// are its ifindexes): nil and why not if it cannot.
func prepareCellFast(d *dataplane.Dataplane, cfg *dataplane.Config) (*bpf.CellFwd, string) {
	ps := d.Ports()
	switch {
	case len(ps.Hosts) > 0:
		return nil, "an edge"
	case ConfigOf(cfg).Spray == cellify.SprayHash.String():
		return nil, "spray hash"
	}
	if why := kernelPathWhyNot(d, cfg, ps.Links); why != "" {
		return nil, why
	}
	fwd, err := d.Port(ps.Links[0]).Program().CellFwd()
	if err != nil {
		return nil, err.Error()
	}
	fwd.SetOn(false)
	if err := setCellLinks(fwd, d, cfg); err != nil {
		return nil, err.Error()
	}
	for l, port := range ps.Links {
		if err := d.Port(port).Program().SetCellLink(l); err != nil {
			return nil, err.Error()
		}
	}
	return fwd, ""
}

// setCellLinks writes into fwd what the kernel sends cells on by: the
// link frames' trailer, and per link port its ifindex, MAC and rate limit.
func setCellLinks(fwd *bpf.CellFwd, d *dataplane.Dataplane, cfg *dataplane.Config) error {
	if err := fwd.SetIntegrity(cfg.Link.Integrity); err != nil {
		return err
	}
	for l, port := range d.Ports().Links {
		p := d.Port(port)
		lk := bpf.CellLinkConf{Ifindex: p.Program().Ifindex(), MAC: p.MAC(), Overhead: dataplane.WireOverhead}
		if s, ok := cfg.Shape[p.Name]; ok && s.Rate > 0 {
			lk.Rate, lk.Burst = s.Rate, s.Burst
		}
		if err := fwd.SetLink(l, lk); err != nil {
			return err
		}
	}
	return nil
}

// kernelPathWhyNot says why none of mode cells' kernel paths (a fabric
// node's, an edge's ingress or egress) can run on this node, "" if the
// node's configuration lets them: one worker (the node's state is one
// worker's), no link layer under the cells (it numbers and repairs every
// link frame in the worker), --fastpath auto, no more link ports than the
// kernel's maps hold, and the given ports attached in native XDP.
func kernelPathWhyNot(d *dataplane.Dataplane, cfg *dataplane.Config, native []int) string {
	switch {
	case linkpipe.FindLayer(ConfigOf(cfg).LinkMode) != nil:
		return "a link layer under the cells"
	case cfg.Workers > 1:
		return "more than one worker"
	case cfg.FastPath != dataplane.FastPathAuto:
		return "--fastpath " + string(cmp.Or(cfg.FastPath, dataplane.FastPathAFXDP))
	case len(d.Ports().Links) > bpf.CellLinks:
		return "more link ports than the kernel path takes"
	}
	for _, port := range native {
		if d.Port(port).Program().Mode() != bpf.XDPNative {
			return d.Port(port).Name + " in generic XDP"
		}
	}
	return ""
}

// openCellFast turns the prepared kernel path on for pl, whose node
// configuration is nc.
func openCellFast(pl *cellPipeline, fwd *bpf.CellFwd, nc *cellify.NodeConfig) *cellFast {
	f := &cellFast{fwd: fwd, ports: pl.ps.Links}
	var lc [8]uint8
	for tc := range lc {
		lc[tc] = uint8(nc.Reach.Classes.For(cellify.Class(tc)))
	}
	fwd.SetClasses(int(nc.Reach.Classes.N()), lc)
	f.sync(pl)
	fwd.SetOn(true)
	return f
}

// sync writes the routes if the reachability table changed and the held
// links if they did.
func (f *cellFast) sync(pl *cellPipeline) {
	r := pl.node.Reach()
	if g := r.Stats.Rebuilds; g != f.gen || !f.wrote {
		f.gen, f.wrote = g, true
		rc := r.Config()
		n := int(rc.Classes.N())
		for lc := 1; lc <= n; lc++ {
			for dst := range min(rc.MaxEdges, bpf.CellEdges) {
				f.fwd.SetRoute(lc, dst, r.RoutesIn(cellify.LossClass(lc), cellify.EdgeID(dst)))
			}
		}
	}
	if f.peers != nil {
		if now := bpf.MonoNow(); now-f.peerAt >= edgePeerEvery {
			f.peerAt = now
			f.noPeer = 0
			for l, ifx := range f.ifx {
				if ft, err := f.peers.Features(ifx); err != nil || !ft.AcceptsRedirect() {
					f.noPeer |= 1 << l
				}
			}
		}
	}
	held := f.noPeer
	for l, port := range f.ports {
		if !pl.up[l] || pl.w.ShapedBytes(port) > 0 {
			held |= 1 << l
		}
	}
	if held != f.held {
		f.held = held
		f.fwd.SetHeld(held)
	}
}

// charge takes what the worker listed for link l out of its rate limit
// (the clock read once per drain: mono is cleared before it).
func (f *cellFast) charge(l, frames, bytes int) {
	if bytes > 0 && f.fwd.Rated(l) {
		if f.mono == 0 {
			f.mono = bpf.MonoNow()
		}
		f.fwd.Charge(l, frames, bytes, f.mono)
	}
}

// fold adds the kernel's counters to a snapshot.
func (f *cellFast) fold(c *Snapshot) {
	k, err := f.fwd.Counters()
	if err != nil {
		return
	}
	for l := range c.Links {
		cl := &c.Links[l]
		cl.RxFrames += k.RxCells[l] + k.RxCtrl[l]
		cl.RxCells += k.RxCells[l]
		cl.RxCtrl += k.RxCtrl[l]
		cl.RxBytes += k.RxBytes[l]
		cl.TxFrames += k.TxCells[l] + k.TxCtrl[l]
		cl.TxCells += k.TxCells[l]
		cl.TxCtrl += k.TxCtrl[l]
		cl.TxBytes += k.TxBytes[l]
		for lc := range cl.TxClassBytes {
			if lc < bpf.CellLossClasses {
				cl.TxClassBytes[lc] += k.TxClassBytes[lc][l]
			}
		}
	}
	if f.peers != nil {
		return // an edge: its kernel path is Snapshot.KernelTx
	}
	c.Node.Forwarded += k.Fwd
	c.Node.CtrlFwd += k.Ctrl
	c.Kernel = &KernelSnapshot{Forwarded: k.Fwd, CtrlFwd: k.Ctrl, Bad: k.Bad, LastHop: k.Hops, NoRoute: k.NoRoute, Rate: k.Rate, Raced: k.Raced, SealErr: k.SealErr}
}

// close turns the kernel path off.
func (f *cellFast) close() {
	f.fwd.SetOn(false)
	if f.peers != nil {
		f.peers.Close()
		f.peers = nil
	}
}

// KernelSnapshot is a fabric node's kernel path (cellfast.go): cells and
// credit frames it forwarded, and those it handed to the worker and why
// (not a valid cell or credit frame, a cell's last hop, no route or every
// route held, no token on the link, a lost race), and those it dropped
// because it could not reseal the trailer (must stay 0).
type KernelSnapshot struct {
	Forwarded uint64 `json:"forwarded"`
	CtrlFwd   uint64 `json:"credit_forwarded"`
	Bad       uint64 `json:"to_worker_invalid"`
	LastHop   uint64 `json:"to_worker_last_hop"`
	NoRoute   uint64 `json:"to_worker_no_route"`
	Rate      uint64 `json:"to_worker_rate"`
	Raced     uint64 `json:"to_worker_raced"`
	SealErr   uint64 `json:"seal_errors"`
}
