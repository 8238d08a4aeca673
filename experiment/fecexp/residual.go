package fecexp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/fec/fecsim"
	"github.com/linkfabric/linkfabric/link/linksim"
)

// FECResidualConfig configures FECResidualSim.
type FECResidualConfig struct {
	Loss      []float64 // link loss rates
	Target    float64   // residual target that sets n (RAIL's rule)
	Frames    int       // host frames per point
	Copies    int       // replication arm: transmissions per frame (0: skip the arm)
	MeanBurst float64   // bursty arm: Gilbert loss with this mean burst (0: skip)
	MinLen    int       // host frame lengths, uniform
	MaxLen    int
	Seed      uint64
	Progress  io.Writer // progress lines (nil: none)
}

// DefaultFECLoss is the set of loss rates docs/results.md reports (10⁻³ to 10⁻¹).
var DefaultFECLoss = []float64{1e-3, 3e-3, 1e-2, 3e-2, 5e-2, 1e-1}

// Normalize fills defaults and refuses what cannot run.
func (c *FECResidualConfig) Normalize() error {
	if err := normalizeFECRun(&c.Loss, &c.Target, &c.Frames, 1_000_000, c.MeanBurst); err != nil {
		return err
	}
	c.MinLen = cmp.Or(c.MinLen, 60)
	c.MaxLen = cmp.Or(c.MaxLen, 1514)
	switch {
	case c.Copies < 0 || c.Copies > fec.MaxCopies:
		return fmt.Errorf("--copies %d: want 0 (no replication arm) to %d", c.Copies, fec.MaxCopies)
	case c.MinLen < 22 || c.MaxLen < c.MinLen || c.MaxLen > 1514:
		return fmt.Errorf("--min-len %d --max-len %d: want 22 ≤ min ≤ max ≤ 1514", c.MinLen, c.MaxLen)
	}
	return nil
}

// normalizeFECRun fills and checks what both fec residual runs take: loss
// rates (default DefaultFECLoss), the target (default 1e-3), frames per
// point (default def: what the figures in docs/results.md use) and the
// bursty model's mean burst.
func normalizeFECRun(lossp *[]float64, targetp *float64, framesp *int, def int, burst float64) error {
	if len(*lossp) == 0 {
		*lossp = DefaultFECLoss
	}
	*targetp = cmp.Or(*targetp, 1e-3)
	*framesp = cmp.Or(*framesp, def)
	loss, target, frames := *lossp, *targetp, *framesp
	switch {
	case !(target > 0 && target < 1):
		return fmt.Errorf("--target %g: want a residual loss rate in (0, 1), e.g. 1e-3", target)
	case frames < 1000:
		return fmt.Errorf("--frames %d: want at least 1000 (10^%.0f for the figures in docs/results.md)", frames, math.Log10(float64(def)))
	case burst != 0 && burst < 1:
		return fmt.Errorf("--burst %g: want a mean burst of at least 1 frame, or 0 for Bernoulli only", burst)
	}
	for _, p := range loss {
		if !(p > 0 && p < 1) {
			return fmt.Errorf("--loss %g: want rates in (0, 1)", p)
		}
	}
	return nil
}

// FECPoint is one run: a loss rate, a loss model and a scheme.
type FECPoint struct {
	Loss      float64 `json:"loss"`
	Model     string  `json:"model"`  // bernoulli or bursty(B)
	Scheme    string  `json:"scheme"` // fec(n) or replicate×k
	N         int     `json:"n,omitempty"`
	Copies    int     `json:"copies,omitempty"`
	LinkLoss  float64 `json:"link_loss"` // measured on the wire
	Frames    uint64  `json:"frames"`
	Lost      uint64  `json:"lost"`
	Oracle    uint64  `json:"oracle_lost"` // what the realised drops force
	Residual  float64 `json:"residual"`    // measured, per host frame
	Predicted float64 `json:"predicted"`   // independent loss: Residual or p^k
	Ratio     float64 `json:"ratio"`       // Residual / Predicted
	// GroupFail and RAIL: failed groups measured and RAIL's formula
	// (parity only).
	GroupFail float64 `json:"group_fail,omitempty"`
	RAIL      float64 `json:"rail_formula,omitempty"`
	Overhead  float64 `json:"overhead"`           // wire bytes / host bytes − 1
	OverPred  float64 `json:"overhead_predicted"` // 1/n (or k−1) plus headers
	Corrupt   uint64  `json:"corrupt"`
}

// FECResidualResult is what FECResidualSim measured.
type FECResidualResult struct {
	Config  FECResidualConfig `json:"config"`
	Points  []FECPoint        `json:"points"`
	Summary FECSummary        `json:"summary"`
}

// FECSummary answers what the residual claim asks: how close each scheme
// comes to its prediction and whether fec meets the check at p = 3·10⁻³.
type FECSummary struct {
	// Bernoulli, parity: the worst ratio of measured to predicted residual
	// and of measured to RAIL's group failure, and whether every point is
	// within a factor of 2 of both.
	MaxResidualRatio  float64 `json:"max_residual_ratio"`
	MaxGroupFailRatio float64 `json:"max_group_fail_ratio"`
	Within2x          bool    `json:"bernoulli_within_2x"`
	// NoLoss counts Bernoulli parity points that lost nothing (too few
	// frames to measure; they fail Within2x).
	NoLoss int `json:"no_loss_points,omitempty"`
	// Overhead within 10 % of its prediction at every point.
	OverheadWithin10 bool `json:"overhead_within_10pct"`
	// Lost equals the oracle at every point (Wait covers the parity).
	LostIsOracle bool `json:"lost_equals_oracle"`
	// Worst bursty residual over the Bernoulli prediction at the same p.
	BurstyWorst float64 `json:"bursty_worst_ratio,omitempty"`
	Corrupt     uint64  `json:"corrupt"`
}

// FECResidualSim runs fec and replication over the simulated link for every
// loss rate, Bernoulli and (if MeanBurst > 0) bursty.
func FECResidualSim(ctx context.Context, cfg FECResidualConfig) (*FECResidualResult, error) {
	res := &FECResidualResult{Config: cfg}
	models := []float64{0}
	if cfg.MeanBurst > 0 {
		models = append(models, cfg.MeanBurst)
	}
	for _, p := range cfg.Loss {
		for _, burst := range models {
			schemes := [][2]int{}
			if n := fec.GroupSize(p, cfg.Target); n > 0 {
				schemes = append(schemes, [2]int{n, 1})
			}
			if cfg.Copies > 1 {
				schemes = append(schemes, [2]int{0, cfg.Copies})
			}
			for _, s := range schemes {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				pt, err := fecPoint(cfg, p, burst, s[0], s[1])
				if err != nil {
					return nil, err
				}
				res.Points = append(res.Points, pt)
			}
		}
	}
	res.summarize()
	return res, nil
}

func fecPoint(cfg FECResidualConfig, p, burst float64, n, k int) (FECPoint, error) {
	pt := FECPoint{Loss: p, Model: "bernoulli", N: n, Copies: k}
	loss := func() linksim.LossModel { return &linksim.Bernoulli{P: p} }
	if burst > 0 {
		pt.Model = fmt.Sprintf("bursty(%g)", burst)
		loss = func() linksim.LossModel { return &linksim.Bursty{P: p, MeanBurst: burst} }
	}
	pt.Scheme = fmt.Sprintf("fec(%d)", n)
	if n == 0 {
		pt.Scheme = fmt.Sprintf("replicate×%d", k)
	}
	desc := fmt.Sprintf("p %g %s %s", p, pt.Model, pt.Scheme)
	progress := func(done, total int) {
		if cfg.Progress != nil && (done == total || done%(1<<18) == 0) {
			fmt.Fprintf(cfg.Progress, "fec residual: %s: %d/%d frames\n", desc, done, total)
		}
	}
	r, err := fecsim.Run(fecsim.Config{Frames: cfg.Frames, N: n, Copies: k, Seed: cfg.Seed, Loss: loss,
		MinLen: cfg.MinLen, MaxLen: cfg.MaxLen, Progress: progress})
	if err != nil {
		return pt, err
	}
	pt.LinkLoss, pt.Frames, pt.Lost, pt.Oracle = r.LinkLoss(), r.Frames, r.Lost, r.OracleLost
	pt.Residual = r.Residual()
	if n > 0 {
		pt.Predicted = fec.Residual(n, p)
		pt.GroupFail, pt.RAIL = r.GroupFailRate(), fec.GroupFail(n, p)
	} else {
		pt.Predicted = fec.ReplicaResidual(k, p)
	}
	pt.Ratio = pt.Residual / pt.Predicted
	pt.Overhead, pt.OverPred = r.Overhead(), fecsim.PredictOverhead(n, k, cfg.MinLen, cfg.MaxLen)
	pt.Corrupt = r.Corrupt
	return pt, nil
}

func (r *FECResidualResult) summarize() {
	s := &r.Summary
	s.Within2x, s.OverheadWithin10, s.LostIsOracle = true, true, true
	bern := map[float64]float64{} // p -> Bernoulli prediction of the fec arm
	for _, pt := range r.Points {
		if pt.Model == "bernoulli" && pt.N > 0 {
			bern[pt.Loss] = pt.Predicted
		}
	}
	for _, pt := range r.Points {
		s.Corrupt += pt.Corrupt
		if pt.Lost != pt.Oracle {
			s.LostIsOracle = false
		}
		if math.Abs(pt.Overhead-pt.OverPred) > 0.1*pt.OverPred {
			s.OverheadWithin10 = false
		}
		if pt.Model != "bernoulli" {
			if b, ok := bern[pt.Loss]; ok && pt.N > 0 {
				s.BurstyWorst = max(s.BurstyWorst, pt.Residual/b)
			}
			continue
		}
		if pt.N == 0 {
			continue
		}
		gr := pt.GroupFail / pt.RAIL
		if pt.Ratio == 0 || gr == 0 { // nothing lost: too few frames to tell
			s.Within2x = false
			s.NoLoss++
			continue
		}
		s.MaxResidualRatio = max(s.MaxResidualRatio, pt.Ratio, 1/pt.Ratio)
		s.MaxGroupFailRatio = max(s.MaxGroupFailRatio, gr, 1/gr)
		if s.MaxResidualRatio > 2 || s.MaxGroupFailRatio > 2 {
			s.Within2x = false
		}
	}
}

// Text is the result as a table.
func (r *FECResidualResult) Text() string {
	var b strings.Builder
	w := report.NewTable(&b)
	fmt.Fprintln(w, "p\tmodel\tscheme\tlink loss\tresidual\tpredicted\tratio\tgroups failed\tRAIL formula\toverhead\tpredicted\tlost/oracle\t")
	for _, pt := range r.Points {
		gf, rail := "-", "-"
		if pt.N > 0 {
			gf, rail = fmt.Sprintf("%.3g", pt.GroupFail), fmt.Sprintf("%.3g", pt.RAIL)
		}
		fmt.Fprintf(w, "%g\t%s\t%s\t%.3g\t%.3g\t%.3g\t%.2f\t%s\t%s\t%.2f%%\t%.2f%%\t%d/%d\t\n",
			pt.Loss, pt.Model, pt.Scheme, pt.LinkLoss, pt.Residual, pt.Predicted, pt.Ratio, gf, rail,
			100*pt.Overhead, 100*pt.OverPred, pt.Lost, pt.Oracle)
	}
	w.Flush()
	s := r.Summary
	fmt.Fprintf(&b, "\n%d host frames per point, lengths %d..%d, n from RAIL's rule for target %g.\n",
		r.Config.Frames, r.Config.MinLen, r.Config.MaxLen, r.Config.Target)
	fmt.Fprintln(&b, "residual: host frames never delivered; predicted: p·(1−(1−p)^n) for parity, p^k for replication (independent loss).")
	fmt.Fprintln(&b, "RAIL formula: 1−(1−p)^(n+1)−(n+1)p(1−p)^n, the probability that a group fails (compare with groups failed).")
	fmt.Fprintf(&b, "Bernoulli, parity: worst ratio to the prediction %.2f, to RAIL's formula %.2f: within 2×: %v.\n",
		s.MaxResidualRatio, s.MaxGroupFailRatio, s.Within2x)
	if s.NoLoss > 0 {
		fmt.Fprintf(&b, "%d Bernoulli parity points lost nothing: too few frames to measure their residual (use --frames 1000000).\n", s.NoLoss)
	}
	fmt.Fprintf(&b, "overhead within 10%% of prediction: %v; lost = oracle everywhere: %v; corrupt deliveries: %d.\n",
		s.OverheadWithin10, s.LostIsOracle, s.Corrupt)
	if s.BurstyWorst > 0 {
		fmt.Fprintf(&b, "bursty loss: residual up to %.0f× the Bernoulli prediction at the same p (XOR recovers one loss per group).\n", s.BurstyWorst)
	}
	return b.String()
}

// WriteCSV writes one line per point.
func (r *FECResidualResult) WriteCSV(path string) error {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	var rows [][]string
	for _, pt := range r.Points {
		rows = append(rows, []string{g(pt.Loss), pt.Model, pt.Scheme, strconv.Itoa(pt.N), strconv.Itoa(pt.Copies), g(pt.LinkLoss),
			strconv.FormatUint(pt.Frames, 10), strconv.FormatUint(pt.Lost, 10), strconv.FormatUint(pt.Oracle, 10),
			g(pt.Residual), g(pt.Predicted), g(pt.Ratio), g(pt.GroupFail), g(pt.RAIL), g(pt.Overhead), g(pt.OverPred)})
	}
	return report.WriteCSV(path, []string{"loss", "model", "scheme", "n", "copies", "link_loss", "frames", "lost", "oracle_lost",
		"residual", "predicted", "ratio", "group_fail", "rail_formula", "overhead", "overhead_predicted"}, rows)
}
