package tdmasim

import (
	"math"
	"math/bits"

	"github.com/linkfabric/linkfabric/tdma/fmcore"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/sched"
	"github.com/linkfabric/linkfabric/tdma/wire"
)

// sent is a data frame on a host's wire, checked against the FM's
// timeline at the end of the run.
type sent struct {
	src, dst int16
	bytes    int32
	t0, t1   int64
}

func (s *Sim) frozenAt(t int64) bool {
	return s.cfg.FreezeFor > 0 && t >= s.cfg.FreezeAt && t < s.cfg.FreezeAt+s.cfg.FreezeFor
}

func (s *Sim) onFM() {
	if s.frozenAt(s.now) {
		s.push(event{at: s.cfg.FreezeAt + s.cfg.FreezeFor, kind: evFM})
		return
	}
	s.emit = s.fm.Emit(s.now, s.emit[:0])
	if st, k := s.fm.LastStall(); k != s.stalls {
		s.stalls = k
		s.plan.Stalled(st.From, st.To) // as tdma fm does: its slots skipped carried nothing
	}
	if r, _, _ := s.fm.Current(); r != s.curRound || r == nil { // a round (or an idle slot) starts: the next is planned
		s.curRound = r
		s.computeAt = s.now
	}
	if _, _, ok := s.fm.Want(); ok && s.now >= s.computeAt {
		s.publish(s.now)
	}
	for pos, e := range s.emit {
		s.sendCtl(pos, &e)
	}
	s.push(event{at: s.fm.NextDeadline(), kind: evFM})
}

// report is host i's demand report, made as the agents make it: when the
// schedule of a round it has not reported for reaches it, which happens as
// the round before that one starts (and at each slot's grant: onCtl).
func (s *Sim) report(i int, round uint32) {
	if round == s.lastRep[i] {
		return
	}
	s.lastRep[i] = round
	s.snapshot(i)
}

// snapshot takes host i's report now: its bytes left and the windows it
// has lost, from its gate's counters as an agent's report carries them.
func (s *Sim) snapshot(i int) {
	copy(s.rep[i], s.hosts[i].remain)
	s.repAt[i] = s.now
	st := s.hosts[i].g.Stats()
	s.lost[i] = (&wire.Counters{CtlLost: st.CtlLost, FreeRunOpens: st.FreeRunOpens}).LostWindows()
}

// publish plans the next round from the reports as the FM does
// (sched.Planner) and hands it to the FM and the hosts.
func (s *Sim) publish(now int64) {
	id, _, ok := s.fm.Want()
	if !ok {
		return
	}
	N := s.cfg.Hosts
	d := sched.NewDemand(N)
	for i := 0; i < N; i++ {
		copy(d.Bytes[i], s.rep[i])
	}
	copy(d.Lost, s.lost)
	r := s.plan.Next(id, now, d, s.repAt)
	for _, b := range s.plan.Payload() {
		if s.res.PayloadMin == 0 || b < s.res.PayloadMin {
			s.res.PayloadMin = b
		}
	}
	if err := s.fm.Publish(now, r); err != nil {
		s.plan.Forget(r.ID) // too late: the FM idles a slot and wants the next number
		return
	}
	s.computeAt = math.MaxInt64
	for h := 0; h < N; h++ {
		var m wire.Schedule
		fmcore.ScheduleFor(r, h, s.cfg.LeaseSlots, s.cfg.Stagger, &m)
		var b [wire.MaxScheduleLen]byte
		k, err := m.Encode(b[:])
		if err != nil {
			panic(err) // a round fmcore accepted always encodes
		}
		s.schPool = append(s.schPool, wire.Schedule{})
		if err := wire.DecodeSchedule(b[:k], &s.schPool[len(s.schPool)-1]); err != nil {
			panic(err)
		}
		// Each schedule goes ScheduleCopies times, half a slot apart: a lost
		// one would cost the host a whole round.
		for c := 0; c < s.cfg.ScheduleCopies; c++ {
			if s.cfg.CtlLoss > 0 && s.rng.Float64() < s.cfg.CtlLoss {
				continue
			}
			at := now + int64(c)*s.cfg.Slot/2 + s.cfg.CtlDelay.Sample(s.rng)
			s.push(event{at: at, kind: evSched, i: int32(h), a: int64(len(s.schPool) - 1)})
		}
	}
}

// sendCtl puts an FM frame on its way: serialized behind the frames before
// it in the batch, delayed, maybe lost, then queued at the host's port.
func (s *Sim) sendCtl(pos int, e *fmcore.Emission) {
	s.res.CtlSent++
	s.res.CtlBytes += int64(len(s.ctlPool[0]) + s.cfg.Overhead)
	if s.cfg.CtlLoss > 0 && s.rng.Float64() < s.cfg.CtlLoss {
		s.res.CtlLost++
		return
	}
	var idx int32
	if n := len(s.ctlFree); n > 0 {
		idx = s.ctlFree[n-1]
		s.ctlFree = s.ctlFree[:n-1]
	} else {
		s.ctlPool = append(s.ctlPool, s.ctlPool[0])
		idx = int32(len(s.ctlPool) - 1)
	}
	if _, err := e.Grant.Encode(s.ctlPool[idx][:]); err != nil {
		panic(err)
	}
	h := s.hosts[e.Host]
	extra := int64(0)
	if f := &s.cfg.Fault; e.Host == f.Host && e.Grant.OpenNs > 0 {
		k := s.grantSlot(&e.Grant)
		switch {
		case f.Kind == AfterLease && k > f.Slot && k <= f.Slot+int64(s.cfg.LeaseSlots)+2:
			s.ctlFree = append(s.ctlFree, idx)
			return // the host hears nothing
		case f.Kind == GrantLate && (k == f.Slot || k == f.Slot+1):
			extra = f.By
		}
	}
	at := max(s.now+int64(pos)*500+s.cfg.CtlDelay.Sample(s.rng)+extra, h.ctlAt)
	h.ctlAt = at
	s.push(event{at: at, kind: evPortArrive, i: int32(e.Host), a: -int64(idx) - 1})
}

func (s *Sim) onArrive(j int, a int64) {
	p := s.ports[j]
	if a < 0 {
		f := frame{src: -1, dst: int16(j), ctl: int32(-a - 1), bytes: len(s.ctlPool[0])}
		if p.bytes+f.bytes > s.cfg.SwitchBuf {
			s.res.CtlDrops++
			s.ctlFree = append(s.ctlFree, f.ctl)
			return
		}
		s.enqueue(p, j, f)
		return
	}
	panic("data arrivals go through onData")
}

// onData: data frame d enters the switch, where the exit gate would stamp
// it; the switch then puts it in its output port's queue.
func (s *Sim) onData(d int32) {
	df := &s.dataPool[d]
	df.win.Entry = wire.WinDelta(s.now, df.send)
	if df.hit && s.cfg.Fault.Kind == SwitchQueue {
		s.push(event{at: s.now + s.cfg.Fault.By, kind: evPort, a: int64(d)})
		return
	}
	s.toPort(d)
}

// toPort queues data frame d at its output port, or drops it there.
func (s *Sim) toPort(d int32) {
	df := &s.dataPool[d]
	j, src := df.dst, df.src
	p := s.ports[j]
	f := frame{src: int16(src), dst: int16(j), ctl: -1, data: d, bytes: df.bytes, payload: df.payload}
	if p.data > p.srcCount[src] {
		s.res.Collisions++
	}
	if p.bytes+f.bytes > s.cfg.SwitchBuf {
		s.res.Drops++
		s.hosts[src].remain[j] += int64(f.payload) // an ideal retransmission: the flow still ends
		s.dataFree = append(s.dataFree, d)
		return
	}
	ahead := 0
	if p.busy {
		ahead = p.bytes - p.q[0].bytes + int(uint64(p.headEnd-s.now)*s.cfg.Rate/8_000_000_000)
	}
	s.res.PeakBacklog = max(s.res.PeakBacklog, ahead)
	p.data++
	p.srcCount[src]++
	s.enqueue(p, j, f)
	s.res.PeakFrames = max(s.res.PeakFrames, p.data)
}

func (s *Sim) enqueue(p *port, j int, f frame) {
	p.q = append(p.q, f)
	p.bytes += f.bytes
	if !p.busy {
		p.busy = true
		p.headEnd = s.now + s.wireNs(f.bytes)
		s.push(event{at: p.headEnd, kind: evPortDone, i: int32(j)})
	}
}

func (s *Sim) onPortDone(j int) {
	p := s.ports[j]
	f := p.q[0]
	p.q = p.q[1:]
	p.bytes -= f.bytes
	if f.ctl >= 0 {
		s.push(event{at: s.now + s.cfg.Prop, kind: evCtlRx, i: int32(j), a: int64(f.ctl)})
	} else {
		p.data--
		p.srcCount[f.src]--
		s.received(f.data, s.now+s.cfg.Prop)
		h := s.hosts[j]
		h.received[f.src] += int64(f.payload)
		if h.received[f.src] == s.cfg.Shuffle {
			t := s.now + s.cfg.Prop
			if s.finished == 0 {
				s.res.FirstFinish = t
			}
			s.finished++
			s.res.Completion = t
		}
	}
	if len(p.q) > 0 {
		p.headEnd = s.now + s.wireNs(p.q[0].bytes)
		s.push(event{at: p.headEnd, kind: evPortDone, i: int32(j)})
	} else {
		p.busy = false
	}
}

func (s *Sim) onCtl(i int, idx int32, rx int64) {
	var g wire.Grant
	err := wire.DecodeGrant(s.ctlPool[idx][:], &g)
	s.ctlFree = append(s.ctlFree, idx)
	if err != nil {
		panic(err) // the FM's own frames always decode
	}
	s.hosts[i].g.OnGrant(s.now, rx, &g)
	if s.lastRep[i] != 0 && s.now-s.repAt[i] >= s.cfg.Slot/2 && s.nearTail(i) { // a report a slot, at its grant
		s.snapshot(i)
	}
	if f := &s.cfg.Fault; (f.Kind == OpenEarly || f.Kind == CloseLate || f.Kind == AfterLease) && i == f.Host && g.OpenNs > 0 && s.grantSlot(&g) == f.Slot {
		s.strike(i)
	}
	s.tryHost(i)
}

// grantSlot is the FM's slot index of the slot a grant opens.
func (s *Sim) grantSlot(g *wire.Grant) int64 {
	return (g.FMTime+int64(g.OpenNs))/s.cfg.Slot - 1
}

// strike: host i has just taken the grant of the fault's slot, and the
// fault releases a frame outside the window it opens: take that window and
// set the time.
func (s *Sim) strike(i int) {
	f, h := &s.cfg.Fault, s.hosts[i]
	t := s.now
	if at, opens := h.g.NextDeadlineOpens(s.now); opens {
		t = at
	}
	m := h.g.Open(t)
	if m == 0 {
		return
	}
	w, ok := h.g.Window(t, bits.TrailingZeros8(m))
	if !ok {
		return
	}
	var at int64
	switch f.Kind {
	case OpenEarly:
		at = max(s.now, w.OpenAt-f.By)
	case CloseLate:
		at = w.Close + f.By
	case AfterLease:
		at = h.g.LeaseEnd() + f.By
	}
	s.faultWin = w
	s.res.FaultRound, s.res.FaultSlot = w.Round, w.Slot
	s.push(event{at: at, kind: evFault, i: int32(i)})
}

// onFault: faulty host i releases a full frame into the fault's window,
// whether it is open or not.
func (s *Sim) onFault(i int) {
	h, w := s.hosts[i], s.faultWin
	payload := int(min(int64(s.cfg.MTU-HdrLen), h.remain[w.Dst]))
	if payload <= 0 {
		return
	}
	h.remain[w.Dst] -= int64(payload)
	end := h.g.Sent(s.now, w, s.cfg.MTU)
	h.nicFree = max(h.nicFree, end)
	s.release(i, w, s.cfg.MTU, payload, end)
	s.push(event{at: end, kind: evHostTx, i: int32(i)})
}

// release puts a frame of n bytes that host i released at now into w on
// its way: through the host's egress queue, which lets it leave the line at
// end (the gate's shaper model) unless a fault holds it, to the switch.
func (s *Sim) release(i int, w gate.Window, n, payload int, end int64) {
	h, f := s.hosts[i], &s.cfg.Fault
	hit := f.Kind != NoFault && i == f.Host && w.FMEnd == (f.Slot+1)*s.cfg.Slot
	if hit && s.res.FaultRound == 0 {
		s.res.FaultRound, s.res.FaultSlot = w.Round, w.Slot
	}
	leave := end
	if hit && f.Kind == HostQueue {
		leave += f.By
	}
	leave = max(leave, h.qEnd+s.wireNs(n))
	h.qEnd = leave
	s.sends = append(s.sends, sent{src: int16(i), dst: int16(w.Dst), bytes: int32(n), t0: leave - s.wireNs(n), t1: leave})
	s.res.DataBytes += int64(n + s.cfg.Overhead)
	df := dframe{src: i, dst: w.Dst, payload: payload, bytes: n, send: s.now, win: w.Trailer(s.now, end, h.g.LeaseEnd()),
		round: w.Round, slot: w.Slot, freeRun: w.FreeRun, hit: hit}
	var d int32
	if k := len(s.dataFree); k > 0 {
		d = s.dataFree[k-1]
		s.dataFree = s.dataFree[:k-1]
		s.dataPool[d] = df
	} else {
		s.dataPool = append(s.dataPool, df)
		d = int32(len(s.dataPool) - 1)
	}
	s.push(event{at: leave + s.cfg.Prop, kind: evData, i: int32(w.Dst), a: int64(d)})
}

// maxSample is how many collisions a run records in full.
const maxSample = 64

// received: data frame d reaches its receiver at rx, which classifies it
// as the agents do.
func (s *Sim) received(d int32, rx int64) {
	df := &s.dataPool[d]
	c, late, ok := gate.Classify(df.send, rx, &df.win)
	if ok {
		s.res.Causes.Log(&s.res.CollSample, maxSample, gate.Collision{Src: df.src, Dst: df.dst, Round: df.round, Slot: df.slot, Cause: c, LateUs: late,
			FreeRun: df.freeRun}, df.bytes, df.send, rx, &df.win)
	} else {
		c = gate.NumCauses
	}
	m := &s.hosts[df.dst].meet
	if on, met := m.Next(df.src, df.send+int64(df.win.Entry), rx, c); met && on < gate.NumCauses {
		s.res.Causes[on].Met++
	}
	s.dataFree = append(s.dataFree, d)
}

// tryHost lets host i release its next frame if its NIC is idle and an
// open class has data that fits before the window closes.
func (s *Sim) tryHost(i int) {
	h := s.hosts[i]
	if s.now < h.nicFree {
		return // evHostTx at nicFree tries again
	}
	mask := h.g.Open(s.now)
	for k := 0; k < 8 && mask != 0; k++ {
		c := (h.rr + k) % 8
		if mask&(1<<c) == 0 {
			continue
		}
		w, ok := h.g.Window(s.now, c)
		if !ok || h.remain[w.Dst] <= 0 {
			continue
		}
		// A last piece shorter than the minimum frame is padded.
		n := h.g.Fit(s.now, w, int(min(int64(s.cfg.MTU), max(h.remain[w.Dst]+HdrLen, minFrame))))
		if n == 0 {
			continue
		}
		payload := int(min(int64(n-HdrLen), h.remain[w.Dst], h.bud.Left(h.g, w)))
		if payload <= 0 {
			continue // its budget spent (wire.ScheduleBudget)
		}
		n = max(payload+HdrLen, minFrame)
		h.bud.Sent(w, int64(payload))
		h.remain[w.Dst] -= int64(payload)
		end := h.g.Sent(s.now, w, n)
		h.nicFree = end
		h.rr = c + 1
		s.release(i, w, n, payload, end)
		s.push(event{at: end, kind: evHostTx, i: int32(i)})
		return
	}
	d := h.g.NextDeadline(s.now)
	if d == math.MaxInt64 {
		return
	}
	t := max(d+s.cfg.Timer.Sample(s.rng), s.now+1)
	if t < h.wakeAt || h.wakeAt <= s.now {
		h.wakeAt = t
		s.push(event{at: t, kind: evHostWake, i: int32(i), a: t})
	}
}

func (s *Sim) trace(start int64, r *sched.Round, slot int) {
	if r != nil && slot == 0 {
		s.plan.Started(r.ID, start) // as tdma fm does
	}
	k := int(start / s.cfg.Slot)
	for len(s.slots) < k {
		s.slots = append(s.slots, nil)
	}
	var m sched.Matching
	if r != nil && slot >= 0 {
		m = r.Slots[slot]
	}
	s.slots = append(s.slots[:k], m)
}

func (s *Sim) has(k int, src, dst int16) bool {
	return k >= 0 && k < len(s.slots) && s.slots[k] != nil && s.slots[k][src] == dst
}

// result checks every data frame against the FM's timeline: a frame is an
// overrun unless it starts in a slot of its pair (or that slot's trailing
// guard) and ends by the end of the slot plus the guard, and early if it
// starts in a slot of its pair before the slot's guard has passed (unless
// the pair held the slot before it too: its window goes on), the slots of
// its receiver's port moved by its stagger (Config.Stagger, the FM's). A
// pair's consecutive slots count as one.
func (s *Sim) result() *Result {
	L, g := s.cfg.Slot, s.cfg.Guard
	thaw := s.cfg.FreezeAt + s.cfg.FreezeFor
	resume := make([]int64, s.cfg.Hosts) // each host's first frame after the thaw
	for i := range resume {
		resume[i] = -1
	}
	for _, f := range s.sends {
		sh := int64(0)
		if s.cfg.Stagger {
			sh = int64(f.dst) * g / int64(s.cfg.Hosts)
		}
		t0 := f.t0 - sh
		k := int(t0 / L)
		own := -1
		if s.has(k, f.src, f.dst) {
			own = k
		} else if s.has(k-1, f.src, f.dst) && t0 < int64(k)*L+g {
			own = k - 1
		}
		if own == k && t0 < int64(k)*L+g && !s.has(k-1, f.src, f.dst) {
			s.res.EarlyBytes += int64(f.bytes)
		}
		ok := own >= 0
		if ok {
			e := own + 1
			for s.has(e, f.src, f.dst) {
				e++
			}
			ok = f.t1-sh <= int64(e)*L+g
		}
		if !ok {
			s.res.OverrunBytes += int64(f.bytes)
		}
		if s.cfg.FreezeFor > 0 {
			if f.t0 >= s.cfg.FreezeAt && f.t0 < thaw {
				s.res.SilentAfterFreeze = max(s.res.SilentAfterFreeze, f.t1-s.cfg.FreezeAt)
			}
			if f.t0 >= thaw && (s.res.ResumeAfterThaw < 0 || f.t0-thaw < s.res.ResumeAfterThaw) {
				s.res.ResumeAfterThaw = f.t0 - thaw
			}
			if f.t0 >= thaw && (resume[f.src] < 0 || f.t0-thaw < resume[f.src]) {
				resume[f.src] = f.t0 - thaw
			}
		}
	}
	for _, r := range resume {
		s.res.ResumeAllAfterThaw = max(s.res.ResumeAllAfterThaw, r)
	}
	for _, h := range s.hosts {
		st := h.g.Stats()
		s.res.GrantOpens += st.GrantOpens
		s.res.FreeRunOpens += st.FreeRunOpens
		s.res.LeaseExpiries += st.LeaseExpiries
		s.res.GateOverrunBytes += st.OverrunBytes
		s.res.LateCuts += st.LateCuts
		s.res.LateCutNs += st.LateCutNs
	}
	for _, h := range s.hosts {
		s.res.MetInSlot += h.meet.InSlot
	}
	s.res.Unfinished = s.flows - s.finished
	if s.res.Unfinished > 0 {
		s.res.Completion = s.now
	}
	s.res.FM = s.fm.Stats()
	return &s.res
}

// nearTail reports whether host i is near the end of what it sends, where
// its agent reports at every grant (sched.NearTail).
func (s *Sim) nearTail(i int) bool {
	var left int64
	for _, b := range s.hosts[i].remain {
		left += max(b, 0)
	}
	return sched.NearTail(left, s.cfg.Hosts, s.cfg.Rate, s.cfg.Slot)
}
