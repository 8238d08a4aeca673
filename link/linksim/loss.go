package linksim

import "math/rand/v2"

// LossModel is a simulated link's random loss: Drop decides, frame by frame
// on the simulator's clock, whether the frame sent at now is lost.
type LossModel interface {
	Drop(r *rand.Rand, now int64) bool
}

// Bernoulli drops each frame independently with probability P.
type Bernoulli struct{ P float64 }

// Drop implements LossModel.
func (b *Bernoulli) Drop(r *rand.Rand, now int64) bool { return r.Float64() < b.P }

// Bursty is a two-state (Gilbert) loss model: every frame sent while the
// channel is in the bad state is lost. The stationary loss rate is P and bad
// periods last MeanBurst steps on average (geometric).
//
// With Slot == 0 the channel steps once per frame (bursts of MeanBurst
// consecutive frames, whatever the time between them). With Slot > 0 it steps
// once per Slot nanoseconds, including while the direction is idle: bursts are
// periods of time, as for corruption on a real link, and frames far apart in
// time are lost independently. Set Slot to a frame's serialization time.
type Bursty struct {
	P         float64
	MeanBurst float64
	Slot      int64
	bad       bool
	last      int64
	started   bool
}

func (b *Bursty) step(r *rand.Rand) {
	pbg := 1 / b.MeanBurst
	pgb := b.P * pbg / (1 - b.P)
	if b.bad {
		b.bad = r.Float64() >= pbg
	} else {
		b.bad = r.Float64() < pgb
	}
}

// Drop implements LossModel.
func (b *Bursty) Drop(r *rand.Rand, now int64) bool {
	if b.Slot <= 0 {
		b.step(r)
		return b.bad
	}
	if !b.started {
		b.started, b.last = true, now
		b.step(r)
		return b.bad
	}
	k := (now - b.last) / b.Slot
	b.last += k * b.Slot
	if k > 64 {
		// The chain has mixed: draw from the stationary distribution.
		b.bad = r.Float64() < b.P
		return b.bad
	}
	for ; k > 0; k-- {
		b.step(r)
	}
	return b.bad
}
