package fecsim

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// everyKth drops wire frame i when i % k == pos: with k = n+1 and no
// replication, exactly one frame of every group (data or parity).
type everyKth struct{ i, k, pos int }

func (e *everyKth) Drop(*rand.Rand, int64) bool {
	d := e.i%e.k == e.pos
	e.i++
	return d
}

func clean(t *testing.T, name string, r *Result) {
	t.Helper()
	if r.Corrupt != 0 || r.Duplicates != 0 || r.Leaked != 0 || len(r.PoolErrors) != 0 {
		t.Fatalf("%s: corrupt %d duplicates %d leaked %d pool errors %v", name, r.Corrupt, r.Duplicates, r.Leaked, r.PoolErrors)
	}
}

// Any single loss per group is recovered, at every position of the group
// (each data frame and the parity), in both delivery modes, with frame
// lengths that differ within each group, across the sequence wrap.
func TestSingleLossEveryPosition(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 14, 44} {
		for pos := 0; pos <= n; pos++ {
			for _, imm := range []bool{false, true} {
				const groups = 12
				res, err := Run(Config{
					Frames: groups * n, N: n, Seed: uint64(n*100 + pos), Immediate: imm,
					MinLen: 60, MaxLen: 1514, InitSeq: seqhdr.Space - 3*seqhdr.Seq(n),
					Loss: func() linksim.LossModel { return &everyKth{k: n + 1, pos: pos} },
				})
				if err != nil {
					t.Fatal(err)
				}
				clean(t, "single loss", res)
				if res.WireDropped != groups || res.Lost != 0 || res.Delivered != uint64(groups*n) {
					t.Fatalf("n %d, position %d, immediate %v: dropped %d, lost %d, delivered %d of %d",
						n, pos, imm, res.WireDropped, res.Lost, res.Delivered, groups*n)
				}
				want := uint64(groups)
				if pos == n {
					want = 0 // the parity was lost: nothing to recover
				}
				if res.Receiver.Recovered != want || (!imm && res.OutOfOrder != 0) {
					t.Fatalf("n %d, position %d, immediate %v: recovered %d (want %d), out of order %d",
						n, pos, imm, res.Receiver.Recovered, want, res.OutOfOrder)
				}
			}
		}
	}
}

// Under random loss the receiver loses exactly what the drops force it to
// (the oracle), no more, no less: Bernoulli and bursty, in order and
// immediate, parity and replication, across two wraps of the sequence space.
func TestLossEqualsOracle(t *testing.T) {
	cases := []struct {
		name   string
		n, k   int
		imm    bool
		frames int
		loss   func() linksim.LossModel
	}{
		{"bernoulli 1e-2 n4", 4, 1, false, 40_000, func() linksim.LossModel { return &linksim.Bernoulli{P: 1e-2} }},
		{"bernoulli 5e-2 n8 immediate", 8, 1, true, 20_000, func() linksim.LossModel { return &linksim.Bernoulli{P: 5e-2} }},
		{"bursty 1e-2 burst 3 n14", 14, 1, false, 40_000, func() linksim.LossModel { return &linksim.Bursty{P: 1e-2, MeanBurst: 3} }},
		{"replicate ×3 at 5e-2", 0, 3, false, 20_000, func() linksim.LossModel { return &linksim.Bernoulli{P: 5e-2} }},
		{"replicate ×2 with n4 at 3e-2", 4, 2, true, 20_000, func() linksim.LossModel { return &linksim.Bernoulli{P: 3e-2} }},
		{"wrap twice n4 at 1e-3", 4, 1, false, 2*seqhdr.Space + 1000, func() linksim.LossModel { return &linksim.Bernoulli{P: 1e-3} }},
	}
	for _, c := range cases {
		res, err := Run(Config{Frames: c.frames, N: c.n, Copies: c.k, Immediate: c.imm, Seed: 3, MaxLen: 300, Loss: c.loss})
		if err != nil {
			t.Fatal(err)
		}
		clean(t, c.name, res)
		if res.WireDropped == 0 || res.Lost != res.OracleLost || res.GroupsFail != res.OracleGroupsFail {
			t.Errorf("%s: dropped %d, lost %d, oracle %d; groups failed %d, oracle %d",
				c.name, res.WireDropped, res.Lost, res.OracleLost, res.GroupsFail, res.OracleGroupsFail)
		}
		if !c.imm && res.OutOfOrder != 0 {
			t.Errorf("%s: %d out of order in order mode", c.name, res.OutOfOrder)
		}
	}
}

// The residual loss under Bernoulli loss matches the formulas, with n from
// RAIL's rule for a 0.1 % target. A group fails with probability GroupFail
// independently of the others, so failed groups are binomial: the test
// accepts 5 standard deviations (a correct receiver fails it once in 1.7
// million runs, whatever the seed). Each p gets frames for 30 expected
// failed groups, to stay fast; 'linkfabric fec residual --sim' checks the
// factor of 2 at 10^6 frames. That the receiver recovers exactly what the
// drops allow is TestLossEqualsOracle's job; this one checks the formulas
// and the loss model against each other. The host frames' loss is checked
// against Residual with a bound on the variance of a sum over groups (a
// failed group loses one or two frames, rarely more).
func TestResidualMatchesFormula(t *testing.T) {
	for _, p := range []float64{1e-3, 3e-3, 1e-2, 3e-2} {
		n := fec.GroupSize(p, 1e-3)
		gf := fec.GroupFail(n, p)
		groups := int(math.Ceil(30 / gf))
		res, err := Run(Config{Frames: groups * n, N: n, Seed: 11, MinLen: 60, MaxLen: 128,
			Loss: func() linksim.LossModel { return &linksim.Bernoulli{P: p} }})
		if err != nil {
			t.Fatal(err)
		}
		clean(t, "residual", res)
		mean := float64(res.Groups) * gf
		sd := math.Sqrt(mean * (1 - gf))
		if got := float64(res.GroupsFail); math.Abs(got-mean) > 5*sd {
			t.Errorf("p %g n %d: %v groups failed, expected %.1f ± %.1f (GroupFail %.3g)", p, n, got, mean, 5*sd, gf)
		}
		// A failed group loses 1..n host frames: var ≤ groups·E[L²].
		rm := float64(res.Frames) * fec.Residual(n, p)
		rsd := math.Sqrt(float64(res.Groups) * gf * 4)
		if got := float64(res.Lost); math.Abs(got-rm) > 5*rsd+1 {
			t.Errorf("p %g n %d: %v frames lost, expected %.1f ± %.1f (Residual %.3g)", p, n, got, rm, 5*rsd, fec.Residual(n, p))
		}
		t.Logf("p %g n %d: %d groups failed (expected %.1f), %d frames lost (expected %.1f)", p, n, res.GroupsFail, mean, res.Lost, rm)
	}
}

// Bursty loss defeats XOR parity: at the same mean loss the residual is far
// above the Bernoulli formula (the table shows it; the policy uses lg there).
func TestBurstyIsWorse(t *testing.T) {
	p, n := 1e-2, fec.GroupSize(1e-2, 1e-3)
	res, err := Run(Config{Frames: 200_000, N: n, Seed: 5, MaxLen: 128,
		Loss: func() linksim.LossModel { return &linksim.Bursty{P: p, MeanBurst: 4} }})
	if err != nil {
		t.Fatal(err)
	}
	clean(t, "bursty", res)
	if r, f := res.Residual(), fec.Residual(n, p); r < 5*f {
		t.Errorf("bursty residual %.3g is not well above the Bernoulli formula %.3g", r, f)
	}
}

// Wire overhead with fixed-length frames is 1/n of a frame plus headers:
// per group n data headers and a parity of ParityOffset + the frame.
func TestOverhead(t *testing.T) {
	const L = 1000
	for _, n := range []int{1, 4, 14, 44} {
		res, err := Run(Config{Frames: 100 * n, N: n, MinLen: L, MaxLen: L})
		if err != nil {
			t.Fatal(err)
		}
		want := PredictOverhead(n, 1, L, L)
		if got := res.Overhead(); math.Abs(got-want) > 0.1*want {
			t.Errorf("n %d: overhead %.4f, predicted %.4f (1/n %.4f)", n, got, want, 1/float64(n))
		}
		if want < 1/float64(n) || want > 1/float64(n)*1.1+float64(seqhdr.MaxOverhead+fec.ParityOffset)/L {
			t.Errorf("n %d: predicted %.4f is not 1/n plus headers", n, want)
		}
	}
}

func TestRunRefuses(t *testing.T) {
	for _, c := range []Config{{}, {Frames: 10, MinLen: 10}, {Frames: 10, MaxLen: 2000}, {Frames: 10, N: -1}} {
		if _, err := Run(c); err == nil {
			t.Errorf("Run(%+v) accepted", c)
		}
	}
}
