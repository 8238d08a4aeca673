package experiment

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestFECResidualConfigRefuses(t *testing.T) {
	for _, c := range []FECResidualConfig{
		{Target: 2}, {Frames: 10}, {Copies: 99}, {MeanBurst: 0.5}, {MinLen: 10}, {Loss: []float64{0}}, {Loss: []float64{1.5}},
	} {
		if err := c.Normalize(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// A small run: every scheme appears, the loss equals the oracle, the JSON
// encodes (no infinities) and the table names the bursty penalty.
func TestFECResidualSimSmall(t *testing.T) {
	cfg := FECResidualConfig{Loss: []float64{1e-2, 5e-2}, Frames: 20000, Copies: 3, MeanBurst: 4, MaxLen: 200}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	res, err := FECResidualSim(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 1e-2: fec(4) and replicate; 5e-2: replicate only; both models.
	if len(res.Points) != 6 {
		t.Fatalf("%d points, want 6", len(res.Points))
	}
	if !res.Summary.LostIsOracle || res.Summary.Corrupt != 0 || !res.Summary.OverheadWithin10 {
		t.Errorf("summary %+v", res.Summary)
	}
	if res.Summary.BurstyWorst < 2 {
		t.Errorf("bursty worst ratio %.2f: bursts should defeat parity", res.Summary.BurstyWorst)
	}
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
	if txt := res.Text(); !strings.Contains(txt, "fec(4)") || !strings.Contains(txt, "replicate×3") {
		t.Errorf("table:\n%s", txt)
	}
}
