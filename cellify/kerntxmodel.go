package cellify

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/link/linkcrc"
)

// CellTxModel is lf_cell_tx (bpf/c/port.c) in Go, step for step, on
// memory of its own: the reference its tests run the kernel program
// against, and an EdgeKernel for the Node's tests. Keep the two identical.
type CellTxModel struct {
	mu    sync.Mutex // dests
	slots []kernelSlot
	dests map[[6]byte]KernelDest
	edge  KernelEdge
	on    atomic.Bool

	// The edge's link state (bpf.CellFwd's on a host port): routes per
	// (loss class, destination), held links, the loss class of each
	// traffic class, the links with a redirect target, those without a
	// token, each link's MAC, the trailer.
	Routes    map[[2]int]uint64
	Held      uint64
	LC        [Classes]uint8
	Targets   uint64
	NoToken   uint64
	LinkMAC   [16][6]byte
	Integrity linkcrc.Integrity

	// FailSet and FailDelete make SetDest and DeleteDest fail (a full
	// map, a failed system call).
	FailSet, FailDelete bool

	// NoHeadroom and NoTailroom say the frame's buffer has not the
	// bytes the cell's headers, or its trailer, need (the kernel tries).
	NoHeadroom, NoTailroom bool

	ToGo, Consumed atomic.Uint64
	Now            int64 // the kernel's clock

	// Race, if set, runs between the loads of a slot's State and Base
	// and the CAS that commits on them (step 5, committed false), and
	// after the commit (committed true): a test's Go side claiming,
	// cutting and handing back there.
	Race func(slot int, committed bool)

	C  KernelCounters
	RR uint64
}

// KernelCounters are lf_cell_tx's counters (cell_tx_shared's).
type KernelCounters struct {
	Sent, Bytes, NoDest, NotOwned, Unread, NoCredit, NoRoute, NoRate, Raced, Ineligible, StampErr, Busy uint64
	Wakeups                                                                                             uint64
}

type kernelSlot struct {
	state, base atomic.Uint64
	low         atomic.Uint32
	key         VOQKey
	declined    uint64
	tat         int64
}

// Kernel verdicts.
const (
	KernelToGo = iota // the frame goes on to AF_XDP
	KernelSent        // redirected as a cell
	KernelDrop        // dropped (stamp_err)
)

// NewCellTxModel returns a model with slots VOQ slots, every one Go's.
func NewCellTxModel(slots int) *CellTxModel {
	return &CellTxModel{slots: make([]kernelSlot, slots), dests: map[[6]byte]KernelDest{}, Routes: map[[2]int]uint64{}}
}

// Slots implements EdgeKernel.
func (m *CellTxModel) Slots() int                 { return len(m.slots) }
func (m *CellTxModel) State(i int) *atomic.Uint64 { return &m.slots[i].state }
func (m *CellTxModel) Base(i int) *atomic.Uint64  { return &m.slots[i].base }
func (m *CellTxModel) SetKey(i int, k VOQKey)     { m.slots[i].key = k }
func (m *CellTxModel) SetLow(i int, low uint32)   { m.slots[i].low.Store(low) }
func (m *CellTxModel) Clock() int64               { return m.Now }
func (m *CellTxModel) Ready() bool                { return m.ToGo.Load() == m.Consumed.Load() }
func (m *CellTxModel) SetEdge(c KernelEdge)       { m.edge = c }
func (m *CellTxModel) SetOn(on bool)              { m.on.Store(on) }

// On says whether the path is on.
func (m *CellTxModel) On() bool { return m.on.Load() }

// Declined is how often slot i was given to Go by the kernel.
func (m *CellTxModel) Declined(i int) uint64 { return m.slots[i].declined }

// SetDest implements EdgeKernel.
func (m *CellTxModel) SetDest(mac [6]byte, d KernelDest) error {
	if m.FailSet {
		return errKernelModel
	}
	m.mu.Lock()
	m.dests[mac] = d
	m.mu.Unlock()
	return nil
}

// DeleteDest implements EdgeKernel.
func (m *CellTxModel) DeleteDest(mac [6]byte) error {
	if m.FailDelete {
		return errKernelModel
	}
	m.mu.Lock()
	delete(m.dests, mac)
	m.mu.Unlock()
	return nil
}

// ClearDests implements EdgeKernel.
func (m *CellTxModel) ClearDests() error {
	m.mu.Lock()
	clear(m.dests)
	m.mu.Unlock()
	return nil
}

// Dest returns mac's entry.
func (m *CellTxModel) Dest(mac [6]byte) (KernelDest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.dests[mac]
	return d, ok
}

var errKernelModel = errors.New("cellify: the kernel model refuses")

// kernelTries is LF_CELL_TX_TRIES.
const kernelTries = 4

// kernelGrow is LF_CELL_TX_GROW: the link and cell headers, the record's
// length and source port.
const kernelGrow = CellPayloadOffset + KernelRecordOverhead

// kernelCRCMax is LF_CRC_MAX.
const kernelCRCMax = 3840

func (m *CellTxModel) decline(s *kernelSlot, old uint64, why *uint64) {
	if s.state.CompareAndSwap(old, old&^KernelOwned) {
		s.declined++
		*why++
	}
}

// Offer runs the kernel's rule on host frame f of RX queue rxq (a frame
// the port program passes to Go counts in ToGo, as lf_port counts it): the
// verdict, and for KernelSent the cell and the link it leaves on.
func (m *CellTxModel) Offer(f []byte, rxq int) (verdict int, cell []byte, link int) {
	verdict, cell, link = m.offer(f, rxq)
	if verdict == KernelToGo && rxq == 0 {
		m.ToGo.Add(1)
	}
	return
}

func (m *CellTxModel) offer(f []byte, rxq int) (int, []byte, int) {
	// 0.
	if !m.on.Load() || rxq != 0 {
		return KernelToGo, nil, 0
	}
	// 1.
	n := len(f)
	rec := uint64(n + KernelRecordOverhead)
	tr := 0
	if m.Integrity != linkcrc.Off {
		tr = linkcrc.TrailerLen
	}
	if n < 15 || kernelGrow+n+linkcrc.TrailerLen > kernelCRCMax || rec > uint64(m.edge.MaxPayload) || f[0]&1 != 0 || f[6]&1 != 0 ||
		m.NoHeadroom || tr > 0 && m.NoTailroom {
		m.C.Ineligible++
		return KernelToGo, nil, 0
	}
	// 2.
	var dmac, smac [6]byte
	copy(dmac[:], f[0:6])
	copy(smac[:], f[6:12])
	dd, dok := m.Dest(dmac)
	sd, sok := m.Dest(smac)
	cls := frameClass(f)
	if !dok || !sok || m.Now >= dd.Until || m.Now >= sd.Until || sd.Edge != m.edge.Self || sd.Port != m.edge.Host ||
		dd.Edge == m.edge.Self || dd.Edge == 0 {
		m.C.NoDest++
		return KernelToGo, nil, 0
	}
	slot := dd.VOQ[cls]
	if slot == 0 || int(slot) > len(m.slots) {
		m.C.NoDest++
		return KernelToGo, nil, 0
	}
	s := &m.slots[slot-1]
	if s.key != (VOQKey{Dst: dd.Edge, Port: dd.Port, Class: cls}) {
		m.C.NoDest++
		return KernelToGo, nil, 0
	}
	lc := int(m.LC[cls])
	var old, seq, base, room uint64
	var vt int64
	l := 0
	i := 0
	for ; i < kernelTries; i++ {
		// 3.
		old = s.state.Load()
		if old&KernelOwned == 0 {
			if i == 0 {
				m.C.NotOwned++
			} else {
				m.C.Raced++
			}
			return KernelToGo, nil, 0
		}
		// 4.
		room = old >> KernelRoomShift & KernelRoomMax
		if m.ToGo.Load() != m.Consumed.Load() {
			m.decline(s, old, &m.C.Unread)
			return KernelToGo, nil, 0
		}
		if room < rec {
			m.decline(s, old, &m.C.NoCredit)
			return KernelToGo, nil, 0
		}
		vt = max(s.tat, m.Now)
		if m.edge.VOQNs > 0 && vt-m.Now > m.edge.VOQTau {
			m.decline(s, old, &m.C.Busy)
			return KernelToGo, nil, 0
		}
		if i == 0 {
			mask := m.Routes[[2]int{lc, int(dd.Edge)}] &^ m.Held & 0xFFFF
			if mask == 0 {
				m.decline(s, old, &m.C.NoRoute)
				return KernelToGo, nil, 0
			}
			k := int(uint32(m.RR) % uint32(bits.OnesCount64(mask)))
			m.RR++
			l = sprayKth(mask, k)
			if m.Targets&(1<<l) == 0 || m.NoToken&(1<<l) != 0 {
				m.decline(s, old, &m.C.NoRate)
				return KernelToGo, nil, 0
			}
		}
		// 5.
		seq = old & KernelSeqMask
		base = s.base.Load()
		if m.Race != nil {
			m.Race(int(slot-1), false)
		}
		nw := KernelOwned | (room-rec)<<KernelRoomShift | (seq+1)&KernelSeqMask
		if s.state.CompareAndSwap(old, nw) {
			break
		}
	}
	if i == kernelTries {
		m.C.Raced++
		return KernelToGo, nil, 0
	}
	// 6. (The low mark is loaded after the commit, as the program does.)
	if m.Race != nil {
		m.Race(int(slot-1), true)
	}
	recNo := uint16(base>>32) + uint16(uint32(seq)-uint32(base))
	if m.edge.VOQNs > 0 {
		s.tat = vt + m.edge.VOQNs
	}
	m.C.Sent++
	m.C.Bytes += rec
	if low := uint64(s.low.Load()); room >= low && room-rec < low {
		m.C.Wakeups++
	}
	out := make([]byte, kernelGrow+n, kernelGrow+n+tr)
	for j := range 6 {
		out[j] = 0xff
	}
	copy(out[6:12], m.LinkMAC[l][:])
	h := CellHeader{Dst: dd.Edge, Src: m.edge.Self, Class: cls, Hops: m.edge.Hops, Port: dd.Port, Seq: uint32(seq),
		Len: uint16(rec), First: 0, RecNo: recNo, Epoch: m.edge.Epoch}
	if PutCellHeader(out, &h) != nil {
		m.C.StampErr++
		return KernelDrop, nil, 0
	}
	binary.BigEndian.PutUint16(out[CellPayloadOffset:], uint16(n+1))
	out[CellPayloadOffset+2] = m.edge.Host
	copy(out[kernelGrow:], f)
	if tr > 0 {
		out = out[:len(out)+tr]
		if _, ok := m.Integrity.Seal(out, len(out)-tr); !ok {
			m.C.StampErr++
			return KernelDrop, nil, 0
		}
	}
	return KernelSent, out, l
}
