package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/linkcrc"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/metrics/prom"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultMetricsAddr is where `run` serves its statistics. Loopback is per
// network namespace, so each switch namespace has its own endpoint.
const defaultMetricsAddr = "127.0.0.1:9477"

// readyMessage is logged once the dataplane forwards; orchestrators wait for it.
const readyMessage = "dataplane ready"

func parseXDPMode(s string) (bpf.AttachMode, error) {
	switch s {
	case "auto", "":
		return bpf.XDPAuto, nil
	case "native", "drv":
		return bpf.XDPNative, nil
	case "generic", "skb":
		return bpf.XDPGeneric, nil
	}
	return 0, fmt.Errorf("--xdp-mode %q: want auto, native or generic", s)
}

func runCmd() *cobra.Command {
	var (
		ns, xdpMode, metricsAddr string
		fastPath, zeroCopy       string
		needWakeup               bool
		cfg                      dataplane.Config
		mode                     string
		statsEvery               time.Duration
		peerMAC, linkSpeed       string
		cpuProfile               string
		integrity                string
		node, preset, topoFile   string
		prefix                   string
		portRate, portBuffer     string
		credits, packing         bool
		preCredit                int
	)
	cmd := &cobra.Command{
		Use:   "run {--node SW | --netns NS --host-port IF[,IF...] --link-port IF[,IF...]} --mode forward",
		Short: "Run the dataplane on a node's ports (foreground; Ctrl-C stops it)",
		Long: `run attaches linkfabric's XDP program to both ports, binds AF_XDP sockets on one
shared UMEM, and moves frames between them with the pipeline of --mode:

  forward   every frame both ways, unchanged (the baseline bump in the wire)
  lg        LinkGuardian: frames sent on the link are numbered and kept until
            ACKed; the receiving end detects holes, asks for retransmission
            (N copies, Equation 2), and delivers in order (reorder buffer,
            PFC pause/resume to the sender by Algorithm 2)
  lgnb      LinkGuardianNB: the same retransmission, but frames are delivered
            as they arrive (de-duplicated, not reordered)
  monitor   frames are sequenced and the link's loss is measured from the gaps,
            nothing is retransmitted; with --auto the policy switches
            protection on (lg), falls back to lgnb at high loss, and off again
  cells     a node of a cell fabric (Stardust-style): with host ports an edge,
            without one a fabric node; any number of link ports (up to 16)
  fec       RAIL's coding: after every n data frames a parity frame (their
            XOR), so the far end rebuilds any one loss per group, or every
            frame sent k times; n from the measured loss and a target

forward, lg, lgnb, monitor and fec take one host port and one link port. Both switches
of a link must run the same mode. By default each end protects
both directions (--protect both). In lg, lgnb and monitor the two ends first agree
through a link session (HELLO/HELLO-ACK on the priority lane): the smaller of
their windows becomes the credit, the lanes, MTU and link speed are agreed, the
--protect settings must fit together (tx here with rx there), and both reset their
sequence numbers. When either end restarts (even kill -9), they agree again and
nothing from before is delivered. Host frames wait --session-wait for the session;
then the newest --session-keep of each class stay (after a flap, the hosts' latest
TCP retransmissions, which cross as soon as the link is back) and the rest are dropped.
An interface that goes down is link state: the dataplane waits for it to come up.

Fast path (mode forward): by default (--fastpath auto) each port's XDP program
redirects frames to the other port in the kernel (bpf_redirect_map through a
devmap), counted per port; no frame wakes the process. A direction falls back
to AF_XDP when the kernel cannot carry it, and the log and 'linkfabric stats'
(dataplane.fast_path) say which path each direction takes and why: XDP in
generic mode, --busy-poll, a --port-rate, or a target that cannot take
redirected frames (down, a driver without ndo_xdp_xmit, a veth whose peer has
neither GRO on nor an XDP program: 'ethtool -K PEER gro on' while it is up).
Targets are re-checked every 100 ms and on link changes. --fastpath xdp
refuses to start when the configuration rules the kernel path out;
--fastpath afxdp always uses AF_XDP (the path measured before the fast path).

Fast path (modes lg, lgnb, monitor): by default (--fastpath auto) LinkGuardian's
common case runs in the kernel, both halves. Receive: the link port's XDP program
delivers each data frame that is the next one expected to the host port itself (link
header stripped), while nothing needs the worker; every other frame (a hole, a
duplicate, a retransmitted copy, control frames) goes to the worker, which takes
the in-order point back, handles it as before and hands the point back once it
holds nothing (a late copy of a frame the kernel delivered is dropped without
taking the point). After taking the point back the worker holds its deliveries until
300 us after the kernel's last one: a veth peer hands the kernel's frames to
its stack in batches after the worker's, so without the wait TCP at the host
saw them out of order (linkguardian.host_gate_waits and host_gate_held in
'linkfabric stats'). Send (with --protect both): while the kernel owns sending
the host port's XDP program numbers a host frame, keeps a copy in a
memory-mapped ring for retransmission, stamps the link header (the receive point
as a piggybacked ACK) and the integrity trailer, and redirects it to the link
port; a frame it cannot send (credit, a pause, a frame the worker still has to
read) gives sending to the worker, which sends as before and hands sending back
once it holds nothing (linkguardian/fasttx.go). It does not wait for the worker
to apply the peer's ACKs: an ACK the link port's program read opens the credit
window in the kernel too, and each ACK it piggybacks moves the frame at which the
receive path asks the worker for an explicit ACK (linkguardian.kernel_send_widened,
kernel_wake_moves in 'linkfabric stats'). The send half needs a link port of one
queue: a redirected frame leaves on the queue of the CPU that sent it (veth: the
peer's RX queue of that CPU; a NIC: the CPU's XDP TX queue), and the far end judges
queue 0 only. On a link of several queues it stays in the worker and the log says
so; on a NIC run 'ethtool -L LINKDEV combined 1' at both ends (the pair testbed's
link has one queue). A direction that cannot take the kernel path logs
why (the line "fast path ... path afxdp reason ...", and dataplane.fast_path in
'linkfabric stats'); --fastpath xdp fails instead, naming the port and the fix;
--fastpath afxdp keeps both halves in the worker (the path measured before).
On the 2-core veth pair both halves bring lg's short-flow p50 to 1.1-1.2x
forward's (the worker path: 1.8-2.1x); bulk goodput is about 0.8x forward's with
the csum trailer (auto's choice on veth), about 0.5x with crc32c, which the kernel
seals and checks in the same softirq, and about 0.85x with --integrity off
(docs/results.md). Once the kernel's credit window is full, sending goes to the
worker, which under a saturating flow seldom gets it back: with the send half
--ring-size defaults to 4096 and the TX buffer to all of it (a credit window of
3584 frames, more than one TCP flow's default send buffer keeps in flight), which
makes that rare. With a trailer the kernel checks it too (a frame that fails goes
to the worker, which counts and drops it; frames beyond the first page, jumbo
frames, are checked by the worker); 'linkfabric stats' shows the directions
(dataplane.fast_path), the receiver's FastDelivered, FastClaims and FastHandOffs,
and the sender's FastSent, FastSendClaims and FastSendHandOffs.

It runs in the foreground and logs with structured logging; SIGINT or SIGTERM
detaches the programs and exits. Statistics are served on --metrics (loopback of
the namespace by default): /stats.json, read by 'linkfabric stats', and /metrics
for Prometheus.

Cells (--mode cells): an edge learns where host MACs live (unknown and broadcast
destinations are flooded to every edge, rate-limited), queues each host frame in a
virtual output queue per destination edge, host port and 802.1p class, asks the
destination for credit, and on a grant packs the queue's frames into cells of
--cell-size payload bytes (--packing=false: one frame's bytes per cell), sprayed
over the link ports that reach the destination (--spray perm: a random permutation,
reshuffled; p2c: the shorter TX backlog of two random links; hash: one link per
flow). The destination edge reassembles each source's stream in order and delivers
the frames on their host port; its scheduler grants at the port's rate (its
--port-rate, else 10 Gbit/s) plus 2 %, and stops while the port's egress queue is
deep. Each VOQ may send --pre-credit bytes (4096) ahead of its grant, so the first
packets after an idle spell skip the credit round trip. --credits=false pushes cells
as frames arrive. A fabric node (no host port)
sprays each cell again toward its edge, decrementing its hop count and marking it
(FCI) where its queue is deep. Every node sends REACH on every link each
--reach-interval (5ms) and builds its routes from them: a link missing --reach-th
(30) in a row, or whose interface goes down, leaves the routes; it returns after
--reach-up (3) good intervals. A hole in a stream is skipped after --reasm-timeout
(30ms). Every node of a fabric needs its own --node-id (edges 1-1023, fabric nodes
1-65535); the default is derived from the MAC of the first port, so two nodes may
collide by chance: give ids by hand ('up' does). Control frames (credits, REACH) use
a link's priority lane when it has two queues. --integrity applies to the link
ports as in lg. Statistics: the "cells" object of 'linkfabric stats'.

--link-mode (cells) is what runs under the cells on every link port: none (cells
as they are: a link that dies loses what was on it), lg (LinkGuardian: cells are
sequenced in place, retransmitted on loss and delivered in order per link; a link
that leaves the routes, by interface state, missed REACHes, its session, or its
cells going un-ACKed while the other links' are ACKed, hands every cell it still
held back to the sprayer, so a link failure loses no packet; the reassembly drops
the copies that had arrived), lgnb (the same, delivered as they come), monitor
(sequenced, not retransmitted: a link's measured loss above 1e-3 takes it out) or
fec (RAIL's XOR coding per link, as --mode fec below: cells are numbered in place,
a parity frame follows every n, the far end rebuilds any one lost cell per group
and hands cells up as they come, the reassembly ordering them (--fec-wait and
--fec-immediate do not apply); credit and REACH
frames go uncoded; n from --fec-n, --fec-loss or --fec-target with the loss the
far end measures; that measured loss is also the link's loss rate for exclusion;
cells are 22 bytes smaller, for the parity header).
Both ends of a link need the same --link-mode; the link session then carries each
node's --node-id, and refuses a link whose two ends have the same one. For zero
loss the detection must beat the reassembly timeout: e.g. --reach-th 3 with
--reasm-timeout 30ms. --tx-buffer sizes each link's TX buffer (default 512).

FEC (--mode fec, both directions, both ends in mode fec; RAIL, NSDI'17): every
frame on the link carries the link header's sequence number; after every n data
frames the sender sends a parity frame, the XOR of the n padded to the longest
(with their lengths), and closes a group early after --fec-flush (1ms) so
that the receiver never waits long for it. The receiver rebuilds any single loss
of a group, drops duplicates, and delivers in order, waiting at most --fec-wait
(2ms) behind a hole before giving up on it (--fec-immediate: at once, out of
order). n: --fec-n N fixes it (with --fec-copies K each frame also goes K times;
--fec-n 0 --fec-copies 3 is pure replication); --fec-loss P has the link policy
choose for loss P; by default the policy chooses from the loss each receiver
measures (per transmission, copies corrected for, over --fec-window) and reports
to its peer in the link session's keepalives: no protection below --fec-target
(1e-3), XOR parity with RAIL's n (the largest with
1−(1−p)^(n+1)−(n+1)p(1−p)^n < target) up to 3 %, replication (×3, or
--fec-copies) up to 10 %; for bursty loss (mean loss run ≥ 1.5) and from 10 % to
25 % lg, above that exclude (as 'fec table' measured), which mode fec can only report (the sender keeps
what it has; run --mode lg). Until the first report n is chosen for ten times the
target. Decisions are logged when they change and shown in 'linkfabric stats'
(fec.policy). A parity frame is 22 bytes longer than its longest frame: the link
ports need an MTU 26 bytes above the hosts' (22 with --integrity off); run checks
it ('linkfabric up --mode fec' sets it).

Integrity (lg, lgnb, monitor, cells, fec): a real link's MAC drops a frame that
fails its FCS, so corruption looks like loss, which LinkGuardian repairs; veth and
tc netem corrupt frames without dropping them. --integrity auto (the default) is
off on a link port whose MAC checks the FCS (a NIC on a bus: 'ethtool -i' shows a
bus-info, and the driver is not a VM's paravirtual one such as virtio_net) and csum
on a virtual link (veth, tun, bridges): the checksum costs the kernel path a fifth of
what the CRC does (lg's goodput 0.80x forward's against 0.52x), and sees every
single-bit flip the impairment makes; the log says what it chose and why. With a
trailer every frame on the link carries it and a frame that fails it is dropped and
counted (corrupt_frames in 'linkfabric stats'), so a corrupted frame is repaired
like a lost one. --integrity crc32c puts a CRC32C there (every error of up to 3 bits
and every burst of up to 32; 0.79 against 0.14 us for a 1514-byte frame in XDP,
which has no CRC instruction); csum is the Internet checksum (RFC 1071) of the frame
and its length in the same 4 bytes: it sees every single-bit error and burst of up
to 15 bits, but misses errors that cancel in a 16-bit sum, as the hosts' own TCP and
UDP checksums do. Both ends must end up with the same --integrity (auto does on a
veth pair and on two NICs): a frame without the trailer fails the check.

Port rates (every mode): veth has no speed and AF_XDP transmit bypasses the
qdiscs, so the dataplane can limit what a port sends itself. --port-rate
host0=1G,link0=500M gives each named port a line rate (bit/s with k, M, G;
each frame costs its length plus 24 bytes of preamble, FCS and gap, as on
Ethernet) and an egress queue in front of it: frames wait there for the token
bucket (depth 500 µs at the rate, at least 16 KiB) and a frame that finds it
full is dropped and counted (egress in 'linkfabric stats'). --port-buffer
link0=64K sizes a queue in bytes (K = 1024; default 256K; at most --ring-size
frames). With --node the topology's rate and buffer of each port apply; a
flag wins for the ports it names (--port-rate link0=0 turns a rate off).

Per-class PFC (802.1Qbb): in lg, lgnb, monitor and fec, host frames wait for the
link in one queue per 802.1p class (VLAN PCP, or the IP class selector, DSCP/8),
served highest class first, and PAUSE/PFC frames received on the link port pause
the classes they name. --pfc adds the other direction: a class holding
--pfc-xoff frames (default 512 of the 1024 the queues hold) makes the dataplane
send a PFC frame out of the host port pausing that class for --pfc-pause (default
65535 quanta at the host port's speed: its --port-rate, else --link-speed, else
10G); the pause is sent again each time half of it has run out while the class
holds more than --pfc-xon frames (default half of --pfc-xoff), and a frame with
quanta 0 resumes the class once it holds --pfc-xon or fewer. In mode forward
--pfc also puts host frames in the class queues and honours PAUSE/PFC from the
link (consumed, not forwarded), which only the AF_XDP path can: --pfc rules the
XDP fast path out. 'linkfabric stats' shows dataplane.pfc: pfc_rx and, per
class (arrays of 8, class 0 first), pfc_rx_pause, pfc_tx (frames sent toward the
host naming the class), pfc_xoff (pauses begun), pfc_xon (resumes); pfc_tx minus
both is the refreshes.

AF_XDP on real NICs: --zerocopy chooses how every socket moves frames, never
left to what the first port happens to allow. auto (the default) binds zero-copy
and, if any port refuses it (a driver without AF_XDP zero-copy, as veth, or a port
whose XDP program runs in generic mode), binds them all in copy mode; on binds
zero-copy or refuses to start, naming the port and the fix; off binds copy mode.
The ports share one UMEM, so they share one mode. The log line "AF_XDP sockets
bound" says what was asked, what the sockets got and why; 'linkfabric stats' has
it under dataplane.afxdp, and each port's sockets (one per receive queue) with
their mode under port_NAME.sockets. --need-wakeup (default true) binds with
XDP_USE_NEED_WAKEUP: a transmit kick or a fill-ring wakeup is a syscall only when
the driver asks (in copy mode every kick still is). The UMEM is sized per queue:
--frames-per-queue (2 × --ring-size) for each socket, plus the mode's buffers.
A link port with a single TX queue has no priority lane: PFC, loss notifications,
retransmissions and session frames are placed ahead of data within its one queue,
the log says so once, and the link session agrees on one lane at both ends.

One worker per queue: --workers N (default 1) runs N worker loops, each on its
own thread, worker i owning queue i of every port with its own AF_XDP sockets,
UMEM and pipeline. Every port needs N RX and TX queues (ethtool -L DEV combined N
on a NIC; queues: N in a testbed topology). forward forwards host queue i ⇄ link
queue i; lg, lgnb and monitor run one LinkGuardian instance per lane (queue),
each with its own sequence space and link session, and no separate priority queue
(control goes ahead of data within each lane's queue). Both ends need the same
--workers. Several workers use AF_XDP only (--fastpath xdp is refused) and refuse
--pfc and --port-rate. 'linkfabric stats' shows each worker's share under
dataplane.workers, the lanes' LinkGuardian counters summed in linkguardian.core
(histograms and timers there are lane 0's) and each lane's whole LinkGuardian
document under linkguardian_lanes. On a real
NIC the peer's RSS picks the RX queue: steer lane i's frames to queue i
(docs/workers.md); on veth a frame sent on queue i arrives on queue i.

Jumbo frames: the XDP programs are loaded with frags (multi-buffer XDP), so
native XDP takes any MTU on veth (and on NICs whose drivers have multi-buffer
XDP), and the fast path redirects jumbo frames in the kernel. The AF_XDP path
needs UMEM frames that hold the largest frame: --frame-size defaults to 4096
up to MTU 3826 and to the next power of two above (16384 at MTU 9000). The
kernel's AF_XDP buffers are at most a page, so such frames arrive in 4 KiB
pieces (multi-buffer AF_XDP, XDP_USE_SG) that the worker copies together, and
leave as pieces again; the UMEM takes --frames × --frame-size bytes (about
300 MiB at MTU 9000). TCP through the dataplane needs TX checksum offload off
on the sending ends (ethtool -K DEV tx off); the testbed does it. Link ports need
an MTU at least 12 bytes above the hosts' (8 for the link header, 4 for the
integrity trailer; 8 with --integrity off; 26 and 22 in mode fec); run checks this
at startup, and the testbed gives them 26, which fits every mode.

On real NICs, set at both ends of the link: 'ethtool -L LINKDEV combined 1' (LinkGuardian's send fast path) and 'ip link set LINKDEV mtu HOSTMTU+26' (every mode).`,
		Example: `  linkfabric run --node sw1 --mode lg                 # the pair testbed's sw1 (namespace lfsw1)
  linkfabric run --netns lfsw1 --host-port host0 --link-port link0,link1,link2,link3 --mode cells --node-id 1
  linkfabric run --node sw2 --preset bundle --mode cells --node-id 2 --spray p2c --cell-size 256 --credits=false
  linkfabric run --node f1 --preset fabric3 --mode cells --node-id 101   # a fabric node: link ports only
  linkfabric run --netns lfsw1 --host-port host0 --link-port link0 --mode forward
  linkfabric run --node sw1 --mode forward --fastpath afxdp   # the AF_XDP path, for comparison
  linkfabric run --node sw1 --mode lg --fastpath afxdp   # LinkGuardian in the worker, for comparison
  linkfabric run --netns sw1 --host-port enp1s0f0 --link-port enp1s0f1 --mode lg --zerocopy on   # NICs: zero-copy or fail
  linkfabric run --node sw1 --mode forward --fastpath afxdp --need-wakeup=false
  linkfabric run --netns lfsw2 --host-port host0 --link-port link0 --mode lg --target-loss 1e-8
  linkfabric run --netns lfsw1 --host-port host0 --link-port link0 --mode lg --link-loss 1e-2 --busy-poll
  linkfabric run --node sw2 --mode forward --port-rate host0=200M --port-buffer host0=128K
  linkfabric run --node sw1 --mode forward --pfc --link-speed 25G   # per-class PFC both ways
  linkfabric run --node sw1 --mode fec --fec-target 1e-3      # n from the measured loss
  linkfabric run --node sw1 --mode fec --fec-n 4 --fec-immediate
  linkfabric run --node sw1 --mode fec --fec-n 0 --fec-copies 3   # replication ×3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRoot("run"); err != nil {
				return err
			}
			shapes, err := parsePortShapes(portRate, portBuffer)
			if err != nil {
				return err
			}
			if err := nodePorts(&cfg, &ns, node, preset, topoFile, prefix); err != nil {
				return err
			}
			cfg.Shape = shapes.apply(cfg.Shape)
			if err := enterNetns(ns); err != nil {
				return err
			}
			if cfg.XDPMode, err = parseXDPMode(xdpMode); err != nil {
				return err
			}
			if cfg.FastPath, err = dataplane.ParseFastPath(fastPath); err != nil {
				return err
			}
			if err := afxdpFlags(&cfg, zeroCopy, needWakeup); err != nil {
				return err
			}
			cfg.Mode = dataplane.Mode(mode)
			cfg.Netns = ns
			if err := fecFlags(cmd, &cfg); err != nil {
				return err
			}
			cfg.Cells.NoCredits, cfg.Cells.NoPacking = !credits, !packing
			if preCredit < 0 {
				return fmt.Errorf("--pre-credit %d: want bytes ≥ 0 (0: none)", preCredit)
			}
			cfg.Cells.PreCredit = preCredit
			if preCredit == 0 {
				cfg.Cells.PreCredit = -1 // none
			}
			cfg.Logger = log
			if cfg.LG.Integrity, err = linkcrc.ParseMode(integrity); err != nil {
				return err
			}
			if peerMAC != "" {
				hw, err := net.ParseMAC(peerMAC)
				if err != nil || len(hw) != 6 {
					return fmt.Errorf("--peer-mac %q: want a MAC address like 02:00:00:00:00:01", peerMAC)
				}
				copy(cfg.LG.PeerMAC[:], hw)
			}
			if linkSpeed != "" {
				if cfg.LG.LinkSpeed, err = parseBitRate(linkSpeed); err != nil {
					return err
				}
			}
			if cpuProfile != "" {
				f, err := os.Create(strings.NewReplacer("%n", ns, "%p", strconv.Itoa(os.Getpid())).Replace(cpuProfile))
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			err = runDataplane(cmd.Context(), cfg, metricsAddr, statsEvery)
			if err != nil && ns != "" {
				err = fmt.Errorf("network namespace %s: %w (`ip -n %s link` lists its interfaces)", ns, err, ns)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&ns, "netns", "", "network namespace of the ports (default: the current one)")
	f.StringVar(&cfg.HostPort, "host-port", "", "interface facing the host, or a comma-separated list (mode cells: an edge with several host ports; none: a fabric node)")
	f.StringVar(&cfg.LinkPort, "link-port", "", "interface facing the link to the other switch, or a comma-separated list of up to 16 (modes that drive a bundle; forward, lg, lgnb and monitor take one)")
	f.StringVar(&portRate, "port-rate", "", "line rates of ports, PORT=RATE,...: e.g. host0=1G,link0=500M (bit/s on the wire; 0: unlimited, the default)")
	f.StringVar(&portBuffer, "port-buffer", "", "egress queues of rate-limited ports, PORT=BYTES,...: e.g. host0=256K,link0=64K (K = 1024; default 256K)")
	f.StringVar(&node, "node", "", "take --netns, --host-port, --link-port and the port rates from this switch of the testbed topology (--preset or --topology, --prefix), e.g. sw1")
	f.StringVar(&preset, "preset", "pair", "with --node: the testbed's topology preset")
	f.StringVar(&topoFile, "topology", "", "with --node: the testbed's YAML topology file (instead of --preset)")
	f.StringVar(&prefix, "prefix", netns.DefaultPrefix, "with --node: the testbed's prefix (the namespace is prefix + node)")
	f.StringVar(&mode, "mode", "forward", "pipeline: forward, lg (LinkGuardian, in order), lgnb (non-blocking), monitor (sequenced, unprotected: measures loss), cells (a cell fabric's edge or fabric node) or fec (RAIL's XOR parity or replication)")
	f.StringVar(&cfg.Cells.Spray, "spray", "perm", "cells: how a cell picks its link: perm (round-robin in a random permutation, reshuffled), p2c (the shorter TX backlog of two random links) or hash (one link per flow)")
	f.IntVar(&cfg.Cells.CellSize, "cell-size", 0, "cells: payload bytes per cell, at least 20 (default: what fits the smallest link MTU with 42 bytes of link and cell headers and, unless --integrity off, the 4-byte trailer: 1494 at link MTU 1526, the testbed's)")
	f.BoolVar(&credits, "credits", true, "cells: cells leave within the destination's credit grants (pull); false: as frames arrive (push)")
	f.IntVar(&preCredit, "pre-credit", dataplane.DefaultCellPreCredit, "cells: standing pre-credit, bytes each VOQ may send ahead of its grant (the first packets after an idle spell skip the credit round trip; each source may put this much unscheduled toward a port); 0: none")
	f.BoolVar(&packing, "packing", true, "cells: pack a queue's frames back to back into cells; false: each frame's bytes in cells of their own")
	f.Uint16Var(&cfg.Cells.NodeID, "node-id", 0, "cells: this node's fabric address, unique in the fabric: 1-1023 for an edge, 1-65535 for a fabric node (default: derived from the first port's MAC, which may collide: give ids when you build a fabric by hand)")
	f.StringVar(&cfg.Cells.LinkMode, "link-mode", "none", "cells: what runs under the cells on each link: none, lg, lgnb, monitor or fec (see above)")
	f.DurationVar(&cfg.Cells.ReachInterval, "reach-interval", 0, "cells: REACH period on every link (default 5ms)")
	f.IntVar(&cfg.Cells.ReachTh, "reach-th", 0, "cells: REACH intervals in a row without one that take a link out of the routes (default 30: with the 5ms period rides out a peer's scheduling stalls of up to 150ms)")
	f.IntVar(&cfg.Cells.ReachUp, "reach-up", 0, "cells: good REACH intervals in a row that bring a link back (default 3)")
	f.DurationVar(&cfg.Cells.ReasmTimeout, "reasm-timeout", 0, "cells: how long a missing cell may hold up its stream before it is skipped (default 30ms)")
	f.StringVar(&cfg.Cells.LossClasses, "loss-classes", "", "cells: loss classes (RAIL's virtual topologies, per link): the bounds of classes 1, 2, ... on each link's measured loss rate, e.g. 1e-6,1e-3,1e-1 (or default: those); a cell crosses only links of its class or better, at every hop, a link not yet measured counts as the loosest class, and a link moves up to a better class only after 3 s of measurements that allow it (down at once). Needs --link-mode monitor, lg, lgnb or fec; every node of the fabric needs the same classes")
	f.StringVar(&cfg.Cells.ClassMap, "class-map", "", "cells, with --loss-classes: traffic class → loss class, tc=k,... where tc is a host frame's 802.1p priority or, for untagged IP, its DSCP/8 (e.g. 5=1 puts DSCP EF, 46, on the clean class; iperf3 --dscp 46 sends it); traffic classes not named take the loosest class")
	f.BoolVar(&cfg.LG.Auto, "auto", false, "lg/lgnb/monitor: let the measured loss rate switch the receiving direction between monitor, lg and lgnb (policy: protect ≥ 1e-8, lgnb ≥ 1e-2, off ≥ 1e-1; off for low loss only after enough frames to exclude 1e-8: 3·10^8 loss-free)")
	f.StringVar(&cfg.LG.Protect, "protect", "both", "lg/lgnb: directions this end protects: both, tx, rx")
	f.Float64Var(&cfg.LG.TargetLoss, "target-loss", 1e-8, "lg/lgnb: effective loss rate to reach; N copies per loss follow Equation 2")
	f.Float64Var(&cfg.LG.LinkLoss, "link-loss", 0, "lg/lgnb: the link's loss rate for Equation 2 (default: measured from loss notifications)")
	f.IntVar(&cfg.LG.Copies, "copies", 0, "lg/lgnb: force N retransmitted copies per lost frame")
	f.IntVar(&cfg.LG.MaxCopies, "max-copies", 4, "lg/lgnb: cap on a measured N")
	f.DurationVar(&cfg.LG.AckTimeout, "ack-timeout", 0, "lg: ackNoTimeout (default: from the measured retransmission delay, Appendix B.1)")
	f.DurationVar(&cfg.LG.AckDelay, "ack-delay", 0, "lg/lgnb: longest wait for reverse data to carry an ACK before an explicit ACK (default: the measured p99 retransmission delay, from 20µs to half --dummy-wait-max, which it is until measured; a quarter of the peer's credit unacknowledged sends it at once)")
	f.DurationVar(&cfg.LG.DummyInterval, "dummy-interval", 0, "lg/lgnb: least idle time after the last data frame before a dummy exposes a tail loss (default 10µs; later dummies back off)")
	f.DurationVar(&cfg.LG.DummyWaitMax, "dummy-wait-max", 0, "lg/lgnb: most idle time after the last data frame before a dummy; in between, the sender waits as long as its ACKs take to come back (learned), so a tail loss is found within this (default 500µs)")
	f.IntVar(&cfg.LG.DummyCopies, "dummy-copies", 0, "lg/lgnb: dummies per emission; more than 1 when bursty loss can take the dummy with the tail (default 1)")
	f.IntVar(&cfg.LG.PauseThreshold, "pause-threshold", 0, "lg: reorder-buffer bytes that send a PFC pause (default resume + 2 MTU)")
	f.IntVar(&cfg.LG.ResumeThreshold, "resume-threshold", 0, "lg: reorder-buffer bytes that send a PFC resume (default: measured p99 retransmission delay × peak delivery rate, Appendix B.1; until measured 256 KiB, or with the send fast path what the credit window can fill, since a pause gives sending to the worker)")
	f.IntVar(&cfg.LG.TxBuffer, "tx-buffer", 0, "lg/lgnb: TX buffer and reorder window in frames, power of two (default --ring-size when the link has a priority lane (2+ queues) or with the send fast path, else half of it; the sender leaves at most 7/8 of --ring-size unacknowledged, so the peer's RX ring always holds the credit window)")
	f.IntVar(&cfg.LG.PFCClass, "pfc-class", 0, "lg: an 802.1Qbb frame from the link pausing this priority also pauses LinkGuardian's sender (its own pause/resume are link-header frames; PFC frames always pause the host classes they name)")
	f.StringVar(&linkSpeed, "link-speed", "", "lg, fec, forward --pfc: link speed for PFC quanta, e.g. 10G, 25G, 100G (default 10G)")
	f.BoolVar(&cfg.PFC.Enabled, "pfc", false, "per-class PFC toward the host port: a class queue at --pfc-xoff frames sends an 802.1Qbb pause out of the host port, refreshed while above --pfc-xon, resumed at or below it; forward: also queue host frames per class and honour PAUSE/PFC from the link (AF_XDP path)")
	f.IntVar(&cfg.PFC.XOFF, "pfc-xoff", 0, "with --pfc: frames queued in one class that pause it at the host (default 512)")
	f.IntVar(&cfg.PFC.XON, "pfc-xon", 0, "with --pfc: frames queued in a paused class at or below which it is resumed (default half of --pfc-xoff)")
	f.DurationVar(&cfg.PFC.Pause, "pfc-pause", 0, "with --pfc: pause each frame asks of the host, refreshed at half of it (default 65535 quanta at the host port's speed: 3.4ms at 10G)")
	f.StringVar(&peerMAC, "peer-mac", "", "lg/lgnb/monitor: destination MAC of control frames (default broadcast); when given, link-session frames from any other source are ignored")
	f.DurationVar(&cfg.LG.SessionWait, "session-wait", 0, "lg/lgnb/monitor: how long host frames wait for a link session never agreed with the other end (default 200ms; see --session-hold for one that was); then they are dropped, or sent unprotected with --session-pass")
	f.BoolVar(&cfg.LG.SessionPass, "session-pass", false, "lg/lgnb/monitor: send host frames unprotected when the link session is not up after --session-wait (default: drop them)")
	f.IntVar(&cfg.LG.SessionKeep, "session-keep", 0, "lg/lgnb/monitor: when host frames are dropped after waiting, keep the newest N of each class that arrived in the second half of the wait (default 16; -1 keeps none): they are the hosts' latest TCP retransmissions, which restart TCP at once")
	f.DurationVar(&cfg.LG.SessionHold, "session-hold", 0, "lg/lgnb/monitor: how long host frames wait while a link session agreed before is not up (the link port down, the peer silent or restarting), and the longest any kept frame waits (default 5s): an outage shorter than this is a pause to the hosts, not a loss, and LinkGuardian keeps its own frames across it")
	f.StringVar(&integrity, "integrity", "auto", "lg/lgnb/monitor/cells/fec: integrity check of every link frame: auto (off where the link port is a NIC whose MAC checks the FCS, csum on virtual links such as veth), crc32c (a CRC32C trailer; corrupted frames are dropped as lost), csum (the Internet checksum and the length: about 5x cheaper in the kernel's fast path, weaker) or off (the NICs check the FCS); must come out the same on both ends")
	f.IntVar(&cfg.FEC.N, "fec-n", 0, "fec: fix n, the data frames per parity frame (0: no parity; with --fec-copies, replication only); default: chosen by the link policy")
	f.Float64Var(&cfg.FEC.Target, "fec-target", 1e-3, "fec: residual loss the hosts may see; the link policy chooses n (or replication) for it from the measured loss")
	f.Float64Var(&cfg.FEC.Loss, "fec-loss", 0, "fec: take the link's loss rate as given: the policy chooses once for it (default: measured)")
	f.IntVar(&cfg.FEC.Copies, "fec-copies", 0, "fec: transmissions per frame: with --fec-n fixed (default 1); otherwise when the policy replicates (default 3, RAIL's)")
	f.DurationVar(&cfg.FEC.Wait, "fec-wait", 0, "fec: longest a hole holds back the frames behind it before the receiver gives up on it (default 2ms; must exceed --fec-flush plus the link's delay)")
	f.DurationVar(&cfg.FEC.Flush, "fec-flush", 0, "fec: longest a group stays open before its parity is sent (default 1ms; shorter sends more partial groups at low rates)")
	f.BoolVar(&cfg.FEC.Immediate, "fec-immediate", false, "fec: deliver frames as they arrive or are rebuilt, out of order (default: in order, waiting up to --fec-wait)")
	f.DurationVar(&cfg.FEC.Window, "fec-window", 0, "fec: the loss monitor's moving window (default 2s; the rate counts from 10^4 frames in it)")
	f.BoolVar(&cfg.BusyPoll, "busy-poll", false, "spin on the rings instead of sleeping in poll() (lower latency, one core busy)")
	f.IntVar(&cfg.Workers, "workers", 1, "worker loops, one per queue: worker i owns queue i of every port (ports need this many RX and TX queues; several use AF_XDP only)")
	f.IntVar(&cfg.Nice, "nice", 0, "nice value of the worker thread, -20..19 (0: unchanged); negative gives it a larger share of cores shared with applications")
	f.StringVar(&xdpMode, "xdp-mode", "auto", "XDP attach mode: auto (native, else generic), native, generic")
	f.StringVar(&fastPath, "fastpath", "auto", "forward, lg, lgnb, monitor: auto (the kernel path where possible, direction by direction, AF_XDP where not, logged with the reason), xdp (the kernel path, or fail naming the port and the fix) or afxdp (always through AF_XDP and the worker); other modes use AF_XDP")
	f.StringVar(&zeroCopy, "zerocopy", "auto", "AF_XDP mode of every socket: auto (zero-copy if every port's driver takes it, else copy; the log says which and why), on (zero-copy, or refuse to start) or off (copy)")
	f.BoolVar(&needWakeup, "need-wakeup", true, "bind the AF_XDP sockets with XDP_USE_NEED_WAKEUP: TX kicks and fill-ring wakeups are syscalls only when the kernel asks (false: always)")
	f.Uint32Var(&cfg.FrameCount, "frames", 0, "UMEM frames shared by all ports (default: --frames-per-queue × the ports' receive queues, plus the mode's buffers)")
	f.Uint32Var(&cfg.FramesPerQueue, "frames-per-queue", 0, "UMEM frames per AF_XDP socket (one per receive queue of each port): its fill ring and what waits on its RX and TX rings (default 2 × --ring-size, 3 × in mode cells; at least --ring-size)")
	f.Uint32Var(&cfg.FrameSize, "frame-size", 0, "UMEM frame size, a power of two from 2048 to 65536 (default: what the ports' MTU needs, 4096 up to MTU 3826, 16384 at MTU 9000; above 4096 frames are multi-buffer)")
	f.IntVar(&cfg.Batch, "batch", 0, "frames per ring operation (default 256)")
	f.IntVar(&cfg.TxBudget, "tx-budget", 0, "frames one TX kick may move in copy mode (XDP_MAX_TX_SKB_BUDGET; default 256, -1 keeps the kernel's 32)")
	f.Uint32Var(&cfg.RingSize, "ring-size", 0, "AF_XDP ring size in descriptors, power of two (default 2048; 4096 with LinkGuardian's send fast path, for its credit window)")
	f.StringVar(&metricsAddr, "metrics", defaultMetricsAddr, "address of the statistics endpoint (:PORT binds loopback; 0.0.0.0:PORT exposes it); empty to disable")
	f.DurationVar(&statsEvery, "stats-every", 0, "log counters at this interval (0: only at exit)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile here (%n: the namespace name, %p: the process id)")
	return cmd
}

// afxdpFlags applies --zerocopy and --need-wakeup to cfg.
func afxdpFlags(cfg *dataplane.Config, zeroCopy string, needWakeup bool) error {
	z, err := dataplane.ParseZeroCopy(zeroCopy)
	if err != nil {
		return err
	}
	cfg.ZeroCopy, cfg.NoNeedWakeup = z, !needWakeup
	return nil
}

// fecFlags checks the --fec-* flags against --mode: they belong to mode fec,
// --fec-n fixes n where --fec-target and --fec-loss have the policy choose.
func fecFlags(cmd *cobra.Command, cfg *dataplane.Config) error {
	var given []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "fec-") {
			given = append(given, "--"+f.Name)
		}
	})
	if cfg.Mode != dataplane.ModeFEC && (cfg.Mode != dataplane.ModeCells || cfg.Cells.LinkMode != "fec") {
		if len(given) > 0 {
			return fmt.Errorf("%s: only mode fec and --link-mode fec under the cells have these; add --mode fec (or --mode cells --link-mode fec) or leave them out", strings.Join(given, ", "))
		}
		return nil
	}
	cfg.FEC.Fixed = cmd.Flags().Changed("fec-n")
	if cfg.FEC.Fixed && cmd.Flags().Changed("fec-target") {
		return errors.New("--fec-n fixes n; --fec-target has the link policy choose it from the measured loss: give one of them")
	}
	return nil
}

// nodePorts fills the namespace, ports and port rates of run from --node and
// the testbed topology (flags given explicitly win; port rates are merged in
// by portShapeFlags.apply), and splits the list of link ports. How many ports the mode takes is the dataplane's to check.
func nodePorts(cfg *dataplane.Config, ns *string, node, preset, topoFile, prefix string) error {
	if node != "" {
		topo, err := loadTopology(preset, topoFile)
		if err != nil {
			return err
		}
		ports, err := topo.NodePorts(node)
		if err != nil {
			return fmt.Errorf("--node %s: %w", node, err)
		}
		host, links := netns.PortsOf(ports, netns.RoleHost), netns.PortsOf(ports, netns.RoleLink)
		if cfg.HostPort == "" {
			cfg.HostPort = strings.Join(host, ",") // the mode decides how many it takes
		}
		if cfg.LinkPort == "" {
			if len(links) == 0 {
				return fmt.Errorf("--node %s has no link port in topology %q (a link port is an end of a link with mtu: link)", node, topo.Name)
			}
			cfg.LinkPort = strings.Join(links, ",")
		}
		for _, p := range ports {
			if p.Rate > 0 {
				if cfg.Shape == nil {
					cfg.Shape = map[string]dataplane.PortShape{}
				}
				cfg.Shape[p.Dev] = dataplane.PortShape{Rate: uint64(p.Rate), Buffer: int(p.Buffer)}
			}
		}
		if *ns == "" {
			*ns = prefix + node
		}
	}
	if cfg.LinkPort == "" {
		return errors.New("run needs a link port (and, in modes forward, lg, lgnb and monitor, a host port): --host-port IF --link-port IF, or --node NAME of a testbed (e.g. --node sw1)")
	}
	cfg.HostPorts = splitList(cfg.HostPort)
	cfg.HostPort = ""
	if len(cfg.HostPorts) > 0 {
		cfg.HostPort = cfg.HostPorts[0]
	}
	cfg.LinkPorts = splitList(cfg.LinkPort)
	if len(cfg.LinkPorts) == 0 {
		return fmt.Errorf("--link-port %q names no interface", cfg.LinkPort)
	}
	cfg.LinkPort = cfg.LinkPorts[0]
	return nil
}

// portShapeFlags are --port-rate and --port-buffer: what was given for which
// port (a rate of 0 given turns a topology's rate off).
type portShapeFlags struct {
	rates   map[string]uint64
	buffers map[string]int
}

// parsePortShapes parses --port-rate and --port-buffer (PORT=VALUE lists).
func parsePortShapes(rates, buffers string) (portShapeFlags, error) {
	f := portShapeFlags{rates: map[string]uint64{}, buffers: map[string]int{}}
	for _, item := range splitList(rates) {
		port, v, ok := strings.Cut(item, "=")
		r, err := netns.ParseBitRate(v)
		if !ok || port == "" || err != nil {
			return f, fmt.Errorf("--port-rate %q: want PORT=RATE, e.g. --port-rate link0=500M,host0=1G (bit/s; 0: unlimited)", item)
		}
		f.rates[port] = uint64(r)
	}
	for _, item := range splitList(buffers) {
		port, v, ok := strings.Cut(item, "=")
		b, err := netns.ParseByteSize(v)
		if !ok || port == "" || err != nil {
			return f, fmt.Errorf("--port-buffer %q: want PORT=BYTES, e.g. --port-buffer link0=64K (K = 1024)", item)
		}
		f.buffers[port] = int(b)
	}
	return f, nil
}

// apply returns base (the topology's port shapes, or nil) with the flags'
// rates and buffers in place of its own; a port whose rate is 0 is left
// out (with its buffer: the dataplane refuses a buffer without a rate).
func (f portShapeFlags) apply(base map[string]dataplane.PortShape) map[string]dataplane.PortShape {
	m := maps.Clone(base)
	if m == nil {
		m = map[string]dataplane.PortShape{}
	}
	for p, r := range f.rates {
		s := m[p]
		s.Rate = r
		if r == 0 {
			s.Buffer = 0
		}
		m[p] = s
	}
	for p, b := range f.buffers {
		s := m[p]
		s.Buffer = b
		m[p] = s
	}
	for p, s := range m {
		if s.Rate == 0 && s.Buffer == 0 {
			delete(m, p)
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

func runDataplane(ctx context.Context, cfg dataplane.Config, metricsAddr string, statsEvery time.Duration) error {
	d, err := dataplane.New(cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	cfg = d.Config()
	for i := range d.Ports().N() {
		p := d.Port(i)
		log.Info("port", "dev", p.Name, "role", p.Role, "xdp", p.Program().Mode().String(),
			"queues", len(p.Sockets()), "tx_lanes", p.Lanes(), "afxdp", socketModes(p.Sockets()))
		if s, ok := cfg.Shape[p.Name]; ok {
			log.Info("port rate limit", "dev", p.Name, "rate", netns.BitRate(s.Rate).String(), "buffer", netns.ByteSize(s.Buffer).String(), "burst", netns.ByteSize(s.Burst).String())
		}
		if r := p.Program().FallbackReason(); r != nil {
			log.Warn("native XDP unavailable, using generic", "dev", p.Name, "reason", r)
		}
	}
	for _, f := range d.FastPath() {
		if f.Path == dataplane.FastPathXDP {
			log.Info("fast path", "from", f.From, "to", f.To, "path", f.Path)
		} else {
			log.Info("fast path", "from", f.From, "to", f.To, "path", f.Path, "reason", f.Reason)
		}
	}
	if p := d.Stats().PFC; p != nil && p.Enabled {
		log.Info("pfc toward the host port", "xoff_frames", p.XOFF, "xon_frames", p.XON, "pause_quanta", p.Quanta,
			"pause", time.Duration(p.PauseNs).String(), "host_speed", netns.BitRate(p.HostSpeed).String())
	}
	if metricsAddr != "" {
		stop, err := serveStats(metricsAddr, d)
		if err != nil {
			return err
		}
		defer stop()
	}
	if statsEvery > 0 {
		go func() {
			t := time.NewTicker(statsEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					logStats(d.Stats())
				}
			}
		}()
	}
	if cfg.Mode == dataplane.ModeCells {
		c := cfg.Cells
		role := "fabric node"
		if len(cfg.HostPorts) > 0 {
			role = "edge"
		}
		log.Info("cells", "role", role, "node_id", c.NodeID, "cell_size", c.CellSize, "spray", c.Spray,
			"credits", !c.NoCredits, "pre_credit", max(c.PreCredit, 0), "packing", !c.NoPacking, "link_mode", c.LinkMode,
			"reach_interval", c.ReachInterval.String(), "reach_th", c.ReachTh, "reach_up", c.ReachUp, "reasm_timeout", c.ReasmTimeout.String())
	}
	log.Info(readyMessage, "mode", cfg.Mode, "host", strings.Join(cfg.HostPorts, ","), "link", strings.Join(cfg.LinkPorts, ","), "busy_poll", cfg.BusyPoll, "integrity", cfg.LG.Integrity.String())
	err = d.Run(ctx)
	logStats(d.Stats())
	if s := d.CellStats(); s != nil {
		logCells(s.Snapshot())
	}
	if err != nil {
		return err
	}
	log.Info("stopped; XDP programs detached")
	return nil
}

func logStats(s dataplane.Snapshot) {
	for _, p := range s.Ports {
		args := []any{"dev", p.Name, "role", p.Role, "rx", p.RX.Frames, "tx", p.TX.Frames, "tx_dropped", p.TX.Dropped}
		if e := p.Egress; e != nil {
			args = append(args, "egress_dropped", e.Dropped, "egress_peak_bytes", e.PeakBytes)
		}
		log.Info("counters", args...)
	}
	log.Info("counters", "umem_exhausted", s.FramesExhausted)
}

// logCells logs a cell node's counters at exit.
func logCells(s dataplane.CellsSnapshot) {
	for _, l := range s.Links {
		log.Info("cells link", "dev", l.Name, "usable", l.Usable, "tx_bytes", l.TxBytes, "tx_cells", l.TxCells,
			"rx_bytes", l.RxBytes, "rx_cells", l.RxCells, "exclusions", l.Exclusions)
	}
	log.Info("cells", "delivered", s.ReasmDelivered, "reasm_discarded", s.ReasmDiscards, "voq_drops", s.Node.VOQDrops,
		"malformed", s.Malformed, "hop_drops", s.HopDrops, "no_route", s.Node.NoRoute, "fci_marks", s.FCIMarks, "max_poll_gap", time.Duration(s.MaxPollGap).String())
}

// serveStats serves /stats.json (the document below) and /metrics
// (Prometheus) on addr until stop is called.
func serveStats(addr string, d *dataplane.Dataplane) (stop func(), err error) {
	ln, err := listenStats(addr)
	if err != nil {
		return nil, err
	}
	reg := metrics.NewRegistry()
	if err := d.Register(reg); err != nil {
		return nil, err
	}
	promHandler, err := prom.Handler(reg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promHandler)
	mux.HandleFunc("/stats.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(statsDoc(d))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("statistics endpoint stopped", "err", err)
		}
	}()
	return func() { srv.Close() }, nil
}

// listenStats listens for the statistics endpoint on addr.
// A port-only address binds loopback (prom.LoopbackDefault): the
// statistics of a dataplane are not for the whole network.
func listenStats(addr string) (net.Listener, error) {
	addr, err := prom.LoopbackDefault(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("statistics endpoint %s: %w (is another linkfabric run in this namespace? pass --metrics with another port, or --metrics '')", addr, err)
	}
	return ln, nil
}

// statsDoc is what /stats.json serves: dataplane counters plus the XDP
// programs' and AF_XDP sockets' own counters.
func statsDoc(d *dataplane.Dataplane) map[string]any {
	doc := map[string]any{"dataplane": d.Stats()}
	if s := d.LGStats(); s != nil {
		doc["linkguardian"] = lgDoc(s)
	}
	if lanes := d.LaneLGStats(); len(lanes) > 1 {
		// One LinkGuardian per lane (--workers): "linkguardian" has the
		// lanes' counters summed in its core, the rest is lane 0's; each
		// lane's whole document is in "linkguardian_lanes".
		lg := doc["linkguardian"].(map[string]any)
		lg["core"], lg["lanes"] = d.LaneTotals(), len(lanes)
		var docs []any
		for _, s := range lanes {
			docs = append(docs, lgDoc(s))
		}
		doc["linkguardian_lanes"] = docs
	}
	if s := d.CellStats(); s != nil {
		doc["cells"] = cellsDoc{CellsSnapshot: s.Snapshot(), Corrupt: s.Integrity.Corrupt.Load(), NoRoom: s.Integrity.NoRoom.Load()}
	}
	if s := d.FECStats(); s != nil {
		doc["fec"] = fecDoc{FECSnapshot: s.Snapshot(), Session: s.Session.Snapshot(), Corrupt: s.Integrity.Corrupt.Load(),
			NoRoom: s.Integrity.NoRoom.Load(), PFCRx: s.PFCRx.Load()}
	}
	for i := range d.Ports().N() {
		p := d.Port(i)
		pd := map[string]any{"xdp_mode": p.Program().Mode().String()}
		if c, err := p.Program().Counters(); err == nil {
			pd["xdp"] = c
		}
		if s, err := p.Program().ImpairStats(); err == nil {
			pd["impair"] = s
		}
		var socks []any
		for _, s := range p.Sockets() {
			if st, err := s.Stats(); err == nil {
				kicks, stalls, nobufs := s.KickCounters()
				socks = append(socks, map[string]any{"queue": s.Queue(), "mode": s.Mode().String(), "need_wakeup": s.NeedWakeup(),
					"xdp_statistics": st, "tx_kicks": kicks, "tx_kick_stalls": stalls, "tx_kick_nobufs": nobufs})
			}
		}
		pd["sockets"] = socks
		pd["tx_lanes"] = p.Lanes()
		doc["port_"+p.Name] = pd
	}
	return doc
}

// socketModes is the AF_XDP mode of each of a port's sockets, in queue
// order ("copy", or "copy,copy" for two queues).
func socketModes(socks []*xdp.Socket) string {
	m := make([]string, len(socks))
	for i, s := range socks {
		m[i] = s.Mode().String()
	}
	return strings.Join(m, ",")
}

// cellsDoc is the cells part of /stats.json.
type cellsDoc struct {
	dataplane.CellsSnapshot
	Corrupt uint64 `json:"corrupt_frames"`
	NoRoom  uint64 `json:"integrity_no_room"`
}

// fecDoc is mode fec's part of /stats.json.
type fecDoc struct {
	dataplane.FECSnapshot
	Session dataplane.SessionSnapshot `json:"session"`
	Corrupt uint64                    `json:"corrupt_frames"`
	NoRoom  uint64                    `json:"integrity_no_room"`
	PFCRx   uint64                    `json:"pfc_rx"`
}

// lgDoc is the LinkGuardian part of /stats.json.
func lgDoc(s *dataplane.LGStats) map[string]any {
	var snap metrics.Snapshot
	hist := func(h *metrics.Histogram, scale float64) metrics.HistogramSummary {
		h.SnapshotInto(&snap)
		return metrics.Summarize(&snap, scale)
	}
	core, ktx := s.Core(), s.KernelTx()
	var peakTx, peakReorder uint64
	if core.Sender != nil {
		peakTx = core.Sender.TxBufPeakFrames
	}
	if core.Receiver != nil {
		peakReorder = core.Receiver.ReorderPeakBytes
	}
	return map[string]any{
		"core":                   core,
		"retx_delay_us":          hist(&s.RetxDelay, 1e-3),
		"retx_delay_first_us":    hist(&s.RetxDelayFirst, 1e-3),
		"tx_buffer_frames":       hist(&s.TxBuf, 1),
		"reorder_buffer_bytes":   hist(&s.Reorder, 1),
		"peak_tx_buffer_frames":  peakTx,
		"peak_reorder_bytes":     peakReorder,
		"link_tx_ring_full":      s.LinkTxRingFull.Load(),
		"host_tx_ring_full":      s.HostTxRingFull.Load(),
		"pfc_rx":                 s.PFCRx.Load(),
		"pause_tx":               s.PauseTx.Load(),
		"host_gate_waits":        s.HostGateWaits.Load(),
		"host_gate_held":         s.HostGateHeld.Load(),
		"kernel_send_declined":   ktx.Declined,
		"kernel_declined_window": ktx.DeclinedWindow,
		"kernel_declined_unread": ktx.DeclinedUnread,
		"kernel_send_widened":    ktx.Widened,
		"kernel_wake_moves":      ktx.WakeMoves,
		"measured_loss_rate":     s.LossRate(),
		"copies":                 s.Copies.Load(),
		"rx_loss_rate":           s.RxLossRate(),
		"rx_mode":                linkguardian.Delivery(s.RxMode.Load()).String(),
		"mode_changes":           s.ModeChanges.Load(),
		"corrupt_frames":         s.Integrity.Corrupt.Load(),
		"integrity_no_room":      s.Integrity.NoRoom.Load(),
		"integrity_other_check":  s.Integrity.OtherCheck.Load(),
		"session":                s.Session.Snapshot(),
	}
}

// parseBitRate parses "10G", "25Gbit", "100g", "1000M" into bits per second.
func parseBitRate(s string) (uint64, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(s), "bit"), "bps")
	mult := uint64(1)
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("link speed %q: want e.g. 10G, 25G, 100G", s)
	}
	return uint64(v * float64(mult)), nil
}
