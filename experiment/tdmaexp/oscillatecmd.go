package tdmaexp

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/tdma/fmcore"
	"github.com/spf13/cobra"
)

func tdmaOscCmd() *cobra.Command {
	var (
		sf          tdmaStarFlags
		period, dur time.Duration
		low         float64
	)
	cmd := &cobra.Command{
		Use:   "oscillate",
		Short: "TCP on a link whose capacity oscillates: TDMA beneath TCP against TCP alone (§6.4, Figs. 12–13)",
		Long: `oscillate reproduces the paper's §6.4 on the star: one iperf3 TCP flow from h1
to h2 while h2's switch port, the flow's bottleneck, changes its rate every
--period between the line rate (--rate) and --low times it (its TBF's rate,
changed in place on a locked thread: the queue stays).

  tcp   kernel TCP alone: it finds each new capacity by filling the port's
        buffer and losing what overflows when the rate falls, and ramps up
        again when it rises
  tdma  the same TCP held in NFQUEUE gates (as in tdma nfqueue); the FM
        knows the capacity (tdma fm --capacity-host 2): it grants every
        window into h2 while the port runs at the line rate and, while it
        runs at --low, one only once the port has drained the last

Per run: goodput over the port's mean capacity (the line rate × (1 + low) ÷
2), how much of what the port could send it sent in high and in low phases
(and by fifth of a phase: the first fifth right after the change shows how
fast the sender follows it), the port's drops, TCP retransmissions, how late
the rate changes were; TDMA's collisions and the windows the FM withheld.
The paper's claim is that TDMA tracks the capacity better. A window is
--slot less its guard: TDMA's high phases are at most (slot − guard) ÷ slot
(0.94 at the default 5 ms and 300 µs; at 2 ms, 0.85, and TCP's GSO packets
fill a smaller window worse: measured 0.56 of the capacity against 0.74).
--period should hold several slots: the FM withholds whole windows. A
window in a low phase may leave most of itself in the port: a slot whose
window would not fit in --limit is refused.
Writes oscillate.json and runs.csv into --out with each run's agent logs.`,
		Example: `  sudo linkfabric tdma oscillate
  sudo linkfabric tdma oscillate --period 20ms --low 0.25 --runs 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dur < time.Second {
				return fmt.Errorf("--duration %v: want at least 1s (iperf3 counts whole seconds)", dur)
			}
			if !(low > 0 && low < 1) {
				return fmt.Errorf("--low %g: want a fraction of --rate, more than 0 and less than 1", low)
			}
			if period < 2*sf.parsed.Slot {
				return fmt.Errorf("--period %v: want at least two slots (--slot %v)", period, sf.parsed.Slot)
			}
			st := sf.parsed
			capa := fmcore.Capacity{Host: 1, Period: int64(period), Low: low, Burst: st.Rate.Time(st.Burst), Buffer: st.Rate.Time(st.Limit)}
			if err := capa.Check(st.Hosts, int64(st.Slot), int64(st.Guard)); err != nil {
				return fmt.Errorf("--slot %v, --limit %v, --burst %v: %w", st.Slot, st.Limit, st.Burst, err)
			}
			if sf.parsed.Mode == "freerun" {
				return fmt.Errorf("--mode freerun: the tdma arm needs lease or paper (in freerun the hosts open their schedules' windows without the FM's grant)")
			}
			c := TDMAOscConfig{Star: sf.parsed, Period: period, Low: low, Duration: dur.Truncate(time.Second), Arms: sf.parsedArms,
				Runs: sf.runs, Force: sf.force, Dir: sf.out}
			_, err := runStar(cmd, sf.prefix, sf.out, c, TDMAOsc, WriteTDMAOsc)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 2, arms: OscArms, armsValue: "tcp,tdma", prefix: "lfto", out: "out/tdma-oscillate",
		outUsage: "directory for oscillate.json, runs.csv and the agents' logs"})
	f := cmd.Flags()
	f.DurationVar(&period, "period", 50*time.Millisecond, "how long each phase lasts (the line rate first, then --low times it)")
	f.Float64Var(&low, "low", 0.1, "the port's rate in its low phases, a fraction of --rate")
	f.DurationVar(&dur, "duration", 10*time.Second, "length of the iperf3 flow (whole seconds)")
	return cmd
}
