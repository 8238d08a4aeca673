package sched

import (
	"cmp"
	"math"
	"slices"
)

// Planner turns the hosts' demand reports into rounds as the fabric manager
// does, so that the pairs of a bulk transfer end together.
//
// A host reports when a round's schedule reaches it, which is as the round
// before that one starts, and (a raw sender near its end: NearTail) at
// each slot's grant, so a report is a slot to two rounds old when it is
// used (rounds are planned one ahead). What every round planned since will have carried after the
// report came (each slot's open part, pro rata) is taken off, at what a
// slot of that sender carries, which the Planner learns from the reports
// themselves: between two reports of a host at least three of its windows
// apart, what its pairs still busy sent over the slots they were given,
// less the windows it lost (Demand.Lost: a lost grant is a window the host
// never had, not one that carried less). A host whose windows open late
// carries less per slot than the others and is planned with that.
//
// With the rotor, once what is left fits in tailRounds rounds (a transfer's
// tail), the rest is planned backward from its end: the last slots serve
// every pair with demand once, each in turn, and again (tailTurns), then
// the pairs with the most bytes left, so the slots a pair needs beyond the
// others' (its windows carried less) come first. Every pair's last slot
// then falls in the tail's last N−1 slots and the one before it in the
// N−1 before those, instead of the pairs that were ahead ending a round or
// more before the last. It costs nothing in completion: the tail
// is as long either way, set by the host with the most left. Each round is
// planned again from newer reports, so only the first MaxSlots of a plan
// are used, and once the rest fits in shortRounds rounds only its first
// N−1 (a round's reports are then a cycle old, not a round). Outside a
// tail the rotor plans as it is (every pair in turn: a small demand
// beside an endless one is not starved), but for the
// rounds before a tail in which some pair has drifted ahead of the
// others (level rounds: levelRounds, driftRounds): there every pair is
// still served once a round, and then the pairs with the most slots left.
//
// The reports less the rounds since leave nothing once a tail's last
// slots are planned, but a window that opened late carries less than
// learned, and what its pair has left after its last slot (a residue) is
// found only at its sender's next report, after the next round was
// planned. The round planned as a tail's rounds leave nothing (its ending
// round) gives every pair with bytes in its sender's report a slot, the
// pairs the rounds since leave the least to spare first (a residue is
// the likelier the less it had), each slot the matching of those the
// earlier slots left: a residue is served in that round's first slots,
// not wherever a rotor cycle puts it, or a round later (in the simulated
// 40 MiB shuffles with the measured late opens, seeds 1-128, 5 runs had
// their pairs end 21-40 ms apart for it).
//
// That holds while every planned window is had. Once some host has lost
// windows (Demand.Lost), or all have in a stall of the FM (Stalled) and
// some host has not reported since (rough), the
// hosts a backward plan leaves idle at its start are those it counts
// ahead, and which host ends last depends on the windows still to be lost:
// a host idle now may be the one behind a round later. After a stall the
// count itself is rough: the reports from before it less the windows of
// the hosts' leases, beside reports from after it, could put a host a
// slot ahead of the others when it is not (on the star, three slots of
// one host alone led the round after a 100 ms stall, the others idle for
// 15 ms more). There the round's idle senders are given the pairs with
// the most slots left whose receivers are idle too, within their slots of
// the plan (a pair's share of the tail moves forward; the pairs then end
// less together, but no host waits while it has bytes for an idle
// receiver).
//
// A pair whose sender's latest report has less than a slot's worth for it
// (SlotCap), but something, keeps one slot in every round outside a tail,
// whatever the rounds since will have carried: the rounds since were
// planned from older reports, and what they gave such a pair need not be
// what it sent (an RPC server reserves a slot a round for its answers by
// reporting one byte; a request or answer queued after its slot went by).
// Such a pair waits for a slot at most until its sender's next report and
// the round planned after it, or until the tail it falls in has ended
// (tailRounds rounds and the one a report takes). The cost is a slot a pair did
// not need; in a tail, where the pairs' last reports are below a slot's
// worth, such slots would come between the others' last ones, so there the
// reports less the rounds since decide alone.
//
// With Budget, the rounds of a tail's last turns (once what is left fits
// in shortRounds rounds, and no window has been lost) tell each sender how
// much each of its windows may carry (Round.Budget, wire.ScheduleBudget):
// a pair's slots before its last carry the payload per slot and no more,
// so that what the plan leaves the pair's last slot is what it finds
// there (budget). The payload is not learned from such windows (bounded).
type Planner struct {
	Sched    Scheduler
	SlotCap  int64 // payload bytes a slot carries at most: the first estimate
	MaxSlots int
	SlotLen  int64
	Guard    int64

	recent   []planned // the last rounds planned, oldest first
	asked    [][]bool  // scratch: the pairs the latest reports have less than a slot's worth for
	prev     [][]int64 // each host's report before its last
	prevAt   []int64   // when that report came
	prevLost []int64   // the windows it had lost by then
	pay      []int64   // learned payload per slot, per sender
	w        [][]int64 // scratch: leveling weights' bytes
	a        *assigner // scratch
	served   [][]int   // scratch: a pair's slots so far in a backward plan
	tail     bool
	rep      [][]int64 // scratch: the reports, as they came
	rest     [][]int64 // scratch: the reports less what the rounds since carry (< 0: to spare)
	stalls   []stall   // the FM's last stalls (Stalled), oldest first
	// Budget: the rounds of a tail's last turns carry slot budgets
	// (Round.Budget; see budget).
	Budget bool
	tailN  [][]int // scratch: each pair's slots in the whole of a tail's plan (tail.Build)
}

// stall is a span of the FM's timeline in which host i had no window from
// from[i] to to (Stalled).
type stall struct {
	from   []int64
	to     int64
	rounds int // rounds planned since
}

// levelRounds, driftRounds: outside a tail, once what is left fits in
// levelRounds rounds and some pair with slots left would end, at the
// rotor's pace (a slot of it every N−1), more than driftRounds rounds'
// worth of slots before the longest line (its sender's or receiver's
// windows went to the other pairs while theirs were lost), the rounds are
// level rounds: full matchings that serve every pair once and then the
// pairs with the most slots left, so the pairs ahead wait for the others
// before the tail begins (a tail serves pairs in the order it ends them,
// and gives back only as much as its rounds hold).
const (
	levelRounds = 2 * tailRounds
	driftRounds = tailRounds / 2
)

// drifted reports whether some pair with slots left would end, at the
// rotor's pace (a slot every N−1), more than ahead slots before the
// longest line.
func drifted(n [][]int, ahead int) bool {
	N, M := len(n), maxLine(n)
	for i := range n {
		for _, r := range n[i] {
			if r > 0 && M-(N-1)*r > ahead {
				return true
			}
		}
	}
	return false
}

// planned is a round and when it started (0: not known yet).
type planned struct {
	r     *Round
	start int64
}

// SlotBytes is what a slot carries at most: rate (bit/s) over the slot
// less its guard, in bytes.
func SlotBytes(rate uint64, slotLen, guard int64) int64 {
	return int64(rate/8) * (slotLen - guard) / 1e9
}

// keptPlans is how many planned rounds a Planner remembers: a report is
// at most this many rounds old before a newer one replaces it.
const keptPlans = 4

// shortRounds: once what is left of a tail fits in this many rounds, its
// rounds are one rotor cycle (N−1 slots) each. A round is planned as the
// one before it starts, so the rounds that hold the pairs' last slots are
// then planned from reports a cycle old, not a whole round: planned a
// round ahead, what a pair's windows carry from one to the next (a late
// open takes a fifth of one) put its last slot a whole slot off in many
// runs (a slot planned for bytes already sent, or a slot short).
const shortRounds = 2

// sliver: a pair whose rest is whole slots and less than this share of
// one more (a twelfth) may find its last slot empty, its bytes gone in
// the slots before (windows carry more or less than learned); a backward
// plan gives its last slot first in the tail's last turn and the one
// before right before it, so that it ends then at worst a slot early.
// Slivers that share a sender or a receiver cannot all have the turn's
// first slot, and one that does not may end a turn early; its slot before
// its last is then as close before it as its sender and receiver leave
// free (elsewhere in its turn it would end up to two more slots early:
// with it, 37 runs of 768 below, not 49). With a quarter
// a fourth of the pairs were slivers, too many: in the simulated 40 MiB
// shuffles with the measured late opens, seeds 1-768, 77 runs had their
// pairs end more than N−1 slots and one more apart, 49 with a twelfth (a
// pair a twelfth or more of a slot over leaves a residue when its last
// window opens late, which the tail's ending round serves first; 8-12:
// 49-50, 16: 54, 6: 64).
const sliver = 12

// tailRounds is how many rounds' worth of slots a transfer's rest is
// planned backward from (its tail): enough that a pair some three rounds
// of its slots behind the others (its host's windows lost to a stall) is
// given them back before the pairs ahead have ended.
const tailRounds = 4

// NearTail reports whether a host with left bytes still to send, to all
// its destinations, is near enough the end of a transfer to report at every
// slot's grant: within three tails (3·tailRounds rounds of full slots; a
// round gives a host a slot to every other). The FM plans a transfer's
// tail from those reports and learns each sender's payload per slot from
// them before its tail; earlier they would only add a send in the guard
// before each window (in the simulator's shuffles, a horizon of one tail
// and two rounds left the spread's median 23 ms against 14-15 ms).
func NearTail(left int64, hosts int, rate uint64, slotLen int64) bool {
	return left <= 3*tailRounds*int64(hosts-1)*(int64(rate/8)*slotLen/1e9)
}

// tailTurns is how many times a backward plan serves every pair with
// slots left before it serves any pair again: a pair's last two slots
// fall in the tail's last 2(N−1), so that a pair whose last slot was
// planned for a few bytes it no longer has (a report is a slot or more
// old) still ends in the tail's last rounds of the rotor.
const tailTurns = 2

// Next plans round id at now, as round id−1 starts (the FM plans one
// round ahead), from d, where d.Bytes[i] is host i's report and at[i]
// when it came (0: before the first round), and records it. d is
// modified: on return it holds what the round was planned from (bytes in
// slots of SlotCap). A round the FM could not run is forgotten (Forget);
// one whose next numbers were all skipped, as in a stall of the FM's own,
// is not known to have started and is not taken off (after).
func (p *Planner) Next(id uint32, now int64, d *Demand, at []int64) *Round {
	N := d.N
	if len(d.Lost) != N {
		d.Lost = make([]int64, N) // a Demand not from NewDemand: none lost
	}
	if p.pay == nil {
		p.pay, p.prev, p.prevAt, p.prevLost, p.asked = make([]int64, N), make([][]int64, N), make([]int64, N), make([]int64, N), make([][]bool, N)
		for i := range p.pay {
			p.pay[i] = p.SlotCap
			p.prev[i], p.asked[i] = make([]int64, N), make([]bool, N)
		}
	}
	if k := len(p.recent) - 1; k >= 0 && p.recent[k].r.ID+1 == id && p.recent[k].start == 0 {
		p.recent[k].start = now // unless the FM said when it started (Started)
	}
	for i := 0; i < N; i++ {
		if at[i] == p.prevAt[i] {
			continue
		}
		if p.prevAt[i] != 0 && at[i] > p.prevAt[i] && !p.learn(i, d.Bytes[i], d.Lost[i]-p.prevLost[i], at[i]) {
			continue // too soon: learn from a later report against this one's predecessor
		}
		p.prevAt[i], p.prevLost[i] = at[i], d.Lost[i]
		copy(p.prev[i], d.Bytes[i])
	}
	lossy := p.rough(at)
	for k := range p.stalls {
		p.stalls[k].rounds++
	}
	for _, l := range d.Lost {
		lossy = lossy || l > 0
	}
	for i := range d.Bytes {
		for j, b := range d.Bytes[i] {
			p.asked[i][j] = b > 0 && b < p.SlotCap && i != j
		}
	}
	if len(p.rep) != N {
		p.rep, p.rest = make([][]int64, N), make([][]int64, N)
		for i := range p.rep {
			p.rep[i], p.rest[i] = make([]int64, N), make([]int64, N)
		}
	}
	for i := range d.Bytes {
		copy(p.rep[i], d.Bytes[i])
		copy(p.rest[i], d.Bytes[i])
	}
	for _, pr := range p.recent {
		for k, m := range pr.r.Slots {
			for i, j := range m {
				if j >= 0 {
					f := int64(p.after(i, pr.start, k, at[i], math.MaxInt64) * float64(p.pay[i]))
					d.Bytes[i][j] = max(0, d.Bytes[i][j]-f)
					p.rest[i][j] -= f
				}
			}
		}
	}
	// In slots of SlotCap: a slot of sender i carries pay[i].
	for i := range d.Bytes {
		for j, b := range d.Bytes[i] {
			if b < 1<<40 { // an endless sender (~2^50) stays as it is
				d.Bytes[i][j] = b * p.SlotCap / p.pay[i]
			}
		}
	}
	n := SlotDemand(d, p.SlotCap)
	var s Scheduler = p.Sched
	if rot, ok := p.Sched.(*Rotor); ok {
		M := maxLine(n)
		wasTail := p.tail
		if M > p.MaxSlots && M <= tailRounds*p.MaxSlots {
			p.tail = true
		} else if M == 0 || M > tailRounds*p.MaxSlots {
			p.tail = false
		}
		if p.tail {
			s = tail{p: p, rot: rot, bytes: d.Bytes, fill: lossy}
		} else if wasTail && M == 0 {
			s = ending{p: p}
		} else if M <= levelRounds*p.MaxSlots && drifted(n, driftRounds*p.MaxSlots) {
			s = level{p: p, rot: rot}
		}
	}
	if _, ok := s.(ending); ok {
		for i := range d.Bytes {
			for j := range d.Bytes[i] {
				if i != j && p.rep[i][j] > 0 && d.Bytes[i][j] <= 0 {
					d.Bytes[i][j] = 1 // its slot in the ending round
					n[i][j] = 1
				}
			}
		}
	} else if !p.tail {
		for i := range d.Bytes {
			for j := range d.Bytes[i] {
				if p.asked[i][j] && d.Bytes[i][j] <= 0 {
					d.Bytes[i][j] = 1 // its slot a round
					n[i][j] = max(n[i][j], 1)
				}
			}
		}
	}
	maxSlots, short := p.MaxSlots, false
	if _, ok := s.(tail); ok && maxLine(n) <= shortRounds*p.MaxSlots {
		maxSlots, short = min(maxSlots, N-1), true
	}
	r := Make(s, id, n, maxSlots, p.SlotLen, p.Guard)
	if t, ok := s.(tail); ok && p.Budget && !t.fill && short {
		p.budget(r)
	}
	if len(p.recent) == keptPlans {
		p.recent = append(p.recent[:0], p.recent[1:]...)
	}
	p.recent = append(p.recent, planned{r: r})
	return r
}

// Started tells the Planner when the FM started round id, on its
// timeline. Otherwise a round is taken to start when the round after it
// is planned (Next), as the FM plans one round ahead; but after a stall of
// the FM's (Stalled) the round it finds itself in began during the stall,
// up to a round earlier, and placed at the FM's return its slots overlap
// the next round's: a host's first reports after it would have had two
// slots at once, and its slots seem to carry half what they do.
func (p *Planner) Started(id uint32, at int64) {
	for k := range p.recent {
		if p.recent[k].r.ID == id {
			p.recent[k].start = at
		}
	}
}

// Forget drops round id from the rounds the Planner remembers: the FM did
// not run it (it came too late to publish). Kept, it would be taken off
// the pairs' reports as sent, and after a stall of the FM, when several
// plans in a row come too late, that leaves the pairs of the hosts ahead
// with nothing planned, so no grant and no report to say they sent
// nothing.
func (p *Planner) Forget(id uint32) {
	p.recent = slices.DeleteFunc(p.recent, func(pr planned) bool { return pr.r.ID == id })
}

// Stalled tells the Planner that the FM ran its slots up to to without
// sending their grants (a stall of its own: fmcore.Stall), and that host i
// had no window from from[i] on. What the rounds planned gave host i in
// between it did not send, and those slots are no measure of what a slot
// of it carries. Counted as had, after the FM's 100 ms stall they were
// taken off the reports before it as sent, and a host's first report
// after it, against its report before, made its slots seem to carry a
// fraction of what they do (its pay fell half way to SlotCap/4): the
// hosts that reported first looked most behind, and the tail planned
// from that gave them a whole round, the others nothing for 80 ms.
func (p *Planner) Stalled(from []int64, to int64) {
	st := stall{from: append([]int64(nil), from...), to: to}
	if k := len(p.stalls) - 1; k >= 0 {
		for i := range st.from {
			st.from[i] = max(st.from[i], p.stalls[k].to) // a host without a grant in between: not twice
		}
	}
	if len(p.stalls) == keptPlans {
		p.stalls = append(p.stalls[:0], p.stalls[1:]...)
	}
	p.stalls = append(p.stalls, st)
}

// rough reports whether the Planner's counts are rough after a stall of
// the FM's (see Planner): fewer than keptPlans rounds have been planned
// since one, the rounds it remembers from before it among them, or some
// host's latest report (at) came before its end. Past that the counts are
// as good as before it: filling the idle senders for the rest of a run
// after any stall left the pairs ending apart (on the star, one stall of
// 12 slots mid-shuffle, then a tail whose pairs ended 113 ms apart).
func (p *Planner) rough(at []int64) bool {
	for _, st := range p.stalls {
		if st.rounds < keptPlans {
			return true
		}
		for i := range at {
			if at[i] <= st.to {
				return true
			}
		}
	}
	return false
}

// after is the share of the open part of slot k of a round that started
// at start that lies after t0 and by t1 and in which sender i had its
// window (not in a stall: Stalled); none of it if the round is not known
// to have started (start 0: the FM skipped the numbers after it). A host
// silent under its lease sends nothing of such a round, a free-running
// one at most its lease's windows (see Forget for what taking it off as
// sent did).
func (p *Planner) after(i int, start int64, k int, t0, t1 int64) float64 {
	if start == 0 {
		return 0
	}
	open := start + int64(k)*p.SlotLen + p.Guard
	end := start + int64(k+1)*p.SlotLen
	lo, hi := max(open, t0), min(end, t1)
	if hi <= lo {
		return 0
	}
	had := hi - lo
	for _, st := range p.stalls {
		if i < len(st.from) {
			had -= max(0, min(hi, st.to)-max(lo, st.from[i]))
		}
	}
	return float64(max(had, 0)) / float64(end-open)
}

// learn updates what a slot of host i carries from its report rep, which
// came at t, against its report before: the bytes its pairs still busy at
// rep (more than two slots left) sent in between, over the slots (their
// open parts' shares) they were given in between less the lost windows
// it counted in between. It moves half way to each new measure. It
// reports false while fewer than three such windows lie in between (the
// Planner then learns from a later report against the same report
// before), unless the report before is older than the rounds the Planner
// remembers. Across a stall of the FM (Stalled) it learns nothing and
// takes rep as the report before the next: what host i had in between was
// the windows its lease left it, which a free-running host opens on its
// own timer, late, and counts as windows had beside the grants it lost.
func (p *Planner) learn(i int, rep []int64, lost, t int64) bool {
	for _, st := range p.stalls {
		if i < len(st.from) && st.from[i] < st.to && st.from[i] < t && st.to > p.prevAt[i] {
			return true
		}
	}
	if p.bounded(i, t) {
		return true
	}
	var sent int64
	var slots float64
	busy := func(j int) bool { return rep[j] > 2*p.pay[i] }
	for _, pr := range p.recent {
		for k, m := range pr.r.Slots {
			if j := m[i]; j >= 0 && busy(int(j)) && pr.start != 0 {
				slots += p.after(i, pr.start, k, p.prevAt[i], t)
			}
		}
	}
	for j, b := range rep {
		if busy(j) {
			sent += p.prev[i][j] - b
		}
	}
	if slots -= float64(lost); slots < 3 {
		return len(p.recent) > 0 && p.prevAt[i] < p.recent[0].start
	}
	if sent > 0 {
		p.pay[i] += (min(max(int64(float64(sent)/slots), p.SlotCap/4), p.SlotCap) - p.pay[i]) / 2
	}
	return true
}

// bounded reports whether a window of host i with a slot budget
// (Round.Budget) lies between its report before (prevAt) and t: such a
// window carries at most what a slot was planned to carry, so learning
// from it would only lower the payload per slot, and the rounds planned
// from that would take off less than their budgets let the windows carry
// (a pair then planned a slot and a sliver more finds its last slot
// empty: in the simulated shuffles of budget, 7 runs of 384 ended wide
// learning from them, 3 not).
func (p *Planner) bounded(i int, t int64) bool {
	for _, pr := range p.recent {
		for k := range pr.r.Budget {
			if pr.r.Budget[k][i] > 0 && p.after(i, pr.start, k, p.prevAt[i], t) > 0 {
				return true
			}
		}
	}
	return false
}

// Payload returns what a slot of each sender is planned to carry.
func (p *Planner) Payload() []int64 { return append([]int64(nil), p.pay...) }

// maxLine is the largest row or column sum of n: the fewest slots any
// schedule of matchings needs for it.
func maxLine(n [][]int) int {
	M := 0
	for i := range n {
		r, c := 0, 0
		for j := range n {
			r += n[i][j]
			c += n[j][i]
		}
		M = max(M, r, c)
	}
	return M
}

// begin sizes the Planner's scratch for a plan of n, with no pair served
// yet, and returns a copy of n and its total.
func (p *Planner) begin(n [][]int) ([][]int, int) {
	N := len(n)
	if p.a == nil || len(p.a.w) != N {
		p.a = newAssigner(N)
		p.w, p.served = make([][]int64, N), make([][]int, N)
		for i := range p.w {
			p.w[i], p.served[i] = make([]int64, N), make([]int, N)
		}
	}
	for i := range p.served {
		clear(p.served[i])
	}
	return clone(n), total(n)
}

// level is the Planner's rotor before a tail whose pairs have drifted
// apart: each slot a full matching, serving the pairs not yet served in
// the round first, then those with the most slots left, then the rotor's
// next shift. While every pair has slots left every host sends in every
// slot, as with the rotor, so no line waits; the pairs ahead are left out
// where a matching without them serves as many.
type level struct {
	p   *Planner
	rot *Rotor
}

func (l level) Name() string { return l.rot.Name() }

// Build builds up to maxSlots slots of n (none for fewer than two hosts:
// n then asks for none).
func (l level) Build(n [][]int, maxSlots int) []Matching {
	p, N := l.p, len(n)
	left, rem := p.begin(n)
	c2 := int64(N)
	c0 := int64(N) * c2 * int64(maxLine(n)+1)
	c1 := int64(N+1) * c0
	var out []Matching
	for rem > 0 && len(out) < maxSlots {
		p.weigh(left, l.rot, c1, func(i, j int) int64 {
			w := int64(left[i][j]) * c2
			if p.served[i][j] == 0 {
				w += c0
			}
			return w
		})
		m, k := p.take(left)
		rem -= k
		out = append(out, m)
	}
	return out
}

// weigh sets the assigner's weights for the next slot of a plan: a host
// to itself never (a derangement always exists), a pair without slots
// left in left 0, any other pair c1 and w(i, j), then its turn from the
// rotor's next shift (N−1 for that shift: of equal pairs, the rotor's).
func (p *Planner) weigh(left [][]int, rot *Rotor, c1 int64, w func(i, j int) int64) {
	N := len(left)
	pref := rot.next % (N - 1)
	rot.next++
	for i := 0; i < N; i++ {
		for j := 0; j < N; j++ {
			switch {
			case i == j:
				p.a.w[i][j] = -c1 * int64(N+1)
			case left[i][j] > 0:
				turn := ((j-i+N)%N - 1 - pref + N - 1) % (N - 1) // 0 for the preferred shift
				p.a.w[i][j] = c1 + w(i, j) + int64(N-1-turn)
			default:
				p.a.w[i][j] = 0
			}
		}
	}
}

// take returns the matching the assigner found, less its pairs without
// slots left in left, and how many pairs it serves; it takes their slots
// off left and a slot's bytes off p.w, and counts them in p.served.
func (p *Planner) take(left [][]int) (Matching, int) {
	m, k := make(Matching, len(left)), 0
	for i, j := range p.a.maximize() {
		m[i] = -1
		if j != i && left[i][j] > 0 {
			m[i] = int16(j)
			left[i][j]--
			k++
			p.w[i][j] -= p.SlotCap
			p.served[i][j]++
		}
	}
	return m, k
}

// tail is the Planner's rotor in a tail: the slots built backward from
// the end of what is left, then reversed.
type tail struct {
	p     *Planner
	rot   *Rotor
	bytes [][]int64 // what the pairs have left, in bytes of SlotCap slots
	fill  bool      // windows have been lost: no host idles (Planner)
}

func (t tail) Name() string { return t.rot.Name() }

// Build builds every slot n asks for, backward: each the matching that
// serves the most pairs with slots left, then the pairs served the fewest
// times yet (up to tailTurns), then the most bytes left, then the rotor's
// next shift; and returns the first maxSlots of them in time order, their
// idle senders and receivers paired up where t.fill asks it (fillIdle).
func (t tail) Build(n [][]int, maxSlots int) []Matching {
	N, p := len(n), t.p
	if N < 2 {
		return nil
	}
	left, rem := p.begin(n)
	for i := range p.w {
		copy(p.w[i], t.bytes[i])
	}
	// Weights, lexicographic: a pair with slots left (c1), then served
	// fewer than tailTurns times (c0 for each turn it has not had), then
	// its bytes left in 1/64 slot (c2 each, capped so that the sums cannot
	// overflow), then the shift's turn.
	const maxLeft = 1 << 20
	c2 := int64(N * N)
	c0 := int64(N) * (maxLeft*c2 + c2)
	c1 := int64(tailTurns*N+1) * c0
	var out []Matching
	for rem > 0 {
		p.weigh(left, t.rot, c1, func(i, j int) int64 {
			by := min(max(p.w[i][j], 0)*64/p.SlotCap, maxLeft)
			if f := t.bytes[i][j] % p.SlotCap; t.bytes[i][j] > p.SlotCap && f > 0 && f < p.SlotCap/sliver {
				switch {
				case p.served[i][j] == 0:
					by = 0 // its last slot first in the last turn
				case p.served[i][j] == 1 && out[len(out)-1][i] == int16(j):
					by = maxLeft // the one before right before it
				case p.served[i][j] == 1:
					by = maxLeft - 1 // else as close before it as its line leaves free
				}
			}
			return int64(max(tailTurns-p.served[i][j], 0))*c0 + by*c2
		})
		m, k := p.take(left)
		rem -= k
		out = append(out, m)
	}
	slices.Reverse(out)
	if !t.fill && len(out) > maxSlots {
		out = t.hold(out, maxSlots)
	}
	if len(p.tailN) != N {
		p.tailN = make([][]int, N)
		for i := range p.tailN {
			p.tailN[i] = make([]int, N)
		}
	}
	for i := range p.tailN {
		clear(p.tailN[i])
	}
	for _, m := range out {
		for i, j := range m {
			if j >= 0 {
				p.tailN[i][j]++
			}
		}
	}
	out = out[:min(len(out), maxSlots)]
	if t.fill {
		t.fillIdle(out, n)
	}
	return out
}

// fullWindow is what a window that opens in time carries, in thousandths
// of SlotCap (the margin and the last frame that does not fit take the
// rest). The Planner's payload per slot is a mean over windows some of
// which opened late, so a run of windows that open in time carries more.
const fullWindow = 970

// hold takes a pair's earliest slot out of the first maxSlots of a
// backward plan (the round it plans; the rest is planned again from newer
// reports) where those slots alone could carry all the pair has left,
// each a full window, and the plan gives the pair slots after them too:
// extra slots come first in a backward plan, so a pair with the most
// left may be given all of a round, and when its windows carry more than
// the Planner's payload per slot, the next round's plan finds it done and
// drops its slot in the last turn, and it ends a turn or more before the
// others. Held back, what it has left after the round is planned again
// into the tail's last turns. Only where the pair keeps two slots or
// more in the round: it still sends in every round, so it ends. Slots
// left empty are dropped.
func (t tail) hold(out []Matching, maxSlots int) []Matching {
	p, N := t.p, len(out[0])
	for i := 0; i < N; i++ {
		for j := 0; j < N; j++ {
			if i == j {
				continue
			}
			now, first, later := 0, -1, false
			for k, m := range out {
				switch {
				case m[i] != int16(j):
				case k >= maxSlots:
					later = true
				case first < 0:
					first, now = k, 1
				default:
					now++
				}
			}
			if left := t.bytes[i][j] * p.pay[i] / p.SlotCap; now >= 2 && later && int64(now)*p.SlotCap*fullWindow/1000 >= left {
				out[first][i] = -1
			}
		}
	}
	kept := out[:0]
	for k, m := range out {
		if k >= maxSlots || slices.ContainsFunc(m, func(j int16) bool { return j >= 0 }) {
			kept = append(kept, m)
		}
	}
	return kept
}

// budget sets r's slot budgets (Round.Budget), r a round of a tail's last
// turns (tail.Build has counted each pair's slots in the whole plan): a
// pair's slots before its last in the plan carry what a slot of its
// sender is planned to carry (Planner.Payload) and no more, so that its
// last slot finds what the plan left it; its last slot has no bound. A
// window that opens in time carries more than the payload per slot, which
// is a mean over windows some of which opened late, and without a bound a
// pair with a slot and a little more left may carry all of it in the slot
// before its last: its last slot then finds nothing, and it ends a turn
// before the others. The bound is the payload itself: the rounds after are
// planned taking a slot off at that, and a bound below it leaves the
// pairs more than planned. In the simulated 40 MiB shuffles with the
// measured late opens, seeds 1-384, 12 runs' pairs ended more than N−1
// slots and one more apart without bounds, 3 with them, 17 with bounds of
// 0.98 of the payload; bounds of what a pair has left over its slots (each
// slot its even share) left residues in most runs (105).
func (p *Planner) budget(r *Round) {
	N := len(r.Class)
	seen := make([][]int, N)
	for i := range seen {
		seen[i] = make([]int, N)
	}
	r.Budget = make([][]int64, len(r.Slots))
	for k, m := range r.Slots {
		r.Budget[k] = make([]int64, N)
		for i, j := range m {
			if j < 0 {
				continue
			}
			seen[i][j]++
			if seen[i][j] < p.tailN[i][j] {
				r.Budget[k][i] = int64(seen[i][j]) * p.pay[i]
			}
		}
	}
}

// ending is the Planner's rotor in a tail's ending round (Planner): the
// pairs n asks for, in order of what the rounds since leave them
// (Planner.rest: the least to spare first).
type ending struct{ p *Planner }

func (e ending) Name() string { return e.p.Sched.Name() }

// Build builds up to maxSlots slots of n, each the matching that takes
// the pairs with slots left in their order, each that its sender and
// receiver are free for: a pair's slot is the earliest the pairs before
// it leave it. Such a matching may serve fewer pairs than a rotor shift
// (a round of a slot or so more): the order is the point.
func (e ending) Build(n [][]int, maxSlots int) []Matching {
	N := len(n)
	var pairs [][2]int
	for i := 0; i < N; i++ {
		for j := 0; j < N; j++ {
			if i != j && n[i][j] > 0 {
				pairs = append(pairs, [2]int{i, j})
			}
		}
	}
	slices.SortStableFunc(pairs, func(a, b [2]int) int {
		return cmp.Compare(e.p.rest[b[0]][b[1]], e.p.rest[a[0]][a[1]])
	})
	left, rem := clone(n), total(n)
	var out []Matching
	for rem > 0 && len(out) < maxSlots {
		m, taken := make(Matching, N), make([]bool, N)
		for i := range m {
			m[i] = -1
		}
		for _, pr := range pairs {
			if i, j := pr[0], pr[1]; left[i][j] > 0 && m[i] < 0 && !taken[j] {
				m[i], taken[j] = int16(j), true
				left[i][j]--
				rem--
			}
		}
		out = append(out, m)
	}
	return out
}

// fillIdle gives each slot's idle senders a destination idle in that slot
// too: the pair with the most of its slots of n not yet in slots, then the
// most bytes left, while it has such slots (a pair never gets more slots
// than n asks for).
func (t tail) fillIdle(slots []Matching, n [][]int) {
	N := len(n)
	spare := clone(n)
	for _, m := range slots {
		for i, j := range m {
			if j >= 0 {
				spare[i][j]--
			}
		}
	}
	busy := make([]bool, N) // receivers taken in the slot
	for _, m := range slots {
		for j := range busy {
			busy[j] = false
		}
		for _, j := range m {
			if j >= 0 {
				busy[j] = true
			}
		}
		for {
			bi, bj := -1, -1
			for i, j0 := range m {
				if j0 >= 0 {
					continue
				}
				for j := range busy {
					if j == i || busy[j] || spare[i][j] <= 0 {
						continue
					}
					if bi < 0 || spare[i][j] > spare[bi][bj] || spare[i][j] == spare[bi][bj] && t.bytes[i][j] > t.bytes[bi][bj] {
						bi, bj = i, j
					}
				}
			}
			if bi < 0 {
				break
			}
			m[bi], busy[bj] = int16(bj), true
			spare[bi][bj]--
		}
	}
}

// assigner finds a maximum-weight perfect matching of an N×N weight
// matrix (the Hungarian method with potentials, O(N³)).
type assigner struct {
	w          [][]int64
	u, v, minv []int64
	p, way     []int
	used       []bool
	match      []int
}

func newAssigner(n int) *assigner {
	a := &assigner{w: make([][]int64, n), u: make([]int64, n+1), v: make([]int64, n+1), minv: make([]int64, n+1),
		p: make([]int, n+1), way: make([]int, n+1), used: make([]bool, n+1), match: make([]int, n)}
	for i := range a.w {
		a.w[i] = make([]int64, n)
	}
	return a
}

// maximize returns match, match[i] the column of row i, maximizing the sum
// of w[i][match[i]].
func (a *assigner) maximize() []int {
	n := len(a.w)
	const inf = int64(1) << 62
	cost := func(i, j int) int64 { return -a.w[i-1][j-1] }
	for j := range a.p {
		a.u[j], a.v[j], a.p[j], a.way[j] = 0, 0, 0, 0
	}
	for i := 1; i <= n; i++ {
		a.p[0] = i
		j0 := 0
		for j := range a.minv {
			a.minv[j], a.used[j] = inf, false
		}
		for {
			a.used[j0] = true
			i0, delta, j1 := a.p[j0], inf, 0
			for j := 1; j <= n; j++ {
				if a.used[j] {
					continue
				}
				if cur := cost(i0, j) - a.u[i0] - a.v[j]; cur < a.minv[j] {
					a.minv[j], a.way[j] = cur, j0
				}
				if a.minv[j] < delta {
					delta, j1 = a.minv[j], j
				}
			}
			for j := 0; j <= n; j++ {
				if a.used[j] {
					a.u[a.p[j]] += delta
					a.v[j] -= delta
				} else {
					a.minv[j] -= delta
				}
			}
			j0 = j1
			if a.p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := a.way[j0]
			a.p[j0] = a.p[j1]
			j0 = j1
		}
	}
	for j := 1; j <= n; j++ {
		a.match[a.p[j]-1] = j - 1
	}
	return a.match
}
