package fec

import (
	"errors"
	"fmt"
	"math"
)

// ErrInvalidLinkTable is wrapped by LinkTable.Validate errors.
var ErrInvalidLinkTable = errors.New("fec: invalid link table")

// Action is the protection a link policy chooses for a link.
type Action uint8

// Actions, from least to most drastic.
const (
	ActNone      Action = iota // unprotected (sequenced so that loss stays measured)
	ActFEC                     // XOR parity after every N data frames (package fec)
	ActReplicate               // every frame sent Copies times (package fec)
	ActLG                      // LinkGuardian retransmission
	ActExclude                 // take the link out of service
	numActions
)

var actionNames = [numActions]string{"none", "fec", "replicate", "lg", "exclude"}

func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// LinkChoice is a policy's decision for one link.
type LinkChoice struct {
	Action Action `json:"action"`
	N      int    `json:"n,omitempty"`      // ActFEC: data frames per parity
	Copies int    `json:"copies,omitempty"` // ActReplicate: transmissions per frame
}

func (c LinkChoice) String() string {
	switch c.Action {
	case ActFEC:
		return fmt.Sprintf("fec(%d)", c.N)
	case ActReplicate:
		return fmt.Sprintf("replicate×%d", c.Copies)
	}
	return c.Action.String()
}

// LinkRow is one loss band of a LinkTable: it applies to loss rates below
// Below and at or above the previous row's Below.
type LinkRow struct {
	Below  float64 `json:"below"`  // upper bound of the band (the last row: +Inf)
	Action Action  `json:"action"` // for independent loss
	Bursty Action  `json:"bursty"` // for bursty loss (mean loss run ≥ BurstOn)
	// Copies for ActReplicate; 0: the fewest copies c with rate^c below
	// the target.
	Copies int    `json:"copies,omitempty"`
	Source string `json:"source"` // where the numbers come from
}

// LinkTable maps a link's measured loss rate and burstiness to a LinkChoice
// for an operator's target residual loss, with hysteresis: the rows are the
// measured table behind the policy ('linkfabric fec table' fills them in;
// DefaultLinkTable is RAIL's published rule).
type LinkTable struct {
	Target float64   `json:"target"` // residual loss the hosts may see (RAIL: 1e-3 for TCP)
	Rows   []LinkRow `json:"rows"`
	// A link is bursty from a mean loss run of BurstOn consecutive frames,
	// and independent again below BurstOff.
	BurstOn  float64 `json:"burst_on"`
	BurstOff float64 `json:"burst_off"`
	// Margin is the hysteresis: a link moves to a lower row only when its
	// rate is below that row's bound by this fraction, and FEC's n grows
	// only when the rate is this fraction below what the larger n needs.
	Margin float64 `json:"margin"`
	// Dwell (ns, DecideAt) is the least time a choice holds before a
	// weaker one replaces it; a stronger one comes at once. A rate
	// measured from a few tens of losses in a window is noisy beyond any
	// margin: at p = 10⁻³ over 5·10⁴ frames (±14 %) the margin alone let
	// fec residual's policy change 4–11 times in 4 s.
	Dwell int64 `json:"dwell_ns,omitempty"`
}

// DefaultLinkTable is RAIL's rule for target t (NSDI'17), with LinkGuardian
// for bursty loss, where XOR parity recovers only one loss per group.
// t must be below 3 %.
func DefaultLinkTable(t float64) LinkTable {
	return LinkTable{
		Target: t,
		Rows: []LinkRow{
			{Below: t, Action: ActNone, Bursty: ActNone,
				Source: "RAIL §5.3: no coding where p < t"},
			{Below: 3e-2, Action: ActFEC, Bursty: ActLG,
				Source: "RAIL §7.3: XOR parity for 0.1–3 %, n by §5.3's formula; bursty: lg, as fec residual --sim shows XOR's residual far above the formula under Gilbert loss"},
			{Below: 1e-1, Action: ActReplicate, Bursty: ActLG, Copies: 3,
				Source: "RAIL §7.3: every frame three times for 3–10 %; bursty: lg (back-to-back copies fall in the same burst)"},
			{Below: 0.25, Action: ActLG, Bursty: ActLG,
				Source: "fec table (docs/results.md): at 10 % and 20 %, Bernoulli and bursty(3), lg lost 0 of 3·10⁴ datagrams at 1.7–2.7× the host bytes, where replication ×3 left 1.2·10⁻³–9·10⁻² and parity no n; RAIL §5.4 switches such links off"},
			{Below: math.Inf(1), Action: ActExclude, Bursty: ActExclude,
				Source: "RAIL §5.4: links above 10 % are switched off; above 20 % nothing was measured to meet a target"},
		},
		// Bernoulli loss at p ≤ 10 % has mean run 1/(1−p) ≤ 1.11: 1.5
		// separates it from Gilbert loss with mean bursts of 2 or more.
		// This project's choice, until 'fec table' measures it.
		BurstOn:  1.5,
		BurstOff: 1.25,
		Margin:   0.2, // this project's choice: 20 % of a rate is well above a window's noise at 10^5 frames
	}
}

// Validate reports a table Decide cannot use.
func (t LinkTable) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidLinkTable}, args...)...)
	}
	switch {
	case !(t.Target > 0 && t.Target < 1):
		return bad("target %g must be in (0, 1)", t.Target)
	case len(t.Rows) == 0:
		return bad("no rows")
	case !math.IsInf(t.Rows[len(t.Rows)-1].Below, 1):
		return bad("the last row must reach +Inf (every rate needs a row)")
	case !(t.BurstOff > 0 && t.BurstOff <= t.BurstOn):
		return bad("BurstOff %g must be in (0, BurstOn %g]", t.BurstOff, t.BurstOn)
	case !(t.Margin >= 0 && t.Margin < 1):
		return bad("margin %g must be in [0, 1)", t.Margin)
	case t.Dwell < 0:
		return bad("dwell %d must be ≥ 0", t.Dwell)
	}
	prev := 0.0
	for i, r := range t.Rows {
		if !(r.Below > prev) {
			return bad("row %d: bound %g must be above the previous row's %g", i, r.Below, prev)
		}
		if r.Action >= numActions || r.Bursty >= numActions {
			return bad("row %d: unknown action", i)
		}
		if r.Copies < 0 || r.Copies > MaxCopies {
			return bad("row %d: copies %d must be 0 (from the target) to %d", i, r.Copies, MaxCopies)
		}
		prev = r.Below
	}
	return nil
}

// LinkState is a link's place in the table: the state Decide's hysteresis
// needs. The zero LinkState is row 0, independent loss, no protection.
type LinkState struct {
	Row    int        `json:"row"`
	Bursty bool       `json:"bursty"`
	Choice LinkChoice `json:"choice"`
	// Since is when Choice was made (DecideAt).
	Since int64 `json:"since_ns,omitempty"`
}

// DecideAt is Decide at time now with the table's Dwell: a weaker choice
// than the current one waits until the current one has held for Dwell (the
// state then stays as it is); a stronger one is taken at once. Since
// records when the choice changed.
func (t LinkTable) DecideAt(now int64, rate, burst float64, cur LinkState) LinkState {
	next := t.Decide(rate, burst, cur)
	if next.Choice == cur.Choice {
		next.Since = cur.Since
		return next
	}
	if next.Choice.strength() < cur.Choice.strength() && now-cur.Since < t.Dwell {
		return cur
	}
	next.Since = now
	return next
}

// strength orders choices by the loss they stand: none, parity (shorter
// groups stronger: 1/n), replication (copies − 1), then lg and exclusion.
func (c LinkChoice) strength() float64 {
	switch c.Action {
	case ActFEC:
		return 1 / float64(max(c.N, 1))
	case ActReplicate:
		return float64(max(c.Copies, 2) - 1)
	case ActLG, ActExclude:
		return math.Inf(1)
	}
	return 0
}

// Decide returns the state for a measured loss rate and mean loss run
// (lost frames per run of consecutive losses; NaN or 0 when no run was
// seen) given the current state. A NaN rate (not enough frames measured)
// keeps the current state.
func (t LinkTable) Decide(rate, burst float64, cur LinkState) LinkState {
	if math.IsNaN(rate) {
		return cur
	}
	cur.Row = min(max(cur.Row, 0), len(t.Rows)-1)
	row := t.row(rate, 1)
	if row < cur.Row {
		// Down only past the lower row's bound less the margin.
		row = max(t.row(rate, 1-t.Margin), row)
		row = min(row, cur.Row)
	}
	next := LinkState{Row: row, Bursty: cur.Bursty}
	if burst > 0 { // NaN and 0: no run seen, keep
		if cur.Bursty {
			next.Bursty = burst >= t.BurstOff
		} else {
			next.Bursty = burst >= t.BurstOn
		}
	}
	r := t.Rows[row]
	act := r.Action
	if next.Bursty {
		act = r.Bursty
	}
	next.Choice = t.choice(act, r, rate, cur.Choice)
	return next
}

// row returns the first row whose bound, scaled by f, is above rate.
func (t LinkTable) row(rate, f float64) int {
	for i, r := range t.Rows {
		if rate < r.Below*f {
			return i
		}
	}
	return len(t.Rows) - 1
}

// choice fills in N or Copies for act at rate; FEC's n shrinks at once when
// the rate needs it and grows only past the margin.
func (t LinkTable) choice(act Action, r LinkRow, rate float64, cur LinkChoice) LinkChoice {
	switch act {
	case ActFEC:
		n := GroupSize(rate, t.Target)
		if n == 0 && rate < t.Target {
			n = MaxN // a band reaching below the target: the longest group
		}
		if n == 0 {
			// Parity cannot meet the target at this rate: replicate.
			return LinkChoice{Action: ActReplicate, Copies: t.copies(0, rate)}
		}
		if cur.Action == ActFEC && n > cur.N {
			grown := GroupSize(rate/(1-t.Margin), t.Target)
			n = max(cur.N, min(grown, n))
		}
		return LinkChoice{Action: ActFEC, N: n}
	case ActReplicate:
		return LinkChoice{Action: ActReplicate, Copies: t.copies(r.Copies, rate)}
	}
	return LinkChoice{Action: act}
}

// copies is c if set, else the fewest copies whose residual rate^k is below
// the target (at most MaxCopies).
func (t LinkTable) copies(c int, rate float64) int {
	if c > 0 {
		return c
	}
	for k := 2; k < MaxCopies; k++ {
		if ReplicaResidual(k, rate) < t.Target {
			return k
		}
	}
	return MaxCopies
}

// MeanBurst is the mean length of loss runs from a receiver's counters:
// numbers found missing over the runs they came in (ReceiverStats Gaps
// and Holes, over the same window as the rate). NaN when there was no run.
func MeanBurst(missing, runs uint64) float64 {
	if runs == 0 {
		return math.NaN()
	}
	return float64(missing) / float64(runs)
}
