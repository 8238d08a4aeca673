package bpf

import (
	"errors"
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/internal/enum"
)

// Model is a loss model of the impairment stage.
type Model uint32

const (
	// Bernoulli drops every frame independently with probability Loss.
	Bernoulli Model = 0
	// GilbertElliott is the two-state (Good/Bad) bursty loss model with the
	// parameters in ImpairConfig.GE.
	GilbertElliott Model = 1
)

var modelNames = [...]string{Bernoulli: "bernoulli", GilbertElliott: "gilbert-elliott"}

func (m Model) String() string { return enum.Name(m, "model", modelNames[:]) }

// GEParams are the parameters of a Gilbert-Elliott chain. On every frame the
// chain's current state decides the frame's fate (dropped with LossGood or
// LossBad), then the chain makes one transition: Good->Bad with PGoodBad,
// Bad->Good with PBadGood. Every CPU runs its own chain, starting in Good.
type GEParams struct {
	PGoodBad float64 // p(G->B) per frame
	PBadGood float64 // p(B->G) per frame
	LossGood float64 // drop probability in Good
	LossBad  float64 // drop probability in Bad
}

// ImpairConfig is what the impairment stage does to received frames.
// Probabilities are quantised to u32 thresholds (p * 2^32) in the kernel;
// a probability of 1 is exact.
type ImpairConfig struct {
	Model Model
	// Loss is the per-frame drop probability of the Bernoulli model. It is
	// ignored by the Gilbert-Elliott model (see GE and ExpectedLoss).
	Loss float64
	// GE holds the Gilbert-Elliott parameters; used when Model is GilbertElliott.
	GE GEParams
	// FlipProb is the probability that a frame that is not dropped gets one
	// uniformly chosen bit flipped in the bytes after its Ethernet header.
	// Such a frame is still passed on, so higher layers see the corruption.
	FlipProb float64
	// Seed seeds the per-CPU PRNGs (each CPU uses seed mixed with its CPU
	// id). Each SetImpair reseeds, so the same seed on the same CPU repeats
	// the same drop pattern.
	Seed uint64
}

// Loss returns the impairment for an average loss rate: Bernoulli, or with
// meanBurst > 0 (and loss > 0) the bursty model of Bursty with that mean burst
// length; seeded with seed. Validate the result.
func Loss(loss, meanBurst float64, seed uint64) ImpairConfig {
	c := ImpairConfig{Model: Bernoulli, Loss: loss}
	if meanBurst > 0 && loss > 0 {
		c = Bursty(loss, meanBurst)
	}
	c.Seed = seed
	return c
}

// Bursty returns the simple Gilbert model with the given average loss rate and
// mean loss-burst length (in frames): Good never drops, Bad always drops,
// p(B->G) = 1/meanBurst and p(G->B) = loss/(1-loss) * p(B->G), so the
// stationary loss rate is loss and bursts are geometric with mean meanBurst.
// Invalid arguments (loss outside [0,1), meanBurst < 1) give a config that
// fails Validate.
func Bursty(loss, meanBurst float64) ImpairConfig {
	c := ImpairConfig{Model: GilbertElliott, GE: GEParams{LossGood: 0, LossBad: 1}}
	if meanBurst > 0 {
		c.GE.PBadGood = 1 / meanBurst
	} else {
		c.GE.PBadGood = math.NaN()
	}
	if loss < 1 {
		c.GE.PGoodBad = loss / (1 - loss) * c.GE.PBadGood
	} else {
		c.GE.PGoodBad = math.NaN()
	}
	return c
}

func checkProb(name string, p float64) error {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return fmt.Errorf("impairment: %s = %v is not a probability in [0, 1]", name, p)
	}
	return nil
}

// Validate reports the first problem with the configuration.
func (c ImpairConfig) Validate() error {
	switch c.Model {
	case Bernoulli:
		if err := checkProb("loss", c.Loss); err != nil {
			return err
		}
	case GilbertElliott:
		for _, f := range []struct {
			n string
			p float64
		}{{"p(G->B)", c.GE.PGoodBad}, {"p(B->G)", c.GE.PBadGood}, {"loss in Good", c.GE.LossGood}, {"loss in Bad", c.GE.LossBad}} {
			if err := checkProb(f.n, f.p); err != nil {
				if math.IsNaN(f.p) {
					return fmt.Errorf("%w (Bursty needs 0 <= loss < 1 and mean burst >= 1, and p(G->B) = loss/(1-loss)/meanBurst must not exceed 1)", err)
				}
				return err
			}
		}
		if c.GE.PBadGood == 0 && c.GE.PGoodBad > 0 {
			return errors.New("impairment: p(B->G) = 0 with p(G->B) > 0 makes Bad absorbing: the link would end up with loss in Bad forever")
		}
	default:
		return fmt.Errorf("impairment: unknown model %d (want Bernoulli or GilbertElliott)", uint32(c.Model))
	}
	if c.Loss != 0 && c.Model != Bernoulli {
		return fmt.Errorf("impairment: Loss = %v is only used by the Bernoulli model; the %v loss comes from GE (use Bursty(loss, meanBurst) for a bursty link)", c.Loss, c.Model)
	}
	return checkProb("flip probability", c.FlipProb)
}

// chain returns the configuration as a Gilbert-Elliott chain (Bernoulli is the
// chain that stays in Good).
func (c ImpairConfig) chain() GEParams {
	if c.Model == Bernoulli {
		return GEParams{LossGood: c.Loss, LossBad: c.Loss}
	}
	return c.GE
}

// ExpectedLoss is the stationary per-frame drop probability.
func (c ImpairConfig) ExpectedLoss() float64 {
	g := c.chain()
	pb := piBad(g)
	return (1-pb)*g.LossGood + pb*g.LossBad
}

// ExpectedMeanBurst is the expected length of a run of consecutive drops
// (as counted by ImpairStats.Bursts on one CPU). It is NaN when nothing is
// ever dropped.
func (c ImpairConfig) ExpectedMeanBurst() float64 {
	g := c.chain()
	pb := piBad(g)
	pi := [2]float64{1 - pb, pb}
	h := [2]float64{g.LossGood, g.LossBad}
	t := [2][2]float64{{1 - g.PGoodBad, g.PGoodBad}, {g.PBadGood, 1 - g.PBadGood}}
	// P(frame n-1 kept, frame n dropped); the drop decision and the
	// transition use independent random bits.
	start := 0.0
	for s := 0; s < 2; s++ {
		for s2 := 0; s2 < 2; s2++ {
			start += pi[s] * (1 - h[s]) * t[s][s2] * h[s2]
		}
	}
	loss := c.ExpectedLoss()
	if loss == 0 || start == 0 {
		return math.NaN()
	}
	return loss / start
}

func piBad(g GEParams) float64 {
	if g.PGoodBad+g.PBadGood == 0 {
		return 0 // starts in Good and never leaves
	}
	return g.PGoodBad / (g.PGoodBad + g.PBadGood)
}

func (c ImpairConfig) String() string {
	var s string
	switch c.Model {
	case Bernoulli:
		s = fmt.Sprintf("bernoulli loss=%g", c.Loss)
	case GilbertElliott:
		s = fmt.Sprintf("gilbert-elliott p(G->B)=%g p(B->G)=%g loss(G)=%g loss(B)=%g (loss=%.3g mean burst=%.3g)",
			c.GE.PGoodBad, c.GE.PBadGood, c.GE.LossGood, c.GE.LossBad, c.ExpectedLoss(), c.ExpectedMeanBurst())
	default:
		s = c.Model.String()
	}
	if c.FlipProb > 0 {
		s += fmt.Sprintf(" flip=%g", c.FlipProb)
	}
	return s + fmt.Sprintf(" seed=%d", c.Seed)
}

// threshold converts a probability to the kernel's u32 threshold;
// 0xffffffff means "always".
func threshold(p float64) uint32 {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return math.MaxUint32
	}
	t := math.Round(p * (1 << 32))
	if t >= math.MaxUint32 {
		return math.MaxUint32 - 1
	}
	return uint32(t)
}

func probability(t uint32) float64 {
	if t == math.MaxUint32 {
		return 1
	}
	return float64(t) / (1 << 32)
}

func (c ImpairConfig) encode(generation uint64) impairerImpairConfig {
	g := c.chain()
	return impairerImpairConfig{
		Enabled:    1,
		Model:      uint32(c.Model),
		LossGood:   threshold(g.LossGood),
		LossBad:    threshold(g.LossBad),
		P_gb:       threshold(g.PGoodBad),
		P_bg:       threshold(g.PBadGood),
		Flip:       threshold(c.FlipProb),
		Seed:       c.Seed,
		Generation: generation,
	}
}

func decodeConfig(k impairerImpairConfig) ImpairConfig {
	c := ImpairConfig{Model: Model(k.Model), FlipProb: probability(k.Flip), Seed: k.Seed}
	if c.Model == Bernoulli {
		c.Loss = probability(k.LossGood)
	} else {
		c.GE = GEParams{
			PGoodBad: probability(k.P_gb),
			PBadGood: probability(k.P_bg),
			LossGood: probability(k.LossGood),
			LossBad:  probability(k.LossBad),
		}
	}
	return c
}

// ImpairStats are the impairment stage's counters, summed over CPUs. They
// count only while the stage is enabled.
type ImpairStats struct {
	Seen    uint64 // frames that went through the stage
	Dropped uint64 // frames dropped
	Flipped uint64 // frames with one bit flipped
	Bursts  uint64 // runs of consecutive drops (counted per CPU)
}

// LossRate is Dropped/Seen (NaN before any frame).
func (s ImpairStats) LossRate() float64 { return ratio(s.Dropped, s.Seen) }

// FlipRate is Flipped/Seen (NaN before any frame).
func (s ImpairStats) FlipRate() float64 { return ratio(s.Flipped, s.Seen) }

// MeanBurst is the mean length of a loss burst, Dropped/Bursts (NaN before
// any drop).
func (s ImpairStats) MeanBurst() float64 { return ratio(s.Dropped, s.Bursts) }

// Sub returns the counts accumulated since an earlier reading.
func (s ImpairStats) Sub(earlier ImpairStats) ImpairStats {
	return ImpairStats{
		Seen:    s.Seen - earlier.Seen,
		Dropped: s.Dropped - earlier.Dropped,
		Flipped: s.Flipped - earlier.Flipped,
		Bursts:  s.Bursts - earlier.Bursts,
	}
}

func (s ImpairStats) String() string {
	return fmt.Sprintf("seen=%d dropped=%d (%.3g) flipped=%d bursts=%d (mean %.3g)",
		s.Seen, s.Dropped, s.LossRate(), s.Flipped, s.Bursts, s.MeanBurst())
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// impairControl is the handle on one loaded copy of the impairment maps. It is
// embedded in Port and Impairer, so both have these methods.
type impairControl struct {
	cfg   *ebpf.Map // impair_cfg
	rng   *ebpf.Map // impair_rng
	count *ebpf.Map // impair_count
}

// SetImpair validates cfg and makes it the configuration of the impairment
// stage, enabling it. It takes effect on the next frame; every CPU reseeds
// its PRNG from cfg.Seed and restarts its chain in Good.
func (c *impairControl) SetImpair(cfg ImpairConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	gen, err := c.generation()
	if err != nil {
		return err
	}
	k := cfg.encode(gen + 1)
	if err := c.cfg.Put(uint32(0), &k); err != nil {
		return fmt.Errorf("write impairment config: %w", err)
	}
	return nil
}

// ClearImpair disables the impairment stage: frames pass it untouched and
// uncounted. The counters keep their values.
func (c *impairControl) ClearImpair() error {
	gen, err := c.generation()
	if err != nil {
		return err
	}
	k := impairerImpairConfig{Generation: gen + 1}
	if err := c.cfg.Put(uint32(0), &k); err != nil {
		return fmt.Errorf("write impairment config: %w", err)
	}
	return nil
}

// ImpairConfig reads back the configuration in force (probabilities as
// quantised by the kernel thresholds) and whether the stage is enabled.
func (c *impairControl) ImpairConfig() (cfg ImpairConfig, enabled bool, err error) {
	var k impairerImpairConfig
	if err := c.cfg.Lookup(uint32(0), &k); err != nil {
		return ImpairConfig{}, false, fmt.Errorf("read impairment config: %w", err)
	}
	return decodeConfig(k), k.Enabled != 0, nil
}

// ImpairStats sums the impairment counters over all CPUs.
func (c *impairControl) ImpairStats() (ImpairStats, error) {
	s, err := sumPerCPU[ImpairStats, impairerImpairStats](c.count)
	if err != nil {
		return ImpairStats{}, fmt.Errorf("read impairment counters: %w", err)
	}
	return s, nil
}

// ResetImpairStats zeroes the impairment counters. Frames counted
// concurrently on other CPUs may be lost from the new totals; prefer
// ImpairStats.Sub for measurements while traffic flows.
func (c *impairControl) ResetImpairStats() error {
	zero := make([]impairerImpairStats, ebpf.MustPossibleCPU())
	if err := c.count.Put(uint32(0), zero); err != nil {
		return fmt.Errorf("reset impairment counters: %w", err)
	}
	return nil
}

func (c *impairControl) generation() (uint64, error) {
	var k impairerImpairConfig
	if err := c.cfg.Lookup(uint32(0), &k); err != nil {
		return 0, fmt.Errorf("read impairment config: %w", err)
	}
	return k.Generation, nil
}
