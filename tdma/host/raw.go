package host

import (
	"encoding/binary"
	"math"

	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
	"golang.org/x/sys/unix"
)

const (
	ethHdr = 14
	// Every raw data frame's payload starts with the sender's view of its
	// window (wire.WinTrailer): its slot's end plus the guard, after which
	// the next slot's sender may be on the receiver's port. All namespaces
	// share one clock here, so the receiver compares its kernel receive
	// time stamp with it and tells why a frame came late.
	dataHdr   = ethHdr + wire.DataHdrLen + wire.WinTrailerLen
	batch     = 32
	lateOpen  = 100_000 // ns: a window's first frame later than this is a late open
	progressT = 10_000_000
	maxWait   = 1_000_000 // the loop wakes at least every ms (schedules, reports)
)

// rawState is the raw-mode sender and receiver.
type rawState struct {
	remain  []int64  // bytes still to send per destination
	offset  []uint64 // next byte offset per destination
	seq     []uint64 // next sequence number per destination
	expect  int64    // bytes expected from each source
	rxNext  []uint64 // next sequence expected per source
	maxKey  uint64   // highest round<<8|slot seen by this receiver
	meet    gate.Meetings
	maxSrc  int
	winKey  uint64 // the window the last frame went into
	rr      int
	tx      [batch][]byte
	txBuf   [batch][2048]byte
	txPay   [batch]int
	txEnd   [batch]bool // the frame ends an rr block
	txRet   [batch]bool // the frame is one a gate returned, sent again
	ret     retRing
	visit   []uint64 // rr: the window (round<<8|slot) last seen to each destination
	started []bool   // rr: a block was started in that window
	ping    pingState
	rxB     [rawio.MaxBatch][]byte
	rxL     [rawio.MaxBatch]int
	rxT     [rawio.MaxBatch]int64
	rxBuf   [rawio.MaxBatch][2048]byte
	openLat *clock.Lateness
	loopLat *clock.Lateness
	total   int64
	lastRep uint32
	repAt   int64 // when it last reported
	slotLen int64 // the latest schedule's
	// the last batch released: when its last byte leaves the line, and
	// the last control frame heard then
	prevEnd, prevHeard int64
	guard              int64
	queued             func(j int) int64
	fill               fillState
	left               func(j int) bool // data waits for j
	bud                gate.Budget      // what the windows of a round carried against its budgets
}

func (a *Agent) loop() error {
	if err := a.lockThread(); err != nil {
		return err
	}
	if a.cfg.NFQ {
		return a.nfqLoop()
	}
	N := len(a.cfg.Hosts)
	r := &rawState{remain: make([]int64, N), offset: make([]uint64, N), seq: make([]uint64, N), rxNext: make([]uint64, N),
		openLat: clock.NewLateness(), loopLat: clock.NewLateness(), maxSrc: -1, visit: make([]uint64, N), started: make([]bool, N)}
	r.ping.init(&a.cfg.Work)
	r.ret.init(N)
	a.s.KeepsBudgets = true // send keeps to the schedules' slot budgets
	switch a.cfg.Work.Kind {
	case "shuffle":
		for j := range r.remain {
			if j != a.cfg.Index {
				r.remain[j] = a.cfg.Work.Bytes
			}
		}
		r.expect = a.cfg.Work.Bytes
	case "bulk":
		r.remain[a.cfg.Work.Dst] = a.cfg.Work.Bytes
		if a.cfg.Work.Bytes == 0 {
			r.remain[a.cfg.Work.Dst] = math.MaxInt64 / 2
		}
	}
	for i := range r.tx {
		r.tx[i] = r.txBuf[i][:]
	}
	for i := range r.rxB {
		r.rxB[i] = r.rxBuf[i][:]
	}
	var c ctlBufs
	c.init()
	fds := []unix.PollFd{{Fd: int32(a.ctl.Fd()), Events: unix.POLLIN}, {Fd: int32(a.data.Fd()), Events: unix.POLLIN}}
	r.queued = func(j int) int64 { return a.queued(r, j) }
	r.left = func(j int) bool { return r.remain[j] > 0 || r.ret.n[j] > 0 }
	onSched := func(s *wire.Schedule) {
		r.slotLen = int64(s.SlotLen)
		if s.Round != r.lastRep {
			if r.lastRep == 0 {
				r.ping.first(clock.Now())
			}
			r.lastRep, r.repAt = s.Round, clock.Now()
			a.report(s.Round, r.queued)
		}
	}
	nextRep, nextProg, doneAt := int64(0), int64(0), int64(0)
	var target int64
	for !a.stop.Load() {
		now := clock.Now()
		if target != 0 {
			r.loopLat.Add(now - target)
		}
		// Besides on each new schedule, the agent reports at a slot's grant
		// (at most one a slot) once what it has left is near the end: the FM
		// plans a transfer's tail from those reports. Earlier they would only
		// cost a send in the guard before each window.
		if a.pollControl(now, &c, onSched) > 0 && r.lastRep != 0 && now-r.repAt >= r.slotLen/2 && a.nearEnd(r) {
			r.repAt = now
			a.report(r.lastRep, r.queued)
		}
		if a.over(now) {
			break
		}
		a.receive(r)
		if r.lastRep == 0 && now >= nextRep { // until the first schedule
			a.report(0, r.queued)
			nextRep = now + 2_000_000
		}
		a.pingTick(now, r)
		if now >= nextProg {
			a.s.Progress = append(a.s.Progress, Point{T: now, Bytes: r.total})
			nextProg = now + progressT
		}
		if a.cfg.ExitAfter > 0 && a.cfg.Work.Kind == "shuffle" {
			if doneAt == 0 && r.complete(a) {
				doneAt = now
			}
			if doneAt != 0 && now-doneAt > int64(a.cfg.ExitAfter) {
				break
			}
		}
		wake := a.send(now, r)
		gd, opens := a.g.NextDeadlineOpens(now)
		target = min(gd, wake, now+maxWait, r.ping.next)
		a.wait(fds, clock.Now(), target, opens && target == gd)
	}
	a.s.Progress = append(a.s.Progress, Point{T: clock.Now(), Bytes: r.total})
	a.s.Fill.finish(&r.fill, r.left)
	a.s.OpenLateP50, a.s.OpenLateP99 = r.openLat.Quantile(0.5), r.openLat.Quantile(0.99)
	a.s.LoopLateP99 = r.loopLat.Quantile(0.99)
	r.ping.finish(&a.s.Ping)
	return nil
}

// complete reports whether the shuffle is all sent and all received.
func (r *rawState) complete(a *Agent) bool {
	for j := range r.remain {
		if j != a.cfg.Index && (r.remain[j] > 0 || r.ret.n[j] > 0 || a.s.RecvDone[j] == 0) {
			return false
		}
	}
	return true
}

// nearEnd reports whether the host is near the end of what it sends, where
// it reports at every grant (sched.NearTail).
func (a *Agent) nearEnd(r *rawState) bool {
	var left int64
	for j := range a.cfg.Hosts {
		if j != a.cfg.Index {
			left += max(r.queued(j), 0)
		}
	}
	return sched.NearTail(left, len(a.cfg.Hosts), a.cfg.Rate, r.slotLen)
}

// queued is the demand reported for destination j: the bytes waiting for
// it, an rr workload's endless next blocks, the pings of a waiting batch,
// the answers waiting for a window and a pong server's standing reservation.
func (a *Agent) queued(r *rawState, j int) int64 {
	q := r.remain[j] + r.ret.bytes[j]
	if a.cfg.Work.Kind == "rr" && j != a.cfg.Index {
		q += 1 << 40
	}
	return q + r.ping.demand(j)
}

// startBlock starts an rr block to d in window key, if this window has not
// started one yet (a host moves on to the next neighbour at the end of
// each slot, so a block smaller than a slot leaves the rest of it unused).
func (a *Agent) startBlock(r *rawState, d int, key uint64) bool {
	if a.cfg.Work.Kind != "rr" || d == a.cfg.Index {
		return false
	}
	if r.visit[d] != key {
		r.visit[d], r.started[d] = key, false
	}
	if r.started[d] {
		return false
	}
	r.started[d] = true
	r.remain[d] = a.cfg.Work.Bytes
	return true
}

// send releases frames into open windows; it returns when it wants to run
// again (the host's TBF has drained to the backlog bound, or a ping is
// due), MaxInt64 if nothing is waiting.
func (a *Agent) send(now int64, r *rawState) int64 {
	mask := a.g.Open(now)
	if mask == 0 {
		return math.MaxInt64
	}
	wake := int64(math.MaxInt64)
	backlogNs := int64(a.cfg.Backlog) * 8_000_000_000 / int64(a.cfg.Rate)
	for k := 0; k < 8; k++ {
		c := (r.rr + k) % 8
		if mask&(1<<c) == 0 {
			continue
		}
		w, ok := a.g.Window(now, c)
		if !ok || w.Dst < 0 || w.Dst >= len(r.remain) {
			continue
		}
		key := uint64(w.Round)<<8 | uint64(w.Slot)
		a.sendPongs(now, r, w)
		wake = min(wake, a.sendPings(now, r, w, key))
		n := 0
		var vf int64
		for n < batch {
			if vf-now > backlogNs {
				break
			}
			left := r.bud.Left(a.g, w)          // the FM's budget (wire.ScheduleBudget)
			if k := r.ret.find(w.Dst); k >= 0 { // returned by a gate: first
				fl := r.ret.l[k]
				if a.g.Fit(now, w, fl) < fl || int64(fl-dataHdr) > left {
					break
				}
				vf = a.g.Sent(now, w, fl)
				a.resend(r, n, k, w, vf)
				n++
				continue
			}
			if r.remain[w.Dst] <= 0 && !a.startBlock(r, w.Dst, key) || left <= 0 {
				break
			}
			want := int(min(int64(a.cfg.MTU+ethHdr), min(r.remain[w.Dst], left)+dataHdr))
			fl := a.g.Fit(now, w, max(want, 60))
			if fl < dataHdr+1 {
				break
			}
			pay := int(min(int64(fl-dataHdr), r.remain[w.Dst], left))
			vf = a.g.Sent(now, w, fl)
			a.frame(r, n, w, pay, fl, vf)
			n++
		}
		if n == 0 {
			continue
		}
		if key != r.winKey {
			r.winKey = key
			a.s.ClassWindows[c]++
			if w.OpenAt > 0 {
				l := now - w.OpenAt
				r.openLat.Add(l)
				if l > lateOpen {
					a.s.LateOpens++
				}
			}
		}
		k2, _ := a.data.Send(r.tx[:n])
		for i := k2; i < n; i++ { // refused by the kernel: roll back, send again later
			a.s.TxShort++
			r.bud.Sent(w, -int64(r.txPay[i]))
			if r.txRet[i] {
				if !r.ret.put(r.tx[i], w.Dst, int64(r.txPay[i])) {
					a.s.RetFull++
				}
				continue
			}
			r.remain[w.Dst] += int64(r.txPay[i])
			r.offset[w.Dst] -= uint64(r.txPay[i])
			r.seq[w.Dst]--
		}
		pay := int64(0)
		for i := 0; i < k2; i++ {
			pay += int64(r.txPay[i])
			a.s.ClassBytes[c] += uint64(len(r.tx[i]))
			if r.txRet[i] {
				a.s.Resent++
				continue
			}
			a.s.SentBytes[w.Dst] += int64(r.txPay[i])
			if r.txEnd[i] {
				a.s.RRBlocks++
			}
		}
		if k2 > 0 {
			a.booked(r, now, vf)
			a.s.Fill.batch(&r.fill, key, w.Dst, w.OpenAt, w.Close, now, vf, pay, r.left)
		}
		if a.s.FirstSend == 0 {
			a.s.FirstSend = now
		}
		a.s.LastSend = now
		r.rr = c + 1
		if vf-now > backlogNs {
			return min(wake, vf-backlogNs)
		}
		return now + 1 // more to send: loop again at once
	}
	return wake
}

// booked records a batch released at now whose last byte leaves the line
// at end: the silence before it and how long after the last control frame
// heard it ends.
func (a *Agent) booked(r *rawState, now, end int64) {
	heard := a.g.LastHeard()
	if r.prevEnd != 0 && now > r.prevEnd {
		a.s.Gaps.Add(SendGap{From: r.prevEnd, To: now, Heard: r.prevHeard})
	}
	r.prevEnd, r.prevHeard = end, heard
	if heard != 0 {
		a.s.SendSinceCtlMax = max(a.s.SendSinceCtlMax, end-heard)
	}
}

// frame builds frame i of the batch: pay bytes to w.Dst in a frame of fl bytes.
func (a *Agent) frame(r *rawState, i int, w gate.Window, pay, fl int, line int64) {
	b := r.txBuf[i][:fl]
	a.header(b, w, w.Dst, r.seq[w.Dst], r.offset[w.Dst], 0, line)
	r.tx[i] = b
	r.txPay[i] = pay
	r.txRet[i] = false
	r.bud.Sent(w, int64(pay))
	r.seq[w.Dst]++
	r.offset[w.Dst] += uint64(pay)
	r.remain[w.Dst] -= int64(pay)
	r.txEnd[i] = a.cfg.Work.Kind == "rr" && r.remain[w.Dst] == 0
}

// resend puts returned frame k of the ring into slot i of the batch, in
// window w, leaving its line at line: the same sequence number, offset and
// payload, a new release time and window.
func (a *Agent) resend(r *rawState, i, k int, w gate.Window, line int64) {
	l := r.ret.l[k]
	b := r.txBuf[i][:l]
	copy(b, r.ret.buf[k][:l])
	var h wire.DataHdr
	wire.DecodeDataHdr(b[ethHdr:], &h) // it decoded when it came back
	a.header(b, w, w.Dst, h.Seq, h.Offset, h.Flags&^(wire.DataFreeRun|wire.DataReturned|wire.DataHeld), line)
	r.tx[i] = b
	r.txPay[i] = l - dataHdr
	r.txEnd[i], r.txRet[i] = false, true
	r.bud.Sent(w, int64(l-dataHdr))
	r.ret.take(k, int64(l-dataHdr))
}

// returned holds frame i (l bytes, header h), one of this host's that the
// exit or arrival gate sent back, for a later window of its destination; the
// requests and answers of the RPC workload are not sent again (they are
// counted lost).
func (a *Agent) returned(r *rawState, i, l int, h *wire.DataHdr) {
	a.s.Returned++
	a.stopped(r.rxB[i][ethHdr+wire.DataHdrLen:l], l, h)
	if h.Flags&(wire.DataPing|wire.DataPong) != 0 {
		a.s.RetRPC++
		return
	}
	if !r.ret.put(r.rxB[i][:l], int(h.Dst), int64(l-dataHdr)) {
		a.s.RetFull++
	}
}

// stopped counts a frame of l bytes (header h, window trailer in tr) that
// a gate stopped by its cause: a collision that did not happen.
func (a *Agent) stopped(tr []byte, l int, h *wire.DataHdr) {
	var t wire.WinTrailer
	if wire.DecodeWinTrailer(tr, &t) != nil || t.Entry == wire.WinUnknown {
		return
	}
	c, late := gate.Stopped(h.SendTS, &t, h.Flags)
	a.s.Stopped.Log(&a.s.StopSample, gate.MaxCollisionSample, gate.Collision{Src: a.cfg.Index, Dst: int(h.Dst), Round: h.Round, Slot: int(h.Slot),
		Cause: c, LateUs: late, FreeRun: h.Flags&wire.DataFreeRun != 0}, l, h.SendTS, h.SendTS+int64(t.Entry), &t)
}

// header writes the Ethernet and data headers and the window trailer into
// b, a frame to dst sent in w whose last byte leaves the line at line.
func (a *Agent) header(b []byte, w gate.Window, dst int, seq, off uint64, flags uint8, line int64) {
	copy(b[0:6], a.macs[dst][:])
	copy(b[6:12], a.ctl.MAC[:])
	binary.BigEndian.PutUint16(b[12:], wire.DataEtherType)
	now := clock.Now()
	h := wire.DataHdr{Src: uint16(a.cfg.Index), Dst: uint16(dst), Class: uint8(w.Class), Round: w.Round, Slot: uint8(w.Slot),
		Seq: seq, Offset: off, SendTS: now, Flags: flags}
	if w.FreeRun {
		h.Flags |= wire.DataFreeRun
	}
	h.Encode(b[ethHdr:])
	t := w.Trailer(now, line, a.g.LeaseEnd())
	t.Encode(b[ethHdr+wire.DataHdrLen:])
}

// receive counts data frames per source, losses and collisions.
func (a *Agent) receive(r *rawState) {
	var h wire.DataHdr
	for {
		n, err := a.data.Recv(r.rxB[:], r.rxL[:], r.rxT[:])
		if err != nil || n == 0 {
			return
		}
		now := clock.Now()
		for i := 0; i < n; i++ {
			l := r.rxL[i]
			if l < dataHdr || wire.DecodeDataHdr(r.rxB[i][ethHdr:l], &h) != nil || int(h.Src) >= len(r.rxNext) || int(h.Dst) >= len(r.rxNext) {
				a.s.BadData++
				continue
			}
			if int(h.Src) == a.cfg.Index && int(h.Dst) != a.cfg.Index {
				a.returned(r, i, l, &h)
				continue
			}
			if int(h.Dst) != a.cfg.Index {
				a.s.BadData++
				continue
			}
			src := int(h.Src)
			a.checkWindow(r, i, l, &h)
			if h.Flags&(wire.DataPing|wire.DataPong) != 0 {
				a.onRPC(now, r.rxT[i], r, src, &h)
				continue
			}
			a.s.RecvFrames++
			switch {
			case h.Seq > r.rxNext[src]:
				a.s.RecvLost += h.Seq - r.rxNext[src]
				r.rxNext[src] = h.Seq + 1
			case h.Seq < r.rxNext[src]: // late: it was counted lost
				a.s.Reordered++
				a.s.RecvLost--
			default:
				r.rxNext[src] = h.Seq + 1
			}
			pay := int64(l - dataHdr)
			if h.Offset+uint64(pay) > uint64(a.cfg.Work.Bytes) && a.cfg.Work.Kind == "shuffle" {
				pay = max(0, int64(a.cfg.Work.Bytes)-int64(h.Offset))
			}
			a.s.RecvBytes[src] += pay
			r.total += pay
			if r.expect > 0 && a.s.RecvDone[src] == 0 && a.s.RecvBytes[src] >= r.expect {
				a.s.RecvDone[src] = now
			}
			key := uint64(h.Round)<<8 | uint64(h.Slot)
			switch {
			case key > r.maxKey:
				r.maxKey, r.maxSrc = key, src
			case key < r.maxKey && src != r.maxSrc:
				a.s.CrossOrder++
			}
		}
	}
}

// checkWindow counts received frame i (l bytes, header h) as a collision
// if it arrived (kernel time stamp) after its slot's end plus the guard or
// was released before the slot's start plus the guard, by cause, and a
// meeting if it was in the switch at once with the frame before it from
// another sender.
func (a *Agent) checkWindow(r *rawState, i, l int, h *wire.DataHdr) {
	rx := r.rxT[i]
	var t wire.WinTrailer
	if wire.DecodeWinTrailer(r.rxB[i][ethHdr+wire.DataHdrLen:l], &t) != nil {
		return
	}
	if t.Entry != wire.WinUnknown {
		a.s.Entered++
		if gate.EnteredOutside(h.SendTS, &t) {
			a.s.EnteredOutside++
		}
	}
	if rx == 0 {
		return
	}
	c, late, ok := gate.Classify(h.SendTS, rx, &t)
	entry := int64(0)
	if t.Entry != wire.WinUnknown {
		entry = h.SendTS + int64(t.Entry)
		a.s.Transit.Add(rx - entry)
	}
	cm := c
	if !ok {
		cm = gate.NumCauses
	}
	if on, met := r.meet.Next(int(h.Src), entry, rx, cm); met && on < gate.NumCauses {
		a.s.Causes[on].Met++
	}
	a.s.MetInSlot = r.meet.InSlot
	if !ok {
		return
	}
	a.s.Collisions++
	a.s.CollBytes += uint64(l)
	a.s.CollMaxUs = max(a.s.CollMaxUs, late)
	a.s.Causes.Log(&a.s.CollSample, gate.MaxCollisionSample, gate.Collision{Src: int(h.Src), Dst: a.cfg.Index, Round: h.Round, Slot: int(h.Slot),
		Cause: c, LateUs: late, FreeRun: h.Flags&wire.DataFreeRun != 0}, l, h.SendTS, rx, &t)
}
