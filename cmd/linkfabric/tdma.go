package main

import (
	"github.com/linkfabric/linkfabric/tdmaagent/tdmasim"
	"github.com/spf13/cobra"
)

func tdmaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tdma",
		Short: "PFC-driven TDMA (Vattikonda et al., EuroSys'12) with leases: experiments",
		Long: `tdma groups the experiments on PFC-driven TDMA (package tdmaagent): a fabric
manager gives hosts time slots with 802.1Qbb frames; hosts hold a lease on
every grant, so a lost pause never lets them send into another host's slot.

  sim      the simulated star (package tdmaagent/tdmasim): N hosts, a switch
           of rate-limited FIFO ports, the fabric manager; the issue's
           must-shows on a virtual clock, deterministic for a seed, no root
  fm, host the fabric manager and a host agent, as processes
  shuffle  all-to-all on the shaped star, TDMA against TCP (§6.1, Fig. 7)
  ctlloss  the shuffle under lost grants: paper vs lease vs free-run
  rpc      RPC latency under bulk traffic, TDMA against TCP and the idle
           network (§6.2, Figs. 9–10)
  rr       round-robin blocks by block size, TDMA against TCP (§6.3, Fig. 11)

The experiments (shuffle, ctlloss, rpc, rr) bring the star up and down
themselves, need root, refuse to start on a saturated machine unless
--force, and write JSON with a summary of medians, CSV and plots.`,
		Example: `  linkfabric tdma sim --scenario ctlloss
  sudo linkfabric tdma rpc --buffer 64k --arms tcp,tdma,idle
  sudo linkfabric tdma rr --blocks 0.25,0.5,1,2,4,16 --arms tcp,tdma`,
	}
	cmd.AddCommand(tdmaSimCmd(), tdmaFMCmd(), tdmaHostCmd(), tdmaShuffleCmd(), tdmaCtlLossCmd(), tdmaRPCCmd(), tdmaRRCmd())
	return cmd
}

var tdmaSuite = simSuite{title: "tdma sim", all: tdmasim.Scenarios}

func tdmaSimCmd() *cobra.Command {
	var (
		scenario string
		seed     uint64
		asJSON   bool
		out      string
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated TDMA star's scenarios and check their figures",
		Long: `sim runs scenarios of the simulated TDMA star (package tdmaagent/tdmasim):
hosts running the real gate, the real fabric-manager state machine and
schedulers, a switch whose output ports are rate-limited FIFOs with a bounded
buffer, and control frames (real wire encodings) delayed, woken up on and lost
as measured on this kind of machine (design §2.2–2.3). Each scenario measures
figures and checks each against a range computed from its configuration (see
the why column); the command fails if any figure is out of range.

The default profile is the design's star4-100M: 4 hosts at 100 Mbit/s,
1500-byte frames, 64 KB switch buffers, 5 ms slots, 300 µs guard, rotor
schedule, 4 MiB per flow.

How to read it: completion_over_ideal is the shuffle's finish time over the
time the line rate needs; collisions count data frames that reached a switch
port holding another sender's data; overrun_bytes count bytes a host sent after
its slot's end plus guard (into another host's time); peak_backlog_frames is
the most queue a data frame found ahead of it in the switch.

Scenarios:
` + tdmaSuite.list() + `
A run is deterministic for its seed and takes about a second.`,
		Example: `  linkfabric tdma sim
  linkfabric tdma sim --scenario shuffle,ctlloss --seed 7
  linkfabric tdma sim --json --out out/tdma-sim.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := tdmaSuite.pick(scenario)
			if err != nil {
				return err
			}
			return tdmaSuite.run(list, seed, asJSON, out)
		},
	}
	cmd.Flags().StringVar(&scenario, "scenario", "all", "scenario name, a comma-separated list, or all")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "random seed (a run is deterministic for it)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&out, "out", "", "also write the JSON report to this file (e.g. out/tdma-sim.json)")
	return cmd
}
