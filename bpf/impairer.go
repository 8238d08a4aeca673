package bpf

import (
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/internal/enum"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ProgramKind tells which of linkfabric's XDP programs an Impairer controls.
type ProgramKind int

const (
	// KindStandalone is the standalone impairer (impairment, then XDP_PASS),
	// attached through netlink so that it outlives the process.
	KindStandalone ProgramKind = iota + 1
	// KindPort is a dataplane port program (see AttachPort), owned by the
	// running dataplane process.
	KindPort
)

var programKindNames = [...]string{KindStandalone: "standalone impairer", KindPort: "dataplane port"}

func (k ProgramKind) String() string { return enum.Name(k, "ProgramKind", programKindNames[:]) }

// Impairer is a handle on the impairment stage of one of linkfabric's XDP
// programs attached to an interface: the standalone impairer or a dataplane
// port's program (possibly in another process). It sets and clears the
// configuration and reads the counters while traffic flows.
//
// Closing an Impairer releases the handle only: the program stays attached.
//
// Impairer has the methods SetImpair, ClearImpair, ImpairConfig,
// ImpairStats and ResetImpairStats.
type Impairer struct {
	impairControl
	ifname   string
	prog     *ebpf.Program
	progID   ebpf.ProgramID
	kind     ProgramKind
	mode     AttachMode
	fallback error
	ports    *ebpf.Map // port_count, for KindPort
}

// Ifname is the interface's name.
func (im *Impairer) Ifname() string { return im.ifname }

// Kind is which program the handle controls.
func (im *Impairer) Kind() ProgramKind { return im.kind }

// ProgramID is the kernel's ID of the program.
func (im *Impairer) ProgramID() ebpf.ProgramID { return im.progID }

// Mode is the mode the program is attached in: XDPNative or XDPGeneric.
func (im *Impairer) Mode() AttachMode { return im.mode }

// FallbackReason is, for an Impairer returned by AttachImpairer in XDPAuto
// mode that fell back to generic mode, why native mode failed; nil otherwise.
func (im *Impairer) FallbackReason() error { return im.fallback }

// ProgCounters reads the program's counters when the handle controls a
// dataplane port program (KindPort).
func (im *Impairer) ProgCounters() (ProgCounters, error) {
	if im.ports == nil {
		return ProgCounters{}, fmt.Errorf("%s carries the %v, which has no port counters", im.ifname, im.kind)
	}
	return readProgCounters(im.ports)
}

// Close releases the handle; the program stays attached.
func (im *Impairer) Close() error {
	for _, c := range []interface{ Close() error }{im.prog, im.cfg, im.rng, im.count, im.ports} {
		if c != nil {
			c.Close()
		}
	}
	*im = Impairer{ifname: im.ifname, kind: im.kind, progID: im.progID, mode: im.mode}
	return nil
}

// AttachImpairer loads the standalone impairer with cfg and attaches it to
// the interface named ifname (in the network namespace of the calling OS
// thread) through netlink, so that it stays attached after the process
// exits, until DetachImpairer or `ip link set dev IF xdp off`. It tries
// native mode and falls back to generic mode (any native failure, including
// a driver's MTU limit: a kernel-forwarded path has no frame-size limit of
// its own); see Impairer.Mode. The program has frags (multi-buffer XDP), so
// a veth takes it natively at any MTU. It refuses (*BusyError) when the interface already
// carries an XDP program. The returned handle can be closed at once.
func AttachImpairer(ifname string, cfg ImpairConfig) (*Impairer, error) {
	return AttachImpairerMode(ifname, cfg, XDPAuto)
}

// AttachImpairerMode is AttachImpairer with an explicit attach mode.
func AttachImpairerMode(ifname string, cfg ImpairConfig, mode AttachMode) (*Impairer, error) {
	prepare()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l, err := checkFree(ifname)
	if err != nil {
		return nil, err
	}
	var objs impairerObjects
	if err := loadImpairerObjects(&objs, nil); err != nil {
		return nil, loadErr("standalone impairer program for "+ifname, err)
	}
	im := &Impairer{
		impairControl: impairControl{cfg: objs.ImpairCfg, rng: objs.ImpairRng, count: objs.ImpairCount},
		ifname:        ifname,
		prog:          objs.LfImpair,
		kind:          KindStandalone,
	}
	if info, err := objs.LfImpair.Info(); err == nil {
		im.progID, _ = info.ID()
	}
	if err := im.SetImpair(cfg); err != nil {
		objs.Close()
		return nil, err
	}

	fd := objs.LfImpair.FD()
	im.mode, im.fallback, err = attachMode(ifname, l, mode, func(generic bool) error {
		flags := unix.XDP_FLAGS_DRV_MODE
		if generic {
			flags = unix.XDP_FLAGS_SKB_MODE
		}
		return netlink.LinkSetXdpFdWithFlags(l, fd, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|flags)
	}, func(nerr error, _ bool) bool { return !isBusy(nerr) })
	if err != nil {
		im.Close()
		return nil, busyOr(ifname, err)
	}
	return im, nil
}

// DetachImpairer removes the standalone impairer from the interface named
// ifname (calling thread's namespace). It refuses to touch anything else: an
// error wrapping ErrNoProgram if nothing is attached, ErrForeignProgram if the
// program is not the standalone impairer (a dataplane port's program goes away
// with its process).
func DetachImpairer(ifname string) error {
	l, err := lookupLink(ifname)
	if err != nil {
		return err
	}
	id, mode := attachedProg(l)
	if id == 0 {
		return fmt.Errorf("detach impairer from %s (%s): %w", ifname, netnsDesc(), ErrNoProgram)
	}
	name, err := progName(id)
	if err != nil {
		return fmt.Errorf("detach impairer from %s: inspect XDP program id %d: %w", ifname, id, permErr(err))
	}
	switch name {
	case impairerProgName:
	case portProgName:
		return fmt.Errorf("detach impairer from %s: %w: it carries a linkfabric dataplane port (program id %d), not a standalone impairer; it is detached when its dataplane process exits", ifname, ErrForeignProgram, id)
	default:
		return fmt.Errorf("detach impairer from %s: %w: it carries XDP program id %d (name %s); detach it yourself with `ip link set dev %s xdp off` if you mean to", ifname, ErrForeignProgram, id, name, ifname)
	}
	flags := unix.XDP_FLAGS_DRV_MODE
	if mode == XDPGeneric {
		flags = unix.XDP_FLAGS_SKB_MODE
	}
	if err := netlink.LinkSetXdpFdWithFlags(l, -1, flags); err != nil {
		return fmt.Errorf("detach impairer (program id %d) from %s: %w", id, ifname, permErr(err))
	}
	return nil
}

func progName(id uint32) (string, error) {
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return "", err
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return "", err
	}
	return info.Name, nil
}

// OpenImpairer finds linkfabric's XDP program on the interface named ifname
// (calling thread's namespace), whether a dataplane port's or the standalone
// impairer, and returns a handle on its impairment stage. It works from any
// process: it follows the interface's XDP program ID to the program and its
// maps. Errors wrap ErrNoProgram when nothing is attached and
// ErrForeignProgram when someone else's program is.
func OpenImpairer(ifname string) (*Impairer, error) {
	prepare()
	l, err := lookupLink(ifname)
	if err != nil {
		return nil, err
	}
	id, mode := attachedProg(l)
	if id == 0 {
		return nil, fmt.Errorf("open impairer on %s (%s): %w (attach one with `linkfabric impair`, or run the dataplane on it)", ifname, netnsDesc(), ErrNoProgram)
	}
	prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
	if err != nil {
		return nil, fmt.Errorf("open XDP program id %d on %s: %w", id, ifname, permErr(err))
	}
	im := &Impairer{ifname: ifname, prog: prog, progID: ebpf.ProgramID(id), mode: mode}
	fail := func(err error) (*Impairer, error) {
		im.Close()
		return nil, err
	}
	info, err := prog.Info()
	if err != nil {
		return fail(fmt.Errorf("inspect XDP program id %d on %s: %w", id, ifname, permErr(err)))
	}
	switch info.Name {
	case impairerProgName:
		im.kind = KindStandalone
	case portProgName:
		im.kind = KindPort
	default:
		return fail(fmt.Errorf("open impairer on %s: %w: it carries XDP program id %d (name %s)", ifname, ErrForeignProgram, id, info.Name))
	}
	mapIDs, ok := info.MapIDs()
	if !ok {
		return fail(fmt.Errorf("open impairer on %s: the kernel does not list the maps of XDP program id %d", ifname, id))
	}
	want := map[string]struct {
		dst       **ebpf.Map
		valueSize uint32
	}{
		"impair_cfg":   {&im.cfg, uint32(unsafe.Sizeof(impairerImpairConfig{}))},
		"impair_rng":   {&im.rng, uint32(unsafe.Sizeof(impairerImpairState{}))},
		"impair_count": {&im.count, uint32(unsafe.Sizeof(impairerImpairStats{}))},
	}
	if im.kind == KindPort {
		want["port_count"] = struct {
			dst       **ebpf.Map
			valueSize uint32
		}{&im.ports, uint32(unsafe.Sizeof(portPortCounters{}))}
	}
	for _, mid := range mapIDs {
		m, err := ebpf.NewMapFromID(mid)
		if err != nil {
			return fail(fmt.Errorf("open map id %d of XDP program id %d on %s: %w", mid, id, ifname, permErr(err)))
		}
		mi, err := m.Info()
		w, found := want[mi.Name]
		if err != nil || !found || *w.dst != nil {
			m.Close()
			continue
		}
		if mi.ValueSize != w.valueSize {
			m.Close()
			return fail(fmt.Errorf("open impairer on %s: map %s of program id %d has value size %d, this build expects %d: the program comes from another linkfabric version; reattach it", ifname, mi.Name, id, mi.ValueSize, w.valueSize))
		}
		*w.dst = m
	}
	for name, w := range want {
		if *w.dst == nil {
			return fail(fmt.Errorf("open impairer on %s: %w: XDP program id %d (name %s) has no map %s", ifname, ErrForeignProgram, id, info.Name, name))
		}
	}
	return im, nil
}
