// Package preflight checks that a node can run a dataplane as configured
// before it runs (linkfabric check): the kernel features the dataplane
// needs, and for each port its driver, native XDP, AF_XDP zero-copy, queues,
// MTU (with the link header and trailer the mode adds), the offloads that
// break the path, whether its MAC checks the FCS (what --integrity auto
// picks) and promiscuous mode. It asks the engine (dataplane.Settle,
// Config.CheckPortMTU, dataplane.PortFCS) and the devices (ethtool
// ioctls, netlink, the netdev family's XDP features); it attaches nothing.
package preflight

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Status is a check's outcome.
type Status string

// Outcomes: OK and Warn let the node run (Warn: slower or less than it
// could be, or unknown until run); Fail stops it.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Mark is the status's sign in the text report.
func (s Status) Mark() string {
	switch s {
	case OK:
		return "✔"
	case Warn:
		return "!"
	}
	return "✗"
}

// Check is one line of the report.
type Check struct {
	// Port is the device checked ("" for the node: kernel, configuration).
	Port string `json:"port,omitempty"`
	Role string `json:"role,omitempty"`
	// Item names what is checked ("mtu", "native_xdp", ...).
	Item   string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Fix is the command (or flag) that makes the check pass.
	Fix string `json:"fix,omitempty"`
}

// Report is a preflight's outcome: OK when no check failed.
type Report struct {
	Mode      string  `json:"mode"`
	Netns     string  `json:"netns,omitempty"`
	Integrity string  `json:"integrity,omitempty"`
	OK        bool    `json:"ok"`
	Checks    []Check `json:"checks"`
}

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	if c.Status == Fail {
		r.OK = false
	}
}

// lgModes are the modes whose LinkGuardian send half runs in the kernel
// with one link queue.
var lgModes = []dataplane.Mode{"lg", "lgnb", "monitor"}

// Run checks cfg's node in the calling thread's network namespace (the
// ports'; cfg.Netns only words the fixes). The caller locks the thread
// there (netns.Do, or a process started in it).
func Run(cfg dataplane.Config) *Report {
	r := &Report{Mode: string(cfg.Mode), Netns: cfg.Netns, OK: true}
	ip := "ip"
	if cfg.Netns != "" {
		ip = "ip -n " + cfg.Netns
	}
	ethtool := "ethtool"
	if cfg.Netns != "" {
		ethtool = "ip netns exec " + cfg.Netns + " ethtool"
	}
	kernel(r)
	features, ferr := featureReader()
	if features != nil {
		defer features.Close()
	}
	if ferr != nil {
		r.add(Check{Item: "xdp_features", Status: Warn, Detail: ferr.Error() + ": native XDP and zero-copy are known only when run binds (its log says)",
			Fix: "a kernel with the netdev netlink family (Linux 6.3+)"})
	}
	hosts, links := cfg.HostPorts, cfg.LinkPorts
	if len(hosts) == 0 && cfg.HostPort != "" {
		hosts = []string{cfg.HostPort}
	}
	if len(links) == 0 && cfg.LinkPort != "" {
		links = []string{cfg.LinkPort}
	}
	present := true
	for _, p := range append(append([]string(nil), hosts...), links...) {
		if _, err := net.InterfaceByName(p); err != nil {
			present = false
		}
	}
	var settled dataplane.Config
	var settleErr error
	if present {
		var why string
		settled, why, settleErr = dataplane.Settle(cfg)
		if settleErr != nil {
			r.add(Check{Item: "configuration", Status: Fail, Detail: settleErr.Error(), Fix: fixOf(settleErr)})
		} else {
			r.Mode = string(settled.Mode)
			r.Integrity = settled.Link.Integrity.String()
			d := "--integrity " + r.Integrity
			if why != "" {
				d += " (auto: " + why + ")"
			}
			r.add(Check{Item: "integrity", Status: OK, Detail: d + "; both ends must run the same check (the link session names a mismatch)"})
			multiBuffer(r, &settled)
		}
	}
	for _, p := range hosts {
		port(r, &cfg, p, dataplane.RoleHost, features, ip, ethtool)
	}
	for _, p := range links {
		port(r, &cfg, p, dataplane.RoleLink, features, ip, ethtool)
	}
	if present && settleErr == nil {
		mtus(r, &settled, hosts, links)
	}
	return r
}

// kernel checks what every mode needs of the kernel: AF_XDP sockets and
// XDP programs (with the capabilities to make them).
func kernel(r *Report) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fix := "a kernel with CONFIG_XDP_SOCKETS=y"
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			fix = "run as root or with CAP_NET_RAW"
		}
		r.add(Check{Item: "af_xdp", Status: Fail, Detail: "cannot create an AF_XDP socket: " + err.Error(), Fix: fix})
	} else {
		unix.Close(fd)
		r.add(Check{Item: "af_xdp", Status: OK, Detail: "AF_XDP sockets can be created"})
	}
	_ = rlimit.RemoveMemlock() // as the dataplane does (kernels before 5.11)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}}) // XDP_PASS
	if err != nil {
		fix := "a kernel with CONFIG_BPF_SYSCALL=y and XDP"
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			fix = "run as root or with CAP_BPF and CAP_NET_ADMIN (CAP_SYS_ADMIN before Linux 5.8)"
		}
		r.add(Check{Item: "bpf", Status: Fail, Detail: "cannot load an XDP program: " + err.Error(), Fix: fix})
		return
	}
	prog.Close()
	var u unix.Utsname
	rel := ""
	if unix.Uname(&u) == nil {
		rel = " (Linux " + unix.ByteSliceToString(u.Release[:]) + ")"
	}
	r.add(Check{Item: "bpf", Status: OK, Detail: "XDP programs can be loaded" + rel})
}

// multiBuffer checks that the kernel binds AF_XDP sockets with XDP_USE_SG
// (Linux 6.6+) when the ports' MTU needs UMEM frames larger than a page.
func multiBuffer(r *Report, c *dataplane.Config) {
	if int(c.FrameSize) <= os.Getpagesize() {
		return
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	fmt.Sscanf(rel, "%d.%d", &major, &minor)
	if major > 6 || major == 6 && minor >= 6 {
		r.add(Check{Item: "multi_buffer", Status: OK, Detail: fmt.Sprintf("frames of %d bytes: AF_XDP multi-buffer (XDP_USE_SG) on Linux %s", c.FrameSize, rel)})
		return
	}
	r.add(Check{Item: "multi_buffer", Status: Fail,
		Detail: fmt.Sprintf("the ports' MTU needs %d-byte frames, received in pieces with AF_XDP multi-buffer (XDP_USE_SG, Linux 6.6+); this is Linux %s", c.FrameSize, rel),
		Fix:    "a Linux 6.6+ kernel, or port MTUs of 3826 or less"})
}

// featureReader reads the devices' XDP features in this namespace.
func featureReader() (*bpf.FeatureReader, error) { return bpf.NewFeatureReader() }

// port checks device name.
func port(r *Report, cfg *dataplane.Config, name string, role dataplane.PortRole, features *bpf.FeatureReader, ip, ethtool string) {
	add := func(item string, s Status, detail, fix string) {
		r.add(Check{Port: name, Role: string(role), Item: item, Status: s, Detail: detail, Fix: fix})
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		where := "this network namespace"
		if cfg.Netns != "" {
			where = "namespace " + cfg.Netns
		}
		add("exists", Fail, fmt.Sprintf("no interface %s in %s", name, where), fmt.Sprintf("%s link show (and --%s-port, --netns)", ip, role))
		return
	}
	driver, bus := dataplane.PortDriver(name)
	add("driver", OK, fmt.Sprintf("driver %s, bus %s", orNone(driver), orNone(bus)), "")
	if ifc.Flags&net.FlagUp == 0 {
		add("up", Fail, "the interface is down", fmt.Sprintf("%s link set dev %s up", ip, name))
	} else if ifc.Flags&net.FlagRunning == 0 {
		add("up", Warn, "up but no carrier (cable, peer)", "")
	} else {
		add("up", OK, "up with carrier", "")
	}
	// An XDP program already on the port: run would refuse it.
	if l, err := netlink.LinkByName(name); err == nil {
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			add("xdp_free", Fail, fmt.Sprintf("XDP program %d is attached (another linkfabric run?)", x.ProgId),
				fmt.Sprintf("stop what attached it, or %s link set dev %s xdp off", ip, name))
		}
	}
	// Native XDP and zero-copy, from the driver's advertised features.
	var f bpf.XDPFeatures
	known := false
	if features != nil {
		if f, err = features.Features(ifc.Index); err == nil {
			known = true
		}
	}
	switch {
	case !known:
		add("native_xdp", Warn, "unknown until run (no XDP features)", "")
	case f&bpf.XDPBasic != 0:
		add("native_xdp", OK, "the driver runs XDP natively ("+f.String()+")", "")
	case cfg.XDPMode == bpf.XDPNative:
		add("native_xdp", Fail, "the driver has no native XDP and --xdp-mode native is asked", "--xdp-mode auto (generic XDP), or a driver with native XDP")
	default:
		add("native_xdp", Warn, "no native XDP: generic XDP (slower, copy mode)", "a driver with native XDP")
	}
	zc := cfg.ZeroCopy
	switch {
	case !known:
		add("zerocopy", Warn, "unknown until run: run's log line 'AF_XDP sockets bound' says", "")
	case f&bpf.XDPZeroCopy != 0:
		add("zerocopy", OK, "the driver has AF_XDP zero-copy", "")
	case zc == dataplane.ZeroCopyOn:
		add("zerocopy", Fail, "the driver has no AF_XDP zero-copy and --zerocopy on is asked", "--zerocopy auto (copy mode)")
	case zc == dataplane.ZeroCopyOff:
		add("zerocopy", OK, "no AF_XDP zero-copy; --zerocopy off asks copy mode", "")
	default:
		add("zerocopy", Warn, "no AF_XDP zero-copy: --zerocopy auto binds copy mode", "")
	}
	queues(cfg, name, role, add, ethtool)
	offloads(name, role, add, ethtool, ip)
	if role == dataplane.RoleLink {
		fcs, why := dataplane.PortFCS(name)
		if fcs {
			add("fcs", OK, why+": --integrity auto sends no trailer", "")
		} else {
			add("fcs", OK, why+": --integrity auto adds a trailer", "")
		}
		if l, err := netlink.LinkByName(name); err == nil && l.Attrs().Promisc != 0 {
			add("promisc", OK, "promiscuous", "")
		} else {
			add("promisc", OK, "not promiscuous: run turns it on while it runs, and back off when it stops", "")
		}
	}
}

// queues checks the port's queues against --workers and LinkGuardian's
// send fast path.
func queues(cfg *dataplane.Config, name string, role dataplane.PortRole, add func(string, Status, string, string), ethtool string) {
	rx, err := xdp.QueueCount(name)
	if err != nil {
		add("queues", Warn, "cannot count the queues: "+err.Error(), "")
		return
	}
	tx, err := xdp.TxQueueCount(name)
	if err != nil {
		tx = rx
	}
	n := max(cfg.Workers, 1)
	d := fmt.Sprintf("%d RX, %d TX queues", rx, tx)
	switch {
	case n > 1 && (rx < n || tx < n):
		add("queues", Fail, fmt.Sprintf("%s: --workers %d needs %d of each", d, n, n), fmt.Sprintf("%s -L %s combined %d", ethtool, name, n))
	case role == dataplane.RoleLink && n == 1 && slices.Contains(lgModes, cfg.Mode) && (rx > 1 || tx > 1):
		add("queues", Warn, d+": LinkGuardian's send fast path needs one link queue (with more its send half stays in the worker, with a priority lane)", fmt.Sprintf("%s -L %s combined 1", ethtool, name))
	default:
		add("queues", OK, d+fmt.Sprintf(" (%d AF_XDP sockets)", rx), "")
	}
}

// offloads checks LRO (merged frames exceed the MTU and the UMEM frame;
// native XDP turns it off, generic does not) and, on a host port that is
// a veth, the TX checksum offload of its peer, the sending end: frames it
// sends with a partial checksum leave through AF_XDP unfinished.
func offloads(name string, role dataplane.PortRole, add func(string, Status, string, string), ethtool, ip string) {
	o, err := netns.OffloadsHere(name)
	if err != nil {
		add("offloads", Warn, "cannot read the offloads: "+err.Error(), "")
		return
	}
	if o.LRO {
		add("lro", Fail, "LRO is on: merged frames exceed the MTU", fmt.Sprintf("%s -K %s lro off", ethtool, name))
	} else {
		add("lro", OK, "LRO off", "")
	}
	if role != dataplane.RoleHost {
		return
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		return
	}
	if _, ok := l.(*netlink.Veth); !ok {
		add("tx_checksum", OK, "frames arrive from the wire with their checksums (the sending hosts' NICs finish them)", "")
		return
	}
	// The peer is in this namespace unless the link names another
	// (IFLA_LINK_NETNSID); its index is then this namespace's.
	var pl netlink.Link
	if l.Attrs().NetNsID < 0 {
		if peer, e := netlink.VethPeerIndex(l.(*netlink.Veth)); e == nil {
			pl, _ = netlink.LinkByIndex(peer)
		}
	}
	if pl == nil {
		add("tx_checksum", Warn, "a veth whose peer is in another namespace: if the peer sends TCP with TX checksum offload on, its frames leave unfinished",
			"ethtool -K PEER tx off, in the peer's namespace")
		return
	}
	po, err := netns.OffloadsHere(pl.Attrs().Name)
	switch {
	case err != nil:
		add("tx_checksum", Warn, "cannot read the TX checksum offload of the veth peer "+pl.Attrs().Name+": "+err.Error(), "")
	case po.TxChecksum:
		add("tx_checksum", Fail, "the veth peer "+pl.Attrs().Name+" sends with TX checksum offload on: its TCP frames would leave through AF_XDP with partial checksums",
			fmt.Sprintf("%s -K %s tx off", ethtool, pl.Attrs().Name))
	default:
		add("tx_checksum", OK, "TX checksum offload off on the veth peer "+pl.Attrs().Name, "")
	}
}

// mtus checks every host port's MTU against every link port's as run does.
func mtus(r *Report, c *dataplane.Config, hosts, links []string) {
	if len(hosts) == 0 {
		hosts = []string{""}
	}
	for _, l := range links {
		li, err := net.InterfaceByName(l)
		if err != nil {
			continue
		}
		for _, h := range hosts {
			hostMTU := 0
			if h != "" {
				hi, err := net.InterfaceByName(h)
				if err != nil {
					continue
				}
				hostMTU = hi.MTU
			}
			chk := Check{Port: l, Role: string(dataplane.RoleLink), Item: "mtu"}
			if err := c.CheckPortMTU(h, l, hostMTU, li.MTU); err != nil {
				chk.Status, chk.Detail, chk.Fix = Fail, strings.TrimPrefix(err.Error(), "dataplane: "), fixOf(err)
			} else {
				chk.Status = OK
				chk.Detail = fmt.Sprintf("link MTU %d carries host MTU %d with %d bytes of link header and trailer (mode %s, --integrity %s)",
					li.MTU, hostMTU, c.LinkOverhead(), c.Mode, c.Link.Integrity)
				if h == "" {
					chk.Detail = fmt.Sprintf("link MTU %d", li.MTU)
				}
			}
			r.add(chk)
		}
	}
}

// fixOf is the command an engine error names after "fix: " (up to the
// first " (" or ", or"), else "".
func fixOf(err error) string {
	s := err.Error()
	i := strings.Index(s, "fix: ")
	if i < 0 {
		return ""
	}
	s = s[i+len("fix: "):]
	for _, stop := range []string{" (and ", ", or ", "; "} {
		if j := strings.Index(s, stop); j >= 0 {
			s = s[:j]
		}
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
