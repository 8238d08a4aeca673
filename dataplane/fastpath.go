package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/linkcrc"
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
	// FastPathXDP redirects frames port to port in the kernel (the port
	// program's bpf_redirect_map through a devmap). New fails when the
	// configuration rules that out (a mode without a kernel path, generic
	// XDP, busy poll, a rate limit, a kernel without XDP features, for
	// LinkGuardian an unprotected receive direction); otherwise it is
	// FastPathAuto.
	FastPathXDP FastPath = "xdp"
	// FastPathAuto uses the kernel path where the configuration allows it,
	// direction by direction: one whose target is down or cannot take
	// redirected frames (a veth whose peer has neither an XDP program, yet,
	// nor GRO on) goes through AF_XDP until it can, re-checked every
	// fastCheckEvery and at once when a port's link changes.
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

// FastPathSnapshot is one direction of mode forward: which path its frames
// take now and what the kernel path has carried.
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

// fastPath runs mode forward's XDP fast path: it chooses each direction's
// path, re-checks it while the dataplane runs, and folds the frames the
// kernel forwarded into the ports' counters. It owns no frame.
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
	on       bool
	reason   string
	changes  uint64
	seen     bpf.PortCounters // src's program counters when last folded
}

// newFastPath sets up mode forward's fast path in the calling thread's
// network namespace (the ports'). A reason in the configuration that rules
// the kernel path out fails New with FastPathXDP and leaves the directions
// on AF_XDP otherwise.
func (d *Dataplane) newFastPath() error {
	cfg := &d.cfg
	// Not Mode.linkGuardian: that includes test modes on other ports.
	lg := cfg.Mode == ModeLG || cfg.Mode == ModeLGNB || cfg.Mode == ModeMonitor
	if cfg.Mode != ModeForward && !lg {
		if cfg.FastPath == FastPathXDP {
			return fmt.Errorf("dataplane: --fastpath xdp: mode %s has no XDP fast path (forward has, and lg, lgnb and monitor for the frames they receive); use --fastpath auto or afxdp", cfg.Mode)
		}
		return nil
	}
	h, l := d.ports.Host, d.ports.Links[0]
	f := &fastPath{log: cfg.Logger, counters: d.stats.Ports, ns: netns.None()}
	fromLink := fastDir{from: l, to: h, src: d.all[l], dst: d.all[h]}
	if lg && cfg.lgTxWanted() {
		f.dirs = []fastDir{fromLink, {from: h, to: l, src: d.all[h], dst: d.all[l]}}
	} else if lg {
		f.dirs = []fastDir{fromLink}
	} else {
		f.dirs = []fastDir{{from: h, to: l, src: d.all[h], dst: d.all[l]}, fromLink}
	}
	d.fast = f
	why := d.fastBlocked()
	if why == "" && lg {
		why = f.openLG(cfg.LG.Integrity)
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

// lgTxWanted says whether LinkGuardian's send fast path may run: asked for
// (LGConfig.FastSend) with the kernel path (--fastpath xdp; auto keeps lg
// in the worker) in a LinkGuardian mode protecting both directions on one
// host port and one link port. The ports are then attached with what it needs (dataplane.go); the
// other conditions (fastBlocked) fail New.
func (c *Config) lgTxWanted() bool {
	lg := c.Mode == ModeLG || c.Mode == ModeLGNB || c.Mode == ModeMonitor
	return lg && c.LG.FastSend && c.FastPath == FastPathXDP && (c.LG.Protect == "" || c.LG.Protect == "both") &&
		len(c.portNames()) == 2
}

// fastBlocked is why the configuration rules the kernel path out ("" if
// nothing does).
func (d *Dataplane) fastBlocked() string {
	cfg := &d.cfg
	switch {
	case cfg.FastPath == FastPathAFXDP:
		return "--fastpath afxdp"
	case cfg.Workers > 1:
		return fmt.Sprintf("--workers %d runs one AF_XDP worker per queue; the kernel fast path is single-worker", cfg.Workers)
	case cfg.BusyPoll:
		return "--busy-poll asks for the AF_XDP path (it polls the sockets)"
	case cfg.PFC.Enabled:
		// The devmap redirect has no queue to hold a paused class in and
		// no occupancy to send XOFF from: per-class PFC needs the worker.
		return "--pfc queues host frames per class in the worker (the kernel path has no queues to pause)"
	case cfg.Mode != ModeForward && cfg.FastPath == FastPathAuto:
		// Measured on the 2-core veth testbed (docs/results.md): the
		// kernel receive path cuts short flows' p50 FCT by 14 %, but it
		// runs the receiving host's stack in the softirq of the sending
		// switch's worker, the bottleneck while the send side is in Go:
		// bulk TCP goodput fell from 2.4 to 1.3 Gbit/s (2.0 without the
		// CRC check). Until the send side is in the kernel too, it is
		// asked for.
		return "--fastpath auto keeps lg's receive path in the worker (the kernel receive path trades bulk goodput for short-flow latency while the send side is in Go); --fastpath xdp turns it on"
	case cfg.Mode != ModeForward && cfg.LG.Protect == "tx":
		return "the link's frames toward this end are not sequenced (--protect without rx): nothing for the kernel path to judge"
	}
	for _, p := range d.all {
		if s, ok := cfg.Shape[p.Name]; ok && s.Rate > 0 {
			return fmt.Sprintf("%s has a rate limit (--port-rate), which only the AF_XDP path applies", p.Name)
		}
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
	if len(f.dirs) < 2 {
		return ""
	}
	// The send direction: the host port's program numbers and stamps host
	// frames, and seals them with the trailer the link's frames carry.
	host := f.dirs[1].src.prog
	t, err := host.LGTx()
	if err != nil {
		return err.Error()
	}
	if err := host.SetLGRxIntegrity(integrity); err != nil {
		return err.Error()
	}
	// A veth puts a frame redirected into it on the peer's RX queue
	// smp_processor_id() % its queues (veth_select_rxq), and the receive
	// fast path serves queue 0 only. On a link of one queue (the testbeds'
	// LinkQueues 1) every frame the kernel sends lands there, from any
	// CPU. On a link of n > 1 queues the kernel sends only on CPUs that are
	// a multiple of n and declines on the others (SetLGTxCPUs), which
	// halves what it sends on the 2-core pair, as measured (28-40 % of the
	// frames, sending changing hands per declined frame); with every CPU
	// allowed, 57 678 of 103 496 frames reached sw2's link0 on queue 1 and
	// the peer took the split for holes (19 % of the frames asked for
	// again). A NIC's redirect leaves on the CPU's XDP TX queue: steering
	// the host port's frames to one CPU (a cpumap running lf_lg_tx) would
	// serve any queue count; not built.
	if n := f.dirs[1].dst.queues; n > 1 {
		f.log.Warn("LinkGuardian's send fast path on a link of several queues sends only from some CPUs; a link of one queue lets it send from all",
			"dev", f.dirs[1].dst.Name, "queues", n)
	}
	if err := host.SetLGTxCPUs(f.dirs[1].dst.queues); err != nil {
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
	if f == nil || f.lgTx == nil || f.features == nil {
		return nil
	}
	t := f.lgTx
	return &linkguardian.FastSend{State: t.State(), Limit: t.Limit(), LastNs: t.LastNs(), PiggyAck: t.PiggyAck(),
		WantWake: t.WantWake(), Sent: t.Sent(), Declined: t.Declined(), Missed: t.Missed(), Wakeups: t.Wakeups(),
		ToGo: t.ToGo(), Consumed: t.Consumed(), Ring: t.Ring(), Slots: t.Slots(), SlotSize: bpf.LGTxSlotSize,
		Credit: t.Credit(), WakeMoves: t.WakeMoves(), Widened: t.Widened(),
		DeclinedWindow: t.DeclinedWindow(), DeclinedUnread: t.DeclinedUnread()}
}

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
func (dir *fastDir) counters() (bpf.PortCounters, error) {
	if dir.lgTx != nil {
		// Frames the kernel numbered and sent; Missed: frames it passed
		// to the core having taken them (lost swaps) or for want of room
		// in the header or trailer (dropped).
		c := dir.lgTx.Counters()
		return bpf.PortCounters{Forwarded: c.Sent, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed + c.StampErr}, nil
	}
	if dir.lg == nil {
		return dir.src.prog.Counters()
	}
	c := dir.lg.Counters()
	return bpf.PortCounters{Forwarded: c.Frames, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed}, nil
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
