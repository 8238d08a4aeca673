package tdmasim

import (
	"fmt"
	"math"
	"time"

	"github.com/linkfabric/linkfabric/internal/scenario"
	"github.com/linkfabric/linkfabric/tdma/gate"
)

// The scenarios report figures in the simulators' common form (a value and the range it
// must fall in), so `linkfabric tdma sim` prints them like `cells sim`.

var nan = math.NaN()

// Scenarios lists the simulator's scenarios: what TDMA with leases must
// show, each a figure with the range it must fall in.
func Scenarios() []scenario.Scenario {
	return []scenario.Scenario{
		{Name: "shuffle", Brief: "4-host all-to-all, lease mode, measured delays: completion vs ideal, finish spread, empty switch", Run: Shuffle},
		{Name: "guard", Brief: "control jitter up to the guard less one frame (§3.8): switch backlog ≤ 1 frame, no collision", Run: GuardCovers},
		{Name: "jitter", Brief: "control jitter 2–3 × the guard: the gates close late grants' windows in time, the meetings left are laid on late grants", Run: JitterOverGuard},
		{Name: "ctlloss", Brief: "0 %, 1 %, 5 % control loss: paper mode overruns, lease and free-run do not", Run: CtlLoss},
		{Name: "freeze", Brief: "the FM stopped 100 ms: hosts silent within the lease, back within a round", Run: Freeze},
	}
}

// timed runs a scenario's body on its result (named, with the seed) and
// notes the wall time it took.
func timed(name string, seed uint64, body func(r *scenario.Result) error) (*scenario.Result, error) {
	start := time.Now()
	r := &scenario.Result{Scenario: name, Seed: seed}
	if err := body(r); err != nil {
		return nil, err
	}
	r.Wall = time.Since(start)
	return r, nil
}

func run(r *scenario.Result, c Config) (*Result, error) {
	res, err := Run(c)
	if err != nil {
		return nil, err
	}
	r.SimNs += res.SimNs
	r.Events += res.Events
	return res, nil
}

// frameTime is one full frame on the wire.
func frameTime(c Config) int64 {
	fill(&c)
	return int64(uint64(c.MTU+c.Overhead) * 8_000_000_000 / c.Rate)
}

// ctlAllowance is the bytes a control frame may add ahead of a data frame.
func ctlAllowance(c Config) float64 { return float64(60+c.Overhead) / float64(c.MTU) }

// Shuffle: the design's default profile. TDMA's exact cost is the guard
// share of each slot, ideal × L/(L−g) (≈ 1 + g/L to first order), plus up
// to one round and a slot for the last slot's remainder (the FM plans from
// reports a round or two old).
func Shuffle(seed uint64) (*scenario.Result, error) {
	return timed("shuffle", seed, func(r *scenario.Result) error {
		c := Default()
		c.Seed = seed
		res, err := run(r, c)
		if err != nil {
			return err
		}
		L, g := float64(c.Slot), float64(c.Guard)
		round := float64(res.RoundLen) / float64(res.Ideal)
		r.Add("completion_over_ideal", res.Ratio(), nan, L/(L-g)+round+L/float64(res.Ideal), "≤ L/(L−g) + one round and a slot (the guard's share of every slot, and the last round)")
		r.Add("paper_bound", 1+g/L+round, nan, nan, "1 + g/L + one round: the guard's first-order cost, for comparison")
		r.Add("finish_spread_ms", float64(res.Completion-res.FirstFinish)/1e6, nan, float64(res.RoundLen+c.Slot)/1e6, "last − first flow finish ≤ one round + one slot")
		r.Add("switch_drops", float64(res.Drops), 0, 0, "TDMA keeps switch buffers empty")
		r.Add("peak_backlog_frames", res.BacklogFrames(), nan, 1+ctlAllowance(c), "≤ one frame (+ a control frame) ahead of any data frame")
		r.Add("collisions", float64(res.Collisions), 0, 0, "no port ever holds two senders' data")
		r.Add("overrun_bytes", float64(res.OverrunBytes), 0, 0, "nothing sent past a slot's end plus guard")
		r.Add("ctl_overhead_pct", 100*res.Overhead(), nan, 0.2, "control bytes per host ÷ line rate ≤ 0.2 % (§6.5, design §4.9)")
		r.Add("unfinished_flows", float64(res.Unfinished), 0, 0, "every flow completes")
		return nil
	})
}

// GuardCovers: lease mode with control delay uniform over [min, min+J] for
// J up to g − one frame time (a grant may wait behind one data frame in the
// switch, so §3.8 sizes the guard for jitter plus one frame).
func GuardCovers(seed uint64) (*scenario.Result, error) {
	return timed("guard", seed, func(r *scenario.Result) error {
		c := Default()
		c.Seed, c.Shuffle = seed, 1<<20
		room := c.Guard - frameTime(c)
		for _, f := range []float64{0, 0.5, 1} {
			cc := c
			j := int64(f * float64(room))
			cc.CtlDelay = Uniform(9_000, 9_000+j)
			res, err := run(r, cc)
			if err != nil {
				return err
			}
			tag := fmt.Sprintf("j%dus", j/1000)
			r.Add(tag+"_peak_backlog_frames", res.BacklogFrames(), nan, 1+ctlAllowance(c), "≤ one frame (+ a control frame) ahead of any data frame")
			r.Add(tag+"_collisions", float64(res.Collisions), 0, 0, "senders never overlap at a port")
			r.Add(tag+"_overrun_bytes", float64(res.OverrunBytes), 0, 0, "nothing sent past a slot's end plus guard")
		}
		return nil
	})
}

// JitterOverGuard: the same with J = 2g and 3g: hosts' windows, anchored
// on grants delayed by more than the guard, would overlap their
// neighbours'. The gates close the window of a grant later than the
// fastest of their last ones by more than the guard by its slot's end
// plus the guard, so senders meet only while a gate has few grants to
// compare (the first rounds), and the receivers lay those meetings on late
// grants.
func JitterOverGuard(seed uint64) (*scenario.Result, error) {
	return timed("jitter", seed, func(r *scenario.Result) error {
		c := Default()
		c.Seed, c.Shuffle = seed, 1<<20
		for _, f := range []int64{2, 3} {
			cc := c
			cc.CtlDelay = Uniform(9_000, 9_000+f*c.Guard)
			res, err := run(r, cc)
			if err != nil {
				return err
			}
			tag := fmt.Sprintf("j%dg", f)
			r.Add(tag+"_collisions", float64(res.Collisions), nan, nan, "reported: jitter beyond the guard, senders meet while a gate has few grants to compare")
			r.Add(tag+"_peak_backlog_frames", res.BacklogFrames(), nan, nan, "reported")
			share := 1.0
			if n := res.Causes.Met(); n > 0 {
				share = float64(res.Causes[gate.GrantLate].Met) / float64(n)
			}
			r.Add(tag+"_met_on_grant_late", share, 0.9, 1, "the receivers lay the meetings they find on late grants (1 if none)")
			r.Add(tag+"_met_in_slot", float64(res.MetInSlot), 0, 0, "every meeting has a frame outside its slot")
		}
		return nil
	})
}

// CtlLossGuard is the guard of the ctlloss comparison: large enough for
// the paper's reactive gate (a pause acts after the control delay and the
// agent's wake-up, up to 260 + 300 µs with the measured models, plus a
// frame), so that paper mode is clean without loss and what differs is
// loss alone.
const CtlLossGuard = 700_000

// CtlLoss: paper, lease and free-run modes under control-frame loss.
func CtlLoss(seed uint64) (*scenario.Result, error) {
	return timed("ctlloss", seed, func(r *scenario.Result) error {
		var freeRun0 *Result
		for _, p := range []float64{0, 0.01, 0.05} {
			for _, m := range []gate.Discipline{gate.Paper, gate.Lease, gate.FreeRun} {
				c := Default()
				c.Seed, c.Mode, c.CtlLoss, c.Guard = seed, m, p, CtlLossGuard
				res, err := run(r, c)
				if err != nil {
					return err
				}
				tag := fmt.Sprintf("%s_p%g", m, p*100)
				lo, hi, why := 0.0, 0.0, "a lost frame never makes a host send outside its slot"
				if m == gate.Paper {
					if p == 0 {
						why = "the paper's gate with a guard that covers its reaction: clean without loss"
					} else {
						lo, hi, why = 1, nan, "a lost pause leaves a class open into the next slot"
					}
				}
				r.Add(tag+"_overrun_bytes", float64(res.OverrunBytes), lo, hi, why)
				if m != gate.Paper {
					r.Add(tag+"_collisions", float64(res.Collisions), 0, 0, "no collision")
					r.Add(tag+"_switch_drops", float64(res.Drops), 0, 0, "no switch drop")
				} else {
					r.Add(tag+"_collisions", float64(res.Collisions), nan, nan, "reported")
					r.Add(tag+"_switch_drops", float64(res.Drops), nan, nan, "reported")
				}
				r.Add(tag+"_unfinished_flows", float64(res.Unfinished), 0, 0, "every flow completes")
				if m == gate.FreeRun && p == 0 {
					freeRun0 = res
				}
				if m == gate.FreeRun && p > 0 {
					r.Add(tag+"_completion_over_ideal", res.Ratio(), nan, freeRun0.Ratio()+2*float64(res.RoundLen)/float64(res.Ideal),
						"a lost grant costs nothing while the lease holds: ≤ the loss-free run + two rounds (a host whose schedule was lost reports a round later)")
				} else {
					r.Add(tag+"_completion_over_ideal", res.Ratio(), nan, nan, "reported")
				}
			}
		}
		return nil
	})
}

// Freeze: the FM stops for 100 ms mid-shuffle (kill -STOP) in lease and
// free-run modes.
func Freeze(seed uint64) (*scenario.Result, error) {
	return timed("freeze", seed, func(r *scenario.Result) error {
		for _, m := range []gate.Discipline{gate.Lease, gate.FreeRun} {
			c := Default()
			c.Seed, c.Mode, c.Shuffle = seed, m, 1<<20
			c.FreezeAt, c.FreezeFor = 100_000_000+c.Slot/3, 100_000_000
			res, err := run(r, c)
			if err != nil {
				return err
			}
			lease := int64(1)
			if m == gate.FreeRun {
				lease += int64(c.LeaseSlots)
			}
			tag := m.String()
			r.Add(tag+"_silent_after_ms", float64(res.SilentAfterFreeze)/1e6, nan, float64(lease*c.Slot)/1e6, "last byte sent after the freeze ≤ the lease (its slot + LeaseSlots in free-run)")
			r.Add(tag+"_resume_after_ms", float64(res.ResumeAfterThaw)/1e6, 0, float64(res.RoundLen)/1e6, "traffic again within one round of the thaw")
			r.Add(tag+"_overrun_bytes", float64(res.OverrunBytes), 0, 0, "no overrun")
			r.Add(tag+"_collisions", float64(res.Collisions), 0, 0, "no collision")
		}
		return nil
	})
}
