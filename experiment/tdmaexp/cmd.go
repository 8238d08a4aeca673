package tdmaexp

import (
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/tdma/tdmacli"
	"github.com/linkfabric/linkfabric/tdma/tdmasim"
	"github.com/spf13/cobra"
)

// Command is the tdma command: its experiments, the simulator, and the
// fabric manager and host agents they start (package tdmacli).
func Command() *cobra.Command {
	return cli.Group("tdma",
		"PFC-driven TDMA (Vattikonda et al., EuroSys'12) with leases: experiments",
		`tdma groups the experiments on PFC-driven TDMA (package tdma): a fabric
manager gives hosts time slots with 802.1Qbb frames; hosts hold a lease on
every grant, so a lost pause never lets them send into another host's slot.

  sim      the simulated star (package tdma/tdmasim): N hosts, a switch
           of rate-limited FIFO ports, the fabric manager; the design's claims
           on a virtual clock, deterministic for a seed, no root needed
  fm       the fabric manager process (one per star)
  host     a host agent: raw sender or NFQUEUE gate for kernel traffic
  shuffle  all-to-all on the veth star, TDMA against kernel TCP (§6.1)
  ctlloss  the shuffle under lost grants (paper, lease, free-run), and with
           the FM frozen (SIGSTOP)
  slots    efficiency, collisions and drops per slot length: the smallest
           slot this machine can run
  rpc      RPC latency under bulk traffic, TDMA against TCP and the idle
           network (§6.2, Figs. 9–10)
  rr       round-robin blocks by block size, TDMA against TCP (§6.3, Fig. 11)
  nfqueue  unmodified kernel TCP held in NFQUEUE gates, released in slots
  oscillate  TCP on a link whose capacity oscillates, TDMA beneath it
           against TCP alone (§6.4, Figs. 12–13)
  probe timers   slot-boundary lateness: Go timers against the agents'
                 hybrid sleeper under CFS and SCHED_FIFO (§3.2, design §2.2)
  probe spread   how far apart one batch of grants reaches the hosts of the
                 star, idle and under load, and the guard it asks for
                 (Figs. 3–4)
  probe react    software PFC: stop and resume lag by frame size, and how
                 long a sender overstays a pause timed in quanta (Figs. 1, 2, 5)

Every experiment brings up its own star (network namespaces, a Linux bridge,
TBF at the line rate), removes it at the end or on Ctrl-C, refuses to start
on a saturated machine unless --force, and writes JSON, CSV and PNG.`,
		`  linkfabric tdma sim --scenario ctlloss
  linkfabric tdma probe timers --period 300us,1ms,5ms
  sudo linkfabric tdma probe spread --hosts 4 --load 0,200mbit --frame 1500,9000
  sudo linkfabric tdma probe react --sizes 64,512,1500,9000
  sudo linkfabric tdma shuffle --hosts 4 --size 4MiB
  sudo linkfabric tdma rpc --buffer 64k --arms tcp,tdma,idle
  sudo linkfabric tdma rr --blocks 0.25,0.5,1,2,4,16 --arms tcp,tdma`,
		append(tdmacli.Commands(),
			tdmaSimCmd(), tdmaShuffleCmd(), tdmaCtlLossCmd(), tdmaSlotsCmd(), tdmaRPCCmd(), tdmaRRCmd(), tdmaNFQCmd(), tdmaOscCmd(), tdmaProbeCmd())...)
}

var tdmaSuite = cli.SimSuite{Title: "tdma sim", All: tdmasim.Scenarios}

func tdmaSimCmd() *cobra.Command {
	return tdmaSuite.Command(&cobra.Command{
		Use:   "sim",
		Short: "Run the simulated TDMA star's scenarios and check their figures",
		Long: `sim runs scenarios of the simulated TDMA star (package tdma/tdmasim):
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
` + tdmaSuite.List() + `
A run is deterministic for its seed and takes about a second.`,
		Example: `  linkfabric tdma sim
  linkfabric tdma sim --scenario shuffle,ctlloss --seed 7
  linkfabric tdma sim --json --out out/tdma-sim.json`,
	})
}
