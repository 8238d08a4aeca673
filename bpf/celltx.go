package bpf

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Mode cells' ingress edge in the kernel (lf_cell_tx in c/port.c): on an
// edge's host port with SetCellHost on, a host frame of RX queue 0 whose
// VOQ the kernel owns becomes a single-record cell and is redirected onto
// a link port; every other frame goes to the AF_XDP socket as before. The
// links, routes, held links and rate limits are the port's own cell maps
// (CellFwd, as a fabric node's link ports use them); the VOQs, the MAC
// entries and the edge's constants are cell_tx_voqs, cell_tx_mac and cell_tx_state
// (CellTx); ToGo and Consumed are LGTx's. The words and the hand-over are
// cellify's (cellify/kerntx.go).

// CellTxVOQs is the number of VOQ slots (LF_CELL_TX_VOQS).
const CellTxVOQs = 1024

// CellTxCounters are the ingress path's counters (cell_tx_shared's).
type CellTxCounters struct {
	Sent, Bytes                                 uint64 // cells sent, their records' bytes
	NoDest, NotOwned, Unread, NoCredit, NoRoute uint64 // to Go, by reason
	NoRate, Raced, Ineligible, Busy             uint64
	StampErr                                    uint64 // cells dropped after their seq was taken (must stay 0)
	Wakeups, WakeErr                            uint64 // cells that took a VOQ's room below its low mark; wake records refused
}

// CellTxDest is a MAC's entry in cell_tx_mac.
type CellTxDest struct {
	Until int64 // CLOCK_MONOTONIC ns (MonoNow) the entry is good until
	Edge  uint16
	Port  uint8
	VOQ   [8]uint32 // per traffic class: VOQ slot + 1, 0: none
}

// CellTx is a host port's ingress path state: cell_tx_state and cell_tx_voqs
// memory-mapped, cell_tx_mac through the map. Close (of the program) unmaps it.
type CellTx struct {
	p    *PortProgram
	mem  []byte
	st   *portCellTxShared
	vmem []byte
	voqs []portCellTxVoq
}

// SetCellHost makes the port an edge's host port whose frames may become
// cells in the kernel (while CellTx's SetOn is on), or not.
func (p *PortProgram) SetCellHost(on bool) error {
	var v uint32
	if on {
		v = 1
	}
	return p.changeConf("set the cell host port", func(c *portPortConf) { c.Cell = v })
}

// CellTx maps the port's ingress path state; repeated calls return the
// same value.
func (p *PortProgram) CellTx() (*CellTx, error) {
	return mapOnce(p, &p.celltx, func() (*CellTx, error) {
		mem, err := p.mapShared(p.objs.CellTxState, "cell_tx_state", int(unsafe.Sizeof(portCellTxShared{})))
		if err != nil {
			return nil, err
		}
		m := p.objs.CellTxVoqs
		vs := int(unsafe.Sizeof(portCellTxVoq{}))
		if int(m.ValueSize()) != vs || int(m.MaxEntries()) != CellTxVOQs {
			unix.Munmap(mem)
			return nil, fmt.Errorf("map cell_tx_voqs of %s: %d values of %d bytes, want %d of %d", p.ifname, m.MaxEntries(), m.ValueSize(), CellTxVOQs, vs)
		}
		vmem, err := mmapMap(m, 0, vs*CellTxVOQs, unix.PROT_READ|unix.PROT_WRITE)
		if err != nil {
			unix.Munmap(mem)
			return nil, fmt.Errorf("mmap cell_tx_voqs of %s: %w", p.ifname, err)
		}
		return &CellTx{p: p, mem: mem, st: (*portCellTxShared)(unsafe.Pointer(&mem[0])), vmem: vmem,
			voqs: unsafe.Slice((*portCellTxVoq)(unsafe.Pointer(&vmem[0])), CellTxVOQs)}, nil
	})
}

func (c *CellTx) unmap() error {
	err := unix.Munmap(c.mem)
	if e := unix.Munmap(c.vmem); err == nil {
		err = e
	}
	c.mem, c.vmem, c.st, c.voqs = nil, nil, nil, nil
	return err
}

// SetOn turns the path on or off (from the next frame on).
func (c *CellTx) SetOn(on bool) {
	var v uint32
	if on {
		v = 1
	}
	atomic.StoreUint32(&c.st.On, v)
}

// SetVOQRate bounds the kernel's cells per VOQ: one every ns nanoseconds,
// bursts of tau ns (ns 0: no bound).
func (c *CellTx) SetVOQRate(ns, tau int64) {
	atomic.StoreUint64(&c.st.VoqTau, uint64(max(tau, 0)))
	atomic.StoreUint64(&c.st.VoqNs, uint64(max(ns, 0)))
}

// On says whether the path is on.
func (c *CellTx) On() bool { return atomic.LoadUint32(&c.st.On) != 0 }

// SetEdge sets the edge's constants: its id, the cells' hop budget, the
// host port's index (the records' source port byte), the epoch and the
// cell payload bound. Set it while the path is off.
func (c *CellTx) SetEdge(self uint16, hops, host uint8, epoch uint16, maxPayload int) {
	c.st.Self, c.st.Hops, c.st.Host, c.st.Epoch = self, hops, host, epoch
	atomic.StoreUint32(&c.st.MaxPayload, uint32(max(maxPayload, 0)))
}

func word(p *uint64) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(p)) }

// State and Base are VOQ slot i's words (cellify.KernelWord, KernelBase).
func (c *CellTx) State(i int) *atomic.Uint64 { return word(&c.voqs[i].State) }
func (c *CellTx) Base(i int) *atomic.Uint64  { return word(&c.voqs[i].Base) }

// SetLow sets slot i's low mark: a cell that takes the room from low or
// more to below it wakes the worker through the port's lg_tx_wake
// (LGTx.WakeFD); 0: none. Set it before the State that hands the slot
// over.
func (c *CellTx) SetLow(i int, low uint32) { atomic.StoreUint32(&c.voqs[i].Low, low) }

// Declined is how often the kernel gave slot i to Go.
func (c *CellTx) Declined(i int) uint64 { return atomic.LoadUint64(&c.voqs[i].Declined) }

// SetKey names slot i's VOQ (destination edge, port, traffic class).
func (c *CellTx) SetKey(i int, dst uint16, port, class uint8) {
	v := &c.voqs[i]
	v.Dst, v.Port, v.Cls = dst, port, class
}

func macKey(mac [6]byte) uint64 {
	var k uint64
	for _, b := range mac {
		k = k<<8 | uint64(b)
	}
	return k
}

// SetDest writes mac's entry.
func (c *CellTx) SetDest(mac [6]byte, d CellTxDest) error {
	if c.p.objs.CellTxMac == nil {
		return errors.New("cell tx: the port program is closed")
	}
	v := portCellTxDest{Until: uint64(max(d.Until, 0)), Edge: d.Edge, Port: d.Port, Voq: d.VOQ}
	return c.p.objs.CellTxMac.Put(macKey(mac), v)
}

// DeleteDest removes mac's entry (none is not an error).
func (c *CellTx) DeleteDest(mac [6]byte) error {
	if c.p.objs.CellTxMac == nil {
		return errors.New("cell tx: the port program is closed")
	}
	err := c.p.objs.CellTxMac.Delete(macKey(mac))
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// ClearDests removes every entry.
func (c *CellTx) ClearDests() error {
	m := c.p.objs.CellTxMac
	if m == nil {
		return errors.New("cell tx: the port program is closed")
	}
	var k uint64
	var keys []uint64
	it := m.Iterate()
	var v portCellTxDest
	for it.Next(&k, &v) {
		keys = append(keys, k)
	}
	if err := it.Err(); err != nil {
		return err
	}
	for _, k := range keys {
		if err := m.Delete(k); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// Counters reads the path's counters.
func (c *CellTx) Counters() CellTxCounters {
	s := c.st
	l := atomic.LoadUint64
	return CellTxCounters{Sent: l(&s.Sent), Bytes: l(&s.Bytes), NoDest: l(&s.NoDest), NotOwned: l(&s.NotOwned),
		Unread: l(&s.Unread), NoCredit: l(&s.NoCredit), NoRoute: l(&s.NoRoute), NoRate: l(&s.NoRate),
		Raced: l(&s.Raced), Ineligible: l(&s.Ineligible), StampErr: l(&s.StampErr), Busy: l(&s.Busy),
		Wakeups: l(&s.Wakeups), WakeErr: l(&s.WakeErr)}
}
