package dataplane

import (
	"errors"
	"fmt"
	"net"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// Port is one interface owned by the dataplane: the XDP program that counts,
// impairs and redirects its received frames, and one AF_XDP socket per receive
// queue, all on the dataplane's shared UMEM.
type Port struct {
	Name  string
	Role  PortRole
	prog  *bpf.PortProgram
	socks []*xdp.Socket
	// queues and txQueues are the interface's receive queues (one socket
	// each) and transmit queues; lanes is how many of the sockets transmit:
	// the first min(queues, txQueues). A link port with one lane has no
	// priority lane.
	queues, txQueues, lanes int
	// ctl is a datagram socket in the port's namespace, for reading the
	// interface's flags while it is down (-1: none).
	ctl int
	// unpromisc turns the link port's promiscuous mode back off (Promisc;
	// nil on host ports).
	unpromisc func() error

	// Link state, owned by the worker: since when the interface has been
	// found down (worker clock, 0: up), and when to try transmitting again.
	downSince, retryAt int64
	mac                [6]byte
}

// MAC is the interface's hardware address when the port was opened.
func (p *Port) MAC() [6]byte { return p.mac }

// Lanes is how many of the port's sockets transmit: 2 or more on a link
// port means a priority lane (queue 1), 1 that control frames go ahead of
// data within queue 0.
func (p *Port) Lanes() int { return p.lanes }

// DownSince is since when (worker clock) the worker has found the
// interface down; 0 while it is up. Read it in the worker's goroutine.
func (p *Port) DownSince() int64 { return p.downSince }

// attachPort attaches the dataplane's XDP program to ifname and counts its
// queues; bind then binds its sockets. It runs in the calling thread's
// network namespace. On failure nothing is left attached.
//
// opts adds to the options attachPort derives from cfg (LinkGuardian's send
// fast path: the host port's ring and the lg_rx map the link port shares).
func attachPort(role PortRole, ifname string, cfg *Config, opts bpf.PortOptions) (_ *Port, err error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("%s port %s: no such interface in this network namespace (check --%s-port and --netns)",
			role, ifname, role)
	}
	p := &Port{Name: ifname, Role: role, ctl: -1}
	copy(p.mac[:], ifc.HardwareAddr)
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
		p.ctl = fd
	}
	if p.queues, err = xdp.QueueCount(ifname); err != nil {
		return nil, err
	}
	if p.txQueues, err = xdp.TxQueueCount(ifname); err != nil {
		p.txQueues = p.queues // the count failed where the RX count did not: assume symmetric
	}
	p.lanes = max(min(p.queues, p.txQueues), 1)
	opts.Mode, opts.Queues, opts.Host = cfg.XDPMode, max(p.queues, 1), role == RoleHost
	p.prog, err = bpf.AttachPort(ifname, opts)
	if err != nil {
		return nil, err
	}
	if role == RoleLink {
		if p.unpromisc, err = Promisc(ifname); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// bind binds one AF_XDP socket per receive queue in mode (ModeZeroCopy or
// ModeCopy; the sockets of a UMEM share it, so they all get the first
// one's) and registers each in the program's XSKMAP. Queue q is bound on
// umems[q % len(umems)], its worker's (one UMEM: every queue on it). On
// failure the sockets it bound are closed.
func (p *Port) bind(umems []*xdp.Umem, cfg *Config, mode xdp.BindMode) (err error) {
	defer func() {
		if err != nil {
			p.closeSockets()
		}
	}()
	scfg := xdp.SocketConfig{
		RxSize: cfg.RingSize, TxSize: cfg.RingSize, FillSize: cfg.RingSize, CompletionSize: cfg.RingSize,
		Mode: mode, NeedWakeup: !cfg.NoNeedWakeup,
	}
	if cfg.BusyPoll {
		scfg.BusyPollUsec = 20
		scfg.BusyPollBudget = cfg.Batch
	}
	for q := 0; q < p.queues; q++ {
		s, err := umems[q%len(umems)].Open(p.Name, q, scfg)
		if err != nil {
			return err
		}
		p.socks = append(p.socks, s)
		if cfg.TxBudget > 0 && s.Mode() == xdp.ModeCopy && q < p.lanes {
			if err := s.SetTxBudget(cfg.TxBudget); err != nil {
				cfg.Logger.Warn("TX budget not raised; each kick moves at most 32 frames", "dev", p.Name, "err", err)
			}
		}
		if err := p.prog.RegisterXSK(q, s.FD()); err != nil {
			return fmt.Errorf("%s queue %d: register AF_XDP socket in XSKMAP: %w", p.Name, q, err)
		}
	}
	return nil
}

// closeSockets closes the port's sockets (the program stays attached).
func (p *Port) closeSockets() error {
	err := closeEach(p.socks, (*xdp.Socket).Close)
	p.socks = nil
	return err
}

// closeEach closes every element of xs with close, and joins the errors.
func closeEach[T any](xs []T, close func(T) error) error {
	errs := make([]error, 0, len(xs))
	for _, x := range xs {
		errs = append(errs, close(x))
	}
	return errors.Join(errs...)
}

// Program is the port's XDP program (counters and impairment).
func (p *Port) Program() *bpf.PortProgram { return p.prog }

// Sockets are the port's AF_XDP sockets, one per receive queue.
func (p *Port) Sockets() []*xdp.Socket { return p.socks }

func (p *Port) close() error {
	var errs []error
	if p.ctl > 0 {
		errs = append(errs, unix.Close(p.ctl))
		p.ctl = -1
	}
	errs = append(errs, p.closeSockets())
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
		p.prog = nil
	}
	if p.unpromisc != nil {
		errs = append(errs, p.unpromisc())
		p.unpromisc = nil
	}
	return errors.Join(errs...)
}

// running reports whether the interface is up with carrier (IFF_UP and
// IFF_RUNNING), read without transmitting; true if it cannot be read.
func (p *Port) running() bool {
	if p.ctl <= 0 {
		return true
	}
	ifr, err := unix.NewIfreq(p.Name)
	if err != nil {
		return true
	}
	if err := unix.IoctlIfreq(p.ctl, unix.SIOCGIFFLAGS, ifr); err != nil {
		return true
	}
	f := ifr.Uint16()
	return f&unix.IFF_UP != 0 && f&unix.IFF_RUNNING != 0
}
