package tdmaexp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/host"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// ShuffleArms are the arms of `tdma shuffle`.
var ShuffleArms = []string{"tdma", "tcp"}

// TDMAShuffleConfig sizes `linkfabric tdma shuffle` (§6.1): every host
// sends Size bytes to every other host, under TDMA (raw agents) and TCP.
type TDMAShuffleConfig struct {
	Star  TDMAStar `json:"star"`
	Size  int64    `json:"size"`
	Arms  []string `json:"arms"` // tdma, tcp
	Runs  int      `json:"runs"`
	Force bool     `json:"force"`
	Dir   string   `json:"-"`
}

// ShuffleArm is one arm's run.
type ShuffleArm struct {
	Arm         string    `json:"arm"`
	Run         int       `json:"run"`
	IdealS      float64   `json:"ideal_s"`
	CompletionS float64   `json:"completion_s"`
	OverIdeal   float64   `json:"completion_over_ideal"`
	SpreadS     float64   `json:"finish_spread_s"` // last − first flow finish
	Finishes    []float64 `json:"finishes_s"`      // per flow, from the start
	Incomplete  int       `json:"incomplete_flows"`
	Retransmits uint64    `json:"tcp_retransmits,omitempty"`
	ArmMeasures
	TDMACounters
	// Progress: each host's bytes received over time, s from the start
	// (the first byte sent under TDMA, the first connection under TCP).
	Progress []HostProgress `json:"progress,omitempty"`
}

// HostProgress is one host's received payload bytes over time.
type HostProgress struct {
	Host  int       `json:"host"` // 1-based, as h1..hN
	T     []float64 `json:"t_s"`
	Bytes []int64   `json:"bytes"`
}

// TDMAShuffleResult is the experiment's outcome.
type TDMAShuffleResult struct {
	Config  TDMAShuffleConfig  `json:"config"`
	Runs    []ShuffleArm       `json:"runs"`
	Summary map[string]ArmSumm `json:"summary"`
	Precheck
}

// ArmSumm is an arm's medians over the runs.
type ArmSumm struct {
	OverIdeal   float64 `json:"completion_over_ideal_median"`
	SpreadS     float64 `json:"finish_spread_s_median"`
	Drops       float64 `json:"switch_drops_median"`
	Collisions  float64 `json:"collisions_median"`
	Overhead    float64 `json:"control_overhead_pct_median,omitempty"`
	Retransmits float64 `json:"tcp_retransmits_median,omitempty"`
	PaperRatio  float64 `json:"paper_over_ideal"`
}

// payloads per 1514-byte frame: raw TDMA (Ethernet, data header, window
// trailer) and TCP with timestamps.
const (
	rawPayload = 1514 - 14 - wire.DataHdrLen - wire.WinTrailerLen
	tcpPayload = 1448
	wireFrame  = 1514 + 24
)

// TDMAShuffle runs the shuffle arms Runs times, interleaved.
func TDMAShuffle(ctx context.Context, e *bed.Env, cfg TDMAShuffleConfig) (*TDMAShuffleResult, error) {
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMAShuffleResult{Config: cfg, Precheck: pre, Summary: map[string]ArmSumm{}}
	for run := 1; run <= cfg.Runs; run++ {
		for _, arm := range cfg.Arms {
			e.Printf("tdma shuffle: run %d/%d, arm %s (%d hosts, %s per flow, load average %.1f)", run, cfg.Runs, arm, cfg.Star.Hosts, netns.ByteSize(cfg.Size), bed.LoadAvg())
			r, err := shuffleOnce(ctx, e, cfg, arm, run, nil)
			if err != nil {
				return res, fmt.Errorf("run %d, arm %s: %w", run, arm, err)
			}
			e.Printf("  completion %.3f s = %.3f × ideal, finish spread %.3f s, switch drops %d, host TBF drops %d, veth drops %d on transmit, %d on receive (%d at the switch's ends; machine backlog %d), socket drops %d, collisions %d, lost frames %d, CPU %.0f %% (the hypervisor's steal %.2f %%)", r.CompletionS, r.OverIdeal, r.SpreadS, r.Switch.Drops, r.HostDrops, r.VethDrops, r.VethRxDrops, r.PortRxDrops, r.BacklogDrops, r.SockDrops, r.Collisions, r.LostFrames, r.CPUBusyPct, r.StealPct)
			res.Runs = append(res.Runs, r)
		}
	}
	paper := map[string]float64{"tdma": 1.054, "tcp": 1.22}
	for _, arm := range cfg.Arms {
		var oi, sp, dr, co, ov, rt []float64
		for _, r := range res.Runs {
			if r.Arm == arm {
				oi, sp, dr, co = append(oi, r.OverIdeal), append(sp, r.SpreadS), append(dr, float64(r.Switch.Drops)), append(co, float64(r.Collisions))
				ov, rt = append(ov, r.CtlOverheadPct), append(rt, float64(r.Retransmits))
			}
		}
		res.Summary[arm] = ArmSumm{OverIdeal: report.Median(oi), SpreadS: report.Median(sp), Drops: report.Median(dr), Collisions: report.Median(co), Overhead: report.Median(ov), Retransmits: report.Median(rt), PaperRatio: paper[arm]}
	}
	return res, nil
}

// shuffleOnce runs one arm on a fresh star; extra are more flags for the
// TDMA agents.
func shuffleOnce(ctx context.Context, e *bed.Env, cfg TDMAShuffleConfig, arm string, run int, extra []string) (ShuffleArm, error) {
	a, _, err := shuffleOnceWith(ctx, e, cfg, arm, run, shuffleOpts{extra: extra})
	return a, err
}

// shuffleOpts are more knobs of one shuffle run.
type shuffleOpts struct {
	extra  []string // more flags for the TDMA agents
	during fmHook   // runs while the TDMA agents do
	// slow stretches the TDMA arm's timeout: the run is expected to take
	// this many times the ideal (≥ 1; 1 over the expected efficiency).
	slow float64
	tag  string // added to the TDMA run's directory name
}

// shuffleOnceWith is shuffleOnce; it also returns the TDMA agents'
// statistics (nil for TCP).
func shuffleOnceWith(ctx context.Context, e *bed.Env, cfg TDMAShuffleConfig, arm string, run int, o shuffleOpts) (ShuffleArm, *TDMARun, error) {
	c := cfg.Star
	extra := o.extra
	var tr *TDMARun
	out := ShuffleArm{Arm: arm, Run: run}
	perHost := float64(int64(c.Hosts-1)*cfg.Size) * 8 / float64(c.Rate)
	err := onStar(e, c, &out.ArmMeasures, func(tb *netns.Testbed) error {
		switch arm {
		case "tdma":
			out.IdealS = perHost * wireFrame / rawPayload
			dir := filepath.Join(cfg.Dir, fmt.Sprintf("tdma-%s-run%d%s%s", c.Mode, run, strings.Join(extra, ""), o.tag))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			timeout := time.Duration(out.IdealS*5*max(o.slow, 1)*float64(time.Second)) + 20*time.Second
			r, err := runTDMAWith(ctx, e, tb, c, dir, timeout, func(int) []string {
				return append([]string{"--workload", "shuffle", "--size", strconv.FormatInt(cfg.Size, 10), "--exit-after", (3 * c.Slot * time.Duration(c.Hosts)).String()}, extra...)
			}, o.during)
			if err != nil {
				return err
			}
			tr = r
			first := int64(0)
			var done []int64
			for i, h := range r.Hosts {
				if h.FirstSend != 0 && (first == 0 || h.FirstSend < first) {
					first = h.FirstSend
				}
				for j, d := range h.RecvDone {
					if j == i {
						continue
					}
					if d == 0 { // raw mode does not retransmit: a lost frame leaves the flow short
						out.Incomplete++
						e.Printf("  h%d received %d of %d bytes of h%d's flow (see %s)", i+1, h.RecvBytes[j], cfg.Size, j+1, dir)
						continue
					}
					done = append(done, d)
				}
			}
			for _, d := range done {
				out.Finishes = append(out.Finishes, float64(d-first)/1e9)
			}
			out.Progress = tdmaProgress(r.Hosts, first)
			out.TDMACounters = r.counters(c)
		case "tcp":
			out.IdealS = perHost * wireFrame / tcpPayload
			r0 := tcpRetrans(tb, c.Hosts)
			fin, prog, err := tcpShuffle(ctx, tb, c.Hosts, cfg.Size)
			if err != nil {
				return err
			}
			out.Finishes, out.Progress = fin, prog
			out.Retransmits = tcpRetrans(tb, c.Hosts) - r0
		default:
			return fmt.Errorf("arm %q: want tdma or tcp", arm)
		}
		return nil
	})
	if err != nil {
		return out, nil, err
	}
	slices.Sort(out.Finishes)
	if n := len(out.Finishes); n > 0 {
		out.CompletionS = out.Finishes[n-1]
		out.SpreadS = out.Finishes[n-1] - out.Finishes[0]
		out.OverIdeal = out.CompletionS / out.IdealS
	}
	return out, tr, nil
}

// tdmaProgress turns the agents' progress samples into seconds from first
// (clock ns), starting at (0, 0).
func tdmaProgress(hosts []host.Stats, first int64) []HostProgress {
	out := make([]HostProgress, len(hosts))
	for i, h := range hosts {
		p := HostProgress{Host: i + 1, T: []float64{0}, Bytes: []int64{0}}
		for _, q := range h.Progress {
			if q.T > first {
				p.T, p.Bytes = append(p.T, float64(q.T-first)/1e9), append(p.Bytes, q.Bytes)
			}
		}
		out[i] = p
	}
	return out
}

// tcpShuffle runs the all-to-all over kernel TCP (the default congestion
// control) and returns each flow's finish time at its receiver, in s from
// the start, and each receiver's bytes sampled every 10 ms.
func tcpShuffle(ctx context.Context, tb *netns.Testbed, n int, size int64) ([]float64, []HostProgress, error) {
	lns := make([]net.Listener, n)
	for j := range lns {
		var err error
		if lns[j], err = listenOn(tb, j+1, 5301); err != nil {
			return nil, nil, err
		}
		defer lns[j].Close()
	}
	var mu sync.Mutex
	var fin []float64
	var errs []error
	var wg sync.WaitGroup
	rx := make([]atomic.Int64, n) // bytes received per host
	start := clock.Now()
	for j := range lns {
		for k := 0; k < n-1; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := lns[j].Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 64<<10)
				var m int64
				for {
					r, err := c.Read(buf)
					m += int64(r)
					rx[j].Add(int64(r))
					if err != nil {
						break
					}
				}
				t := float64(clock.Now()-start) / 1e9
				mu.Lock()
				defer mu.Unlock()
				if m != size {
					errs = append(errs, fmt.Errorf("a flow into h%d carried %d of %d bytes", j+1, m, size))
				}
				fin = append(fin, t)
			}()
		}
	}
	prog := make([]HostProgress, n)
	for j := range prog {
		prog[j] = HostProgress{Host: j + 1, T: []float64{0}, Bytes: []int64{0}}
	}
	sample := func() {
		t := float64(clock.Now()-start) / 1e9
		for j := range prog {
			prog[j].T, prog[j].Bytes = append(prog[j].T, t), append(prog[j].Bytes, rx[j].Load())
		}
	}
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(tcpProgressEvery)
		defer tk.Stop()
		for {
			select {
			case <-stopSampling:
				sample()
				return
			case <-tk.C:
				sample()
			}
		}
	}()
	buf := make([]byte, 64<<10)
	var dialErr error
	for i := 0; i < n && dialErr == nil; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			var c net.Conn
			if c, dialErr = dialFrom(tb, i+1, j+1, 5301); dialErr != nil {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for left := size; left > 0 && ctx.Err() == nil; {
					w, err := c.Write(buf[:min(int64(len(buf)), left)])
					if err != nil {
						return
					}
					left -= int64(w)
				}
			}()
		}
	}
	if dialErr != nil {
		for _, l := range lns {
			l.Close() // the accepts still waiting end
		}
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	if dialErr != nil {
		return nil, nil, dialErr
	}
	if len(errs) > 0 {
		return nil, nil, errs[0]
	}
	return fin, prog, ctx.Err()
}

// progressEvery is how often the TCP arm samples the bytes received (the
// agents sample every 10 ms too).
const tcpProgressEvery = 10 * time.Millisecond

// WriteTDMAShuffle writes shuffle.json, flows.csv, progress.csv and
// shuffle-progress.png into dir; it returns the paths written.
func WriteTDMAShuffle(dir string, r *TDMAShuffleResult) ([]string, error) {
	jp, cp, pp, png := filepath.Join(dir, "shuffle.json"), filepath.Join(dir, "flows.csv"), filepath.Join(dir, "progress.csv"), filepath.Join(dir, "shuffle-progress.png")
	if err := report.WriteJSON(jp, r); err != nil {
		return nil, err
	}
	var flows, prog [][]string
	for _, r := range r.Runs {
		for i, t := range r.Finishes {
			flows = append(flows, []string{r.Arm, strconv.Itoa(r.Run), strconv.Itoa(i), strconv.FormatFloat(t, 'f', 6, 64), strconv.FormatFloat(r.IdealS, 'f', 6, 64)})
		}
		for _, p := range r.Progress {
			for k := range p.T {
				prog = append(prog, []string{r.Arm, strconv.Itoa(r.Run), "h" + strconv.Itoa(p.Host), strconv.FormatFloat(p.T[k], 'f', 4, 64), strconv.FormatInt(p.Bytes[k], 10)})
			}
		}
	}
	paths := []string{jp}
	if err := report.WriteCSV(cp, []string{"arm", "run", "flow", "finish_s", "ideal_s"}, flows); err != nil {
		return paths, err
	}
	paths = append(paths, cp)
	if err := report.WriteCSV(pp, []string{"arm", "run", "host", "t_s", "bytes"}, prog); err != nil {
		return paths, err
	}
	paths = append(paths, pp)
	if err := PlotShuffleProgress(png, r.Runs, r.Config.Size); err != nil {
		return paths, err
	}
	return append(paths, png), nil
}

// medianRun returns the run of arm whose completion is the median of the
// arm's runs with progress (the lower middle one for an even count).
func medianRun(runs []ShuffleArm, arm string) (ShuffleArm, bool) {
	var rs []ShuffleArm
	for _, r := range runs {
		if r.Arm == arm && len(r.Progress) > 0 {
			rs = append(rs, r)
		}
	}
	return report.MedianBy(rs, func(r ShuffleArm) float64 { return r.CompletionS })
}

// PlotShuffleProgress draws the paper's Figure 7 in shape: per arm (TCP
// above, TDMA below, one shared time axis), each host's bytes received
// over time, from the arm's median run, with the ideal (every host
// receiving at the line rate, less the arm's headers) dashed.
func PlotShuffleProgress(path string, runs []ShuffleArm, size int64) error {
	var panels []report.LinePanel
	for _, arm := range []string{"tcp", "tdma"} {
		r, ok := medianRun(runs, arm)
		if !ok {
			continue
		}
		n := len(r.Progress)
		total := float64(int64(n-1)*size) / (1 << 20)
		pn := report.LinePanel{Title: fmt.Sprintf("%s, run %d: completion %.3f s = %.3f × ideal", arm, r.Run, r.CompletionS, r.OverIdeal),
			XLabel: "time (s)", YLabel: "MiB received"}
		for _, p := range r.Progress {
			mib := make([]float64, len(p.Bytes))
			for k, b := range p.Bytes {
				mib[k] = float64(b) / (1 << 20)
			}
			pn.Series = append(pn.Series, report.LineSeries{Name: "h" + strconv.Itoa(p.Host), X: p.T, Y: mib})
		}
		pn.Series = append(pn.Series, report.LineSeries{Name: "ideal", X: []float64{0, r.IdealS}, Y: []float64{0, total}, Ref: true})
		panels = append(panels, pn)
	}
	if len(panels) == 0 {
		return errors.New("tdma shuffle: no run recorded progress to plot")
	}
	return report.PlotPanels(path, panels)
}

// Text renders the runs and the medians.
func (r *TDMAShuffleResult) Text() string { return report.Sprint(r.write) }

func (r *TDMAShuffleResult) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\trun\tcompletion s\t÷ ideal\tspread s\tswitch drops\tbacklog p99 frames\tcollisions\tlost frames\tincomplete\toverrun B\tretrans\tctl %\tFM p99 µs\tFM RT\tCPU %\tsteal %\tload")
	for _, a := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%v\t%.0f\t%.2f\t%.1f\n", a.Arm, a.Run, a.CompletionS, a.OverIdeal, a.SpreadS,
			a.Switch.Drops, a.Switch.P99BacklogPkts, a.Collisions, a.LostFrames, a.Incomplete, a.OverrunBytes, a.Retransmits, a.CtlOverheadPct, a.FMLateP99us, a.FMRT, a.CPUBusyPct, a.StealPct, a.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for arm, s := range r.Summary {
		fmt.Fprintf(w, "  %-5s completion ÷ ideal %.3f (paper %.3f), finish spread %.3f s, switch drops %.0f, collisions %.0f, control overhead %.3f %%, retransmits %.0f\n",
			arm, s.OverIdeal, s.PaperRatio, s.SpreadS, s.Drops, s.Collisions, s.Overhead, s.Retransmits)
	}
	for _, a := range r.Runs {
		if f := &a.Fill; a.Arm == "tdma" && f.OpenNs > 0 {
			fmt.Fprintf(w, "tdma %d: windows used %d, of their open time lost to late opens %.2f %%, idle line %.2f %%, room left at the close %.2f %% (and %.2f %% after a flow's end)\n",
				a.Run, f.Windows, f.Pct(f.LateNs), f.Pct(f.IdleNs), f.Pct(f.TailNs), f.Pct(f.DrainedNs))
		}
	}
	var cr []causeRun
	for _, a := range r.Runs {
		if a.Arm == "tdma" {
			cr = append(cr, runCauses(fmt.Sprintf("tdma %d", a.Run), &a.TDMACounters))
		}
	}
	if len(cr) > 0 {
		printCauses(w, cr)
	}
	r.Precheck.print(w)
}

func (r *TDMAShuffleResult) measured() bool { return r != nil && len(r.Runs) > 0 }
