package bed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
)

// FlowsRun is what one run of UDP flows through a cells fabric gave:
// every sink's arrivals, what each flow sent and when the flows started.
type FlowsRun struct {
	Arrivals map[string][]UDPArrival // by sink namespace
	Sent     []uint64
	T0       int64 // the earliest start, unix ns
	// Rcvbuf is the UDP receive buffer errors in the sinks' namespaces:
	// datagrams their sockets had no room for (not the fabric's).
	Rcvbuf uint64
}

// RunUDPFlows listens on sinks (namespace → ":port"), sends flows, waits
// until nothing has arrived for quiet (at most drain after the senders
// end), and returns what arrived.
func RunUDPFlows(ctx context.Context, sinks map[string]string, flows []UDPFlow, quiet, drain time.Duration) (*FlowsRun, error) {
	r := &FlowsRun{Arrivals: map[string][]UDPArrival{}}
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
	r.Sent = sent
	for _, t := range start {
		if r.T0 == 0 || t < r.T0 {
			r.T0 = t
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
		r.Arrivals[ns] = s.Close()
		delete(open, ns)
		if n, err := netns.SNMP(ns, "Udp", "RcvbufErrors"); err == nil {
			r.Rcvbuf += n - rcv0[ns]
		}
	}
	return r, ctx.Err()
}

// IperfTCP is one iperf3 TCP client's result.
type IperfTCP struct {
	Bytes       float64
	Bps         float64 // bit/s received
	Retransmits int
}

// RunIperfPairs runs one iperf3 TCP client per pair (client namespace,
// server namespace, server address, port) at once for d, each against its
// own one-off server, with extra client arguments. mid, if set, is called
// at 20 % and 90 % of d (the steady part of the run).
func RunIperfPairs(ctx context.Context, pairs [][4]string, d time.Duration, extra []string, mid func(at int)) ([]IperfTCP, error) {
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
	res := make([]IperfTCP, len(pairs))
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
				errs[i] = fmt.Errorf("iperf3 %s → %s: %v %v: %s", p[0], p[2], err, jerr, LastLines(out, 3))
				return
			}
			if doc.Error != "" {
				errs[i] = fmt.Errorf("iperf3 %s → %s: %s", p[0], p[2], doc.Error)
				return
			}
			res[i] = IperfTCP{Bytes: doc.End.SumReceived.Bytes, Bps: doc.End.SumReceived.BitsPerSecond, Retransmits: doc.End.SumSent.Retransmits}
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

// ShareDeviation is the largest relative deviation of the shares v from
// a fair share (1/len(v)).
func ShareDeviation(v []float64) float64 {
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

// LoadAvg is the 1-minute load average (0 if unknown).
func LoadAvg() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// UDPSeries bins the arrivals of each flow (flows[i] for flow i) into bins
// of width bin from t0: each bin the flow's wire bit/s in it.
func UDPSeries(arr []UDPArrival, names []string, t0 int64, bin time.Duration) [][]float64 {
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
		s[k] += float64(a.Len+UDPWireOverhead) * 8 / bin.Seconds()
		out[a.Flow] = s
	}
	return out
}

// SortedNames is the keys of m in order.
func SortedNames[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// WriteFlows writes v as name.json, the flows as flows.csv and their
// tail-CDF plots (one per flow size, arms in order) into dir, and returns
// the paths.
func WriteFlows(dir, name string, v any, flows []fct.Flow, arms []string) ([]string, error) {
	j := filepath.Join(dir, name+".json")
	if err := report.WriteJSON(j, v); err != nil {
		return nil, err
	}
	c := filepath.Join(dir, "flows.csv")
	if err := report.WriteFile(c, func(w io.Writer) error { return fct.WriteCSV(w, flows) }); err != nil {
		return nil, err
	}
	plots, err := fct.PlotAllSizes(flows, dir, name, fct.PlotOptions{Arms: arms})
	return append([]string{j, c}, plots...), err
}
