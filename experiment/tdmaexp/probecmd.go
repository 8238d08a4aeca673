package tdmaexp

import (
	"context"
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func tdmaProbeCmd() *cobra.Command {
	return cli.Group("probe",
		"The paper's §3.2 micro-benchmarks on this machine: timers, grant spread, software PFC reaction",
		`probe measures what the TDMA design rests on (the paper's §3.2, Figures 1–5;
design §2.2–2.3), on this machine:

  timers  how late each way of waking at slot boundaries is: time.Sleep, a
          Go ticker, the agents' hybrid sleeper under CFS and SCHED_FIFO
  spread  how far apart one batch of grants reaches the hosts of the star
          (kernel receive time stamps), idle and under background load; and
          the guard that spread asks for
  react   how fast a sender honouring PFC in software stops after a pause
          and resumes after an unpause, by frame size; and how long it stays
          silent after a pause timed in quanta

Each prints a table, writes JSON (with a summary), CSV (every sample) and a
PNG into --out, records CPU use and load, and refuses to start on a machine
whose CPUs are over 85 % busy (--force runs anyway and the report says so).`,
		`  linkfabric tdma probe timers --period 300us,1ms,5ms
  sudo linkfabric tdma probe spread --hosts 4 --load 0,200mbit --frame 1500,9000
  sudo linkfabric tdma probe react --sizes 64,512,1500,9000`,
		tdmaProbeTimersCmd(), tdmaProbeSpreadCmd(), tdmaProbeReactCmd())
}

// probeOut is where a probe's report goes (--out, --json).
type probeOut struct {
	dir    string
	asJSON bool
}

// add registers --force (into the probe's config), --out, whose files
// are named by files, and --json.
func (o *probeOut) add(f *pflag.FlagSet, force *bool, files string) {
	f.BoolVar(force, "force", false, "run even if the machine is saturated (the report says so)")
	f.StringVar(&o.dir, "out", "out/tdma-probe", "directory for "+files+" ('' to skip)")
	f.BoolVar(&o.asJSON, "json", false, report.JSONUsage)
}

// runProbe runs a probe with cfg on a testbed named prefix, writes its
// files into out's directory (unless empty) and prints its report.
func runProbe[C any, R report.FileResult](cmd *cobra.Command, prefix string, cfg C, probe func(context.Context, *bed.Env, C) (R, error), out probeOut) error {
	res, err := probe(cmd.Context(), &bed.Env{Prefix: prefix}, cfg)
	if err != nil {
		return err
	}
	return report.PrintFiles(res, out.dir, out.asJSON)
}

func tdmaProbeTimersCmd() *cobra.Command {
	var (
		cfg TDMAProbeTimersConfig
		out probeOut
	)
	cmd := &cobra.Command{
		Use:   "timers",
		Short: "Slot-boundary lateness of Go timers and of the agents' hybrid sleeper",
		Long: `timers wakes at absolute deadlines t0 + k·period, --samples times per
method and period, and records how late each wake-up is (design §2.2):

  sleep      time.Sleep to each deadline, in an ordinary goroutine
  ticker     a time.Ticker of the period (a tick more than a period late is
             counted as skipped, and measured from the last boundary passed)
  hybrid     the agents' sleeper (package tdma/clock): a locked OS
             thread, raw clock_nanosleep to 150 µs before the deadline, then
             a spin; under CFS
  hybrid-rt  the same under SCHED_FIFO --rt (0 skips it). Without the right
             to use SCHED_FIFO (root or CAP_SYS_NICE) the row is not run and
             the report says why; the hybrid CFS row is the fallback

How to read it: p50/p99/p99.9/max µs after the deadline. A slot boundary
late by more than the guard lets a host send into the next slot; Go timers
wake about 0.6 ms late at every period (the runtime's timers), which is
why the FM and the agents never use them. Measured on this kind of machine
(design §2.2): hybrid under SCHED_FIFO 0 / 11–45 / 42–137 µs p50/p99/p99.9
at 0.3–1 ms, time.Sleep ≈ 600 µs p50.

Writes timers.json, timers.csv (every sample) and timers-<period>.png (CDF
from the median up, log scale) into --out.`,
		Example: `  linkfabric tdma probe timers
  sudo linkfabric tdma probe timers --period 300us,1ms,5ms --samples 3000 --rt 50`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.Samples < 1 {
				return fmt.Errorf("--samples %d: want at least 1", cfg.Samples)
			}
			if cfg.RT < 0 || cfg.RT > 99 {
				return fmt.Errorf("--rt %d: want 1..99, or 0 to skip the SCHED_FIFO row", cfg.RT)
			}
			return runProbe(cmd, "", cfg, TDMAProbeTimers, out)
		},
	}
	f := cmd.Flags()
	f.DurationSliceVar(&cfg.Periods, "period", []time.Duration{time.Millisecond}, "slot periods, comma-separated (e.g. 300us,1ms,5ms)")
	f.IntVar(&cfg.Samples, "samples", 2000, "boundaries per method and period")
	f.IntVar(&cfg.RT, "rt", 50, "SCHED_FIFO priority of the hybrid-rt row (0: skip it)")
	out.add(f, &cfg.Force, "timers.json, timers.csv and the PNGs")
	return cmd
}

// probeStarFlags are the star's link flags of spread and react.
type probeStarFlags struct {
	starLinkFlags
	prefix string
}

func (s *probeStarFlags) add(cmd *cobra.Command, rate string) {
	s.bindLink(cmd.Flags(), rate)
	cmd.Flags().StringVar(&s.prefix, "prefix", "lfpr", "testbed namespace prefix")
}

func tdmaProbeSpreadCmd() *cobra.Command {
	var (
		cfg   TDMAProbeSpreadConfig
		star  probeStarFlags
		loads []string
		out   probeOut
	)
	cmd := &cobra.Command{
		Use:   "spread",
		Short: "How far apart one batch of grants reaches the hosts (Figs. 3–4)",
		Long: `spread brings up the star (--hosts hosts and the FM on one Linux bridge, TBF
at --rate on every host NIC and switch port). The FM sends a batch of
grants (802.1Qbb frames with the TDMA trailer, to each host's unicast MAC,
in one sendmmsg, the host order rotated per batch as the paper's §5.2.1)
every --interval, from a locked thread with the hybrid sleeper (SCHED_FIFO
--rt; CFS if refused, and the report says so). Each host's receiver takes
the kernel's receive time stamp of its grant (SO_TIMESTAMPNS; the
receivers are goroutines of this process with their sockets in the hosts'
namespaces: a time stamp does not depend on when the receiver wakes).

Arms: every --load (0: idle) and, under load, every --frame: a paced UDP
flow of that many IP bytes per datagram from h<N−1> to h<N> (a frame over
1500 sets the star's MTU to 9000).

How to read it: spread is max − min receive time of one batch across the
hosts (the paper measured 10–15 µs, rarely > 20 µs, with NICs); delivery
is FM send → kernel receive; the recommended guard is the spread's p99.9
plus one frame at the line rate (the frame still crossing the switch port);
the host's timer error is the gate's --margin. Lost grants are counted, not
hidden. Design §2.3 measured p50 38–46 µs, p99 80–120 µs for 4 hosts.

Writes spread.json, spread.csv (every batch) and spread.png (CDF per arm).`,
		Example: `  sudo linkfabric tdma probe spread
  sudo linkfabric tdma probe spread --hosts 4 --load 0,200mbit --frame 1500,9000 --batches 3000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.RequireRoot("tdma probe spread"); err != nil {
				return err
			}
			if cfg.Hosts < 2 || cfg.Hosts > 8 {
				return fmt.Errorf("--hosts %d: want 2 to 8", cfg.Hosts)
			}
			if err := star.parse(&cfg.Rate, &cfg.Burst, &cfg.Limit); err != nil {
				return err
			}
			cfg.Loads = nil
			for _, l := range loads {
				r, err := netns.ParseBitRate(l)
				if err != nil {
					return fmt.Errorf("--load: %w", err)
				}
				cfg.Loads = append(cfg.Loads, r)
			}
			if cfg.Batches < 1 || cfg.Interval < 100*time.Microsecond {
				return fmt.Errorf("--batches %d, --interval %v: want at least 1 batch and 100µs", cfg.Batches, cfg.Interval)
			}
			return runProbe(cmd, star.prefix, cfg, TDMAProbeSpread, out)
		},
	}
	star.add(cmd, "200M")
	f := cmd.Flags()
	f.IntVar(&cfg.Hosts, "hosts", 4, "hosts on the star (2..8)")
	f.StringSliceVar(&loads, "load", []string{"0", "200mbit"}, "background loads, comma-separated (0: idle)")
	f.IntSliceVar(&cfg.Frames, "frame", []int{1500, 9000}, "IP bytes per datagram of the load, comma-separated")
	f.IntVar(&cfg.Batches, "batches", 2000, "batches per arm")
	f.DurationVar(&cfg.Interval, "interval", time.Millisecond, "time between batches (a slot)")
	f.IntVar(&cfg.RT, "rt", 60, "SCHED_FIFO priority of the FM thread (0: CFS)")
	out.add(f, &cfg.Force, "spread.json, spread.csv and spread.png")
	return cmd
}

func tdmaProbeReactCmd() *cobra.Command {
	var (
		cfg  TDMAProbeReactConfig
		star probeStarFlags
		out  probeOut
	)
	cmd := &cobra.Command{
		Use:   "react",
		Short: "Software PFC reaction: stop and resume lag by frame size (Figs. 1, 2, 5)",
		Long: `react brings up a star of two hosts and the FM. h1 sends raw frames of one
size to h2 back to back at the line rate, through the real gate in paper
mode (package tdma/gate: 802.1Qbb pause/resume, quanta timed from the
kernel receive time of the frame) on a locked thread (SCHED_FIFO --rt, 0:
CFS): while class 0 is open it releases a frame each time the last one's
wire time at --rate is over, polling its control socket between frames;
while paused it sleeps in ppoll. The FM sends h1 --cycles pause/unpause
pairs, --hold apart, then --timed pauses of --pause (in quanta at the
rate) with no unpause. h2 records every frame's kernel receive time. h1,
h2 and the FM are goroutines of this process with their sockets in the
star's namespaces; the sender's and the FM's threads are pinned to
different CPUs, as they would be different machines (an FM waking on the
sender's CPU was seen to stop it before its pause was sent).

How to read it, per frame size (bytes with FCS; 64 is the minimum):
  stop lag     pause sent → h2's last frame. veth does not serialise, so a
               receive time is when a wire would start carrying the frame:
               this is the paper's lag less one frame time (the frame a NIC
               finishes), within a frame time below the sender's stop, and
               negative when the sender was between frames
  wire quiet   stop lag + one frame time: when a wire would carry no more
               (the paper's Fig. 2 top; it grows with the frame size)
  sender stop  pause sent → the sender's loop has it: the software reaction
  resume lag   unpause sent → h2's first frame
  delivery     control frame sent → h1's kernel receive time
  deviation    a pause timed in quanta: sent → h2's first frame after it,
               less its length (Fig. 2 bottom: how far a sender overstays)
The JSON also has data_transit (a frame's release → h2's kernel: a few µs
at every size when the TBFs do not queue). The paper: NIC 802.3x 2–6 µs
(Fig. 1); software PFC 100–200 µs with low variance (Fig. 5). Design §2.3
measured a stop p50 of 14–15 µs and a start p50 of 89 µs here. A size over
1518 sets the star's MTU to 9000. Frames lost (sent − received) and socket
drops are reported.

Writes react.json, react.csv (every lag) and react.png (medians by size).`,
		Example: `  sudo linkfabric tdma probe react
  sudo linkfabric tdma probe react --sizes 64,1500 --cycles 200 --timed 50 --pause 3.4ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cli.RequireRoot("tdma probe react"); err != nil {
				return err
			}
			if err := star.parse(&cfg.Rate, &cfg.Burst, &cfg.Limit); err != nil {
				return err
			}
			if cfg.Cycles < 1 || cfg.Timed < 0 || cfg.Pause <= 0 {
				return fmt.Errorf("--cycles %d, --timed %d, --pause %v: want at least 1 cycle, 0 or more timed pauses and a pause > 0", cfg.Cycles, cfg.Timed, cfg.Pause)
			}
			return runProbe(cmd, star.prefix, cfg, TDMAProbeReact, out)
		},
	}
	star.add(cmd, "100M")
	f := cmd.Flags()
	f.IntSliceVar(&cfg.Sizes, "sizes", []int{64, 512, 1500, 9000}, "frame sizes in bytes with FCS, comma-separated (64..9018)")
	f.IntVar(&cfg.Cycles, "cycles", 100, "pause/unpause pairs per size")
	f.IntVar(&cfg.Timed, "timed", 20, "pauses timed in quanta per size (0: none)")
	f.DurationVar(&cfg.Pause, "pause", 3400*time.Microsecond, "length of a timed pause (the paper's 3.4 ms), in quanta at --rate")
	f.DurationVar(&cfg.Hold, "hold", 0, "each on and off phase (0: the larger of 2 ms and 10 frame times)")
	f.IntVar(&cfg.RT, "rt", 0, "SCHED_FIFO priority of the sender's thread (0: CFS)")
	out.add(f, &cfg.Force, "react.json, react.csv and react.png")
	return cmd
}
