package experiment

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdmaagent/clock"
)

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

// payloads per 1514-byte frame: raw TDMA (Ethernet + data header + window
// end) and TCP with timestamps.
const (
	rawPayload = 1514 - 14 - 37 - 8
	tcpPayload = 1448
	wireFrame  = 1514 + 24
)

// TDMAShuffle runs the shuffle arms Runs times, interleaved.
func (e *Env) TDMAShuffle(ctx context.Context, cfg TDMAShuffleConfig) (*TDMAShuffleResult, error) {
	pre, err := e.precheck(cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMAShuffleResult{Config: cfg, Precheck: pre, Summary: map[string]ArmSumm{}}
	for run := 1; run <= cfg.Runs; run++ {
		for _, arm := range cfg.Arms {
			e.progress("tdma shuffle: run %d/%d, arm %s (%d hosts, %s per flow, load average %.1f)", run, cfg.Runs, arm, cfg.Star.Hosts, netns.ByteSize(cfg.Size), LoadAvg())
			r, err := e.shuffleOnce(ctx, cfg, arm, run, nil)
			if err != nil {
				return res, fmt.Errorf("run %d, arm %s: %w", run, arm, err)
			}
			e.progress("  completion %.3f s = %.3f × ideal, finish spread %.3f s, switch drops %d, host TBF drops %d, collisions %d, lost frames %d", r.CompletionS, r.OverIdeal, r.SpreadS, r.Switch.Drops, r.HostDrops, r.Collisions, r.LostFrames)
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
		res.Summary[arm] = ArmSumm{OverIdeal: Median(oi), SpreadS: Median(sp), Drops: Median(dr), Collisions: Median(co), Overhead: Median(ov), Retransmits: Median(rt), PaperRatio: paper[arm]}
	}
	return res, nil
}

// shuffleOnce runs one arm on a fresh star; extra are more flags for the
// TDMA agents.
func (e *Env) shuffleOnce(ctx context.Context, cfg TDMAShuffleConfig, arm string, run int, extra []string) (ShuffleArm, error) {
	c := cfg.Star
	out := ShuffleArm{Arm: arm, Run: run}
	perHost := float64(int64(c.Hosts-1)*cfg.Size) * 8 / float64(c.Rate)
	err := e.onStar(c, &out.ArmMeasures, func(tb *netns.Testbed) error {
		switch arm {
		case "tdma":
			out.IdealS = perHost * wireFrame / rawPayload
			dir := filepath.Join(cfg.Dir, fmt.Sprintf("tdma-%s-run%d%s", c.Mode, run, strings.Join(extra, "")))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			timeout := time.Duration(out.IdealS*5*float64(time.Second)) + 20*time.Second
			r, err := e.runTDMA(ctx, tb, c, dir, timeout, func(int) []string {
				return append([]string{"--workload", "shuffle", "--size", strconv.FormatInt(cfg.Size, 10), "--exit-after", (3 * c.Slot * time.Duration(c.Hosts)).String()}, extra...)
			})
			if err != nil {
				return err
			}
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
						e.progress("  h%d received %d of %d bytes of h%d's flow (see %s)", i+1, h.RecvBytes[j], cfg.Size, j+1, dir)
						continue
					}
					done = append(done, d)
				}
			}
			for _, d := range done {
				out.Finishes = append(out.Finishes, float64(d-first)/1e9)
			}
			out.TDMACounters = r.counters(c)
		case "tcp":
			out.IdealS = perHost * wireFrame / tcpPayload
			r0 := tcpRetrans(tb, c.Hosts)
			fin, err := tcpShuffle(ctx, tb, c.Hosts, cfg.Size)
			if err != nil {
				return err
			}
			out.Finishes = fin
			out.Retransmits = tcpRetrans(tb, c.Hosts) - r0
		default:
			return fmt.Errorf("arm %q: want tdma or tcp", arm)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	slices.Sort(out.Finishes)
	if n := len(out.Finishes); n > 0 {
		out.CompletionS = out.Finishes[n-1]
		out.SpreadS = out.Finishes[n-1] - out.Finishes[0]
		out.OverIdeal = out.CompletionS / out.IdealS
	}
	return out, nil
}

// tcpShuffle runs the all-to-all over kernel TCP (the default congestion
// control) and returns each flow's finish time at its receiver, in s from
// the start.
func tcpShuffle(ctx context.Context, tb *netns.Testbed, n int, size int64) ([]float64, error) {
	lns := make([]net.Listener, n)
	for j := range lns {
		var err error
		if lns[j], err = listenOn(tb, j+1, 5301); err != nil {
			return nil, err
		}
		defer lns[j].Close()
	}
	var mu sync.Mutex
	var fin []float64
	var errs []error
	var wg sync.WaitGroup
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
				m, _ := io.Copy(io.Discard, c)
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
	buf := make([]byte, 64<<10)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			c, err := dialFrom(tb, i+1, j+1, 5301)
			if err != nil {
				return nil, err
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
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return fin, ctx.Err()
}

// WriteTDMAShuffle writes shuffle.json, flows.csv into dir; returns paths.
func WriteTDMAShuffle(dir string, r *TDMAShuffleResult) ([]string, error) {
	jp, err := writeResultJSON(dir, "shuffle.json", r)
	if err != nil {
		return nil, err
	}
	cp := filepath.Join(dir, "flows.csv")
	f, err := os.Create(cp)
	if err != nil {
		return nil, err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"arm", "run", "flow", "finish_s", "ideal_s"})
	for _, r := range r.Runs {
		for i, t := range r.Finishes {
			w.Write([]string{r.Arm, strconv.Itoa(r.Run), strconv.Itoa(i), strconv.FormatFloat(t, 'f', 6, 64), strconv.FormatFloat(r.IdealS, 'f', 6, 64)})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return nil, err
	}
	return []string{jp, cp}, f.Close()
}

// PrintTDMAShuffle prints the runs and the medians.
func PrintTDMAShuffle(w io.Writer, r *TDMAShuffleResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\trun\tcompletion s\t÷ ideal\tspread s\tswitch drops\tbacklog p99 frames\tcollisions\tlost frames\tincomplete\toverrun B\tretrans\tctl %\tFM p99 µs\tFM RT\tCPU %\tload")
	for _, a := range r.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.0f\t%v\t%.0f\t%.1f\n", a.Arm, a.Run, a.CompletionS, a.OverIdeal, a.SpreadS,
			a.Switch.Drops, a.Switch.P99BacklogPkts, a.Collisions, a.LostFrames, a.Incomplete, a.OverrunBytes, a.Retransmits, a.CtlOverheadPct, a.FMLateP99us, a.FMRT, a.CPUBusyPct, a.LoadAvg)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmedians:")
	for arm, s := range r.Summary {
		fmt.Fprintf(w, "  %-5s completion ÷ ideal %.3f (paper %.3f), finish spread %.3f s, switch drops %.0f, collisions %.0f, control overhead %.3f %%, retransmits %.0f\n",
			arm, s.OverIdeal, s.PaperRatio, s.SpreadS, s.Drops, s.Collisions, s.Overhead, s.Retransmits)
	}
	r.Precheck.print(w)
}
