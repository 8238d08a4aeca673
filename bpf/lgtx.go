package bpf

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// LinkGuardian's send fast path (lf_lg_tx in c/port.c): on a host port with
// SetLGTx on (and SetFast off), while the kernel owns sending (State's
// LGOwned bit) a host frame of RX queue 0 is numbered, copied into the
// memory-mapped ring, stamped with the link header (and, with SetLGRxCRC,
// the CRC32C trailer) and redirected to the link port (SetForwardPort) in
// the kernel, exactly as linkguardian.FastSend.Offer models it; every other
// frame goes to the AF_XDP socket. The shared words, the counters and the
// ring are mapped by LGTx; WakeFD is readable after the kernel answered
// WantWake. AttachPort writes every page of the ring once through the
// kernel's mapping before it attaches the program (prefaultLGTxRing), so
// that no frame pays for a first write.

// Bits of the words in LGTx (linkguardian.FastLimitValid, FastPaused).
const (
	LGLimitValid = 1 << 63
	LGPaused     = 1 << 62
)

// LGTxSlotSize is the size of a ring slot: a 2-byte little-endian length
// and at most LGTxSlotSize-2 frame bytes (longer host frames go to Go).
const LGTxSlotSize = int(unsafe.Sizeof(portLgTxSlot{}))

// LGTx is a host port's LinkGuardian send fast path state, memory-mapped.
// It stays valid until the PortProgram is closed.
type LGTx struct {
	mem, ring []byte
	cons      []byte // the wake ring buffer's consumer page (read-write)
	prod      []byte // its producer page (read-only)
	v         *portLgTxShared
	slots     int
	wakeFD    int
}

// LGTxCounters are the send fast path's counters.
type LGTxCounters struct {
	Sent, Bytes, Declined, Missed, Wakeups uint64
	StampErr                               uint64 // numbered frames dropped for want of head- or tailroom (must stay 0)
	WakeErr                                uint64 // wakeups the ring buffer refused
	WakeMoves                              uint64 // times a piggybacked ACK moved lg_rx's Wake
	Widened                                uint64 // frames sent at or past Limit, on lg_rx's PeerAck
	DeclinedWindow                         uint64 // of Declined: the frame was outside the window
	DeclinedUnread                         uint64 // of Declined: Go had not taken in every frame passed on
}

// lgTxSpec sizes the copy ring and shares lg_rx as opts ask.
func lgTxSpec(spec *ebpf.CollectionSpec, opts PortOptions) (*ebpf.CollectionOptions, error) {
	if n := opts.LGTxSlots; n != 0 {
		if n < 2 || n > 1<<16 || n&(n-1) != 0 {
			return nil, fmt.Errorf("LGTxSlots %d: want a power of two in [2, 65536]", n)
		}
		spec.Maps["lg_tx_ring"].MaxEntries = uint32(n)
	}
	if opts.ShareLGRx == nil {
		return nil, nil
	}
	if opts.ShareLGRx.objs.LgRx == nil {
		return nil, fmt.Errorf("share lg_rx of %s: its program is closed", opts.ShareLGRx.ifname)
	}
	return &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{"lg_rx": opts.ShareLGRx.objs.LgRx}}, nil
}

// prefaultLGTxRing writes every page of the copy ring once through the
// kernel's own mapping of it (BPF_MAP_UPDATE_ELEM with zero slots, which
// leaves the ring as the load made it), before the program is attached.
//
// The first write of lf_lg_tx's copy (step 3) to a page of the ring is
// otherwise paid by the frame that makes it, in the host's softirq: on the
// 2-core veth pair's VM the copy of a frame into a ring page the kernel had
// not written yet took 7-10 µs (bpf_stats: 8-9 µs per run of the host
// port's program against 0.7-1 µs once every page had been written, perf:
// all of it in the memcpy of bpf_xdp_load_bytes), and every 143 B TCP flow
// numbers ~5 frames each way on fresh slots until the ring's serials wrap
// (4,096 frames): lg's flows were ~2x forward's at p50. A write through the
// user mapping (LGTx.Ring) does not spare the kernel's: the two are
// different virtual mappings of the pages. The cost here is one system call
// per page at attach time (about 2,000 for the default 4,096 slots).
func prefaultLGTxRing(m *ebpf.Map) error {
	slots, size := int(m.MaxEntries()), int(m.ValueSize())
	zero := make([]byte, size)
	stride := (size + 7) &^ 7 // an array map's element stride
	for _, i := range pageFirstSlots(slots, stride, os.Getpagesize()) {
		if err := m.Update(uint32(i), zero, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("write slot %d of lg_tx_ring: %w", i, err)
		}
	}
	return nil
}

// pageFirstSlots returns the slots of a ring of slots values, size bytes
// apart from a page boundary on, whose writes together touch
// every page of the ring once: each slot that reaches a page no earlier
// slot in the list reached.
func pageFirstSlots(slots, size, page int) []int {
	var out []int
	last := -1 // the last page reached so far
	for i := 0; i < slots; i++ {
		if end := ((i+1)*size - 1) / page; end > last {
			out = append(out, i)
			last = end
		}
	}
	return out
}

func mmapMap(m *ebpf.Map, off int64, size int, prot int) ([]byte, error) {
	pg := os.Getpagesize()
	n := (size + pg - 1) &^ (pg - 1)
	return unix.Mmap(m.FD(), off, n, prot, unix.MAP_SHARED)
}

// mapOnce returns *v, opening it first (under lgMu) if it is nil.
func mapOnce[T any](p *PortProgram, v **T, open func() (*T, error)) (*T, error) {
	p.lgMu.Lock()
	defer p.lgMu.Unlock()
	if *v == nil {
		t, err := open()
		if err != nil {
			return nil, err
		}
		*v = t
	}
	return *v, nil
}

// mapShared maps m, named name, whose one value of size bytes the program
// shares with Go (read-write), after checking that the program is open and
// the value is as large as Go's view of it.
func (p *PortProgram) mapShared(m *ebpf.Map, name string, size int) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("map %s of %s: the port program is closed", name, p.ifname)
	}
	if vs := int(m.ValueSize()); vs != size {
		return nil, fmt.Errorf("map %s of %s: value size %d, want %d", name, p.ifname, vs, size)
	}
	mem, err := mmapMap(m, 0, size, unix.PROT_READ|unix.PROT_WRITE)
	if err != nil {
		return nil, fmt.Errorf("mmap %s of %s: %w", name, p.ifname, err)
	}
	return mem, nil
}

// LGTx maps the port's send fast path state, its copy ring and its wake
// ring buffer; repeated calls return the same value.
func (p *PortProgram) LGTx() (*LGTx, error) { return mapOnce(p, &p.lgtx, p.openLGTx) }

func (p *PortProgram) openLGTx() (*LGTx, error) {
	mem, err := p.mapShared(p.objs.LgTx, "lg_tx", int(unsafe.Sizeof(portLgTxShared{})))
	if err != nil {
		return nil, err
	}
	t := &LGTx{mem: mem, slots: int(p.objs.LgTxRing.MaxEntries()), wakeFD: p.objs.LgTxWake.FD()}
	rw := unix.PROT_READ | unix.PROT_WRITE
	if t.ring, err = mmapMap(p.objs.LgTxRing, 0, t.slots*LGTxSlotSize, rw); err != nil {
		t.unmap()
		return nil, fmt.Errorf("mmap lg_tx_ring of %s: %w", p.ifname, err)
	}
	t.ring = t.ring[:t.slots*LGTxSlotSize]
	pg := os.Getpagesize()
	if t.cons, err = mmapMap(p.objs.LgTxWake, 0, pg, rw); err != nil {
		t.unmap()
		return nil, fmt.Errorf("mmap lg_tx_wake of %s: %w", p.ifname, err)
	}
	if t.prod, err = mmapMap(p.objs.LgTxWake, int64(pg), pg, unix.PROT_READ); err != nil {
		t.unmap()
		return nil, fmt.Errorf("mmap lg_tx_wake of %s: %w", p.ifname, err)
	}
	t.v = (*portLgTxShared)(unsafe.Pointer(&t.mem[0]))
	atomic.StoreUint64(&t.v.Mask, uint64(t.slots-1))
	return t, nil
}

func (t *LGTx) unmap() error {
	var err error
	for _, m := range [][]byte{t.mem, t.ring, t.cons, t.prod} {
		if m != nil {
			if e := unix.Munmap(m[:cap(m)]); e != nil && err == nil {
				err = e
			}
		}
	}
	t.mem, t.ring, t.cons, t.prod, t.v = nil, nil, nil, nil, nil
	return err
}

func (t *LGTx) word(p *uint64) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(p)) }

// State is linkguardian.FastSend.State: LGOwned | the next serial.
func (t *LGTx) State() *atomic.Uint64 { return t.word(&t.v.State) }

// Limit is FastSend.Limit: LGLimitValid | LGPaused | the first serial the kernel may not assign.
func (t *LGTx) Limit() *atomic.Uint64 { return t.word(&t.v.Limit) }

// LastNs is FastSend.LastNs (CLOCK_MONOTONIC ns of the kernel's last send).
func (t *LGTx) LastNs() *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&t.v.LastNs)) }

// PiggyAck is FastSend.PiggyAck.
func (t *LGTx) PiggyAck() *atomic.Uint64 { return t.word(&t.v.PiggyAck) }

// Credit is FastSend.Credit: the credit window, with which the kernel
// widens Limit by an ACK the link port read (lg_rx's PeerAck) before Go
// applied it.
func (t *LGTx) Credit() *atomic.Uint64 { return t.word(&t.v.Credit) }

// WakeMoves and Widened are FastSend's counters of the same names.
func (t *LGTx) WakeMoves() *atomic.Uint64 { return t.word(&t.v.WakeMoves) }
func (t *LGTx) Widened() *atomic.Uint64   { return t.word(&t.v.Widened) }

// DeclinedWindow and DeclinedUnread are FastSend's counters of the same
// names (of Declined, why).
func (t *LGTx) DeclinedWindow() *atomic.Uint64 { return t.word(&t.v.DeclinedWindow) }
func (t *LGTx) DeclinedUnread() *atomic.Uint64 { return t.word(&t.v.DeclinedUnread) }

// WantWake is FastSend.WantWake.
func (t *LGTx) WantWake() *atomic.Uint64 { return t.word(&t.v.WantWake) }

// Sent, Declined, Missed and Wakeups are the kernel's counters (FastSend's).
func (t *LGTx) Sent() *atomic.Uint64     { return t.word(&t.v.Sent) }
func (t *LGTx) Declined() *atomic.Uint64 { return t.word(&t.v.Declined) }
func (t *LGTx) Missed() *atomic.Uint64   { return t.word(&t.v.Missed) }
func (t *LGTx) Wakeups() *atomic.Uint64  { return t.word(&t.v.Wakeups) }

// ToGo counts the frames of RX queue 0 the program handed to the AF_XDP
// socket (FastSend.ToGo); Consumed is what Go says it took in of them
// (FastSend.Consumed): the kernel numbers a frame only while they are equal.
func (t *LGTx) ToGo() *atomic.Uint64     { return t.word(&t.v.ToGo) }
func (t *LGTx) Consumed() *atomic.Uint64 { return t.word(&t.v.Consumed) }

// Ring is the copy ring: Slots() slots of LGTxSlotSize bytes.
func (t *LGTx) Ring() []byte { return t.ring }

// Slots is the number of ring slots.
func (t *LGTx) Slots() int { return t.slots }

// WakeFD is a file descriptor that polls readable (POLLIN) once the
// kernel answered WantWake; DrainWake makes it quiet again.
func (t *LGTx) WakeFD() int { return t.wakeFD }

// DrainWake consumes every wake record (it only moves the consumer
// position: the records carry nothing Go needs). It reports whether there
// was any.
func (t *LGTx) DrainWake() bool {
	prod := (*atomic.Uint64)(unsafe.Pointer(&t.prod[0])).Load()
	cons := (*atomic.Uint64)(unsafe.Pointer(&t.cons[0]))
	if cons.Load() == prod {
		return false
	}
	cons.Store(prod)
	return true
}

// Counters reads the counters (each an atomic load; together not a snapshot).
func (t *LGTx) Counters() LGTxCounters {
	return LGTxCounters{
		Sent:      atomic.LoadUint64(&t.v.Sent),
		Bytes:     atomic.LoadUint64(&t.v.Bytes),
		Declined:  atomic.LoadUint64(&t.v.Declined),
		Missed:    atomic.LoadUint64(&t.v.Missed),
		Wakeups:   atomic.LoadUint64(&t.v.Wakeups),
		StampErr:  atomic.LoadUint64(&t.v.StampErr),
		WakeErr:   atomic.LoadUint64(&t.v.WakeErr),
		WakeMoves: atomic.LoadUint64(&t.v.WakeMoves),
		Widened:   atomic.LoadUint64(&t.v.Widened),

		DeclinedWindow: atomic.LoadUint64(&t.v.DeclinedWindow),
		DeclinedUnread: atomic.LoadUint64(&t.v.DeclinedUnread),
	}
}

// SetLGTx turns LinkGuardian's send fast path on or off (port_conf.lg_tx).
// It acts only on a host port with SetFast off, and only while State is
// owned (LGOwned). Link frames get the CRC32C trailer with SetLGRxCRC on.
func (p *PortProgram) SetLGTx(on bool) error {
	return p.changeConf("switch LinkGuardian's send fast path", func(c *portPortConf) { c.LgTx = b32(on) })
}

// SetLGTxAck says whether the send fast path piggybacks an ACK: lg_rx's
// point − 1 (shared with the link port by PortOptions.ShareLGRx), which the
// receiver keeps current (linkguardian: the receive point).
func (p *PortProgram) SetLGTxAck(on bool) error {
	return p.changeConf("switch the send fast path's ACK", func(c *portPortConf) { c.LgAck = b32(on) })
}

func b32(on bool) uint32 {
	if on {
		return 1
	}
	return 0
}
