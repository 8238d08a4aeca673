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
	"github.com/linkfabric/linkfabric/cellify/cellspipe"
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/internal/cli"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/metrics/prom"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"github.com/spf13/cobra"
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
		helpAll                  bool
	)
	cmd := &cobra.Command{
		Use:   "run {--node SW | --netns NS --host-port IF[,IF...] --link-port IF[,IF...]} --mode forward",
		Short: "Run the dataplane on a node's ports (foreground; Ctrl-C stops it)",
		Long: `run attaches linkfabric's XDP program to a node's ports, binds AF_XDP sockets and
moves frames between the host port and the link port(s) with the pipeline of --mode:

  forward   every frame both ways, unchanged (in the kernel where it can)
  lg, lgnb  LinkGuardian: the link's frames are numbered, a lost one is
            retransmitted from the sending end; lg delivers in order
  monitor   frames numbered and the link's loss measured, nothing repaired
  cells     a node of a cell fabric: frames cut into cells sprayed over links
  fec       RAIL's parity (or copies) after every n frames
  twice     every frame twice, the first copy delivered: the example of how a
            mode is written (docs/extending.md)

Both ends of a link run the same mode; in lg, lgnb and monitor they agree through
a link session, or log which setting differs. Ctrl-C stops it and removes what it
attached; an interface going down is link state, not an exit. 'linkfabric stats'
shows the counters. docs/run.md explains each part (fast path, integrity, sessions,
NICs).`,
		Example: `  linkfabric run --node sw1 --mode lg                  # the pair testbed's sw1 (namespace lfsw1)
  linkfabric run --netns sw1 --host-port enp1s0f0 --link-port enp1s0f1 --mode lg
  linkfabric run --node sw1 --mode forward --fastpath afxdp   # every frame through the worker
  linkfabric run --node f1 --preset fabric3 --mode cells --cells-node-id 101
  linkfabric run --node sw1 --mode fec --fec-target 1e-3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if helpAll {
				runHelp(cmd, true)
				return nil
			}
			shapes, err := parsePortShapes(portRate, portBuffer)
			if err != nil {
				return err
			}
			if err := nodePorts(&cfg, &ns, node, preset, topoFile, prefix); err != nil {
				return err
			}
			cfg.Shape = shapes.apply(cfg.Shape)
			if err := cli.EnterNetns(ns); err != nil {
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
			if err := dataplane.CheckFlags(cmd.Flags(), &cfg); err != nil {
				return err
			}
			cfg.Logger = log
			if cfg.Link.Integrity, err = linkcrc.ParseMode(integrity); err != nil {
				return err
			}
			if peerMAC != "" {
				hw, err := net.ParseMAC(peerMAC)
				if err != nil || len(hw) != 6 {
					return fmt.Errorf("--peer-mac %q: want a MAC address like 02:00:00:00:00:01", peerMAC)
				}
				copy(cfg.Link.PeerMAC[:], hw)
			}
			if linkSpeed != "" {
				if cfg.Link.Speed, err = parseBitRate(linkSpeed); err != nil {
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
	setRunHelp(cmd, &helpAll)
	f.StringVar(&ns, "netns", "", "network namespace of the ports (default: the current one)")
	f.StringVar(&cfg.HostPort, "host-port", "", "interface facing the host, or a comma-separated list (cells: an edge with several; none: a fabric node)")
	f.StringVar(&cfg.LinkPort, "link-port", "", "interface facing the link, or a comma-separated list of up to 16 (cells); forward, lg, lgnb, monitor and fec take one")
	f.StringVar(&portRate, "port-rate", "", "line rates of ports, PORT=RATE,...: e.g. host0=1G,link0=500M (default: unlimited)")
	f.StringVar(&portBuffer, "port-buffer", "", "egress queues of rate-limited ports, PORT=BYTES,...: e.g. host0=256K,link0=64K (K = 1024; default 256K)")
	f.StringVar(&node, "node", "", "take --netns and the ports from this switch of the testbed (--preset or --topology, --prefix), e.g. sw1")
	f.StringVar(&preset, "preset", "pair", "with --node: the testbed's topology preset")
	f.StringVar(&topoFile, "topology", "", "with --node: the testbed's YAML topology file (instead of --preset)")
	f.StringVar(&prefix, "prefix", netns.DefaultPrefix, "with --node: the testbed's prefix (namespace = prefix + node)")
	f.StringVar(&mode, "mode", "forward", "the mode (above), one of: "+dataplane.ModeList())
	// Each mechanism's flags, with its prefix (--lg-*, --session-*,
	// --cells-*, --fec-*), filling its configuration in cfg (not copied
	// before they are parsed).
	dataplane.DeclareFlags(f, &cfg)
	cli.BitRateStringVar(f, &linkSpeed, "link-speed", "", "lg, fec, forward --pfc: link speed for PFC quanta, e.g. 10G, 25G, 100G (default 10G)")
	f.BoolVar(&cfg.PFC.Enabled, "pfc", false, "per-class PFC toward the host port: a class queue at --pfc-xoff frames pauses that class at the host, resumed at --pfc-xon")
	f.IntVar(&cfg.PFC.XOFF, "pfc-xoff", 0, "with --pfc: frames queued in one class that pause it at the host (default 512)")
	f.IntVar(&cfg.PFC.XON, "pfc-xon", 0, "with --pfc: frames queued in a paused class at or below which it is resumed (default half of --pfc-xoff)")
	f.DurationVar(&cfg.PFC.Pause, "pfc-pause", 0, "with --pfc: pause each frame asks of the host, refreshed at half of it (default 65535 quanta at the host port's speed: 3.4ms at 10G)")
	f.StringVar(&peerMAC, "peer-mac", "", "lg/lgnb/monitor/fec, cells over lg: destination MAC of control frames (default broadcast); when given, link-session frames from any other source are ignored")
	f.StringVar(&integrity, "integrity", "auto", "lg/lgnb/monitor/cells/fec: check of every link frame: auto (off on a NIC whose MAC checks the FCS, csum on veth), crc32c, csum or off; both ends need the same --integrity")
	f.BoolVar(&cfg.BusyPoll, "busy-poll", false, "spin on the rings instead of sleeping in poll() (lower latency, one core busy)")
	f.IntVar(&cfg.Workers, "workers", 1, "worker loops, one per queue: worker i owns queue i of every port (ports need this many RX and TX queues; several use AF_XDP only)")
	f.IntVar(&cfg.Nice, "nice", 0, "nice value of the worker thread, -20..19 (0: unchanged); negative gives it a larger share of cores shared with applications")
	f.StringVar(&xdpMode, "xdp-mode", "auto", "XDP attach mode: auto (native, else generic), native, generic")
	f.StringVar(&fastPath, "fastpath", "auto", "auto (the kernel where it can: forward, lg, lgnb, monitor, a cell fabric node; else AF_XDP, logged why), xdp (the kernel or fail; not cells) or afxdp (all through the worker)")
	f.StringVar(&zeroCopy, "zerocopy", "auto", "AF_XDP mode of every socket: auto (zero-copy if every port's driver takes it, else copy; the log says which and why), on (zero-copy, or refuse to start) or off (copy)")
	f.BoolVar(&needWakeup, "need-wakeup", true, "bind the AF_XDP sockets with XDP_USE_NEED_WAKEUP: TX kicks and fill-ring wakeups are syscalls only when the kernel asks (false: always)")
	f.Uint32Var(&cfg.FrameCount, "frames", 0, "UMEM frames shared by all ports (default: --frames-per-queue × the ports' receive queues, plus the mode's buffers)")
	f.Uint32Var(&cfg.FramesPerQueue, "frames-per-queue", 0, "UMEM frames per AF_XDP socket (default 2 × --ring-size, 3 × in mode cells)")
	f.Uint32Var(&cfg.FrameSize, "frame-size", 0, "UMEM frame size, a power of two from 2048 to 65536 (default: what the ports' MTU needs, 4096 up to MTU 3826, 16384 at MTU 9000; above 4096 frames are multi-buffer)")
	f.IntVar(&cfg.Batch, "batch", 0, "frames per ring operation (default 256)")
	f.IntVar(&cfg.TxBudget, "tx-budget", 0, "frames one TX kick may move in copy mode (XDP_MAX_TX_SKB_BUDGET; default 256, -1 keeps the kernel's 32)")
	f.Uint32Var(&cfg.RingSize, "ring-size", 0, "AF_XDP ring size in descriptors, power of two (default 2048; 4096 with LinkGuardian's send fast path, for its credit window)")
	f.StringVar(&metricsAddr, "metrics", defaultMetricsAddr, "address of the Prometheus and JSON statistics endpoint (:PORT binds loopback); empty to disable")
	f.DurationVar(&statsEvery, "stats-every", 0, "log counters at this interval (0: only at exit)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile here (%n: the namespace name, %p: the process id)")
	addFormerNames(f, runRenamed)
	withNodeConfig(cmd, runCaps)
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
	cfg.HostPorts = cli.SplitList(cfg.HostPort)
	cfg.HostPort = ""
	if len(cfg.HostPorts) > 0 {
		cfg.HostPort = cfg.HostPorts[0]
	}
	cfg.LinkPorts = cli.SplitList(cfg.LinkPort)
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
	var f portShapeFlags
	var err error
	f.rates, err = parsePortValues(rates, func(v string) (uint64, error) { r, err := netns.ParseBitRate(v); return uint64(r), err },
		"--port-rate %q: want PORT=RATE, e.g. --port-rate link0=500M,host0=1G (bit/s; 0: unlimited)")
	if err != nil {
		return f, err
	}
	f.buffers, err = parsePortValues(buffers, func(v string) (int, error) { b, err := netns.ParseByteSize(v); return int(b), err },
		"--port-buffer %q: want PORT=BYTES, e.g. --port-buffer link0=64K (K = 1024)")
	return f, err
}

// parsePortValues parses a PORT=VALUE list with parse; bad is the error's
// format for an item that is not one.
func parsePortValues[T any](list string, parse func(string) (T, error), bad string) (map[string]T, error) {
	m := map[string]T{}
	for _, item := range cli.SplitList(list) {
		port, v, ok := strings.Cut(item, "=")
		x, err := parse(v)
		if !ok || port == "" || err != nil {
			return m, fmt.Errorf(bad, item)
		}
		m[port] = x
	}
	return m, nil
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
	if cfg.Mode == cellspipe.ModeCells {
		c := cellspipe.ConfigOf(&cfg)
		role := "fabric node"
		if len(cfg.HostPorts) > 0 {
			role = "edge"
		}
		log.Info("cells", "role", role, "node_id", c.NodeID, "cell_size", c.CellSize, "spray", c.Spray,
			"credits", !c.NoCredits, "pre_credit", max(c.PreCredit, 0), "packing", !c.NoPacking, "link_mode", c.LinkMode,
			"reach_interval", c.ReachInterval.String(), "reach_th", c.ReachTh, "reach_up", c.ReachUp, "reasm_timeout", c.ReasmTimeout.String())
	}
	log.Info(readyMessage, "mode", cfg.Mode, "host", strings.Join(cfg.HostPorts, ","), "link", strings.Join(cfg.LinkPorts, ","), "busy_poll", cfg.BusyPoll, "integrity", cfg.Link.Integrity.String())
	stopNotify := startNotify(ctx, d)
	err = d.Run(ctx)
	stopNotify()
	logStats(d.Stats())
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
	for k, v := range d.ModeStats() {
		doc[k] = v
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

// parseBitRate parses a link speed as every rate is parsed
// (netns.ParseBitRate: 10G, 25Gbit, 2.5G, 100e9), refusing 0.
func parseBitRate(s string) (uint64, error) {
	r, err := netns.ParseBitRate(s)
	if err == nil && r == 0 {
		err = fmt.Errorf("link speed %q: want a speed above 0, e.g. 10G, 25G, 100G", s)
	}
	return uint64(r), err
}
