package tdmaexp

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// starLinkFlags are the star's links: the TBF on every host NIC and
// switch port. limitName names the switch buffer's flag ("" : --limit;
// rpc calls it --buffer, as the paper's experiment does).
type starLinkFlags struct{ rate, burst, portBurst, limit, limitName string }

func (s *starLinkFlags) bindLink(f *pflag.FlagSet, rate string) {
	if s.limitName == "" {
		s.limitName = "limit"
	}
	cli.BitRateStringVar(f, &s.rate, "rate", rate, "line rate of every host NIC and switch port (TBF)")
	f.StringVar(&s.burst, "burst", "16K", "TBF burst")
	f.StringVar(&s.limit, s.limitName, "64K", "switch port buffer (the switch ports' TBF limit)")
}

func (s *starLinkFlags) parse(rate *netns.BitRate, burst, limit *netns.ByteSize) error {
	if err := cli.RateFlag("rate", s.rate, rate); err != nil {
		return err
	}
	if err := cli.SizeFlag("burst", s.burst, burst); err != nil {
		return err
	}
	return cli.SizeFlag(s.limitName, s.limit, limit)
}

// portBurstOf is --port-burst, burst the hosts' (twice burst if unset).
func (s *starLinkFlags) portBurstOf(burst netns.ByteSize) (netns.ByteSize, error) {
	if s.portBurst == "" {
		return 2 * burst, nil
	}
	var b netns.ByteSize
	return b, cli.SizeFlag("port-burst", s.portBurst, &b)
}

// starFlags are the flags every TDMA experiment on the star shares: the
// testbed (hosts, rates, buffers) and the FM's and agents' timing.
// Set hosts before binding to change --hosts' default; fixedHosts leaves
// --hosts out (an experiment for a given number of hosts).
type starFlags struct {
	starLinkFlags
	hosts, rt, hostRT, openRT int
	softirqRT                 int
	fixedHosts, aligned       bool
	mode, sch                 string
	gateShare                 float64
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
	if s.hosts == 0 {
		s.hosts = 4
	}
	if !s.fixedHosts {
		f.IntVar(&s.hosts, "hosts", s.hosts, "hosts on the star (2..8)")
	}
	s.bindLink(f, "100M")
	f.StringVar(&s.portBurst, "port-burst", "", "the switch ports' TBF burst (default: twice --burst, so that a port passes one host's burst after another's: a host's TBF sends a burst ahead of the line rate, and a port with only as much would hold the next slot's sender behind the last one's, up to its own timer and softirq)")
	f.DurationVar(&s.margin, "margin", 50*time.Microsecond, "taken off every window's close")
	f.DurationVar(&s.spin, "spin", 0, "the agents poll without sleeping this long before a window opens (0: their default, 150µs; negative: off)")
	f.BoolVar(&s.aligned, "aligned", false, "every host's window of a slot opens at once (tdma fm --stagger=false, which every host follows); by default the windows to destination d open d·guard/N later")
	if mode != "" {
		f.StringVar(&s.mode, "mode", mode, "lease, freerun or paper")
	}
	f.StringVar(&s.sch, "scheduler", "rotor", "rotor, wrr or bvn")
	f.Float64Var(&s.gateShare, "gate-share", DefaultGateShare, "the raw agents' frames are held to their windows where they leave their host (an eBPF exit gate on the switch end of its veth, against the kernel's clock; a frame outside its window goes back to its agent, which sends it in a later window): the part of the guard a frame may still leave in after its slot's end (the rest is the switch's)")
	f.IntVar(&s.rt, "rt", 60, "SCHED_FIFO priority of the FM's clock thread (0: the default scheduler)")
	f.IntVar(&s.openRT, "open-rt", 0, "SCHED_FIFO priority of the agents' threads only while each waits for a window's open, until its first frames are released (0: the agents' default, 1; negative: off)")
	f.IntVar(&s.softirqRT, "softirq-rt", DefaultSoftirqRT, "SCHED_FIFO priority of the kernel's softirq threads (ksoftirqd, the machine's) during each arm, put back after it: the emulated NICs' and switch's work the kernel left to them waits behind no agent or other task (0: leave them)")
	f.IntVar(&s.hostRT, "host-rt", 0, "SCHED_FIFO priority of the agents' threads (0: the default scheduler; measured: RT agents starve the softirqs that pace the TBFs and lose frames)")
}

// star checks the flags and returns the star they describe (slot and
// guard checked only if bound).
func (s *starFlags) star() (TDMAStar, error) {
	c := TDMAStar{Hosts: s.hosts, Slot: s.slot, Guard: s.guard, Mode: s.mode, RT: s.rt, HostRT: s.hostRT, OpenRT: s.openRT, Sched: s.sch, Margin: s.margin, Spin: s.spin,
		Aligned: s.aligned, GateShare: s.gateShare, SoftirqRT: s.softirqRT}
	if s.gateShare <= 0 || s.gateShare > 1 {
		return c, fmt.Errorf("--gate-share %g: want more than 0, at most 1", s.gateShare)
	}
	if s.softirqRT < 0 || s.softirqRT > 99 {
		return c, fmt.Errorf("--softirq-rt %d: want a SCHED_FIFO priority 1..99, or 0 to leave the softirq threads alone", s.softirqRT)
	}
	if s.hosts < 2 || s.hosts > 8 {
		return c, fmt.Errorf("--hosts %d: want 2 to 8", s.hosts)
	}
	if s.slot != 0 && s.guard >= s.slot {
		return c, fmt.Errorf("--guard %v must be shorter than --slot %v", s.guard, s.slot)
	}
	if s.mode != "" {
		if _, err := gate.ParseDiscipline(s.mode); err != nil {
			return c, fmt.Errorf("--mode: %w", err)
		}
	}
	if err := s.parse(&c.Rate, &c.Burst, &c.Limit); err != nil {
		return c, err
	}
	var err error
	c.PortBurst, err = s.portBurstOf(c.Burst)
	return c, err
}

// tdmaStarFlags are starFlags with what an experiment adds: its arms (if
// it has any), runs, --force, the testbed prefix and the output directory.
type tdmaStarFlags struct {
	starFlags
	runs         int
	arms, armsOK string
	armsAll      []string
	// parsed and parsedArms are the star and --arms, parsed before the
	// command runs (register's PreRunE).
	parsed      TDMAStar
	parsedArms  []string
	prefix, out string
	force       bool
}

// tdmaStarDefaults name what differs between the experiments.
type tdmaStarDefaults struct {
	hosts     int    // 0: fixed at 4, no --hosts flag
	limitName string // "limit" or "buffer": the switch port buffer's flag
	// sweepsSlots leaves out --slot and --guard, sweepsModes --mode: the
	// experiment sweeps them itself.
	sweepsSlots, sweepsModes bool
	arms                     []string // nil: no --arms
	armsValue                string   // the default of --arms
	runs                     int      // the default of --runs (0: 3)
	runsUsage                string   // --runs' help ("": runs per arm)
	prefix                   string
	out                      string
	outUsage                 string // --out's help ("": results and agents' logs)
}

// register declares the flags on cmd and parses the star and --arms (into
// parsed and parsedArms) before it runs.
func (s *tdmaStarFlags) register(cmd *cobra.Command, d tdmaStarDefaults) {
	f := cmd.Flags()
	cmd.PreRunE = func(*cobra.Command, []string) error {
		var err error
		if s.parsed, err = s.star(); err != nil || d.arms == nil {
			return err
		}
		s.parsedArms, err = s.armList()
		return err
	}
	s.limitName, s.armsOK, s.armsAll = d.limitName, strings.Join(d.arms, ", "), d.arms
	s.hosts, s.fixedHosts = d.hosts, d.hosts == 0
	mode := "lease"
	if d.sweepsModes {
		mode = ""
	}
	if d.sweepsSlots {
		s.bindStar(f, mode)
	} else {
		s.bind(f, mode)
	}
	if d.arms != nil {
		f.StringVar(&s.arms, "arms", d.armsValue, "arms to run, comma-separated: "+s.armsOK)
	}
	f.IntVar(&s.runs, "runs", cmp.Or(d.runs, 3), cmp.Or(d.runsUsage, "runs per arm (interleaved); the summary gives medians"))
	f.BoolVar(&s.force, "force", false, "run even if the machine is saturated (the report says so)")
	f.StringVar(&s.prefix, "prefix", d.prefix, "testbed namespace prefix")
	f.StringVar(&s.out, "out", d.out, cmp.Or(d.outUsage, "directory for the results (JSON, CSV, plots) and the agents' logs"))
	f.Bool("json", false, report.JSONUsage)
}

// star parses the star's flags and --runs.
func (s *tdmaStarFlags) star() (TDMAStar, error) {
	c, err := s.starFlags.star()
	if err == nil && s.runs < 1 {
		err = fmt.Errorf("--runs %d: want at least 1", s.runs)
	}
	return c, err
}

// armList parses --arms against the experiment's arms.
func (s *tdmaStarFlags) armList() ([]string, error) {
	arms := cli.SplitList(s.arms)
	if len(arms) == 0 {
		return nil, fmt.Errorf("--arms: want some of %s", s.armsOK)
	}
	return arms, bed.CheckOneOf("--arms", "arm", arms, s.armsAll)
}
