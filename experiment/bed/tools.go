package bed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/traffic"
	"github.com/vishvananda/netlink"
)

// H2Addr is the address of h2 on the pair testbed.
const H2Addr = "10.0.0.2"

// Server runs a server in a namespace until stop is called.
func Server(ctx context.Context, e *Env, ns string, name string, args ...string) (stop func(), err error) {
	cmd := netns.Command(ctx, ns, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s in %s: %w (scripts/deps.sh installs it)", name, ns, err)
	}
	time.Sleep(300 * time.Millisecond) // let it listen
	return func() {
		cmd.Process.Kill()
		cmd.Wait()
	}, nil
}

// IperfResult is one iperf3 TCP run from h1 to h2.
type IperfResult struct {
	Bps         float64 `json:"goodput_bps"` // bit/s received
	Retransmits int     `json:"retransmits"`
}

// Iperf3 runs one TCP stream h1→h2 for d.
func (e *Env) Iperf3(ctx context.Context, d time.Duration, extra ...string) (IperfResult, error) {
	stop, err := Server(ctx, e, e.NS("h2"), "iperf3", "-s", "-1", "-p", "5201")
	if err != nil {
		return IperfResult{}, err
	}
	defer stop()
	args := append([]string{"-c", H2Addr, "-p", "5201", "-t", strconv.Itoa(int(d.Seconds())), "-J", "--connect-timeout", "3000"}, extra...)
	out, err := netns.Command(ctx, e.NS("h1"), "iperf3", args...).Output()
	var doc struct {
		End struct {
			SumSent     struct{ Retransmits int } `json:"sum_sent"`
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(out, &doc); jerr != nil {
		return IperfResult{}, fmt.Errorf("iperf3 in %s: %v %v: %s", e.NS("h1"), err, jerr, bytes.TrimSpace(out))
	}
	if doc.Error != "" {
		return IperfResult{}, fmt.Errorf("iperf3 in %s: %s", e.NS("h1"), doc.Error)
	}
	return IperfResult{Bps: doc.End.SumReceived.BitsPerSecond, Retransmits: doc.End.SumSent.Retransmits}, nil
}

// Latency is a sockperf ping-pong result: one-way latency (RTT/2) in µs.
type Latency struct {
	P50 float64 `json:"p50_us"`
	P99 float64 `json:"p99_us"`
}

var percentileRE = regexp.MustCompile(`percentile (\d+\.\d+) =\s+([0-9.]+)`)

// Sockperf runs UDP ping-pong h1→h2 with 64-byte messages for d.
func Sockperf(ctx context.Context, e *Env, d time.Duration) (Latency, error) {
	stop, err := Server(ctx, e, e.NS("h2"), "sockperf", "server", "-i", H2Addr, "-p", "11111")
	if err != nil {
		return Latency{}, err
	}
	defer stop()
	out, err := netns.Command(ctx, e.NS("h1"), "sockperf", "ping-pong", "-i", H2Addr, "-p", "11111",
		"-t", strconv.Itoa(int(d.Seconds())), "-m", "64").CombinedOutput()
	if err != nil {
		return Latency{}, fmt.Errorf("sockperf in %s: %v: %s", e.NS("h1"), err, LastLines(out, 5))
	}
	var l Latency
	for _, m := range percentileRE.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		switch string(m[1]) {
		case "50.000":
			l.P50 = v
		case "99.000":
			l.P99 = v
		}
	}
	if l.P50 == 0 {
		return Latency{}, fmt.Errorf("sockperf in %s printed no percentiles: %s", e.NS("h1"), LastLines(out, 5))
	}
	return l, nil
}

// LastLines is the last n lines of b, for an error message.
func LastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Link returns a link of a namespace, looked up inside it.
func Link(ns, dev string) (netlink.Link, error) {
	var l netlink.Link
	err := netns.Do(ns, func() error {
		var err error
		l, err = netlink.LinkByName(dev)
		if err != nil {
			return fmt.Errorf("%s in namespace %s: %w", dev, ns, err)
		}
		return nil
	})
	return l, err
}

// FrameRate sends frames of size bytes from h1 as fast as they go for d and
// returns how many per second reached h2 (its eth0 receive counter), and how
// many per second the generator sent.
func FrameRate(ctx context.Context, e *Env, size int, d time.Duration) (delivered, offered float64, err error) {
	src, err := Link(e.NS("h1"), "eth0")
	if err != nil {
		return 0, 0, err
	}
	dst, err := Link(e.NS("h2"), "eth0")
	if err != nil {
		return 0, 0, err
	}
	var g *traffic.Generator
	err = netns.Do(e.NS("h1"), func() error {
		var err error
		g, err = traffic.NewGenerator("eth0", traffic.Template{Dst: dst.Attrs().HardwareAddr, Src: src.Attrs().HardwareAddr, Size: size})
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	defer g.Close()
	// Warm up (fills rings, lets the bridge learn MACs), then measure.
	g.Run(ctx, 0, 0, 200*time.Millisecond, 0)
	time.Sleep(100 * time.Millisecond)
	rx0, err := rxPackets(e.NS("h2"), "eth0")
	if err != nil {
		return 0, 0, err
	}
	sent0 := g.Sent()
	start := time.Now()
	g.Run(ctx, 0, 0, d, 0)
	elapsed := time.Since(start).Seconds()
	time.Sleep(50 * time.Millisecond) // frames still in flight
	rx1, err := rxPackets(e.NS("h2"), "eth0")
	if err != nil {
		return 0, 0, err
	}
	return float64(rx1-rx0) / elapsed, float64(g.Sent()-sent0) / elapsed, nil
}

func rxPackets(ns, dev string) (uint64, error) {
	l, err := Link(ns, dev)
	if err != nil {
		return 0, err
	}
	return l.Attrs().Statistics.RxPackets, nil
}

// UDPResult is an iperf3 UDP run from h1 to h2.
type UDPResult struct {
	Packets    int `json:"packets"`
	Lost       int `json:"lost"`
	OutOfOrder int `json:"out_of_order"`
}

// UDPRun runs iperf3 UDP from h1 to h2 at rate for d (whole seconds),
// with extra iperf3 client arguments (e.g. --dscp 46); during, if not
// nil, runs on its own goroutine meanwhile, and UDPRun waits for it.
// iperf3's UDP handshake is one datagram each way on the stream socket,
// which a lossy link can drop (the client then fails with "unable to read
// from stream socket"): such a run is started again, up to three times.
func UDPRun(ctx context.Context, e *Env, port int, rate float64, d time.Duration, during func(), extra ...string) (UDPResult, error) {
	done := make(chan struct{})
	if during != nil {
		go func() { defer close(done); during() }()
	} else {
		close(done)
	}
	defer func() { <-done }()
	for attempt := 1; ; attempt++ {
		r, err := e.udpOnce(ctx, port, rate, d, extra)
		if err == nil || attempt == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "stream socket") {
			return r, err
		}
		e.Printf("iperf3 -u in %s: the UDP handshake was lost (%v); starting again", e.NS("h1"), err)
	}
}

// udpOnce is one iperf3 UDP run of UDPRun.
func (e *Env) udpOnce(ctx context.Context, port int, rate float64, d time.Duration, extra []string) (UDPResult, error) {
	stop, err := Server(ctx, e, e.NS("h2"), "iperf3", "-s", "-1", "-p", strconv.Itoa(port))
	if err != nil {
		return UDPResult{}, err
	}
	defer stop()
	// A 2 MB socket buffer on both ends: with iperf3's default a receiver
	// not scheduled for 10 ms on a busy machine drops datagrams.
	args := []string{"-c", H2Addr, "-p", strconv.Itoa(port), "-u", "-l", "1200", "-w", "2M",
		"-b", strconv.FormatFloat(rate, 'f', 0, 64), "-t", strconv.Itoa(int(d.Seconds())), "-J", "--connect-timeout", "3000"}
	cmd := netns.Command(ctx, e.NS("h1"), "iperf3", append(args, extra...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.Output()
	doc, jerr := fct.ParseIperfReport(out)
	if jerr != nil {
		return UDPResult{}, fmt.Errorf("iperf3 -u in %s: %v %v", e.NS("h1"), err, jerr)
	}
	r := UDPResult{Packets: int(doc.End.SumReceived.Packets), Lost: int(doc.End.SumReceived.LostPackets), OutOfOrder: int(doc.OutOfOrder())}
	return r, nil
}

// ImpairDev runs fn on the impairment stage of dev in sw's namespace.
func ImpairDev(e *Env, sw, dev string, fn func(*bpf.Impairer) error) error {
	return netns.Do(e.NS(sw), func() error {
		im, err := bpf.OpenImpairer(dev)
		if err != nil {
			return err
		}
		defer im.Close()
		return fn(im)
	})
}

// SetLinkUp sets dev in ns up or down.
func SetLinkUp(ns, dev string, up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	out, err := netns.Command(context.Background(), ns, "ip", "link", "set", dev, state).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip link set %s %s in %s: %v: %s", dev, state, ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ResolveCC resolves a requested congestion control ("auto" or a name)
// against what this kernel has.
func ResolveCC(want string) (string, error) {
	avail, err := fct.AvailableCongestionControl("")
	if err != nil {
		return "", err
	}
	return ChooseCC(want, avail)
}

// ChooseCC resolves a requested congestion control against the kernel's
// available ones: "" or "auto" picks dctcp when available, else cubic; a
// named one must be available.
func ChooseCC(want string, avail []string) (string, error) {
	if want == "" || want == "auto" {
		for _, c := range []string{"dctcp", "cubic"} {
			if slices.Contains(avail, c) {
				return c, nil
			}
		}
		if len(avail) > 0 {
			return avail[0], nil
		}
		return "", errors.New("the kernel lists no congestion control algorithms")
	}
	if !slices.Contains(avail, want) {
		return "", fmt.Errorf("congestion control %q is not available in this kernel (available: %s; modprobe tcp_%s may add it)",
			want, strings.Join(avail, ", "), want)
	}
	return want, nil
}

// Subnet of the pair testbed's hosts (the route that carries rto_min).
const Subnet = "10.0.0.0/24"

// PaperTCP sets TCP in h1 and h2 up as the paper does (SACK, RACK/TLP,
// rto_min 1 ms on the route, no metrics save) with congestion control cc,
// and returns what each host got.
func PaperTCP(e *Env, cc string) ([]fct.Report, error) {
	var reports []fct.Report
	for _, h := range []string{"h1", "h2"} {
		rep, err := fct.ApplyTCPSettings(e.NS(h), "eth0", Subnet, fct.PaperTCPSettings(cc))
		if err != nil {
			return nil, err
		}
		reports = append(reports, rep)
	}
	return reports, nil
}

// Impair runs fn on the impairment stage of link0 in switch sw (sw2's is
// the receiving end of sw1→sw2), which the running dataplane's program
// carries.
func Impair(e *Env, sw string, fn func(*bpf.Impairer) error) error {
	return ImpairDev(e, sw, "link0", fn)
}

// ImpairStatsOf reads the counters of the impairment stage of dev in sw's
// namespace.
func ImpairStatsOf(e *Env, sw, dev string) (bpf.ImpairStats, error) {
	var st bpf.ImpairStats
	err := ImpairDev(e, sw, dev, func(im *bpf.Impairer) error {
		var err error
		st, err = im.ImpairStats()
		return err
	})
	return st, err
}

// BundleDropped is what the impairment stages of sw's bundle links (by
// index into BundleLinks) dropped; a stage that cannot be read adds
// nothing.
func BundleDropped(e *Env, sw string, links []int) uint64 {
	var n uint64
	for _, l := range links {
		st, _ := ImpairStatsOf(e, sw, BundleLinks[l])
		n += st.Dropped
	}
	return n
}
