package lgsim

import "github.com/linkfabric/linkfabric/link/seqhdr"

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
