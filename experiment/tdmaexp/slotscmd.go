package tdmaexp

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
)

func tdmaSlotsCmd() *cobra.Command {
	var (
		sf                      tdmaStarFlags
		size, calibSize, guardS string
		slots                   []time.Duration
		target                  float64
	)
	cmd := &cobra.Command{
		Use:   "slots",
		Short: "Achievable slot lengths: TDMA shuffle efficiency, collisions and drops per slot",
		Long: `slots runs the TDMA shuffle (every host sends --size to every other host,
raw agents, rotor schedule: in every slot each host sends to one host and
receives from another) on the star at the port rate, once per slot length
in --slot, --runs times (interleaved), and reports the smallest slot whose
efficiency reaches --target with no switch drop: how short a slot this
machine can run (the paper ran 300 µs slots with a 15 µs guard; the design
expected 2–5 ms here, where the VM wakes in 40–75 µs and hardware PFC is
missing).

Per slot and run:
  efficiency   the share of the receivers' line time that carried data frames,
               over the steady part of the shuffle (from 10 % to 90 % of each
               host's bytes received, sampled every 10 ms): payload goodput ÷
               (R × 1455/1538, the payload per wire frame), the mean over
               hosts. The guard costs g/L of it: the expectation is (L − g)/L.
  goodput÷R    the same goodput ÷ the line rate R, which also pays the raw
               frames' headers (a constant 5.4 %)
  collisions   frames received after their window's end plus the guard
  switch drops drops at the switch's egress ports (TBF, --limit of buffer)
  lost frames  sequence gaps at the receivers (raw mode does not retransmit;
               a lost frame leaves its flow incomplete, and both are reported)
  guard needed the --guard auto rule applied to that run's own grant delays:
               above the guard used, the jitter outran it
  ctl %        control bytes per host ÷ R; CPU and load average

--guard auto picks one guard for every slot by a documented rule, from a
calibration shuffle run first at the largest slot with a guard of a tenth of
it, in which every host records each grant's delay (kernel receive time −
the FM's send time in the grant's trailer; every namespace shares one clock):

  guard = max over hosts (p99.9 delay − d_est)      a host closes late by this
        + max over hosts (d_est − p0.1 delay, ≥ 0)  a host opens early by this
        + one full frame (1538 B) at R              the frame in flight
  rounded up to 10 µs

A slot whose guard and --margin leave nothing to send is skipped and says so.
A slot meets when its median efficiency is ≥ --target and no run had a switch
drop. The medians also give the line time lost per slot beyond the guard,
(expected − efficiency) × L: what each window costs besides the guard (the
agent's late wake-up at the open, the --margin at the close, the last frame
that did not fit); measured here about 150-250 µs a slot on a quiet machine,
more under other load. It is why short slots fall further below (L − g)/L.

It refuses to start when the CPUs are over 85 % busy (--force runs anyway and
the report says so). Writes into --out: slots.json (config, the calibration,
every run with its progress, and a summary with the medians per slot and the
answer), slots.csv (a row per run), slots-efficiency.png (efficiency against
slot length on a log axis: every run, the medians, (L − g)/L and the target),
and each run's agent logs and statistics.`,
		Example: `  sudo linkfabric tdma slots --slot 0.5ms,1ms,2ms,5ms,10ms --guard auto
  sudo linkfabric tdma slots --slot 1ms,5ms --guard 300us --size 1MiB --runs 1
  sudo linkfabric tdma slots --hosts 6 --rate 200M --target 0.85`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(slots) == 0 {
				return fmt.Errorf("--slot: want slot lengths like 0.5ms,1ms,2ms,5ms,10ms")
			}
			for _, L := range slots {
				if L < 100*time.Microsecond || L > time.Second {
					return fmt.Errorf("--slot %v: want 100µs to 1s", L)
				}
			}
			c := TDMASlotsConfig{Star: sf.parsed, Slots: slots, Runs: sf.runs, Force: sf.force, Dir: sf.out}
			if guardS != "auto" {
				g, err := time.ParseDuration(guardS)
				if err != nil || g <= 0 {
					return fmt.Errorf("--guard %q: want auto or a duration like 300us", guardS)
				}
				c.Guard = g
			}
			var sz netns.ByteSize
			if err := cli.SizeFlag("size", size, &sz); err != nil {
				return err
			}
			c.Size = int64(sz)
			if err := cli.SizeFlag("calib-size", calibSize, &sz); err != nil {
				return err
			}
			c.CalibSize = int64(sz)
			if target <= 0 || target > 1 {
				return fmt.Errorf("--target %g: want an efficiency in (0, 1], like 0.9", target)
			}
			c.Target = target
			_, err := runStar(cmd, sf.prefix, sf.out, c, TDMASlots, WriteTDMASlots)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 4, sweepsSlots: true, runsUsage: "runs per slot length (interleaved); the summary gives medians",
		prefix: "lfsl", out: "out/tdma-slots", outUsage: "directory for slots.json, slots.csv, slots-efficiency.png and the agents' logs"})
	f := cmd.Flags()
	f.DurationSliceVar(&slots, "slot", []time.Duration{500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond}, "slot lengths to measure")
	f.StringVar(&guardS, "guard", "auto", "guard time of every slot: auto (measured, see above) or a duration")
	f.StringVar(&size, "size", "4MiB", "bytes each host sends to each other host")
	f.StringVar(&calibSize, "calib-size", "1MiB", "bytes per flow of the --guard auto calibration shuffle")
	f.Float64Var(&target, "target", 0.9, "efficiency a slot must reach (with no switch drop)")
	return cmd
}
