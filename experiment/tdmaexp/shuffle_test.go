package tdmaexp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShuffleProgressPlot(t *testing.T) {
	prog := func(rates ...float64) []HostProgress {
		var ps []HostProgress
		for i, r := range rates {
			p := HostProgress{Host: i + 1}
			for k := 0; k <= 10; k++ {
				p.T, p.Bytes = append(p.T, float64(k)/10), append(p.Bytes, int64(r*float64(k)/10))
			}
			ps = append(ps, p)
		}
		return ps
	}
	runs := []ShuffleArm{
		{Arm: "tdma", Run: 1, CompletionS: 1.2, IdealS: 1, Progress: prog(3e6, 3e6)},
		{Arm: "tdma", Run: 2, CompletionS: 1.0, IdealS: 1, Progress: prog(3e6, 3e6)},
		{Arm: "tdma", Run: 3, CompletionS: 1.1, IdealS: 1, Progress: prog(3e6, 3e6)},
		{Arm: "tcp", Run: 1, CompletionS: 1.3, IdealS: 1, Progress: prog(2e6, 3e6)},
	}
	if r, ok := medianRun(runs, "tdma"); !ok || r.Run != 3 {
		t.Errorf("median run %d, want 3", r.Run)
	}
	if _, ok := medianRun(runs, "none"); ok {
		t.Error("a median run of an arm without runs")
	}
	dir := t.TempDir()
	res := &TDMAShuffleResult{Config: TDMAShuffleConfig{Size: 3e6}, Runs: runs}
	b := written(t, 4, filepath.Join(dir, "progress.csv"))(WriteTDMAShuffle(dir, res))
	if strings.Count(string(b), "\n") != 1+4*2*11 || !strings.Contains(string(b), "tcp,1,h1,0.5000,1000000") {
		t.Errorf("progress.csv:\n%s", b)
	}
	if PlotShuffleProgress(filepath.Join(dir, "x.png"), []ShuffleArm{{Arm: "tcp"}}, 1) == nil {
		t.Error("a plot without progress")
	}
}

// written checks that a writer wrote n files without error (the PNGs among
// them not empty) and returns the content of the file csv.
func written(t *testing.T, n int, csv string) func([]string, error) []byte {
	return func(paths []string, err error) []byte {
		t.Helper()
		if err != nil || len(paths) != n {
			t.Fatalf("wrote %v: %v", paths, err)
		}
		for _, p := range paths {
			if st, err := os.Stat(p); err != nil || strings.HasSuffix(p, ".png") && st.Size() < 1000 {
				t.Errorf("%s: %v %v", p, st, err)
			}
		}
		b, err := os.ReadFile(csv)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}
