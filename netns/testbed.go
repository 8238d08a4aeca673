package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// Forwarding modes of the switch namespaces.
const (
	// ForwardingKernel puts a Linux bridge over the ports named in
	// Topology.Bridges: the baseline path.
	ForwardingKernel = "kernel"
	// ForwardingNone leaves the ports bare for the dataplane.
	ForwardingNone = "none"
)

// Defaults of Options.
const (
	DefaultPrefix = "lf"
	DefaultMTU    = 1500
	// DefaultLinkHeaderLen is what the link ports' MTU exceeds the hosts'
	// by: what the mode with the most overhead needs, so that one testbed
	// fits every mode. Mode fec's parity frame is 22 bytes longer than the
	// longest frame of its group, plus a 4-byte integrity trailer (lg, lgnb
	// and monitor need 8 + 4; cells cut frames to the link's size).
	DefaultLinkHeaderLen = 26
)

// MaxXDPVethMTU is the largest MTU at which native XDP attaches on veth for
// a program without frags ("Peer MTU is too large to set XDP" above it).
// linkfabric's programs have frags (multi-buffer XDP) and attach at any MTU.
const MaxXDPVethMTU = 3506

// StateDir holds one JSON record per testbed (prefix), written by Up.
const StateDir = "/run/linkfabric/testbeds"

// markerPrefix is written as the ifalias of "lo" in every namespace this
// package makes: "linkfabric:<prefix>". Down deletes only namespaces whose
// marker names exactly its prefix.
const markerPrefix = "linkfabric:"

// readyTimeout bounds how long Up and SetForwarding wait for links to come
// up and bridge ports to forward.
const readyTimeout = 10 * time.Second

// Options of a testbed.
type Options struct {
	// Prefix is prepended to every namespace name ("lf" + "h1" = "lfh1").
	// Default "lf".
	Prefix string `json:"prefix"`
	// Forwarding is "kernel" (default: bridges per Topology.Bridges) or
	// "none" (bare ports for the dataplane).
	Forwarding string `json:"forwarding"`
	// MTU is the host MTU (veth pairs of class "host"). Default 1500.
	MTU int `json:"mtu"`
	// LinkHeaderLen is added to MTU on veth pairs of class "link". Default
	// DefaultLinkHeaderLen, which fits every mode.
	LinkHeaderLen int `json:"link_header_len"`
	// LinkQueues, if > 0, is the queue count of every veth pair of class
	// "link", instead of the topology's (the pair preset's: 1). One queue
	// keeps every frame on one ring: a veth puts a frame an XDP program
	// redirects into it on the peer's RX queue of the redirecting CPU, so
	// with two queues the kernel's sends would split over two rings
	// (LinkGuardian's send fast path needs one, and stays in the worker on
	// more; two give LinkGuardian's worker path a priority lane).
	LinkQueues int `json:"link_queues,omitempty"`
	// Queues, if > 0, is the queue count of every veth pair (LinkQueues
	// still decides for class "link"): one worker per queue needs as many
	// on the hosts' ends too.
	Queues int `json:"queues,omitempty"`
	// Mode is the dataplane mode the switches will run, if known: it decides
	// the GRO of a topology with GROModes (Testbed.SetMode changes it).
	Mode string `json:"mode,omitempty"`
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Forwarding == "" {
		o.Forwarding = ForwardingKernel
	}
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.LinkHeaderLen == 0 {
		o.LinkHeaderLen = DefaultLinkHeaderLen
	}
	return o
}

func checkPrefix(p string) error {
	if p == "" || !nsNameRE.MatchString(p) || len(p) > maxNSName/2 {
		return fmt.Errorf("netns: prefix %q: use 1-%d letters, digits, '_', '-', '.'", p, maxNSName/2)
	}
	return nil
}

func checkForwarding(f string) error {
	if f != ForwardingKernel && f != ForwardingNone {
		return fmt.Errorf("netns: forwarding %q: want %q or %q", f, ForwardingKernel, ForwardingNone)
	}
	return nil
}

// LinkMTU returns the MTU of a veth pair of MTU class class.
func (o Options) LinkMTU(class string) int {
	o = o.withDefaults()
	if class == MTULink {
		return o.MTU + o.LinkHeaderLen
	}
	return o.MTU
}

// PairMTU returns the MTU of t's veth pairs of MTU class class under o:
// o.LinkMTU(class), or t.LinkMTU for class "link" where that is larger.
func (t *Topology) PairMTU(o Options, class string) int {
	if class == MTULink {
		return max(o.LinkMTU(class), t.LinkMTU)
	}
	return o.LinkMTU(class)
}

// Testbed is a testbed made by Up (or found by Open).
type Testbed struct {
	Prefix     string    `json:"prefix"`
	Options    Options   `json:"options"`
	Topology   *Topology `json:"topology"`
	Forwarding string    `json:"forwarding"`
	Created    time.Time `json:"created"`
}

// NS returns the full namespace name of short name ("h1" -> "lfh1").
func (tb *Testbed) NS(short string) string { return tb.Prefix + short }

// Down removes the testbed (see Down).
func (tb *Testbed) Down() error { return Down(tb.Prefix) }

// SetForwarding switches forwarding (see SetForwarding).
func (tb *Testbed) SetForwarding(mode string) error {
	if err := SetForwarding(tb.Prefix, mode); err != nil {
		return err
	}
	tb.Forwarding = mode
	return nil
}

// SetMode records the dataplane mode the switches are about to run and
// turns GRO on or off on the topology's GRO ends as its GROModes say for it
// (a topology without GROModes keeps GRO as Up set it). Call it before the
// dataplanes start: a forward dataplane takes its kernel path into a host's
// veth only while that veth's peer has GRO on.
func (tb *Testbed) SetMode(mode string) error {
	t := tb.Topology
	if len(t.GROModes) > 0 {
		on := t.GROIn(mode)
		for _, l := range t.Links {
			for _, e := range l.Ends {
				if !t.GROFor(e) {
					continue
				}
				if err := SetGRO(tb.NS(e.NS), e.Dev, on); err != nil {
					return fmt.Errorf("netns: testbed %s, mode %s: %w", tb.Prefix, mode, err)
				}
			}
		}
	}
	if tb.Options.Mode == mode {
		return nil
	}
	tb.Options.Mode = mode
	return tb.save()
}

// Status reports what exists (see Status).
func (tb *Testbed) Status() (StatusReport, error) { return Status(tb.Prefix) }

func statePath(prefix string) string { return filepath.Join(StateDir, prefix+".json") }

func (tb *Testbed) save() error {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(tb, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(tb.Prefix) + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(tb.Prefix))
}

// Open returns the testbed that Up recorded for prefix.
func Open(prefix string) (*Testbed, error) {
	b, err := os.ReadFile(statePath(prefix))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("netns: no testbed with prefix %q (no %s): create it with Up", prefix, statePath(prefix))
		}
		return nil, fmt.Errorf("netns: %w", err)
	}
	var tb Testbed
	if err := json.Unmarshal(b, &tb); err != nil {
		return nil, fmt.Errorf("netns: %s: %w (remove the testbed with \"linkfabric testbed down --prefix %s\")", statePath(prefix), err, prefix)
	}
	if tb.Topology == nil {
		return nil, fmt.Errorf("netns: %s has no topology (remove the testbed with \"linkfabric testbed down --prefix %s\")", statePath(prefix), prefix)
	}
	return &tb, nil
}

// testHook, when set by tests, is called after each step of Up; an error
// makes Up fail there (to prove rollback).
var testHook func(step string) error

func hook(step string) error {
	if testHook != nil {
		return testHook(step)
	}
	return nil
}

// Up creates the testbed described by topo with opts: namespaces
// (opts.Prefix + short name) with loopback up and IPv6 disabled, veth pairs
// created directly inside their namespaces (names never collide in the root
// namespace), MTUs by class, addresses, TX checksum offload off and GRO on
// where the topology says, bridges (STP off, forward delay 0) if forwarding is
// "kernel", and waits until every link is up and every bridge port forwards.
//
// It refuses to reuse an existing namespace name. On any failure it removes
// everything it made and returns an error naming the namespace or interface.
func Up(topo *Topology, opts Options) (*Testbed, error) {
	opts = opts.withDefaults()
	if err := checkPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := checkForwarding(opts.Forwarding); err != nil {
		return nil, err
	}
	if opts.MTU < 68 || opts.LinkHeaderLen < 0 || opts.MTU+opts.LinkHeaderLen > 65535 {
		return nil, fmt.Errorf("netns: MTU %d + link header %d: want 68 <= MTU and MTU+header <= 65535", opts.MTU, opts.LinkHeaderLen)
	}
	if opts.LinkQueues < 0 || opts.LinkQueues > MaxQueues || opts.Queues < 0 || opts.Queues > MaxQueues {
		return nil, fmt.Errorf("netns: queues %d, link queues %d: want 1 to %d (0: the topology's)", opts.Queues, opts.LinkQueues, MaxQueues)
	}
	if topo == nil {
		return nil, errors.New("netns: nil topology")
	}
	t, err := topo.Expand()
	if err != nil {
		return nil, fmt.Errorf("netns: topology %q: %w", topo.Name, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("netns: topology %q: %w", t.Name, err)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("netns: Up needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root")
	}
	if _, err := os.Stat(statePath(opts.Prefix)); err == nil {
		return nil, fmt.Errorf("netns: a testbed with prefix %q is already recorded in %s: remove it with \"linkfabric testbed down --prefix %s\" (netns.Down in Go) or choose another prefix", opts.Prefix, statePath(opts.Prefix), opts.Prefix)
	}
	for _, n := range t.NamespaceNames(opts.Prefix) {
		if nsExists(n) {
			return nil, fmt.Errorf("netns: namespace %q already exists: remove it (\"ip netns del %s\", or \"linkfabric testbed down --prefix %s\" if it is an old testbed) or choose another prefix", n, n, opts.Prefix)
		}
	}
	tb := &Testbed{Prefix: opts.Prefix, Options: opts, Topology: t, Forwarding: opts.Forwarding, Created: time.Now()}
	b := &builder{tb: tb, handles: map[string]vnetns.NsHandle{}}
	if err := b.build(); err != nil {
		if rerr := b.rollback(); rerr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return nil, err
	}
	b.closeHandles()
	return tb, nil
}

type builder struct {
	tb      *Testbed
	made    []string // full namespace names, in creation order
	handles map[string]vnetns.NsHandle
	saved   bool
}

func (b *builder) closeHandles() {
	for _, h := range b.handles {
		h.Close()
	}
	b.handles = map[string]vnetns.NsHandle{}
}

func (b *builder) rollback() error {
	b.closeHandles()
	var errs []error
	for i := len(b.made) - 1; i >= 0; i-- {
		if err := deleteNamespace(b.made[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if b.saved {
		if err := os.Remove(statePath(b.tb.Prefix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *builder) build() error {
	tb, t := b.tb, b.tb.Topology
	p := tb.Prefix
	// Namespaces.
	for _, short := range t.Namespaces {
		n := p + short
		h, err := createNamed(n)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("netns: namespace %q already exists: remove it (\"ip netns del %s\") or choose another prefix", n, n)
			}
			return fmt.Errorf("netns: creating namespace %q: %w", n, err)
		}
		b.made = append(b.made, n)
		b.handles[short] = h
		if err := initNamespace(n, h, markerPrefix+p); err != nil {
			return err
		}
	}
	if err := tb.save(); err != nil {
		return fmt.Errorf("netns: recording testbed in %s: %w (is /run writable?)", StateDir, err)
	}
	b.saved = true
	if err := hook("namespaces"); err != nil {
		return err
	}
	// Veth pairs, created in the root namespace's netlink socket but
	// directly inside their target namespaces.
	for _, l := range t.Links {
		a, z := l.Ends[0], l.Ends[1]
		mtu := t.PairMTU(tb.Options, l.MTU)
		queues := l.Queues
		if n := tb.Options.Queues; n > 0 {
			queues = n
		}
		if n := tb.Options.LinkQueues; n > 0 && l.MTU == MTULink {
			queues = n
		}
		v := &netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{
				Name:        a.Dev,
				MTU:         mtu,
				Namespace:   netlink.NsFd(int(b.handles[a.NS])),
				NumTxQueues: queues, // the peer gets the same
				NumRxQueues: queues,
			},
			PeerName:      z.Dev,
			PeerMTU:       uint32(mtu),
			PeerNamespace: netlink.NsFd(int(b.handles[z.NS])),
		}
		if err := netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("netns: creating veth %s%s:%s ⇄ %s%s:%s (MTU %d): %w", p, a.NS, a.Dev, p, z.NS, z.Dev, mtu, err)
		}
	}
	if err := hook("veths"); err != nil {
		return err
	}
	// Addresses, offloads, link up.
	for _, short := range t.Namespaces {
		n := p + short
		h, err := netlink.NewHandleAt(b.handles[short])
		if err != nil {
			return fmt.Errorf("netns %s: netlink: %w", n, err)
		}
		err = b.configureNS(h, short)
		h.Close()
		if err != nil {
			return err
		}
	}
	if err := hook("links"); err != nil {
		return err
	}
	if err := applyShapes(p, t); err != nil {
		return err
	}
	for _, w := range t.Wires {
		if err := setupWire(p, w); err != nil {
			return err
		}
	}
	if tb.Forwarding == ForwardingKernel {
		if err := addBridges(p, t); err != nil {
			return err
		}
	}
	if err := hook("bridges"); err != nil {
		return err
	}
	return waitReady(p, t, tb.Forwarding == ForwardingKernel)
}

// initNamespace marks the namespace as ours, brings lo up and disables IPv6.
func initNamespace(n string, nsh vnetns.NsHandle, marker string) error {
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return fmt.Errorf("netns %s: netlink: %w", n, err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("netns %s: lo: %w", n, err)
	}
	if err := h.LinkSetAlias(lo, marker); err != nil {
		return fmt.Errorf("netns %s: marking lo with alias %q: %w", n, marker, err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("netns %s: ip link set lo up: %w", n, err)
	}
	// No IPv6: router solicitations and MLD reports would pollute frame
	// counts. "default" covers links made later, "all" the existing ones.
	return doIn(nsh, n, func() error {
		for _, k := range []string{"net.ipv6.conf.default.disable_ipv6", "net.ipv6.conf.all.disable_ipv6"} {
			if err := os.WriteFile(sysctlPath(k), []byte("1"), 0); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil // kernel without IPv6
				}
				return fmt.Errorf("netns %s: sysctl %s=1: %w", n, k, err)
			}
		}
		return nil
	})
}

func (b *builder) configureNS(h *netlink.Handle, short string) error {
	tb, t := b.tb, b.tb.Topology
	n := tb.Prefix + short
	for _, e := range t.endsIn(short) {
		link, err := h.LinkByName(e.Dev)
		if err != nil {
			return fmt.Errorf("netns %s: %s: %w", n, e.Dev, err)
		}
		for _, a := range t.Addresses[e.String()] {
			addr, err := netlink.ParseAddr(a)
			if err != nil {
				return fmt.Errorf("netns %s: %s: address %q: %w", n, e.Dev, a, err)
			}
			if err := h.AddrAdd(link, addr); err != nil {
				hint := "check the address in the topology"
				if addr.IP.To4() == nil {
					hint = "testbed namespaces run with IPv6 disabled; use an IPv4 address"
				}
				return fmt.Errorf("netns %s: ip addr add %s dev %s: %w (%s)", n, a, e.Dev, err, hint)
			}
		}
		if t.TxChecksumOffFor(e) {
			if err := SetTxChecksum(n, e.Dev, false); err != nil {
				return err
			}
		}
		if err := h.LinkSetUp(link); err != nil {
			return fmt.Errorf("netns %s: ip link set %s up: %w", n, e.Dev, err)
		}
		// After up: a veth tells its peer that it takes redirected
		// frames (the peer's XDP features) only when GRO changes while
		// it is up.
		if t.GROFor(e) && t.GROIn(tb.Options.Mode) {
			if err := SetGRO(n, e.Dev, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// addBridges creates every bridge of t that does not exist, enslaves its
// ports and brings it up.
func addBridges(p string, t *Topology) error {
	return forBridges(p, t, func(n string, h *netlink.Handle, br Bridge) error {
		mtu := 0
		var ports []netlink.Link
		for _, port := range br.Ports {
			l, err := h.LinkByName(port)
			if err != nil {
				return fmt.Errorf("netns %s: bridge %s: port %s: %w", n, br.Name, port, err)
			}
			ports = append(ports, l)
			if m := l.Attrs().MTU; mtu == 0 || m < mtu {
				mtu = m
			}
		}
		bl, err := h.LinkByName(br.Name)
		if err != nil {
			if err := Do(n, func() error { return createBridge(br.Name, mtu) }); err != nil {
				return fmt.Errorf("netns %s: ip link add %s type bridge stp_state 0 forward_delay 0: %w", n, br.Name, err)
			}
			if bl, err = h.LinkByName(br.Name); err != nil {
				return fmt.Errorf("netns %s: bridge %s: %w", n, br.Name, err)
			}
		} else if bl.Type() != "bridge" {
			return fmt.Errorf("netns %s: %s exists and is a %s, not a bridge: delete it (ip -n %s link del %s)", n, br.Name, bl.Type(), n, br.Name)
		}
		for _, l := range ports {
			if err := h.LinkSetMaster(l, bl); err != nil {
				return fmt.Errorf("netns %s: ip link set %s master %s: %w (is an XDP program or another master holding it?)", n, l.Attrs().Name, br.Name, err)
			}
			if err := h.LinkSetUp(l); err != nil {
				return fmt.Errorf("netns %s: ip link set %s up: %w", n, l.Attrs().Name, err)
			}
		}
		if err := h.LinkSetUp(bl); err != nil {
			return fmt.Errorf("netns %s: ip link set %s up: %w", n, br.Name, err)
		}
		return nil
	})
}

// forBridges calls fn for each bridge of t with its namespace's name and
// a netlink handle in it.
func forBridges(p string, t *Topology, fn func(n string, h *netlink.Handle, br Bridge) error) error {
	for _, br := range t.Bridges {
		n := p + br.NS
		h, closeH, err := handleFor(n)
		if err != nil {
			return err
		}
		err = fn(n, h, br)
		closeH()
		if err != nil {
			return err
		}
	}
	return nil
}

// delBridges deletes every bridge of t (its ports stay, bare and up).
func delBridges(p string, t *Topology) error {
	return forBridges(p, t, func(n string, h *netlink.Handle, br Bridge) error {
		bl, err := h.LinkByName(br.Name)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				return nil
			}
			return fmt.Errorf("netns %s: bridge %s: %w", n, br.Name, err)
		}
		if bl.Type() != "bridge" {
			return fmt.Errorf("netns %s: %s is a %s, not a bridge; not deleting it", n, br.Name, bl.Type())
		}
		if err := h.LinkDel(bl); err != nil {
			return fmt.Errorf("netns %s: ip link del %s: %w", n, br.Name, err)
		}
		return nil
	})
}

// waitReady waits until every veth end is operationally up and, with
// bridges, every bridge is up and every bridge port forwards.
func waitReady(p string, t *Topology, bridges bool) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		pending := notReady(p, t, bridges)
		if pending == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: testbed %q not ready after %v: %s (check \"ip -n NS link\"; bridge ports need STP off)", p, readyTimeout, pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// notReady returns a description of the first thing not ready, or "".
func notReady(p string, t *Topology, bridges bool) string {
	for _, short := range t.Namespaces {
		n := p + short
		h, closeH, err := handleFor(n)
		if err != nil {
			return err.Error()
		}
		msg := func() string {
			for _, e := range t.endsIn(short) {
				link, err := h.LinkByName(e.Dev)
				if err != nil {
					return fmt.Sprintf("%s: %s: %v", n, e.Dev, err)
				}
				if s := link.Attrs().OperState; s != netlink.OperUp {
					return fmt.Sprintf("%s: %s is %s", n, e.Dev, s)
				}
			}
			if !bridges {
				return ""
			}
			var brs []Bridge
			for _, br := range t.Bridges {
				if br.NS == short {
					brs = append(brs, br)
				}
			}
			if len(brs) == 0 {
				return ""
			}
			var states map[int]uint8
			if err := Do(n, func() (err error) { states, err = bridgePortStates(); return err }); err != nil {
				return fmt.Sprintf("%s: bridge port states: %v", n, err)
			}
			for _, br := range brs {
				bl, err := h.LinkByName(br.Name)
				if err != nil {
					return fmt.Sprintf("%s: bridge %s: %v", n, br.Name, err)
				}
				if s := bl.Attrs().OperState; s != netlink.OperUp {
					return fmt.Sprintf("%s: bridge %s is %s", n, br.Name, s)
				}
				for _, port := range br.Ports {
					l, err := h.LinkByName(port)
					if err != nil {
						return fmt.Sprintf("%s: %s: %v", n, port, err)
					}
					if st, ok := states[l.Attrs().Index]; !ok || st != brStateForwarding {
						return fmt.Sprintf("%s: bridge %s port %s is %s", n, br.Name, port, brStateName(st))
					}
				}
			}
			return ""
		}()
		closeH()
		if msg != "" {
			return msg
		}
	}
	return ""
}

// SetForwarding switches the testbed recorded for prefix between "kernel"
// (bridges over the topology's bridge ports) and "none" (bridges deleted,
// ports bare and up, for the dataplane). It waits until the new path is
// ready. Detach any XDP programs from bridge ports before switching to
// "kernel" if they redirect frames away from the bridge.
func SetForwarding(prefix, mode string) error {
	if err := checkForwarding(mode); err != nil {
		return err
	}
	tb, err := Open(prefix)
	if err != nil {
		return err
	}
	switch mode {
	case ForwardingKernel:
		if err := addBridges(prefix, tb.Topology); err != nil {
			return err
		}
		if err := waitReady(prefix, tb.Topology, true); err != nil {
			return err
		}
	case ForwardingNone:
		if err := delBridges(prefix, tb.Topology); err != nil {
			return err
		}
		if err := waitReady(prefix, tb.Topology, false); err != nil {
			return err
		}
	}
	tb.Forwarding = mode
	if err := tb.save(); err != nil {
		return fmt.Errorf("netns: recording forwarding %q in %s: %w", mode, statePath(prefix), err)
	}
	return nil
}

// ownedNamespaces returns the namespaces made by this package for prefix:
// candidates are the names in the recorded topology and every name in
// /run/netns beginning with prefix; a candidate counts only if its lo
// carries exactly the marker "linkfabric:<prefix>", so other prefixes
// ("lf" vs "lfn1") and foreign namespaces are never matched.
func ownedNamespaces(prefix string) ([]string, error) {
	cands := map[string]bool{}
	var order []string
	add := func(n string) {
		if !cands[n] {
			cands[n] = true
			order = append(order, n)
		}
	}
	if tb, err := Open(prefix); err == nil {
		for _, n := range tb.Topology.NamespaceNames(prefix) {
			add(n)
		}
	}
	ents, err := os.ReadDir(RunDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("netns: listing %s: %w", RunDir, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			add(e.Name())
		}
	}
	var out []string
	for _, n := range order {
		if nsExists(n) && isOurs(n, prefix) {
			out = append(out, n)
		}
	}
	return out, nil
}

func isOurs(n, prefix string) bool {
	h, closeH, err := handleFor(n)
	if err != nil {
		return false
	}
	defer closeH()
	lo, err := h.LinkByName("lo")
	return err == nil && lo.Attrs().Alias == markerPrefix+prefix
}

// deleteNamespace unmounts and removes /run/netns/n, as "ip netns del"
// does. The kernel destroys the namespace, and with it its veths (their
// peers too) and bridges, once nothing else holds it: a process still
// running inside (ip netns pids n) or an open fd keeps it alive, invisible.
// Deleting each link first would make that deterministic but costs an RCU
// grace period per link (about a second per testbed).
func deleteNamespace(n string) error {
	if !nsExists(n) {
		return nil
	}
	if err := vnetns.DeleteNamed(n); err != nil {
		return fmt.Errorf("netns %s: ip netns del %s: %w", n, n, err)
	}
	return nil
}

// Down removes every namespace that this package made with prefix (veths
// and bridges go with them) and the testbed record, after stopping the
// processes still running in them (stopLeftovers). It matches names
// exactly (see ownedNamespaces), never touches other prefixes, and is safe
// to run twice or on a prefix that has no testbed.
func Down(prefix string) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	ns, err := ownedNamespaces(prefix)
	if err != nil {
		return err
	}
	stopLeftovers(ns)
	var errs []error
	for i := len(ns) - 1; i >= 0; i-- {
		if err := deleteNamespace(ns[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(statePath(prefix)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("netns: %w", err))
	}
	return errors.Join(errs...)
}
