// Package tdmacli holds the commands of TDMA's processes, the fabric
// manager (tdma fm) and the host agent (tdma host): their flags, and the
// run until Ctrl-C that prints their statistics. The experiments start
// them as processes of their own.
package tdmacli

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/fm"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/host"
	"github.com/spf13/cobra"
)

// Commands are the fabric manager's and the host agent's commands.
func Commands() []*cobra.Command { return []*cobra.Command{tdmaFMCmd(), tdmaHostCmd()} }

// parseAgentFlags parses the flags the FM and the host agents share:
// --hosts, --mode and --rate (whose line rate: rateOf).
func parseAgentFlags(hosts, mode, rate, rateOf string) ([]netip.Addr, gate.Discipline, netns.BitRate, error) {
	hs, err := parseHostList(hosts)
	if err != nil {
		return nil, 0, 0, err
	}
	m, err := gate.ParseDiscipline(mode)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("--mode: %w", err)
	}
	r, err := netns.ParseBitRate(rate)
	if err != nil || r == 0 {
		return nil, 0, 0, fmt.Errorf("--rate %q: want %s line rate like 100M", rate, rateOf)
	}
	return hs, m, r, nil
}

// parseHostList parses "10.0.0.1-4" (a last-octet range) or a comma list.
func parseHostList(s string) ([]netip.Addr, error) {
	bad := fmt.Errorf("--hosts %q: want a range like 10.0.0.1-4 or a list like 10.0.0.1,10.0.0.2", s)
	if a, hi, ok := strings.Cut(s, "-"); ok {
		lo, err := netip.ParseAddr(a)
		n, err2 := strconv.Atoi(hi)
		if err != nil || err2 != nil || !lo.Is4() {
			return nil, bad
		}
		b := lo.As4()
		var out []netip.Addr
		for v := int(b[3]); v <= n; v++ {
			b[3] = byte(v)
			out = append(out, netip.AddrFrom4(b))
		}
		if len(out) < 2 || n > 254 {
			return nil, bad
		}
		return out, nil
	}
	var out []netip.Addr
	for _, f := range strings.Split(s, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil || !a.Is4() {
			return nil, bad
		}
		out = append(out, a)
	}
	if len(out) < 2 {
		return nil, bad
	}
	return out, nil
}

// writeJSONFile writes v to path ("-": stdout).
func writeJSONFile(path string, v any) error {
	if path == "-" || path == "" {
		return report.Encode(os.Stdout, v)
	}
	return report.WriteJSON(path, v)
}

func tdmaFMCmd() *cobra.Command {
	var (
		ns, dev, hosts, sch, mode, rate, out string
		slot, guard, lead, dur               time.Duration
		rt, leaseSlots                       int
		stagger, budget                      bool
		capa                                 capacityFlags
	)
	cmd := &cobra.Command{
		Use:   "fm",
		Short: "Run the TDMA fabric manager (grants as 802.1Qbb frames with a lease trailer)",
		Long: `fm runs the fabric manager in its namespace: a locked OS thread walks the
slots (raw clock_nanosleep, then a spin; SCHED_FIFO with --rt) and sends each
instant's grants with one sendmmsg to the hosts' unicast MACs (the bridge never
forwards 01:80:C2:00:00:01); a scheduler goroutine computes round r+1 from the
hosts' UDP demand reports (port 7400) while round r runs and sends each host its
schedule (port 7401); echoes calibrate each host's one-way delay d_est. The
schedule says whether the windows are staggered (--stagger): every host
follows it. With --budget (the default) the rounds of a transfer's last turns
carry a payload budget for each slot, which the hosts' raw senders keep to, so
that a pair's last planned slot finds what the plan left it.

It runs until Ctrl-C (or --duration) and prints its statistics as JSON: slot
boundary lateness (p50/p99/p99.9/max µs), sendmmsg time, rounds, idle slots,
control bytes, d_est per host, whether SCHED_FIFO was used.

With --capacity-host, that host's receive capacity alternates every
--capacity-period between the line rate and --capacity-low times it (what
'tdma oscillate' does to its switch port): the FM grants a window into it
only as that capacity drains the windows before (Withheld counts the others).`,
		Example: `  linkfabric up --mode kernel --preset star4 --prefix lf
  linkfabric tdma fm --netns lffm --hosts 10.0.0.1-4 --slot 5ms --guard 300us --rt 60`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hs, m, r, err := parseAgentFlags(hosts, mode, rate, "the hosts'")
			if err != nil {
				return err
			}
			if guard >= slot || slot <= 0 {
				return fmt.Errorf("--guard %v must be shorter than --slot %v", guard, slot)
			}
			caps, err := capa.capacities(len(hs), r, slot, m)
			if err != nil {
				return err
			}
			return runAgent(cmd.Context(), "tdma fm", ns, dur, out, func() (*fm.Manager, error) {
				return fm.New(fm.Config{Dev: dev, Hosts: hs, SlotLen: slot, Guard: guard, Lead: lead, Mode: m, Scheduler: sch,
					LeaseSlots: leaseSlots, LinkSpeed: uint64(r), RT: rt, Stagger: stagger, Budget: budget, Capacity: caps})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "netns", "", "network namespace to run in (e.g. lffm)")
	f.StringVar(&dev, "dev", "eth0", "the FM's interface")
	f.StringVar(&hosts, "hosts", "10.0.0.1-4", "host addresses in order: a range 10.0.0.1-4 or a comma list")
	f.DurationVar(&slot, "slot", 5*time.Millisecond, "slot length")
	f.DurationVar(&guard, "guard", 300*time.Microsecond, "guard time at the start of every slot")
	f.DurationVar(&lead, "lead", 0, "grants leave this long before the guard ends (0: the whole guard)")
	f.StringVar(&sch, "scheduler", "rotor", "rotor, wrr or bvn")
	f.StringVar(&mode, "mode", "lease", "lease, freerun or paper")
	cli.BitRateStringVar(f, &rate, "rate", "100M", "the hosts' line rate (slot capacity, PFC quanta)")
	f.IntVar(&leaseSlots, "lease-slots", 0, "slots a host may free-run after the last frame it heard (0: the number of hosts)")
	f.IntVar(&rt, "rt", 0, "SCHED_FIFO priority of the clock thread (0: the default scheduler)")
	f.BoolVar(&stagger, "stagger", true, "the hosts open their windows to destination d d·guard/N after the slot's guard and close them as much later (lease and freerun modes; every round's schedule says so, and every host follows it): the hosts' windows of a slot open at N instants, not all at once")
	f.BoolVar(&budget, "budget", true, "the rounds of a transfer's last turns carry a payload budget for each slot (a pair's slots before its last carry what a slot was planned to, no more), which the hosts' raw senders keep to (a host of a build without it refuses those schedules: bad_schedules, bad_schedule_err)")
	f.DurationVar(&dur, "duration", 0, "stop after this long (0: at Ctrl-C)")
	f.StringVar(&out, "json", "-", "write the statistics to this file (-: stdout)")
	capa.register(f)
	return cmd
}

func tdmaHostCmd() *cobra.Command {
	var (
		ns, dev, hosts, fmAddr, gateMode, mode, rate, work, size, out string
		index, rt, openRT, dst, gsoMax                                int
		drop                                                          float64
		seed                                                          uint64
		margin, spin, exitAfter, dur, pingEvery, pingDelay, nfqActive time.Duration
		pingOffsets                                                   []time.Duration
		queue                                                         uint16
	)
	cmd := &cobra.Command{
		Use:   "host",
		Short: "Run a TDMA host agent (raw sender or NFQUEUE gate)",
		Long: `host runs a host agent in its namespace. It receives grants (0x8808) with kernel
time stamps, holds a lease on each (it closes on its own timer), and in
--mode freerun opens on its own timer from the round schedule for a bounded
number of slots.

  --gate raw      the agent is the sender: --workload shuffle sends --size to
                  every other host, bulk sends --size (0: endless) to --dst,
                  rr sends blocks of --size to every other host in turn
                  (in each window to a host, it finishes that host's block
                  and starts at most one new one: §6.3), ping sends a batch
                  of RPC requests to the server --dst every --ping-every,
                  one at each --ping-offset after its window opens (§6.2),
                  pong reserves a slot a round for answers to the client
                  --dst, none only receives; frames are raw Ethernet
                  (0x88B5). Every raw agent answers the requests it
                  receives: at once if it holds a window to the requester,
                  else in its next one
  --gate nfqueue  kernel TCP/UDP to the other hosts is held in NFQUEUE
                  --queue (iptables-legacy rules with --queue-bypass, removed
                  at exit) and released by verdicts inside the windows

It runs until Ctrl-C, --duration after the first grant heard, or
--exit-after a completed shuffle, and prints its statistics as JSON: bytes
and windows per class, windows opened by grant and by free-run, late opens,
overrun bytes, control frames received and lost, lease expiries, collisions
seen as a receiver, NFQUEUE drops; rr blocks sent; for ping, RTT (request sent → answer) and wait (batch issued →
answer, the wait for the slot included) quantiles in µs and up to 8192
samples with each request's offset in its window.`,
		Example: `  linkfabric tdma host --netns lfh1 --index 0 --hosts 10.0.0.1-4 --workload shuffle --size 4MiB
  linkfabric tdma host --netns lfh2 --index 1 --gate nfqueue --mode freerun --drop-control 0.01
  linkfabric tdma host --netns lfh4 --index 3 --workload ping --dst 2 --ping-every 100ms --ping-offset 0,1ms,2ms
  linkfabric tdma host --netns lfh3 --index 2 --workload pong --dst 3
  linkfabric tdma host --netns lfh1 --index 0 --workload rr --size 117KB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hs, m, r, err := parseAgentFlags(hosts, mode, rate, "this host's")
			if err != nil {
				return err
			}
			var sz netns.ByteSize
			if size != "" {
				if sz, err = netns.ParseByteSize(size); err != nil {
					return fmt.Errorf("--size: %w", err)
				}
			}
			fa, err := netip.ParseAddr(fmAddr)
			if err != nil {
				return fmt.Errorf("--fm %q: want the FM's IPv4 address", fmAddr)
			}
			if gateMode != "raw" && gateMode != "nfqueue" {
				return fmt.Errorf("--gate %q: want raw or nfqueue", gateMode)
			}
			if gsoMax < 1500 || gsoMax > 65536 {
				return fmt.Errorf("--gso-max %d: want 1500 (one frame) to 65536 bytes", gsoMax)
			}
			if drop < 0 || drop >= 1 {
				return fmt.Errorf("--drop-control %v: want a fraction in [0, 1)", drop)
			}
			return runAgent(cmd.Context(), "tdma host", ns, 0, out, func() (*host.Agent, error) {
				return host.New(host.Config{Dev: dev, Index: index, Hosts: hs, FM: fa, Mode: m, NFQ: gateMode == "nfqueue", Queue: queue, NFQActive: nfqActive, GSOMax: gsoMax,
					Rate: uint64(r), Margin: margin, Spin: spin, RT: rt, OpenRT: openRT, DropControl: drop, Seed: seed,
					Work:      host.Workload{Kind: work, Bytes: int64(sz), Dst: dst, PingEvery: pingEvery, PingOffsets: pingOffsets, PingDelay: pingDelay},
					ExitAfter: exitAfter, Duration: dur})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "netns", "", "network namespace to run in (e.g. lfh1)")
	f.StringVar(&dev, "dev", "eth0", "the host's interface")
	f.IntVar(&index, "index", 0, "this host's index in --hosts (0-based)")
	f.StringVar(&hosts, "hosts", "10.0.0.1-4", "every host's address, in the FM's order")
	f.StringVar(&fmAddr, "fm", netns.StarFMAddr, "the fabric manager's address")
	f.StringVar(&gateMode, "gate", "raw", "raw (the agent sends) or nfqueue (gate kernel traffic)")
	f.Uint16Var(&queue, "queue", 3, "NFQUEUE number (--gate nfqueue)")
	f.IntVar(&gsoMax, "gso-max", host.GSOMax, "--gate nfqueue: the host's GSO packets are capped at this many bytes (ip link set DEV gso_max_size): the gate releases one whole, so a window carries only what fits in it of whole ones")
	f.DurationVar(&nfqActive, "nfq-active", 0, "--gate nfqueue: report a destination the gate held a packet for within this long as wanting every slot, not as what it holds (TCP beneath a fixed schedule; 0: what it holds)")
	f.StringVar(&mode, "mode", "lease", "lease, freerun or paper (must match the FM's)")
	cli.BitRateStringVar(f, &rate, "rate", "100M", "this host's line rate (its egress TBF)")
	f.DurationVar(&margin, "margin", 50*time.Microsecond, "taken off every window's close (timer error)")
	f.DurationVar(&spin, "spin", 150*time.Microsecond, "poll without sleeping for this long before a window opens (0: only sleep; a late wake-up costs the window's start)")
	f.IntVar(&rt, "rt", 0, "SCHED_FIFO priority of the agent's thread (0: the default scheduler)")
	f.IntVar(&openRT, "open-rt", 1, "SCHED_FIFO priority of the agent's thread only while it waits for a window's open, until the window's first frames are released (0: the default scheduler throughout; ignored with --rt)")
	f.Float64Var(&drop, "drop-control", 0, "drop this fraction of received grants on purpose (lost pause/unpause)")
	f.Uint64Var(&seed, "seed", 1, "seed of --drop-control")
	f.StringVar(&work, "workload", "none", "raw mode: shuffle, bulk, rr, ping, pong or none")
	f.StringVar(&size, "size", "", "bytes per flow (shuffle), in all (bulk; empty or 0: endless) or per block (rr)")
	f.IntVar(&dst, "dst", 0, "the peer's index: bulk's destination, ping's server, pong's client")
	f.DurationVar(&pingEvery, "ping-every", 100*time.Millisecond, "ping: a batch of requests this often")
	f.DurationSliceVar(&pingOffsets, "ping-offset", []time.Duration{0}, "ping: send one request at each of these offsets after the window to the server opens")
	f.DurationVar(&pingDelay, "ping-delay", 0, "ping: the first batch this long after the first schedule")
	f.DurationVar(&exitAfter, "exit-after", 0, "exit this long after a shuffle completes (0: run on)")
	f.DurationVar(&dur, "duration", 0, "stop this long after the first grant heard (0: at Ctrl-C)")
	f.StringVar(&out, "json", "-", "write the statistics to this file (-: stdout)")
	return cmd
}

// runAgent enters the namespace ns, starts an agent (the FM or a host's),
// says name is ready on stderr, runs it until ctx ends (or for dur, if
// positive), closes it and writes its statistics to out as JSON.
func runAgent[S any, A interface {
	Run(context.Context) (S, error)
	Close()
}](ctx context.Context, name, ns string, dur time.Duration, out string, start func() (A, error)) error {
	if err := cli.EnterNetns(ns); err != nil {
		return err
	}
	a, err := start()
	if err != nil {
		return err
	}
	defer a.Close()
	if dur > 0 {
		var cancel func()
		ctx, cancel = context.WithTimeout(ctx, dur)
		defer cancel()
	}
	fmt.Fprintln(os.Stderr, name+" ready")
	st, err := a.Run(ctx)
	if err != nil {
		return err
	}
	return writeJSONFile(out, st)
}
