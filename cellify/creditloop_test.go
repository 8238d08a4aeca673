package cellify

import (
	"math"
	"math/rand/v2"
	"testing"
)

// creditLoop runs sources' CreditClients against one Scheduler over a
// link with a fixed one-way delay that loses a share of the requests and
// grants, in steps of dt on a virtual clock. Sources send what they may
// at once; the egress queue drains at the port rate.
type creditLoop struct {
	s       *Scheduler
	cl      []CreditClient // source i+1
	delay   int64
	loss    float64
	drop    *rand.Rand
	msgs    []loopMsg // in flight, in arrival order (one delay for all)
	data    []loopData
	egress  float64 // bytes queued at the egress port
	maxQ    float64
	drained float64
	now     int64
	// fifo: the egress queue by source, in arrival order; out: per
	// source, the bytes that left the port.
	fifo []loopQueued
	out  []float64
	got  []uint64 // per source, bytes arrived at the egress

	// stall: per source, since when backlog beyond the grant has waited
	// without the grant growing; longest such wait.
	stallFrom []int64
	maxStall  int64
	// asleep: per source, the time until which it is kept from running
	// (grants to it wait, it sends nothing).
	asleep []int64
}

type loopMsg struct {
	at    int64
	src   EdgeID
	total uint64
	grant bool
}

type loopQueued struct {
	src   EdgeID
	bytes float64
}

type loopData struct {
	at    int64
	src   EdgeID
	bytes uint64
}

func newCreditLoop(t testing.TB, cfg SchedConfig, ccfg CreditClientConfig, sources int, loss float64, seed uint64) *creditLoop {
	l := &creditLoop{
		s:         newTestSched(t, cfg),
		delay:     10 * credUs,
		loss:      loss,
		drop:      rand.New(rand.NewPCG(seed, 99)),
		stallFrom: make([]int64, sources),
		asleep:    make([]int64, sources),
		out:       make([]float64, sources),
		got:       make([]uint64, sources),
	}
	for range sources {
		l.cl = append(l.cl, NewCreditClient(ccfg))
	}
	for i := range l.stallFrom {
		l.stallFrom[i] = -1
	}
	return l
}

func (l *creditLoop) lost() bool { return l.loss > 0 && l.drop.Float64() < l.loss }

func (l *creditLoop) step(dt int64) {
	l.now += dt
	now := l.now
	n := 0
	var wait []loopMsg
	for _, m := range l.msgs {
		if m.at > now {
			break
		}
		n++
		switch {
		case m.grant && now < l.asleep[m.src-1]:
			wait = append(wait, m) // read when the source runs again
		case m.grant:
			l.cl[m.src-1].Grant(m.total)
		default:
			l.s.Request(now, m.src, 0, m.total)
		}
	}
	l.msgs = append(wait, l.msgs[n:]...)
	n = 0
	for _, d := range l.data {
		if d.at > now {
			break
		}
		n++
		l.egress += float64(d.bytes)
		l.fifo = append(l.fifo, loopQueued{d.src, float64(d.bytes)})
		l.got[d.src-1] += d.bytes
		l.s.Arrived(now, d.src, 0, int(d.bytes))
	}
	l.data = l.data[n:]
	out := min(l.egress, l.s.cfg.Rate*float64(dt)*1e-9/8)
	l.egress -= out
	l.drained += out
	for left := out; left > 0 && len(l.fifo) > 0; {
		h := &l.fifo[0]
		b := min(left, h.bytes)
		l.out[h.src-1] += b
		left -= b
		if h.bytes -= b; h.bytes <= 0 {
			l.fifo = l.fifo[1:]
		}
	}
	l.maxQ = max(l.maxQ, l.egress)
	l.s.SetEgressQueue(int(l.egress))
	for i := range l.cl {
		c := &l.cl[i]
		if now < l.asleep[i] {
			continue
		}
		if send, total, _ := c.Poll(now); send && !l.lost() {
			l.msgs = append(l.msgs, loopMsg{at: now + l.delay, src: EdgeID(i + 1), total: total})
		}
		if b := min(c.Allowed(), c.Enqueued()-c.Sent()); b > 0 {
			c.OnSent(int(b))
			l.data = append(l.data, loopData{at: now + l.delay, src: EdgeID(i + 1), bytes: b})
		}
	}
	l.s.Poll(now)
	for _, g := range l.s.Out {
		if !l.lost() {
			l.msgs = append(l.msgs, loopMsg{at: now + l.delay, src: g.Key.Src, total: g.Total, grant: true})
		}
	}
	l.s.ResetOut()
	for i := range l.cl {
		c := &l.cl[i]
		switch {
		case c.Enqueued() <= c.Granted():
			l.stallFrom[i] = -1
		case l.stallFrom[i] < 0:
			l.stallFrom[i] = now
		default:
			l.maxStall = max(l.maxStall, now-l.stallFrom[i])
		}
	}
}

// granted returns the bytes granted to all sources beyond the pre-credit.
func (l *creditLoop) granted() float64 {
	var sum float64
	for i := range l.cl {
		sum += float64(l.cl[i].Granted() - l.s.cfg.PreCredit)
	}
	return sum
}

// run offers traffic and steps until until; a source's stall clock
// restarts whenever its grant grows.
func (l *creditLoop) run(until, dt int64, offer func(l *creditLoop), check func(l *creditLoop)) {
	last := make([]uint64, len(l.cl))
	for l.now < until {
		offer(l)
		l.step(dt)
		for i := range l.cl {
			if g := l.cl[i].Granted(); g != last[i] {
				last[i] = g
				if l.stallFrom[i] >= 0 {
					l.stallFrom[i] = l.now
				}
			}
		}
		if check != nil {
			check(l)
		}
	}
}

// With 10 % of the requests and of the grants lost, the credit loop does
// not deadlock: at every checkpoint the bytes granted are at least 0.9 × the
// loss-free run's, no backlog waits more than a few refresh intervals, the
// egress queue stays bounded by the threshold plus what is in flight, and
// in the end every byte enqueued has been granted and sent.
func TestCreditLoopLoss(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.StopAbove = 4 * cfg.CreditSize
	cfg.PreCredit = 4096
	ccfg := DefaultCreditClientConfig()
	ccfg.PreCredit = cfg.PreCredit
	const dt = credUs
	scenarios := []struct {
		name  string
		offer func(rng *rand.Rand) func(l *creditLoop)
	}{
		{"saturated", func(rng *rand.Rand) func(l *creditLoop) {
			// 3 sources at 0.5 × the port rate each for 30 ms.
			per := int(cfg.Rate * 0.5 * float64(dt) * 1e-9 / 8)
			return func(l *creditLoop) {
				if l.now < 30*credMs {
					for i := range l.cl {
						l.cl[i].Enqueue(per)
					}
				}
			}
		}},
		{"bursty", func(rng *rand.Rand) func(l *creditLoop) {
			// Bursts of 1–64 KiB, each source one per 200 µs on average
			// (0.4 × the port rate in all): VOQs often run empty.
			return func(l *creditLoop) {
				if l.now < 50*credMs {
					for i := range l.cl {
						if rng.IntN(200) == 0 {
							l.cl[i].Enqueue(1 + rng.IntN(64<<10))
						}
					}
				}
			}
		}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			base := newCreditLoop(t, cfg, ccfg, 3, 0, 1)
			var curve []float64
			base.run(60*credMs, dt, sc.offer(rand.New(rand.NewPCG(7, 7))), func(l *creditLoop) {
				if l.now%credMs == 0 {
					curve = append(curve, l.granted())
				}
			})
			lossy := newCreditLoop(t, cfg, ccfg, 3, 0.1, 2)
			k := 0
			lossy.run(60*credMs, dt, sc.offer(rand.New(rand.NewPCG(7, 7))), func(l *creditLoop) {
				if l.now%credMs != 0 {
					return
				}
				if g := l.granted(); g < 0.9*curve[k] {
					t.Fatalf("at %d ms %.0f bytes granted with 10%% control loss, %.0f without: below 0.9×",
						l.now/credMs, g, curve[k])
				}
				k++
			})
			for _, l := range []*creditLoop{base, lossy} {
				for i := range l.cl {
					c := &l.cl[i]
					if c.Sent() != c.Enqueued() || c.Granted() < c.Enqueued() {
						t.Fatalf("source %d (loss %v): enqueued %d, granted %d, sent %d at the end: stalled",
							i+1, l.loss, c.Enqueued(), c.Granted(), c.Sent())
					}
				}
				// In flight at most a credit round trip of credit rate, plus
				// the burst a resumed pacer may issue, plus the pre-credit.
				bound := float64(cfg.StopAbove) + l.s.CreditRate()*float64(2*l.delay+2*dt)*1e-9/8 +
					float64(cfg.MaxBurst*cfg.CreditSize) + 3*float64(cfg.PreCredit)
				if l.maxQ > bound {
					t.Fatalf("loss %v: egress queue reached %.0f bytes, bound %.0f", l.loss, l.maxQ, bound)
				}
			}
			// A lost request or grant costs a refresh interval; 4 in a row
			// on one VOQ happen with probability 1e-4 per try.
			if lim := 4*ccfg.Refresh + 4*cfg.Refresh; lossy.maxStall > lim {
				t.Fatalf("a backlog waited %d µs for credit, more than %d µs", lossy.maxStall/credUs, lim/credUs)
			}
			// Repaired by the scheduler (a grant re-sent) or by a source
			// (its request repeated).
			repairs := lossy.s.Stats.Repairs + lossy.s.Stats.Refreshed
			for i := range lossy.cl {
				repairs += lossy.cl[i].Stats.Repeats
			}
			if repairs == 0 {
				t.Fatal("no request or grant was ever repaired: the loss did not bite")
			}
			t.Logf("max stall: %d µs without loss, %d µs with; max egress queue %.0f / %.0f; scheduler %+v",
				base.maxStall/credUs, lossy.maxStall/credUs, base.maxQ, lossy.maxQ, lossy.s.Stats)
		})
	}
}

// The saturated loop keeps the egress port busy: the credit speed-up
// covers the round trip.
func TestCreditLoopPortBusy(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.StopAbove = 4 * cfg.CreditSize
	ccfg := DefaultCreditClientConfig()
	l := newCreditLoop(t, cfg, ccfg, 3, 0, 1)
	per := int(cfg.Rate * 0.5 * 1e-6 / 8)
	l.run(20*credMs, credUs, func(l *creditLoop) {
		for i := range l.cl {
			l.cl[i].Enqueue(per)
		}
	}, nil)
	busy := l.drained * 8 / (cfg.Rate * 20e-3)
	if busy < 0.99 || math.IsNaN(busy) {
		t.Fatalf("port busy %.3f of the time under saturation, want ≥ 0.99", busy)
	}
}

// TestCreditLoopSourceAsleep: two sources saturate a 100 Mbit/s port with
// the credit window and 64 KiB credits; one is kept from running for
// 30 ms. Once the loop's measure shows it late (nothing back from it well
// beyond the round trip) its turns go to the other source: the port stays
// busy through the stall, and the sleeper, which cannot use credit, gets
// no more than the one credit of the turn that found it with nothing in
// flight, so that it is not ahead of the other source when it runs again
// (what it was granted arrives then, on top of its turns).
func TestCreditLoopSourceAsleep(t *testing.T) {
	cfg := DefaultSchedConfig(100e6)
	cfg.CreditSize, cfg.MaxBurst, cfg.MaxBurstTime = 64<<10, 8, 10*credMs
	cfg.StopAbove, cfg.MaxInFlight = 4*cfg.CreditSize, 2<<20
	ccfg := DefaultCreditClientConfig()
	ccfg.Quantum = uint64(cfg.CreditSize)
	const dt, from, to = 10 * credUs, 50 * credMs, 80 * credMs
	l := newCreditLoop(t, cfg, ccfg, 2, 0, 1)
	per := int(cfg.Rate * float64(dt) * 1e-9 / 8) // each source at the port's rate
	var g0, drained0, g1, drained1 float64
	var maxQ float64
	l.run(to+20*credMs, dt, func(l *creditLoop) {
		for i := range l.cl {
			if l.cl[i].Enqueued()-l.cl[i].Sent() < 4<<20 {
				l.cl[i].Enqueue(per)
			}
		}
		if l.now == from-dt {
			l.asleep[0] = to // from the next step on
		}
	}, func(l *creditLoop) {
		switch l.now {
		case from:
			_, g, _ := l.s.Totals(1, 0)
			g0 = float64(g)
		case from + 5*credMs:
			drained0 = l.drained
		case to:
			_, g, _ := l.s.Totals(1, 0)
			g1, drained1 = float64(g), l.drained
		}
		maxQ = max(maxQ, l.egress+float64(l.s.Loop().InFlight))
	})
	busy := (drained1 - drained0) * 8 / (cfg.Rate * float64(to-from-5*credMs) * 1e-9)
	t.Logf("asleep: port busy %.3f, credit to the sleeper %.0f bytes; loop %+v; %+v", busy, g1-g0, l.s.Loop(), l.s.Stats)
	if busy < 0.95 {
		t.Errorf("the port was busy %.3f of the sleeper's stall (from 5 ms in), want ≥ 0.95: its turns idled it", busy)
	}
	if g1-g0 > float64(cfg.CreditSize) {
		t.Errorf("the sleeper was granted %.0f bytes during its stall, want at most a credit (%d)", g1-g0, cfg.CreditSize)
	}
	if maxQ > float64(cfg.MaxInFlight) {
		t.Errorf("egress queue plus credit in flight reached %.0f, above MaxInFlight %d", maxQ, cfg.MaxInFlight)
	}
}

// TestCreditLoopSleeperCatchesUp: as TestCreditLoopSourceAsleep, the
// sleeper's turns go to the other source during its 30 ms stall; once it
// runs again it is owed them (CatchUp) and served first until both were
// granted as much, within two credits, 40 ms after its stall. Without
// CatchUp the other source keeps what it got: 2 MiB VOQs, half of an
// incast's burst each, then overflow at the source that slept.
func TestCreditLoopSleeperCatchesUp(t *testing.T) {
	for _, catchUp := range []int64{DefaultCatchUp, 0} {
		cfg := DefaultSchedConfig(100e6)
		cfg.CreditSize, cfg.MaxBurst, cfg.MaxBurstTime = 64<<10, 8, 10*credMs
		cfg.StopAbove, cfg.MaxInFlight, cfg.CatchUp = 4*cfg.CreditSize, 2<<20, catchUp
		ccfg := DefaultCreditClientConfig()
		ccfg.Quantum = uint64(cfg.CreditSize)
		const dt, from, to = 10 * credUs, 50 * credMs, 80 * credMs
		l := newCreditLoop(t, cfg, ccfg, 2, 0, 1)
		per := int(cfg.Rate * float64(dt) * 1e-9 / 8)
		var gap [2]float64 // granted to the other source less to the sleeper: at the stall's start, 40 ms after its end
		l.run(to+40*credMs, dt, func(l *creditLoop) {
			for i := range l.cl {
				if l.cl[i].Enqueued()-l.cl[i].Sent() < 4<<20 {
					l.cl[i].Enqueue(per)
				}
			}
			if l.now == from-dt {
				l.asleep[0] = to
			}
		}, func(l *creditLoop) {
			_, g1, _ := l.s.Totals(1, 0)
			_, g2, _ := l.s.Totals(2, 0)
			switch l.now {
			case from:
				gap[0] = float64(g2) - float64(g1)
			case to + 40*credMs:
				gap[1] = float64(g2) - float64(g1)
			}
		})
		owed := gap[1] - gap[0]
		t.Logf("CatchUp %d ms: the other source granted %.0f bytes more than the sleeper over the stall and 40 ms after; %+v", catchUp/credMs, owed, l.s.Stats)
		switch {
		case catchUp > 0 && math.Abs(owed) > float64(2*cfg.CreditSize):
			t.Errorf("with CatchUp: %.0f bytes more to the other source, want within two credits (%d)", owed, 2*cfg.CreditSize)
		case catchUp > 0 && l.s.Stats.CaughtUp == 0:
			t.Errorf("with CatchUp: nothing granted back")
		case catchUp == 0 && owed < float64(2*cfg.CreditSize):
			t.Errorf("without CatchUp: %.0f bytes more to the other source, want the turns it took (several credits)", owed)
		}
	}
}

// TestCreditLoopWindowSourcesFair: two sources share a 100 Mbit/s port
// with the cells dataplane's credits (64 KiB, StopAbove 256 KiB, 2 MiB
// window). A window source keeps a fixed number of bytes on their way to
// the port and not yet out of it, as a TCP flow whose congestion window
// no loss ever cuts (bbr's is a multiple of its own delivery rate: any
// split of the port holds); a backlog source offers the port's rate; a
// sparse one a frame a millisecond. Sources that want the port have it
// byte for byte (within 5 %), and a sparse source beside a backlog gets
// all it offers; the port stays busy.
func TestCreditLoopWindowSourcesFair(t *testing.T) {
	const dt, mss = 10 * credUs, 1448
	type source struct{ window, perStep float64 } // window: bytes not out of the port yet; else perStep
	backlog := source{perStep: 100e6 * float64(dt) * 1e-9 / 8}
	for _, tc := range []struct {
		name string
		srcs [2]source
		fair bool // else the first gets all it offers
	}{
		{"windows 40 and 64 KiB", [2]source{{window: 40 << 10}, {window: 64 << 10}}, true},
		{"window 40 KiB beside a backlog", [2]source{{window: 40 << 10}, backlog}, true},
		{"sparse beside a backlog", [2]source{{perStep: mss / 100.0}, backlog}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultSchedConfig(100e6)
			cfg.CreditSize, cfg.MaxBurst, cfg.MaxBurstTime = 64<<10, 8, 10*credMs
			cfg.StopAbove, cfg.MaxInFlight = 4*cfg.CreditSize, 2<<20
			cfg.PreCredit, cfg.Lead = 4096, 4096
			ccfg := DefaultCreditClientConfig()
			ccfg.Quantum, ccfg.PreCredit, ccfg.Lead = uint64(cfg.CreditSize), 4096, 4096
			l := newCreditLoop(t, cfg, ccfg, 2, 0, 1)
			var from [2]float64
			var offered [2]float64
			l.run(300*credMs, dt, func(l *creditLoop) {
				for i, src := range tc.srcs {
					c := &l.cl[i]
					switch {
					case src.window > 0:
						for float64(c.Enqueued())-l.out[i]+mss <= src.window {
							c.Enqueue(mss)
						}
					case c.Enqueued()-c.Sent() < 4<<20:
						offered[i] += src.perStep
						if n := int(offered[i]) - int(c.Enqueued()); n > 0 {
							c.Enqueue(n)
						}
					}
				}
			}, func(l *creditLoop) {
				if l.now == 100*credMs {
					copy(from[:], l.out)
				}
			})
			a, b := l.out[0]-from[0], l.out[1]-from[1]
			busy := (a + b) * 8 / (cfg.Rate * 0.2)
			t.Logf("%.0f and %.0f bytes out over 200 ms, port busy %.3f; loop %+v; %+v", a, b, busy, l.s.Loop(), l.s.Stats)
			if d := math.Abs(a-b) / (a + b) * 2; tc.fair && d > 0.05 {
				t.Errorf("out of the port %.0f and %.0f bytes: %.3f from fair, want within 5 %%", a, b, d)
			}
			if want := tc.srcs[0].perStep * float64(200*credMs/dt); !tc.fair && a < 0.98*want {
				t.Errorf("the sparse source got %.0f bytes out of %.0f offered", a, want)
			}
			if busy < 0.98 {
				t.Errorf("port busy %.3f, want ≥ 0.98", busy)
			}
		})
	}
}

// TestCreditLoopAheadAfterChatter: two sources with Ahead send a few small
// frames with pauses beyond AheadHold between them (a TCP handshake, a
// control connection's messages), then each saturates a 100 Mbit/s port.
// Through the bulk the loop's measure stays near the loop (two one-way
// delays and the step), the credit in flight counts only the bytes that
// can still arrive, and the sources share the port evenly: credit granted
// ahead of a source's backlog and never used must not leave the
// scheduler's count of what arrived behind the source's numbering of its
// bytes (each round trip then measured up to the bytes it lags, and the
// credit of the source that lagged more counted in flight for good).
func TestCreditLoopAheadAfterChatter(t *testing.T) {
	cfg := DefaultSchedConfig(100e6)
	cfg.CreditSize, cfg.MaxBurst, cfg.MaxBurstTime = 64<<10, 8, 10*credMs
	cfg.StopAbove, cfg.MaxInFlight = 4*cfg.CreditSize, 2<<20
	cfg.Lead, cfg.Ahead = 4096, 4096
	ccfg := DefaultCreditClientConfig()
	ccfg.Quantum = uint64(cfg.CreditSize)
	ccfg.Lead, ccfg.Ahead = cfg.Lead, cfg.Ahead
	const dt, bulk, end = 10 * credUs, 60 * credMs, 300 * credMs
	l := newCreditLoop(t, cfg, ccfg, 2, 0, 1)
	per := int(cfg.Rate * float64(dt) * 1e-9 / 8)
	var arrived [2]uint64
	var maxRTT int64
	l.run(end, dt, func(l *creditLoop) {
		for i := range l.cl {
			switch {
			case l.now < bulk:
				// Source i: a 300-byte frame every 7+i ms.
				if l.now%(int64(7+i)*credMs) == 0 {
					l.cl[i].Enqueue(300)
				}
			case l.cl[i].Enqueued()-l.cl[i].Sent() < 1<<20:
				l.cl[i].Enqueue(per)
			}
		}
	}, func(l *creditLoop) {
		if l.now == bulk+50*credMs {
			copy(arrived[:], l.got)
		}
		if l.now > bulk+50*credMs {
			maxRTT = max(maxRTT, l.s.Loop().RTT)
		}
	})
	var sh [2]float64
	for i := range sh {
		sh[i] = float64(l.got[i] - arrived[i])
	}
	share := sh[0] / (sh[0] + sh[1])
	t.Logf("loop %+v (largest smoothed RTT %d us), share of source 1 %.3f", l.s.Loop(), maxRTT/credUs, share)
	if maxRTT > 200*credUs {
		t.Errorf("the loop measured up to %d us through the bulk, want ≤ 200 (the loop is %d us)", maxRTT/credUs, 2*l.delay/credUs)
	}
	if math.Abs(share-0.5) > 0.025 {
		t.Errorf("source 1 had %.3f of the port through the bulk, want 0.5 ± 0.025", share)
	}
}
