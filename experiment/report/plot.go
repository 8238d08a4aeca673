package report

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LogTicks labels 1, 2 and 5 times powers of ten (only powers of ten
// when the axis spans more than two decades), with unlabelled minor ticks
// at the other integer multiples.
type LogTicks struct{}

// Ticks returns the ticks of an axis from min to max.
func (LogTicks) Ticks(min, max float64) []plot.Tick {
	if min <= 0 || max <= min {
		return nil
	}
	wide := math.Log10(max/min) > 2
	var ts []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		dec := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * dec
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (!wide && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// BarSeries is one arm of a grouped bar chart: a value per group.
type BarSeries struct {
	Name   string
	Values []float64 // per group; NaN: no bar
	// Labels writes each value above its bar (so a bar of 0 shows too).
	Labels bool
}

// PlotBars draws a grouped bar chart (RAIL's Figure 17 in shape: one group
// per flow-size bin, one bar per arm) with a dashed reference line at ref
// (0: none), and saves it to path (format from the extension). Negative
// values hang below a zero line.
func PlotBars(path, title, ylabel string, groups []string, series []BarSeries, ref float64) error {
	if len(groups) == 0 || len(series) == 0 {
		return errors.New("report: nothing to plot")
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	w := vg.Points(min(60/float64(len(series)), 14))
	ymax, ymin := ref, 0.0
	for i, s := range series {
		v := make(plotter.Values, len(groups))
		for g := range groups {
			if g < len(s.Values) && !math.IsNaN(s.Values[g]) {
				v[g] = s.Values[g]
				ymax, ymin = max(ymax, v[g]), min(ymin, v[g])
			}
		}
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return fmt.Errorf("report: bars %s: %w", s.Name, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = vg.Length(0)
		b.Offset = w * vg.Length(float64(i)-float64(len(series)-1)/2)
		p.Add(b)
		p.Legend.Add(s.Name, b)
		if s.Labels {
			var xy plotter.XYLabels
			for g := range groups {
				if g < len(s.Values) && !math.IsNaN(s.Values[g]) {
					xy.XYs = append(xy.XYs, plotter.XY{X: float64(g), Y: v[g]})
					lb := strconv.FormatFloat(v[g], 'g', 3, 64)
					if math.Abs(v[g]) >= 100 {
						lb = strconv.FormatFloat(v[g], 'f', 0, 64)
					}
					xy.Labels = append(xy.Labels, lb)
				}
			}
			if len(xy.XYs) > 0 {
				l, err := plotter.NewLabels(xy)
				if err != nil {
					return fmt.Errorf("report: bar labels %s: %w", s.Name, err)
				}
				for k := range l.TextStyle {
					l.TextStyle[k].XAlign, l.TextStyle[k].Font.Size = draw.XCenter, vg.Points(7)
				}
				l.Offset = vg.Point{X: b.Offset, Y: vg.Points(2)}
				p.Add(l)
			}
		}
	}
	if ref > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: ref}, {X: float64(len(groups)) - 0.5, Y: ref}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
	}
	p.NominalX(groups...)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5 // whole groups, whatever the data
	if ymax <= 0 {
		ymax = 1 // every bar 0: an axis from 0 to 1, not a degenerate one
	}
	p.Y.Min, p.Y.Max = min(0, ymin*1.1), ymax*1.4 // room for the legend (and for negative bars)
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}

// LineSeries is one line of a LinePanel.
type LineSeries struct {
	Name string
	X, Y []float64
	// Ref draws a thin dashed grey reference (an ideal, a threshold)
	// instead of a coloured line; Points marks every point; Scatter draws
	// the points alone.
	Ref, Points, Scatter bool
}

// LinePanel is one plot of PlotPanels.
type LinePanel struct {
	Title, XLabel, YLabel string
	Series                []LineSeries
	LogX                  bool
	// YMin and YMax fix the y range when YMax > YMin (default: from 0 to
	// the data's top).
	YMin, YMax float64
}

// PlotPanels draws the panels stacked top to bottom on one shared x range
// (the paper's Figure 7 in shape: TCP above, TDMA below) and saves them to
// path (format from the extension: .png, .svg, .pdf). Each panel is 16 cm
// x 8 cm.
func PlotPanels(path string, panels []LinePanel) error {
	if len(panels) == 0 {
		return errors.New("report: no panel to plot")
	}
	xmin, xmax := math.Inf(1), math.Inf(-1)
	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.Title
		p.X.Label.Text, p.Y.Label.Text = pn.XLabel, pn.YLabel
		p.Legend.Top, p.Legend.Left = false, false
		p.Add(plotter.NewGrid())
		if pn.LogX {
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = LogTicks{}
		}
		b := xyBounds{xmin: xmin, xmax: xmax, ymax: math.Inf(-1)}
		drawn, colour, refs := 0, 0, 0
		for _, s := range pn.Series {
			pts := b.points(s.X, s.Y, pn.LogX)
			xmin, xmax = b.xmin, b.xmax
			if len(pts) == 0 {
				continue
			}
			drawn++
			if s.Scatter {
				sc, err := plotter.NewScatter(pts)
				if err != nil {
					return fmt.Errorf("report: plot %s: %w", s.Name, err)
				}
				sc.Color, sc.Shape = plotutil.Color(colour), plotutil.Shape(colour)
				colour++
				p.Add(sc)
				if s.Name != "" {
					p.Legend.Add(s.Name, sc)
				}
				continue
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", s.Name, err)
			}
			if s.Ref {
				l.Color = color.Gray{Y: 96}
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				if refs%2 == 1 {
					l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
				}
				l.Width = vg.Points(1)
				refs++
			} else {
				l.Color = plotutil.Color(colour)
				l.Dashes = plotutil.Dashes(colour)
				l.Width = vg.Points(1.5)
				colour++
			}
			p.Add(l)
			if s.Points {
				sc, err := plotter.NewScatter(pts)
				if err != nil {
					return fmt.Errorf("report: plot %s: %w", s.Name, err)
				}
				sc.Color = l.Color
				p.Add(sc)
			}
			if s.Name != "" {
				p.Legend.Add(s.Name, l)
			}
		}
		if drawn == 0 {
			return fmt.Errorf("report: panel %q has nothing to plot", pn.Title)
		}
		if pn.YMax > pn.YMin {
			p.Y.Min, p.Y.Max = pn.YMin, pn.YMax
		} else {
			p.Y.Min, p.Y.Max = 0, max(b.ymax*1.05, 1e-9)
		}
		plots[i] = []*plot.Plot{p}
	}
	for i, pn := range panels {
		p := plots[i][0]
		if pn.LogX {
			p.X.Min, p.X.Max = xmin/1.25, xmax*1.25
		} else {
			p.X.Min, p.X.Max = min(0, xmin), xmax
		}
	}
	w, h := 16*vg.Centimeter, 8*vg.Centimeter*vg.Length(len(panels))
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	t := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(8)}
	cs := plot.Align(plots, t, draw.New(c))
	for i := range plots {
		plots[i][0].Draw(cs[i][0])
	}
	return WriteFile(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// xyBounds are the data bounds of the series drawn so far.
type xyBounds struct{ xmin, xmax, ymax float64 }

// points returns the points (x[k], y[k]) that can be drawn (not NaN, x > 0
// on a log x axis) and widens b to them.
func (b *xyBounds) points(x, y []float64, logX bool) plotter.XYs {
	n := min(len(x), len(y))
	pts := make(plotter.XYs, 0, n)
	for k := 0; k < n; k++ {
		if math.IsNaN(x[k]) || math.IsNaN(y[k]) || logX && x[k] <= 0 {
			continue
		}
		pts = append(pts, plotter.XY{X: x[k], Y: y[k]})
		b.xmin, b.xmax, b.ymax = min(b.xmin, x[k]), max(b.xmax, x[k]), max(b.ymax, y[k])
	}
	return pts
}

// LineStyle is how PlotLines draws a series.
type LineStyle int

// Line styles.
const (
	LinePoints LineStyle = iota // a line through the points, marked
	Points                      // markers only (a scatter)
	Steps                       // a step line (a CDF)
)

// XYSeries is one series of PlotLines: points (X[i], Y[i]).
type XYSeries struct {
	Name  string
	X, Y  []float64
	Style LineStyle
}

// LinesOptions configures PlotLines.
type LinesOptions struct {
	Title, XLabel, YLabel string
	LogX                  bool    // x on a log scale (every X must be > 0)
	Ref                   float64 // a dashed horizontal line at Ref (0: none)
	RefLabel              string
	YFrom0                bool // the y axis starts at 0
	LegendBottom          bool // the legend bottom right (CDFs) instead of top right
}

// PlotLines draws series on one set of axes (the experiments' curves:
// throughput against block size, RTT against offset, CDFs) and saves it to
// path (format from the extension). Empty series are skipped; it fails if
// every series is empty.
func PlotLines(path string, opt LinesOptions, series ...XYSeries) error {
	p := plot.New()
	p.Title.Text = opt.Title
	p.X.Label.Text = opt.XLabel
	p.Y.Label.Text = opt.YLabel
	if opt.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = LogTicks{}
	}
	p.Legend.Top = !opt.LegendBottom
	p.Add(plotter.NewGrid())
	drawn := 0
	b := xyBounds{xmin: math.Inf(1), xmax: math.Inf(-1), ymax: opt.Ref}
	for i, s := range series {
		pts := b.points(s.X, s.Y, opt.LogX)
		if len(pts) == 0 {
			continue
		}
		drawn++
		switch s.Style {
		case Points:
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", s.Name, err)
			}
			sc.Color = plotutil.Color(i)
			sc.Shape = plotutil.Shape(i)
			sc.Radius = vg.Points(1.5)
			p.Add(sc)
			p.Legend.Add(s.Name, sc)
		default:
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("report: plot %s: %w", s.Name, err)
			}
			l.Color, l.Dashes, l.Width = plotutil.Color(i), plotutil.Dashes(i), vg.Points(1.5)
			sc.Color, sc.Shape = plotutil.Color(i), plotutil.Shape(i)
			if s.Style == Steps {
				l.StepStyle = plotter.PostStep
				sc.Radius = 0
			}
			p.Add(l, sc)
			p.Legend.Add(s.Name, l)
		}
	}
	if drawn == 0 {
		return errors.New("report: nothing to plot")
	}
	xmin, xmax, ymax := b.xmin, b.xmax, b.ymax
	if opt.Ref > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: opt.Ref}, {X: xmax, Y: opt.Ref}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		if opt.RefLabel != "" {
			p.Legend.Add(opt.RefLabel, l)
		}
	}
	if opt.LogX && xmin < xmax {
		p.X.Min, p.X.Max = xmin/1.25, xmax*1.25
	}
	if opt.YFrom0 {
		p.Y.Min, p.Y.Max = 0, ymax*1.25 // room for the legend
	}
	return p.Save(16*vg.Centimeter, 10*vg.Centimeter, path)
}
