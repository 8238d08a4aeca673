package simlink

import (
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/seqhdr"
)

// Info describes a frame about to cross a direction of the link; loss rules
// decide on it.
type Info struct {
	N     int           // index of the frame among all frames sent in this direction
	DataN int           // index among sequenced data frames (originals and copies), -1 if not one
	Link  bool          // the frame has a link header (Hdr is valid)
	Hdr   seqhdr.Header // decoded link header
	PFC   bool          // a PFC pause/resume message
	ID    uint64        // host frame id carried by a sequenced data frame
	Retx  bool          // the data frame is a retransmitted copy
}

// IsData reports whether the frame is a sequenced data frame.
func (i *Info) IsData() bool { return i.Link && i.Hdr.Type == seqhdr.TypeData && !i.Hdr.Unseq }

// Rule is a scripted loss: it drops up to Count frames matching Match.
type Rule struct {
	Match func(*Info) bool
	Count int // frames still to drop; a rule with Count 0 is spent
	Hits  int // frames dropped so far
}

func (r *Rule) apply(i *Info) bool {
	if r.Count <= 0 || !r.Match(i) {
		return false
	}
	r.Count--
	r.Hits++
	return true
}

// DropNthData drops the k-th (0-based) sequenced data frame sent in the
// direction, counting originals and retransmitted copies in send order.
func DropNthData(k int) *Rule {
	return &Rule{Count: 1, Match: func(i *Info) bool { return i.DataN == k }}
}

// DropSeq drops the first copies transmissions (original included) of the
// data frame with sequence number q.
func DropSeq(q seqhdr.Seq, copies int) *Rule {
	return &Rule{Count: copies, Match: func(i *Info) bool { return i.IsData() && i.Hdr.Seq == q }}
}

// DropID drops the first copies transmissions (original included) of the
// host frame with the given id.
func DropID(id uint64, copies int) *Rule {
	return &Rule{Count: copies, Match: func(i *Info) bool { return i.IsData() && i.ID == id }}
}

// DropType drops the next count frames of link type t (data counts
// sequenced frames only).
func DropType(t seqhdr.Type, count int) *Rule {
	return &Rule{Count: count, Match: func(i *Info) bool {
		return i.Link && i.Hdr.Type == t && !(t == seqhdr.TypeData && i.Hdr.Unseq)
	}}
}

// DropIf drops the next count frames for which pred is true.
func DropIf(count int, pred func(*Info) bool) *Rule { return &Rule{Count: count, Match: pred} }

// LossModel is random loss applied to every frame of a direction except PFC
// messages (unless DirConfig.LosePFC).
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
