package bpf

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"golang.org/x/sys/unix"
)

// Mode cells' kernel path on a fabric node (lf_cell_fwd in c/port.c): a
// link port whose program has a cell link index (SetCellLink) forwards the
// data cells arriving on it in the kernel while the node's CellFwd is on,
// by the routes, held links and rate limits the worker keeps in it; what
// the kernel does not decide goes to the AF_XDP socket unchanged. The maps
// are one set per node: the first link port's program owns them, the
// others are attached with PortOptions.ShareCells naming it.

// CellLinks, CellEdges and CellLossClasses bound the kernel path's maps
// (LF_CELL_LINKS, LF_CELL_EDGES, LF_CELL_LCS in c/port.c).
const (
	CellLinks       = 16
	CellEdges       = 1024
	CellLossClasses = 3
)

// CellCounters are the kernel path's counters summed over CPUs. Fwd cells
// and Ctrl credit frames were forwarded in the kernel; Bad, Hops, NoRoute,
// Rate and Raced were handed to the worker (not a valid cell or credit
// frame, a cell's last hop, no route or every route held, no token on the
// link picked, a lost race or no redirect target); SealErr were dropped
// after the trailer could not be resealed (must stay 0). Per link: the
// cells and credit frames forwarded from it (Rx) and onto it (Tx), the
// bytes of both without the trailer, and a cell's bytes per its loss class.
type CellCounters struct {
	Fwd, Ctrl, Bad, Hops, NoRoute, Rate, Raced, SealErr uint64
	RR                                                  uint64 // the round-robin position
	RxCells, RxCtrl, RxBytes, TxCells, TxCtrl, TxBytes  [CellLinks]uint64
	TxClassBytes                                        [CellLossClasses][CellLinks]uint64
}

// shareCellMaps returns the map replacements that make a program loaded
// with them share p's cell maps.
func (p *PortProgram) shareCellMaps(o *ebpf.CollectionOptions) (*ebpf.CollectionOptions, error) {
	if p.objs.CellState == nil {
		return nil, fmt.Errorf("share the cell maps of %s: its program is closed", p.ifname)
	}
	return replaceMaps(o, map[string]*ebpf.Map{"cell_state": p.objs.CellState, "cell_route": p.objs.CellRoute,
		"cell_tx": p.objs.CellTx, "cell_count": p.objs.CellCount}), nil
}

// replaceMaps adds maps to o's map replacements (o nil: new options), so
// that a program loaded with them uses those maps instead of its own.
func replaceMaps(o *ebpf.CollectionOptions, maps map[string]*ebpf.Map) *ebpf.CollectionOptions {
	if o == nil {
		o = &ebpf.CollectionOptions{}
	}
	if o.MapReplacements == nil {
		o.MapReplacements = map[string]*ebpf.Map{}
	}
	for name, m := range maps {
		o.MapReplacements[name] = m
	}
	return o
}

// SetCellLink makes the port link l (0..CellLinks-1) of a fabric node's
// cell kernel path: cells arriving on it are forwarded in the kernel while
// the node's CellFwd is on. l < 0 takes the port out of it.
func (p *PortProgram) SetCellLink(l int) error {
	if l >= CellLinks {
		return fmt.Errorf("%s: cell link %d: the kernel path takes links 0..%d", p.ifname, l, CellLinks-1)
	}
	return p.changeConf("set the cell link", func(c *portPortConf) { c.Cell = uint32(l + 1) })
}

// CellFwd is a fabric node's cell kernel path state: cell_state and
// cell_route memory-mapped, cell_tx and cell_count through the map. Its
// setters are single atomic stores the program reads per frame (no
// system call but SetLink's devmap entry); Close unmaps it.
type CellFwd struct {
	p      *PortProgram
	mem    []byte
	st     *portCellShared
	rmem   []byte
	routes []uint64
}

// CellFwd maps the cell maps of p (the program that owns them: not one
// attached with ShareCells); repeated calls return the same value.
func (p *PortProgram) CellFwd() (*CellFwd, error) {
	return mapOnce(p, &p.cells, func() (*CellFwd, error) {
		mem, err := p.mapShared(p.objs.CellState, "cell_state", int(unsafe.Sizeof(portCellShared{})))
		if err != nil {
			return nil, err
		}
		m := p.objs.CellRoute
		if int(m.ValueSize()) != 8 || int(m.MaxEntries()) != CellLossClasses*CellEdges {
			unix.Munmap(mem)
			return nil, fmt.Errorf("map cell_route of %s: %d values of %d bytes, want %d of 8", p.ifname, m.MaxEntries(), m.ValueSize(), CellLossClasses*CellEdges)
		}
		rmem, err := mmapMap(m, 0, 8*CellLossClasses*CellEdges, unix.PROT_READ|unix.PROT_WRITE)
		if err != nil {
			unix.Munmap(mem)
			return nil, fmt.Errorf("mmap cell_route of %s: %w", p.ifname, err)
		}
		return &CellFwd{p: p, mem: mem, st: (*portCellShared)(unsafe.Pointer(&mem[0])), rmem: rmem,
			routes: unsafe.Slice((*uint64)(unsafe.Pointer(&rmem[0])), CellLossClasses*CellEdges)}, nil
	})
}

func (c *CellFwd) unmap() error {
	err := unix.Munmap(c.mem)
	if e := unix.Munmap(c.rmem); err == nil {
		err = e
	}
	c.mem, c.rmem, c.st, c.routes = nil, nil, nil, nil
	return err
}

// SetOn turns forwarding in the kernel on or off; off, every frame goes
// to the worker from the next one on.
func (c *CellFwd) SetOn(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(&c.st.On, v)
}

// On says whether the kernel forwards cells.
func (c *CellFwd) On() bool { return atomic.LoadUint32(&c.st.On) != 0 }

// SetIntegrity says which trailer the node's link frames carry: checked
// on arrival (a frame that fails goes to the worker, which counts and
// drops it) and resealed after the frame is changed.
func (c *CellFwd) SetIntegrity(m linkcrc.Integrity) error {
	v, err := integrityConf(m)
	if err != nil {
		return err
	}
	atomic.StoreUint32(&c.st.Crc, v)
	return nil
}

// SetClasses sets the number of loss classes n (credit frames take the
// loosest one's routes) and the loss class (1..n) of each of the 8
// traffic classes; set it before SetOn.
func (c *CellFwd) SetClasses(n int, lc [8]uint8) {
	c.st.Lc = lc
	atomic.StoreUint32(&c.st.Lcs, uint32(n))
}

// SetHeld sets the links the kernel must not send on (bit l: link l).
func (c *CellFwd) SetHeld(mask uint64) { atomic.StoreUint64(&c.st.Held, mask) }

// Held is the mask SetHeld last stored.
func (c *CellFwd) Held() uint64 { return atomic.LoadUint64(&c.st.Held) }

// SetRoute sets the links through which edge dst is reachable in loss
// class lc (1..CellLossClasses); out of range it does nothing.
func (c *CellFwd) SetRoute(lc, dst int, mask uint64) {
	if lc < 1 || lc > CellLossClasses || dst < 0 || dst >= CellEdges {
		return
	}
	atomic.StoreUint64(&c.routes[(lc-1)*CellEdges+dst], mask)
}

// Route is what SetRoute last stored.
func (c *CellFwd) Route(lc, dst int) uint64 {
	if lc < 1 || lc > CellLossClasses || dst < 0 || dst >= CellEdges {
		return 0
	}
	return atomic.LoadUint64(&c.routes[(lc-1)*CellEdges+dst])
}

// CellLinkConf is one link port of the kernel path.
type CellLinkConf struct {
	Ifindex int     // the port (in the calling thread's network namespace)
	MAC     [6]byte // its MAC, the source MAC of what leaves on it
	// Rate (bit/s; 0: none) and Burst (bytes) are the port's rate limit,
	// Overhead what each frame costs beyond its bytes.
	Rate            uint64
	Burst, Overhead int
}

// SetLink makes lc link l's redirect target and rate limit.
func (c *CellFwd) SetLink(l int, lc CellLinkConf) error {
	if l < 0 || l >= CellLinks {
		return fmt.Errorf("cell link %d out of range [0, %d)", l, CellLinks)
	}
	k := &c.st.Link[l]
	k.Mac = lc.MAC
	atomic.StoreUint32(&k.Overhead, uint32(max(lc.Overhead, 0)))
	var ps, tau uint64
	if lc.Rate > 0 {
		ps = 8_000_000_000_000 / lc.Rate
		tau = uint64(max(lc.Burst, 0)) * ps / 1000
	}
	atomic.StoreUint64(&k.Tau, tau)
	atomic.StoreUint64(&k.PsPerByte, ps)
	if err := c.p.objs.CellTx.Put(uint32(l), uint32(lc.Ifindex)); err != nil {
		return fmt.Errorf("make ifindex %d (%s) cell link %d: %w", lc.Ifindex, netnsDesc(), l, err)
	}
	return nil
}

// Charge takes bytes in frames frames sent on link l by the worker out of
// the link's rate limit at now (CLOCK_MONOTONIC ns), so that what the
// kernel and the worker send together keeps to it.
func (c *CellFwd) Charge(l, frames, bytes int, now int64) {
	if l < 0 || l >= CellLinks || bytes <= 0 {
		return
	}
	k := &c.st.Link[l]
	ps := atomic.LoadUint64(&k.PsPerByte)
	if ps == 0 {
		return
	}
	cost := (uint64(bytes) + uint64(frames)*uint64(atomic.LoadUint32(&k.Overhead))) * ps / 1000
	for {
		t := atomic.LoadUint64(&k.Tat)
		if atomic.CompareAndSwapUint64(&k.Tat, t, max(t, uint64(now))+cost) {
			return
		}
	}
}

// Rated says whether link l has a rate limit (SetLink with a Rate).
func (c *CellFwd) Rated(l int) bool {
	return l >= 0 && l < CellLinks && atomic.LoadUint64(&c.st.Link[l].PsPerByte) != 0
}

// Tat is link l's GCRA time (the time its bucket is empty until).
func (c *CellFwd) Tat(l int) uint64 { return atomic.LoadUint64(&c.st.Link[l].Tat) }

// Counters sums the kernel path's counters over CPUs.
func (c *CellFwd) Counters() (CellCounters, error) {
	if c.p.objs.CellCount == nil {
		return CellCounters{}, errors.New("cell counters: the port program is closed")
	}
	return sumPerCPU[CellCounters, portCellCounters](c.p.objs.CellCount)
}

// MonoNow is CLOCK_MONOTONIC in ns, the program's bpf_ktime_get_ns. It
// reads Go's monotonic clock (CLOCK_MONOTONIC through the vDSO, no system
// call: an edge's worker reads it at every call) from an epoch taken once
// against clock_gettime(2), off by at most half the narrowest bracket the
// calibration saw (well under a microsecond on an idle CPU).
func MonoNow() int64 { return int64(time.Since(monoEpoch)) }

// monoEpoch is when CLOCK_MONOTONIC read 0, in Go's monotonic clock.
var monoEpoch = monoCalibrate()

// monoBracket: a calibration stops at the first bracket this narrow.
const monoBracket = time.Microsecond

// monoCalibrate returns the epoch of CLOCK_MONOTONIC in Go's monotonic
// clock: each try reads it between two time.Now, and the narrowest bracket
// gives the epoch (its midpoint less the reading).
func monoCalibrate() time.Time {
	var epoch time.Time
	best := time.Duration(math.MaxInt64)
	for range 16 {
		var ts unix.Timespec
		t0 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			continue
		}
		d := time.Since(t0)
		if d < best {
			best, epoch = d, t0.Add(d/2-time.Duration(ts.Nano()))
		}
		if best <= monoBracket {
			break
		}
	}
	if best == math.MaxInt64 {
		return time.Now()
	}
	return epoch
}
