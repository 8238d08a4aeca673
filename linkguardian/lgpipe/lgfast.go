package lgpipe

import (
	"fmt"
	"sync/atomic"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/xdp"
)

// LinkGuardian's kernel path (modes lg, lgnb and monitor): the receive fast
// path delivers the in-order frames the link brings while nothing needs the
// core (linkguardian/fastrx.go), and the send fast path numbers, copies,
// stamps and sends host frames while it owns sending
// (linkguardian/fasttx.go). The engine runs them as the mode's directions
// (KernelPath); this file holds what LinkGuardian adds to its Spec for
// them.

// QueueCount counts the link port's receive queues (tests replace it).
var QueueCount = xdp.QueueCount

// prepareLG is LinkGuardian's Spec.Prepare: it decides whether its send
// fast path can run (lgTxBlocked) before the ring size is defaulted by it
// (defaultRingSize).
func prepareLG(c *dataplane.Config) {
	queues, qerr := QueueCount(c.LinkPort)
	lg := ConfigOf(c)
	lg.txWhy, lg.txFix = lgTxBlocked(c, queues, qerr)
	lg.kernelTx = lg.txWhy == ""
	if c.RingSize == 0 {
		c.RingSize = defaultRingSize(TxWanted(c))
	}
}

// TxWanted says whether LinkGuardian's send fast path runs: a
// LinkGuardian mode whose configuration allows the kernel path
// (lgTxBlocked, decided by prepareLG). The ports are then attached with
// what it needs (lgPortOptions).
func TxWanted(c *dataplane.Config) bool { return ConfigOf(c).kernelTx }

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
func lgTxBlocked(c *dataplane.Config, queues int, qerr error) (why string, fix bool) {
	if why := c.FastPathBlocked(); why != "" {
		return why, false
	}
	switch linkpipe.SessionConfigOf(c).Protect {
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

// lgFastBlocked is LinkGuardian's Spec.FastBlocked.
func lgFastBlocked(c *dataplane.Config) string {
	if linkpipe.SessionConfigOf(c).Protect == "tx" {
		return "the link's frames toward this end are not sequenced (--lg-protect without rx): nothing for the kernel path to judge"
	}
	return ""
}

// lgPortOptions is LinkGuardian's Spec.PortOptions. With its send fast path
// the host port keeps a copy ring of the TX buffer's size, and the link
// port (attached after it) shares its lg_rx map, from which the host port's
// program reads the ACK it piggybacks.
func lgPortOptions(c *dataplane.Config, i int, role dataplane.PortRole, attached []*dataplane.Port, o *bpf.PortOptions) {
	if !TxWanted(c) {
		return
	}
	if role == dataplane.RoleHost {
		o.LGTxSlots = ConfigOf(c).TxBuffer
		if o.LGTxSlots == 0 {
			o.LGTxSlots = DefaultTxBuffer(c.RingSize, true)
		}
	} else if i == dataplane.PortLink {
		o.ShareLGRx = attached[dataplane.PortHost].Program()
	}
}

// lgFast is LinkGuardian's kernel path on a dataplane, the lgInstance's
// KernelPath: its receive direction (link to host) and its send direction
// (host to link).
type lgFast struct {
	d          *dataplane.Dataplane
	link, host *bpf.PortProgram // the ports' programs (FastDirs)
	integrity  linkcrc.Integrity
	// txBlocked is why the send direction cannot run (Config.LG.txWhy),
	// txFix whether the user can change that on the link port.
	txBlocked string
	txFix     bool
	// ready: the kernel path is open (FastReady).
	ready bool

	// The receive fast path (the link port's program): the shared state,
	// and whether the kernel judges frames now (the worker hands the
	// in-order point over only then).
	rx     *bpf.LGRx
	rxLive atomic.Bool
	// The send fast path (the host port's program): the shared state, and
	// whether the kernel sends host frames now (the worker hands sending
	// over only then).
	tx     *bpf.LGTx
	txLive atomic.Bool
}

func (f *lgFast) FastDirs() []dataplane.FastDir {
	ps := f.d.Ports()
	h, l := ps.Host, ps.Links[0]
	f.link, f.host = f.d.Port(l).Program(), f.d.Port(h).Program()
	// The send direction is listed whether or not its kernel half can run
	// here, with the reason when it cannot.
	return []dataplane.FastDir{{From: l, To: h, Hook: lgDir{f: f}}, {From: h, To: l, Blocked: f.txBlocked, Hook: lgDir{f: f, send: true}}}
}

func (f *lgFast) OpenFast(xdp bool) (string, error) {
	if xdp && f.txFix {
		return "", fmt.Errorf("dataplane: --fastpath xdp: LinkGuardian's send fast path cannot run: %s; or use --fastpath auto, which leaves the send direction to the worker", f.txBlocked)
	}
	return f.open(), nil
}

func (f *lgFast) FastReady(on bool) { f.ready = on }

// open maps LinkGuardian's receive state shared with the link port's
// program, and its send state shared with the host port's; it returns why
// the kernel path is impossible ("" when it is possible).
func (f *lgFast) open() string {
	// The kernel checks and removes the trailer of what it delivers; a
	// frame that fails goes to the worker, which counts and drops it.
	rx, why := lgShared(f.link, f.link.LGRx, f.integrity)
	if why != "" {
		return why
	}
	f.rx = rx
	if f.txBlocked != "" {
		return ""
	}
	// The send direction: the host port's program numbers and stamps host
	// frames, and seals them with the trailer the link's frames carry (on
	// a link of one queue: lgTxBlocked).
	tx, why := lgShared(f.host, f.host.LGTx, f.integrity)
	if why != "" {
		return why
	}
	f.tx = tx
	return ""
}

// lgShared maps the state prog shares with the core (get) and gives prog
// the integrity check; it returns why it cannot ("" if it can).
func lgShared[T any](prog *bpf.PortProgram, get func() (T, error), integrity linkcrc.Integrity) (T, string) {
	v, err := get()
	if err == nil {
		err = prog.SetLGRxIntegrity(integrity)
	}
	if err != nil {
		var none T
		return none, err.Error()
	}
	return v, ""
}

// lgDir is one of LinkGuardian's directions: the receive direction (link
// to host), or with send the send direction (host to link).
type lgDir struct {
	f    *lgFast
	send bool
}

func (d lgDir) Set(on bool) error {
	set, live := d.f.link.SetLGRx, &d.f.rxLive
	if d.send {
		set, live = d.f.host.SetLGTx, &d.f.txLive
	}
	if err := set(on); err != nil {
		return err
	}
	live.Store(on)
	return nil
}

// Counters are, for the receive direction, LinkGuardian's deliveries (as
// Forwarded; passed to the core for want of a redirect as ForwardMissed);
// for the send direction, the frames the kernel numbered and sent (Missed:
// frames it passed to the core having taken them, lost swaps, or for want
// of room in the header or trailer, dropped).
func (d lgDir) Counters() bpf.ProgCounters {
	if d.send {
		c := d.f.tx.Counters()
		return bpf.ProgCounters{Forwarded: c.Sent, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed + c.StampErr}
	}
	c := d.f.rx.Counters()
	return bpf.ProgCounters{Forwarded: c.Frames, ForwardedBytes: c.Bytes, ForwardMissed: c.Missed}
}

// txAck says whether the send fast path piggybacks the receive point's
// serial - 1 as its ACK (the receiver keeps it current when connected).
func (f *lgFast) txAck(on bool) error {
	return f.host.SetLGTxAck(on)
}

// send is the send fast path's shared state for the LinkGuardian core, nil
// when there is none or the kernel path is out for good.
func (f *lgFast) send() *linkguardian.FastSend {
	if !f.sends() {
		return nil
	}
	t := f.tx
	return &linkguardian.FastSend{State: t.State(), Limit: t.Limit(), LastNs: t.LastNs(), PiggyAck: t.PiggyAck(),
		WantWake: t.WantWake(), Sent: t.Sent(), Declined: t.Declined(), Missed: t.Missed(), Wakeups: t.Wakeups(),
		ToGo: t.ToGo(), Consumed: t.Consumed(), Ring: t.Ring(), Slots: t.Slots(), SlotSize: bpf.LGTxSlotSize,
		Credit: t.Credit(), WakeMoves: t.WakeMoves(), Widened: t.Widened(),
		DeclinedWindow: t.DeclinedWindow(), DeclinedUnread: t.DeclinedUnread()}
}

// sends reports whether LinkGuardian's send fast path runs (send is not
// nil).
func (f *lgFast) sends() bool { return f != nil && f.tx != nil && f.ready }

// point is the receive fast path's shared state for the LinkGuardian core,
// nil when the kernel path is out for good.
func (f *lgFast) point() *linkguardian.FastPoint {
	if f == nil || f.rx == nil || !f.ready {
		return nil
	}
	return &linkguardian.FastPoint{Point: f.rx.Point(), PeerAck: f.rx.PeerAck(), Adopted: f.rx.Adopted(), AckEvery: f.rx.AckEvery()}
}
