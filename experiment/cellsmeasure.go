package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// CellsArms are the arms of the cells experiments: credits (pull: cells
// leave within the egress scheduler's grants) and push (--cells-credits=false).
var CellsArms = []string{"credits", "push"}

// cellsArmArgs are the `linkfabric run` arguments of an arm.
func cellsArmArgs(arm string) []string {
	return []string{"--cells-credits=" + strconv.FormatBool(arm == "credits")}
}

func checkCellsArms(arms []string) error {
	for _, a := range arms {
		if !contains(CellsArms, a) {
			return fmt.Errorf("unknown arm %q (arms: %s)", a, strings.Join(CellsArms, ", "))
		}
	}
	return nil
}

// cellsUDPRun is what one run of UDP flows through a cells fabric gave:
// every sink's arrivals, what each flow sent and when the flows started.
type cellsUDPRun struct {
	arrivals map[string][]UDPArrival // by sink namespace
	sent     []uint64
	t0       int64 // the earliest start, unix ns
	// rcvbuf is the UDP receive buffer errors in the sinks' namespaces:
	// datagrams their sockets had no room for (not the fabric's).
	rcvbuf uint64
}

// runUDPFlows listens on sinks (namespace → ":port"), sends flows, waits
// until nothing has arrived for quiet (at most drain after the senders
// end), and returns what arrived.
func runUDPFlows(ctx context.Context, sinks map[string]string, flows []UDPFlow, quiet, drain time.Duration) (*cellsUDPRun, error) {
	r := &cellsUDPRun{arrivals: map[string][]UDPArrival{}}
	open := map[string]*UDPSink{}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	rcv0 := map[string]uint64{}
	for ns, addr := range sinks {
		s, err := ListenUDPSink(ns, addr)
		if err != nil {
			return nil, err
		}
		open[ns] = s
		rcv0[ns], _ = netns.SNMP(ns, "Udp", "RcvbufErrors")
	}
	sent, start, err := SendUDP(ctx, flows)
	if err != nil {
		return nil, err
	}
	r.sent = sent
	for _, t := range start {
		if r.t0 == 0 || t < r.t0 {
			r.t0 = t
		}
	}
	end := time.Now().Add(drain)
	for time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(quiet / 4)
		last := int64(0)
		for _, s := range open {
			s.mu.Lock()
			if n := len(s.arr); n > 0 {
				last = max(last, s.arr[n-1].T)
			}
			s.mu.Unlock()
		}
		if last != 0 && time.Since(time.Unix(0, last)) > quiet {
			break
		}
	}
	for ns, s := range open {
		r.arrivals[ns] = s.Close()
		delete(open, ns)
		if n, err := netns.SNMP(ns, "Udp", "RcvbufErrors"); err == nil {
			r.rcvbuf += n - rcv0[ns]
		}
	}
	return r, ctx.Err()
}

// iperfTCP is one iperf3 TCP client's result.
type iperfTCP struct {
	Bytes       float64
	Mbps        float64
	Retransmits int
}

// runIperfPairs runs one iperf3 TCP client per pair (client namespace,
// server namespace, server address, port) at once for d, each against its
// own one-off server, with extra client arguments. mid, if set, is called
// at 20 % and 90 % of d (the steady part of the run).
func runIperfPairs(ctx context.Context, pairs [][4]string, d time.Duration, extra []string, mid func(at int)) ([]iperfTCP, error) {
	var stops []func()
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for _, p := range pairs {
		cmd := netns.Command(ctx, p[1], "iperf3", "-s", "-1", "-p", p[3])
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start iperf3 in %s: %w (scripts/deps.sh installs it)", p[1], err)
		}
		stops = append(stops, func() { cmd.Process.Kill(); cmd.Wait() })
	}
	time.Sleep(300 * time.Millisecond) // let them listen
	res := make([]iperfTCP, len(pairs))
	errs := make([]error, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]string{"-c", p[2], "-p", p[3], "-t", strconv.Itoa(int(d.Seconds())), "-J", "--connect-timeout", "3000"}, extra...)
			out, err := netns.Command(ctx, p[0], "iperf3", args...).Output()
			var doc struct {
				End struct {
					SumSent     struct{ Retransmits int } `json:"sum_sent"`
					SumReceived struct {
						Bytes         float64 `json:"bytes"`
						BitsPerSecond float64 `json:"bits_per_second"`
					} `json:"sum_received"`
				} `json:"end"`
				Error string `json:"error"`
			}
			if jerr := json.Unmarshal(out, &doc); jerr != nil {
				errs[i] = fmt.Errorf("iperf3 %s → %s: %v %v: %s", p[0], p[2], err, jerr, lastLines(out, 3))
				return
			}
			if doc.Error != "" {
				errs[i] = fmt.Errorf("iperf3 %s → %s: %s", p[0], p[2], doc.Error)
				return
			}
			res[i] = iperfTCP{Bytes: doc.End.SumReceived.Bytes, Mbps: doc.End.SumReceived.BitsPerSecond / 1e6, Retransmits: doc.End.SumSent.Retransmits}
		}()
	}
	if mid != nil {
		t0 := time.Now()
		for i, at := range []float64{0.2, 0.9} {
			select {
			case <-time.After(time.Until(t0.Add(time.Duration(at * float64(d))))):
				mid(i)
			case <-ctx.Done():
			}
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// portSample is a port's transmit counters at a time.
type portSample struct {
	t             time.Time
	frames, bytes uint64
	lateNs        uint64
}

// samplePort reads port's TX counters of the cells dataplane in ns.
func samplePort(ctx context.Context, ns, port string) (portSample, error) {
	t := time.Now()
	s, err := FetchCellsStats(ctx, ns)
	if err != nil {
		return portSample{}, err
	}
	p := s.Port(port)
	// The counters are read in the middle of the request.
	return portSample{t: t.Add(time.Since(t) / 2), frames: p.TX.Frames, bytes: p.TX.Bytes, lateNs: p.Egress.LateNs}, nil
}

// wireBitsBetween is the bits a port put on the wire between two samples
// (each frame's length plus preamble, FCS and gap) and the time between.
func wireBitsBetween(a, b portSample) (bits float64, secs float64) {
	return float64((b.bytes-a.bytes)+24*(b.frames-a.frames)) * 8, b.t.Sub(a.t).Seconds()
}

// cellsDropsAll sums what each switch dropped between two reads of their
// statistics (CellsFabric.Stats), and gives the longest time a worker was
// kept from running (ms) in after.
func cellsDropsAll(before, after map[string]*CellsNodeStats) (total CellsDrops, byNode map[string]CellsDrops, maxGapMs float64) {
	byNode = map[string]CellsDrops{}
	for n, a := range after {
		b, ok := before[n]
		if !ok {
			continue
		}
		d := CellsDropsBetween(b, a)
		byNode[n] = d
		total.Add(d)
		maxGapMs = max(maxGapMs, float64(a.Cells.MaxPollGap)/1e6)
	}
	return total, byNode, maxGapMs
}

// shareDeviation is the largest relative deviation of the shares v from
// a fair share (1/len(v)).
func shareDeviation(v []float64) float64 {
	var sum, dev float64
	for _, x := range v {
		sum += x
	}
	if sum == 0 || len(v) == 0 {
		return 1
	}
	fair := sum / float64(len(v))
	for _, x := range v {
		d := (x - fair) / fair
		if d < 0 {
			d = -d
		}
		dev = max(dev, d)
	}
	return dev
}

// loadAvg is the 1-minute load average (0 if unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return v
}

// cellsSeriesRow is a row of a cells experiment's CSV: a flow's delivered
// rate in one bin of time.
type cellsSeriesRow struct {
	Arm, Transport string
	Run            int
	Flow           string
	TMs, Mbps      float64
}

// udpSeries bins the arrivals of each flow (flows[i] for flow i) into bins
// of width bin from t0.
func udpSeries(arr []UDPArrival, names []string, t0 int64, bin time.Duration) [][]float64 {
	out := make([][]float64, len(names))
	for _, a := range arr {
		if int(a.Flow) >= len(names) || a.T < t0 {
			continue
		}
		k := int((a.T - t0) / int64(bin))
		s := out[a.Flow]
		for len(s) <= k {
			s = append(s, 0)
		}
		s[k] += float64(a.Len+UDPWireOverhead) * 8 / bin.Seconds() / 1e6
		out[a.Flow] = s
	}
	return out
}

// writeCellsCSV writes rows as CSV to path (its directory made).
func writeCellsCSV(path string, rows []cellsSeriesRow) error {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r.Arm, r.Transport, strconv.Itoa(r.Run), r.Flow, strconv.FormatFloat(r.TMs, 'f', 1, 64), strconv.FormatFloat(r.Mbps, 'f', 3, 64)}
	}
	return report.WriteCSV(path, []string{"arm", "transport", "run", "flow", "t_ms", "mbps"}, out)
}

// cellsStalled is, by switch, how long its node's clock stood still between
// two reads of the statistics (ms).
func cellsStalled(before, after map[string]*CellsNodeStats) map[string]float64 {
	m := map[string]float64{}
	for n, a := range after {
		if b, ok := before[n]; ok {
			m[n] = float64(a.Cells.Stalled-b.Cells.Stalled) / 1e6
		}
	}
	return m
}

func fmtStalled(m map[string]float64) string {
	var p []string
	for _, n := range sortedNames(m) {
		p = append(p, fmt.Sprintf("%s %.0f ms", n, m[n]))
	}
	return strings.Join(p, ", ")
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
