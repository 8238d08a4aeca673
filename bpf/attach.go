package bpf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/linkfabric/linkfabric/internal/enum"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// AttachMode is how an XDP program is attached to an interface.
type AttachMode int

const (
	// XDPAuto tries native (driver) mode and falls back to generic mode
	// when the driver cannot run XDP natively.
	XDPAuto AttachMode = iota
	// XDPNative is driver mode: the program runs before the kernel builds
	// an skb. Fast; what AF_XDP wants.
	XDPNative
	// XDPGeneric (skb mode) works on every interface, more slowly.
	XDPGeneric
)

var attachModeNames = [...]string{XDPAuto: "auto", XDPNative: "native", XDPGeneric: "generic"}

func (m AttachMode) String() string { return enum.Name(m, "XDPMode", attachModeNames[:]) }

// Program names as the kernel reports them; discovery keys on them.
const (
	portProgName     = "lf_port"
	impairerProgName = "lf_impair"
)

// Errors that callers may test for with errors.Is.
var (
	// ErrNoProgram: the interface carries no XDP program.
	ErrNoProgram = errors.New("no XDP program attached")
	// ErrForeignProgram: the interface carries an XDP program that is not
	// one of linkfabric's (or not the kind the operation wants).
	ErrForeignProgram = errors.New("XDP program is not linkfabric's")
	// ErrPermission: loading or attaching eBPF needs privileges the
	// process lacks. Errors wrapping it also wrap os.ErrPermission.
	ErrPermission = errors.New("not permitted")
)

// BusyError is returned when an interface already carries an XDP program.
type BusyError struct {
	Ifname   string
	ProgID   uint32
	ProgName string
	Mode     AttachMode // XDPNative or XDPGeneric
	// HeldByLink is true when the program is attached through a bpf_link
	// (a running process such as a linkfabric dataplane holds it); such a
	// program goes away when that process exits and cannot be detached
	// with ip link.
	HeldByLink bool
}

func (e *BusyError) Error() string {
	name := e.ProgName
	if name == "" {
		name = "?"
	}
	s := fmt.Sprintf("%s already has XDP program id %d (name %s) attached", e.Ifname, e.ProgID, name)
	if e.HeldByLink {
		return s + " through a bpf_link held by a running process (a linkfabric dataplane?); stop that process to detach it"
	}
	ipcmd := "xdp"
	if e.Mode == XDPGeneric {
		ipcmd = "xdpgeneric"
	}
	return s + fmt.Sprintf("; detach it with `ip link set dev %s %s off` or `linkfabric impair --off`", e.Ifname, ipcmd)
}

// MTUError is returned when native XDP refuses an interface's MTU (ERANGE).
// linkfabric's programs are loaded with frags (multi-buffer XDP), which veth
// accepts at any MTU (a program without frags it refuses above 3506, a page
// less headroom: "Peer MTU is too large to set XDP"); a NIC driver without
// multi-buffer XDP may still refuse an MTU above a page.
type MTUError struct {
	Ifname string
	MTU    int // the interface's MTU (a veth peer's counts too)
	Err    error
}

func (e *MTUError) Error() string {
	return fmt.Sprintf("native XDP on %s (%s) refuses MTU %d (a driver without multi-buffer XDP takes frames of one page only, about 3.5 KB; on veth the peer's MTU counts too): "+
		"lower the MTU on both ends (`ip link set dev %s mtu 3500` and the same on the peer) or attach in generic mode (slower): %v",
		e.Ifname, netnsDesc(), e.MTU, e.Ifname, e.Err)
}

func (e *MTUError) Unwrap() error { return e.Err }

var memlockOnce sync.Once

// prepare raises RLIMIT_MEMLOCK where the kernel still charges BPF memory to
// it (before 5.11); harmless elsewhere.
func prepare() {
	memlockOnce.Do(func() { _ = rlimit.RemoveMemlock() })
}

// netnsDesc names the network namespace of the calling thread for error
// messages: its name under /run/netns if it has one, else its inode.
func netnsDesc() string {
	var self unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &self); err != nil {
		return "netns of the calling thread"
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			var st unix.Stat_t
			if unix.Stat(filepath.Join("/run/netns", e.Name()), &st) == nil && st.Ino == self.Ino && st.Dev == self.Dev {
				return "netns " + e.Name()
			}
		}
	}
	var init unix.Stat_t
	if unix.Stat("/proc/1/ns/net", &init) == nil && init.Ino == self.Ino {
		return "the initial netns"
	}
	return fmt.Sprintf("netns net:[%d]", self.Ino)
}

// lookupLink finds the interface in the calling thread's namespace.
func lookupLink(ifname string) (netlink.Link, error) {
	l, err := netlink.LinkByName(ifname)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return nil, fmt.Errorf("interface %s not found in %s (linkfabric acts in the network namespace of the calling thread; switch to the right one first)", ifname, netnsDesc())
		}
		return nil, fmt.Errorf("look up interface %s in %s: %w", ifname, netnsDesc(), permErr(err))
	}
	return l, nil
}

// attachedProg returns the ID and mode of the XDP program on the link (0 if none).
func attachedProg(l netlink.Link) (uint32, AttachMode) {
	x := l.Attrs().Xdp
	if x == nil || !x.Attached || x.ProgId == 0 {
		return 0, XDPAuto
	}
	switch x.AttachMode {
	case nlXDPAttachedSKB:
		return x.ProgId, XDPGeneric
	default:
		return x.ProgId, XDPNative
	}
}

const (
	nlXDPAttachedDrv = 1 // XDP_ATTACHED_DRV
	nlXDPAttachedSKB = 2 // XDP_ATTACHED_SKB
)

// checkFree returns a *BusyError if the interface already carries an XDP program.
func checkFree(ifname string) (netlink.Link, error) {
	l, err := lookupLink(ifname)
	if err != nil {
		return nil, err
	}
	id, mode := attachedProg(l)
	if id == 0 {
		return l, nil
	}
	return nil, busyError(ifname, id, mode)
}

func busyError(ifname string, id uint32, mode AttachMode) *BusyError {
	e := &BusyError{Ifname: ifname, ProgID: id, Mode: mode}
	if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
		if info, err := p.Info(); err == nil {
			e.ProgName = info.Name
		}
		p.Close()
	}
	e.HeldByLink = heldByLink(id)
	return e
}

// heldByLink reports whether a bpf_link of type XDP holds program id.
func heldByLink(id uint32) bool {
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil {
			continue
		}
		if info.Type == link.XDPType && uint32(info.Program) == id {
			return true
		}
	}
	return false
}

// permErr wraps EPERM/EACCES with an explanation of the privileges needed.
func permErr(err error) error {
	if err == nil || !errors.Is(err, os.ErrPermission) {
		return err
	}
	who := "this process"
	if os.Geteuid() != 0 {
		who = fmt.Sprintf("this process (uid %d, not root)", os.Geteuid())
	}
	return fmt.Errorf("%w: %s may not load or attach eBPF programs: run as root, or grant CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON (e.g. `setcap cap_bpf,cap_net_admin,cap_perfmon+ep BINARY`): %w",
		ErrPermission, who, err)
}

// loadErr explains a collection load failure.
func loadErr(what string, err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("load %s: %w", what, permErr(err))
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("load %s: the kernel verifier rejected it (kernel too old or object out of date; run `go generate ./bpf/`): %+v", what, ve)
	}
	return fmt.Errorf("load %s: %w", what, err)
}

// nativeErr turns a failed native attach into an error naming the cause. It
// returns mtu=true when the failure is the driver's MTU limit.
func nativeErr(l netlink.Link, err error) (out error, mtu bool) {
	name := l.Attrs().Name
	switch {
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("attach XDP to %s: %w", name, permErr(err)), false
	case errors.Is(err, unix.ERANGE):
		return &MTUError{Ifname: name, MTU: l.Attrs().MTU, Err: err}, true
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL):
		return fmt.Errorf("driver of %s (%s) does not run XDP natively: %w", name, linkKind(l), err), false
	}
	return fmt.Errorf("attach native XDP to %s (%s): %w", name, netnsDesc(), err), false
}

func linkKind(l netlink.Link) string {
	if t := l.Type(); t != "" && t != "device" {
		return t
	}
	if b, err := os.ReadFile(filepath.Join("/sys/class/net", l.Attrs().Name, "device/driver/module/drivers")); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "device"
}

// isBusy matches the errnos of an attach that lost to an existing program.
// attachMode attaches a program to ifname (link l) in mode through attach
// (generic: skb mode, else driver mode). XDPAuto falls back from native to
// generic mode where fallBack allows it for the native error (and the
// failure is not one of permission). It returns the mode attached in (or
// tried last), the native error it fell back from, and the error.
func attachMode(ifname string, l netlink.Link, mode AttachMode, attach func(generic bool) error,
	fallBack func(nerr error, isMTU bool) bool) (AttachMode, error, error) {
	switch mode {
	case XDPGeneric:
		if err := attach(true); err != nil {
			return XDPGeneric, nil, fmt.Errorf("attach generic XDP to %s (%s): %w", ifname, netnsDesc(), permErr(err))
		}
		return XDPGeneric, nil, nil
	case XDPNative, XDPAuto:
		err := attach(false)
		if err == nil {
			return XDPNative, nil, nil
		}
		nerr, isMTU := nativeErr(l, err)
		if mode != XDPAuto || !fallBack(nerr, isMTU) || errors.Is(nerr, ErrPermission) {
			return XDPNative, nil, nerr
		}
		if err := attach(true); err != nil {
			return XDPGeneric, nerr, fmt.Errorf("attach XDP to %s: native failed (%v), generic failed too: %w", ifname, nerr, permErr(err))
		}
		return XDPGeneric, nerr, nil
	}
	return mode, nil, fmt.Errorf("attach XDP to %s: unknown mode %d", ifname, int(mode))
}

// busyOr describes what holds ifname if err says it is taken (a race with
// another attacher lost), else returns err.
func busyOr(ifname string, err error) error {
	if isBusy(err) {
		if l, lerr := lookupLink(ifname); lerr == nil {
			if id, m := attachedProg(l); id != 0 {
				return busyError(ifname, id, m)
			}
		}
	}
	return err
}

func isBusy(err error) bool {
	return errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST)
}
