package dataplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// ZeroCopy is how the AF_XDP sockets move frames between the NICs and the
// UMEM (--zerocopy). Every port's sockets share the dataplane's one UMEM,
// and the kernel gives every socket of a UMEM the mode of the first one
// bound: the mode is the dataplane's, not a port's.
type ZeroCopy string

const (
	// ZeroCopyAuto (the zero value) binds every socket with XDP_ZEROCOPY
	// and, if any port refuses it (a driver without AF_XDP zero-copy, such
	// as veth, or a port whose XDP program runs in generic mode), binds
	// them all with XDP_COPY instead, logging which port refused and why.
	ZeroCopyAuto ZeroCopy = "auto"
	// ZeroCopyOn binds with XDP_ZEROCOPY; New fails, naming the port and
	// the fix, when a port cannot.
	ZeroCopyOn ZeroCopy = "on"
	// ZeroCopyOff binds with XDP_COPY: the kernel copies every frame into
	// and out of the UMEM (skb on transmit).
	ZeroCopyOff ZeroCopy = "off"
)

// ParseZeroCopy parses the --zerocopy flag ("" is ZeroCopyAuto).
func ParseZeroCopy(s string) (ZeroCopy, error) {
	return parseChoice(strings.ToLower(s), ZeroCopyAuto, []ZeroCopy{ZeroCopyAuto, ZeroCopyOn, ZeroCopyOff},
		"--zerocopy %q: want auto (zero-copy where every port's driver supports it, else copy), on (zero-copy, or fail) or off (copy mode)", s)
}

// parseChoice returns s as one of choices, def for "", or else an error of
// format bad with flag the flag's value as given.
func parseChoice[T ~string](s string, def T, choices []T, bad, flag string) (T, error) {
	if s == "" {
		return def, nil
	}
	if slices.Contains(choices, T(s)) {
		return T(s), nil
	}
	return "", fmt.Errorf(bad, flag)
}

// AFXDPSnapshot is how the dataplane's AF_XDP sockets were bound: what
// --zerocopy asked for, the mode they got and, when auto bound copy mode,
// why; whether XDP_USE_NEED_WAKEUP is in effect; and the UMEM's size. The
// mode of each socket (port and queue) is in 'linkfabric stats' under
// port_NAME.sockets.
type AFXDPSnapshot struct {
	ZeroCopy ZeroCopy `json:"zerocopy"`
	// Mode is "zerocopy" or "copy" (every socket's: they share a UMEM).
	Mode   string `json:"mode"`
	Reason string `json:"reason,omitempty"`
	// NeedWakeup: the sockets bound with XDP_USE_NEED_WAKEUP, so TX kicks
	// and fill-ring wakeups are syscalls only when the kernel asks.
	NeedWakeup bool `json:"need_wakeup"`
	// Sockets is the number of AF_XDP sockets (the receive queues of
	// every port); Frames the UMEM's frames, FramesPerQueue what each
	// socket was given (0 when --frames set the total).
	Sockets        int    `json:"sockets"`
	Frames         uint32 `json:"umem_frames"`
	FramesPerQueue uint32 `json:"umem_frames_per_queue,omitempty"`
}

// AFXDP reports how the sockets were bound (fixed once New returns).
func (d *Dataplane) AFXDP() AFXDPSnapshot { return d.afxdp }

// bindSockets binds every port's sockets in the mode --zerocopy asks for
// and records what they got in d.afxdp. auto tries zero-copy only when no
// port runs its program in generic mode, and binds everything again in
// copy mode when a port refuses zero-copy.
func (d *Dataplane) bindSockets() error {
	cfg := &d.cfg
	mode, reason := xdp.ModeCopy, ""
	switch cfg.ZeroCopy {
	case ZeroCopyOff:
		reason = "--zerocopy off"
	case ZeroCopyOn, ZeroCopyAuto:
		mode = xdp.ModeZeroCopy
		for _, p := range d.all {
			if p.prog.Mode() != bpf.XDPGeneric {
				continue
			}
			why := fmt.Sprintf("%s runs its XDP program in generic mode", p.Name)
			if r := p.prog.FallbackReason(); r != nil {
				why += fmt.Sprintf(" (native refused: %v)", r)
			}
			if cfg.ZeroCopy == ZeroCopyOn {
				return fmt.Errorf("dataplane: --zerocopy on: %s%s, and AF_XDP zero-copy needs the driver's native XDP; fix: a driver with native XDP and zero-copy (--xdp-mode native to see why native fails), or --zerocopy auto to fall back to copy mode, or --zerocopy off",
					why, d.where())
			}
			mode, reason = xdp.ModeCopy, why
			break
		}
	}
	err := d.bindAll(mode)
	var xe *xdp.Error
	if err != nil && mode == xdp.ModeZeroCopy && errors.As(err, &xe) && xe.Bind() && !errors.Is(err, unix.EBUSY) {
		if cfg.ZeroCopy == ZeroCopyOn {
			return fmt.Errorf("dataplane: --zerocopy on: %s%s refused zero-copy on queue %d (%w): its driver has no AF_XDP zero-copy support, or not on this queue (veth never has it); fix: --zerocopy auto binds copy mode where zero-copy is refused (and logs it), --zerocopy off always binds copy mode",
				xe.Ifname, d.where(), xe.Queue, xe.Err)
		}
		reason = fmt.Sprintf("%s queue %d refused zero-copy: %v", xe.Ifname, xe.Queue, xe.Err)
		if errors.Is(err, unix.EOPNOTSUPP) {
			reason += " (its driver has no AF_XDP zero-copy)"
		}
		for _, p := range d.all {
			p.closeSockets()
		}
		mode = xdp.ModeCopy
		err = d.bindAll(mode)
	}
	if err != nil {
		return err
	}
	a := &d.afxdp
	*a = AFXDPSnapshot{ZeroCopy: cfg.ZeroCopy, Mode: "copy", Reason: reason, NeedWakeup: !cfg.NoNeedWakeup,
		Frames: cfg.FrameCount, FramesPerQueue: cfg.FramesPerQueue}
	for _, p := range d.all {
		for _, s := range p.socks {
			a.Sockets++
			if s.Mode() == xdp.ModeZeroCopy {
				a.Mode = "zerocopy"
			}
			a.NeedWakeup = a.NeedWakeup && s.NeedWakeup()
		}
	}
	return nil
}

// bindAll binds every port's sockets in mode (ModeZeroCopy or ModeCopy).
func (d *Dataplane) bindAll(mode xdp.BindMode) error {
	for _, p := range d.all {
		if err := p.bind(d.umems, &d.cfg, mode); err != nil {
			return err
		}
	}
	return nil
}

// where names the ports' namespace for an error message ("" for the
// calling thread's own).
func (d *Dataplane) where() string {
	if d.cfg.Netns == "" {
		return ""
	}
	return " (namespace " + d.cfg.Netns + ")"
}

// logPorts logs, once at start, how each port's sockets were bound and the
// lanes a link port has: one with a single TX queue has no priority lane,
// and its control frames go first within its one queue.
func (d *Dataplane) logPorts() {
	log := d.cfg.Logger
	a := d.afxdp
	args := []any{"zerocopy", string(a.ZeroCopy), "mode", a.Mode, "need_wakeup", a.NeedWakeup,
		"sockets", a.Sockets, "umem_frames", a.Frames}
	if a.FramesPerQueue > 0 {
		args = append(args, "frames_per_queue", a.FramesPerQueue)
	}
	if a.Reason != "" {
		args = append(args, "reason", a.Reason)
	}
	log.Info("AF_XDP sockets bound", args...)
	if !d.cfg.spec().Wire {
		return // one lane is all a mode without link control uses
	}
	for _, i := range d.ports.Links {
		p := d.all[i]
		if p.lanes < 2 {
			log.Info("link port has a single TX queue: no priority lane; PFC, loss notifications, retransmissions and session frames are placed ahead of data within its one queue",
				"dev", p.Name, "rx_queues", len(p.socks), "tx_queues", p.txQueues)
		}
	}
}
