package bpf

import (
	"errors"
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TDMAGate is the TDMA exit gate (c/tdmagate.c): on the switch end of a
// host's veth, a raw TDMA data frame that leaves the host after its slot's
// end plus the gate's share of the guard, or was released after its
// window's close or its lease, is returned to the host (XDP_TX) instead
// of entering the switch; the host's agent sends it again in a later
// window. Checked against the kernel's clock where the frame leaves the
// host's line, so no lateness of the agent or of the host's queues lets a
// frame into another sender's slot. Its rule in Go, the model the program
// is tested against, is tdma/gate's Verdict.
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
}

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
	conf := tdmagateTdmaGateConf{Enabled: 1, SharePermille: uint32(share*1000 + 0.5)}
	if err := g.objs.TdmaGateCfg.Put(uint32(0), conf); err != nil {
		g.Close()
		return nil, fmt.Errorf("tdma gate: configure: %w", err)
	}
	return g, nil
}

// AttachExit attaches the gate to ifname, the switch end of a host's
// veth, in the calling thread's network namespace.
func (g *TDMAGate) AttachExit(ifname string) error { return g.attach(g.objs.LfTdmaExit, ifname) }

// AttachHost attaches the pass-through program to ifname, the host's end
// of the veth (in the calling thread's namespace): a veth takes frames
// sent back to it by XDP only when it runs XDP itself.
func (g *TDMAGate) AttachHost(ifname string) error { return g.attach(g.objs.LfTdmaPass, ifname) }

func (g *TDMAGate) attach(p *ebpf.Program, ifname string) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("tdma gate: %w", err)
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifi.Index, Flags: link.XDPDriverMode})
	if err != nil {
		return fmt.Errorf("tdma gate: attach to %s: %w", ifname, permErr(err))
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
