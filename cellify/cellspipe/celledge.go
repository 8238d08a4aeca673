package cellspipe

import (
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/xdp"
)

// The ingress edge's kernel path: the host port's XDP program turns host
// frames into cells itself while it owns their VOQ (lf_cell_tx in
// bpf/c/port.c; the words, the rule and the argument for the hand-over are
// in cellify/kerntx.go). The node claims, folds and hands back its VOQs
// (cellify.Node.SetKernelTx); the pipeline gives it the host port's maps
// (edgeKernel), keeps the links' routes, held links and rate limits in the
// host port program's cell maps as a fabric node's kernel path does
// (cellFast: routes, held links, the worker's charges), holds the links
// whose peer does not take redirected frames (a veth whose peer has no XDP
// program yet, re-checked every edgePeerEvery), and tells the kernel how
// many host frames it took in (ToGo == Consumed, as LinkGuardian's send
// fast path). Counting: the node folds the kernel's cells into the host
// port's counters, CellsCut and its credit totals; publish adds the
// kernel's per-link counters to the links' (cellFast.fold), so
// /stats.json counts every frame once; Snapshot.KernelTx says what the
// kernel sent and why it passed frames to the worker.
//
// It runs only where it can: an edge with one host port, one worker,
// --fastpath auto, no link layer under the cells, spray perm or p2c (the
// kernel sprays round-robin), native XDP on every port, at most
// bpf.CellLinks links.

// edgeVOQGap and edgeVOQBurst bound the kernel's cells per VOQ: one every
// edgeVOQGap, bursts of edgeVOQBurst; a busier VOQ goes to the worker,
// which packs it (and keeps it while frames come closer than the gap).
// Back-to-back short TCP flows on the bundle take about one host frame
// every 25-30 µs per direction; 64-byte frames at saturation come every
// 2 µs, and cut one a cell in the kernel each costs the egress worker a
// cell: cells pack's packed arm took 0.075 link frames a packet without
// the bound (one run), 0.045 with it, 0.047-0.061 through the worker alone.
const (
	edgeVOQGap   = 20 * time.Microsecond
	edgeVOQBurst = 32
)

// edgePeerEvery is how often the links' peers are checked for taking
// redirected frames.
const edgePeerEvery = int64(100 * time.Millisecond)

// cellEdgePrep is an edge's kernel path, prepared in the ports' network
// namespace.
type cellEdgePrep struct {
	fwd   *bpf.CellFwd
	tx    *bpf.CellTx
	lg    *bpf.LGTx
	peers *bpf.FeatureReader
	ifx   []int // the link ports' ifindexes
}

// prepareCellEdge readies an edge's kernel path if it can run: nil and
// why not if it cannot.
func prepareCellEdge(d *dataplane.Dataplane, cfg *dataplane.Config) (*cellEdgePrep, string) {
	ps := d.Ports()
	switch {
	case len(ps.Hosts) != 1:
		return nil, "not one host port"
	case ConfigOf(cfg).Spray == cellify.SprayHash.String():
		return nil, "spray hash"
	}
	if why := kernelPathWhyNot(d, cfg, append([]int{ps.Hosts[0]}, ps.Links...)); why != "" {
		return nil, why
	}
	host := d.Port(ps.Hosts[0]).Program()
	e := &cellEdgePrep{}
	var err error
	if e.fwd, err = host.CellFwd(); err != nil {
		return nil, err.Error()
	}
	if e.tx, err = host.CellTx(); err != nil {
		return nil, err.Error()
	}
	if e.lg, err = host.LGTx(); err != nil {
		return nil, err.Error()
	}
	e.tx.SetOn(false)
	if err := setCellLinks(e.fwd, d, cfg); err != nil {
		return nil, err.Error()
	}
	for _, port := range ps.Links {
		e.ifx = append(e.ifx, d.Port(port).Program().Ifindex())
	}
	if e.peers, err = bpf.NewFeatureReader(); err != nil {
		return nil, err.Error()
	}
	if err := host.SetCellHost(true); err != nil {
		e.peers.Close()
		return nil, err.Error()
	}
	return e, ""
}

// edgeKernel is the host port's maps as the node's cellify.EdgeKernel,
// with the count of host frames the worker took in from queue 0.
type edgeKernel struct {
	e     *cellEdgePrep
	sock  *xdp.Socket
	drops uint64
	at    int64
}

func (k *edgeKernel) Slots() int                 { return bpf.CellTxVOQs }
func (k *edgeKernel) State(i int) *atomic.Uint64 { return k.e.tx.State(i) }
func (k *edgeKernel) Base(i int) *atomic.Uint64  { return k.e.tx.Base(i) }
func (k *edgeKernel) SetKey(i int, q cellify.VOQKey) {
	k.e.tx.SetKey(i, uint16(q.Dst), q.Port, uint8(q.Class))
}
func (k *edgeKernel) SetLow(i int, low uint32)     { k.e.tx.SetLow(i, low) }
func (k *edgeKernel) DeleteDest(mac [6]byte) error { return k.e.tx.DeleteDest(mac) }
func (k *edgeKernel) ClearDests() error            { return k.e.tx.ClearDests() }
func (k *edgeKernel) Clock() int64                 { return bpf.MonoNow() }
func (k *edgeKernel) Ready() bool                  { return k.e.lg.ToGo().Load() == k.e.lg.Consumed().Load() }
func (k *edgeKernel) SetOn(on bool)                { k.e.tx.SetOn(on) }
func (k *edgeKernel) SetEdge(c cellify.KernelEdge) {
	k.e.tx.SetEdge(uint16(c.Self), c.Hops, c.Host, c.Epoch, c.MaxPayload)
	k.e.tx.SetVOQRate(c.VOQNs, c.VOQTau)
}
func (k *edgeKernel) SetDest(mac [6]byte, d cellify.KernelDest) error {
	return k.e.tx.SetDest(mac, bpf.CellTxDest{Until: d.Until, Edge: uint16(d.Edge), Port: d.Port, VOQ: d.VOQ})
}

// takenIn stores how many host frames of queue 0 the worker has taken in
// (read from the socket, every one handed to the node before this call,
// plus those the socket dropped: its statistics, a syscall, read at most
// every millisecond while the count is short of the kernel's).
func (k *edgeKernel) takenIn(now int64) {
	lg := k.e.lg
	want := lg.ToGo().Load()
	taken := k.sock.RxFrames() + k.drops
	if int64(taken-want) < 0 && now-k.at >= int64(time.Millisecond) {
		k.at = now
		if st, err := k.sock.Stats(); err == nil {
			k.drops = st.RxDropped + st.RxRingFull
			taken = k.sock.RxFrames() + k.drops
		}
	}
	lg.Consumed().Store(taken)
}

// openCellEdge turns the prepared kernel path on for pl: false if the
// host port has no socket of queue 0 or the node refuses.
func openCellEdge(pl *cellPipeline, e *cellEdgePrep, nc *cellify.NodeConfig) bool {
	var sock *xdp.Socket
	for _, s := range pl.w.Port(pl.ps.Hosts[0]).Sockets() {
		if s.Queue() == 0 {
			sock = s
		}
	}
	if sock == nil {
		return false
	}
	pl.fast = openCellFast(pl, e.fwd, nc)
	pl.fast.peers, pl.fast.ifx = e.peers, e.ifx
	pl.fast.sync(pl)
	k := &edgeKernel{e: e, sock: sock}
	k.takenIn(0)
	if !pl.node.SetKernelTx(k, 0, int64(edgeVOQGap), edgeVOQBurst*int64(edgeVOQGap)) {
		return false
	}
	pl.kedge = k
	// A cell that takes a VOQ's room below its low mark wakes the worker
	// through the host port's wake ring (cellify's "Why the room seldom
	// runs out"); Poll drains it.
	pl.w.WatchFD(e.lg.WakeFD())
	return true
}

// KernelTxSnapshot is an edge's kernel path (celledge.go): the cells the
// kernel sent (counted in the host port's, the links' and the node's
// counters as well), the host frames it passed to the worker and why, the
// VOQ hand-overs.
type KernelTxSnapshot struct {
	Sent       uint64 `json:"sent"`
	Bytes      uint64 `json:"bytes"`
	NoDest     uint64 `json:"to_worker_no_dest"`
	NotOwned   uint64 `json:"to_worker_not_owned"`
	Unread     uint64 `json:"to_worker_unread"`
	NoCredit   uint64 `json:"to_worker_no_credit"`
	NoRoute    uint64 `json:"to_worker_no_route"`
	NoRate     uint64 `json:"to_worker_rate"`
	Busy       uint64 `json:"to_worker_busy"`
	Wakeups    uint64 `json:"wakeups"` // cells that took a VOQ's room below its low mark (the worker woken)
	WakeErr    uint64 `json:"wake_errors,omitempty"`
	Raced      uint64 `json:"to_worker_raced"`
	Ineligible uint64 `json:"to_worker_ineligible"`
	StampErr   uint64 `json:"stamp_errors"`
	Claims     uint64 `json:"claims"`
	HandBacks  uint64 `json:"hand_backs"`
	Raises     uint64 `json:"raises"` // grants added to the room of a VOQ the kernel kept
	DestSets   uint64 `json:"dest_sets"`
	DestErrs   uint64 `json:"dest_errors"`
	NoPeer     uint64 `json:"links_no_peer"` // links held now: their peer takes no redirected frame
}

// foldEdge adds the edge kernel path's snapshot.
func (pl *cellPipeline) foldEdge(c *Snapshot) {
	k := pl.kedge.e.tx.Counters()
	ns := pl.node.KernelStats()
	c.KernelTx = &KernelTxSnapshot{Sent: k.Sent, Bytes: k.Bytes, NoDest: k.NoDest, NotOwned: k.NotOwned, Unread: k.Unread,
		NoCredit: k.NoCredit, NoRoute: k.NoRoute, NoRate: k.NoRate, Busy: k.Busy, Raced: k.Raced, Ineligible: k.Ineligible, StampErr: k.StampErr,
		Wakeups: k.Wakeups, WakeErr: k.WakeErr,
		Claims: ns.Claims, HandBacks: ns.HandBacks, Raises: ns.Raises, DestSets: ns.DestSets, DestErrs: ns.DestErrs, NoPeer: uint64(pl.fast.noPeer)}
}
