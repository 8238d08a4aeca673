package dataplane

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
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
	return parseChoice(s, FastPathAFXDP, []FastPath{FastPathAFXDP, FastPathXDP, FastPathAuto},
		"--fastpath %q: want auto (the kernel path where possible), xdp (the kernel path, or fail) or afxdp (through AF_XDP and the worker)", s)
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

// FastDir is one direction of a mode's own kernel path (KernelPath):
// frames received on port From leave on port To.
type FastDir struct {
	From, To int // port numbers
	// Blocked is why the direction stays on AF_XDP for good whatever the
	// ports do ("" if it may take the kernel path).
	Blocked string
	// Hook is the direction's kernel half.
	Hook FastHook
}

// FastHook is the kernel half of a mode's direction. The watcher calls it
// under its lock.
type FastHook interface {
	// Set switches the kernel half on or off.
	Set(on bool) error
	// Counters are what the kernel carried (Forwarded, ForwardedBytes) and
	// what it passed to the worker instead (ForwardMissed).
	Counters() bpf.ProgCounters
}

// KernelPath is the Instance of a mode whose Spec says KernelPath: its
// directions on the fast path are kernel halves of its own rather than
// the port programs' redirect (LinkGuardian's receive and send
// directions). New calls FastDirs, then OpenFast if neither the
// configuration nor the ports rule the kernel path out, then FastReady,
// all before any Pipeline.
type KernelPath interface {
	// FastDirs are the mode's directions, in the order FastPath reports
	// them.
	FastDirs() []FastDir
	// OpenFast readies the directions' kernel halves (xdp: --fastpath xdp
	// asks for the kernel path or failure). It returns why the kernel
	// path cannot run ("" if it can), or an error that fails New.
	OpenFast(xdp bool) (why string, err error)
	// FastReady says whether the kernel path is open (false: out for
	// good, whatever OpenFast did).
	FastReady(on bool)
}

// fastPath runs the XDP fast path (mode forward's, a KernelPath mode's):
// it chooses each direction's path, re-checks it while the dataplane runs,
// and folds the frames the kernel carried into the ports' counters. It
// owns no frame.
type fastPath struct {
	log      *slog.Logger
	counters []PortCounters
	features *bpf.FeatureReader // nil: the kernel path is out for good
	ns       netns.NsHandle     // the ports' namespace, for link updates

	mu      sync.Mutex // everything below; the watcher and Stats
	dirs    []fastDir
	started bool // the first choice is made: log changes (FastPath reports the first)
	closed  bool
}

// fastDir is one direction, frames received on from leaving on to.
type fastDir struct {
	from, to int // port numbers
	src, dst *Port
	hook     FastHook // the mode's kernel half (KernelPath), nil for forward's redirect
	// blocked is why the direction stays on AF_XDP for good whatever the
	// ports do ("" if it may take the kernel path).
	blocked string
	on      bool
	reason  string
	changes uint64
	seen    bpf.ProgCounters // src's program counters when last folded
}

// newFastPath sets up the fast path in the calling thread's network
// namespace (the ports'): mode forward's two directions (Spec.Redirect),
// or those of a mode with a kernel path of its own (Spec.KernelPath). A
// reason in the configuration that rules the kernel path out fails New
// with FastPathXDP and leaves the directions on AF_XDP otherwise, each
// with its reason (Stats, the log).
func (d *Dataplane) newFastPath() error {
	cfg := &d.cfg
	s := cfg.spec()
	if !s.Redirect && !s.KernelPath {
		if cfg.FastPath == FastPathXDP {
			return fmt.Errorf("dataplane: --fastpath xdp: mode %s has no XDP fast path (%s has, and %s); use --fastpath auto or afxdp",
				cfg.Mode, joinModes(func(s *Spec) bool { return s.Redirect }), joinModes(func(s *Spec) bool { return s.KernelPath }))
		}
		return nil
	}
	f := &fastPath{log: cfg.Logger, counters: d.stats.Ports, ns: netns.None()}
	var kp KernelPath
	if s.KernelPath {
		var ok bool
		if kp, ok = d.inst.(KernelPath); !ok {
			return fmt.Errorf("dataplane: mode %s: its instance has no kernel path", cfg.Mode)
		}
		for _, dir := range kp.FastDirs() {
			f.dirs = append(f.dirs, fastDir{from: dir.From, to: dir.To, src: d.all[dir.From], dst: d.all[dir.To], hook: dir.Hook, blocked: dir.Blocked})
		}
	} else {
		h, l := d.ports.Host, d.ports.Links[0]
		f.dirs = []fastDir{{from: h, to: l, src: d.all[h], dst: d.all[l]}, {from: l, to: h, src: d.all[l], dst: d.all[h]}}
	}
	d.fast = f
	why := d.fastBlocked()
	if why == "" && kp != nil {
		var err error
		if why, err = kp.OpenFast(cfg.FastPath == FastPathXDP); err != nil {
			return err
		}
	}
	if why == "" {
		why = f.open()
	}
	if why != "" && f.features != nil {
		f.features.Close()
		f.features = nil
	}
	if kp != nil {
		kp.FastReady(why == "")
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

// fastBlocked is why the configuration or the ports rule the kernel path
// out ("" if nothing does).
func (d *Dataplane) fastBlocked() string {
	cfg := &d.cfg
	if why := cfg.FastPathBlocked(); why != "" {
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

// FastPathBlocked is why the configuration alone rules the kernel path out
// ("" if nothing does): the engine's reasons, then the mode's
// (Spec.FastBlocked).
func (c *Config) FastPathBlocked() string {
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
	}
	if f := c.spec().FastBlocked; f != nil {
		if why := f(c); why != "" {
			return why
		}
	}
	for _, name := range c.portNames() {
		if s, ok := c.Shape[name]; ok && s.Rate > 0 {
			return fmt.Sprintf("%s has a rate limit (--port-rate), which only the AF_XDP path applies", name)
		}
	}
	return ""
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
			if dir.hook != nil {
				set = dir.hook.Set
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
// forward counters, or the mode's kernel half's.
func (dir *fastDir) counters() (bpf.ProgCounters, error) {
	if dir.hook != nil {
		return dir.hook.Counters(), nil
	}
	return dir.src.prog.Counters()
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

// subscribeLinks subscribes to the link updates of namespace ns. Entering
// ns (setns) needs CAP_SYS_ADMIN even when the thread is in it already, so
// a thread already there subscribes where it is: a dataplane with only its
// capabilities (docs/run.md) gets its notifications too.
func subscribeLinks(sub chan netlink.LinkUpdate, done chan struct{}, ns netns.NsHandle) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	opts := netlink.LinkSubscribeOptions{Namespace: &ns}
	if cur, err := netns.Get(); err == nil {
		if cur.Equal(ns) {
			opts.Namespace = nil
		}
		cur.Close()
	}
	return netlink.LinkSubscribeWithOptions(sub, done, opts)
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
	if err := subscribeLinks(sub, done, ns); err != nil {
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
