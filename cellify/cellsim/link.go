package cellsim

import (
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Loss decides whether a frame is lost on a link direction.
type Loss interface {
	Drop(rng *rand.Rand, now int64, frame []byte) bool
}

// Bernoulli loses every frame independently with probability P.
type Bernoulli struct{ P float64 }

// Drop implements Loss.
func (b Bernoulli) Drop(rng *rand.Rand, _ int64, _ []byte) bool {
	return b.P > 0 && rng.Float64() < b.P
}

// TypeLoss loses frames of link-header type t with probability P[t]
// (9 cell, 10 credit request, 11 grant, 12 REACH); frames without the
// link EtherType never.
type TypeLoss struct{ P [16]float64 }

// Drop implements Loss.
func (l *TypeLoss) Drop(rng *rand.Rand, _ int64, frame []byte) bool {
	t, ok := seqhdr.FrameType(frame)
	return ok && l.P[t] > 0 && rng.Float64() < l.P[t]
}

// LinkConfig describes a link; both directions get the same.
type LinkConfig struct {
	Rate   float64 // bits/s
	Delay  int64   // propagation, ns
	Buffer int     // bytes of data frames a direction's queue holds; 0: DefaultLinkBuffer
	Loss   Loss    // nil: none
	// LG models LinkGuardian under the cells: a lost frame is sent again
	// one round trip later (link-locally, before queued frames); a frame is
	// held until its acknowledgement would be back (one round trip after it
	// was sent), and when the link dies the frames held, queued or waiting
	// for their retransmission go back to the sending node's Respray.
	LG bool
}

// DefaultLinkBuffer is a direction's default queue: 64 KiB.
const DefaultLinkBuffer = 64 << 10

// ctrlBuffer bounds a direction's control queue (its own lane).
const ctrlBuffer = 64 << 10

// Link is a simulated link between two nodes' link ports.
type Link struct {
	ID     int
	Cfg    LinkConfig
	AB, BA *Dir // from the first node given to Connect, and back
	up     bool
}

// DirStats counts one direction of a link. Cells are data frames.
type DirStats struct {
	TxFrames, TxBytes    uint64 // frames serialized (lost ones included)
	TxCells, TxCellBytes uint64
	BusyNs               int64
	Lost, LostCells      uint64 // to the loss model (with LG: sent again)
	FirstLoss            int64  // time of the first loss (valid if Lost > 0)
	TailDrops, TailCells uint64 // full queue
	DeathDrops           uint64 // queued or in flight when the link died (without LG)
	DeathCells           uint64
	Blackholed           uint64 // sent to a down link
	Retx                 uint64 // LG retransmissions
	HandedBack           uint64 // LG frames given back to Respray
	MaxQueue             int    // bytes
}

// Dir is one direction of a link.
type Dir struct {
	sim              *Sim
	Link             *Link
	id               int32
	From, To         *Node
	FromPort, ToPort int
	rate             float64
	delay            int64
	buffer           int
	loss             Loss
	lg               bool
	up               bool
	epoch            int64
	pauseTo          int64 // frames due before this arrive then, in order

	ctrl, data fifo[link.Frame]
	qBytes     int // queued bytes (data and control, the frame on the wire included)
	dataBytes  int
	ctrlBytes  int
	busy       bool
	cur        link.Frame
	curCell    bool
	fly        fifo[flying]
	held       fifo[flying] // LG copies until acknowledged (at = ack time)
	retx       fifo[flying] // LG frames lost, waiting for their retransmission (at = due)

	mon *lossWindow

	// QHist, if non-nil, counts the data frames queued (the one on the
	// wire included) seen by each arriving data frame: QHist[k].
	QHist []uint64
	Stats DirStats
}

type flying struct {
	f  link.Frame
	at int64
}

// Connect joins a's next link port to b's next link port.
func (s *Sim) Connect(a, b *Node, cfg LinkConfig) *Link {
	if cfg.Buffer == 0 {
		cfg.Buffer = DefaultLinkBuffer
	}
	l := &Link{ID: len(s.Links), Cfg: cfg, up: true}
	mk := func(from, to *Node) *Dir {
		d := &Dir{sim: s, Link: l, id: int32(len(s.dirs)), From: from, To: to, FromPort: len(from.ports),
			rate: cfg.Rate, delay: cfg.Delay, buffer: cfg.Buffer, loss: cfg.Loss, lg: cfg.LG, up: true}
		s.dirs = append(s.dirs, d)
		return d
	}
	l.AB, l.BA = mk(a, b), mk(b, a)
	l.AB.ToPort, l.BA.ToPort = len(b.ports), len(a.ports)
	a.ports = append(a.ports, l.AB)
	b.ports = append(b.ports, l.BA)
	s.Links = append(s.Links, l)
	return l
}

// Up reports whether the link is up.
func (l *Link) Up() bool { return l.up }

// Pause holds every frame that would arrive on direction d before until
// and delivers them then, in order: a receiving worker kept from running.
func (d *Dir) Pause(until int64) { d.pauseTo = until }

// SetDelay changes both directions' propagation delay for the frames
// that leave from now on (a longer delay keeps the frames in order).
func (l *Link) SetDelay(d int64) { l.AB.delay, l.BA.delay = d, d }

// Monitor makes the loss monitor report both directions' loss rate over
// their last frames frames to the receiving node every Config.LossReport.
func (l *Link) Monitor(frames int) {
	l.AB.mon, l.BA.mon = newLossWindow(frames), newLossWindow(frames)
}

// lossWindow is the outcome of a direction's last frames.
type lossWindow struct {
	lost       []bool
	next, n, k int // ring position, frames held, lost among them
}

func newLossWindow(frames int) *lossWindow { return &lossWindow{lost: make([]bool, max(frames, 1))} }

func (w *lossWindow) add(lost bool) {
	if w.n == len(w.lost) {
		if w.lost[w.next] {
			w.k--
		}
	} else {
		w.n++
	}
	w.lost[w.next] = lost
	if lost {
		w.k++
	}
	w.next = (w.next + 1) % len(w.lost)
}

func (w *lossWindow) rate() float64 {
	if w.n == 0 {
		return 0
	}
	return float64(w.k) / float64(w.n)
}

// DropCells loses the cells whose index among the cells serialized on the
// direction (from 0) is in Nth; it keeps a copy of each cell it drops.
type DropCells struct {
	Nth     map[int]bool
	seen    int
	Dropped [][]byte
}

// Drop implements Loss.
func (d *DropCells) Drop(_ *rand.Rand, _ int64, frame []byte) bool {
	if !isCell(frame) {
		return false
	}
	i := d.seen
	d.seen++
	if d.Nth[i] {
		d.Dropped = append(d.Dropped, append([]byte(nil), frame...))
		return true
	}
	return false
}

// SetLoss sets both directions' loss model.
func (l *Link) SetLoss(m Loss) { l.AB.loss, l.BA.loss = m, m }

// SetUp brings the link down or up now. With notify both nodes hear of it
// at once (carrier); otherwise only REACH misses tell them. Going down
// drops what is queued and on the wire, or with LG hands it back to the
// senders' Respray.
func (l *Link) SetUp(up, notify bool) {
	if l.up == up {
		return
	}
	l.up = up
	s := l.AB.sim
	for _, d := range []*Dir{l.AB, l.BA} {
		d.up = up
		d.epoch++
		if !up {
			d.die()
		}
	}
	if notify {
		for _, d := range []*Dir{l.AB, l.BA} {
			if !d.From.dead {
				d.From.SetLinkUp(s.Now, d.FromPort, up)
			}
		}
	}
	for _, d := range []*Dir{l.AB, l.BA} {
		s.settle(d.From)
	}
}

func isCell(b []byte) bool {
	t, ok := seqhdr.FrameType(b)
	return ok && t == seqhdr.TypeCell
}

// die empties the direction: without LG everything is lost; with LG the
// frames not known to have arrived go back to the sender.
func (d *Dir) die() {
	s := d.sim
	var back []link.Frame
	lose := func(f link.Frame) {
		d.Stats.DeathDrops++
		if isCell(s.Mem.Bytes(f.H, f.Len)) {
			d.Stats.DeathCells++
		}
		s.Mem.Free(f)
	}
	keep := func(f link.Frame) {
		if d.lg {
			back = append(back, f)
		} else {
			lose(f)
		}
	}
	if d.busy {
		keep(d.cur)
		d.busy = false
	}
	for d.ctrl.len() > 0 {
		keep(d.ctrl.pop())
	}
	for d.data.len() > 0 {
		keep(d.data.pop())
	}
	d.qBytes, d.dataBytes, d.ctrlBytes = 0, 0, 0
	for d.fly.len() > 0 {
		fl := d.fly.pop()
		if d.lg {
			s.Mem.Free(fl.f) // its copy is held
		} else {
			lose(fl.f)
		}
	}
	for d.retx.len() > 0 {
		back = append(back, d.retx.pop().f)
	}
	for d.held.len() > 0 {
		h := d.held.pop()
		if h.at <= s.Now {
			s.Mem.Free(h.f)
		} else {
			back = append(back, h.f)
		}
	}
	if len(back) > 0 && d.From.dead {
		for _, f := range back {
			lose(f)
		}
	} else if len(back) > 0 {
		d.Stats.HandedBack += uint64(len(back))
		d.From.Respray(s.Now, d.FromPort, back)
	}
}

// enqueue takes a frame the node sends on this direction.
func (d *Dir) enqueue(f link.Frame, ctrl bool) {
	s := d.sim
	if !d.up {
		d.Stats.Blackholed++
		s.Mem.Free(f)
		return
	}
	if ctrl {
		if d.ctrlBytes+f.Len > ctrlBuffer {
			d.Stats.TailDrops++
			s.Mem.Free(f)
			return
		}
		d.ctrl.push(f)
		d.ctrlBytes += f.Len
	} else {
		cell := isCell(s.Mem.Bytes(f.H, f.Len))
		if d.dataBytes+f.Len > d.buffer {
			d.Stats.TailDrops++
			if cell {
				d.Stats.TailCells++
			}
			s.Mem.Free(f)
			return
		}
		if d.QHist != nil {
			k := min(d.data.len(), len(d.QHist)-1)
			if d.busy && d.curCell {
				k = min(k+1, len(d.QHist)-1)
			}
			d.QHist[k]++
		}
		d.data.push(f)
		d.dataBytes += f.Len
	}
	d.qBytes += f.Len
	d.Stats.MaxQueue = max(d.Stats.MaxQueue, d.qBytes)
	d.start()
}

// start puts the next frame on the wire: retransmissions, then control,
// then data.
func (d *Dir) start() {
	if d.busy || !d.up {
		return
	}
	s := d.sim
	switch {
	case d.ctrl.len() > 0:
		d.cur = d.ctrl.pop()
		d.ctrlBytes -= d.cur.Len
		d.curCell = false
	case d.data.len() > 0:
		d.cur = d.data.pop()
		d.dataBytes -= d.cur.Len
		d.curCell = isCell(s.Mem.Bytes(d.cur.H, d.cur.Len))
	default:
		return
	}
	d.busy = true
	t := s.serNs(d.cur.Len, d.rate)
	d.Stats.BusyNs += t
	s.push(event{at: s.Now + t, kind: evTxDone, i: d.id, c: d.epoch})
}

func (d *Dir) txDone(epoch int64) {
	if epoch != d.epoch || !d.busy {
		return
	}
	s := d.sim
	f := d.cur
	d.busy = false
	d.qBytes -= f.Len
	d.Stats.TxFrames++
	d.Stats.TxBytes += uint64(f.Len)
	if d.curCell {
		d.Stats.TxCells++
		d.Stats.TxCellBytes += uint64(f.Len)
	}
	lost := d.loss != nil && d.loss.Drop(s.Rng, s.Now, s.Mem.Bytes(f.H, f.Len))
	if d.mon != nil {
		d.mon.add(lost)
	}
	for d.held.len() > 0 && d.held.peek().at <= s.Now {
		s.Mem.Free(d.held.pop().f)
	}
	if lost {
		if d.Stats.Lost == 0 {
			d.Stats.FirstLoss = s.Now
		}
		d.Stats.Lost++
		if d.curCell {
			d.Stats.LostCells++
		}
		if d.lg {
			// The receiver sees the gap when the next frame arrives and
			// its notification takes a delay back: one round trip.
			due := s.Now + 2*d.delay + s.serNs(f.Len, d.rate)
			d.retx.push(flying{f: f, at: due})
			s.push(event{at: due, kind: evLGRetx, i: d.id, c: d.epoch})
		} else {
			s.Mem.Free(f)
		}
	} else {
		if d.lg {
			if c, ok := s.Mem.copyOf(f); ok {
				d.held.push(flying{f: c, at: s.Now + 2*d.delay})
			}
		}
		at := s.Now + d.delay
		d.fly.push(flying{f: f, at: at})
		s.push(event{at: at, kind: evArrive, i: d.id, c: d.epoch})
	}
	d.start()
}

func (d *Dir) arrive(epoch int64) {
	if epoch != d.epoch || d.fly.len() == 0 {
		return
	}
	if d.pauseTo > d.sim.Now {
		d.sim.push(event{at: d.pauseTo, kind: evArrive, i: d.id, c: epoch})
		return
	}
	fl := d.fly.pop()
	if d.To.dead {
		d.To.Lost++
		d.sim.Mem.Free(fl.f)
		return
	}
	d.To.LinkRx(d.sim.Now, d.ToPort, fl.f)
	d.sim.settle(d.To)
}

// retxDue puts the LG frame whose retransmission is due at the head of the
// data queue.
func (d *Dir) retxDue(epoch int64) {
	if epoch != d.epoch || d.retx.len() == 0 {
		return
	}
	f := d.retx.pop().f
	d.Stats.Retx++
	d.data.pushFront(f)
	d.dataBytes += f.Len
	d.qBytes += f.Len
	d.start()
}

// Queue returns the bytes queued on the direction.
func (d *Dir) Queue() int { return d.qBytes }

// Up reports whether the direction is up.
func (d *Dir) Up() bool { return d.up }
