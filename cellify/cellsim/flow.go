package cellsim

import (
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/link"
)

// FlowConfig describes a traffic source between two hosts. A flow is
// constant-rate (Rate > 0: a frame every Size·8/Rate, UDP-like) or
// window-based (Window > 0: at most Window bytes unacknowledged; the
// destination acknowledges each frame AckDelay after it arrives; a frame
// unacknowledged for RTO, or passed by a later acknowledgement, is taken as
// lost and frees its room).
type FlowConfig struct {
	Src, Dst *Host
	Size     int // frame bytes (60..cellify.MaxHostFrame)
	SizeMax  int // if > Size: sizes uniform in [Size, SizeMax]
	Rate     float64
	Poisson  bool // constant-rate flows: exponential gaps of the same mean
	Window   int
	RTO      int64 // 0: 2 ms
	AckDelay int64 // 0: 10 µs
	Start    int64 // absolute; a start before Now starts at once
	Stop     int64 // 0: never
	Tagged   bool  // 802.1Q tag with PCP
	PCP      int
	Port     uint16 // UDP source port; 0: 1000 + flow id
}

// FlowStats counts a flow. Received frames are checked against the seqs
// sent: each once, in order.
type FlowStats struct {
	Sent, SentBytes  uint64 // made by the source
	Out, OutBytes    uint64 // handed to the edge by the host
	Recv, RecvBytes  uint64
	Dup              uint64 // a seq received again
	Reordered        uint64 // a seq received after a later one
	Skipped          uint64 // seqs passed over by a later arrival (lost so far)
	TimedOut         uint64 // window: frames declared lost
	FirstRecv, LastR int64
}

// Flow is a traffic source.
type Flow struct {
	ID  int
	cfg FlowConfig
	sim *Sim
	rng *rand.Rand

	seq      int
	start    int64
	ticks    int64
	next     float64 // ns after start of the next frame
	interval float64
	inflight int
	out      fifo[outstanding]
	expect   int      // receiver: the next seq expected
	seen     []uint64 // receiver: bitmap of seqs received
	timer    bool

	Stats FlowStats
}

type outstanding struct {
	seq, size int
	at        int64
}

// AddFlow adds a traffic source.
func (s *Sim) AddFlow(cfg FlowConfig) *Flow {
	if cfg.RTO == 0 {
		cfg.RTO = 2_000_000
	}
	if cfg.AckDelay == 0 {
		cfg.AckDelay = 10_000
	}
	cfg.Size = min(max(cfg.Size, 60), cellify.MaxHostFrame)
	cfg.SizeMax = min(cfg.SizeMax, cellify.MaxHostFrame)
	f := &Flow{ID: len(s.Flows), cfg: cfg, sim: s, rng: rand.New(rand.NewPCG(s.cfg.Seed^0xf10, uint64(len(s.Flows))))}
	if f.cfg.Port == 0 {
		f.cfg.Port = uint16(1000 + f.ID)
	}
	s.Flows = append(s.Flows, f)
	f.start = max(cfg.Start, s.Now)
	if cfg.Rate > 0 {
		f.interval = float64(f.meanSize()+s.cfg.Overhead) * 8e9 / cfg.Rate
	}
	s.push(event{at: f.start, kind: evFlow, i: int32(f.ID)})
	return f
}

// Config returns the flow's configuration.
func (f *Flow) Config() FlowConfig { return f.cfg }

func (f *Flow) meanSize() int {
	if f.cfg.SizeMax > f.cfg.Size {
		return (f.cfg.Size + f.cfg.SizeMax) / 2
	}
	return f.cfg.Size
}

func (f *Flow) size() int {
	if f.cfg.SizeMax > f.cfg.Size {
		return f.cfg.Size + f.rng.IntN(f.cfg.SizeMax-f.cfg.Size+1)
	}
	return f.cfg.Size
}

func (f *Flow) stopped() bool { return f.cfg.Stop > 0 && f.sim.Now >= f.cfg.Stop }

// emit makes the next frame and hands it to the source host.
func (f *Flow) emit(n int) bool {
	s := f.sim
	h, ok := s.Mem.Alloc(n)
	if !ok {
		return false
	}
	putFlowFrame(s.Mem.Bytes(h, n), f.cfg.Src, f.cfg.Dst, &f.cfg, f.ID, f.seq)
	f.seq++
	f.Stats.Sent++
	f.Stats.SentBytes += uint64(n)
	return f.cfg.Src.send(link.Frame{H: h, Len: n})
}

func (f *Flow) tick() {
	s := f.sim
	if f.stopped() {
		return
	}
	if f.cfg.Rate > 0 {
		f.emit(f.size())
		if f.cfg.Poisson {
			f.next += f.rng.ExpFloat64() * f.interval
		} else {
			f.ticks++
			f.next = float64(f.ticks) * f.interval
		}
		s.push(event{at: f.start + int64(f.next), kind: evFlow, i: int32(f.ID)})
		return
	}
	f.timer = false
	for f.out.len() > 0 && f.out.peek().at+f.cfg.RTO <= s.Now {
		o := f.out.pop()
		f.inflight -= o.size
		f.Stats.TimedOut++
	}
	f.fill()
}

// fill sends while the window has room and arms the RTO timer.
func (f *Flow) fill() {
	s := f.sim
	for !f.stopped() {
		n := f.size()
		if f.inflight+n > f.cfg.Window && f.inflight > 0 {
			break
		}
		f.out.push(outstanding{seq: f.seq, size: n, at: s.Now})
		f.inflight += n
		f.emit(n)
	}
	if f.out.len() > 0 && !f.timer {
		f.timer = true
		s.push(event{at: f.out.peek().at + f.cfg.RTO, kind: evFlow, i: int32(f.ID)})
	}
}

// ack: the destination received seq; earlier seqs still outstanding were
// lost (a flow's frames arrive in order).
func (f *Flow) ack(seq int) {
	for f.out.len() > 0 && f.out.peek().seq <= seq {
		o := f.out.pop()
		f.inflight -= o.size
		if o.seq < seq {
			f.Stats.TimedOut++
		}
	}
	f.fill()
}

// recv accounts a frame of the flow at its destination.
func (f *Flow) recv(seq, n int) {
	s := f.sim
	w := seq / 64
	for len(f.seen) <= w {
		f.seen = append(f.seen, 0)
	}
	if f.seen[w]&(1<<(seq%64)) != 0 {
		f.Stats.Dup++
		return
	}
	f.seen[w] |= 1 << (seq % 64)
	if f.Stats.Recv == 0 {
		f.Stats.FirstRecv = s.Now
	}
	f.Stats.Recv++
	f.Stats.RecvBytes += uint64(n)
	f.Stats.LastR = s.Now
	switch {
	case seq == f.expect:
		f.expect++
	case seq > f.expect:
		f.Stats.Skipped += uint64(seq - f.expect)
		f.expect = seq + 1
	default:
		f.Stats.Reordered++
		f.Stats.Skipped--
	}
	if f.cfg.Window > 0 {
		s.push(event{at: s.Now + f.cfg.AckDelay, kind: evAck, i: int32(f.ID), a: int64(seq)})
	}
}

// Lost returns the frames sent and not received (so far).
func (f *Flow) Lost() uint64 { return f.Stats.Sent - f.Stats.Recv }
