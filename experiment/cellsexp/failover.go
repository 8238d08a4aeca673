package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
)

// CellsLinkModes are the arms of `linkfabric cells failover` and `cells
// gray`: what runs under the cells on every link.
var CellsLinkModes = []string{"lg", "none"}

// CellsFailoverConfig sizes `linkfabric cells failover`.
type CellsFailoverConfig struct {
	// Arms: link modes, from CellsLinkModes (and lgnb, monitor);
	// Duration: the UDP run.
	BundleRuns
	CutAt time.Duration `json:"cut_at"` // when, into the UDP run, the link is cut
	// Cut is how: down (ip link set down at sw2's end) or drop (sw2's XDP
	// program drops every frame the link brings: a one-way failure).
	Cut  string `json:"cut"`
	Link int    `json:"link"` // which bundle link (0-3)
	// Rate is the UDP load (bit/s, 1200-byte datagrams).
	Rate float64 `json:"rate_bps"`
	CellsEdgeConfig
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *CellsFailoverConfig) Normalize() error {
	if err := c.BundleRuns.normalize("cells failover", CellsLinkModes, []string{"lg", "lgnb", "monitor", "none"}); err != nil {
		return err
	}
	c.CutAt = cmp.Or(c.CutAt, c.Duration/2)
	if c.Duration < 2*time.Second || c.CutAt < 500*time.Millisecond || c.CutAt > c.Duration-time.Second {
		return fmt.Errorf("cells failover: --duration %v and --cut-at %v: want a run of at least 2s and the cut at least 0.5s in and 1s before its end", c.Duration, c.CutAt)
	}
	c.Cut = cmp.Or(c.Cut, "down")
	if c.Cut != "down" && c.Cut != "drop" {
		return fmt.Errorf("cells failover: --cut %q: want down (ip link set down at sw2) or drop (sw2's XDP program drops the link's frames)", c.Cut)
	}
	if c.Link < 0 || c.Link >= len(bed.BundleLinks) {
		return fmt.Errorf("cells failover: --link %d: the bundle has links 0-3", c.Link)
	}
	c.Rate = cmp.Or(c.Rate, 200e6)
	if c.Rate < 1e6 {
		return fmt.Errorf("cells failover: --rate %.0f: want at least 1 Mbit/s", c.Rate)
	}
	return c.CellsEdgeConfig.normalize("cells failover")
}

// BundleRuns are the arms, the runs of each and their length of a cells
// experiment on the bundle.
type BundleRuns struct {
	Arms     []string      `json:"arms"`
	Runs     int           `json:"runs"`     // runs per arm; the table shows medians
	Duration time.Duration `json:"duration"` // whole seconds
}

// normalize fills the defaults (arms def, 3 runs of 4s) and refuses arms
// not in have and runs shorter than iperf3's 1s.
func (c *BundleRuns) normalize(what string, def, have []string) error {
	if err := bed.NormalizeArms(what, &c.Arms, def, have); err != nil {
		return err
	}
	c.Runs = bed.Positive(c.Runs, 3)
	c.Duration = cmp.Or(c.Duration, 4*time.Second)
	if c.Duration < time.Second {
		return fmt.Errorf("%s: --duration %v: iperf3 needs at least 1s", what, c.Duration)
	}
	return nil
}

// CellsEdgeConfig is the cells settings a bundle experiment passes both
// edges: REACH period and threshold, reassembly timeout, and extra
// `linkfabric run` arguments.
type CellsEdgeConfig struct {
	ReachInterval time.Duration `json:"reach_interval"`
	ReachTh       int           `json:"reach_th"`
	ReasmTimeout  time.Duration `json:"reasm_timeout"`
	RunArgs       []string      `json:"run_args,omitempty"`
}

func (c *CellsEdgeConfig) normalize(what string) error {
	if c.ReachInterval == 0 {
		// 1 ms × 3 took links out several times a second on a loaded
		// two-core machine (peers kept from running for tens of ms): the
		// VOQs overflowed while every link was out.
		c.ReachInterval = 5 * time.Millisecond
	}
	if c.ReachTh == 0 {
		c.ReachTh = 3
	}
	if c.ReasmTimeout == 0 {
		c.ReasmTimeout = 100 * time.Millisecond
	}
	if c.ReachInterval < 100*time.Microsecond || c.ReachTh < 1 || time.Duration(c.ReachTh)*c.ReachInterval >= c.ReasmTimeout {
		return fmt.Errorf("%s: --reach-interval %v × --reach-th %d must stay below --reasm-timeout %v (the cells a dead link held are sprayed again only after it is out; a hole older than the timeout is skipped)",
			what, c.ReachInterval, c.ReachTh, c.ReasmTimeout)
	}
	return nil
}

// args is `linkfabric run` for edge sw (node id) of the bundle.
func (c CellsEdgeConfig) args(e *bed.Env, sw string, id int, linkMode string) []string {
	a := []string{"run", "--netns", e.NS(sw), "--host-port", "host0", "--link-port", strings.Join(bed.BundleLinks, ","),
		"--mode", "cells", "--cells-node-id", strconv.Itoa(id), "--cells-link-mode", linkMode,
		"--cells-reach-interval", c.ReachInterval.String(), "--cells-reach-th", strconv.Itoa(c.ReachTh), "--cells-reasm-timeout", c.ReasmTimeout.String()}
	return append(a, c.RunArgs...)
}

// startBundleCells starts both edges of the bundle with linkMode under the
// cells and waits until h1 reaches h2 and every link is usable at sw1.
func startBundleCells(ctx context.Context, e *bed.Env, c CellsEdgeConfig, linkMode string) (*bed.Dataplanes, error) {
	dp, err := e.StartNodes(ctx, []bed.NodeRun{{Name: "sw1", Args: c.args(e, "sw1", 1, linkMode)}, {Name: "sw2", Args: c.args(e, "sw2", 2, linkMode)}})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := netns.WaitPing(wctx, e.NS("h1"), bed.H2Addr); err != nil {
		dp.Stop()
		return nil, fmt.Errorf("h1 cannot reach h2 through cells over %s: %w", linkMode, err)
	}
	for {
		var s bed.CellsDoc
		if err := bed.FetchStats(wctx, e.NS("sw1"), &s); err == nil && s.Cells.UsableLinks == len(bed.BundleLinks) {
			return dp, nil
		}
		select {
		case <-wctx.Done():
			dp.Stop()
			return nil, fmt.Errorf("sw1: not every bundle link usable after 20 s (cells over %s)", linkMode)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// outsideDrops are the datagrams lost outside the cell fabric: at sw1's
// host port (AF_XDP receive: the machine too busy to take them), in sw1's
// VOQs (the ingress buffer full), at sw2's host port (its delivery queue
// full) and in h2's socket (receive buffer full).
type outsideDrops struct {
	Ingress  uint64 `json:"sw1_ingress"`
	VOQ      uint64 `json:"sw1_voq"`
	Egress   uint64 `json:"sw2_egress"`
	Rcvbuf   uint64 `json:"h2_rcvbuf"`
	Total    uint64 `json:"total"`
	readErrs int
}

// readOutside reads the counters behind outsideDrops.
func readOutside(e *bed.Env, ctx context.Context) (d outsideDrops) {
	var dp bed.DPStats
	var s1, s2 bed.CellsDoc
	if bed.FetchStats(ctx, e.NS("sw1"), &dp) != nil || bed.FetchStats(ctx, e.NS("sw1"), &s1) != nil || bed.FetchStats(ctx, e.NS("sw2"), &s2) != nil {
		d.readErrs++
	}
	d.Ingress, d.VOQ = dp.HostIngressDrops(), s1.Cells.Node.VOQDrops
	for _, h := range s2.Cells.Hosts {
		d.Egress += h.QueueDrops
	}
	if m, err := netns.SNMPAll(e.NS("h2")); err == nil {
		d.Rcvbuf = m["UdpRcvbufErrors"]
	} else {
		d.readErrs++
	}
	return d
}

// minus is d - o, with the total.
func (d outsideDrops) minus(o outsideDrops) outsideDrops {
	r := outsideDrops{Ingress: d.Ingress - o.Ingress, VOQ: d.VOQ - o.VOQ, Egress: d.Egress - o.Egress, Rcvbuf: d.Rcvbuf - o.Rcvbuf, readErrs: d.readErrs + o.readErrs}
	r.Total = r.Ingress + r.VOQ + r.Egress + r.Rcvbuf
	return r
}

// upBundle brings up the bundle testbed (forwarding none), removing a
// stale one of the same prefix first.
func upBundle(e *bed.Env) (*netns.Testbed, error) {
	topo, err := netns.Preset("bundle")
	if err != nil {
		return nil, err
	}
	return bed.UpBare(e, topo, 0)
}

// CellsFailoverRun is one run of one arm.
type CellsFailoverRun struct {
	Arm string `json:"arm"`
	Run int    `json:"run"`
	bed.UDPResult
	// ExclusionMs is from the end of the cut command (the link is cut by
	// then) to sw1's exclusion of the link (-1: not seen); the true time
	// is up to CutTookMs more. Sw2ExclusionMs is the same at sw2.
	ExclusionMs    float64 `json:"exclusion_ms"`
	Sw2ExclusionMs float64 `json:"sw2_exclusion_ms"`
	Reason         string  `json:"reason"`
	// OutAtCut: sw1 had the link out already when it was cut (a
	// scheduling stall of sw2 made sw1 miss REACHes): no exclusion time.
	OutAtCut bool `json:"out_at_cut,omitempty"`
	// Exclusions: how often sw1 took the link out during the run.
	Exclusions uint64 `json:"exclusions"`
	// CutTookMs: how long the cut command took (the cut happened in it:
	// ip runs as a child process, hundreds of ms on a loaded machine; the
	// XDP drop is a map update).
	CutTookMs float64 `json:"cut_took_ms"`
	// Outside: datagrams lost outside the fabric (not the links'); Lost
	// less these is FabricLost.
	Outside    outsideDrops `json:"outside"`
	FabricLost int          `json:"fabric_lost"`
	// HandedBack: cells the cut link's lg sender at sw1 gave back to the
	// sprayer; Duplicates: cells sw2's reassembly dropped as copies;
	// ReasmTimeouts: holes it skipped.
	HandedBack    uint64 `json:"handed_back"`
	Duplicates    uint64 `json:"reasm_duplicates"`
	ReasmTimeouts uint64 `json:"reasm_timeouts"`
	Error         string `json:"error,omitempty"`
}

// CellsFailoverResult is `linkfabric cells failover`'s report.
// Its Summary: per arm the medians (<arm>_lost, <arm>_out_of_order,
// <arm>_fabric_lost: lost less what was dropped outside the fabric,
// <arm>_exclusion_ms: over the runs where the link was in use at the
// cut, <arm>_handed_back), goal_exclusion_ms (3 REACH intervals +
// 1 ms), and lg_ok (lg lost nothing in the fabric and delivered
// nothing out of order, in every run).
type CellsFailoverResult struct {
	report.Result[CellsFailoverConfig, CellsFailoverRun]
}

// CellsFailover runs UDP over the bundle's cells and cuts one link at
// sw2's end mid-run, for each arm (link mode) Runs times with fresh
// dataplanes: packets lost and out of order, and how long sw1 took to take
// the link out of its routes.
func CellsFailover(ctx context.Context, e *bed.Env, cfg CellsFailoverConfig) (*CellsFailoverResult, error) {
	res := &CellsFailoverResult{}
	return res, bundleArmRuns(ctx, e, "cells failover", &cfg, &cfg.BundleRuns, &res.Result, []string{""}, func() (string, time.Duration) {
		return fmt.Sprintf("UDP %.0f Mbit/s for %v, %s of link%d at %v", cfg.Rate/1e6, cfg.Duration, cfg.Cut, cfg.Link, cfg.CutAt), cfg.Duration + 4*time.Second
	}, res.summarize, func(arm, _ string, run int) CellsFailoverRun { return failoverOnce(ctx, e, arm, run, &cfg) })
}

// bundleArmRuns runs a cells experiment on the bundle: it checks cfg
// (bed.Prepare), whose arms and runs are c, and starts res with it; logs
// the experiment's plan (what it does, and about how long a step takes);
// brings the bundle testbed up and calls once for every run, arm and
// variant in turn (bed.Steps; variants: a single "" for none), keeping
// each result in res.Runs with a progress line, until ctx ends; then
// summarize. The testbed goes down at the end.
func bundleArmRuns[C any, PC interface {
	*C
	Normalize() error
}, R any, PR interface {
	*R
	line() string
}](ctx context.Context, e *bed.Env, what string, cfg PC, c *BundleRuns, res *report.Result[C, R], variants []string,
	plan func() (string, time.Duration), summarize func(), once func(arm, variant string, run int) R) error {
	if err := bed.Prepare(e, cfg); err != nil {
		return err
	}
	*res = report.NewResult[C, R](*cfg)
	doing, per := plan()
	times := ""
	if len(variants) > 1 {
		times = " × {" + strings.Join(variants, ", ") + "}"
	}
	e.Printf("%s: bundle testbed %q, %s; arms %s × %d runs%s; about %v", what, e.Prefix, doing, strings.Join(c.Arms, ","), c.Runs, times,
		(time.Duration(c.Runs*len(c.Arms)*len(variants)) * per).Round(time.Second))
	tb, err := upBundle(e)
	if err != nil {
		return err
	}
	defer tb.Down()
	if err := bed.Steps(ctx, c.Runs, c.Arms, variants, func(s bed.Step[string]) error {
		r := once(s.Arm, s.Variant, s.Run)
		res.Runs = append(res.Runs, r)
		e.Printf("%s: [%d/%d] %s run %d: %s", what, s.N, s.Total, strings.TrimSpace(s.Arm+" "+s.Variant), s.Run, PR(&r).line())
		return nil
	}); err != nil {
		return err
	}
	summarize()
	return nil
}

func failoverOnce(ctx context.Context, e *bed.Env, arm string, run int, cfg *CellsFailoverConfig) (r CellsFailoverRun) {
	r = CellsFailoverRun{Arm: arm, Run: run, ExclusionMs: -1, Sw2ExclusionMs: -1}
	dev := bed.BundleLinks[cfg.Link]
	dp, err := startBundleCells(ctx, e, cfg.CellsEdgeConfig, arm)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer dp.Stop()
	var cutAt time.Time
	var cutErr error
	var before bed.CellsDoc
	cut := func() {
		time.Sleep(cfg.CutAt - 30*time.Millisecond)
		if err := bed.FetchStats(ctx, e.NS("sw1"), &before); err == nil && cfg.Link < len(before.Cells.Links) {
			r.OutAtCut = !before.Cells.Links[cfg.Link].Usable
		}
		time.Sleep(30 * time.Millisecond)
		cutAt = time.Now()
		if cfg.Cut == "down" {
			cutErr = bed.SetLinkUp(e.NS("sw2"), dev, false)
		} else {
			cutErr = bed.ImpairDev(e, "sw2", dev, func(im *bpf.Impairer) error {
				return im.SetImpair(bpf.ImpairConfig{Model: bpf.Bernoulli, Loss: 1})
			})
		}
		r.CutTookMs = float64(time.Since(cutAt)) / 1e6
	}
	defer func() { // mend the link for the next run
		if cfg.Cut == "down" {
			bed.SetLinkUp(e.NS("sw2"), dev, true)
		}
	}()
	out0 := readOutside(e, ctx)
	u, err := bed.UDPRun(ctx, e, 5301, cfg.Rate, cfg.Duration, cut)
	if err == nil {
		err = cutErr
	}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.UDPResult = u
	time.Sleep(100 * time.Millisecond) // a statistics publication after the run
	r.Outside = readOutside(e, ctx).minus(out0)
	r.FabricLost = u.Lost - int(r.Outside.Total)
	var s1, s2 bed.CellsDoc
	if err := bed.FetchStats(ctx, e.NS("sw1"), &s1); err != nil {
		r.Error = err.Error()
		return r
	}
	if err := bed.FetchStats(ctx, e.NS("sw2"), &s2); err != nil {
		r.Error = err.Error()
		return r
	}
	if cfg.Link >= len(s1.Cells.Links) || cfg.Link >= len(s2.Cells.Links) {
		r.Error = fmt.Sprintf("statistics without link %d", cfg.Link)
		return r
	}
	// The exclusion seen last is the cut's: the link stays out after it.
	since := func(s *bed.CellsDoc) float64 {
		at := s.Cells.Links[cfg.Link].LastExclusionAt
		if at == 0 || at < cutAt.UnixNano()-int64(50*time.Millisecond) {
			return -1 // not excluded since the cut
		}
		return max(float64(at-cutAt.UnixNano())/1e6-r.CutTookMs, 0)
	}
	r.ExclusionMs, r.Sw2ExclusionMs = since(&s1), since(&s2)
	l := s1.Cells.Links[cfg.Link]
	if len(before.Cells.Links) > cfg.Link {
		r.Exclusions = l.Exclusions - before.Cells.Links[cfg.Link].Exclusions
	}
	r.Reason = l.LastExclusion
	if l.LG != nil {
		r.HandedBack = l.LG.HandedBack
	}
	r.Duplicates, r.ReasmTimeouts = s2.Cells.Reasm.Duplicates, s2.Cells.ReasmTimeouts
	if err := dp.Alive(); err != nil {
		r.Error = err.Error()
	}
	return r
}

func (r *CellsFailoverRun) line() string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	out := ""
	if r.OutAtCut {
		out = " (already out at the cut)"
	}
	return fmt.Sprintf("%d packets, %d lost (%d outside the fabric: %+v), %d out of order; link out at sw1 after %s (%s, %d exclusions since the cut)%s, at sw2 after %s (the cut took %.1f ms); %d cells handed back, %d duplicates dropped, %d holes skipped",
		r.Packets, r.Lost, r.Outside.Total, r.Outside, r.OutOfOrder, ms1(r.ExclusionMs), r.Reason, r.Exclusions, out, ms1(r.Sw2ExclusionMs), r.CutTookMs, r.HandedBack, r.Duplicates, r.ReasmTimeouts)
}

// ms1 is a duration in ms with one decimal ("never" if negative).
func ms1(ms float64) string {
	if ms < 0 {
		return "never"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
}

func (res *CellsFailoverResult) summarize() {
	s := map[string]any{}
	c := res.Config
	goal := float64(3*c.ReachInterval+time.Millisecond) / 1e6
	s["goal_exclusion_ms"] = goal
	lgOK := false
	for _, arm := range c.Arms {
		var lost, fabric, ooo, excl, back []float64
		errs := 0
		for _, r := range res.Runs {
			if r.Arm != arm {
				continue
			}
			if r.Error != "" {
				errs++
				continue
			}
			lost = append(lost, float64(r.Lost))
			fabric = append(fabric, float64(r.FabricLost))
			ooo = append(ooo, float64(r.OutOfOrder))
			if !r.OutAtCut && r.ExclusionMs >= 0 {
				excl = append(excl, r.ExclusionMs)
			}
			back = append(back, float64(r.HandedBack))
		}
		s[arm+"_runs"], s[arm+"_errors"] = len(lost), errs
		if len(lost) == 0 {
			continue
		}
		s[arm+"_lost"], s[arm+"_out_of_order"] = report.Median(lost), report.Median(ooo)
		s[arm+"_fabric_lost"], s[arm+"_max_fabric_lost"] = report.Median(fabric), slices.Max(fabric)
		s[arm+"_exclusion_ms"], s[arm+"_handed_back"] = -1.0, report.Median(back)
		s[arm+"_exclusion_runs"] = len(excl)
		if len(excl) > 0 {
			s[arm+"_exclusion_ms"] = report.Median(excl)
		}
		s[arm+"_max_lost"], s[arm+"_max_out_of_order"] = slices.Max(lost), slices.Max(ooo)
		s[arm+"_exclusion_ok"] = len(excl) > 0 && report.Median(excl) <= goal
		if arm == "lg" {
			lgOK = errs == 0 && slices.Max(fabric) <= 0 && slices.Max(ooo) == 0
			s["lg_ok"] = lgOK
		}
	}
	res.Summary = s
}

// Text is the table.
func (res *CellsFailoverResult) Text() string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "cells failover: bundle, UDP %.0f Mbit/s for %v, %s of link%d at %v at sw2; REACH %v × %d, reassembly timeout %v; %d runs (medians)\n\n",
		c.Rate/1e6, c.Duration, c.Cut, c.Link, c.CutAt, c.ReachInterval, c.ReachTh, c.ReasmTimeout, c.Runs)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "link mode\tlost\tlost in the fabric\tout of order\tlink out at sw1 after the cut\tgoal (ms)\thanded back\truns\t")
	s := res.Summary
	for _, arm := range c.Arms {
		if _, ok := s[arm+"_lost"]; !ok {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\t-\t0\t\n", arm)
			continue
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%.0f\t%s\t%.1f\t%.0f\t%d\t\n", arm, s[arm+"_lost"], s[arm+"_fabric_lost"], s[arm+"_out_of_order"],
			ms1(s[arm+"_exclusion_ms"].(float64)), s["goal_exclusion_ms"], s[arm+"_handed_back"], s[arm+"_runs"])
	}
	w.Flush()
	fmt.Fprintln(&b, "\nruns:")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "  %-5s %d: %s\n", r.Arm, r.Run, r.line())
	}
	return b.String()
}
