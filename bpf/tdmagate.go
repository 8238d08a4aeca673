package bpf

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TDMAGate is the TDMA exit and arrival gates (c/tdmagate.c). The exit
// gate, on the switch end of a host's veth: a raw TDMA data frame that
// leaves the host after its slot's end plus the gate's share of the
// guard, or was released after its window's close or its lease, is
// returned to the host (XDP_TX) instead of entering the switch; the host's
// agent sends it again in a later window. Checked against the kernel's
// clock where the frame leaves the host's line, so no lateness of the
// agent or of the host's queues lets a frame into another sender's slot.
// The arrival gate, on the host end of each veth (TC ingress), does the
// same where the frames meet: a frame that reaches its receiver after its
// slot's end plus the guard (the switch or the receiver's input path held
// it) goes back into the switch marked held, and the program on that
// switch port's TC ingress redirects it to its sender's agent. Their rules
// in Go, the models the programs are tested against, are tdma/gate's
// Verdict and Arrival.
type TDMAGate struct {
	objs  tdmagateObjects
	links []link.Link
}

// TDMAGateCounters are the gate's counters, summed over the CPUs and
// every port it is attached to.
type TDMAGateCounters struct {
	Passed        uint64 `json:"passed"`
	Returned      uint64 `json:"returned"`
	ReturnedBytes uint64 `json:"returned_bytes"`
	// AfterClose: of the returned frames, those released after their
	// window's close or lease (the agent was late); the others left the
	// host's queues too late.
	AfterClose uint64 `json:"returned_after_close"`
	Other      uint64 `json:"other"`
	// Arrived: data frames the arrival gate let through to their
	// receiver; Held: those it sent back, late (HeldBytes their bytes);
	// SentBack: held frames the switch redirected to their sender;
	// SendBackDropped: held frames that did not come from their
	// receiver's port, or whose sender has none.
	Arrived         uint64 `json:"arrived"`
	Held            uint64 `json:"held"`
	HeldBytes       uint64 `json:"held_bytes"`
	SentBack        uint64 `json:"sent_back"`
	SendBackDropped uint64 `json:"send_back_dropped"`
}

// ArrivalMargin is how much before a frame's Due the arrival gate holds
// it: the rest of the receiver's input path, from its veth's XDP to the
// kernel's receive stamp, takes a few µs.
const ArrivalMargin = 20 * time.Microsecond

// LoadTDMAGate loads the gate; share is the part of the guard (0..1) a
// frame may still leave the host in after its slot's end, the rest is for
// the switch.
func LoadTDMAGate(share float64) (*TDMAGate, error) {
	if share < 0 || share > 1 {
		return nil, fmt.Errorf("tdma gate: share of the guard %g: want 0..1", share)
	}
	prepare()
	g := &TDMAGate{}
	if err := loadTdmagateObjects(&g.objs, nil); err != nil {
		return nil, loadErr("tdma gate", err)
	}
	conf := tdmagateTdmaGateConf{Enabled: 1, SharePermille: uint32(share*1000 + 0.5), MarginNs: uint32(ArrivalMargin)}
	if err := g.objs.TdmaGateCfg.Put(uint32(0), conf); err != nil {
		g.Close()
		return nil, fmt.Errorf("tdma gate: configure: %w", err)
	}
	return g, nil
}

// AttachExit attaches the exit gate to ifname, the switch end of the veth
// of host index host (0-based, the data header's), in the calling
// thread's network namespace, with the program that sends frames held at
// that host back to their senders; it is also the port frames held at
// other receivers are sent back to the host through.
func (g *TDMAGate) AttachExit(host int, ifname string) error {
	if host < 0 || uint32(host) >= g.objs.TdmaGatePorts.MaxEntries() {
		return fmt.Errorf("tdma gate: host index %d: the gate takes 0..%d", host, g.objs.TdmaGatePorts.MaxEntries()-1)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("tdma gate: %w", err)
	}
	if err := g.objs.TdmaGatePorts.Put(uint32(host), uint32(ifi.Index)); err != nil {
		return fmt.Errorf("tdma gate: port of host %d (%s): %w", host, ifname, err)
	}
	if err := g.attachXDP(g.objs.LfTdmaExit, ifi); err != nil {
		return err
	}
	return g.attachTC(g.objs.LfTdmaBack, ifi)
}

// AttachHost attaches the arrival gate to ifname, the host's end of the
// veth (in the calling thread's namespace), and an XDP program that
// passes every frame: a veth takes frames sent back to it by XDP only
// when it runs XDP itself.
func (g *TDMAGate) AttachHost(ifname string) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("tdma gate: %w", err)
	}
	if err := g.attachXDP(g.objs.LfTdmaPass, ifi); err != nil {
		return err
	}
	return g.attachTC(g.objs.LfTdmaArrive, ifi)
}

// attachTC attaches p to ifi's TC ingress.
func (g *TDMAGate) attachTC(p *ebpf.Program, ifi *net.Interface) error {
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifi.Index, Program: p, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return fmt.Errorf("tdma gate: attach to %s's TC ingress: %w", ifi.Name, permErr(err))
	}
	g.links = append(g.links, l)
	return nil
}

// attachXDP attaches p to ifi in driver mode.
func (g *TDMAGate) attachXDP(p *ebpf.Program, ifi *net.Interface) error {
	l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return fmt.Errorf("tdma gate: attach to %s: %w", ifi.Name, permErr(err))
	}
	g.links = append(g.links, l)
	return nil
}

// Counters reads the counters.
func (g *TDMAGate) Counters() (TDMAGateCounters, error) {
	c, err := sumPerCPU[TDMAGateCounters, tdmagateTdmaGateCounters](g.objs.TdmaGateCount)
	if err != nil {
		return TDMAGateCounters{}, fmt.Errorf("tdma gate: counters: %w", err)
	}
	return c, nil
}

// Close detaches the programs and releases the gate.
func (g *TDMAGate) Close() error {
	var errs []error
	for _, l := range g.links {
		errs = append(errs, l.Close())
	}
	g.links = nil
	errs = append(errs, g.objs.Close())
	return errors.Join(errs...)
}
