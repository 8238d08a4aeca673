package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
)

// CellsSprays are the spraying modes of `linkfabric run --cells-spray`.
var CellsSprays = []string{"perm", "p2c", "hash"}

func checkSprays(what string, sprays []string) error {
	return bed.CheckOneOf(what, "spraying mode", sprays, CellsSprays)
}

// CellsBalanceConfig sizes `linkfabric cells balance`.
type CellsBalanceConfig struct {
	Sprays   []string      `json:"sprays"`
	Flows    int           `json:"flows"`       // iperf3 -P
	Duration time.Duration `json:"duration_ns"` // counted window per spraying mode (iperf3 runs 1.5 s longer)
	CC       string        `json:"cc"`
	RunArgs  []string      `json:"run_args,omitempty"`
}

// Normalize fills defaults and checks the configuration.
func (c *CellsBalanceConfig) Normalize() error {
	if len(c.Sprays) == 0 {
		c.Sprays = slices.Clone(CellsSprays)
	}
	c.Flows = cmp.Or(c.Flows, 8)
	c.Duration = cmp.Or(c.Duration, 5*time.Second)
	c.CC = cmp.Or(c.CC, "cubic")
	if c.Flows < 1 || c.Flows > 128 || c.Duration < time.Second {
		return fmt.Errorf("cells balance: --flows %d, --duration %v: want 1..128 flows and at least 1s", c.Flows, c.Duration)
	}
	return checkSprays("cells balance", c.Sprays)
}

// loadSample is one iperf3 run from h1 to h2 with sw1's link ports counted
// over a window inside it (transmitted: the data direction).
type loadSample struct {
	Bps         float64   `json:"tcp_bps"`
	Retransmits int       `json:"tcp_retransmits"`
	Seconds     float64   `json:"window_seconds"`
	LinkBytes   []float64 `json:"link_bytes"`
	LinkFrames  []float64 `json:"link_frames"`
}

// iperfLoad runs iperf3 with flows TCP streams from h1 to h2 for d plus
// 1.5 s (its first second omitted) and counts sw1's link ports from 1.2 s
// after the start for d.
// On a loaded machine iperf3's server may not listen yet when the client
// connects: a refused connection is tried again (3 times in all).
func iperfLoad(ctx context.Context, b *bed.Bed, flows int, d time.Duration, cc string) (loadSample, error) {
	for try := 1; ; try++ {
		s, err := iperfLoadOnce(ctx, b, flows, d, cc)
		if err == nil || try == 3 || ctx.Err() != nil || !strings.Contains(err.Error(), "unable to connect") {
			return s, err
		}
		b.Env.Printf("cells: iperf3 could not connect (%v); again", err)
	}
}

func iperfLoadOnce(ctx context.Context, b *bed.Bed, flows int, d time.Duration, cc string) (loadSample, error) {
	sw := b.Switches[0]
	ns, links := b.TB.NS(sw), b.LinkPorts(sw)
	type res struct {
		r   bed.IperfResult
		err error
	}
	done := make(chan res, 1)
	secs := int((d + 1500*time.Millisecond + time.Second - 1) / time.Second)
	go func() {
		r, err := b.Env.Iperf3(ctx, time.Duration(secs)*time.Second, "-P", strconv.Itoa(flows), "-O", "1", "-C", cc)
		done <- res{r, err}
	}()
	var s loadSample
	var c0, c1 []bed.IfCounters
	var t0, t1 time.Time
	var err error
	select { // the server's start and the client's first second
	case r := <-done:
		return s, fmt.Errorf("iperf3 ended early: %v", r.err)
	case <-time.After(1500 * time.Millisecond):
	}
	t0 = time.Now()
	if c0, err = bed.ReadIfCounters(ns, links...); err != nil {
		return s, err
	}
	select {
	case r := <-done:
		return s, fmt.Errorf("iperf3 ended early: %v", r.err)
	case <-time.After(d):
	}
	t1 = time.Now()
	if c1, err = bed.ReadIfCounters(ns, links...); err != nil {
		return s, err
	}
	r := <-done
	if r.err != nil {
		return s, r.err
	}
	s.Bps, s.Retransmits, s.Seconds = r.r.Bps, r.r.Retransmits, t1.Sub(t0).Seconds()
	for i := range links {
		dl := c1[i].Sub(c0[i])
		s.LinkBytes = append(s.LinkBytes, float64(dl.TxBytes))
		s.LinkFrames = append(s.LinkFrames, float64(dl.TxPackets))
	}
	return s, b.Dataplanes().Alive()
}

// BalanceArm is one spraying mode's run.
type BalanceArm struct {
	Spray   string     `json:"spray"`
	Load    loadSample `json:"load"`
	MaxMean float64    `json:"max_mean"` // bytes per link, largest over mean
}

// CellsBalanceSummary are the headline figures: max/mean bytes per link
// per spraying mode (<spray>_max_mean) and the target for perm.
type CellsBalanceSummary map[string]any

// CellsBalanceResult is what `linkfabric cells balance` reports.
type CellsBalanceResult struct {
	Config CellsBalanceConfig `json:"config"`
	sprayResult
	Arms    []BalanceArm        `json:"arms"`
	Summary CellsBalanceSummary `json:"summary"`
}

// sprayResult is what the balance and elephants results share besides
// their configuration: the machine, how long the experiment took and the
// link ports of sw1 it counted.
type sprayResult struct {
	report.RunInfo
	Seconds float64  `json:"seconds"`
	Links   []string `json:"links"`
}

// CellsBalance runs `linkfabric cells balance` on a bundle testbed: for
// each spraying mode, TCP flows from h1 to h2 and the bytes each of sw1's
// link ports sent, from the interfaces' own counters.
func CellsBalance(ctx context.Context, e *bed.Env, cfg CellsBalanceConfig) (*CellsBalanceResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	res := &CellsBalanceResult{Config: cfg, sprayResult: sprayResult{RunInfo: report.NewRunInfo()}}
	e.Printf("cells balance: bundle testbed %q; sprays %s; iperf3 -P %d h1 → h2 (%s), sw1's link ports counted for %v each",
		e.Prefix, strings.Join(cfg.Sprays, ","), cfg.Flows, cfg.CC, cfg.Duration)
	err := eachSpray(ctx, e, "cells balance", cfg.Sprays, bed.BedRun{Args: cfg.RunArgs}, &res.sprayResult, func(b *bed.Bed, sp string) error {
		s, err := iperfLoad(ctx, b, cfg.Flows, cfg.Duration, cfg.CC)
		if err != nil {
			return fmt.Errorf("cells balance %s: %w", sp, err)
		}
		a := BalanceArm{Spray: sp, Load: s, MaxMean: bed.MaxMean(s.LinkBytes)}
		res.Arms = append(res.Arms, a)
		e.Printf("cells balance:   %.2f Gbit/s; bytes per link %s; max/mean %.4f", s.Bps/1e9, joinFloats(s.LinkBytes, 1e6, "%.1f", " / ")+" MB", a.MaxMean)
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Summary = CellsBalanceSummary{"perm_target": 1.02}
	for _, a := range res.Arms {
		res.Summary[a.Spray+"_max_mean"] = a.MaxMean
		res.Summary[a.Spray+"_tcp_bps"] = a.Load.Bps
		if a.Spray == "perm" {
			res.Summary["perm_ok"] = a.MaxMean <= 1.02
		}
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// eachSpray brings the bundle testbed up, notes sw1's link ports in res,
// starts cells on it once per spraying mode, with run's arguments after
// --cells-spray and its link rate, and measures each with arm; then it
// stops the dataplanes and takes the testbed down. what names the
// experiment in its progress lines and errors.
func eachSpray(ctx context.Context, e *bed.Env, what string, sprays []string, run bed.BedRun, res *sprayResult, arm func(b *bed.Bed, spray string) error) error {
	b, err := e.BedUp("bundle", 0)
	if err != nil {
		return err
	}
	defer b.Down()
	res.Links = b.LinkPorts(b.Switches[0])
	for i, sp := range sprays {
		e.Printf("%s: [%d/%d] --cells-spray %s", what, i+1, len(sprays), sp)
		r := run
		r.Mode, r.Args = bed.ModeCells, append([]string{"--cells-spray", sp}, run.Args...)
		if err := b.Start(ctx, r); err != nil {
			return fmt.Errorf("%s %s: %w", what, sp, err)
		}
		if err := arm(b, sp); err != nil {
			return err
		}
	}
	b.Stop()
	return nil
}

// Text renders the result.
func (r *CellsBalanceResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "linkfabric cells balance: iperf3 -P %d h1 → h2 (%s) over the bundle, bytes each of sw1's link ports sent (interface counters) over %v; kernel %s, %d CPUs; %.0fs\n\n",
		c.Flows, c.CC, c.Duration, r.Kernel, r.CPUs, r.Seconds)
	w := report.NewTable(&b)
	fmt.Fprint(w, r.linkHeader("spray\t", "%s MB\t", "max/mean\tGbit/s\tTCP retrans\t"))
	for _, a := range r.Arms {
		fmt.Fprintf(w, "%s\t", a.Spray)
		for _, x := range a.Load.LinkBytes {
			fmt.Fprintf(w, "%.1f\t", x/1e6)
		}
		fmt.Fprintf(w, "%.4f\t%.2f\t%d\t\n", a.MaxMean, a.Load.Bps/1e9, a.Load.Retransmits)
	}
	w.Flush()
	if v, ok := r.Summary["perm_max_mean"].(float64); ok {
		fmt.Fprintf(&b, "\nperm max/mean %.4f (target ≤ 1.02: %s)\n", v, report.MetWord(v <= 1.02))
	}
	return b.String()
}

// linkHeader is the header line of a table with a column for each link
// (its name in linkCol) between first and last.
func (r *sprayResult) linkHeader(first, linkCol, last string) string {
	h := first
	for _, l := range r.Links {
		h += fmt.Sprintf(linkCol, l)
	}
	return h + last + "\n"
}

// WriteFiles writes balance.json and balance.csv (one row per spray and
// link) into dir.
func (r *CellsBalanceResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	for _, a := range r.Arms {
		for i, l := range r.Links {
			rows = append(rows, []string{a.Spray, l, strconv.FormatFloat(a.Load.LinkBytes[i], 'f', 0, 64),
				strconv.FormatFloat(a.Load.LinkFrames[i], 'f', 0, 64), strconv.FormatFloat(a.MaxMean, 'f', 4, 64)})
		}
	}
	return report.WriteTable(dir, "balance", r, []string{"spray", "link", "tx_bytes", "tx_frames", "max_mean"}, rows)
}
