package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// FastPath is how mode forward moves frames between its two ports, and how
// modes lg, lgnb and monitor deliver the in-order frames they receive from
// the link (LinkGuardian's receive fast path: the kernel delivers the next
// frame expected while nothing needs the core; linkguardian/fastrx.go) and
// send host frames onto it (its send fast path: the kernel numbers, copies,
// stamps and sends host frames while it owns sending;
// linkguardian/fasttx.go).
type FastPath string

const (
	// FastPathAFXDP sends every frame through the AF_XDP sockets and the
	// worker. It is what the zero value means.
	FastPathAFXDP FastPath = "afxdp"
	// FastPathXDP runs FastPathAuto's kernel path or fails: New fails when
	// the configuration or a port rules it out (a mode without a kernel
	// path, generic XDP, busy poll, a rate limit, a kernel without XDP
	// features, for LinkGuardian an unprotected receive direction or a
	// link port of several queues), naming the port and the fix.
	FastPathXDP FastPath = "xdp"
	// FastPathAuto (linkfabric run's default) uses the kernel path where
	// the configuration allows it, direction by direction: forward's
	// redirect port to port (the port program's bpf_redirect_map through
	// a devmap), LinkGuardian's receive fast path, and its send fast path
	// where this end sequences what it sends on a link of one queue
	// (lgTxBlocked). A direction that cannot take it says why (Stats, the
	// log); one whose target is down or cannot take redirected frames (a
	// veth whose peer has neither an XDP program, yet, nor GRO on) goes
	// through AF_XDP until it can, re-checked every fastCheckEvery and at
	// once when a port's link changes.
	FastPathAuto FastPath = "auto"
)

// ParseFastPath parses the --fastpath flag ("" is FastPathAFXDP).
func ParseFastPath(s string) (FastPath, error) {
	switch f := FastPath(s); f {
	case "":
		return FastPathAFXDP, nil
	case FastPathAFXDP, FastPathXDP, FastPathAuto:
		return f, nil
	}
	return "", fmt.Errorf("--fastpath %q: want auto (the kernel path where possible), xdp (the kernel path, or fail) or afxdp (through AF_XDP and the worker)", s)
}

// fastCheckEvery is how often the fast path re-checks its directions: the
// targets' XDP features (a veth's peer may lose its XDP program or GRO),
// their link state, and the counters it folds into the ports'.
const fastCheckEvery = 100 * time.Millisecond

// FastPathSnapshot is one direction of the fast path (mode forward's, or
// LinkGuardian's receive and send directions): which path its frames take
// now, why not the kernel's, and what the kernel path has carried.
type FastPathSnapshot struct {
	From string   `json:"from"`
	To   string   `json:"to"`
	Path FastPath `json:"path"` // xdp or afxdp
	// Reason is why the direction is on AF_XDP ("" on xdp).
	Reason string `json:"reason,omitempty"`
	// Frames and Bytes were redirected in the kernel; Missed found no
	// forward port there and went through AF_XDP.
	Frames uint64 `json:"xdp_frames"`
	Bytes  uint64 `json:"xdp_bytes"`
	Missed uint64 `json:"xdp_missed"`
	// Changes counts switches between the paths since the start.
	Changes uint64 `json:"changes"`
}

// fastPath runs the XDP fast path (mode forward's, LinkGuardian's): it
// chooses each direction's path, re-checks it while the dataplane runs, and
// folds the frames the kernel carried into the ports' counters. It owns no
// frame.
type fastPath struct {
	log      *slog.Logger
	counters []PortCounters
	features *bpf.FeatureReader // nil: the kernel path is out for good
	ns       netns.NsHandle     // the ports' namespace, for link updates

	mu      sync.Mutex // everything below; the watcher and Stats
	dirs    []fastDir
	started bool // the first choice is made: log changes (FastPath reports the first)
	closed  bool

	// LinkGuardian's receive fast path (modes lg, lgnb, monitor): the
	// shared state, and whether the kernel judges frames now (the
	// worker hands the in-order point over only then).
	lgRx   *bpf.LGRx
	lgLive atomic.Bool
	// LinkGuardian's send fast path (the host port's program): the
	// shared state, and whether the kernel sends host frames now (the
	// worker hands sending over only then).
	lgTx     *bpf.LGTx
	lgTxLive atomic.Bool
}

// fastDir is one direction, frames received on from leaving on to.
type fastDir struct {
	from, to int // port numbers
	src, dst *Port
	lg       *bpf.LGRx // LinkGuardian's receive direction (SetLGRx), nil for forward's
	lgTx     *bpf.LGTx // LinkGuardian's send direction (SetLGTx), nil for forward's
	// blocked is why the direction stays on AF_XDP for good whatever the
	// ports do ("" if it may take the kernel path).
	blocked string
	on      bool
	reason  string
	changes uint64
	seen    bpf.ProgCounters // src's program counters when last folded
}

// newFastPath sets up the fast path in the calling thread's network
// namespace (the ports'): mode forward's two directions, or LinkGuardian's
// receive direction and its send direction. A reason in the configuration
// that rules the kernel path out fails New with FastPathXDP and leaves the
// directions on AF_XDP otherwise, each with its reason (Stats, the log).
func (d *Dataplane) newFastPath() error {
	cfg := &d.cfg
	// Not Mode.linkGuardian: that includes test modes on other ports.
	lg := cfg.Mode == ModeLG || cfg.Mode == ModeLGNB || cfg.Mode == ModeMonitor
	if cfg.Mode != ModeForward && !lg {
		if cfg.FastPath == FastPathXDP {
			return fmt.Errorf("dataplane: --fastpath xdp: mode %s has no XDP fast path (forward has, and lg, lgnb and monitor); use --fastpath auto or afxdp", cfg.Mode)
		}
		return nil
	}
	h, l := d.ports.Host, d.ports.Links[0]
	f := &fastPath{log: cfg.Logger, counters: d.stats.Ports, ns: netns.None()}
	fromLink := fastDir{from: l, to: h, src: d.all[l], dst: d.all[h]}
	toLink := fastDir{from: h, to: l, src: d.all[h], dst: d.all[l]}
	if lg {
		// LinkGuardian's send direction is listed whether or not its
		// kernel half can run here, with the reason when it cannot.
		toLink.blocked = cfg.lgTxWhy
		f.dirs = []fastDir{fromLink, toLink}
	} else {
		f.dirs = []fastDir{toLink, fromLink}
	}
	d.fast = f
	why := d.fastBlocked()
	if why == "" && lg && cfg.FastPath == FastPathXDP && cfg.lgTxFix {
		return fmt.Errorf("dataplane: --fastpath xdp: LinkGuardian's send fast path cannot run: %s; or use --fastpath auto, which leaves the send direction to the worker", cfg.lgTxWhy)
	}
	if why == "" && lg {
		why = f.openLG(cfg.Link.Integrity)
	}
	if why == "" {
		why = f.open()
	}
	if why != "" && f.features != nil {
		f.features.Close()
		f.features = nil
	}
	if why != "" {
		if cfg.FastPath == FastPathXDP {
			return fmt.Errorf("dataplane: --fastpath xdp: %s; use --fastpath auto to fall back to AF_XDP", why)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for i := range f.dirs {
			f.dirs[i].reason = why
		}
		return nil
	}
	f.check()
	f.mu.Lock()
	f.started = true
	f.mu.Unlock()
	return nil
}

// decideLGTx decides, in a LinkGuardian mode, whether its send fast path
// can run (lgTxBlocked) before the ring size is defaulted by it.
func (c *Config) decideLGTx() {
	if c.Mode == ModeLG || c.Mode == ModeLGNB || c.Mode == ModeMonitor {
		queues, qerr := queueCount(c.LinkPort)
		c.lgTxWhy, c.lgTxFix = c.lgTxBlocked(queues, qerr)
	}
}

// lgTxWanted says whether LinkGuardian's send fast path runs: a
// LinkGuardian mode whose configuration allows the kernel path
// (lgTxBlocked, decided by defaults). The ports are then attached with
// what it needs (dataplane.go).
func (c *Config) lgTxWanted() bool {
	lg := c.Mode == ModeLG || c.Mode == ModeLGNB || c.Mode == ModeMonitor
	return lg && c.lgTxWhy == ""
}

// lgTxBlocked is why LinkGuardian's send fast path cannot run on this
// configuration with a link port of queues queues (qerr: they could not be
// counted), "" if it can; fix says that the user can change it on the port
// (--fastpath xdp then fails instead of falling back).
//
// It needs a link of one queue. A redirected frame leaves on a queue the
// CPU picks: a veth puts it on the peer's RX queue smp_processor_id() %
// its queues (veth_xdp_xmit), a NIC on the CPU's XDP TX queue. The far
// end's receive fast path judges queue 0 only, so on a link of two queues
// the kernel's frames from one of the two CPUs reached queue 1, the
// priority lane, and the peer took the split for holes (57 678 of 103 496
// frames there, 19 % of the frames asked for again); sending only from
// the CPUs whose frames land on queue 0 halved what the kernel sent.
// Steering the host port's queue-0 frames to CPU 0 through a cpumap whose
// entry ran the send path (tried on two link queues, interleaved with one
// on a busy machine): the kernel sent every frame and 143-byte flows were
// no slower, but under bulk TCP at loss 0 the far end found 800-1,000
// numbered frames missing per 4 s run against 50-220 on one queue, and
// one run gave up on 297 of them. Not kept.
func (c *Config) lgTxBlocked(queues int, qerr error) (why string, fix bool) {
	if why := c.fastConfigBlocked(); why != "" {
		return why, false
	}
	switch c.lg().Protect {
	case "rx":
		return "--lg-protect rx: this end sends the link's frames unsequenced (the far end protects that direction)", false
	case "tx":
		return "--lg-protect tx: the send fast path piggybacks ACKs of the receive point, which --lg-protect both keeps", false
	}
	if qerr != nil {
		return fmt.Sprintf("cannot count the queues of %s: %v", c.LinkPort, qerr), false
	}
	if queues > 1 {
		return fmt.Sprintf("link port %s has %d queues, and the kernel's frames would reach the far end on the queue of whichever CPU sent them (only queue 0's are judged in the kernel); fix: give it one (ethtool -L %s combined 1 on a NIC, at both ends; linkfabric up --link-queues 1 on a testbed)",
			c.LinkPort, queues, c.LinkPort), true
	}
	return "", false
}

// fastBlocked is why the configuration or the ports rule the kernel path
// out ("" if nothing does).
func (d *Dataplane) fastBlocked() string {
	cfg := &d.cfg
	if why := cfg.fastConfigBlocked(); why != "" {
		return why
	}
	for _, p := range d.all {
		if m := p.prog.Mode(); m != bpf.XDPNative {
			why := fmt.Sprintf("XDP on %s runs in %s mode; redirecting port to port needs native XDP", p.Name, m)
			if r := p.prog.FallbackReason(); r != nil {
				why += fmt.Sprintf(" (native failed: %v)", r)
			}
			return why
		}
	}
	return ""
}

// fastConfigBlocked is why the configuration alone rules the kernel path
// out ("" if nothing does).
func (c *Config) fastConfigBlocked() string {
	switch {
	case c.FastPath == FastPathAFXDP:
		return "--fastpath afxdp"
	case c.Workers > 1:
		return fmt.Sprintf("--workers %d runs one AF_XDP worker per queue; the kernel fast path is single-worker", c.Workers)
	case c.BusyPoll:
		return "--busy-poll asks for the AF_XDP path (it polls the sockets)"
	case c.PFC.Enabled:
		// The devmap redirect has no queue to hold a paused class in and
		// no occupancy to send XOFF from: per-class PFC needs the worker.
		return "--pfc queues host frames per class in the worker (the kernel path has no queues to pause)"
	case c.Mode != ModeForward && c.lg().Protect == "tx":
		return "the link's frames toward this end are not sequenced (--lg-protect without rx): nothing for the kernel path to judge"
	}
	for _, name := range c.portNames() {
		if s, ok := c.Shape[name]; ok && s.Rate > 0 {
			return fmt.Sprintf("%s has a rate limit (--port-rate), which only the AF_XDP path applies", name)
		}
	}
	return ""
}

// openLG maps LinkGuardian's receive state shared with the link port's
// program; it returns why the kernel path is impossible ("" when it is
// possible).
func (f *fastPath) openLG(integrity linkcrc.Integrity) string {
	prog := f.dirs[0].src.prog
	s, err := prog.LGRx()
	if err != nil {
		return err.Error()
	}
	// The kernel checks and removes the trailer of what it delivers; a
	// frame that fails goes to the worker, which counts and drops it.
	if err := prog.SetLGRxIntegrity(integrity); err != nil {
		return err.Error()
	}
	f.lgRx, f.dirs[0].lg = s, s
	if f.dirs[1].blocked != "" {
		return ""
	}
	// The send direction: the host port's program numbers and stamps host
	// frames, and seals them with the trailer the link's frames carry (on
	// a link of one queue: lgTxBlocked).
	host := f.dirs[1].src.prog
	t, err := host.LGTx()
	if err != nil {
		return err.Error()
	}
	if err := host.SetLGRxIntegrity(integrity); err != nil {
		return err.Error()
	}
	f.lgTx, f.dirs[1].lgTx = t, t
	return ""
}

// lgTxAck says whether the send fast path piggybacks the receive point's
// serial - 1 as its ACK (the receiver keeps it current when connected).
func (f *fastPath) lgTxAck(on bool) error {
	return f.dirs[1].src.prog.SetLGTxAck(on)
}

// lgSend is the send fast path's shared state for the LinkGuardian core,
// nil when there is none or the kernel path is out for good.
func (f *fastPath) lgSend() *linkguardian.FastSend {
	if !f.lgSends() {
		return nil
	}
	t := f.lgTx
	return &linkguardian.FastSend{State: t.State(), Limit: t.Limit(), LastNs: t.LastNs(), PiggyAck: t.PiggyAck(),
		WantWake: t.WantWake(), Sent: t.Sent(), Declined: t.Declined(), Missed: t.Missed(), Wakeups: t.Wakeups(),
		ToGo: t.ToGo(), Consumed: t.Consumed(), Ring: t.Ring(), Slots: t.Slots(), SlotSize: bpf.LGTxSlotSize,
		Credit: t.Credit(), WakeMoves: t.WakeMoves(), Widened: t.Widened(),
		DeclinedWindow: t.DeclinedWindow(), DeclinedUnread: t.DeclinedUnread()}
}

// lgSends reports whether LinkGuardian's send fast path runs (lgSend is
// not nil).
func (f *fastPath) lgSends() bool { return f != nil && f.lgTx != nil && f.features != nil }

// lgPoint is the receive fast path's shared state for the LinkGuardian
// core, nil when the kernel path is out for good.
func (f *fastPath) lgPoint() *linkguardian.FastPoint {
	if f == nil || f.lgRx == nil || f.features == nil {
		return nil
	}
	return &linkguardian.FastPoint{Point: f.lgRx.Point(), PeerAck: f.lgRx.PeerAck(), Adopted: f.lgRx.Adopted(), AckEvery: f.lgRx.AckEvery()}
}

// open gets what the watcher needs and gives each program its forward port;
// it returns why the kernel path is impossible ("" when it is possible).
func (f *fastPath) open() string {
	var err error
	if f.features, err = bpf.NewFeatureReader(); err != nil {
		return err.Error()
	}
	if f.ns, err = netns.Get(); err != nil {
		f.ns = netns.None()
		f.log.Warn("fast path: cannot hold the network namespace; link changes are noticed by polling only", "err", err)
	}
	for _, dir := range f.dirs {
		if err := dir.src.prog.SetForwardPort(dir.dst.prog.Ifindex()); err != nil {
			return err.Error()
		}
	}
	return ""
}

// usable says whether the kernel can carry dir now, and if not why.
func (f *fastPath) usable(dir *fastDir) (bool, string) {
	if !dir.dst.running() {
		return false, dir.dst.Name + " is down"
	}
	src, err := f.features.Features(dir.src.prog.Ifindex())
	if err != nil {
		return false, err.Error()
	}
	if src&bpf.XDPRedirect == 0 {
		return false, fmt.Sprintf("the driver of %s cannot redirect from XDP (features %v)", dir.src.Name, src)
	}
	dst, err := f.features.Features(dir.dst.prog.Ifindex())
	if err != nil {
		return false, err.Error()
	}
	if !dst.AcceptsRedirect() {
		return false, fmt.Sprintf("%s does not accept redirected frames (XDP features %v): a driver without ndo_xdp_xmit, or a veth whose peer has neither GRO on (ethtool -K PEER gro on) nor an XDP program", dir.dst.Name, dst)
	}
	return true, ""
}

// check re-decides every direction's path and applies changes.
func (f *fastPath) check() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.features == nil {
		return
	}
	for i := range f.dirs {
		dir := &f.dirs[i]
		if dir.blocked != "" {
			dir.reason = dir.blocked
			continue
		}
		on, why := f.usable(dir)
		if on != dir.on {
			set := dir.src.prog.SetFast
			switch {
			case dir.lg != nil:
				set = dir.src.prog.SetLGRx
			case dir.lgTx != nil:
				set = dir.src.prog.SetLGTx
			}
			if err := set(on); err != nil {
				if dir.on {
					f.log.Warn("fast path: cannot switch to AF_XDP; trying again", "from", dir.src.Name, "to", dir.dst.Name, "reason", why, "err", err)
					continue
				}
				on, why = false, err.Error()
			}
		}
		if on == dir.on && why == dir.reason {
			continue
		}
		if on != dir.on {
			dir.changes++
		}
		dir.on, dir.reason = on, why
		if dir.lg != nil {
			f.lgLive.Store(on)
		}
		if dir.lgTx != nil {
			f.lgTxLive.Store(on)
		}
		if !f.started {
			continue
		}
		if on {
			f.log.Info("fast path", "from", dir.src.Name, "to", dir.dst.Name, "path", FastPathXDP)
		} else {
			f.log.Warn("fast path", "from", dir.src.Name, "to", dir.dst.Name, "path", FastPathAFXDP, "reason", why)
		}
	}
}

// fold adds what the kernel forwarded since the last fold to the ports'
// counters (received on the source, sent on the target).
func (f *fastPath) fold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || f.features == nil { // the kernel path was never on
		return
	}
	for i := range f.dirs {
		dir := &f.dirs[i]
		if dir.blocked != "" {
			continue
		}
		c, err := dir.counters()
		if err != nil {
			continue
		}
		frames, bytes := c.Forwarded-dir.seen.Forwarded, c.ForwardedBytes-dir.seen.ForwardedBytes
		dir.seen = c
		rx, tx := &f.counters[dir.from].RX, &f.counters[dir.to].TX
		rx.Frames.Add(frames)
		rx.Bytes.Add(bytes)
		tx.Frames.Add(frames)
		tx.Bytes.Add(bytes)
	}
}

// counters reads what the kernel carried in dir: the port program's
// forward counters, or LinkGuardian's deliveries (as Forwarded; passed
// to the core for want of a redirect as ForwardMissed).
func (dir *fastDir) counters() (bpf.ProgCounters, error) {
	if dir.lgTx != nil {
		// Frames the kernel numbered and sent; Missed: frames it passed
		// to the core having taken them (lost swaps) or for want of room
		// in the header or trailer (dropped).
		c := dir.lgTx.Counters()
		return bpf.ProgCounters{Forwarded: c.Sent, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed + c.StampErr}, nil
	}
	if dir.lg == nil {
		return dir.src.prog.Counters()
	}
	c := dir.lg.Counters()
	return bpf.ProgCounters{Forwarded: c.Frames, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed}, nil
}

// snapshot returns the directions (after a fold).
func (f *fastPath) snapshot() []FastPathSnapshot {
	f.fold()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FastPathSnapshot, 0, len(f.dirs))
	for _, dir := range f.dirs {
		s := FastPathSnapshot{From: dir.src.Name, To: dir.dst.Name, Path: FastPathAFXDP, Reason: dir.reason,
			Frames: dir.seen.Forwarded, Bytes: dir.seen.ForwardedBytes, Missed: dir.seen.ForwardMissed, Changes: dir.changes}
		if dir.on {
			s.Path, s.Reason = FastPathXDP, ""
		}
		out = append(out, s)
	}
	return out
}

// watch re-checks the directions every fastCheckEvery and whenever one of
// the ports' links changes, folding the counters each time, until ctx ends.
func (f *fastPath) watch(ctx context.Context) {
	if f.features == nil {
		return
	}
	sub := make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	ns := f.ns
	updates := sub
	if err := netlink.LinkSubscribeWithOptions(sub, done, netlink.LinkSubscribeOptions{Namespace: &ns}); err != nil {
		f.log.Warn("fast path: no link notifications; link changes are noticed by polling only", "err", err)
		updates, sub = nil, nil
	}
	defer func() {
		close(done)
		if sub != nil && updates != nil {
			for range sub { // until the subscription closes it
			}
		}
	}()
	t := time.NewTicker(fastCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-updates:
			if !ok {
				updates = nil
			}
		case <-t.C:
		}
		f.check()
		f.fold()
	}
}

// close stops the fast path's use of the ports (before they are closed).
func (f *fastPath) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	if f.features != nil {
		f.features.Close()
	}
	if f.ns.IsOpen() {
		f.ns.Close()
	}
}
