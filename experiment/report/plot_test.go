package report

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestPlotBars(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bars.png")
	err := PlotBars(path, "FCT normalised", "mean FCT / no loss", []string{"10KB", "100KB", "1MB"},
		[]BarSeries{{Name: "none", Values: []float64{1.5, 2, math.NaN()}}, {Name: "lg", Values: []float64{1.02, 1.01, 1.05}, Labels: true}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
		t.Fatalf("%v %v", st, err)
	}
	if PlotBars(path, "", "", nil, nil, 1) == nil {
		t.Fatal("an empty chart was drawn")
	}
}

func TestPlotPanels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "panels.png")
	err := PlotPanels(path, []LinePanel{
		{Title: "tcp", XLabel: "time (s)", YLabel: "MiB", Series: []LineSeries{{Name: "h1", X: []float64{0, 1, 2}, Y: []float64{0, 3, 4}}, {Name: "ideal", X: []float64{0, 1.5}, Y: []float64{0, 4}, Ref: true}}},
		{Title: "tdma", XLabel: "time (s)", YLabel: "MiB", Series: []LineSeries{{Name: "h1", X: []float64{0, 1.6}, Y: []float64{0, 4}, Points: true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
		t.Fatalf("%v %v", st, err)
	}
	if PlotPanels(path, []LinePanel{{Title: "empty", Series: []LineSeries{{Name: "h1"}}}}) == nil {
		t.Fatal("a panel without points was drawn")
	}
	if PlotPanels(filepath.Join(t.TempDir(), "x.bmp"), []LinePanel{{Series: []LineSeries{{X: []float64{1}, Y: []float64{1}}}}}) == nil {
		t.Fatal("an unknown format was accepted")
	}
}

func TestPlotLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lines.png")
	err := PlotLines(path, LinesOptions{Title: "t", XLabel: "x", YLabel: "y", LogX: true, Ref: 0.85, RefLabel: "target", YFrom0: true},
		XYSeries{Name: "a", X: []float64{0.25, 1, 16}, Y: []float64{0.2, 0.8, 0.9}},
		XYSeries{Name: "b", X: []float64{1, 2}, Y: []float64{0.4, 0.5}, Style: Points},
		XYSeries{Name: "c", X: []float64{10, 20, 30}, Y: []float64{0.3, 0.6, 1}, Style: Steps},
		XYSeries{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 1000 {
		t.Fatalf("%v %v", st, err)
	}
	if PlotLines(path, LinesOptions{LogX: true}, XYSeries{Name: "x", X: []float64{0}, Y: []float64{1}}) == nil {
		t.Fatal("a chart with no point on its log axis was drawn")
	}
}
