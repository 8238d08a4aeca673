package fecexp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// FECTableArms are the protections `fec table` compares: none, XOR parity
// with RAIL's n, replication, LinkGuardian.
var FECTableArms = []string{FECArmForward, FECArmParity, FECArmReplicate, FECArmLG}

// FECTableConfig sizes `linkfabric fec table`: fec residual's veth points
// for every protection, with short TCP flows' FCT at each.
type FECTableConfig struct {
	Loss      []float64 `json:"loss"`
	Target    float64   `json:"target"`
	MeanBurst float64   `json:"mean_burst"` // the bursty model (0: Bernoulli only)
	Frames    int       `json:"frames"`
	Warmup    int       `json:"warmup"`
	Copies    int       `json:"copies"`
	FCTFlows  int       `json:"fct_flows"`
	FCTSize   int64     `json:"fct_size"`
	Runs      int       `json:"runs"`
	Rate      float64   `json:"rate_bps"`
	Seed      uint64    `json:"seed"`
}

func (c *FECTableConfig) veth() FECVethConfig {
	return FECVethConfig{Loss: c.Loss, Target: c.Target, Frames: c.Frames, Warmup: c.Warmup, Copies: c.Copies, MeanBurst: c.MeanBurst,
		Arms: FECTableArms, Rate: c.Rate, Runs: c.Runs, Seed: c.Seed, FCTFlows: c.FCTFlows, FCTSize: c.FCTSize}
}

// Normalize fills defaults and checks the configuration.
func (c *FECTableConfig) Normalize() error {
	c.Frames = cmp.Or(c.Frames, 30_000)
	c.Warmup = cmp.Or(c.Warmup, 2_000) // the arms fix what they run: nothing to measure first
	c.MeanBurst = cmp.Or(c.MeanBurst, 3)
	c.FCTFlows = cmp.Or(c.FCTFlows, 300)
	c.FCTSize = cmp.Or(c.FCTSize, 24_387) // LinkGuardian's mid-size flow
	if c.FCTFlows < 1 || c.FCTSize < fct.HeaderSize {
		return fmt.Errorf("fec table: --fct-flows %d --fct-size %d: want a flow or more of at least %d B", c.FCTFlows, c.FCTSize, fct.HeaderSize)
	}
	v := c.veth()
	if err := v.Normalize(); err != nil {
		return fmt.Errorf("fec table: %w", err)
	}
	c.Loss, c.Target, c.Copies, c.Rate, c.Runs, c.Seed = v.Loss, v.Target, v.Copies, v.Rate, v.Runs, v.Seed
	return nil
}

// FECTableCell is one protection at one loss rate and model: medians over
// runs.
type FECTableCell struct {
	Arm         string  `json:"arm"`
	Scheme      string  `json:"scheme"`
	Residual    float64 `json:"residual"`
	Overhead    float64 `json:"overhead"`
	FCTP99Us    float64 `json:"fct_p99_us"`
	FCTP50Us    float64 `json:"fct_p50_us"`
	MeetsTarget bool    `json:"meets_target"`
	// PredOverhead is 1/n plus headers for what the arm ran: copies ×
	// (1 + 1/n) × (F + h)/F, F the host frame, h the link header and
	// trailer each data frame gains (a parity frame counted as one more
	// frame of the group's length); 0 for lg (no formula).
	PredOverhead float64 `json:"predicted_overhead,omitempty"`
}

// FECTableRow is one loss rate and model: every protection, the measured
// choices and the policy's.
type FECTableRow struct {
	Loss  float64        `json:"loss"`
	Model string         `json:"model"`
	Cells []FECTableCell `json:"cells"`
	// BestFCT and BestOverhead: among the protections that meet the
	// target, the lowest p99 FCT and the lowest wire overhead ("" if none
	// meets it); CodingFCT and CodingOverhead the same among what mode fec
	// can run (none, parity, replication).
	BestFCT        string `json:"best_fct"`
	BestOverhead   string `json:"best_overhead"`
	CodingFCT      string `json:"coding_best_fct"`
	CodingOverhead string `json:"coding_best_overhead"`
	// Policy is what fec.DefaultLinkTable decides for this rate and
	// model (as the arm that runs it). Agrees: it is one of the two
	// measured choices among all protections, or, where it chooses a
	// coding, among the codings (the choice mode fec applies); exclude
	// agrees only where nothing, lg included, meets the target.
	Policy string `json:"policy"`
	Agrees bool   `json:"agrees"`
}

// FECTableResult is `linkfabric fec table`'s report.
type FECTableResult struct {
	Config FECTableConfig `json:"config"`
	Veth   *FECVethResult `json:"points"`
	Rows   []FECTableRow  `json:"rows"`
	// Summary: rows, policy_agrees (rows where it does), disagreements.
	Summary map[string]any `json:"summary"`
}

// FECTable runs fec residual's veth points with FCT for every protection
// and builds the table behind the link policy.
func FECTable(ctx context.Context, e *bed.Env, cfg FECTableConfig) (*FECTableResult, error) {
	if err := cfg.Normalize(); err != nil {
		return nil, err
	}
	v, err := FECResidualVeth(ctx, e, cfg.veth())
	if err != nil {
		return nil, err
	}
	res := &FECTableResult{Config: cfg, Veth: v}
	res.build()
	return res, nil
}

// policyArm is the arm that runs what the default link table decides at
// rate p for independent (bursty false) or bursty loss.
func policyArm(target, p float64, bursty bool) string {
	t := fec.DefaultLinkTable(target)
	burst := 1.0
	if bursty {
		burst = t.BurstOn + 1
	}
	st := t.Decide(p, burst, fec.LinkState{})
	switch st.Choice.Action {
	case fec.ActNone:
		return FECArmForward
	case fec.ActFEC:
		return FECArmParity
	case fec.ActReplicate:
		return FECArmReplicate
	case fec.ActLG:
		return FECArmLG
	}
	return st.Choice.Action.String()
}

func (res *FECTableResult) build() {
	c := &res.Config
	models := []string{"bernoulli"}
	if c.MeanBurst > 0 {
		models = append(models, fmt.Sprintf("bursty(%g)", c.MeanBurst))
	}
	agree := 0
	var dis []string
	for _, model := range models {
		for _, p := range c.Loss {
			row := FECTableRow{Loss: p, Model: model}
			bestF, bestO, codF, codO := math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)
			for _, arm := range FECTableArms {
				var resid, over, f99, f50 []float64
				scheme, n, copies := "", 0, 1
				for _, pt := range res.Veth.Points {
					if pt.Arm == arm && pt.Loss == p && pt.Model == model {
						resid, over = append(resid, pt.Residual), append(over, pt.Overhead)
						f99, f50 = append(f99, pt.FCTP99Us), append(f50, pt.FCTP50Us)
						scheme, n, copies = pt.Scheme, pt.N, max(pt.Copies, 1)
					}
				}
				if len(resid) == 0 {
					continue
				}
				cell := FECTableCell{Arm: arm, Scheme: scheme, Residual: report.Median(resid), Overhead: report.Median(over), FCTP99Us: report.Median(f99), FCTP50Us: report.Median(f50)}
				if arm != FECArmLG {
					cell.PredOverhead = predOverhead(n, copies, res.Veth.Config.Payload)
				}
				cell.MeetsTarget = cell.Residual <= c.Target
				if cell.MeetsTarget {
					if cell.FCTP99Us < bestF {
						bestF, row.BestFCT = cell.FCTP99Us, arm
					}
					if cell.Overhead < bestO {
						bestO, row.BestOverhead = cell.Overhead, arm
					}
					if arm != FECArmLG && cell.FCTP99Us < codF {
						codF, row.CodingFCT = cell.FCTP99Us, arm
					}
					if arm != FECArmLG && cell.Overhead < codO {
						codO, row.CodingOverhead = cell.Overhead, arm
					}
				}
				row.Cells = append(row.Cells, cell)
			}
			row.Policy = policyArm(c.Target, p, model != "bernoulli")
			coding := row.Policy != FECArmLG
			row.Agrees = row.Policy == row.BestFCT || row.Policy == row.BestOverhead ||
				coding && (row.Policy == row.CodingFCT || row.Policy == row.CodingOverhead) ||
				row.Policy == "exclude" && row.BestFCT == ""
			if row.Agrees {
				agree++
			} else {
				dis = append(dis, fmt.Sprintf("%s p=%g: policy %s, measured best p99 FCT %s, overhead %s (codings: %s, %s)", model, p, row.Policy,
					orDash(row.BestFCT), orDash(row.BestOverhead), orDash(row.CodingFCT), orDash(row.CodingOverhead)))
			}
			res.Rows = append(res.Rows, row)
		}
	}
	worst := 0.0
	for _, r := range res.Rows {
		for _, x := range r.Cells {
			if x.PredOverhead > 0 && x.Arm != FECArmForward {
				worst = max(worst, math.Abs(x.Overhead/x.PredOverhead-1))
			}
		}
	}
	res.Summary = map[string]any{"rows": len(res.Rows), "policy_agrees": agree, "disagreements": dis,
		"overhead_vs_prediction_worst": worst}
}

// predOverhead is the wire bytes over the host bytes of frames of a UDP
// payload through parity n (0: none) and copies: each data frame gains the
// link header (its EtherType and seqhdr.HeaderLen) and the integrity
// trailer; a group of n adds one frame of its length.
func predOverhead(n, copies, payload int) float64 {
	f := float64(payload + bed.UDPWireOverhead - 24) // the frame the host port receives: no preamble, FCS or gap
	w := float64(copies) * (f + 2 + seqhdr.HeaderLen + linkcrc.TrailerLen) / f
	if n > 0 {
		w *= 1 + 1/float64(n)
	}
	return w
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Text is the table.
func (res *FECTableResult) Text() string {
	var b strings.Builder
	c := &res.Config
	fmt.Fprintf(&b, "fec table: pair testbed, loss at sw2's link0; per rate and model, medians of %d runs: UDP residual (%d datagrams), wire overhead, and p99 FCT of %d TCP flows of %s; target residual %g\n\n",
		c.Runs, c.Frames, c.FCTFlows, fct.FormatSize(c.FCTSize), c.Target)
	w := report.NewTable(&b)
	fmt.Fprint(w, "model\tp\t")
	for _, a := range FECTableArms {
		fmt.Fprintf(w, "%s: residual / overhead / p99 FCT µs\t", a)
	}
	fmt.Fprintln(w, "best p99 FCT\tbest overhead\tbest coding: FCT, overhead\tpolicy\t")
	for _, r := range res.Rows {
		fmt.Fprintf(w, "%s\t%g\t", r.Model, r.Loss)
		for _, a := range FECTableArms {
			i := slices.IndexFunc(r.Cells, func(x FECTableCell) bool { return x.Arm == a })
			if i < 0 {
				fmt.Fprint(w, "-\t")
				continue
			}
			x := r.Cells[i]
			mark := ""
			if !x.MeetsTarget {
				mark = "✗"
			}
			fmt.Fprintf(w, "%.2g%s / %.3f / %.0f\t", x.Residual, mark, x.Overhead, x.FCTP99Us)
		}
		ok := "agrees"
		if !r.Agrees {
			ok = "DIFFERS"
		}
		fmt.Fprintf(w, "%s\t%s\t%s, %s\t%s (%s)\t\n", orDash(r.BestFCT), orDash(r.BestOverhead), orDash(r.CodingFCT), orDash(r.CodingOverhead), r.Policy, ok)
	}
	w.Flush()
	fmt.Fprintln(&b, "\nwire overhead, measured / predicted (1/n plus headers), parity and replication:")
	for _, r := range res.Rows {
		var xs []string
		for _, x := range r.Cells {
			if x.PredOverhead > 0 && x.Arm != FECArmForward {
				xs = append(xs, fmt.Sprintf("%s %.3f / %.3f", x.Scheme, x.Overhead, x.PredOverhead))
			}
		}
		if len(xs) > 0 {
			fmt.Fprintf(&b, "  %s p=%g: %s\n", r.Model, r.Loss, strings.Join(xs, ", "))
		}
	}
	fmt.Fprintf(&b, "  worst deviation %.1f %% (target: within 10 %%)\n", 100*res.Summary["overhead_vs_prediction_worst"].(float64))
	fmt.Fprintf(&b, "\n✗: residual above the target. best coding: among none, parity and replication (what mode fec can run). policy: fec.DefaultLinkTable's choice for the rate (bursty: mean loss run ≥ %g); it agrees when it is the best by p99 FCT or by overhead, among all protections or, for a coding, among the codings. %d of %d rows agree.\n",
		fec.DefaultLinkTable(c.Target).BurstOn, res.Summary["policy_agrees"], len(res.Rows))
	return b.String()
}

// ReadFECTable reads a saved `fec table` JSON and builds its table again
// from its points (with this build's policy and rules).
func ReadFECTable(path string) (*FECTableResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res FECTableResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if res.Veth == nil || len(res.Veth.Points) == 0 {
		return nil, fmt.Errorf("%s: no points (not a 'fec table' result?)", path)
	}
	res.Rows = nil
	res.build()
	return &res, nil
}
