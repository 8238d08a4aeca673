package tdmaexp

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func tdmaRRCmd() *cobra.Command {
	var (
		sf             tdmaStarFlags
		blocks         []float64
		warm, duration time.Duration
	)
	cmd := &cobra.Command{
		Use:   "rr",
		Short: "Round-robin blocks: per-host throughput by block size, TDMA against kernel TCP (§6.3, Fig. 11)",
		Long: `rr reproduces the paper's §6.3 on a star of --hosts hosts on one Linux bridge
(TBF at --rate on every host NIC and switch port, --limit of switch buffer):
every host sends a block to its next neighbour, then to the one after, and
so on around the others, for each block size of --blocks. Block sizes are in
slot capacities, C = rate × (slot − guard) / 8 bytes (printed with the
results).

  tdma  the FM and raw agents (workload rr): a host moves on to its next
        neighbour at every slot; in each window to a neighbour it finishes
        that neighbour's block and starts at most one new one, so a block
        smaller than C leaves the rest of its slot unused
  tcp   kernel TCP over persistent connections to every other host: a host
        writes a block to its next neighbour, waits for the neighbour's
        one-byte acknowledgement (the transfer is finished), then moves on

How to read it: for every (block, arm, run), per host is the bytes each host
received per second over --duration (after --warm), ÷ the port rate; the
table gives the mean over hosts and the least. TDMA's ceiling, printed with
the medians, is below 1: the guard and the margin taken off each window
((slot − guard − margin) / slot) times the raw frames' payload share. Expect
TDMA to fall roughly in proportion to block ÷ C below one
capacity. The summary gives medians over --runs and checks the design's
targets (met or MISSED): TDMA ≥ 0.85 × rate at every block ≥ 2 capacities,
and above TCP at every block ≥ 1 capacity. The paper: TCP at best ~0.45 of
the link, TDMA higher. Control overhead is the FM's grant bytes per host
÷ the rate. Lost frames and collisions are reported, not hidden: raw mode
does not retransmit.

It refuses to start when the CPUs are over 85 % busy (--force runs anyway
and the report says so). Writes rr.json (with the summary), rr.csv (per
host and run) and rr-throughput.png (throughput against block size, Fig. 11)
into --out, with each TDMA run's agent logs and statistics.`,
		Example: `  sudo linkfabric tdma rr --blocks 0.25,0.5,1,2,4,16 --arms tcp,tdma
  sudo linkfabric tdma rr --runs 1 --blocks 0.5,2 --warm 500ms --duration 2s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := TDMARRConfig{Star: sf.parsed, Arms: sf.parsedArms, Runs: sf.runs, Force: sf.force, Dir: sf.out}
			for _, b := range blocks {
				if b <= 0 || b > 1000 {
					return fmt.Errorf("--blocks %g: want block sizes in slot capacities, in (0, 1000]", b)
				}
			}
			if len(blocks) == 0 {
				return fmt.Errorf("--blocks: want at least one block size")
			}
			if warm < 0 || duration < 200*time.Millisecond {
				return fmt.Errorf("--warm %v, --duration %v: want warm ≥ 0 and a duration of 200ms or more", warm, duration)
			}
			c.Blocks, c.Warm, c.Duration = blocks, warm, duration
			_, err := runStar(cmd, sf.prefix, sf.out, c, TDMARR, WriteTDMARR)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{hosts: 4, limitName: "limit", arms: RRArms, armsValue: "tdma,tcp", prefix: "lfrb", out: "out/tdma-rr"})
	f := cmd.Flags()
	f.Float64SliceVar(&blocks, "blocks", []float64{0.25, 0.5, 1, 2, 4, 16}, "block sizes in slot capacities (rate × (slot − guard) / 8 bytes)")
	f.DurationVar(&warm, "warm", time.Second, "the workload runs this long before the measurement")
	f.DurationVar(&duration, "duration", 5*time.Second, "how long each (block, arm, run) is measured")
	return cmd
}
