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
	// ctl is a datagram socket in the port's namespace, for reading the
	// interface's flags while it is down (-1: none).
	ctl int

	// Link state, owned by the worker: since when the interface has been
	// found down (worker clock, 0: up), and when to try transmitting again.
	downSince, retryAt int64
	mac                [6]byte
}

// MAC is the interface's hardware address when the port was opened.
func (p *Port) MAC() [6]byte { return p.mac }

// openPort attaches the dataplane's XDP program to ifname and binds one AF_XDP
// socket per receive queue. It runs in the calling thread's network namespace.
// On failure nothing is left attached.
func openPort(umem *xdp.Umem, role PortRole, ifname string, cfg *Config) (_ *Port, err error) {
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
	queues, err := xdp.QueueCount(ifname)
	if err != nil {
		return nil, err
	}
	p.prog, err = bpf.AttachPort(ifname, bpf.PortOptions{Mode: cfg.XDPMode, Queues: max(queues, 1), Host: role == RoleHost})
	if err != nil {
		return nil, err
	}
	scfg := xdp.SocketConfig{
		RxSize: cfg.RingSize, TxSize: cfg.RingSize, FillSize: cfg.RingSize, CompletionSize: cfg.RingSize,
	}
	if cfg.BusyPoll {
		scfg.BusyPollUsec = 20
		scfg.BusyPollBudget = cfg.Batch
	}
	for q := 0; q < queues; q++ {
		s, err := umem.Open(ifname, q, scfg)
		if err != nil {
			return nil, err
		}
		p.socks = append(p.socks, s)
		if cfg.TxBudget > 0 && s.Mode() == xdp.ModeCopy {
			if err := s.SetTxBudget(cfg.TxBudget); err != nil {
				cfg.Logger.Warn("TX budget not raised; each kick moves at most 32 frames", "dev", ifname, "err", err)
			}
		}
		if err := p.prog.RegisterXSK(q, s.FD()); err != nil {
			return nil, fmt.Errorf("%s queue %d: register AF_XDP socket in XSKMAP: %w", ifname, q, err)
		}
	}
	return p, nil
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
	for _, s := range p.socks {
		errs = append(errs, s.Close())
	}
	p.socks = nil
	if p.prog != nil {
		errs = append(errs, p.prog.Close())
		p.prog = nil
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
