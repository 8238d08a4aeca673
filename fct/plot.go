package fct

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/linkfabric/linkfabric/experiment/report"
)

// PlotOptions configures PlotTailCDF.
type PlotOptions struct {
	Title string // default "FCT tail, <size> flows"
	// TailFrom is the CDF value the plot starts at (default 0.9: the top
	// 10% of flows; the paper's Figures 10-12 show the top 1% or 5%).
	TailFrom float64
	// Width and Height of the image, default 16 cm x 10 cm.
	Width, Height vg.Length
	// Arms selects and orders the arms to draw (default: all, in order of
	// first appearance).
	Arms []string
	// XLabel names the x axis (default "FCT (µs)"); the values are µs.
	XLabel string
}

// PlotTailCDF draws the tail of the FCT distribution of the completed flows
// of the given size, one line per arm, like the paper's Figures 10-12, and
// saves it to path (format from the extension: .png, .svg, .pdf).
//
// x is the FCT in µs on a log scale. y is the CDF zoomed on the tail: it
// is plotted as 1-CDF on an inverted log scale, so percentiles 90%, 99%,
// 99.9%, 99.99% are equally spaced and grow upwards. Each arm is a step
// line through its sorted FCTs v_1..v_n at heights F(v_i) = (i-1)/n, so
// the top of the line is its maximum at 1 - 1/n.
func PlotTailCDF(flows []Flow, size int64, path string, opt PlotOptions) error {
	if opt.TailFrom <= 0 || opt.TailFrom >= 1 {
		opt.TailFrom = 0.9
	}
	if opt.Width == 0 {
		opt.Width = 16 * vg.Centimeter
	}
	if opt.Height == 0 {
		opt.Height = 10 * vg.Centimeter
	}
	if opt.Title == "" {
		opt.Title = fmt.Sprintf("FCT tail, %s flows", FormatSize(size))
	}
	byArm := map[string][]time.Duration{}
	var order []string
	for _, f := range flows {
		if f.Size != size || f.Failed {
			continue
		}
		if _, ok := byArm[f.Arm]; !ok {
			order = append(order, f.Arm)
		}
		byArm[f.Arm] = append(byArm[f.Arm], f.FCT)
	}
	if opt.Arms != nil {
		order = opt.Arms
	}

	p := plot.New()
	p.Title.Text = opt.Title
	p.X.Label.Text = "FCT (µs)"
	if opt.XLabel != "" {
		p.X.Label.Text = opt.XLabel
	}
	p.Y.Label.Text = "CDF"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = report.LogTicks{}
	p.Y.Scale = plot.InvertedScale{Normalizer: plot.LogScale{}}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())

	top := 1 - opt.TailFrom // largest 1-CDF shown
	bottom := top
	drawn := 0
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, arm := range order {
		d := slices.Clone(byArm[arm])
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		n := len(d)
		var pts plotter.XYs
		for k, v := range d { // 1-F(v_k) = (n-k)/n with k zero-based
			ccdf := float64(n-k) / float64(n)
			if ccdf > top {
				continue
			}
			if len(pts) == 0 && k > 0 { // start the line at the TailFrom level
				pts = append(pts, plotter.XY{X: us1(d[k-1]), Y: top})
			}
			pts = append(pts, plotter.XY{X: us1(v), Y: ccdf})
			bottom = min(bottom, ccdf)
		}
		if len(pts) == 0 { // fewer flows than the zoom resolves: show the max
			pts = append(pts, plotter.XY{X: us1(d[n-1]), Y: top})
		}
		for _, q := range pts {
			xmin, xmax = min(xmin, q.X), max(xmax, q.X)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("fct: plot %s: %w", arm, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", arm, n), l)
		drawn++
	}
	if drawn == 0 {
		return errors.New("fct: no completed flows of that size to plot")
	}
	p.Y.Min, p.Y.Max = math.Pow(10, math.Floor(math.Log10(bottom)+1e-9)), top
	p.X.Min, p.X.Max = xmin/1.25, xmax*1.25
	p.Y.Tick.Marker = percentileTicks{}
	return p.Save(opt.Width, opt.Height, path)
}

func us1(d time.Duration) float64 {
	return math.Max(float64(d)/1e3, 1e-3) // log axis: keep > 0
}

// percentileTicks labels 1-CDF = 10^-k as the percentile 1-10^-k, and
// the median (1-CDF = 0.5) when the axis reaches it.
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if min <= 0.5 && max >= 0.5*0.999 {
		ts = append(ts, plot.Tick{Value: 0.5, Label: "50%"})
	}
	for k := 0; k <= 9; k++ {
		v := math.Pow(10, -float64(k))
		if v < min*0.999 || v > max*1.001 {
			continue
		}
		pct := 100 * (1 - v)
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(pct, 'f', -1, 64) + "%"})
	}
	return ts
}

// PlotAllSizes calls PlotTailCDF for every flow size present, writing
// dir/<prefix>-<size>.png, and returns the paths written.
func PlotAllSizes(flows []Flow, dir, prefix string, opt PlotOptions) ([]string, error) {
	var sizes []int64
	for _, f := range flows {
		if !slices.Contains(sizes, f.Size) {
			sizes = append(sizes, f.Size)
		}
	}
	slices.Sort(sizes)
	var paths []string
	for _, s := range sizes {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s.png", prefix, FormatSize(s)))
		if err := PlotTailCDF(flows, s, path, opt); err != nil {
			return paths, fmt.Errorf("fct: plot %s: %w", FormatSize(s), err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
