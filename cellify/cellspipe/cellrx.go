package cellspipe

import (
	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
)

// The kernel path of an egress edge: its link ports' XDP program delivers
// the in-order single-record cells of the streams whose in-order point the
// kernel owns to the host port itself (lf_cell_rx in bpf/c/port.c), and
// the worker takes everything else. The hand-over of the points, and why
// nothing is delivered twice, out of order or stale, is argued in
// cellify/kernrx.go; here is where the worker meets its conditions:
//
//   - The reassembly gives a stream's point (Node.HandBack) at the start
//     of the worker's next call, after the kicks of the loop before, and
//     only while the host port has nothing waiting: no delivery in its
//     queue (hostQ), its shaper or its TX ring, so that the kernel's first
//     delivery follows the worker's last one into the host.
//   - A host port with a rate limit keeps its deliveries in the worker's
//     shaper: the kernel path stays off (it would bypass the limit), as it
//     does with a link layer under the cells (it numbers the link's
//     frames), with more than one worker (each has its own reassembly),
//     on a link port attached in generic XDP, and unless --fastpath is auto.
//   - A new pipeline clears the slots (CellRx.Reset, with the path off)
//     before it gives any point: points a node before it gave, which its
//     reassembly knows nothing of, do not survive it.
//   - What the worker does for a cell the kernel delivers is done from the
//     kernel's counters at every call (Node.KernelDelivered): the
//     scheduler's arrived bytes, the MAC table's entry of the one source
//     MAC the kernel delivers from, the node's and the host port's
//     counters; publish adds the kernel's per-link counts to the links',
//     so /stats.json counts every frame once, whichever path it took.
//   - Delivery (--cells-edge-delivery): tc, the default, passes the host
//     frame up the link port's stack (XDP_PASS with metadata) to
//     lf_cell_rx_tc on the port's TCX ingress, which redirects it out of
//     the host port; xdp redirects it from XDP into the host port, which
//     a veth takes only while its peer runs NAPI (GRO on, or an XDP
//     program): without it the kernel's deliveries are lost.
//
// The values of --cells-edge-delivery.
const (
	edgeDeliveryTC  = "tc"
	edgeDeliveryXDP = "xdp"
)

type cellRx struct {
	rx   *bpf.CellRx
	kr   *cellify.KernelRx
	at   int64 // the worker time of the last call (a new loop: hand back, fold)
	back bool  // something may be given back
}

// prepareCellRx readies the kernel path of an edge's link ports if it can
// run (in the ports' network namespace: the redirect targets are its
// ifindexes): nil and why not if it cannot.
func prepareCellRx(d *dataplane.Dataplane, cfg *dataplane.Config) (*bpf.CellRx, string) {
	cc := ConfigOf(cfg)
	ps := d.Ports()
	switch {
	case len(ps.Hosts) == 0:
		return nil, "a fabric node"
	case len(ps.Hosts) > bpf.CellRxHosts:
		return nil, "more host ports than the kernel path takes"
	}
	if why := kernelPathWhyNot(d, cfg, ps.Links); why != "" {
		return nil, why
	}
	for _, port := range ps.Hosts {
		if s, ok := cfg.Shape[d.Port(port).Name]; ok && s.Rate > 0 {
			return nil, d.Port(port).Name + " has a rate limit"
		}
	}
	rx, err := d.Port(ps.Links[0]).Program().CellRx()
	if err != nil {
		return nil, err.Error()
	}
	rx.SetOn(false)
	if err := rx.SetIntegrity(cfg.Link.Integrity); err != nil {
		return nil, err.Error()
	}
	rx.SetPass(cc.EdgeDelivery == edgeDeliveryTC)
	if cc.EdgeDelivery == edgeDeliveryTC {
		for _, port := range ps.Links {
			if err := d.Port(port).Program().AttachCellRxTC(); err != nil {
				return nil, err.Error()
			}
		}
	}
	for k, port := range ps.Hosts {
		if err := rx.SetHost(k, d.Port(port).Program().Ifindex()); err != nil {
			return nil, err.Error()
		}
	}
	for l, port := range ps.Links {
		if err := d.Port(port).Program().SetCellLink(l); err != nil {
			return nil, err.Error()
		}
	}
	return rx, ""
}

// openCellRx turns the prepared kernel path on for pl: the slots are
// cleared first (a node before this one may have given points).
func openCellRx(pl *cellPipeline, rx *bpf.CellRx) error {
	rx.SetOn(false)
	if err := rx.Reset(); err != nil {
		return err
	}
	hosts := make([]bool, len(pl.ps.Hosts))
	for k := range hosts {
		hosts[k] = true
	}
	f := &cellRx{rx: rx, kr: cellify.NewKernelRx(rx, hosts)}
	f.kr.CanGive = pl.hostIdle
	pl.node.SetKernelRx(f.kr)
	rx.SetSelf(uint16(pl.node.Config().Self))
	rx.SetOn(true)
	pl.rx = f
	return nil
}

// hostIdle says whether host port k has no delivery waiting in the
// worker: its queue, its shaper and its TX rings are empty.
func (pl *cellPipeline) hostIdle(k uint8) bool {
	if int(k) >= len(pl.ps.Hosts) || pl.hostQ[k].Len() > 0 {
		return false
	}
	port := pl.ps.Hosts[k]
	if pl.w.ShapedBytes(port) > 0 {
		return false
	}
	for _, s := range pl.w.Port(port).Sockets() {
		if s.TxFree() < pl.ring {
			return false
		}
	}
	return true
}

// loop runs at the start of each of the worker's calls: at the first of
// a loop (the kicks of the loop before are done) it counts what the
// kernel delivered and gives the points back that may go.
func (f *cellRx) loop(pl *cellPipeline, wnow, now int64) {
	if wnow == f.at {
		return
	}
	f.at = wnow
	f.kr.Fold(func(d *cellify.KernelDelivery) { pl.node.KernelDelivered(now, d) })
	pl.node.HandBack()
}

// fold adds the kernel's counters to a snapshot.
func (f *cellRx) fold(c *Snapshot) {
	k, err := f.rx.Counters()
	if err != nil {
		return
	}
	for l := range c.Links {
		cl := &c.Links[l]
		cl.RxFrames += k.RxCells[l]
		cl.RxCells += k.RxCells[l]
		cl.RxBytes += k.RxBytes[l]
	}
	st := f.kr.Stats
	c.KernelRx = &KernelRxSnapshot{Delivered: k.Delivered, Bytes: k.Bytes, Handovers: k.Handovers, Gives: st.Gives, Takes: st.Takes,
		Refused: st.Refused, Bad: k.Bad, NotOurs: k.NotOurs, GoOwned: k.GoOwned, Raced: k.Raced, StripErr: k.StripErr,
		HandoverOrder: k.HoOrder, HandoverRecord: k.HoRecord, HandoverSource: k.HoSource, HandoverCPU: k.HoCPU}
}

// close turns the kernel path off.
func (f *cellRx) close() { f.rx.SetOn(false) }

// KernelRxSnapshot is an egress edge's kernel path (cellrx.go): cells it
// delivered to the host ports (and their host frames' bytes); the points
// it gave the worker (handovers), the worker gave it (gives), took back
// (takes) or kept (refused: a host port with deliveries waiting, no free
// slot, a group source MAC); the cells it passed to the worker because
// they were not valid cells, not for this edge or of no stream it knows,
// of a stream whose point was the worker's, or it lost a race for the
// point; and cells it dropped after the point moved (must stay 0).
type KernelRxSnapshot struct {
	Delivered uint64 `json:"delivered"`
	Bytes     uint64 `json:"bytes"`
	Handovers uint64 `json:"handovers"`
	Gives     uint64 `json:"gives"`
	Takes     uint64 `json:"takes"`
	Refused   uint64 `json:"refused"`
	Bad       uint64 `json:"to_worker_invalid"`
	NotOurs   uint64 `json:"to_worker_not_ours"`
	GoOwned   uint64 `json:"to_worker_worker_owned"`
	Raced     uint64 `json:"to_worker_raced"`
	StripErr  uint64 `json:"strip_errors"`
	// Of Handovers, why: a cell out of order, not one whole record, of
	// another source (FCI, epoch, MAC), another CPU's delivery just before.
	HandoverOrder  uint64 `json:"handover_order"`
	HandoverRecord uint64 `json:"handover_record"`
	HandoverSource uint64 `json:"handover_source"`
	HandoverCPU    uint64 `json:"handover_cpu"`
}
