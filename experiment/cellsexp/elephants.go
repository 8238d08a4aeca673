package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// wireOverhead is what a frame costs on an Ethernet wire beyond its bytes
// (preamble, FCS, inter-frame gap), as the dataplane's port rate counts it.
const wireOverhead = 24

// CellsElephantsConfig sizes `linkfabric cells elephants`.
type CellsElephantsConfig struct {
	Sprays   []string      `json:"sprays"`
	Flows    int           `json:"flows"`         // TCP flows (iperf3 -P)
	LinkRate netns.BitRate `json:"link_rate_bps"` // every link port's line rate, both switches
	Trials   int           `json:"trials"`        // iperf3 runs per spraying mode (new source ports each)
	Duration time.Duration `json:"duration_ns"`   // counted window per trial
	CC       string        `json:"cc"`
	RunArgs  []string      `json:"run_args,omitempty"`
}

// Normalize fills defaults and checks the configuration.
func (c *CellsElephantsConfig) Normalize() error {
	if len(c.Sprays) == 0 {
		c.Sprays = []string{"perm", "hash"}
	}
	c.Flows = cmp.Or(c.Flows, 4)
	c.LinkRate = cmp.Or(c.LinkRate, 200e6)
	c.Trials = cmp.Or(c.Trials, 6)
	c.Duration = cmp.Or(c.Duration, 4*time.Second)
	c.CC = cmp.Or(c.CC, "cubic")
	if c.Flows < 1 || c.Flows > 64 || c.Trials < 1 || c.Duration < time.Second || c.LinkRate < 1e6 {
		return fmt.Errorf("cells elephants: --flows %d, --trials %d, --duration %v, --link-rate %v: want 1..64 flows, a trial or more, at least 1s and 1 Mbit/s",
			c.Flows, c.Trials, c.Duration, c.LinkRate)
	}
	return checkSprays("cells elephants", c.Sprays)
}

// ElephantTrial is one iperf3 run: what each link carried on the wire
// (frames plus 24 bytes each) as a share of its rate.
type ElephantTrial struct {
	Spray     string     `json:"spray"`
	Trial     int        `json:"trial"`
	Load      loadSample `json:"load"`
	LinkUtil  []float64  `json:"link_util"`
	Aggregate float64    `json:"aggregate_share"` // Σ wire rate / Σ link rates
	Goodput   float64    `json:"goodput_share"`   // iperf3 goodput / Σ link rates
	LinksUsed int        `json:"links_used"`      // links above a quarter of their rate
	Effective float64    `json:"effective_links"` // Σ link_util
}

// CellsElephantsResult is what `linkfabric cells elephants` reports.
type CellsElephantsResult struct {
	Config CellsElephantsConfig `json:"config"`
	sprayResult
	Trials []ElephantTrial `json:"trials"`
	// Summary: per spray the medians of aggregate_share, goodput_share
	// and effective_links and the mean links_used
	// (<spray>_aggregate_share, ...), the expected links_used of hashing
	// (links·(1−(1−1/links)^flows)), the perm target and verdict.
	Summary map[string]any `json:"summary"`
}

// CellsElephants runs `linkfabric cells elephants` on a bundle testbed
// whose link ports are rate-limited: TCP flows from h1 to h2 per spraying
// mode, several trials each.
func CellsElephants(ctx context.Context, e *bed.Env, cfg CellsElephantsConfig) (*CellsElephantsResult, error) {
	start := time.Now()
	if err := bed.Prepare(e, &cfg); err != nil {
		return nil, err
	}
	res := &CellsElephantsResult{Config: cfg, sprayResult: sprayResult{RunInfo: report.NewRunInfo()}}
	e.Printf("cells elephants: bundle testbed %q, link ports at %sbit/s; sprays %s; %d trials of iperf3 -P %d (%s), %v counted each",
		e.Prefix, cfg.LinkRate, strings.Join(cfg.Sprays, ","), cfg.Trials, cfg.Flows, cfg.CC, cfg.Duration)
	err := eachSpray(ctx, e, "cells elephants", cfg.Sprays, bed.BedRun{Args: cfg.RunArgs, LinkRate: cfg.LinkRate}, &res.sprayResult, func(b *bed.Bed, sp string) error {
		capacity := float64(len(res.Links)) * float64(cfg.LinkRate)
		for k := 1; k <= cfg.Trials; k++ {
			s, err := iperfLoad(ctx, b, cfg.Flows, cfg.Duration, cfg.CC)
			if err != nil {
				return fmt.Errorf("cells elephants %s, trial %d: %w", sp, k, err)
			}
			t := ElephantTrial{Spray: sp, Trial: k, Load: s, Goodput: s.Bps / capacity}
			var wire float64
			for l := range s.LinkBytes {
				bits := (s.LinkBytes[l] + wireOverhead*s.LinkFrames[l]) * 8 / s.Seconds
				u := bits / float64(cfg.LinkRate)
				t.LinkUtil = append(t.LinkUtil, u)
				t.Effective += u
				if u > 0.25 {
					t.LinksUsed++
				}
				wire += bits
			}
			t.Aggregate = wire / capacity
			res.Trials = append(res.Trials, t)
			e.Printf("cells elephants:   %s trial %d: aggregate %.3f of the links' rate (goodput %.3f, %.0f Mbit/s); per link %s; %d links used",
				sp, k, t.Aggregate, t.Goodput, s.Bps/1e6, joinFloats(t.LinkUtil, 1, "%.2f", " "), t.LinksUsed)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Summary = elephantsSummary(res, float64(len(res.Links)))
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func elephantsSummary(r *CellsElephantsResult, links float64) map[string]any {
	flows := float64(r.Config.Flows)
	s := map[string]any{
		"hash_expected_links_used": links * (1 - math.Pow(1-1/links, flows)),
		"perm_target":              0.9,
	}
	for _, sp := range r.Config.Sprays {
		var agg, good, eff []float64
		used := 0.0
		for _, t := range r.Trials {
			if t.Spray == sp {
				agg, good, eff = append(agg, t.Aggregate), append(good, t.Goodput), append(eff, t.Effective)
				used += float64(t.LinksUsed)
			}
		}
		if len(agg) == 0 {
			continue
		}
		s[sp+"_aggregate_share"] = report.Median(agg)
		s[sp+"_goodput_share"] = report.Median(good)
		s[sp+"_effective_links"] = report.Median(eff)
		s[sp+"_links_used_mean"] = used / float64(len(agg))
		if sp == "perm" {
			s["perm_ok"] = s["perm_aggregate_share"].(float64) >= 0.9
		}
	}
	return s
}

// Text renders the result.
func (r *CellsElephantsResult) Text() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "linkfabric cells elephants: iperf3 -P %d h1 → h2 (%s) over the bundle, %d links at %sbit/s each; %d trials per spray of %v; kernel %s, %d CPUs; %.0fs\n",
		c.Flows, c.CC, len(r.Links), c.LinkRate, c.Trials, c.Duration, r.Kernel, r.CPUs, r.Seconds)
	b.WriteString("share of a link's rate on sw1's link ports (interface counters, frames + 24 B on the wire); aggregate: Σ over the links' rates\n\n")
	w := report.NewTable(&b)
	fmt.Fprint(w, r.linkHeader("spray\ttrial\t", "%s\t", "links used\taggregate\tgoodput\tMbit/s\tTCP retrans\t"))
	for _, t := range r.Trials {
		fmt.Fprintf(w, "%s\t%d\t", t.Spray, t.Trial)
		for _, u := range t.LinkUtil {
			fmt.Fprintf(w, "%.2f\t", u)
		}
		fmt.Fprintf(w, "%d\t%.3f\t%.3f\t%.0f\t%d\t\n", t.LinksUsed, t.Aggregate, t.Goodput, t.Load.Bps/1e6, t.Load.Retransmits)
	}
	w.Flush()
	s := r.Summary
	b.WriteString("\n")
	for _, sp := range c.Sprays {
		if v, ok := s[sp+"_aggregate_share"].(float64); ok {
			fmt.Fprintf(&b, "%-5s median aggregate %.3f of the links' rate (goodput %.3f), effective links %.2f, links used %.2f on average\n",
				sp, v, s[sp+"_goodput_share"], s[sp+"_effective_links"], s[sp+"_links_used_mean"])
		}
	}
	if v, ok := s["perm_aggregate_share"].(float64); ok {
		fmt.Fprintf(&b, "perm: %.3f (target ≥ 0.9: %s)\n", v, report.MetWord(v >= 0.9))
	}
	if _, ok := s["hash_links_used_mean"]; ok {
		fmt.Fprintf(&b, "hash: %.2f links used on average, expected %.2f for %d flows on %d links\n",
			s["hash_links_used_mean"], s["hash_expected_links_used"], c.Flows, len(r.Links))
	}
	return b.String()
}

// WriteFiles writes elephants.json and elephants.csv (one row per trial
// and link) into dir.
func (r *CellsElephantsResult) WriteFiles(dir string) ([]string, error) {
	var rows [][]string
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	for _, t := range r.Trials {
		for i, l := range r.Links {
			rows = append(rows, []string{t.Spray, strconv.Itoa(t.Trial), l, f(t.LinkUtil[i]), f(t.Aggregate), f(t.Goodput), strconv.Itoa(t.LinksUsed)})
		}
	}
	return report.WriteTable(dir, "elephants", r, []string{"spray", "trial", "link", "link_util", "aggregate_share", "goodput_share", "links_used"}, rows)
}
