package bpf

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"golang.org/x/sys/unix"
)

// DefaultQueues is the default size of a port's XSKMAP (RX queues 0..63).
const DefaultQueues = 64

// PortOptions configure AttachPort.
type PortOptions struct {
	// Mode is the XDP attach mode; XDPAuto (the zero value) tries native
	// and falls back to generic when the driver has no native XDP. An MTU
	// the driver's native XDP refuses (one without multi-buffer XDP, above
	// a page; veth takes any, the program having frags) is an error
	// (*MTUError) in XDPAuto as well: lower the MTU or ask for XDPGeneric.
	Mode AttachMode
	// Queues is the number of RX queues that can get an AF_XDP socket
	// (XSKMAP size); 0 means DefaultQueues.
	Queues int
	// Impair, when set, is the impairment applied from the first frame.
	Impair *ImpairConfig
	// Host marks a port facing a host: the program drops (and counts)
	// frames a host may not put on a link: the link ethertype 0x88B5 (also
	// behind one VLAN tag), MAC control 0x8808, and frames to the IEEE
	// reserved group 01:80:C2:00:00:0X. A link port (the default) instead
	// accepts link control only from its peer once SetPeerMAC names it.
	Host bool
	// LGTxSlots is the number of slots of a host port's copy ring for
	// LinkGuardian's send fast path (LGTx): a power of two, at least the
	// sender's TxBuffer; 0 makes a one-slot ring (the send path unused).
	LGTxSlots int
	// ShareLGRx, for a host port, is the link port whose lg_rx (the
	// receive fast path's in-order point) this program's send fast path
	// reads the ACK it piggybacks from (SetLGTxAck): the map is shared, not
	// copied. Attach the link port first.
	ShareLGRx *PortProgram
	// ShareCells, for a link port, is the port whose cell maps (mode
	// cells' kernel path on a fabric node, CellFwd) this program uses: one
	// set per node.
	ShareCells *PortProgram
	// ShareCellRx, for a link port of an edge, is the port whose edge
	// cell maps (mode cells' kernel path at an egress edge, CellRx) this
	// program uses: one set per edge.
	ShareCellRx *PortProgram
}

// ProgCounters are a port program's counters, summed over CPUs: what the XDP
// program saw and its verdicts (redirect, pass, drop, forward).
type ProgCounters struct {
	RxFrames      uint64 // frames the program saw
	RxBytes       uint64 // their bytes (linear part)
	Redirected    uint64 // handed to the AF_XDP socket of their RX queue
	Passed        uint64 // no socket on their RX queue: passed to the kernel stack
	ImpairDropped uint64 // dropped by the impairment stage
	ImpairFlipped uint64 // had one bit flipped by the impairment stage
	// Host ports: frames dropped because a host may not send them onto a
	// link: the link ethertype, MAC control, the IEEE reserved group.
	HostLinkType, HostMACControl, HostReserved uint64
	// Link ports: link-header or MAC-control frames dropped because they
	// did not come from the peer (SetPeerMAC).
	ForeignControl uint64
	// The fast path (SetFast): frames and bytes redirected to the forward
	// port in the kernel, and frames that found no forward port there
	// (handed to the AF_XDP socket instead).
	Forwarded, ForwardedBytes, ForwardMissed uint64
}

// HostControlDropped is every frame a host port dropped as link control.
func (c ProgCounters) HostControlDropped() uint64 {
	return c.HostLinkType + c.HostMACControl + c.HostReserved
}

// PortProgram is the dataplane XDP program attached to one interface, with its own
// copy of the maps. It counts every frame, drops link control a host may not
// send (host ports), applies the impairment stage when enabled, and
// redirects the frame to the forward port in the kernel (SetFast) or to the
// AF_XDP socket registered for its RX queue (XDP_PASS when there is none).
//
// The program is attached through a bpf_link: Close detaches it, and so does
// the kernel when the process exits.
//
// PortProgram has the impairment methods SetImpair, ClearImpair, ImpairConfig,
// ImpairStats and ResetImpairStats.
type PortProgram struct {
	impairControl
	confMu   sync.Mutex // port_cfg is read, changed and written back
	ifname   string
	ifindex  int
	queues   int
	objs     portObjects
	lnk      link.Link
	mode     AttachMode
	fallback error
	lgMu     sync.Mutex // guards lgrx
	lgrx     *LGRx      // lg_rx mapped, once asked for (LGRx)
	lgtx     *LGTx      // lg_tx, lg_tx_ring and lg_tx_wake mapped, once asked for (LGTx)
	cells    *CellFwd   // cell_state and cell_route mapped, once asked for (CellFwd)
	celltx   *CellTx    // cell_tx_state and cell_tx_voqs mapped, once asked for (CellTx)
	cellrx   *CellRx    // cell_rx mapped, once asked for (CellRx)
	tcx      link.Link  // lf_cell_rx_tc on the TCX ingress (AttachCellRxTC)
}

// AttachPort loads a fresh copy of the dataplane program and attaches it to
// the interface named ifname in the network namespace of the calling OS
// thread (callers that switch namespaces must runtime.LockOSThread first).
// It refuses (*BusyError) if the interface already carries an XDP program.
func AttachPort(ifname string, opts PortOptions) (*PortProgram, error) {
	prepare()
	if opts.Impair != nil {
		if err := opts.Impair.Validate(); err != nil {
			return nil, err
		}
	}
	queues := opts.Queues
	if queues <= 0 {
		queues = DefaultQueues
	}
	l, err := checkFree(ifname)
	if err != nil {
		return nil, err
	}

	spec, err := loadPort()
	if err != nil {
		return nil, fmt.Errorf("parse embedded port object: %w", err)
	}
	spec.Maps["xsks_map"].MaxEntries = uint32(queues)
	copts, err := lgTxSpec(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("port program for %s: %w", ifname, err)
	}
	if opts.ShareCells != nil {
		if copts, err = opts.ShareCells.shareCellMaps(copts); err != nil {
			return nil, fmt.Errorf("port program for %s: %w", ifname, err)
		}
	}
	if opts.ShareCellRx != nil {
		if copts, err = opts.ShareCellRx.shareCellRxMaps(copts); err != nil {
			return nil, fmt.Errorf("port program for %s: %w", ifname, err)
		}
	}
	p := &PortProgram{ifname: ifname, ifindex: l.Attrs().Index, queues: queues}
	if err := spec.LoadAndAssign(&p.objs, copts); err != nil {
		return nil, loadErr("dataplane port program for "+ifname, err)
	}
	p.impairControl = impairControl{cfg: p.objs.ImpairCfg, rng: p.objs.ImpairRng, count: p.objs.ImpairCount}
	if opts.LGTxSlots != 0 {
		if err := prefaultLGTxRing(p.objs.LgTxRing); err != nil {
			p.objs.Close()
			return nil, fmt.Errorf("port program for %s: %w", ifname, err)
		}
	}
	if opts.Host {
		if err := p.objs.PortCfg.Put(uint32(0), portPortConf{Role: roleHost}); err != nil {
			p.objs.Close()
			return nil, fmt.Errorf("configure the port program of %s as a host port: %w", ifname, err)
		}
	}
	if opts.Impair != nil {
		if err := p.SetImpair(*opts.Impair); err != nil {
			p.objs.Close()
			return nil, err
		}
	}

	p.mode, p.fallback, err = attachMode(ifname, l, opts.Mode, func(generic bool) error {
		flags := link.XDPDriverMode
		if generic {
			flags = link.XDPGenericMode
		}
		var err error
		p.lnk, err = link.AttachXDP(link.XDPOptions{Program: p.objs.LfPort, Interface: p.ifindex, Flags: flags})
		return err
	}, func(_ error, isMTU bool) bool { return !isMTU })
	if err != nil {
		p.objs.Close()
		return nil, busyOr(ifname, err)
	}
	return p, nil
}

// Ifname is the interface's name.
func (p *PortProgram) Ifname() string { return p.ifname }

// Ifindex is the interface's index in its namespace.
func (p *PortProgram) Ifindex() int { return p.ifindex }

// Mode is the mode the program is attached in: XDPNative or XDPGeneric.
func (p *PortProgram) Mode() AttachMode { return p.mode }

// FallbackReason is why native mode was not used when XDPAuto fell back to
// generic mode; nil otherwise.
func (p *PortProgram) FallbackReason() error { return p.fallback }

// ProgramID is the kernel's ID of this port's program.
func (p *PortProgram) ProgramID() (ebpf.ProgramID, error) {
	info, err := p.objs.LfPort.Info()
	if err != nil {
		return 0, err
	}
	id, _ := info.ID()
	return id, nil
}

// Program is the loaded port program (for BPF_PROG_TEST_RUN or inspection);
// it stays owned by the Port.
func (p *PortProgram) Program() *ebpf.Program { return p.objs.LfPort }

// RegisterXSK makes frames received on RX queue queue go to the AF_XDP socket
// fd (bound to this interface and queue).
func (p *PortProgram) RegisterXSK(queue int, fd int) error {
	if queue < 0 || queue >= p.queues {
		return fmt.Errorf("register AF_XDP socket on %s: queue %d out of range [0, %d) (raise PortOptions.Queues)", p.ifname, queue, p.queues)
	}
	if err := p.objs.XsksMap.Put(uint32(queue), uint32(fd)); err != nil {
		return fmt.Errorf("register AF_XDP socket fd %d for %s queue %d (is it bound to this interface and queue?): %w", fd, p.ifname, queue, err)
	}
	return nil
}

// UnregisterXSK removes the socket of RX queue queue; its frames go to the
// kernel stack again.
func (p *PortProgram) UnregisterXSK(queue int) error {
	if queue < 0 || queue >= p.queues {
		return fmt.Errorf("unregister AF_XDP socket on %s: queue %d out of range [0, %d)", p.ifname, queue, p.queues)
	}
	if err := p.objs.XsksMap.Delete(uint32(queue)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("unregister AF_XDP socket for %s queue %d: %w", p.ifname, queue, err)
	}
	return nil
}

// Roles of the port program (port_conf.role in port.c).
const (
	roleLink = 0
	roleHost = 1
)

// SetPeerMAC makes a link port accept link control (link-header frames other
// than data, whose source is a host, and link session offers) and MAC
// control frames only from peer, the other end of
// its link as the link session learnt it; frames from any other source are
// dropped and counted (ForeignControl). The zero MAC accepts any source
// again. It has no effect on a host port.
func (p *PortProgram) SetPeerMAC(peer [6]byte) error {
	return p.changeConf("set the peer MAC", func(c *portPortConf) { c.Peer = peer })
}

// SetForwardPort makes ifindex, an interface in the calling thread's network
// namespace that can take redirected frames (XDPFeatures.AcceptsRedirect),
// the port SetFast sends frames to. The kernel forgets it when that
// interface goes away.
func (p *PortProgram) SetForwardPort(ifindex int) error {
	if err := p.objs.FwdPort.Put(uint32(0), uint32(ifindex)); err != nil {
		return fmt.Errorf("make ifindex %d (%s) the forward port of %s: %w", ifindex, netnsDesc(), p.ifname, err)
	}
	return nil
}

// SetFast turns the fast path on or off: on, every frame that passes the
// control check and the impairment stage is redirected in the kernel to the
// forward port (SetForwardPort), or to the AF_XDP socket when there is
// none; off, every such frame goes to the AF_XDP socket. Frames already in
// a socket's ring stay there: across a change, frames of the two paths may
// overtake each other.
func (p *PortProgram) SetFast(on bool) error {
	var v uint32
	if on {
		v = 1
	}
	return p.changeConf("switch the fast path", func(c *portPortConf) { c.Fast = v })
}

// changeConf reads the port's configuration, changes it and writes it back.
func (p *PortProgram) changeConf(what string, change func(*portPortConf)) error {
	p.confMu.Lock()
	defer p.confMu.Unlock()
	var conf portPortConf
	if err := p.objs.PortCfg.Lookup(uint32(0), &conf); err != nil {
		return fmt.Errorf("read the port program's configuration of %s: %w", p.ifname, err)
	}
	change(&conf)
	if err := p.objs.PortCfg.Put(uint32(0), conf); err != nil {
		return fmt.Errorf("%s of %s: %w", what, p.ifname, err)
	}
	return nil
}

// Counters sums the port counters over all CPUs.
func (p *PortProgram) Counters() (ProgCounters, error) {
	return readProgCounters(p.objs.PortCount)
}

func readProgCounters(m *ebpf.Map) (ProgCounters, error) {
	c, err := sumPerCPU[ProgCounters, portPortCounters](m)
	if err != nil {
		return ProgCounters{}, fmt.Errorf("read port counters: %w", err)
	}
	return c, nil
}

// Close detaches the program and releases the maps (lg_rx is unmapped
// first: pointers from LGRx are invalid afterwards). Closing twice is harmless.
func (p *PortProgram) Close() error {
	var err error
	if p.lnk != nil {
		if e := p.lnk.Close(); e != nil {
			err = fmt.Errorf("detach XDP from %s: %w", p.ifname, e)
		}
		p.lnk = nil
	}
	p.lgMu.Lock()
	if p.tcx != nil {
		if e := p.tcx.Close(); e != nil && err == nil {
			err = fmt.Errorf("detach lf_cell_rx_tc from %s: %w", p.ifname, e)
		}
		p.tcx = nil
	}
	if p.lgrx != nil {
		if e := p.lgrx.unmap(); e != nil && err == nil {
			err = fmt.Errorf("unmap lg_rx of %s: %w", p.ifname, e)
		}
		p.lgrx = nil
	}
	if p.lgtx != nil {
		if e := p.lgtx.unmap(); e != nil && err == nil {
			err = fmt.Errorf("unmap lg_tx of %s: %w", p.ifname, e)
		}
		p.lgtx = nil
	}
	if p.cells != nil {
		if e := p.cells.unmap(); e != nil && err == nil {
			err = fmt.Errorf("unmap the cell maps of %s: %w", p.ifname, e)
		}
		p.cells = nil
	}
	if p.celltx != nil {
		if e := p.celltx.unmap(); e != nil && err == nil {
			err = fmt.Errorf("unmap the cell tx maps of %s: %w", p.ifname, e)
		}
		p.celltx = nil
	}
	if p.cellrx != nil {
		if e := p.cellrx.unmap(); e != nil && err == nil {
			err = fmt.Errorf("unmap the edge cell maps of %s: %w", p.ifname, e)
		}
		p.cellrx = nil
	}
	p.lgMu.Unlock()
	if e := p.objs.Close(); e != nil && err == nil {
		err = e
	}
	p.objs = portObjects{}
	return err
}

// LinkGuardian's receive fast path (lf_lg_rx in c/port.c): on a link port
// with SetLGRx on (and SetFast off), an in-order data frame at the in-order
// point the fast path owns is stripped of its link header and redirected
// to the forward port (SetForwardPort) in the kernel; every other frame
// goes to the AF_XDP socket as before. The point and the counters live in
// the memory-mapped map lg_rx (LGRx). With SetLGRxCRC on, the frame must
// also carry a valid CRC32C trailer, which is removed on delivery.

// Bits of the words in LGRx.
const (
	// LGOwned (in Point) says the fast path owns the in-order point.
	LGOwned = 1 << 63
	// LGAckValid (in PeerAck) says PeerAck holds an ACK.
	LGAckValid = 1 << 63
	// LGSeqMask selects the serial (era<<16 | 16-bit number, seqhdr.Seq)
	// in Point (the next expected) and PeerAck (the latest piggybacked ACK).
	LGSeqMask = 0x1FFFF
)

// LGRx is the link port's LinkGuardian receive fast path state, memory-mapped
// (no syscall to read or update it). It stays valid until the PortProgram
// is closed, which unmaps it: no pointer from it may be used after Close.
type LGRx struct {
	mem []byte
	v   *portLgRxShared // in mem
}

// LGRxCounters are the fast path's counters.
type LGRxCounters struct {
	Frames    uint64 // data frames delivered by the fast path
	Bytes     uint64 // their bytes as delivered (link header stripped)
	LastNs    uint64 // CLOCK_MONOTONIC (bpf_ktime_get_ns) of the last delivery, 0 before the first
	Handovers uint64 // times the fast path gave the point to Go (out-of-order data, Wake, the lead bound)
	Lead      uint64 // of Handovers: the lead bound (Go had not adopted for linkguardian.FastLead frames)
	Missed    uint64 // in-order frames passed to Go because the redirect to the forward port was refused
	StripErr  uint64 // frames lost because the header strip or the trailer removal failed after the point moved (must stay 0)
}

// LGRx maps the port's lg_rx map (read-write, shared with the program) and
// returns it; repeated calls return the same value.
func (p *PortProgram) LGRx() (*LGRx, error) {
	return mapOnce(p, &p.lgrx, func() (*LGRx, error) {
		mem, err := p.mapShared(p.objs.LgRx, "lg_rx", int(unsafe.Sizeof(portLgRxShared{})))
		if err != nil {
			return nil, err
		}
		return &LGRx{mem: mem, v: (*portLgRxShared)(unsafe.Pointer(&mem[0]))}, nil
	})
}

func (s *LGRx) unmap() error {
	mem := s.mem
	s.mem, s.v = nil, nil
	return unix.Munmap(mem)
}

// Point is the in-order point: LGOwned | the next expected serial while the
// fast path owns it; the serial Go last left there otherwise. Change it only
// by compare-and-swap: the program does.
func (s *LGRx) Point() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.v.Point)) }

// PeerAck is LGAckValid | the latest piggybacked ACK carried by a frame the
// fast path delivered (0 before the first).
func (s *LGRx) PeerAck() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.v.PeerAck)) }

// AckEvery is the receiver's AckEvery, which Go writes (FastPoint.AckEvery):
// the send fast path (lf_lg_tx, sharing this lg_rx) moves Wake to its
// piggybacked ACK + AckEvery; 0 leaves Wake to Go.
func (s *LGRx) AckEvery() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.v.AckEvery)) }

// Adopted is the serial Go last took as its ackNo, which Go writes
// (FastPoint.Adopted): the program delivers serial q only while q − Adopted
// is less than linkguardian.FastLead.
func (s *LGRx) Adopted() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.v.Adopted)) }

// LastNs is the time of the fast path's last delivery (CLOCK_MONOTONIC,
// bpf_ktime_get_ns), 0 before the first.
func (s *LGRx) LastNs() uint64 { return atomic.LoadUint64(&s.v.LastNs) }

// Counters reads the counters (each an atomic load; together not a snapshot).
func (s *LGRx) Counters() LGRxCounters {
	return LGRxCounters{
		Frames:    atomic.LoadUint64(&s.v.Frames),
		Bytes:     atomic.LoadUint64(&s.v.Bytes),
		LastNs:    s.LastNs(),
		Handovers: atomic.LoadUint64(&s.v.Handovers),
		Lead:      atomic.LoadUint64(&s.v.Lead),
		Missed:    atomic.LoadUint64(&s.v.Missed),
		StripErr:  atomic.LoadUint64(&s.v.StripErr),
	}
}

// SetLGRx turns LinkGuardian's receive fast path on or off (port_conf.lg_rx).
// It acts only on a link port with SetFast off, and only while Point is
// owned (LGOwned).
func (p *PortProgram) SetLGRx(on bool) error {
	var v uint32
	if on {
		v = 1
	}
	return p.changeConf("switch LinkGuardian's receive fast path", func(c *portPortConf) { c.LgRx = v })
}

// SetLGRxIntegrity says which integrity trailer the link port's frames
// carry (package linkcrc; port_conf.crc), as run --integrity makes them:
// linkcrc.CRC32C (lf_crc32c), linkcrc.Csum (lf_csum) or linkcrc.Off. With
// a trailer, LinkGuardian's receive fast path (SetLGRx) delivers a data
// frame only if its trailer is valid, and removes the trailer with the link
// header, so the host gets what seqhdr.Strip makes of the mode's Check;
// a frame whose trailer fails, one shorter than a data header plus the
// trailer, one with fragments (a frame longer than the linear part of its
// buffer: jumbo frames) and one longer than 3840 bytes go to the AF_XDP
// socket untouched, for the Go path's check (which counts and drops a
// corrupt one). The send fast path (SetLGTx) appends the trailer. Off,
// frames are taken as they are: a link whose ends check no trailer.
func (p *PortProgram) SetLGRxIntegrity(m linkcrc.Integrity) error {
	v, err := integrityConf(m)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ifname, err)
	}
	return p.changeConf("switch the integrity check of LinkGuardian's fast path", func(c *portPortConf) { c.Crc = v })
}

// integrityConf is port_conf.crc's (and cell_state.crc's) value for m.
func integrityConf(m linkcrc.Integrity) (uint32, error) {
	switch m {
	case linkcrc.Off:
		return integrityOff, nil
	case linkcrc.CRC32C:
		return integrityCRC32C, nil
	case linkcrc.Csum:
		return integrityCsum, nil
	}
	return 0, fmt.Errorf("integrity mode %v: the XDP program knows crc32c, csum and off", m)
}

// The values of port_conf.crc (port.c, LF_INTEGRITY_*).
const (
	integrityOff    = 0
	integrityCRC32C = 1
	integrityCsum   = 2
)
