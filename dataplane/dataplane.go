// Package dataplane owns a node's ports (0 to 16 host ports and 1 to 16 link
// ports; most modes take one of each, cells any), moves frames between them
// through AF_XDP with one shared UMEM, and runs the pipeline of the mode on
// them. It runs forward (a plain L2 bump in the wire) itself; the other
// modes register from their own packages (Register): LinkGuardian's lg,
// lgnb and monitor (linkguardian/lgpipe), cells (cellify/cellspipe), fec
// (fec/fecpipe), which share link/linkpipe. A port may have a rate limit
// and an egress buffer (shaper.go). It does not talk netlink or build
// testbeds.
//
// One worker loop (worker.go) owns every ring; a Pipeline (forward.go, or a
// mode's package) owns no loop, socket or timer. The hot path makes no
// per-frame allocation, takes no lock and uses no Go timer: it receives a
// batch, runs it through the pipeline, places what the pipeline sends on
// the TX rings (priority lanes first), kicks, reclaims completions and
// refills the fill rings, all from one goroutine locked to its OS thread.
// With Config.Workers > 1 there is one such worker per queue, each with
// its own UMEM and pipeline (workers.go: the design, and the plan for 16
// queues on a real NIC).
package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// Mode is the pipeline a link runs: a name under which a Spec is
// registered (Register).
type Mode string

// Config configures a Dataplane. Zero fields take the defaults.
type Config struct {
	// HostPort is the interface facing the host (frames leave here as the
	// host sent them); "" for a node without one (a fabric node).
	// HostPorts lists several (mode cells); HostPort alone stands for
	// HostPorts = [HostPort], and New sets it to the first host port.
	HostPort  string
	HostPorts []string
	// LinkPorts are the interfaces facing links to other nodes, in the
	// order the pipeline numbers them (Ports). LinkPort alone stands for
	// LinkPorts = [LinkPort]; New sets it to the first link port.
	LinkPorts []string
	LinkPort  string
	// Shape limits a port's egress (rate, buffer), by interface name.
	Shape map[string]PortShape
	// Netns names the ports' network namespace in error messages (the
	// dataplane runs in the calling thread's namespace whatever it says).
	Netns string
	Mode  Mode

	// FastPath is how modes forward, lg, lgnb and monitor move frames: the
	// kernel where it can, direction by direction (FastPathAuto,
	// linkfabric run's default), the kernel or fail (FastPathXDP), or
	// AF_XDP and the worker (FastPathAFXDP, the zero value). Other modes
	// take only auto or afxdp and use AF_XDP (fastpath.go).
	FastPath FastPath

	// ZeroCopy is how the AF_XDP sockets bind: auto (the zero value:
	// zero-copy where every port allows it, else copy, logged), on or off.
	ZeroCopy ZeroCopy
	// NoNeedWakeup binds without XDP_USE_NEED_WAKEUP (--need-wakeup=false):
	// every TX kick is then a syscall even when the driver is already
	// sending, and a zero-copy driver polls its fill ring without being
	// asked to. In copy mode the kernel needs a syscall per kick either way.
	NoNeedWakeup bool

	// Workers is how many worker loops run (workers.go), each on its own
	// locked OS thread, worker i owning queue i of every port with its own
	// UMEM and its own pipeline (a LinkGuardian instance per lane). Every
	// port needs at least Workers RX and TX queues. Default 1: one worker
	// owns every queue (and a link port's queue 1 is the priority lane).
	// More than one runs modes forward, lg, lgnb and monitor on AF_XDP
	// only (no kernel fast path, no --pfc, no --port-rate).
	Workers int

	// BusyPoll spins on the rings instead of sleeping in poll(2): lower
	// latency, but it keeps one core busy.
	BusyPoll bool
	// XDPMode is how the XDP programs attach (auto: native, else generic).
	XDPMode bpf.AttachMode
	// FrameSize is the UMEM frame size, a power of two from 2048 to 65536.
	// Default (0): what the ports' largest MTU needs, 4096 (frames up to
	// 3840 bytes) up to MTU 3826, 16384 at MTU 9000. A frame larger than a
	// page is multi-buffer (multibuf.go): the kernel hands a received frame
	// over in page-sized pieces that the worker copies together.
	FrameSize uint32
	// FrameCount is the number of UMEM frames shared by all ports. By
	// default it is sized per queue: FramesPerQueue for every AF_XDP
	// socket (a receive queue of a port) plus what the mode's buffers and
	// the egress queues hold (checkSizes). Give FrameCount or
	// FramesPerQueue, not both.
	FrameCount uint32
	// FramesPerQueue is each socket's share of a defaulted UMEM: its fill
	// ring, kept full, and a ring's worth of frames in flight on its RX,
	// TX and completion rings. Default 2 × RingSize (3 × in mode cells,
	// whose nodes allocate every cell and delivery, and whose bursts fill
	// every RX ring while the fill rings stay full). At least RingSize.
	FramesPerQueue uint32
	// RingSize is the size of each AF_XDP ring. Default 2048, or the
	// mode's (Spec.Prepare: 4096 with LinkGuardian's send fast path).
	RingSize uint32
	// Batch is the most frames moved per ring operation. Default 256.
	Batch int
	// TxBudget raises how many frames one TX kick (sendto) may move in copy
	// mode (XDP_MAX_TX_SKB_BUDGET, Linux 6.17+; the kernel's default is 32).
	// Default 256 (measured: +10% TCP throughput on veth); a kernel without
	// the option keeps 32, with a warning. Negative leaves the kernel default.
	TxBudget int
	// Nice is the worker thread's nice value (-20..19); 0 leaves it alone.
	// A negative one gives the worker a larger share of cores it shares
	// with applications. (Measured on 2 cores under iperf3: -10 did not
	// shorten the retransmission delay, which is mostly CPU waiting.) Needs
	// CAP_SYS_NICE; without it the worker keeps its inherited priority,
	// with a warning.
	Nice int
	// PollTimeout bounds how long the worker sleeps in poll(2) when idle.
	// Default 50ms (it only delays noticing cancellation).
	PollTimeout time.Duration

	// Link is what every mode but forward shares about its link ports:
	// the integrity check, the peer's MAC and the link's speed.
	Link LinkConfig
	// mechs are the mechanisms' own configurations, each under its name
	// (Mech): LinkGuardian's "lg" (modes lg, lgnb, monitor, the link
	// session of fec and the layers under the cells), "cells" and "fec".
	// The engine stores them, copies them with the Config, and never reads
	// them.
	mechs mechConfigs
	// PFC configures per-class PFC toward the host port (hostpfc.go).
	PFC PFCConfig

	Logger *slog.Logger

	autoFrames bool // FrameCount was defaulted: checkSizes may raise it
	// integrityWhy is why --integrity auto resolved as it did (New logs it).
	integrityWhy string
}

func (c *Config) defaults() error {
	if c.Mode == "" {
		c.Mode = defaultMode
	}
	var err error
	if c.FastPath, err = ParseFastPath(string(c.FastPath)); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	if err := c.checkPorts(); err != nil {
		return err
	}
	if err := c.checkWorkers(); err != nil {
		return err
	}
	if c.FrameSize == 0 {
		// The ports are looked up in the calling thread's namespace (New
		// has locked it); one not found is New's error to report.
		c.FrameSize = fitFrameSize(PortsMaxMTU(c.portNames()))
	}
	c.resolveIntegrity()
	if f := c.spec().Prepare; f != nil {
		f(c)
	}
	if c.RingSize == 0 {
		c.RingSize = 2048
	}
	if c.ZeroCopy, err = ParseZeroCopy(string(c.ZeroCopy)); err != nil {
		return fmt.Errorf("dataplane: %w", err)
	}
	switch {
	case c.FrameCount != 0 && c.FramesPerQueue != 0:
		return fmt.Errorf("dataplane: --frames %d and --frames-per-queue %d: give one (--frames sets the UMEM's total, --frames-per-queue sizes it by the ports' queues)", c.FrameCount, c.FramesPerQueue)
	case c.FrameCount == 0:
		// checkSizes sets it once the sockets are known.
		c.autoFrames = true
		if c.FramesPerQueue == 0 {
			rings := c.spec().QueueRings
			if rings == 0 {
				rings = 2
			}
			c.FramesPerQueue = rings * c.RingSize
		}
	}
	if c.Batch == 0 {
		c.Batch = 256
	}
	if c.TxBudget == 0 {
		c.TxBudget = 256
	}
	c.Link.defaults()
	if f := c.spec().Configure; f != nil {
		if err := f(c); err != nil {
			return err
		}
	}
	if err := c.checkStaticSizes(); err != nil {
		return err
	}
	if err := c.shapeDefaults(); err != nil {
		return err
	}
	if err := c.pfcDefaults(); err != nil {
		return err
	}
	if c.Nice < -20 || c.Nice > 19 {
		return fmt.Errorf("dataplane: nice %d: want a value in [-20, 19]", c.Nice)
	}
	if c.PollTimeout == 0 {
		c.PollTimeout = 50 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Dataplane is a node's running ports. Create it with New, run it with Run,
// release it with Close.
type Dataplane struct {
	cfg  Config
	umem *xdp.Umem // worker 0's (umems[0])
	// umems are the workers' UMEMs, one each: worker i's sockets (queue
	// i, i+Workers, ... of every port) are bound on umems[i].
	umems []*xdp.Umem
	all   []*Port // in the worker's numbering
	ports Ports
	stats Stats

	linkMAC [6]byte
	inst    Instance  // the mode running
	fast    *fastPath // modes with a fast path (Spec.Redirect, KernelPath)
	linkMTU int       // the smallest of the link ports'
	afxdp   AFXDPSnapshot
	// maxChain is the most descriptors a frame of the ports' largest MTU
	// takes on a TX ring (1 unless the UMEM is multi-buffer).
	maxChain int
}

// New attaches the XDP programs and binds the AF_XDP sockets of every port
// in the calling thread's network namespace. On error nothing is left
// behind.
func New(cfg Config) (_ *Dataplane, err error) {
	// Everything below must happen in this thread's network namespace
	// (defaults reads the ports' MTUs).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	d := &Dataplane{cfg: cfg}
	d.cfg.ownMechs() // the workers read it, writing nothing
	defer func() {
		if err != nil {
			d.Close()
		}
	}()

	names := cfg.portNames()
	d.ports = newPorts(len(cfg.HostPorts), len(cfg.LinkPorts))
	d.stats.Ports = make([]PortCounters, len(names))
	d.stats.Workers = make([]WorkerCounters, cfg.Workers)
	for i := range d.stats.Workers {
		d.stats.Workers[i].Ports = make([]WorkerPortCounters, len(names))
	}
	sockets := 0
	for i, ifname := range names {
		role := d.ports.Role(i)
		var opts bpf.PortOptions
		if f := cfg.spec().PortOptions; f != nil {
			f(&cfg, i, role, d.all, &opts)
		}
		p, err := attachPort(role, ifname, &cfg, opts)
		if err != nil {
			return nil, err
		}
		if err := cfg.checkPortQueues(p); err != nil {
			p.close()
			return nil, err
		}
		d.all = append(d.all, p)
		c := &d.stats.Ports[i]
		c.Name, c.Role = ifname, role
		if s, ok := cfg.Shape[ifname]; ok && s.Rate > 0 {
			c.Egress = &EgressCounters{Shape: s}
		}
	}
	// Each worker's UMEM is sized for its own sockets (the most any
	// worker has; with one worker, every socket).
	for i := range cfg.Workers {
		sockets = max(sockets, d.workerSockets(i))
	}
	if err := cfg.checkSizes(sockets); err != nil {
		return nil, err
	}
	d.cfg.FrameCount = cfg.FrameCount // sized for the sockets
	for range cfg.Workers {
		u, err := xdp.NewUmem(xdp.UmemConfig{FrameSize: cfg.FrameSize, FrameCount: cfg.FrameCount})
		if err != nil {
			return nil, err
		}
		d.umems = append(d.umems, u)
	}
	d.umem = d.umems[0]
	d.maxChain = chainLen(d.umem, PortsMaxMTU(names)+EthHeaderLen)
	if d.umem.MultiBuffer() {
		cfg.Logger.Info("jumbo frames: multi-buffer AF_XDP (XDP_USE_SG); frames longer than one kernel buffer are copied together in their UMEM frame",
			"frame_size", cfg.FrameSize, "buffer", d.umem.ChunkSize(), "max_descriptors_per_frame", d.maxChain,
			"umem_mib", uint64(cfg.FrameSize)*uint64(cfg.FrameCount)>>20)
	}
	if err := d.bindSockets(); err != nil {
		return nil, err
	}
	// After the ports: the XDP attach reports a driver's own MTU limit first.
	hostMTUs := []int{0} // a node without a host port checks its links alone
	for i, h := range cfg.HostPorts {
		hi, err := net.InterfaceByName(h)
		if err != nil {
			return nil, fmt.Errorf("dataplane: %s: %w", h, err)
		}
		if i == 0 {
			hostMTUs = hostMTUs[:0]
		}
		hostMTUs = append(hostMTUs, hi.MTU)
	}
	linkMTU := 0 // the smallest
	for _, l := range cfg.LinkPorts {
		li, err := net.InterfaceByName(l)
		if err != nil {
			return nil, fmt.Errorf("dataplane: %s: %w", l, err)
		}
		if linkMTU == 0 || li.MTU < linkMTU {
			linkMTU = li.MTU
		}
		for i, hostMTU := range hostMTUs {
			c := cfg
			c.LinkPort = l
			if len(cfg.HostPorts) > 0 {
				c.HostPort = cfg.HostPorts[i]
			}
			if err := c.checkMTU(hostMTU, li.MTU); err != nil {
				return nil, err
			}
		}
	}
	d.linkMTU = linkMTU
	ifc, err := net.InterfaceByName(cfg.LinkPort)
	if err != nil {
		return nil, fmt.Errorf("dataplane: %s: %w", cfg.LinkPort, err)
	}
	copy(d.linkMAC[:], ifc.HardwareAddr)
	if d.inst, err = cfg.spec().New(d, &d.cfg); err != nil {
		return nil, err
	}
	if err := d.newFastPath(); err != nil {
		return nil, err
	}
	if cfg.integrityWhy != "" {
		cfg.Logger.Info("integrity check of link frames (--integrity auto)", "integrity", cfg.Link.Integrity.String(), "why", cfg.integrityWhy)
	}
	d.logPorts()
	return d, nil
}

// Host is the (first) host port (nil when the node has none).
func (d *Dataplane) Host() *Port {
	if d.ports.Host < 0 {
		return nil
	}
	return d.all[d.ports.Host]
}

// Link is the first link port (the one link port of forward, lg, lgnb and
// monitor).
func (d *Dataplane) Link() *Port { return d.all[d.ports.Links[0]] }

// Port is port number i of the worker's numbering (see Ports).
func (d *Dataplane) Port(i int) *Port { return d.all[i] }

// LinkMAC is the (first) link port's hardware address.
func (d *Dataplane) LinkMAC() [6]byte { return d.linkMAC }

// LinkMTU is the smallest MTU of the link ports.
func (d *Dataplane) LinkMTU() int { return d.linkMTU }

// Ports is the worker's numbering of the ports: what a pipeline calls them.
// The slice it holds is shared: do not modify it.
func (d *Dataplane) Ports() Ports { return d.ports }

// Config is the configuration in force (defaults filled in).
func (d *Dataplane) Config() Config { return d.cfg }

// Run forwards frames until ctx is cancelled. It returns nil on cancellation.
func (d *Dataplane) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Short sleeps in ppoll should wake on time (default slack is 50 µs).
	unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	if n := d.cfg.Nice; n != 0 {
		// On Linux a nice value belongs to a thread: this one, the worker.
		if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), n); err != nil {
			d.cfg.Logger.Warn("cannot change the worker's scheduling priority; it keeps its inherited one (run as root or with CAP_SYS_NICE, or pass --nice 0)",
				"nice", n, "err", err)
		}
	}
	if d.cfg.Workers > 1 {
		return d.runWorkers(ctx)
	}
	w := newWorker(d, 0)
	p, err := d.inst.Pipeline(w)
	if err != nil {
		return err
	}
	if f := d.fast; f != nil {
		wctx, stop := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			f.watch(wctx)
		}()
		defer func() {
			stop()
			<-watched
			f.fold()
		}()
	}
	return w.run(ctx, p)
}

// FastPath reports the directions with a kernel path, mode forward's two
// or a KernelPath mode's own (LinkGuardian's receive and send directions):
// the path each takes now and what the kernel path carried (nil in other
// modes).
func (d *Dataplane) FastPath() []FastPathSnapshot {
	if d.fast == nil {
		return nil
	}
	return d.fast.snapshot()
}

// Close detaches the XDP programs and releases the sockets and the UMEM.
// It is safe to call more than once.
func (d *Dataplane) Close() error {
	if d.inst != nil {
		d.inst.Close()
		d.inst = nil
	}
	if d.fast != nil {
		d.fast.close()
	}
	err := errors.Join(closeEach(d.all, (*Port).close), closeEach(d.umems, (*xdp.Umem).Close))
	d.all, d.umems, d.umem = nil, nil, nil
	return err
}

// checkSizes checks the sizes against each other once the number of AF_XDP
// sockets (receive queues of every port) is known, and sets a defaulted
// FrameCount: FramesPerQueue for each socket, plus one batch and what the
// mode's buffers and the egress queues hold. Each error names the flags
// involved and a value that works.
func (c *Config) checkSizes(sockets int) error {
	// The fill rings are kept full, frames wait on RX and TX rings, and one
	// batch is in the worker's hands.
	need := uint64(sockets)*uint64(c.RingSize) + uint64(c.Batch)
	what := fmt.Sprintf("the fill rings of %d sockets (%d × --ring-size %d) and one --batch (%d)", sockets, sockets, c.RingSize, c.Batch)
	if f := c.spec().Frames; f != nil {
		n, w, err := f(c)
		if err != nil {
			return err
		}
		need += n
		what += w
	}
	if n := c.shapedPorts(); n > 0 {
		need += uint64(n) * uint64(c.RingSize)
		what += fmt.Sprintf(", the egress queues of %d rate-limited ports (%d × --ring-size %d)", n, n, c.RingSize)
	}
	if c.autoFrames {
		// FramesPerQueue for every socket in place of its fill ring.
		n := need + uint64(sockets)*uint64(c.FramesPerQueue-c.RingSize)
		if n > math.MaxUint32 {
			return fmt.Errorf("dataplane: --frames-per-queue %d × %d sockets makes a UMEM of %d frames, more than it can address; lower --frames-per-queue (at least --ring-size %d)",
				c.FramesPerQueue, sockets, n, c.RingSize)
		}
		c.FrameCount = uint32(n)
		return nil
	}
	if uint64(c.FrameCount) < need {
		return fmt.Errorf("dataplane: --frames %d is too few: %s need %d UMEM frames; raise --frames to %d or more, or leave it out (the UMEM is then sized per queue: --frames-per-queue, default 2 × --ring-size, for each socket, plus the mode's buffers)",
			c.FrameCount, what, need, need)
	}
	return nil
}

// checkStaticSizes checks what can be checked before the ports are known.
func (c *Config) checkStaticSizes() error {
	if c.RingSize < 2 || c.RingSize&(c.RingSize-1) != 0 || c.RingSize > 1<<16 {
		return fmt.Errorf("dataplane: --ring-size %d: want a power of two from 2 to 65536 (default 2048)", c.RingSize)
	}
	if c.Batch < 1 {
		return fmt.Errorf("dataplane: --batch %d: want at least 1 (default 256)", c.Batch)
	}
	if c.Batch > int(c.RingSize) {
		return fmt.Errorf("dataplane: --batch %d exceeds --ring-size %d: a batch never fits a ring; lower --batch to %d or raise --ring-size", c.Batch, c.RingSize, c.RingSize)
	}
	if err := checkFrameSize(c.FrameSize); err != nil {
		return err
	}
	if c.autoFrames && c.FramesPerQueue < c.RingSize {
		return fmt.Errorf("dataplane: --frames-per-queue %d is below --ring-size %d: every socket's fill ring is kept full, and its RX and TX rings need frames besides; use at least %d (default 2 × --ring-size: %d)",
			c.FramesPerQueue, c.RingSize, c.RingSize, 2*c.RingSize)
	}
	if f := c.spec().CheckSizes; f != nil {
		return f(c)
	}
	return nil
}

// LinkOverhead is how many bytes a frame grows by on a sequenced link (the
// link header, and the integrity trailer unless --integrity off): a link
// port needs an MTU this much above the host port's.
func (c *Config) LinkOverhead() int { return seqhdr.MaxOverhead + c.Link.Integrity.Overhead() }

// EthHeaderLen is the Ethernet header a frame adds to its MTU (no FCS).
const EthHeaderLen = 14

// checkMTU checks the ports' MTUs: on a sequenced link (lg, lgnb, monitor)
// the link port must carry a full host frame plus LinkOverhead (cells cut
// host frames to the link's size: cellspipe.Config.fit), and
// in every mode the largest frame either port receives must fit a UMEM frame
// (the kernel drops a longer one on receive, counted only in XDP_STATISTICS).
func (c *Config) checkMTU(hostMTU, linkMTU int) error {
	ip := "ip"
	where := "this network namespace"
	if c.Netns != "" {
		ip, where = "ip -n "+c.Netns, "namespace "+c.Netns
	}
	if f := c.spec().CheckMTU; f != nil {
		if err := f(c, hostMTU, linkMTU, ip, where); err != nil {
			return err
		}
	}
	room := int(c.FrameSize) - unix.XDP_PACKET_HEADROOM
	for _, p := range []struct {
		name string
		mtu  int
	}{{c.HostPort, hostMTU}, {c.LinkPort, linkMTU}} {
		if p.mtu+EthHeaderLen <= room {
			continue
		}
		fix := fmt.Sprintf("--frame-size %d (or leave it out: the default fits the MTU), or %s link set dev %s mtu %d",
			fitFrameSize(p.mtu), ip, p.name, room-EthHeaderLen)
		return fmt.Errorf("dataplane: %s (%s) has MTU %d: its largest frame (%d bytes) does not fit a UMEM frame of --frame-size %d (%d bytes after the kernel's headroom); fix: %s",
			p.name, where, p.mtu, p.mtu+EthHeaderLen, c.FrameSize, room, fix)
	}
	return nil
}
