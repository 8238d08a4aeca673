package cellify

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

const (
	credUs = int64(1000)
	credMs = 1000 * credUs
)

func newTestSched(t testing.TB, cfg SchedConfig) *Scheduler {
	t.Helper()
	s, err := NewScheduler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// grantLog collects the grant totals a scheduler sends, per VOQ, and
// checks that each VOQ's totals never go down.
type grantLog struct {
	t     testing.TB
	total map[StreamKey]uint64
	msgs  int
}

func newGrantLog(t testing.TB) *grantLog {
	return &grantLog{t: t, total: map[StreamKey]uint64{}}
}

// schedBusy returns a scheduler of cfg and its grant log after each of
// srcs requested total bytes of class 0 at 0 and it ran until until.
func schedBusy(t testing.TB, cfg SchedConfig, total uint64, until int64, srcs ...EdgeID) (*Scheduler, *grantLog, int64) {
	t.Helper()
	s, g := newSchedLog(t, cfg)
	for _, src := range srcs {
		s.Request(0, src, 0, total)
	}
	return s, g, pollUntil(s, g, 0, until, nil, 0)
}

// schedLoopMeasured returns a scheduler of cfg (with the credit window)
// and its grant log, its loop measured: source 1 asked for bytes at 1 ms,
// was granted them, and they arrived 100 µs later (now, returned).
func schedLoopMeasured(t testing.TB, cfg SchedConfig, bytes int) (*Scheduler, *grantLog, int64) {
	t.Helper()
	s, g := newSchedLog(t, cfg)
	now := int64(credMs)
	s.Request(now, 1, 0, uint64(bytes))
	s.Poll(now)
	g.take(s)
	now += 100 * credUs
	s.Arrived(now, 1, 0, bytes)
	return s, g, now
}

// newSchedLog returns a scheduler of cfg and a log for its grants.
func newSchedLog(t testing.TB, cfg SchedConfig) (*Scheduler, *grantLog) {
	t.Helper()
	return newTestSched(t, cfg), newGrantLog(t)
}

func (g *grantLog) take(s *Scheduler) {
	for _, gr := range s.Out {
		if gr.Total < g.total[gr.Key] {
			g.t.Fatalf("grant total of %+v went down: %d after %d", gr.Key, gr.Total, g.total[gr.Key])
		}
		g.total[gr.Key] = gr.Total
		g.msgs++
	}
	s.ResetOut()
}

// pollUntil polls s at its deadlines (plus a random lateness below
// maxLate) from now until end and returns the time reached.
func pollUntil(s *Scheduler, g *grantLog, now, end int64, rng *rand.Rand, maxLate int64) int64 {
	for now < end {
		d := s.Poll(now)
		g.take(s)
		if d == math.MaxInt64 || d > end {
			return end
		}
		if d <= now {
			panic("deadline not in the future")
		}
		now = d
		if maxLate > 0 {
			now += rng.Int64N(maxLate)
		}
	}
	return now
}

// The credit rate is the port rate × (1 + speed-up) within 1 % over a long
// run with several sources (in two classes), with exact and late polls, for
// rates that do not divide the credit time evenly.
func TestSchedRate(t *testing.T) {
	for _, c := range []struct {
		name    string
		rate    float64
		speedUp float64
		credit  int
		late    int64
	}{
		{"10G/2%/16K", 10e9, 0.02, 16 << 10, 0},
		{"10G/2%/16K/late", 10e9, 0.02, 16 << 10, 5 * credUs},
		{"1G/3%/4K/late", 999_999_937, 0.03, 4096, 3 * credUs},
		{"25G/0/9000", 25e9, 0, 9000, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultSchedConfig(c.rate)
			cfg.SpeedUp, cfg.CreditSize = c.speedUp, c.credit
			s, g := newSchedLog(t, cfg)
			rng := rand.New(rand.NewPCG(1, 2))
			for src := EdgeID(1); src <= 5; src++ {
				s.Request(0, src, Class(src%2), 1<<50)
			}
			const dur = 200 * credMs
			pollUntil(s, g, 0, dur, rng, c.late)
			got := float64(s.Stats.GrantedBytes) * 8 / (float64(dur) * 1e-9)
			want := c.rate * (1 + c.speedUp)
			if math.Abs(got/want-1) > 0.01 {
				t.Fatalf("credit rate %.4g bit/s, want %.4g (port × (1+speed-up)) within 1%%", got, want)
			}
		})
	}
}

// Equal VOQs of one class share the credit round-robin: each gets its
// fair share within 1 %.
func TestSchedFairness(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	s, g := newSchedLog(t, cfg)
	const n = 7
	for src := EdgeID(1); src <= n; src++ {
		s.Request(0, src, 2, 1<<50)
	}
	pollUntil(s, g, 0, 100*credMs, nil, 0)
	var sum float64
	for src := EdgeID(1); src <= n; src++ {
		sum += float64(g.total[StreamKey{Src: src, Class: 2}])
	}
	mean := sum / n
	for src := EdgeID(1); src <= n; src++ {
		got := float64(g.total[StreamKey{Src: src, Class: 2}])
		if math.Abs(got/mean-1) > 0.01 {
			t.Fatalf("source %d granted %.0f bytes, mean %.0f: not within 1%%", src, got, mean)
		}
	}
}

// Strict priority: while a higher class wants credit, a lower class gets
// none; once the higher class's request is granted, the lower class gets
// the port.
func TestSchedStrictPriority(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	s, g := newSchedLog(t, cfg)
	lo := StreamKey{Src: 1, Class: 3}
	hi := StreamKey{Src: 2, Class: 5}
	mid := StreamKey{Src: 3, Class: 4}
	s.Request(0, lo.Src, lo.Class, 1<<40)
	hiTotal := uint64(200 * cfg.CreditSize)
	s.Request(0, hi.Src, hi.Class, hiTotal)
	s.Request(0, mid.Src, mid.Class, hiTotal/2)
	now := int64(0)
	for g.total[hi] < hiTotal {
		d := s.Poll(now)
		g.take(s)
		if g.total[lo] != 0 || g.total[mid] != 0 {
			t.Fatalf("at %d ns lower classes got credit (class 4: %d, class 3: %d) while class 5 had %d of %d",
				now, g.total[mid], g.total[lo], g.total[hi], hiTotal)
		}
		now = d
	}
	for g.total[mid] < hiTotal/2 {
		d := s.Poll(now)
		g.take(s)
		if g.total[lo] != 0 {
			t.Fatalf("class 3 got credit while class 4 wanted more")
		}
		now = d
	}
	pollUntil(s, g, now, now+10*credMs, nil, 0)
	if g.total[lo] == 0 {
		t.Fatal("class 3 got nothing once the higher classes were served")
	}
}

// Random requests from random VOQs: no VOQ is ever granted beyond its
// requested total (or the pre-credit), stale requests are ignored, and
// in the end every request is granted in full.
func TestSchedNeverBeyondRequest(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.CreditSize = 3000
	cfg.PreCredit = 1500
	s, g := newSchedLog(t, cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	req := map[StreamKey]uint64{}
	now := int64(0)
	check := func() {
		for k, tot := range g.total {
			if tot > max(req[k], cfg.PreCredit) {
				t.Fatalf("%+v granted %d beyond its request %d", k, tot, req[k])
			}
		}
	}
	stale := 0
	for range 20000 {
		k := StreamKey{Src: EdgeID(1 + rng.IntN(6)), Class: Class(rng.IntN(3))}
		if rng.IntN(10) == 0 && req[k] > 100 {
			s.Request(now, k.Src, k.Class, req[k]-1-uint64(rng.IntN(100))) // stale
			stale++
		} else {
			req[k] += uint64(rng.IntN(5000))
			s.Request(now, k.Src, k.Class, req[k])
		}
		d := s.Poll(now)
		g.take(s)
		check()
		now = min(d, now+rng.Int64N(4*credUs))
	}
	if s.Stats.RequestsStale != uint64(stale) {
		t.Fatalf("%d stale requests counted, %d sent", s.Stats.RequestsStale, stale)
	}
	pollUntil(s, g, now, now+1000*credMs, nil, 0)
	check()
	for k, r := range req {
		if g.total[k] != max(r, cfg.PreCredit) && r > cfg.PreCredit {
			t.Fatalf("%+v: granted %d of %d in the end", k, g.total[k], r)
		}
	}
}

// Above the egress threshold nothing is granted; below it granting resumes
// at once, without a burst of the credit not issued while stopped.
func TestSchedStopResume(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.StopAbove = 100_000
	s, g := newSchedLog(t, cfg)
	s.Request(0, 1, 0, 1<<40)
	now := pollUntil(s, g, 0, credMs, nil, 0)
	before := s.Stats.GrantedBytes
	if before == 0 {
		t.Fatal("nothing granted before the stop")
	}
	s.SetEgressQueue(cfg.StopAbove + 1)
	now = pollUntil(s, g, now, now+10*credMs, nil, 0)
	if s.Stats.GrantedBytes != before {
		t.Fatalf("granted %d bytes while the egress queue was above the threshold", s.Stats.GrantedBytes-before)
	}
	if !s.Stopped() || s.Stats.Stopped == 0 {
		t.Fatal("not counted as stopped")
	}
	s.SetEgressQueue(cfg.StopAbove)
	s.Poll(now)
	g.take(s)
	burst := s.Stats.GrantedBytes - before
	if burst == 0 || burst > uint64(cfg.CreditSize) {
		t.Fatalf("resumed with %d bytes at once, want one credit (%d)", burst, cfg.CreditSize)
	}
	pollUntil(s, g, now, now+10*credMs, nil, 0)
	got := float64(s.Stats.GrantedBytes-before) * 8 / 10e-3
	if want := s.CreditRate(); math.Abs(got/want-1) > 0.01 {
		t.Fatalf("after resuming: %.4g bit/s, want %.4g", got, want)
	}
}

// A request not above the granted total means the source lost a grant: it
// is re-sent at once. The refresh timer re-sends the total of a VOQ that
// still waits for credit (here held back by the egress threshold); a VOQ
// granted all it asked for is left to its source's repeated request.
func TestSchedRepairAndRefresh(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.StopAbove = 1 << 20
	s, g := newSchedLog(t, cfg)
	k := StreamKey{Src: 9, Class: 1}
	total := uint64(3 * cfg.CreditSize)
	s.Request(0, k.Src, k.Class, total)
	now := pollUntil(s, g, 0, credMs, nil, 0)
	if g.total[k] != total {
		t.Fatalf("granted %d of %d", g.total[k], total)
	}
	// The source lost the last grant and asks again.
	s.Request(now, k.Src, k.Class, total)
	if len(s.Out) != 1 || s.Out[0].Total != total || s.Out[0].Key != k {
		t.Fatalf("a repeated request got %+v, want the grant total %d again", s.Out, total)
	}
	s.ResetOut()
	// Granted in full: nothing to refresh, no timer.
	if d := s.Poll(now); d != math.MaxInt64 || len(s.Out) != 0 {
		t.Fatalf("a VOQ granted in full: deadline %d, refresh %+v; want none", d, s.Out)
	}
	// More is asked while the egress queue stops the grants: the refresh
	// re-sends the last total Refresh after the request, Refresh later,
	// then backing off (doubling) to RefreshMax until credit flows again.
	s.SetEgressQueue(cfg.StopAbove + 1)
	start := now
	s.Request(now, k.Src, k.Class, total+uint64(cfg.CreditSize))
	var at []int64
	for end := now + 120*cfg.Refresh; now < end; {
		d := s.Poll(now)
		if d == math.MaxInt64 {
			t.Fatal("a stopped VOQ that wants credit set no refresh timer")
		}
		for _, gr := range s.Out {
			if gr.Key == k && gr.Total == total {
				at = append(at, (now-start)/cfg.Refresh)
			}
		}
		s.ResetOut()
		now = d
	}
	// RefreshMax is 40 Refresh: gaps 1, 1, 2, 4, 8, 16, 32, then 40.
	if want := []int64{1, 2, 4, 8, 16, 32, 64, 104}; !slices.Equal(at, want) {
		t.Fatalf("a stopped VOQ's total was refreshed at %v Refresh periods after its request, want %v", at, want)
	}
	s.SetEgressQueue(0)
	now = pollUntil(s, g, now, now+credMs, nil, 0)
	if g.total[k] != total+uint64(cfg.CreditSize) {
		t.Fatalf("after the stop: granted %d, want %d", g.total[k], total+uint64(cfg.CreditSize))
	}
	if d := s.Poll(now); d != math.MaxInt64 {
		t.Fatalf("served in full: next deadline %d, want none", d)
	}
}

// FCI from a source lowers its credit rate (multiplicatively, from its fair
// share, never below FCIMin); without FCI it recovers additively to its
// fair share.
func TestSchedFCI(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	a, b := StreamKey{Src: 1}, StreamKey{Src: 2}
	s, g, now := schedBusy(t, cfg, 1<<50, 2*credMs, a.Src, b.Src)
	// One FCI: a's fraction is its share × FCIDecrease.
	s.FCI(now, a.Src)
	if f, want := s.SourceRate(now, a.Src), 0.5*cfg.FCIDecrease; math.Abs(f-want) > 1e-9 {
		t.Fatalf("after one FCI a's rate fraction is %v, want share 0.5 × %v", f, cfg.FCIDecrease)
	}
	// A second FCI within FCIHold does nothing.
	s.FCI(now+cfg.FCIHold/2, a.Src)
	if s.Stats.FCIDecreases != 1 {
		t.Fatalf("%d decreases, want 1 (second FCI within FCIHold)", s.Stats.FCIDecreases)
	}
	// FCI on every cell for 5 ms: a's rate falls to the floor; b takes the rest.
	a0, b0 := g.total[a], g.total[b]
	end := now + 5*credMs
	for now < end {
		s.FCI(now, a.Src)
		d := s.Poll(now)
		g.take(s)
		now = min(d, now+cfg.FCIHold)
	}
	da, db := float64(g.total[a]-a0), float64(g.total[b]-b0)
	if da > 0.25*db {
		t.Fatalf("under FCI a got %.0f bytes, b %.0f: a not throttled", da, db)
	}
	if f := s.SourceRate(now, a.Src); f < cfg.FCIMin || f > 2*cfg.FCIMin {
		t.Fatalf("after sustained FCI a's fraction is %v, want near the floor %v", f, cfg.FCIMin)
	}
	port := s.CreditRate() * 5e-3 / 8
	if da < 0.9*cfg.FCIMin*port || da > 3*cfg.FCIMin*port {
		t.Fatalf("a got %.0f bytes in 5 ms under FCI, want about FCIMin × port (%.0f)", da, cfg.FCIMin*port)
	}
	// Recovery: linear at FCIRecover per second.
	f0 := s.SourceRate(now, a.Src)
	if f1 := s.SourceRate(now+credMs, a.Src); math.Abs(f1-f0-cfg.FCIRecover*1e-3) > 1e-9 {
		t.Fatalf("fraction %v → %v in 1 ms, want + %v", f0, f1, cfg.FCIRecover*1e-3)
	}
	now = pollUntil(s, g, now, now+int64(1e9/cfg.FCIRecover)+credMs, nil, 0)
	if f := s.SourceRate(now, a.Src); f != 1 {
		t.Fatalf("fraction %v after the recovery time, want 1", f)
	}
	a0, b0 = g.total[a], g.total[b]
	pollUntil(s, g, now, now+20*credMs, nil, 0)
	if da, db := float64(g.total[a]-a0), float64(g.total[b]-b0); math.Abs(da/db-1) > 0.01 {
		t.Fatalf("after recovery a got %.0f, b %.0f: not equal within 1%%", da, db)
	}
}

// A sole source under FCI is throttled too (its share is the whole port),
// and the port does not bank the credit it did not give.
func TestSchedFCISoleSource(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.FCIRecover = 0
	s, g, now := schedBusy(t, cfg, 1<<50, credMs, 1)
	s.FCI(now, 1)
	before := s.Stats.GrantedBytes
	now = pollUntil(s, g, now, now+10*credMs, nil, 0)
	got := float64(s.Stats.GrantedBytes-before) * 8 / 10e-3
	if want := s.CreditRate() * cfg.FCIDecrease; math.Abs(got/want-1) > 0.02 {
		t.Fatalf("sole source under FCI: %.4g bit/s, want %.4g", got, want)
	}
}

func TestSchedResetSource(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.PreCredit = 2000
	s, _, now := schedBusy(t, cfg, 1<<30, credMs, 1, 2)
	s.ResetSource(1)
	if r, gr, _ := s.Totals(1, 0); r != 0 || gr != cfg.PreCredit {
		t.Fatalf("after reset: requested %d granted %d, want 0 and the pre-credit", r, gr)
	}
	if _, gr, _ := s.Totals(2, 0); gr <= cfg.PreCredit {
		t.Fatal("the other source was reset too")
	}
	// The new session's totals start from 0: a small request is granted.
	s.Request(now, 1, 0, 5000)
	for range 1000 {
		now = s.Poll(now)
		s.ResetOut()
		if _, gr, _ := s.Totals(1, 0); gr == 5000 {
			return
		}
	}
	t.Fatal("the new session's request was not granted")
}

// Hostile or odd requests are counted and dropped: classes out of range and
// a full table.
func TestSchedBadRequests(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	cfg.MaxVOQs = 2
	s := newTestSched(t, cfg)
	s.Request(0, 1, Classes, 100)
	s.Request(0, 1, 0, 100)
	s.Request(0, 2, 0, 100)
	s.Request(0, 3, 0, 100)
	if s.Stats.RequestsBad != 1 || s.Stats.TableFull != 1 {
		t.Fatalf("stats %+v: want 1 bad class, 1 table full", s.Stats)
	}
	if _, _, ok := s.Totals(3, 0); ok {
		t.Fatal("a VOQ beyond the table's capacity was created")
	}
	if _, err := NewScheduler(SchedConfig{Rate: 1e9}); err == nil {
		t.Fatal("a config without a credit size was accepted")
	}
}

// Poll and Request do not allocate in steady state.
func TestSchedNoAlloc(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.StopAbove = 1 << 20
	s := newTestSched(t, cfg)
	req := make([]uint64, 16)
	for i := range req {
		req[i] = 1 << 20
		s.Request(0, EdgeID(1+i), Class(i%4), req[i])
	}
	now := int64(0)
	i := 0
	allocs := testing.AllocsPerRun(20000, func() {
		i++
		if i%3 == 0 {
			k := i % len(req)
			req[k] += 40000
			s.Request(now, EdgeID(1+k), Class(k%4), req[k])
		}
		if i%500 == 0 {
			s.FCI(now, EdgeID(1+i%16))
		}
		s.SetEgressQueue(i % (2 << 20))
		now = max(s.Poll(now), now+credUs)
		s.ResetOut()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Poll", allocs)
	}
	if s.Stats.Credits < 1000 {
		t.Fatalf("only %d credits issued: the loop did not exercise granting", s.Stats.Credits)
	}
}

// BenchmarkSchedPoll: one credit per op among 64 backlogged VOQs in 4
// classes (the refresh scan included).
func BenchmarkSchedPoll(b *testing.B) {
	s := newTestSched(b, DefaultSchedConfig(100e9))
	for i := range 64 {
		s.Request(0, EdgeID(1+i), Class(i%4), 1<<60)
	}
	now := int64(0)
	for range b.N {
		now = s.Poll(now)
		s.ResetOut()
	}
}

// An idle port's scheduler asks for no timer: once its VOQs are served,
// Poll returns math.MaxInt64 (a refresh every 200 µs kept every idle edge's
// worker awake: 5,000 wakeups a second); a new request starts the pacer
// again.
func TestSchedulerSleepsWhenIdle(t *testing.T) {
	cfg := DefaultSchedConfig(100e6)
	s, g := newSchedLog(t, cfg)
	if d := s.Poll(0); d != math.MaxInt64 {
		t.Fatalf("a scheduler that never had a request asks for a timer at %d", d)
	}
	key := StreamKey{Src: 2, Port: 0, Class: 0}
	s.Request(credUs, key.Src, key.Class, 40<<10)
	now := pollUntil(s, g, credUs, 10*credMs, nil, 0)
	if g.total[key] != 40<<10 {
		t.Fatalf("granted %d of %d", g.total[key], 40<<10)
	}
	if d := s.Poll(now); d != math.MaxInt64 {
		t.Fatalf("served and idle: next deadline %d µs away, want none", (d-now)/credUs)
	}
	refreshed := s.Stats.Refreshed
	s.Request(now, key.Src, key.Class, 50<<10)
	d := s.Poll(now)
	g.take(s)
	if g.total[key] != 50<<10 {
		t.Fatalf("after a new request: granted %d of %d", g.total[key], 50<<10)
	}
	if d != math.MaxInt64 || s.Stats.Refreshed != refreshed {
		t.Fatalf("granted in full at once: deadline %d, %d refreshes; want none", d, s.Stats.Refreshed-refreshed)
	}
}

// A VOQ served slowly (a 20 Mbit/s port shared by two sources: a grant to
// each every 50 ms) has its total refreshed a few times per grant, not
// every Refresh: the refreshes back off to RefreshMax while it stays
// active, and its grants do not start them again.
func TestSchedRefreshBacksOffWhileServed(t *testing.T) {
	cfg := DefaultSchedConfig(20e6)
	cfg.CreditSize = 64 << 10
	s, g := newSchedLog(t, cfg)
	for src := EdgeID(1); src <= 2; src++ {
		s.Request(0, src, 0, 1<<30)
	}
	polls := 0
	for now := int64(0); now < 1e9; polls++ {
		d := s.Poll(now)
		g.take(s)
		now = d
	}
	credits, msgs := int(s.Stats.Credits), g.msgs
	refreshed := msgs - credits
	// 1 s at 20.4 Mbit/s of 64 KiB credits: 39 grants, then refreshes at
	// most every RefreshMax per VOQ (2 × 125) plus the first few.
	if credits < 37 || credits > 41 || refreshed > 2*(125+8) {
		t.Fatalf("in 1 s: %d credits, %d refreshes, %d polls; want about 39 credits and at most %d refreshes",
			credits, refreshed, polls, 2*(125+8))
	}
	t.Logf("in 1 s: %d credits, %d refreshes, %d polls", credits, refreshed, polls)
}

// After a late Poll the pacer catches up on at most MaxBurst credits and,
// with MaxBurstTime, no more than that time at the credit rate (at least
// one credit), besides the credit due now.
func TestSchedBurstTime(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		burstTime int64
		want      int // credits issued by a Poll 1 s late
	}{
		{20e6, 0, 1 + 8},           // MaxBurst alone
		{20e6, 10 * credMs, 1 + 1}, // 10 ms is 0.4 credits at 20M: one
		{1e9, 10 * credMs, 1 + 8},  // 10 ms is 19 credits at 1G: MaxBurst
		{200e6, 10 * credMs, 4},    // 10 ms is 3.9 credits: slots at -10, -7.4, -4.8, -2.2 ms
	} {
		cfg := DefaultSchedConfig(tc.rate)
		cfg.CreditSize, cfg.MaxBurst, cfg.MaxBurstTime = 64<<10, 8, tc.burstTime
		s := newTestSched(t, cfg)
		s.Request(0, 1, 0, 1<<30)
		s.Poll(0)
		s.ResetOut()
		before := s.Stats.Credits
		s.Poll(1e9)
		if got := int(s.Stats.Credits - before); got != tc.want {
			t.Errorf("rate %g, MaxBurstTime %d ms: a Poll 1 s late issued %d credits, want %d", tc.rate, tc.burstTime/credMs, got, tc.want)
		}
	}
}

// TestCreditWindow: with MaxInFlight the scheduler grants, paced, until
// the egress queue plus the credit in flight reach the window; arrivals
// reopen it and measure the loop's round trip; credit from which nothing
// arrives for InFlightExpire is taken for lost, so that lost cells never
// wedge the port.
func TestCreditWindow(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	cfg.CreditSize, cfg.StopAbove, cfg.MaxInFlight = 10_000, 5_000, 50_000
	s, g := newSchedLog(t, cfg)
	const src = EdgeID(2)
	key := StreamKey{Src: src, Class: 0}
	now := int64(credMs)
	s.Request(now, src, 0, 1<<30)
	s.Poll(now)
	g.take(s)
	if g.total[key] != 10_000 || s.Loop().InFlight != 10_000 {
		t.Fatalf("first grant %d, in flight %d", g.total[key], s.Loop().InFlight)
	}
	// Its bytes arrive 100 µs later: a round trip measured, nothing in
	// flight.
	now += 100 * credUs
	s.Arrived(now, src, 0, 10_000)
	l := s.Loop()
	if l.RTT != 100*credUs || l.InFlight != 0 || s.Stats.RTTSamples != 1 {
		t.Fatalf("after the arrival: %+v, %d samples", l, s.Stats.RTTSamples)
	}
	// The window: 200 µs (the round trip and twice its variation) at
	// 1.02 Gbit/s plus StopAbove.
	if want := 25_500 + cfg.StopAbove; l.Window != want {
		t.Fatalf("window %d, want %d", l.Window, want)
	}
	// However late the Polls, credit in flight stops at the window (the
	// last grant may cross it, never MaxInFlight).
	for range 50 {
		now += 50 * credUs
		s.Poll(now)
		g.take(s)
	}
	if got, l := g.total[key], s.Loop(); got != 50_000 || l.InFlight != 40_000 || !s.WindowFull() {
		t.Fatalf("granted %d, in flight %d (full %v), want 40000 in flight", got, l.InFlight, s.WindowFull())
	}
	// The egress queue counts too: everything arrived but queued (the
	// arrival measured a longer loop, the window grew).
	s.Arrived(now, src, 0, 40_000)
	s.SetEgressQueue(s.Loop().Window)
	now += credMs
	s.Poll(now)
	g.take(s)
	if g.total[key] != 50_000 {
		t.Fatalf("granted with the egress queue at the window: %d", g.total[key])
	}
	s.SetEgressQueue(0)
	now += credMs
	s.Poll(now)
	g.take(s)
	before := g.total[key]
	if before == 50_000 {
		t.Fatal("no grant once the queue drained")
	}
	// The cells of those grants are lost: the window fills, and after
	// InFlightExpire it opens again.
	for range 10 {
		now += credMs
		s.Poll(now)
		g.take(s)
	}
	before = g.total[key]
	for range 20 {
		now += credMs
		s.Poll(now)
		g.take(s)
	}
	if g.total[key] != before {
		t.Fatalf("granted %d more while the credit in flight had not expired", g.total[key]-before)
	}
	now += DefaultInFlightExpire
	s.Poll(now)
	g.take(s)
	if g.total[key] == before || s.Stats.ExpiredBytes == 0 {
		t.Fatalf("credit lost in flight wedged the port: granted %d, expired %d", g.total[key], s.Stats.ExpiredBytes)
	}
}

// TestCreditWindowLongLoop: a round trip near a second at 10 Gbit/s (a
// source kept from running) opens the window to MaxInFlight, not to a
// product wrapped around 2^64 (this one wraps to 4 bytes).
func TestCreditWindowLongLoop(t *testing.T) {
	cfg := DefaultSchedConfig(10e9)
	cfg.MaxInFlight = 2 << 20
	s := newTestSched(t, cfg)
	s.Request(0, 2, 0, 1<<30)
	s.Poll(0)
	s.ResetOut()
	const rtt = 904_252_162
	s.Arrived(rtt, 2, 0, 100)
	if l := s.Loop(); l.RTT != rtt || l.Window != cfg.MaxInFlight {
		t.Fatalf("a %d ns loop at 10 Gbit/s: %+v, want the window at MaxInFlight %d", rtt, l, cfg.MaxInFlight)
	}
}

// TestCreditSetMaxInFlight: a lower bound takes the window down at once
// (the measured loop's window is clipped, not kept), a higher one lets
// the measured loop's window through again, never below CreditSize; a
// scheduler without the window stays without.
func TestCreditSetMaxInFlight(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	cfg.CreditSize, cfg.StopAbove, cfg.MaxInFlight = 10_000, 5_000, 50_000
	s := newTestSched(t, cfg)
	if s.SetMaxInFlight(20_000); s.Loop().Window != 20_000 || s.Config().MaxInFlight != 20_000 {
		t.Fatalf("before a sample: window %d, bound %d, want 20000", s.Loop().Window, s.Config().MaxInFlight)
	}
	const src = EdgeID(2)
	now := int64(credMs)
	s.Request(now, src, 0, 1<<30)
	s.Poll(now)
	s.ResetOut()
	s.Arrived(now+100*credUs, src, 0, 10_000) // the loop's window: 30500
	if w := s.Loop().Window; w != 20_000 {
		t.Fatalf("window %d under a 20000 bound", w)
	}
	if s.SetMaxInFlight(1 << 20); s.Loop().Window != 25_500+cfg.StopAbove {
		t.Fatalf("window %d with the bound raised, want the loop's %d", s.Loop().Window, 25_500+cfg.StopAbove)
	}
	if s.SetMaxInFlight(1); s.Loop().Window != cfg.CreditSize {
		t.Fatalf("window %d with a bound below a credit, want %d", s.Loop().Window, cfg.CreditSize)
	}
	cfg.MaxInFlight = 0
	off := newTestSched(t, cfg)
	if off.SetMaxInFlight(20_000); off.Windowed() {
		t.Fatal("SetMaxInFlight turned the window on")
	}
}

// TestSchedByteFair: two VOQs always waiting, one with a credit and more,
// the other with a quarter credit (its source asks for that much more
// whenever it is granted, as a flow pacing itself near its share does):
// the scheduler serves them byte for byte. Turns of a credit or all a VOQ
// held gave the first four times the second's bytes.
func TestSchedByteFair(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	s, g := newSchedLog(t, cfg)
	small := uint64(cfg.CreditSize / 4)
	k1, k2 := StreamKey{Src: 1}, StreamKey{Src: 2}
	s.Request(0, 1, 0, 1<<40)
	s.Request(0, 2, 0, small)
	for now := int64(0); now < 20*credMs; now += 10 * credUs {
		s.Poll(now)
		g.take(s)
		if _, granted, _ := s.Totals(2, 0); granted == g.total[k2] {
			s.Request(now, 2, 0, granted+small)
		}
	}
	a, b := float64(g.total[k1]), float64(g.total[k2])
	if d := math.Abs(a-b) / (a + b); d > 0.02 || b == 0 {
		t.Fatalf("granted %.0f and %.0f bytes: %.3f apart, want within 2 %%", a, b, d)
	}
}

// TestSchedHandBounded: with two VOQs wanting credit the queue in hand is
// at most twice their backlog not granted, and a grant is cut to the
// window's room; one VOQ alone, or a backlog of half StopAbove, keeps the
// whole of StopAbove in hand.
func TestSchedHandBounded(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	cfg.CreditSize, cfg.StopAbove, cfg.MaxInFlight = 64<<10, 256<<10, 2<<20
	s, g, now := schedLoopMeasured(t, cfg, 8<<10)
	loop := s.Loop().Window - cfg.StopAbove
	if loop <= 0 || loop > 100<<10 {
		t.Fatalf("the loop's credit %d bytes (window %d)", loop, s.Loop().Window)
	}
	s.SetEgressQueue(200 << 10)
	s.Request(now, 1, 0, 8<<10+20<<10)
	if w := s.Loop().Window; w != loop+cfg.StopAbove {
		t.Fatalf("one VOQ: window %d, want the loop's %d plus StopAbove", w, loop)
	}
	s.Request(now, 2, 0, 40<<10)
	if w := s.Loop().Window; w != loop+2*(60<<10) || !s.WindowFull() {
		t.Fatalf("two VOQs wanting 60 KiB: window %d (full %v), want the loop's %d plus 120 KiB", w, s.WindowFull(), loop)
	}
	s.Poll(now)
	g.take(s)
	if len(g.total) != 1 {
		t.Fatalf("granted at the window: %v", g.total)
	}
	// The queue falls 16 KiB below the window: one grant of that room.
	s.SetEgressQueue(s.Loop().Window - s.Loop().InFlight - 16<<10)
	s.Poll(now)
	g.take(s)
	if got := g.total[StreamKey{Src: 1}] + g.total[StreamKey{Src: 2}] - 8<<10; got != 16<<10 {
		t.Fatalf("granted %d bytes into 16 KiB of room", got)
	}
	s.Request(now, 2, 0, 200<<10)
	if w := s.Loop().Window; w != loop+cfg.StopAbove {
		t.Fatalf("backlog above half StopAbove: window %d, want the loop's %d plus StopAbove", w, loop)
	}
}

// TestSchedTiesGoRound: VOQs whose next grants start at the same virtual
// time are served in turn, not the first in the ring every time (a grant
// owed to a late VOQ leaves its tag where it was, and ties came back).
func TestSchedTiesGoRound(t *testing.T) {
	s := newTestSched(t, DefaultSchedConfig(1e9))
	for _, src := range []EdgeID{1, 2, 3} {
		s.Request(0, src, 0, 1<<30)
	}
	seen := map[StreamKey]int{}
	for range 6 {
		vi, _ := s.pick(0)
		if vi < 0 {
			t.Fatal("nothing picked")
		}
		seen[s.voqs[vi].key]++
		for i := range s.voqs {
			s.voqs[i].tag = s.vnow // a tie again
		}
	}
	for _, src := range []EdgeID{1, 2, 3} {
		if n := seen[StreamKey{Src: src}]; n != 2 {
			t.Fatalf("six picks among three tied VOQs: %v, want two each", seen)
		}
	}
}

// TestCreditArrivedBeforeRequest: a source sends within its pre-credit
// and lead before it asks (LeadHold), and those cells may arrive before
// its first request made the VOQ. They count as arrived: once everything
// granted has arrived no credit is in flight. Uncounted, they stayed in
// flight for good: the VOQ was taken for late whenever it paused for a
// loop's timeout, passed its turns, and was owed them (CatchUp) ahead of
// the others.
func TestCreditArrivedBeforeRequest(t *testing.T) {
	cfg := DefaultSchedConfig(100e6)
	cfg.MaxInFlight, cfg.PreCredit, cfg.Lead = 2<<20, 4096, 4096
	s, g := newSchedLog(t, cfg)
	now := int64(credMs)
	s.Arrived(now, 1, 0, 6000) // pre-credit and lead, before any request
	s.Request(now, 1, 0, 6000+64<<10)
	s.Poll(now)
	g.take(s)
	_, granted, _ := s.Totals(1, 0)
	now += 100 * credUs
	s.Arrived(now, 1, 0, int(granted)+int(cfg.Lead)-6000) // all it may send
	if f := s.Loop().InFlight; f != 0 {
		t.Fatalf("granted %d, all of it and the lead arrived: %d bytes still in flight", granted, f)
	}
}

// With Ahead the round trip is measured only from a grant whose first byte
// beyond the lead was enqueued when asked for: a grant of the bytes a
// request names beyond the backlog waits for the source's next message,
// not for the loop.
func TestCreditWindowAhead(t *testing.T) {
	cfg := DefaultSchedConfig(1e9)
	cfg.CreditSize, cfg.StopAbove, cfg.MaxInFlight = 10_000, 5_000, 50_000
	cfg.Lead, cfg.Ahead = 1000, 4000
	s, g := newSchedLog(t, cfg)
	const src = EdgeID(2)
	now := int64(credMs)
	// 500 bytes enqueued (within the lead, sent): the grant is all ahead.
	s.Request(now, src, 0, 500+4000)
	s.Poll(now)
	g.take(s)
	if l := s.Loop(); l.InFlight != 500 {
		t.Fatalf("credit in flight %d after a grant of 4500 with 500 enqueued, want 500: credit ahead of the backlog is not", l.InFlight)
	}
	now += 1000 * credUs
	s.Arrived(now, src, 0, 2000)
	if n := s.Stats.RTTSamples; n != 0 {
		t.Fatalf("%d round trips measured from a grant ahead of the backlog", n)
	}
	// Unused for far longer than InFlightExpire: nothing expires.
	now += 2 * s.expire
	s.Poll(now)
	if s.Stats.ExpiredBytes != 0 || s.Loop().InFlight != 0 {
		t.Fatalf("credit ahead of the backlog expired (%d bytes) or in flight (%d)", s.Stats.ExpiredBytes, s.Loop().InFlight)
	}
	// 10000 bytes more enqueued: the grant's first byte beyond the lead
	// was waiting.
	s.Request(now, src, 0, 14500+4000)
	s.Poll(now)
	g.take(s)
	now += 100 * credUs
	s.Arrived(now, src, 0, 10_000)
	if l := s.Loop(); s.Stats.RTTSamples != 1 || l.RTT != 100*credUs {
		t.Fatalf("after a grant of waiting bytes: %d samples, %+v", s.Stats.RTTSamples, l)
	}
}

// TestSchedWaitDeadline: a grant held for a VOQ whose window is in the
// port's queue (aheadOfWaiting: the queue holds at least the loop's worth
// and a quarter credit) comes due when the queue has drained to the
// loop's worth, never at once. With the queue exactly at the hold's bound
// the deadline was now, which Poll returned, and a worker sleeping until
// its next deadline spun on it.
func TestSchedWaitDeadline(t *testing.T) {
	cfg := DefaultSchedConfig(100e6)
	cfg.CreditSize, cfg.MaxInFlight = 64<<10, 2<<20
	s, _, now := schedLoopMeasured(t, cfg, 64<<10)
	for _, q := range []int{s.loop + s.minGrant(), s.loop + 100<<10} {
		s.SetEgressQueue(q)
		want := now + int64(float64(q-s.loop)*8e9/cfg.Rate)
		if d := s.waitDue(now); d <= now || d > want+1 {
			t.Errorf("queue %d bytes (loop %d): a held grant due at %d, want after now (%d), by %d", q, s.loop, d, now, want)
		}
	}
}
