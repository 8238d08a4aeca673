package cellify

import (
	"math/bits"
	"testing"

	"github.com/linkfabric/linkfabric/internal/fuzzops"
)

// FuzzReachOps: any sequence of REACH messages (any sender, tier, flag,
// bitmap length and content, any link index), interface and loss reports
// and polls never panics, and the table only names usable links.
func FuzzReachOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 2, 0, 1, 0xff, 3, 0, 0, 1, 0, 3, 0, 0, 2, 0, 3, 0, 0, 3, 0})
	f.Add([]byte{1, 0, 0, 2, 1, 1, 4, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		tier := TierEdge
		if len(data) > 0 {
			tier = Tier(data[0] % 3)
		}
		cfg := DefaultReachConfig(3, tier, 5)
		cfg.MaxEdges, cfg.Interval = 100, 1000
		if len(data) > 0 && data[0]/3%2 == 1 { // loss classes
			cfg.SetClasses(LossClasses{Bounds: DefaultLossBounds})
		}
		r, err := NewReachability(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := &fuzzops.Ops{B: data}
		now := int64(0)
		adv := make([]byte, r.AdvertLen()-len(data)%2) // sometimes short
		for o.More() {
			op, l := o.U8(), int(int8(o.U8()))%8
			switch op % 5 {
			case 0:
				m := PeerReach{From: EdgeID(o.U8()), Tier: Tier(o.U8() % 4), Faulty: o.U8()&1 == 1}
				f := o.U8()
				m.Class, m.Classes = LossClass(f%5), f&8 != 0
				for n := o.U8() % 50; n > 0; n-- {
					m.Bitmap = append(m.Bitmap, o.U8())
				}
				r.Receive(now, l, &m)
			case 1:
				r.SetUp(now, l, o.U8()&1 == 1)
			case 2:
				r.SetLoss(now, l, float64(o.U8())/1000)
			case 3:
				now += int64(o.U8()) * 100
				r.Poll(now)
				r.Due = 0
			case 4:
				r.Advert(l, adv)
			}
			for e := range cfg.MaxEdges + 2 {
				if rt := r.Routes(EdgeID(e)); rt&^r.Usable() != 0 {
					t.Fatalf("routes to %d %#b beyond the usable links %#b", e, rt, r.Usable())
				}
				for k := LossClass(1); k <= cfg.Classes.N(); k++ {
					rt := r.RoutesIn(k, EdgeID(e))
					for m := rt; m != 0; m &= m - 1 {
						if l := bits.TrailingZeros64(m); r.EffClass(l) > k || r.Usable()>>l&1 == 0 {
							t.Fatalf("class %d routes to %d %#b: link %d of class %d (usable %#b)", k, e, rt, l, r.EffClass(l), r.Usable())
						}
					}
				}
			}
			if r.Usable()>>cfg.Links != 0 {
				t.Fatalf("usable %#b beyond %d links", r.Usable(), cfg.Links)
			}
		}
	})
}

// FuzzSchedOps: any sequence of requests (any source, class, total),
// FCI reports, egress queue reports, arrivals and losses of cells, resets
// and polls never panics, never grants beyond a VOQ's request (or the
// pre-credit), and grant totals in Out never go down between resets. With
// the credit window (inputs of odd length): the credit in flight is the
// sum of the VOQs' and never above MaxInFlight, the port's queue by VOQ
// sums to its runs, and Poll's deadline is never in the past.
func FuzzSchedOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 3, 10, 0, 2, 1, 0, 0, 0, 0, 9, 3, 200})
	f.Add([]byte{0, 1, 9, 0, 0, 1, 0, 1, 1, 3, 50, 4, 1, 3, 50, 2, 2, 3, 100})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := DefaultSchedConfig(1e9)
		cfg.CreditSize, cfg.PreCredit, cfg.MaxVOQs, cfg.StopAbove = 3000, 500, 8, 10000
		if len(data)%2 == 1 {
			cfg.MaxInFlight, cfg.Lead = 20000, 200
		}
		s, err := NewScheduler(cfg)
		if err != nil {
			t.Fatal(err)
		}
		o := &fuzzops.Ops{B: data}
		now := int64(0)
		sent := map[StreamKey]uint64{}
		for o.More() {
			op := o.U8()
			src, class := EdgeID(o.U8()%6), Class(o.U8()%10)
			switch op % 8 {
			case 0:
				s.Request(now, src, class, uint64(o.U32())<<8)
			case 1:
				s.FCI(now, src)
			case 2:
				s.SetEgressQueue(int(o.U32() % 20000))
			case 3:
				now += int64(o.U8()) * 1000
				if d := s.Poll(now); d <= now {
					t.Fatalf("Poll(%d) returned the deadline %d", now, d)
				}
				for _, g := range s.Out {
					if g.Total < sent[g.Key] {
						t.Fatalf("grant of %+v went down: %d after %d", g.Key, g.Total, sent[g.Key])
					}
					sent[g.Key] = g.Total
				}
				s.ResetOut()
			case 4:
				s.ResetSource(src)
				for k := range sent {
					if k.Src == src {
						delete(sent, k)
					}
				}
			case 5:
				s.Reset()
				clear(sent)
			case 6:
				now += int64(o.U8()) * 100
				s.Arrived(now, src, class, int(o.U32()%5000))
			case 7:
				s.Lost(src, class, int(o.U32()%5000))
			}
			fly := 0
			for i := range s.voqs {
				fly += int(s.voqs[i].fly)
			}
			if l := s.Loop(); l.InFlight != fly || cfg.MaxInFlight > 0 && l.InFlight > cfg.MaxInFlight {
				t.Fatalf("credit in flight %d, the VOQs' sum %d, MaxInFlight %d", l.InFlight, fly, cfg.MaxInFlight)
			}
			for src := range EdgeID(6) {
				for c := range Class(Classes) {
					if r, g, ok := s.Totals(src, c); ok && g > max(r, cfg.PreCredit) {
						t.Fatalf("VOQ (%d, %d) granted %d beyond its request %d", src, c, g, r)
					}
				}
			}
			owing := 0
			for i := range s.voqs {
				v := &s.voqs[i]
				if v.owed > 0 {
					owing++
				}
				if v.owed > s.owedMax || v.owed > 0 && !v.active || v.active && !v.queued {
					t.Fatalf("VOQ %d: owed %d (at most %d), active %v, queued %v", i, v.owed, s.owedMax, v.active, v.queued)
				}
			}
			if owing != s.owing {
				t.Fatalf("%d VOQs owed turns, counted %d", owing, s.owing)
			}
			var eg, ring uint64
			idle := 0
			for i := range s.voqs {
				if v := &s.voqs[i]; v.eg > 0 {
					eg += v.eg
					if !v.active {
						idle++
					}
				}
			}
			for i := range s.egq.size {
				ring += uint64(s.egq.b[(s.egq.head+i)%len(s.egq.b)].bytes)
			}
			if eg != ring || idle != s.egIdle || s.egq.in-s.egq.out < ring {
				t.Fatalf("the port's queue by VOQ sums to %d, its runs to %d (in %d, out %d); %d VOQs idle there, counted %d", eg, ring, s.egq.in, s.egq.out, idle, s.egIdle)
			}
			if len(s.Out) > cfg.MaxVOQs {
				t.Fatalf("%d grants pending for %d VOQs: not coalesced", len(s.Out), cfg.MaxVOQs)
			}
		}
	})
}
