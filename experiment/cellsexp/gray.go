package cellsexp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
)

// CellsGrayConfig sizes `linkfabric cells gray`: a gray failure (bursty
// loss) on some of the bundle's links.
type CellsGrayConfig struct {
	// Arms: link modes under the cells; Duration: each UDP and TCP run.
	BundleRuns
	Loss  float64 `json:"loss"`  // loss rate on each lossy link (sw1→sw2)
	Burst float64 `json:"burst"` // mean loss burst (frames)
	Lossy []int   `json:"lossy_links"`
	Rate  float64 `json:"udp_rate_bps"`
	Seed  uint64  `json:"seed"`

	CellsEdgeConfig
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *CellsGrayConfig) Normalize() error {
	if err := c.BundleRuns.normalize("cells gray", []string{"lg"}, []string{"lg", "lgnb", "monitor", "none", "fec"}); err != nil {
		return err
	}
	c.Loss = cmp.Or(c.Loss, 1e-2)
	c.Burst = cmp.Or(c.Burst, 3)
	if len(c.Lossy) == 0 {
		c.Lossy = []int{1, 3}
	}
	for _, l := range c.Lossy {
		if l < 0 || l >= len(bed.BundleLinks) {
			return fmt.Errorf("cells gray: --lossy %d: the bundle has links 0-3", l)
		}
	}
	if err := bpf.Loss(c.Loss, c.Burst, 1).Validate(); err != nil {
		return fmt.Errorf("cells gray: --loss %g --burst %g: %w", c.Loss, c.Burst, err)
	}
	c.Rate = cmp.Or(c.Rate, 200e6)
	c.Seed = cmp.Or(c.Seed, 1)
	return c.CellsEdgeConfig.normalize("cells gray")
}

// CellsGrayRun is one run of one arm, with or without the loss.
type CellsGrayRun struct {
	Arm   string        `json:"arm"`
	Lossy bool          `json:"lossy"`
	Run   int           `json:"run"`
	UDP   bed.UDPResult `json:"udp"`
	// Outside: UDP datagrams lost outside the fabric (not the links');
	// FabricLost is UDP.Lost less these.
	Outside     outsideDrops `json:"outside"`
	FabricLost  int          `json:"fabric_lost"`
	TCPBps      float64      `json:"tcp_bps"`
	Retransmits int          `json:"tcp_retransmits"`
	// LinkDropped: frames the impairment dropped on the lossy links
	// during the run; Recovered: cells sw2's link layers recovered.
	LinkDropped uint64 `json:"link_dropped"`
	Recovered   uint64 `json:"recovered"`
	Error       string `json:"error,omitempty"`
}

// CellsGrayResult is `linkfabric cells gray`'s report.
// Its Summary: per arm the medians with the loss (<arm>_udp_lost,
// <arm>_udp_fabric_lost: less what was dropped outside the fabric,
// <arm>_udp_out_of_order, <arm>_tcp_bps) and without
// (<arm>_clean_tcp_bps), and <arm>_tcp_ratio (target ≥ 0.9).
type CellsGrayResult struct {
	report.Result[CellsGrayConfig, CellsGrayRun]
}

// CellsGray runs, per arm and run on fresh dataplanes, UDP and then TCP
// over the bundle's cells, once with bursty loss on the lossy links and
// once without.
func CellsGray(ctx context.Context, e *bed.Env, cfg CellsGrayConfig) (*CellsGrayResult, error) {
	res, lossy := &CellsGrayResult{}, report.LossyWord(true)
	return res, bundleArmRuns(ctx, e, "cells gray", &cfg, &cfg.BundleRuns, &res.Result, []string{report.LossyWord(false), lossy}, func() (string, time.Duration) {
		return fmt.Sprintf("loss %g (mean burst %g) on links %v sw1→sw2; UDP %.0f Mbit/s and TCP for %v each", cfg.Loss, cfg.Burst, cfg.Lossy, cfg.Rate/1e6, cfg.Duration), 2*cfg.Duration + 4*time.Second
	}, res.summarize, func(arm, variant string, run int) CellsGrayRun {
		return grayOnce(ctx, e, arm, variant == lossy, run, &cfg)
	})
}

func grayOnce(ctx context.Context, e *bed.Env, arm string, lossy bool, run int, cfg *CellsGrayConfig) (r CellsGrayRun) {
	r = CellsGrayRun{Arm: arm, Lossy: lossy, Run: run}
	dp, err := startBundleCells(ctx, e, cfg.CellsEdgeConfig, arm)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer dp.Stop()
	if lossy {
		for _, l := range cfg.Lossy {
			imp := bpf.Loss(cfg.Loss, cfg.Burst, cfg.Seed+uint64(l))
			if err := bed.ImpairDev(e, "sw2", bed.BundleLinks[l], func(im *bpf.Impairer) error { return im.SetImpair(imp) }); err != nil {
				r.Error = err.Error()
				return r
			}
		}
	}
	out0 := readOutside(e, ctx)
	if r.UDP, err = bed.UDPRun(ctx, e, 5302, cfg.Rate, cfg.Duration, nil); err != nil {
		r.Error = err.Error()
		return r
	}
	time.Sleep(100 * time.Millisecond) // a statistics publication after the run
	r.Outside = readOutside(e, ctx).minus(out0)
	r.FabricLost = r.UDP.Lost - int(r.Outside.Total)
	tcp, err := e.Iperf3(ctx, cfg.Duration)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.TCPBps, r.Retransmits = tcp.Bps, tcp.Retransmits
	r.LinkDropped = bed.BundleDropped(e, "sw2", cfg.Lossy)
	var s2 bed.CellsDoc
	if err := bed.FetchStats(ctx, e.NS("sw2"), &s2); err == nil {
		for _, l := range s2.Cells.Links {
			if l.LG != nil {
				r.Recovered += l.LG.Recovered
			}
		}
	}
	if err := dp.Alive(); err != nil {
		r.Error = err.Error()
	}
	return r
}

func (r *CellsGrayRun) line() string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	return fmt.Sprintf("UDP %d packets, %d lost (%d outside the fabric: %+v), %d out of order; TCP %.3f Gbit/s (%d retransmits); %d frames dropped on the lossy links, %d cells recovered",
		r.UDP.Packets, r.UDP.Lost, r.Outside.Total, r.Outside, r.UDP.OutOfOrder, r.TCPBps/1e9, r.Retransmits, r.LinkDropped, r.Recovered)
}

func (res *CellsGrayResult) summarize() {
	s := map[string]any{}
	for _, arm := range res.Config.Arms {
		var lost, fabric, ooo, tcp, clean []float64
		for _, r := range res.Runs {
			if r.Arm != arm || r.Error != "" {
				continue
			}
			if !r.Lossy {
				clean = append(clean, r.TCPBps)
				continue
			}
			lost = append(lost, float64(r.UDP.Lost))
			fabric = append(fabric, float64(r.FabricLost))
			ooo = append(ooo, float64(r.UDP.OutOfOrder))
			tcp = append(tcp, r.TCPBps)
		}
		if len(lost) == 0 || len(clean) == 0 {
			s[arm+"_runs"] = 0
			continue
		}
		s[arm+"_runs"] = len(lost)
		s[arm+"_udp_lost"], s[arm+"_udp_out_of_order"] = report.Median(lost), report.Median(ooo)
		s[arm+"_udp_fabric_lost"], s[arm+"_udp_max_fabric_lost"] = report.Median(fabric), slices.Max(fabric)
		s[arm+"_udp_max_lost"], s[arm+"_udp_max_out_of_order"] = slices.Max(lost), slices.Max(ooo)
		s[arm+"_tcp_bps"], s[arm+"_clean_tcp_bps"] = report.Median(tcp), report.Median(clean)
		s[arm+"_tcp_ratio"] = report.Ratio(report.Median(tcp), report.Median(clean))
		s[arm+"_tcp_ok"] = report.Ratio(report.Median(tcp), report.Median(clean)) >= 0.9
	}
	res.Summary = s
}

// Text is the table.
func (res *CellsGrayResult) Text() string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "cells gray: bundle, loss %g (mean burst %g) on links %v (sw1→sw2); UDP %.0f Mbit/s and TCP, %v each; %d runs (medians)\n\n",
		c.Loss, c.Burst, c.Lossy, c.Rate/1e6, c.Duration, c.Runs)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "link mode\tUDP lost\tUDP lost in the fabric\tUDP out of order\tTCP lossy (Gbit/s)\tTCP clean (Gbit/s)\tratio (target ≥ 0.9)\t")
	s := res.Summary
	for _, arm := range c.Arms {
		if s[arm+"_runs"] == 0 {
			fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\t-\t\n", arm)
			continue
		}
		fmt.Fprintf(w, "%s\t%.0f\t%.0f\t%.0f\t%.3f\t%.3f\t%.2f\t\n", arm, s[arm+"_udp_lost"], s[arm+"_udp_fabric_lost"], s[arm+"_udp_out_of_order"],
			s[arm+"_tcp_bps"].(float64)/1e9, s[arm+"_clean_tcp_bps"].(float64)/1e9, s[arm+"_tcp_ratio"])
	}
	w.Flush()
	fmt.Fprintln(&b, "\nruns:")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "  %-5s %s %d: %s\n", r.Arm, report.LossyWord(r.Lossy), r.Run, r.line())
	}
	return b.String()
}

// Arms of `linkfabric cells classes`: cells over monitor links with loss
// classes (DSCP EF bound to class 1), and bare cells sprayed over every
// link (no protection: RAIL's baseline; monitor alone would exclude the
// gray links, at its 1e-3 default).
const (
	ClassesArmOn  = "classes"
	ClassesArmOff = "none"
)

// CellsClassesConfig sizes `linkfabric cells classes`: RAIL's loss classes
// on the bundle, one clean link and gray ones.
type CellsClassesConfig struct {
	// Duration: the two UDP flows.
	BundleRuns
	Loss  float64 `json:"loss"`  // on each gray link, both directions
	Burst float64 `json:"burst"` // mean loss burst (1: Bernoulli)
	Gray  []int   `json:"gray_links"`
	Rate  float64 `json:"udp_rate_bps"` // each flow
	Seed  uint64  `json:"seed"`
	// Settle bounds the wait for the links' classes (measured by the
	// monitor from cells and REACHes: about a second).
	Settle time.Duration `json:"settle"`

	CellsEdgeConfig
}

// Normalize fills defaults and checks the configuration (no system access).
func (c *CellsClassesConfig) Normalize() error {
	classesArms := []string{ClassesArmOn, ClassesArmOff}
	if err := c.BundleRuns.normalize("cells classes", classesArms, classesArms); err != nil {
		return err
	}
	if err := bed.NormalizeGray("cells classes", &c.Loss, &c.Burst, &c.Gray); err != nil {
		return err
	}
	c.Rate = cmp.Or(c.Rate, 100e6)
	c.Seed = cmp.Or(c.Seed, 1)
	c.Settle = cmp.Or(c.Settle, 20*time.Second)
	return c.CellsEdgeConfig.normalize("cells classes")
}

func (c *CellsClassesConfig) cells(arm string) CellsEdgeConfig {
	r := c.CellsEdgeConfig
	if arm == ClassesArmOn {
		r.RunArgs = append(slices.Clone(c.RunArgs), "--cells-loss-classes", "default", "--cells-class-map", bed.ClassesMap)
	}
	return r
}

// ClassesLink is one bundle link of sw1 (h1→h2) in one run.
type ClassesLink struct {
	Name string `json:"name"`
	Gray bool   `json:"gray"`
	// Class: the loss class sw1 gave the link when the flows started
	// (0: classes off); ClassBytes[k-1]: cell bytes of loss class k sent
	// on it during the flows; Bytes all of them.
	Class      uint8    `json:"loss_class,omitempty"`
	ClassBytes []uint64 `json:"class_bytes,omitempty"`
	Bytes      uint64   `json:"tx_bytes"`
}

// CellsClassesRun is one run of one arm.
type CellsClassesRun struct {
	Arm string `json:"arm"`
	Run int    `json:"run"`
	// Class1 is the flow with DSCP EF (bound to class 1), Class3 the one
	// without (the loosest class), at the same time.
	Class1 bed.UDPResult `json:"class1"`
	Class3 bed.UDPResult `json:"class3"`
	// SettleMs: how long the links took to show their classes.
	SettleMs float64       `json:"settle_ms"`
	Links    []ClassesLink `json:"links"`
	// Class1GrayBytes: class-1 cell bytes on the gray links (target 0;
	// counted only with classes on).
	Class1GrayBytes uint64 `json:"class1_gray_bytes"`
	LinkDropped     uint64 `json:"link_dropped"`
	// Where else datagrams went during the flows, of both flows: Outside,
	// lost outside the fabric (the machine too busy: host sockets, VOQs,
	// h2's receive buffer); CleanRxDrops, cells sw2's sockets on the clean
	// links dropped on receive (its worker not reading them in time: a
	// busy machine); NoRoute, frames sw1 found no usable link for (at an
	// edge its credit frames while every link is out: its cells wait in
	// their VOQ); ReasmDiscards, records sw2's reassembly gave up
	// (holes); CleanQueueDrops, cells sw1's link layers dropped on the
	// clean links for want of room in their queue (in the fabric: class
	// 1's among them); CleanTxDrops, cells sw1's ports on the clean links
	// dropped on send (TX ring full: the kernel not taking them in time, a
	// busy machine, as CleanRxDrops).
	Outside         outsideDrops `json:"outside"`
	CleanRxDrops    uint64       `json:"sw2_clean_link_rx_drops"`
	CleanTxDrops    uint64       `json:"sw1_clean_link_tx_drops"`
	NoRoute         uint64       `json:"sw1_no_route"`
	ReasmDiscards   uint64       `json:"sw2_reasm_discarded"`
	CleanQueueDrops uint64       `json:"sw1_clean_link_queue_drops"`
	// Class1FabricLost: class-1 datagrams lost beyond all those the
	// machine dropped outside the fabric and on the clean links' sockets
	// (target 0). Those drops are counted for both flows together, so
	// this bound leans the fabric's way; it is what the check reads.
	Class1FabricLost int    `json:"class1_fabric_lost"`
	Error            string `json:"error,omitempty"`
}

// CellsClassesResult is `linkfabric cells classes`'s report.
// Its Summary: per arm the medians <arm>_class1_loss and _class3_loss
// (fractions of the datagrams); for the classes arm
// classes_class1_gray_bytes (the most in any run) and check: no
// class-1 byte on a gray link and no class-1 datagram lost in the
// fabric (Class1FabricLost) in any run.
type CellsClassesResult struct {
	report.Result[CellsClassesConfig, CellsClassesRun]
}

// CellsClasses runs, per run and arm on fresh dataplanes, two UDP flows
// from h1 to h2 at once over the bundle whose gray links lose cfg.Loss in
// both directions: one with DSCP EF (class 1 in the classes arm) and one
// without.
func CellsClasses(ctx context.Context, e *bed.Env, cfg CellsClassesConfig) (*CellsClassesResult, error) {
	res := &CellsClassesResult{}
	return res, bundleArmRuns(ctx, e, "cells classes", &cfg, &cfg.BundleRuns, &res.Result, []string{""}, func() (string, time.Duration) {
		return fmt.Sprintf("links %v gray (loss %g, mean burst %g, both directions); two UDP flows of %.0f Mbit/s for %v (DSCP %d → class 1, and DSCP 0)",
			cfg.Gray, cfg.Loss, cfg.Burst, cfg.Rate/1e6, cfg.Duration, bed.ClassesDSCP), cfg.Duration + 6*time.Second
	}, res.summarize, func(arm, _ string, run int) CellsClassesRun { return classesOnce(ctx, e, arm, run, &cfg) })
}

func classesOnce(ctx context.Context, e *bed.Env, arm string, run int, cfg *CellsClassesConfig) (r CellsClassesRun) {
	r = CellsClassesRun{Arm: arm, Run: run}
	fail := func(err error) CellsClassesRun {
		r.Error = err.Error()
		return r
	}
	linkMode := "monitor"
	if arm == ClassesArmOff {
		linkMode = "none"
	}
	dp, err := startBundleCells(ctx, e, cfg.cells(arm), linkMode)
	if err != nil {
		return fail(err)
	}
	defer dp.Stop()
	gray := map[string]bool{}
	for _, l := range cfg.Gray {
		gray[bed.BundleLinks[l]] = true
		for k, sw := range []string{"sw1", "sw2"} {
			imp := bpf.Loss(cfg.Loss, cfg.Burst, cfg.Seed+uint64(10*run+2*l+k))
			if err := bed.ImpairDev(e, sw, bed.BundleLinks[l], func(im *bpf.Impairer) error { return im.SetImpair(imp) }); err != nil {
				return fail(err)
			}
		}
	}
	start := time.Now()
	before, err := bed.WaitClasses(ctx, e, arm == ClassesArmOn, gray, cfg.Settle)
	if err != nil {
		return fail(err)
	}
	r.SettleMs = float64(time.Since(start).Microseconds()) / 1000
	out0, aside0 := readOutside(e, ctx), readClassesAside(ctx, e, gray)
	var c3err error
	r.Class1, err = bed.UDPRun(ctx, e, 5311, cfg.Rate, cfg.Duration, func() {
		r.Class3, c3err = bed.UDPRun(ctx, e, 5312, cfg.Rate, cfg.Duration, nil)
	}, "--dscp", fmt.Sprint(bed.ClassesDSCP))
	if err == nil {
		err = c3err
	}
	if err != nil {
		return fail(err)
	}
	time.Sleep(100 * time.Millisecond) // a statistics publication after the flows
	r.Outside = readOutside(e, ctx).minus(out0)
	aside := readClassesAside(ctx, e, gray)
	r.CleanRxDrops, r.NoRoute, r.ReasmDiscards = aside.cleanRx-aside0.cleanRx, aside.noRoute-aside0.noRoute, aside.reasm-aside0.reasm
	r.CleanQueueDrops, r.CleanTxDrops = aside.cleanQueue-aside0.cleanQueue, aside.cleanTx-aside0.cleanTx
	r.Class1FabricLost = r.class1FabricLost()
	var after bed.CellsDoc
	if err := bed.FetchStats(ctx, e.NS("sw1"), &after); err != nil {
		return fail(err)
	}
	for j, l := range after.Cells.Links {
		b := before.Cells.Links[j]
		cl := ClassesLink{Name: l.Name, Gray: gray[l.Name], Class: b.Class, Bytes: l.TxBytes - b.TxBytes}
		for k := range l.TxClassBytes {
			if k < len(b.TxClassBytes) {
				cl.ClassBytes = append(cl.ClassBytes, l.TxClassBytes[k]-b.TxClassBytes[k])
			}
		}
		if cl.Gray && len(cl.ClassBytes) > 0 {
			r.Class1GrayBytes += cl.ClassBytes[0]
		}
		r.Links = append(r.Links, cl)
	}
	r.LinkDropped = bed.BundleDropped(e, "sw2", cfg.Gray)
	if err := dp.Alive(); err != nil {
		r.Error = err.Error()
	}
	return r
}

// class1FabricLost is Class1FabricLost from the counters.
func (r *CellsClassesRun) class1FabricLost() int {
	return max(r.Class1.Lost-int(r.Outside.Total+r.CleanRxDrops+r.CleanTxDrops), 0)
}

// classesAside is the counters behind CellsClassesRun's CleanRxDrops,
// NoRoute, ReasmDiscards, CleanQueueDrops and CleanTxDrops.
type classesAside struct{ cleanRx, noRoute, reasm, cleanQueue, cleanTx uint64 }

func readClassesAside(ctx context.Context, e *bed.Env, gray map[string]bool) (a classesAside) {
	if s1, err := FetchCellsStats(ctx, e.NS("sw1")); err == nil {
		a.noRoute = s1.Cells.Node.NoRoute
		for _, l := range s1.Cells.Links {
			if !gray[l.Name] && l.LG != nil {
				a.cleanQueue += l.LG.QueueDrops
			}
		}
		for _, name := range bed.BundleLinks {
			if !gray[name] {
				a.cleanTx += s1.Port(name).TX.Dropped
			}
		}
	}
	if s2, err := FetchCellsStats(ctx, e.NS("sw2")); err == nil {
		a.reasm = s2.Cells.ReasmDiscards
		for _, name := range bed.BundleLinks {
			if !gray[name] {
				a.cleanRx += s2.Port(name).RxSocketDrops
			}
		}
	}
	return a
}

func (r *CellsClassesRun) line() string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	line := fmt.Sprintf("class-1 flow %d/%d lost, %d out of order; class-3 flow %d/%d lost; %d frames dropped by the gray links at sw2; "+
		"both flows: %d datagrams lost outside the fabric %+v, %d cells dropped by sw2's busy sockets and %d by sw1's full TX rings on the clean links, %d frames without a route at sw1, %d cells dropped by sw1's full link queues on the clean links, %d records discarded by sw2's reassembly; class-1 datagrams lost in the fabric %d",
		r.Class1.Lost, r.Class1.Packets, r.Class1.OutOfOrder, r.Class3.Lost, r.Class3.Packets, r.LinkDropped,
		r.Outside.Total, r.Outside, r.CleanRxDrops, r.CleanTxDrops, r.NoRoute, r.CleanQueueDrops, r.ReasmDiscards, r.Class1FabricLost)
	var links []string
	for _, l := range r.Links {
		gray := map[bool]string{true: ", gray"}[l.Gray]
		if l.Class == 0 {
			links = append(links, fmt.Sprintf("%s%s %d", l.Name, gray, l.Bytes))
		} else {
			links = append(links, fmt.Sprintf("%s (class %d%s) %v", l.Name, l.Class, gray, l.ClassBytes))
		}
	}
	if r.Arm != ClassesArmOn {
		return line + "; bytes sent per link: " + strings.Join(links, "; ")
	}
	return fmt.Sprintf("%s; class-1 bytes on gray links %d; classes after %.0f ms; bytes sent per link and loss class: %s",
		line, r.Class1GrayBytes, r.SettleMs, strings.Join(links, "; "))
}

func lossFrac(u bed.UDPResult) float64 {
	if u.Packets == 0 {
		return 0
	}
	return float64(u.Lost) / float64(u.Packets)
}

func (res *CellsClassesResult) summarize() {
	s := map[string]any{}
	for _, arm := range res.Config.Arms {
		var l1, l3, gb []float64
		lost1 := 0
		for _, r := range res.Runs {
			if r.Arm != arm || r.Error != "" {
				continue
			}
			l1, l3 = append(l1, lossFrac(r.Class1)), append(l3, lossFrac(r.Class3))
			gb = append(gb, float64(r.Class1GrayBytes))
			lost1 += r.class1FabricLost()
		}
		s[arm+"_runs"] = len(l1)
		if len(l1) == 0 {
			continue
		}
		s[arm+"_class1_loss"], s[arm+"_class3_loss"] = report.Median(l1), report.Median(l3)
		if arm == ClassesArmOn {
			s[arm+"_class1_gray_bytes"] = slices.Max(gb)
			s["check"] = len(l1) == res.Config.Runs && slices.Max(gb) == 0 && lost1 == 0
		}
	}
	res.Summary = s
}

// Text is the table.
func (res *CellsClassesResult) Text() string {
	var b strings.Builder
	c := res.Config
	fmt.Fprintf(&b, "cells classes: bundle, links %v gray (loss %g, mean burst %g, both directions), the rest clean; two UDP flows of %.0f Mbit/s at once for %v: DSCP %d (class 1 with classes) and DSCP 0 (class 3); %d runs (medians)\n\n",
		c.Gray, c.Loss, c.Burst, c.Rate/1e6, c.Duration, bed.ClassesDSCP, c.Runs)
	w := report.NewTable(&b)
	fmt.Fprintln(w, "arm\tclass-1 flow loss\tclass-3 flow loss\tclass-1 bytes on gray links (max)\t")
	s := res.Summary
	for _, arm := range c.Arms {
		if s[arm+"_runs"] == 0 {
			fmt.Fprintf(w, "%s\t-\t-\t-\t\n", arm)
			continue
		}
		gb := "not counted"
		if v, ok := s[arm+"_class1_gray_bytes"].(float64); ok {
			gb = fmt.Sprintf("%.0f", v)
		}
		fmt.Fprintf(w, "%s\t%.2g\t%.2g\t%s\t\n", arm, s[arm+"_class1_loss"], s[arm+"_class3_loss"], gb)
	}
	w.Flush()
	if ok, found := s["check"].(bool); found {
		fmt.Fprintf(&b, "\ncheck (classes: no class-1 byte on a gray link, no class-1 datagram lost in the fabric, every run): %v\n", map[bool]string{true: "met", false: "MISSED"}[ok])
	}
	fmt.Fprintln(&b, "\nruns:")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "  %-7s %d: %s\n", r.Arm, r.Run, r.line())
	}
	return b.String()
}
