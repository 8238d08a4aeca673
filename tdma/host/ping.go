package host

import (
	"math"
	"time"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// The RPC workload (§6.2, Figures 9–10). The client (workload ping) issues
// a batch of requests every PingEvery and reports them as demand to the
// server; in its window to the server it sends one request at each offset
// of PingOffsets after the window opens, unless less of the window is left
// than the server's recent turnarounds (then the request goes at once in
// the next window to the server: an answer the server cannot send in the
// request's slot waits for its next window, a round). Every agent answers
// a request at once if it holds a window to the requester that fits the
// answer, and otherwise queues the answer for its next such window. The server
// (workload pong) reserves one slot a round for its answers, which the FM's
// scheduler pairs with the request's slot (sched.PairReciprocal), so a
// request and its answer cross in one slot as in the paper.
const (
	// MaxPingSamples bounds the per-request samples kept for plots; the
	// quantiles cover every request.
	MaxPingSamples = 8192
	maxPingOffsets = 64
	pingOut        = 256     // requests tracked in flight (by id modulo)
	pongQueue      = 64      // answers waiting for a window
	turnN          = 16      // the in-slot turnarounds a client's hold decision looks at
	pingFrame      = dataHdr // a request or answer: headers, no payload
)

// PingStats are the RPC workload's counters. RTT is from sending a request
// to receiving its answer; Wait is from issuing its batch (when the
// application wanted it) to the answer, so it includes the wait for the
// slot. Quantiles are in µs, from bounded histograms.
type PingStats struct {
	Batches      uint64       `json:"batches"`        // client: batches issued
	Coalesced    uint64       `json:"coalesced"`      // client: batches due while one still waited (not issued)
	Windows      uint64       `json:"windows"`        // client: windows to the server that carried requests
	Sent         uint64       `json:"sent"`           // client: requests sent
	Answered     uint64       `json:"answered"`       // client: answers received
	AnsweredLate uint64       `json:"answered_late"`  // client: of them, answers the server had to queue
	Missed       uint64       `json:"missed_offsets"` // client: offsets past the window's end (not sent)
	Held         uint64       `json:"held"`           // client: requests held back from a window closing before the server's turnaround
	Served       uint64       `json:"served"`         // server: answers sent
	Deferred     uint64       `json:"deferred"`       // server: answers not sent at once (queued for a window)
	QueueFull    uint64       `json:"queue_full"`     // server: requests dropped, the answer queue was full
	FirstIssue   int64        `json:"first_issue_ns"` // client: when the first batch was issued
	LastAnswer   int64        `json:"last_answer_ns"`
	RTTP50us     float64      `json:"rtt_p50_us"`
	RTTP95us     float64      `json:"rtt_p95_us"`
	RTTP99us     float64      `json:"rtt_p99_us"`
	RTTMaxus     float64      `json:"rtt_max_us"`
	WaitP50us    float64      `json:"wait_p50_us"`
	WaitP95us    float64      `json:"wait_p95_us"`
	WaitP99us    float64      `json:"wait_p99_us"`
	WaitMaxus    float64      `json:"wait_max_us"`
	Samples      []PingSample `json:"samples,omitempty"`
	SamplesCut   uint64       `json:"samples_cut"` // answers beyond MaxPingSamples: in the quantiles, not listed
	// Of the deferred answers (server, counted as each is sent):
	// DeferredToOpen, requests read before the server's window back to the
	// client in their slot had opened, answered at its open (staggered
	// windows: the window back opens (client−server)·guard/N after the
	// client's to the server when the client's index is the higher);
	// DeferredInSlot, requests whose slot held that window but its agent
	// read them only after it closed, up to DeferredReadLateMaxus after
	// they arrived; DeferredNoSlot, requests whose slot held no such
	// window. The rest came so late that their round's schedule was no
	// longer held, or were never answered.
	DeferredToOpen        uint64  `json:"deferred_to_open"`
	DeferredInSlot        uint64  `json:"deferred_in_slot"`
	DeferredNoSlot        uint64  `json:"deferred_no_slot"`
	DeferredReadLateMaxus float64 `json:"deferred_read_late_max_us"`
}

// PingSample is one answered request.
type PingSample struct {
	T        int64   `json:"t_ns"`      // when the request left (clock ns)
	OffsetUs float64 `json:"offset_us"` // after its window opened (the slot's start plus the guard)
	RTTUs    float64 `json:"rtt_us"`
	WaitUs   float64 `json:"wait_us"`
	Deferred bool    `json:"deferred,omitempty"` // the server queued the answer
	Held     bool    `json:"held,omitempty"`     // the client held it back from an earlier window
}

type pingReq struct {
	id      uint64
	sentAt  int64
	issueAt int64
	offset  int64
	done    bool
	held    bool
}

type pongReq struct {
	dst int
	id  uint64
	off uint64
	// the request's round and slot, whether it held a window back to dst
	// (booked; known: its schedule was held) and how long after it arrived
	// it was read (ns; -1: unknown)
	round         uint32
	slot          int
	booked, known bool
	readLate      int64
}

// pingState is both sides of the RPC workload; no allocation after init.
type pingState struct {
	client  bool
	server  int   // client: the server's index
	reserve int   // pong: the client a slot a round is reserved for (-1: none)
	every   int64 // ns
	delay   int64
	offs    [maxPingOffsets]int64
	noffs   int
	next    int64 // next batch (MaxInt64: none)
	pending bool
	issueAt int64
	idx     int    // next offset of the waiting batch
	winKey  uint64 // the last window that carried requests
	// The client's hold: turns are the latest in-slot turnarounds (request
	// sent → its answer in the client's kernel), need the largest but one
	// of them (one outlier does not hold the next batches back); hold: the
	// next request was held back from window holdKey.
	turns   [turnN]int64
	iturn   int
	need    int64
	hold    bool
	holdKey uint64
	id      uint64
	out     [pingOut]pingReq
	q       [pongQueue]pongReq
	nq      int
	rtt     *clock.Lateness
	wait    *clock.Lateness
	samples []PingSample
	s       PingStats
	txBuf   [pingFrame]byte
	tx      [1][]byte
}

func (p *pingState) init(w *Workload) {
	p.next, p.reserve, p.server = math.MaxInt64, -1, -1
	p.tx[0] = p.txBuf[:]
	switch w.Kind {
	case "ping":
		p.client, p.server = true, w.Dst
		p.every, p.delay = int64(w.PingEvery), int64(w.PingDelay)
		for i, o := range w.PingOffsets {
			p.offs[i] = int64(o)
		}
		p.noffs = len(w.PingOffsets)
		p.rtt = clock.NewLatenessRange(time.Microsecond, 100*time.Millisecond)
		p.wait = clock.NewLatenessRange(100*time.Microsecond, 10*time.Second)
		p.samples = make([]PingSample, 0, MaxPingSamples)
	case "pong":
		p.reserve = w.Dst
	}
}

// first starts the client's batches: the first is due delay after the
// first schedule arrived (at now).
func (p *pingState) first(now int64) {
	if p.client {
		p.next = now + p.delay
	}
}

// demand is what the RPC workload adds to the demand for j: a waiting
// batch's requests, the queued answers, and a pong server's reservation of
// one slot a round, reported as one byte: the FM plans a pair whose report
// is below a slot's worth one slot in every round, whatever the rounds
// since the report carried (sched.Planner), so a constant byte keeps the
// server a window back to its client in every round.
func (p *pingState) demand(j int) int64 {
	var d int64
	if p.client && p.pending && j == p.server {
		d += int64(p.noffs-p.idx) * pingFrame
	}
	for i := 0; i < p.nq; i++ {
		if p.q[i].dst == j {
			d += pingFrame
		}
	}
	if j == p.reserve {
		d++
	}
	return d
}

// pingTick issues the client's next batch when it is due, and reports the
// new demand at once rather than at the next round.
func (a *Agent) pingTick(now int64, r *rawState) {
	p := &r.ping
	if !p.client || now < p.next {
		return
	}
	if p.pending {
		p.s.Coalesced++
	} else {
		p.pending, p.issueAt, p.idx = true, p.next, 0
		p.s.Batches++
		if p.s.FirstIssue == 0 {
			p.s.FirstIssue = p.next
		}
		a.report(r.lastRep, r.queued)
	}
	p.next += p.every
	if p.next <= now {
		p.next = now + p.every
	}
}

// sendPings sends the waiting batch's requests that are due in w (a window
// to the server) and returns when the next one is due (MaxInt64: none).
func (a *Agent) sendPings(now int64, r *rawState, w gate.Window, key uint64) int64 {
	p := &r.ping
	if !p.client || !p.pending || w.Dst != p.server {
		return math.MaxInt64
	}
	if key != p.winKey {
		p.winKey = key
		p.s.Windows++
	}
	for p.idx < p.noffs {
		if p.hold && p.holdKey == key {
			return math.MaxInt64 // held back from this window
		}
		due := w.OpenAt + p.offs[p.idx]
		if p.hold {
			due = w.OpenAt // held back from an earlier window: at once
		}
		if due >= w.Close {
			p.s.Missed++
			p.idx++
			continue
		}
		if now < due {
			return due
		}
		if !p.hold && w.Close-now < p.need {
			// The server's window back closes with this one: its answer
			// would wait a round for the next. The request goes at once in
			// the next window to the server (held once at most).
			p.hold, p.holdKey = true, key
			p.s.Held++
			return math.MaxInt64
		}
		p.id++
		o := &p.out[p.id%pingOut]
		*o = pingReq{id: p.id, issueAt: p.issueAt, held: p.hold}
		if !a.sendRPC(now, r, w, p.server, p.id, uint64(p.idx), wire.DataPing, &o.sentAt) {
			p.id--
			return now + 1 // the frame did not fit or the kernel refused it: again at once
		}
		o.offset = o.sentAt - w.OpenAt
		p.s.Sent++
		p.idx++
		p.hold = false
		now = clock.Now()
	}
	p.pending = false
	a.report(r.lastRep, r.queued) // the demand is gone
	return math.MaxInt64
}

// sendRPC sends a request or an answer (flags) to dst in w as one frame,
// booked with the gate's shaper; sentAt gets its send time. It fails if
// the frame no longer fits in the window or the kernel refused it.
func (a *Agent) sendRPC(now int64, r *rawState, w gate.Window, dst int, id, off uint64, flags uint8, sentAt *int64) bool {
	p := &r.ping
	if a.g.Fit(now, w, pingFrame) < pingFrame {
		return false
	}
	line := a.g.Sent(now, w, pingFrame)
	a.header(p.txBuf[:], w, dst, id, off, flags, line)
	*sentAt = clock.Now()
	if k, _ := a.data.Send(p.tx[:]); k != 1 {
		a.s.TxShort++
		return false
	}
	a.s.ClassBytes[w.Class] += pingFrame
	return true
}

// sendPongs sends the queued answers to w's destination.
func (a *Agent) sendPongs(now int64, r *rawState, w gate.Window) {
	p := &r.ping
	var t int64
	for i := 0; i < p.nq; {
		q := p.q[i]
		if q.dst != w.Dst {
			i++
			continue
		}
		if !a.sendRPC(now, r, w, q.dst, q.id, q.off, wire.DataPong|wire.DataDeferred, &t) {
			return
		}
		p.deferredSent(&q, w)
		p.s.Served++
		p.nq--
		copy(p.q[i:p.nq], p.q[i+1:p.nq+1])
	}
}

// deferredSent counts the deferred answer q, sent in w, by its cause
// (PingStats.DeferredToOpen and the next).
func (p *pingState) deferredSent(q *pongReq, w gate.Window) {
	switch {
	case q.booked && q.round == w.Round && q.slot == w.Slot:
		p.s.DeferredToOpen++
	case q.booked:
		p.s.DeferredInSlot++
		if q.readLate >= 0 {
			p.s.DeferredReadLateMaxus = max(p.s.DeferredReadLateMaxus, float64(q.readLate)/1e3)
		}
	case q.known:
		p.s.DeferredNoSlot++
	}
}

// onRPC handles a request received (kernel time stamp rx; 0: unknown) and
// read at now (answer at once if a window to its sender is open and fits
// it, else queue the answer) or an answer (record the round trip).
func (a *Agent) onRPC(now, rx int64, r *rawState, src int, h *wire.DataHdr) {
	p := &r.ping
	if h.Flags&wire.DataPing != 0 {
		var t int64
		if mask := a.g.Open(now); mask != 0 {
			for c := 0; c < 8; c++ {
				if mask&(1<<c) == 0 {
					continue
				}
				if w, ok := a.g.Window(now, c); ok && w.Dst == src && a.sendRPC(now, r, w, src, h.Seq, h.Offset, wire.DataPong, &t) {
					p.s.Served++
					return
				}
			}
		}
		if p.nq == len(p.q) {
			p.s.QueueFull++
			return
		}
		q := pongReq{dst: src, id: h.Seq, off: h.Offset, round: h.Round, slot: int(h.Slot), readLate: -1}
		q.booked, q.known = a.g.Booked(h.Round, int(h.Slot), src)
		if rx > 0 {
			q.readLate = now - rx
		}
		p.q[p.nq] = q
		p.nq++
		p.s.Deferred++
		if p.nq == 1 && src != p.reserve {
			a.report(r.lastRep, r.queued)
		}
		return
	}
	o := &p.out[h.Seq%pingOut]
	if !p.client || o.id != h.Seq || o.done || o.sentAt == 0 {
		return // not ours, a duplicate, or so late its entry was reused
	}
	o.done = true
	rtt, wait := now-o.sentAt, now-o.issueAt
	p.rtt.Add(rtt)
	p.wait.Add(wait)
	p.s.Answered++
	p.s.LastAnswer = now
	late := h.Flags&wire.DataDeferred != 0
	if late {
		p.s.AnsweredLate++
	} else if rx > o.sentAt {
		p.turn(rx - o.sentAt)
	}
	if len(p.samples) < cap(p.samples) {
		p.samples = append(p.samples, PingSample{T: o.sentAt, OffsetUs: float64(o.offset) / 1e3, RTTUs: float64(rtt) / 1e3,
			WaitUs: float64(wait) / 1e3, Deferred: late, Held: o.held})
	} else {
		p.s.SamplesCut++
	}
}

// turn records an in-slot turnaround d and sets need to the largest but
// one of the latest turnN.
func (p *pingState) turn(d int64) {
	p.turns[p.iturn%turnN] = d
	p.iturn++
	var a, b int64 // the largest two
	for _, t := range p.turns {
		if t > a {
			a, b = t, a
		} else if t > b {
			b = t
		}
	}
	p.need = b
}

// finish fills s with the counters and quantiles.
func (p *pingState) finish(s *PingStats) {
	*s = p.s
	if p.rtt != nil {
		s.RTTP50us, s.RTTP95us, s.RTTP99us, s.RTTMaxus = p.rtt.Quantile(0.5), p.rtt.Quantile(0.95), p.rtt.Quantile(0.99), p.rtt.Quantile(1)
		s.WaitP50us, s.WaitP95us, s.WaitP99us, s.WaitMaxus = p.wait.Quantile(0.5), p.wait.Quantile(0.95), p.wait.Quantile(0.99), p.wait.Quantile(1)
		s.Samples = p.samples
	}
}
