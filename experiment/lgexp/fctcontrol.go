package lgexp

import (
	"context"
	"strings"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
)

// FCTControl is what both switches' dataplanes did while an arm's flows ran
// (differences of /stats.json taken before and after): the frames on the
// link per data frame, and the worker's sleeps and loop iterations.
type FCTControl struct {
	// DataFrames: lg and lgnb, data frames sequenced onto the link (both
	// directions, retransmitted copies not counted); forward, frames sent
	// on the link ports (the kernel fast path's included).
	DataFrames uint64 `json:"data_frames"`
	// ExplicitAcks (repeats included) and Dummies sent by both ends.
	ExplicitAcks uint64 `json:"explicit_acks"`
	Dummies      uint64 `json:"dummies"`
	// Wakeups counts the workers' poll(2) sleeps (each ends in a wakeup: a
	// frame or a timer), Loops their loop iterations; both switches.
	Wakeups uint64 `json:"wakeups"`
	Loops   uint64 `json:"loops"`
	// Per data frame: explicit ACKs and dummies; wakeups.
	ControlPerData float64 `json:"control_per_data"`
	WakeupsPerData float64 `json:"wakeups_per_data"`
}

// isLG reports whether an FCT arm runs LinkGuardian.
func isLG(arm string) bool { return strings.HasPrefix(arm, "lg") }

// fetchSwitches reads /stats.json of the dataplanes in sw1 and sw2.
func fetchSwitches(ctx context.Context, e *bed.Env, s *[2]bed.DPStats) error {
	for i, sw := range []string{"sw1", "sw2"} {
		if err := bed.FetchStats(ctx, e.NS(sw), &s[i]); err != nil {
			return err
		}
	}
	return nil
}

// controlDelta is what the two switches did between before and after.
func controlDelta(before, after *[2]bed.DPStats) FCTControl {
	var c FCTControl
	for i := range after {
		a, b := controlCounts(&after[i]), controlCounts(&before[i])
		c = c.plus(FCTControl{
			DataFrames:   a.DataFrames - b.DataFrames,
			ExplicitAcks: a.ExplicitAcks - b.ExplicitAcks,
			Dummies:      a.Dummies - b.Dummies,
			Wakeups:      a.Wakeups - b.Wakeups,
			Loops:        a.Loops - b.Loops,
		})
	}
	return c
}

// plus is the sum of c's and d's counts, with the per-data-frame rates of
// the sum.
func (c FCTControl) plus(d FCTControl) FCTControl {
	s := FCTControl{
		DataFrames:   c.DataFrames + d.DataFrames,
		ExplicitAcks: c.ExplicitAcks + d.ExplicitAcks,
		Dummies:      c.Dummies + d.Dummies,
		Wakeups:      c.Wakeups + d.Wakeups,
		Loops:        c.Loops + d.Loops,
	}
	s.ControlPerData = report.Ratio(float64(s.ExplicitAcks+s.Dummies), float64(s.DataFrames))
	s.WakeupsPerData = report.Ratio(float64(s.Wakeups), float64(s.DataFrames))
	return s
}

// controlCounts are one dataplane's totals (data frames as FCTControl counts them).
func controlCounts(s *bed.DPStats) FCTControl {
	c := FCTControl{Wakeups: s.Dataplane.Polls, Loops: s.Dataplane.Loops}
	l := s.LinkGuardian
	if l == nil {
		c.DataFrames = s.Dataplane.Link.TX.Frames
		return c
	}
	if s := l.Core.Sender; s != nil {
		c.DataFrames, c.Dummies = s.DataSent, s.DummiesSent
	}
	if r := l.Core.Receiver; r != nil {
		c.ExplicitAcks = r.ExplicitAcksSent
	}
	return c
}
