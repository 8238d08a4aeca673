package bpf

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"golang.org/x/sys/unix"
)

// Mode cells' kernel path at an egress edge (lf_cell_rx in c/port.c): a
// link port whose program has a cell link index (SetCellLink) delivers
// the data cells arriving on it that carry one whole record and are the
// next cell of a stream whose in-order point the kernel owns, stripped to
// their host frame, to the stream's host port (SetHost), while the edge's
// CellRx is on. Everything else goes to the AF_XDP socket unchanged. The
// maps are one set per edge: the first link port's program owns them, the
// others are attached with PortOptions.ShareCellRx naming it. The
// hand-over of the points is cellify.KernelRx's (cellify/kernrx.go).

// CellRxStreams and CellRxHosts bound the maps (LF_CELL_RX_STREAMS,
// LF_CELL_RX_HOSTS).
const (
	CellRxStreams = 256
	CellRxHosts   = 16
)

// CellRxCounters are the edge kernel path's counters summed over CPUs:
// cells Delivered (Bytes of host frames), Handovers of a point to Go, and
// cells passed to the worker because they were not valid cells (Bad), not
// for this edge or of no stream the kernel knows (NotOurs), of a stream
// whose point is Go's (GoOwned) or lost a race for the point (Raced);
// StripErr were dropped after the point moved (must stay 0). Per arriving
// link: the cells delivered and their frames' bytes without the trailer.
// Of Handovers, why: a cell out of order (seq or record number), not one
// whole record, of another source (FCI, epoch, MAC, port byte), another
// CPU's delivery just before.
type CellRxCounters struct {
	Delivered, Bytes, Handovers, Bad, NotOurs, GoOwned, Raced, StripErr uint64
	HoOrder, HoRecord, HoSource, HoCPU                                  uint64
	RxCells, RxBytes                                                    [CellLinks]uint64
}

// shareCellRxMaps returns the map replacements that make a program loaded
// with them share p's edge cell maps.
func (p *PortProgram) shareCellRxMaps(o *ebpf.CollectionOptions) (*ebpf.CollectionOptions, error) {
	if p.objs.CellRx == nil {
		return nil, fmt.Errorf("share the edge cell maps of %s: its program is closed", p.ifname)
	}
	return replaceMaps(o, map[string]*ebpf.Map{"cell_rx": p.objs.CellRx, "cell_rx_idx": p.objs.CellRxIdx,
		"cell_rx_host": p.objs.CellRxHost, "cell_rx_count": p.objs.CellRxCount}), nil
}

// CellRx is an edge's cell kernel path state: cell_rx memory-mapped, the
// index, the host ports and the counters through their maps. It
// implements cellify.RxSlots.
type CellRx struct {
	p   *PortProgram
	mem []byte
	st  *portCellRxShared
}

// CellRx maps the edge cell maps of p (the program that owns them: not
// one attached with ShareCellRx); repeated calls return the same value.
func (p *PortProgram) CellRx() (*CellRx, error) {
	return mapOnce(p, &p.cellrx, func() (*CellRx, error) {
		mem, err := p.mapShared(p.objs.CellRx, "cell_rx", int(unsafe.Sizeof(portCellRxShared{})))
		if err != nil {
			return nil, err
		}
		return &CellRx{p: p, mem: mem, st: (*portCellRxShared)(unsafe.Pointer(&mem[0]))}, nil
	})
}

func (c *CellRx) unmap() error {
	mem := c.mem
	c.mem, c.st = nil, nil
	return unix.Munmap(mem)
}

// SetOn turns delivery in the kernel on or off; off, every frame goes to
// the worker from the next one on (the points stay as they are).
func (c *CellRx) SetOn(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(&c.st.On, v)
}

// SetSelf sets this edge's id: cells for another go to the worker.
func (c *CellRx) SetSelf(id uint16) {
	// Not atomic with On: set it before SetOn.
	c.st.Self = id
}

// SetPass chooses how the kernel delivers a host frame: false, redirected
// from XDP into the host port (XDP_REDIRECT through the devmap: a veth
// host port's peer must have NAPI, GRO on or an XDP program); true,
// passed up the link port's stack (XDP_PASS) with metadata that
// lf_cell_rx_tc, attached to the link port's TCX ingress
// (AttachCellRxTC), redirects to the host port's egress. Set it before
// SetOn.
func (c *CellRx) SetPass(pass bool) {
	var v uint16
	if pass {
		v = 1
	}
	c.st.Pass = v
}

// SetIntegrity says which trailer the edge's link frames carry: checked on
// arrival (a frame that fails goes to the worker) and removed.
func (c *CellRx) SetIntegrity(m linkcrc.Integrity) error {
	v, err := integrityConf(m)
	if err != nil {
		return err
	}
	atomic.StoreUint32(&c.st.Crc, v)
	return nil
}

// SetHost makes ifindex (in the calling thread's network namespace) host
// port p's redirect target.
func (c *CellRx) SetHost(p, ifindex int) error {
	if p < 0 || p >= CellRxHosts {
		return fmt.Errorf("cell host port %d out of range [0, %d)", p, CellRxHosts)
	}
	if err := c.p.objs.CellRxHost.Put(uint32(p), uint32(ifindex)); err != nil {
		return fmt.Errorf("make ifindex %d (%s) cell host port %d: %w", ifindex, netnsDesc(), p, err)
	}
	return nil
}

// Point is slot i's point (cellify's RxOwned and the rest); change it
// only by compare-and-swap.
func (c *CellRx) Point(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&c.st.S[i].Point))
}

// SetStream writes slot i's key, epoch, source MAC and port byte, and
// clears its passed word (only while Go owns its point).
func (c *CellRx) SetStream(i int, key uint32, epoch uint16, mac [6]byte, srcPort uint8) {
	s := &c.st.S[i]
	s.Key, s.Epoch, s.Mac, s.SrcPort = key, epoch, mac, srcPort
	atomic.StoreUint64(&s.Passed, 0)
}

// Passed is slot i's passed word: the point word of the last delivery
// lf_cell_rx_tc sent on.
func (c *CellRx) Passed(i int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&c.st.S[i].Passed))
}

// Stream returns slot i's source MAC and port byte.
func (c *CellRx) Stream(i int) ([6]byte, uint8) { return c.st.S[i].Mac, c.st.S[i].SrcPort }

// Index makes the cells of key look up slot i.
func (c *CellRx) Index(key uint32, i int) error {
	if i < 0 || i >= CellRxStreams {
		return fmt.Errorf("cell stream slot %d out of range [0, %d)", i, CellRxStreams)
	}
	return c.p.objs.CellRxIdx.Put(key, uint32(i))
}

// Unindex forgets key.
func (c *CellRx) Unindex(key uint32) error {
	if err := c.p.objs.CellRxIdx.Delete(key); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	return nil
}

// Reset forgets every stream: no key looks a slot up, every point is
// Go's, the slots are zero. Call it while the kernel path is off (SetOn),
// before a new worker side (cellify.KernelRx) takes the slots.
func (c *CellRx) Reset() error {
	var keys []uint32
	var k, v uint32
	it := c.p.objs.CellRxIdx.Iterate()
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("edge cell streams: %w", err)
	}
	for _, k := range keys {
		if err := c.Unindex(k); err != nil {
			return fmt.Errorf("edge cell streams: %w", err)
		}
	}
	for i := range c.st.S {
		c.Point(i).Store(0)
		c.st.S[i] = portCellRxStream{}
	}
	return nil
}

// Counts are slot i's counters: records delivered, their frames' bytes,
// the cells' payload bytes, hand-overs.
func (c *CellRx) Counts(i int) (frames, bytes, payload, handovers uint64) {
	s := &c.st.S[i]
	return atomic.LoadUint64(&s.Frames), atomic.LoadUint64(&s.Bytes), atomic.LoadUint64(&s.Payload),
		atomic.LoadUint64(&s.Handovers)
}

// Counters sums the counters over CPUs.
func (c *CellRx) Counters() (CellRxCounters, error) {
	if c.p.objs.CellRxCount == nil {
		return CellRxCounters{}, errors.New("edge cell counters: the port program is closed")
	}
	return sumPerCPU[CellRxCounters, portCellRxCounters](c.p.objs.CellRxCount)
}

// AttachCellRxTC attaches lf_cell_rx_tc to the port's TCX ingress (in the
// calling thread's network namespace), for CellRx.SetPass: Close detaches
// it. Attaching twice is harmless.
func (p *PortProgram) AttachCellRxTC() error {
	p.lgMu.Lock()
	defer p.lgMu.Unlock()
	if p.tcx != nil {
		return nil
	}
	if p.objs.LfCellRxTc == nil {
		return fmt.Errorf("attach lf_cell_rx_tc to %s: the port program is closed", p.ifname)
	}
	l, err := link.AttachTCX(link.TCXOptions{Interface: p.ifindex, Program: p.objs.LfCellRxTc, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return fmt.Errorf("attach lf_cell_rx_tc to the TCX ingress of %s: %w", p.ifname, err)
	}
	p.tcx = l
	return nil
}
