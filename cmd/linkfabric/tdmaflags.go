package main

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdmaagent/gate"
	"github.com/spf13/pflag"
)

// starLinkFlags are the star's links: the TBF on every host NIC and
// switch port.
type starLinkFlags struct{ rate, burst, limit string }

func (s *starLinkFlags) bindLink(f *pflag.FlagSet, rate string) {
	f.StringVar(&s.rate, "rate", rate, "line rate of every host NIC and switch port (TBF)")
	f.StringVar(&s.burst, "burst", "16K", "TBF burst")
	f.StringVar(&s.limit, "limit", "64K", "switch port buffer (TBF limit)")
}

func (s *starLinkFlags) parse(rate *netns.BitRate, burst, limit *netns.ByteSize) error {
	if err := cellsRateFlag("rate", s.rate, rate); err != nil {
		return err
	}
	if err := cellsSizeFlag("burst", s.burst, burst); err != nil {
		return err
	}
	return cellsSizeFlag("limit", s.limit, limit)
}

// starFlags are the flags every TDMA experiment on the star shares: the
// testbed (hosts, rates, buffers) and the FM's and agents' timing.
type starFlags struct {
	starLinkFlags
	hosts, rt, hostRT         int
	mode, sch                 string
	slot, guard, margin, spin time.Duration
}

// bind registers the flags on f with --slot and --guard; mode "" leaves
// --mode out (an experiment that sweeps the modes itself).
func (s *starFlags) bind(f *pflag.FlagSet, mode string) {
	f.DurationVar(&s.slot, "slot", 5*time.Millisecond, "TDMA slot length")
	f.DurationVar(&s.guard, "guard", 300*time.Microsecond, "TDMA guard time")
	s.bindStar(f, mode)
}

// bindStar registers all but --slot and --guard (for an experiment that
// sweeps them).
func (s *starFlags) bindStar(f *pflag.FlagSet, mode string) {
	f.IntVar(&s.hosts, "hosts", 4, "hosts on the star (2..8)")
	s.bindLink(f, "100M")
	f.DurationVar(&s.margin, "margin", 50*time.Microsecond, "taken off every window's close")
	f.DurationVar(&s.spin, "spin", 0, "the agents poll without sleeping this long before a window opens (0: their default, 150µs; negative: off)")
	if mode != "" {
		f.StringVar(&s.mode, "mode", mode, "lease, freerun or paper")
	}
	f.StringVar(&s.sch, "scheduler", "rotor", "rotor, wrr or bvn")
	f.IntVar(&s.rt, "rt", 60, "SCHED_FIFO priority of the FM's clock thread (0: the default scheduler)")
	f.IntVar(&s.hostRT, "host-rt", 0, "SCHED_FIFO priority of the agents' threads (0: the default scheduler; measured: RT agents starve the softirqs that pace the TBFs and lose frames)")
}

// star checks the flags and returns the star they describe (slot and
// guard checked only if bound).
func (s *starFlags) star() (experiment.TDMAStar, error) {
	c := experiment.TDMAStar{Hosts: s.hosts, Slot: s.slot, Guard: s.guard, Mode: s.mode, RT: s.rt, HostRT: s.hostRT, Sched: s.sch, Margin: s.margin, Spin: s.spin}
	if s.hosts < 2 || s.hosts > 8 {
		return c, fmt.Errorf("--hosts %d: want 2 to 8", s.hosts)
	}
	if s.slot != 0 && s.guard >= s.slot {
		return c, fmt.Errorf("--guard %v must be shorter than --slot %v", s.guard, s.slot)
	}
	if s.mode != "" {
		if _, err := gate.ParseMode(s.mode); err != nil {
			return c, fmt.Errorf("--mode: %w", err)
		}
	}
	return c, s.parse(&c.Rate, &c.Burst, &c.Limit)
}
