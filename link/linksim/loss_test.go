package linksim

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestLossModelRates(t *testing.T) {
	const n = 1_000_000
	for _, m := range []struct {
		name  string
		model LossModel
		burst float64
	}{
		{"bernoulli", &Bernoulli{P: 0.01}, 1},
		{"bursty", &Bursty{P: 0.01, MeanBurst: 3}, 3},
		{"bursty-time", &Bursty{P: 0.01, MeanBurst: 3, Slot: 100}, 3},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		lost, bursts, run := 0, 0, 0
		for i := range n {
			if m.model.Drop(r, int64(i)*100) {
				lost++
				run++
			} else if run > 0 {
				bursts++
				run = 0
			}
		}
		rate, mean := float64(lost)/n, float64(lost)/float64(bursts)
		if math.Abs(rate-0.01) > 0.001 || math.Abs(mean-m.burst) > 0.1*m.burst {
			t.Errorf("%s: loss rate %.4f mean burst %.2f", m.name, rate, mean)
		}
	}
}
