package bpf

import (
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/internal/wanterr"
)

func TestBurstyParameters(t *testing.T) {
	c := Bursty(0.01, 3)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := c.GE.PBadGood; math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("p(B->G) = %v, want 1/3", got)
	}
	if got := c.ExpectedLoss(); math.Abs(got-0.01) > 1e-12 {
		t.Errorf("stationary loss = %v, want 0.01", got)
	}
	if got := c.ExpectedMeanBurst(); math.Abs(got-3) > 1e-9 {
		t.Errorf("mean burst = %v, want 3", got)
	}
	b := ImpairConfig{Loss: 0.2}
	if got := b.ExpectedMeanBurst(); math.Abs(got-1.25) > 1e-12 {
		t.Errorf("Bernoulli(0.2) mean burst = %v, want 1/(1-0.2)", got)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  ImpairConfig
		want string // "" = valid
	}{
		{ImpairConfig{}, ""},
		{ImpairConfig{Loss: 1}, ""},
		{ImpairConfig{Loss: 1.5}, "loss = 1.5 is not a probability"},
		{ImpairConfig{Loss: math.NaN()}, "not a probability"},
		{ImpairConfig{FlipProb: -0.1}, "flip probability"},
		{Bursty(0.01, 0.5), ""}, // p(B->G)=2 -> invalid
		{Bursty(1, 3), "Bursty needs"},
		{Bursty(0.9, 1), "p(G->B)"},
		{ImpairConfig{Model: GilbertElliott, GE: GEParams{PGoodBad: 0.1, LossBad: 1}}, "absorbing"},
		{ImpairConfig{Model: GilbertElliott, Loss: 0.1}, "only used by the Bernoulli"},
		{ImpairConfig{Model: 7}, "unknown model"},
	} {
		err := tc.cfg.Validate()
		if tc.cfg.Model == GilbertElliott && tc.cfg.GE.PBadGood > 1 {
			if err == nil {
				t.Errorf("%+v: valid, want error", tc.cfg)
			}
			continue
		}
		wanterr.Check(t, err, tc.want, "%+v", tc.cfg)
	}
}

func TestThresholdRoundTrip(t *testing.T) {
	for _, p := range []float64{0, 1e-9, 0.01, 0.5, 0.999999, 1} {
		got := probability(threshold(p))
		if math.Abs(got-p) > 1e-9 {
			t.Errorf("p=%v -> threshold %#x -> %v", p, threshold(p), got)
		}
	}
	if threshold(1) != math.MaxUint32 || threshold(0.9999999999999) == math.MaxUint32 {
		t.Error("only p=1 may map to the 'always' threshold")
	}
	c := Bursty(0.01, 3)
	c.FlipProb, c.Seed = 0.25, 99
	back := decodeConfig(c.encode(1))
	if back.Model != GilbertElliott || back.Seed != 99 || math.Abs(back.GE.PGoodBad-c.GE.PGoodBad) > 1e-9 || back.FlipProb != 0.25 || back.GE.LossBad != 1 {
		t.Errorf("round trip: %+v -> %+v", c, back)
	}
}
