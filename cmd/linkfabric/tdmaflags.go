package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment"
	"github.com/linkfabric/linkfabric/tdmaagent/gate"
	"github.com/spf13/pflag"
)

// tdmaStarFlags are the flags the TDMA experiments share: the shaped star,
// the FM and agents, runs, --force, the testbed prefix and the output.
type tdmaStarFlags struct {
	hosts, runs, rt, hostRT  int
	rate, burst, limit, arms string
	mode, sch, prefix, out   string
	slot, guard, margin      time.Duration
	force                    bool
	limitName, armsOK        string
}

// tdmaStarDefaults name what differs between the experiments.
type tdmaStarDefaults struct {
	hosts     int    // 0: fixed at 4, no --hosts flag
	limitName string // "limit" or "buffer": the switch port buffer's flag
	arms      []string
	armsValue string // the default of --arms
	prefix    string
	out       string
}

func (s *tdmaStarFlags) register(f *pflag.FlagSet, d tdmaStarDefaults) {
	s.limitName, s.armsOK = d.limitName, strings.Join(d.arms, ", ")
	s.hosts = 4
	if d.hosts > 0 {
		f.IntVar(&s.hosts, "hosts", d.hosts, "hosts on the star (2..8)")
	}
	f.StringVar(&s.rate, "rate", "100M", "line rate of every host NIC and switch port (TBF)")
	f.StringVar(&s.burst, "burst", "16K", "TBF burst")
	f.StringVar(&s.limit, d.limitName, "64K", "switch port buffer (the switch ports' TBF limit)")
	f.DurationVar(&s.slot, "slot", 5*time.Millisecond, "TDMA slot length")
	f.DurationVar(&s.guard, "guard", 300*time.Microsecond, "TDMA guard time")
	f.DurationVar(&s.margin, "margin", 50*time.Microsecond, "taken off every window's close")
	f.StringVar(&s.mode, "mode", "lease", "lease, freerun or paper")
	f.StringVar(&s.sch, "scheduler", "rotor", "rotor, wrr or bvn")
	f.IntVar(&s.rt, "rt", 60, "SCHED_FIFO priority of the FM's clock thread (0: the default scheduler)")
	f.IntVar(&s.hostRT, "host-rt", 0, "SCHED_FIFO priority of the agents' threads (0: the default scheduler; measured: RT agents starve the softirqs that pace the TBFs and lose frames)")
	f.StringVar(&s.arms, "arms", d.armsValue, "arms to run, comma-separated: "+s.armsOK)
	f.IntVar(&s.runs, "runs", 3, "runs per arm (interleaved); the summary gives medians")
	f.BoolVar(&s.force, "force", false, "run even if the machine is saturated (the report says so)")
	f.StringVar(&s.prefix, "prefix", d.prefix, "testbed namespace prefix")
	f.StringVar(&s.out, "out", d.out, "directory for the results (JSON, CSV, plots) and the agents' logs")
}

// star parses the star's flags.
func (s *tdmaStarFlags) star() (experiment.TDMAStar, error) {
	c := experiment.TDMAStar{Hosts: s.hosts, Slot: s.slot, Guard: s.guard, Mode: s.mode, RT: s.rt, HostRT: s.hostRT, Sched: s.sch, Margin: s.margin}
	if s.hosts < 2 || s.hosts > 8 {
		return c, fmt.Errorf("--hosts %d: want 2 to 8", s.hosts)
	}
	if s.guard < 0 || s.guard >= s.slot {
		return c, fmt.Errorf("--guard %v must be shorter than --slot %v", s.guard, s.slot)
	}
	if _, err := gate.ParseMode(s.mode); err != nil {
		return c, fmt.Errorf("--mode: %w", err)
	}
	if err := cellsRateFlag("rate", s.rate, &c.Rate); err != nil {
		return c, err
	}
	if err := cellsSizeFlag("burst", s.burst, &c.Burst); err != nil {
		return c, err
	}
	if err := cellsSizeFlag(s.limitName, s.limit, &c.Limit); err != nil {
		return c, err
	}
	if s.runs < 1 {
		return c, fmt.Errorf("--runs %d: want at least 1", s.runs)
	}
	return c, nil
}

// armList parses --arms against the experiment's arms.
func (s *tdmaStarFlags) armList(ok []string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s.arms, ",") {
		a = strings.TrimSpace(a)
		if !slices.Contains(ok, a) {
			return nil, fmt.Errorf("--arms: %q: want some of %s", a, s.armsOK)
		}
		out = append(out, a)
	}
	return out, nil
}

// reportTDMA prints an experiment's result to stdout, writes its files and
// says on stderr which were written (and why not, if some were not).
func reportTDMA(print func(io.Writer), write func() ([]string, error)) {
	print(os.Stdout)
	paths, err := write()
	if len(paths) > 0 {
		fmt.Fprintln(os.Stderr, "wrote", strings.Join(paths, ", "))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "writing the results:", err)
	}
}
