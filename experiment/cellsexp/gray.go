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
	TCPGbps     float64      `json:"tcp_gbps"`
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
// <arm>_udp_out_of_order, <arm>_tcp_gbps) and without
// (<arm>_clean_tcp_gbps), and <arm>_tcp_ratio (target ≥ 0.9).
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
	r.TCPGbps, r.Retransmits = tcp.Gbps, tcp.Retransmits
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
		r.UDP.Packets, r.UDP.Lost, r.Outside.Total, r.Outside, r.UDP.OutOfOrder, r.TCPGbps, r.Retransmits, r.LinkDropped, r.Recovered)
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
				clean = append(clean, r.TCPGbps)
				continue
			}
			lost = append(lost, float64(r.UDP.Lost))
			fabric = append(fabric, float64(r.FabricLost))
			ooo = append(ooo, float64(r.UDP.OutOfOrder))
			tcp = append(tcp, r.TCPGbps)
		}
		if len(lost) == 0 || len(clean) == 0 {
			s[arm+"_runs"] = 0
			continue
		}
		s[arm+"_runs"] = len(lost)
		s[arm+"_udp_lost"], s[arm+"_udp_out_of_order"] = report.Median(lost), report.Median(ooo)
		s[arm+"_udp_fabric_lost"], s[arm+"_udp_max_fabric_lost"] = report.Median(fabric), slices.Max(fabric)
		s[arm+"_udp_max_lost"], s[arm+"_udp_max_out_of_order"] = slices.Max(lost), slices.Max(ooo)
		s[arm+"_tcp_gbps"], s[arm+"_clean_tcp_gbps"] = report.Median(tcp), report.Median(clean)
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
			s[arm+"_tcp_gbps"], s[arm+"_clean_tcp_gbps"], s[arm+"_tcp_ratio"])
	}
	w.Flush()
	fmt.Fprintln(&b, "\nruns:")
	for _, r := range res.Runs {
		fmt.Fprintf(&b, "  %-5s %s %d: %s\n", r.Arm, report.LossyWord(r.Lossy), r.Run, r.line())
	}
	return b.String()
}
