package fct

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// GoodputCell is one measured goodput: arm at a link loss rate.
type GoodputCell struct {
	Arm      string  `json:"arm"`
	LossRate float64 `json:"loss_rate"`
	Bps      float64 `json:"goodput_bps"` // bit/s
}

// GoodputRow is one arm of a GoodputTable. Bps[i] (bit/s) and Ratio[i] belong to
// LossRates[i]; a missing measurement is nil (JSON null, "n/a" in text).
type GoodputRow struct {
	Arm   string     `json:"arm"`
	Bps   []*float64 `json:"goodput_bps"`
	Ratio []*float64 `json:"ratio_to_no_loss"`
}

// GoodputTable is the paper's Table 3 layout: arms x loss rates -> bit/s,
// plus each value's ratio to "no loss": the same arm's goodput at loss rate
// 0, or, when the arm has no loss-0 measurement (Wharf's "n/a"), the
// reference arm's goodput at loss rate 0.
type GoodputTable struct {
	LossRates []float64    `json:"loss_rates"`
	Reference string       `json:"reference"`
	Rows      []GoodputRow `json:"rows"`
}

// NewGoodputTable arranges cells: loss rates ascending, arms in order of
// first appearance. ref names the fallback arm for the no-loss baseline
// ("" = the first arm). Later duplicates of an (arm, loss) cell win.
func NewGoodputTable(cells []GoodputCell, ref string) GoodputTable {
	var t GoodputTable
	var arms []string
	val := map[string]map[float64]float64{}
	for _, c := range cells {
		if !slices.Contains(arms, c.Arm) {
			arms = append(arms, c.Arm)
			val[c.Arm] = map[float64]float64{}
		}
		if !slices.Contains(t.LossRates, c.LossRate) {
			t.LossRates = append(t.LossRates, c.LossRate)
		}
		val[c.Arm][c.LossRate] = c.Bps
	}
	slices.Sort(t.LossRates)
	if ref == "" && len(arms) > 0 {
		ref = arms[0]
	}
	t.Reference = ref
	refBase, refOK := val[ref][0]
	for _, a := range arms {
		row := GoodputRow{Arm: a}
		base, ok := val[a][0]
		if !ok {
			base, ok = refBase, refOK
		}
		for _, lr := range t.LossRates {
			g, has := val[a][lr]
			if !has {
				row.Bps = append(row.Bps, nil)
				row.Ratio = append(row.Ratio, nil)
				continue
			}
			row.Bps = append(row.Bps, &g)
			if ok && base != 0 {
				r := g / base
				row.Ratio = append(row.Ratio, &r)
			} else {
				row.Ratio = append(row.Ratio, nil)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// FormatLossRate renders a loss rate like the paper: 0, 1e-05 -> "10^-5",
// other values with %g.
func FormatLossRate(lr float64) string {
	if lr == 0 {
		return "0"
	}
	for k := 1; k <= 12; k++ {
		p := 1.0
		for range k {
			p /= 10
		}
		if lr == p || (lr > p*0.9999999 && lr < p*1.0000001) {
			return "10^-" + strconv.Itoa(k)
		}
	}
	return strconv.FormatFloat(lr, 'g', -1, 64)
}

// WriteText writes the table aligned: one row per arm, one column per loss
// rate, each cell "Gbit/s (ratio)", e.g. "9.46 (1.00x)".
func (t GoodputTable) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "loss rate →\t")
	for _, lr := range t.LossRates {
		fmt.Fprintf(tw, "%s\t", FormatLossRate(lr))
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "%s\t", r.Arm)
		for i := range t.LossRates {
			switch {
			case r.Bps[i] == nil:
				fmt.Fprint(tw, "n/a\t")
			case r.Ratio[i] == nil:
				fmt.Fprintf(tw, "%.2f\t", *r.Bps[i]/1e9)
			default:
				fmt.Fprintf(tw, "%.2f (%.2fx)\t", *r.Bps[i]/1e9, *r.Ratio[i])
			}
		}
		fmt.Fprintln(tw, "\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "(goodput in Gbit/s; ratio to the same arm at loss 0, else to "+t.Reference+" at loss 0)")
	return err
}
