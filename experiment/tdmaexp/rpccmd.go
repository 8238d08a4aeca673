package tdmaexp

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func tdmaRPCCmd() *cobra.Command {
	var (
		sf                     tdmaStarFlags
		warm, phase, pingEvery time.Duration
		offsets                string
	)
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "RPC latency under bulk traffic: TDMA against kernel TCP and the idle network (§6.2, Figs. 9–10)",
		Long: `rpc reproduces the paper's §6.2 on a star of 4 hosts on one Linux bridge (TBF
at --rate on every host NIC and switch port, --buffer of switch buffer): h1 and
h2 send bulk into h3 while h4 sends RPCs (pings) to h3, which answers each.

  tcp   kernel TCP: two endless Go TCP senders into h3 and a TCP ping-pong
        h4 → h3 → h4 (64-byte messages); no TDMA. The bulk fills h3's switch
        port, so a ping waits behind up to --buffer of queue
  tdma  the FM and raw agents: h1, h2 send bulk to h3 in their slots; h4's
        agent reports a batch of requests as demand and sends one request at
        each --offsets after its window to h3 opens; h3's agent reserves a
        slot a round for its answers, which the FM's scheduler pairs with the
        request's slot, so h3 answers at once in the same slot
  idle  the same ping under TDMA with no bulk (the idle network's RTT), then
        the kernel TCP ping-pong on the idle star (the paper's "baseline")

Each run: --warm of bulk, --phase of bulk alone, then --phase of bulk with a
batch of pings every --ping-every (idle: --warm, then --phase of pings).

How to read it: RTT is from sending a request to receiving its answer,
measured by the client while the bulk runs; "wait" (TDMA arms) is from the
moment the batch was issued to the answer, so it includes the wait for the
client's slot (about one or two rounds: the demand report, the round being
computed one ahead, then the slot). "held" counts requests the client held
back from a window with less of it left than the server's recent
turnarounds (its answer could not come back in the slot): each goes at
once in the client's next window to the server, so its wait grows by the
rounds until then while its RTT stays in slot. "deferred" counts answers the server
could not send at once; in brackets, how many of them came before the
server's window back in the request's slot opened (staggered windows: the
server's window to the client h4 opens guard/N after the client's to it;
the answer goes at its open, in the slot), then how many were read by its
agent only after that window closed (the agent ran late: the answer waits
for the next window, about a round) and how late it read one at most, then
how many had no such window in their slot (the rest were read so late
that their round's schedule was gone, or never answered). bulk alone / with ping is h3's received bulk
goodput in each phase; hit is how much the ping cost it, and ping slots is
the share of slots the ping windows took (a ping slot is one h3 receives no
bulk in). The summary gives medians over --runs, TDMA p95 ÷ TCP p95 and
÷ idle p95, and checks the design's targets (met or MISSED): TDMA p95 ≤ ⅓
of TCP's, ≤ 1.5 × idle's, and a bulk hit ≤ the ping slots' share + 1 point.
The paper: TDMA RTT ≥ 3× lower than TCP's at p95, about the idle network's;
a ping every 100 slots cost ~1 % (use --ping-every 500ms for that share at
5 ms slots). Every request wakes the client's and the server's agents, so
many --offsets per slot take CPU from the bulk senders' agents on a small
machine, which shows in the hit; --offsets 0 sends one request a batch. Control overhead is the FM's grant bytes per host ÷ the rate.

It refuses to start when the CPUs are over 85 % busy (--force runs anyway
and the report says so). Writes rpc.json (with the summary), rpc-runs.csv,
rpc-samples.csv (every answered request: offset, RTT, wait),
rpc-rtt-offset.png (RTT against the send offset in the slot, Fig. 10) and
rpc-rtt-cdf.png (the RTT CDF of every arm, Fig. 9) into --out, with each
TDMA run's agent logs and statistics.`,
		Example: `  sudo linkfabric tdma rpc --buffer 64k --arms tcp,tdma,idle
  sudo linkfabric tdma rpc --runs 1 --warm 500ms --phase 2s --arms tdma,idle
  sudo linkfabric tdma rpc --ping-every 500ms --offsets 0,1ms,2ms,3ms,4ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c := TDMARPCConfig{Star: sf.parsed, Arms: sf.parsedArms, Runs: sf.runs, Force: sf.force, Dir: sf.out}
			if warm < 0 || phase < 100*time.Millisecond || pingEvery <= 0 {
				return fmt.Errorf("--warm %v, --phase %v, --ping-every %v: want warm ≥ 0, a phase of 100ms or more and a positive interval", warm, phase, pingEvery)
			}
			open := c.Star.Slot - c.Star.Guard - c.Star.Margin
			var err error
			if c.Offsets, err = parseOffsets(offsets, open); err != nil {
				return err
			}
			c.Warm, c.Phase, c.PingEvery = warm, phase, pingEvery
			_, err = runStar(cmd, sf.prefix, sf.out, c, TDMARPC, WriteTDMARPC)
			return err
		},
	}
	sf.register(cmd, tdmaStarDefaults{limitName: "buffer", arms: RPCArms, armsValue: "tcp,tdma,idle", prefix: "lfrp", out: "out/tdma-rpc"})
	f := cmd.Flags()
	f.DurationVar(&warm, "warm", time.Second, "bulk runs this long before the measured phases")
	f.DurationVar(&phase, "phase", 5*time.Second, "each measured phase: bulk alone, then bulk with the ping")
	f.DurationVar(&pingEvery, "ping-every", 100*time.Millisecond, "a batch of requests this often (the paper: every 100 slots)")
	f.StringVar(&offsets, "offsets", "auto", "offsets after the client's window opens, one request each per batch: a list like 0,1ms,2ms, or auto (0 to 80 % of the open part of the slot in 9 steps)")
	return cmd
}

// parseOffsets parses --offsets; every offset must fall in the open part
// of the slot (open = slot − guard − margin).
func parseOffsets(s string, open time.Duration) ([]time.Duration, error) {
	if open <= 0 {
		return nil, fmt.Errorf("the slot has no open part (slot − guard − margin = %v)", open)
	}
	if s == "auto" {
		var out []time.Duration
		for k := 0; k <= 8; k++ {
			out = append(out, (open * time.Duration(k) / 10).Round(10*time.Microsecond))
		}
		return out, nil
	}
	var out []time.Duration
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		if f == "0" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d >= open {
			return nil, fmt.Errorf("--offsets %q: want durations in [0, %v) (slot − guard − margin), like 0,1ms,2ms", f, open)
		}
		out = append(out, d)
	}
	return out, nil
}
