package cellify

import (
	"errors"
	"math"
)

// SchedConfig configures the egress credit scheduler of one host port.
// Times are nanoseconds, sizes bytes, rates bits per second.
type SchedConfig struct {
	Port       uint8   // the host port this scheduler serves (names the VOQs in grants)
	Rate       float64 // the port's rate
	SpeedUp    float64 // credits are issued at Rate × (1 + SpeedUp)
	CreditSize int     // bytes per grant (a grant is smaller only at the end of a request)
	// StopAbove: no grant is issued while the port's egress queue (reported
	// by SetEgressQueue) holds more bytes than this; 0 never stops.
	StopAbove int
	// MaxBurst bounds the credit a late Poll may catch up on, in credits;
	// MaxBurstTime (ns, 0: none) bounds it also in time at the credit rate,
	// never below one credit. A burst of grants is sprayed at once into
	// the fabric: 8 credits of 64 KiB after a stall are 4 ms at 1 Gbit/s
	// but 200 ms at 20 Mbit/s, a queue in front of the slow links that
	// outlasts the reassembly timeout.
	MaxBurst     int
	MaxBurstTime int64
	// MaxInFlight (bytes, 0: none) turns on the credit window: the
	// scheduler counts the bytes of the cells that arrive for each VOQ
	// (Arrived), so that credit granted and not yet arrived is the credit
	// in flight, and measures the loop's round trip (a grant out, the
	// first byte it let the source send back). Grants then go out, still
	// paced, only while the egress queue plus the credit in flight stay
	// below the window, the round trip's worth of credit at the credit
	// rate plus StopAbove (the queue the port keeps in hand; while two or
	// more VOQs want credit, at most twice their backlog not granted), and
	// a grant never takes them above MaxInFlight. The port stays busy whatever
	// the loop's round trip (as long as its worth fits MaxInFlight), and
	// the egress queue, which only arriving credit fills, never exceeds
	// MaxInFlight (plus the sources' Lead and pre-credit). Within the
	// window a VOQ holds at most its share of it in flight, and a late one
	// (credit in flight, nothing back for the loop's timeout: its source
	// kept from running) passes its turns to the others. StopAbove alone
	// (MaxInFlight 0) stops grants on the queue only: a loop longer than
	// StopAbove at the port's rate then idles the port after every stop.
	MaxInFlight int
	// Lead is the sources' standing lead (CreditClientConfig.Lead): bytes
	// a VOQ may send beyond its grant, which the round trip's measure
	// skips (they did not wait for the grant).
	Lead uint64
	// Ahead is what the sources' requests name beyond their backlog
	// (CreditClientConfig.Ahead): a grant of those bytes is not waited
	// for, so the round trip is measured only from a grant whose first
	// byte (beyond the lead) was enqueued when it was asked for, and only
	// the credit granted of the bytes enqueued (the last request's total
	// less Ahead) counts as in flight. Credit ahead of the backlog stays
	// with the source until bytes come to use it (they arrive at once,
	// as the Lead's do): counted in flight, it held the window and a
	// VOQ's share of it for as long as the source had nothing to send,
	// and expired as lost. The egress queue may thus exceed MaxInFlight
	// by the sources' Ahead as well as their Lead.
	Ahead uint64
	// InFlightExpire: credit of a VOQ from which nothing arrived for this
	// long (ns) is taken for lost (cells lost in the fabric or dropped with
	// a source), so that it no longer holds the window; a hole the
	// reassembly skips gives its cells up at once (Lost). 0: 250 ms: a
	// source or fabric node kept from running for less than that must not
	// find its credit taken back, lest its cells and the credit granted in
	// their place arrive together.
	InFlightExpire int64
	// CatchUp (ns at the credit rate, 0: none) bounds what a late VOQ is
	// owed for the turns it passed to the others (a grant of up to a
	// credit each): once it is no longer late it is served before the
	// others of its class, within its share of the window, until it has
	// had them. Without it each stall of a source gave its part of the
	// port to the others for good: in an incast whose sources offer more
	// than the port, the stalled source's VOQ came out of each stall that
	// much fuller than the others' and overflowed first, and the port's
	// shares over the run followed the stalls. A VOQ that stops asking
	// (all it asked for granted) is owed nothing.
	CatchUp int64
	// Refresh is when the grant total of a VOQ still waiting for credit is
	// first re-sent (see Scheduler.Poll); RefreshMax is where the refreshes
	// back off to while it stays active (Refresh, Refresh, then doubling,
	// counted from its last request that made it active; 0: every
	// Refresh).
	Refresh    int64
	RefreshMax int64
	// PreCredit is the grant total both ends assume for every VOQ at session
	// start (and after a Reset): bytes a source sends without asking.
	PreCredit uint64
	MaxVOQs   int // capacity of the VOQ table (source, class); 0: 1024
	// FCI reaction, per source: a cell with FCI multiplies the source's
	// credit rate (a fraction of the port's credit rate, starting from its
	// fair share) by FCIDecrease, at most once per FCIHold; the fraction
	// regains FCIRecover per second, never falls below FCIMin.
	FCIDecrease float64
	FCIHold     int64
	FCIRecover  float64
	FCIMin      float64
}

// DefaultSchedConfig returns the defaults for a port of the given rate.
func DefaultSchedConfig(rate float64) SchedConfig {
	return SchedConfig{
		Rate:        rate,
		SpeedUp:     0.02,
		CreditSize:  16 << 10,
		MaxBurst:    2,
		CatchUp:     DefaultCatchUp,
		Refresh:     200_000,
		RefreshMax:  DefaultRefreshMax,
		MaxVOQs:     1024,
		FCIDecrease: 0.75,
		FCIHold:     20_000,
		FCIRecover:  500,
		FCIMin:      0.05,
	}
}

func (c *SchedConfig) check() error {
	if !(c.Rate >= 1 && c.Rate <= 1e13) || !(c.SpeedUp >= 0 && c.SpeedUp <= 1) {
		return errors.New("cellify: SchedConfig.Rate must be in [1, 1e13] bit/s and SpeedUp in [0, 1]")
	}
	if c.CreditSize < 1 || c.CreditSize > 1<<24 || c.MaxBurst < 1 || c.MaxBurst > 1024 || c.StopAbove < 0 {
		return errors.New("cellify: SchedConfig.CreditSize must be in [1, 16 MiB], MaxBurst in [1, 1024], StopAbove ≥ 0")
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > 0 && c.MaxInFlight < c.CreditSize || c.InFlightExpire < 0 {
		return errors.New("cellify: SchedConfig.MaxInFlight must be 0 or at least CreditSize, InFlightExpire ≥ 0")
	}
	if c.Refresh < 1 || c.RefreshMax < 0 || c.MaxBurstTime < 0 || c.CatchUp < 0 || c.FCIHold < 0 || c.MaxVOQs < 0 || c.MaxVOQs > 1<<20 {
		return errors.New("cellify: SchedConfig.Refresh must be > 0, RefreshMax, MaxBurstTime and CatchUp ≥ 0, FCIHold ≥ 0, MaxVOQs in [0, 2^20]")
	}
	if !(c.FCIDecrease > 0 && c.FCIDecrease <= 1) || !(c.FCIMin > 0 && c.FCIMin <= 1) || !(c.FCIRecover >= 0) {
		return errors.New("cellify: SchedConfig.FCIDecrease and FCIMin must be in (0, 1], FCIRecover ≥ 0")
	}
	return nil
}

// SchedGrant is a credit grant to send: the VOQ at source Key.Src toward this
// port and class Key.Class may have sent Total bytes ever.
type SchedGrant struct {
	Key   StreamKey
	Total uint64
	v     int32 // VOQ index, to clear its coalescing mark on ResetOut
}

// SchedStats counts what a Scheduler did.
type SchedStats struct {
	Requests      uint64 // credit requests received
	RequestsStale uint64 // ... whose total was below the known one (ignored)
	RequestsBad   uint64 // ... with a class out of range (dropped)
	TableFull     uint64 // ... for a new VOQ when the table was full (dropped)
	Repairs       uint64 // requests not above the granted total: the grant was re-sent at once
	Credits       uint64 // grants issued by the pacer
	GrantedBytes  uint64 // bytes granted by the pacer (pre-credit excluded)
	GrantMsgs     uint64 // grant totals put in Out (coalesced per Poll)
	Refreshed     uint64 // ... of which by the refresh timer
	Stopped       uint64 // Polls that issued nothing because the egress queue was above StopAbove
	FCIs          uint64 // FCI cells reported
	FCIDecreases  uint64 // ... that lowered a source's rate (the others fell within FCIHold)
	Resets        uint64
	// With the credit window (MaxInFlight):
	WindowFull   uint64 // Polls that stopped granting at the window
	RTTSamples   uint64 // round trips measured
	ExpiredBytes uint64 // credit in flight taken for lost (InFlightExpire)
	LostBytes    uint64 // ... for cells the reassembly gave up (Lost)
	ShareFull    uint64 // turns a VOQ passed with its share of the window in flight
	LateFull     uint64 // turns a late VOQ (credit in flight, nothing back for a loop's timeout) passed
	CaughtUp     uint64 // bytes granted to VOQs against turns they passed late (CatchUp)
	Late         uint64 // VOQs found late (their credit's time went back to the pacer, their grant total was re-sent)
	WaitedFor    uint64 // Polls that held a VOQ's grant for one whose window was on its way (aheadOfWaiting)
	ArrivedBytes uint64 // bytes of the cells that arrived for the port
}

type schedVOQ struct {
	key     StreamKey
	src     int32 // index in srcs
	req     uint64
	granted uint64
	issued  bool  // a grant was issued since the last reset
	active  bool  // req > granted
	queued  bool  // in its class ring
	out     int32 // index in Out + 1, 0 none
	// The refresh of an active VOQ's total is due at refAt; refs counts
	// the refreshes since it became active (they back off).
	refAt int64
	refs  uint32
	// The credit window: bytes arrived, credit in flight (granted beyond
	// what arrived) and when it last changed; a round trip being measured
	// since sampAt ends when arrived reaches sampEnd (0: none).
	arrived uint64
	fly     uint64
	flyAt   int64
	sampAt  int64
	sampEnd uint64
	late    bool // passed over as late since its last arrival
	// eg: bytes of its cells in the port's queue (arrived, not yet
	// departed; the queue is a FIFO: departures are its arrivals in
	// order, see egressRing).
	eg uint64
	// owed: bytes of the turns it passed late to the others, not yet
	// granted back (CatchUp).
	owed uint64
	// want: req beyond granted (counted in Scheduler.want); tag: the
	// virtual time its grants so far end at (bytes, see pick).
	want uint64
	tag  uint64
}

type schedSrc struct {
	active  int32   // VOQs of this source with req > granted
	frac    float64 // credit rate fraction at fracAt (1: not throttled)
	fracAt  int64
	lastFCI int64
	fciSeen bool
	next    int64 // while throttled: the source's next grant time
}

// credRing is a FIFO of VOQ indices with a fixed capacity.
type credRing struct {
	b          []int32
	head, size int
}

func (r *credRing) push(v int32) {
	r.b[(r.head+r.size)%len(r.b)] = v
	r.size++
}

func (r *credRing) pop() int32 {
	v := r.b[r.head]
	r.head = (r.head + 1) % len(r.b)
	r.size--
	return v
}

// Scheduler is the egress credit scheduler of one host port (Stardust §4).
// It learns each source VOQ's demand from cumulative requests and grants
// credit, cumulative per VOQ, at the port's rate plus the speed-up: strict
// priority between classes (higher first), byte for byte among the VOQs of
// a class (pick), never beyond a VOQ's requested total, nothing while the
// egress queue is above StopAbove (with the credit window: while it and
// the credit in flight are at the window). Grant totals to send collect in Out (one entry
// per VOQ, the latest total) until ResetOut.
type Scheduler struct {
	cfg   SchedConfig
	den   uint64 // credit rate in bits per second (an integer: exact pacing)
	burst int64  // MaxBurst credits of time
	voqs  []schedVOQ
	index map[uint32]int32
	srcs  []schedSrc
	sidx  map[EdgeID]int32
	rings [Classes]credRing

	active    int    // VOQs with req > granted
	activeSrc int    // sources with an active VOQ
	next      int64  // the pacer's next credit time
	frac      uint64 // ... plus frac/den ns
	started   bool
	idle      bool // at the last Poll nothing could be granted
	refreshAt int64
	egressQ   int

	// The credit window: credit in flight over all VOQs, the smoothed
	// round trip and its variation (ns, 0: not measured yet), the window
	// in bytes, the next expiry scan.
	inflight int
	srtt     int64
	rttvar   int64
	expire   int64
	expireAt int64
	lateAt   int64  // the next scan for late VOQs (while credit is in flight; 0: at the next Poll)
	held     bool   // the last Poll stopped at the window or the VOQs' shares
	loop     int    // the measured loop's worth of credit (bytes; with srtt)
	want     uint64 // bytes the VOQs asked for and were not granted
	vnow     uint64 // virtual time: the start tag of the last grant (pick)

	// CatchUp: the most a VOQ may be owed (bytes), the VOQs owed now, and
	// the late VOQs one pick passed over (owed the turn it gave away).
	owedMax uint64
	owing   int
	passed  []int32

	// The port's queue by VOQ (see egressRing), and the VOQs that hold
	// bytes there and want no credit (present with the active ones).
	egq    egressRing
	egIdle int

	Out   []SchedGrant
	Stats SchedStats
}

// NewScheduler returns a scheduler with an empty VOQ table.
func NewScheduler(cfg SchedConfig) (*Scheduler, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.MaxVOQs == 0 {
		cfg.MaxVOQs = 1024
	}
	s := &Scheduler{
		cfg:   cfg,
		den:   uint64(math.Round(cfg.Rate * (1 + cfg.SpeedUp))),
		voqs:  make([]schedVOQ, 0, cfg.MaxVOQs),
		index: make(map[uint32]int32, cfg.MaxVOQs),
		srcs:  make([]schedSrc, 0, cfg.MaxVOQs),
		sidx:  make(map[EdgeID]int32, cfg.MaxVOQs),
		Out:   make([]SchedGrant, 0, cfg.MaxVOQs),
	}
	s.burst = int64(uint64(cfg.MaxBurst*cfg.CreditSize) * 8e9 / s.den)
	if cfg.MaxBurstTime > 0 {
		one := int64(uint64(cfg.CreditSize) * 8e9 / s.den)
		s.burst = min(s.burst, max(one, cfg.MaxBurstTime))
	}
	for c := range s.rings {
		s.rings[c].b = make([]int32, cfg.MaxVOQs)
	}
	s.owedMax = uint64(float64(cfg.CatchUp) * float64(s.den) / 8e9)
	s.passed = make([]int32, 0, cfg.MaxVOQs)
	s.egq.b = make([]egressRun, egressRuns)
	s.expire = cfg.InFlightExpire
	if s.expire == 0 {
		s.expire = DefaultInFlightExpire
	}
	return s, nil
}

// DefaultCatchUp is SchedConfig.CatchUp's default: 50 ms of the port's
// rate, what one of two sources passes in a stall of 100 ms.
const DefaultCatchUp = 50_000_000

// DefaultInFlightExpire is SchedConfig.InFlightExpire's default.
const DefaultInFlightExpire = 250_000_000

// Config returns the configuration in use.
func (s *Scheduler) Config() SchedConfig { return s.cfg }

// Windowed reports whether the credit window is on (MaxInFlight > 0).
func (s *Scheduler) Windowed() bool { return s.cfg.MaxInFlight > 0 }

// LoopStats is the credit loop as the scheduler measures it.
type LoopStats struct {
	RTT, RTTVar int64 // the smoothed round trip and its variation, ns (0: not measured)
	InFlight    int   // credit granted and not arrived, bytes
	Window      int   // egress queue plus credit in flight that stops grants, bytes
	EgressQueue int   // as last reported, bytes
}

// Loop returns the credit loop's state.
func (s *Scheduler) Loop() LoopStats {
	return LoopStats{RTT: s.srtt, RTTVar: s.rttvar, InFlight: s.inflight, Window: s.window(), EgressQueue: s.egressQ}
}

// Arrived reports bytes of a cell of the VOQ of (src, class) that arrived
// at the egress (its payload: the stream bytes the grants count). With the
// credit window it lowers the credit in flight and may end a round trip's
// measure; call Poll after it when WindowFull was true.
func (s *Scheduler) Arrived(now int64, src EdgeID, class Class, bytes int) {
	if s.cfg.MaxInFlight == 0 || bytes <= 0 {
		return
	}
	s.Stats.ArrivedBytes += uint64(bytes)
	if class >= Classes {
		return
	}
	vi := s.lookup(src, class) // cells sent within the lead may come before the first request
	if vi < 0 {
		s.Stats.TableFull++
		return
	}
	v := &s.voqs[vi]
	v.arrived += uint64(bytes)
	v.flyAt, v.late = now, false
	s.egArrive(vi, bytes)
	s.setFly(v)
	if v.sampEnd != 0 && v.arrived >= v.sampEnd {
		v.sampEnd = 0
		s.sample(now - v.sampAt)
	}
}

// Lost reports up to bytes of the VOQ of (src, class) lost on their way
// (cells its reassembly gave up): with the credit window they count as
// arrived, up to the credit in flight. Call Poll after it.
func (s *Scheduler) Lost(src EdgeID, class Class, bytes int) {
	if s.cfg.MaxInFlight == 0 || bytes <= 0 {
		return
	}
	vi, ok := s.index[schedKey(src, class)]
	if !ok {
		return
	}
	v := &s.voqs[vi]
	b := min(uint64(bytes), v.fly)
	s.Stats.LostBytes += b
	v.arrived += b
	s.setFly(v)
}

// setFly recounts v's credit in flight: granted of the bytes enqueued
// (flyTop) beyond what arrived (bytes within the pre-credit never count).
func (s *Scheduler) setFly(v *schedVOQ) {
	var f uint64
	if a, top := max(v.arrived, s.cfg.PreCredit), s.flyTop(v); top > a {
		f = top - a
	}
	s.inflight += int(f) - int(v.fly)
	v.fly = f
	if f == 0 {
		v.late = false // nothing owed: a late spell ends however the credit left
	}
}

// flyTop is the end of v's credit that counts in flight: the grant, but
// not beyond the bytes enqueued when the source last asked (its total less
// Ahead).
func (s *Scheduler) flyTop(v *schedVOQ) uint64 {
	if s.cfg.Ahead == 0 {
		return v.granted
	}
	return min(v.granted, v.req-min(v.req, s.cfg.Ahead))
}

// sample takes a measured round trip into the smoothed one (gains 1/8 and
// 1/4, as TCP's) and sets the loop's worth of credit (setLoop).
func (s *Scheduler) sample(rtt int64) {
	s.Stats.RTTSamples++
	if s.srtt == 0 {
		s.srtt, s.rttvar = max(rtt, 1), rtt/2
	} else {
		d := rtt - s.srtt
		s.srtt = max(s.srtt+d/8, 1)
		s.rttvar += (abs64(d) - s.rttvar) / 4
	}
	s.setLoop()
}

// setLoop sets the measured loop's worth of credit (loop): the round trip
// plus twice its variation at the credit rate (see window).
func (s *Scheduler) setLoop() {
	if s.srtt == 0 {
		return
	}
	// In floating point: a round trip of seconds at 10 Gbit/s overflows
	// the integers.
	s.loop = int(min(float64(s.srtt+2*s.rttvar)*float64(s.den)/8e9, float64(s.cfg.MaxInFlight)))
}

// window is the credit window: MaxInFlight before the loop is measured,
// then the loop's worth of credit plus the queue in hand (see hand), within
// [CreditSize, MaxInFlight] (from a quarter credit while the VOQs' backlog
// bounds the hand).
func (s *Scheduler) window() int {
	if s.srtt == 0 {
		return s.cfg.MaxInFlight
	}
	h, bounded := s.hand()
	lo := s.cfg.CreditSize
	if bounded {
		lo = s.minGrant()
	}
	return min(max(s.loop+h, lo), s.cfg.MaxInFlight)
}

// hand is the egress queue the window keeps in hand beyond the loop's
// credit: StopAbove, but while two or more VOQs want credit no more than
// twice what they asked for and were not granted (bounded true). The
// queue in hand is a FIFO that every source shares: sources that offer
// the port more than its rate (UDP bursts, window-limited TCP) keep their
// VOQs full and the whole of StopAbove in hand, against the stalls of a
// fabric node or a source; flows that pace themselves near the port's
// rate (bbr) offer a standing queue smaller than StopAbove, and all of it
// sat in that FIFO: the VOQs rarely waited, the scheduler never decided,
// and each flow's share of the port was its share of the FIFO (runs of
// 75/25). Bounded by the VOQs' backlog, a third of such a queue waits in
// the VOQs, and the scheduler serves the sources byte for byte (pick).
// Bounded by the backlog itself (half the queue in the VOQs), window
// sources of 256 KiB each kept too little in hand for a fabric node's
// 25 ms stall (cellsim stalls: port busy 0.82 through it, 0.94 before).
func (s *Scheduler) hand() (bytes int, bounded bool) {
	if s.active < 2 || 2*s.want >= uint64(s.cfg.StopAbove) {
		return s.cfg.StopAbove, false
	}
	return int(2 * s.want), true
}

// minGrant is the least a grant limited by the window's room gives
// (a quarter credit): the window stops a grant's start, not its size.
func (s *Scheduler) minGrant() int { return max(s.cfg.CreditSize/4, 1) }

// setWant recounts v's backlog not granted (req beyond granted) into the
// scheduler's.
func (s *Scheduler) setWant(v *schedVOQ) {
	var w uint64
	if v.req > v.granted {
		w = v.req - v.granted
	}
	s.want += w - v.want
	v.want = w
}

// SetMaxInFlight moves the credit window's bound to bytes (at least
// CreditSize), for a port whose queue's room in bytes changes: one that
// queues frames, whatever their length, holds fewer bytes the shorter its
// frames. A scheduler without the window keeps none.
func (s *Scheduler) SetMaxInFlight(bytes int) {
	if s.cfg.MaxInFlight == 0 {
		return
	}
	s.cfg.MaxInFlight = max(bytes, s.cfg.CreditSize)
	s.setLoop()
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Held reports whether the last Poll stopped at the credit window or at
// the VOQs' shares of it: arrivals (Arrived, Lost) may release grants,
// Poll then.
func (s *Scheduler) Held() bool { return s.held }

// WindowFull reports whether the credit window holds grants back: the
// egress queue plus the credit in flight have reached it.
func (s *Scheduler) WindowFull() bool {
	return s.cfg.MaxInFlight > 0 && s.egressQ+s.inflight >= s.window()
}

// grantSize is the grant v may get now: a credit, or less if it asks for
// less; while the VOQs' backlog bounds the queue in hand (hand), no more
// than the window's room, at least minGrant. Credits of 64 KiB are 5 ms
// of a 100 Mbit/s port: whole, each took the port's queue that far beyond
// such a window, and the FIFO held the sources' standing queue again.
func (s *Scheduler) grantSize(v *schedVOQ) uint64 {
	b := min(uint64(s.cfg.CreditSize), v.req-v.granted)
	if _, bounded := s.hand(); bounded && s.cfg.MaxInFlight > 0 && s.srtt > 0 {
		b = min(b, uint64(max(s.window()-s.egressQ-s.inflight, s.minGrant())))
	}
	return b
}

// windowRoom reports whether a grant of b bytes may go now.
func (s *Scheduler) windowRoom(b uint64) bool {
	if s.cfg.MaxInFlight == 0 {
		return true
	}
	q := s.egressQ + s.inflight
	return q < s.window() && q+int(b) <= s.cfg.MaxInFlight
}

// expireFly takes for lost the credit in flight of every VOQ from which
// nothing arrived for InFlightExpire since its last grant or arrival.
func (s *Scheduler) expireFly(now int64) {
	s.expireAt = now + s.expire/4
	for i := range s.voqs {
		v := &s.voqs[i]
		if v.fly > 0 && now-v.flyAt >= s.expire {
			s.Stats.ExpiredBytes += v.fly
			v.arrived, v.sampEnd = max(v.arrived, s.flyTop(v)), 0
			s.setFly(v)
		}
	}
}

// CreditRate returns the rate at which credit is issued, bits per second.
func (s *Scheduler) CreditRate() float64 { return float64(s.den) }

func schedKey(src EdgeID, c Class) uint32 { return uint32(src)<<8 | uint32(c) }

// lookup returns the VOQ index of (src, c), creating it; -1 if the table is full.
func (s *Scheduler) lookup(src EdgeID, c Class) int32 {
	if v, ok := s.index[schedKey(src, c)]; ok {
		return v
	}
	if len(s.voqs) == cap(s.voqs) {
		return -1
	}
	si, ok := s.sidx[src]
	if !ok {
		si = int32(len(s.srcs))
		s.srcs = append(s.srcs, schedSrc{frac: 1})
		s.sidx[src] = si
	}
	v := int32(len(s.voqs))
	s.voqs = append(s.voqs, schedVOQ{
		key:     StreamKey{Src: src, Port: s.cfg.Port, Class: c},
		src:     si,
		granted: s.cfg.PreCredit,
	})
	s.index[schedKey(src, c)] = v
	return v
}

func (s *Scheduler) setActive(v *schedVOQ, a bool) {
	if v.active == a {
		return
	}
	v.active = a
	src := &s.srcs[v.src]
	if a {
		if v.eg > 0 {
			s.egIdle--
		}
		s.active++
		src.active++
		if src.active == 1 {
			s.activeSrc++
		}
		return
	}
	if v.eg > 0 {
		s.egIdle++
	}
	s.active--
	s.setOwed(v, 0) // a VOQ that wants nothing more banks no turns
	if s.active == 0 {
		s.started = false // the refresh timer starts again with the next active VOQ
	}
	src.active--
	if src.active == 0 {
		s.activeSrc--
	}
}

// Request records a credit request: the VOQ of (src, class) toward this
// port has had total bytes ever enqueued. A total below the known one is
// stale and ignored. A total not above the granted total means the source
// missed a grant: the total is re-sent at once.
func (s *Scheduler) Request(now int64, src EdgeID, class Class, total uint64) {
	s.Stats.Requests++
	if class >= Classes {
		s.Stats.RequestsBad++
		return
	}
	vi := s.lookup(src, class)
	if vi < 0 {
		s.Stats.TableFull++
		return
	}
	v := &s.voqs[vi]
	if total < v.req {
		s.Stats.RequestsStale++
		return
	}
	v.req = total
	s.setWant(v)
	if s.cfg.MaxInFlight > 0 && s.cfg.Ahead > 0 {
		// Credit granted ahead of the backlog counts in flight from
		// the request that says bytes were enqueued to use it.
		// (A stale expiry or late scan that this finds due passes over
		// it: it starts its clock now.)
		if v.fly == 0 {
			v.flyAt = now
		}
		s.setFly(v)
	}
	if total <= v.granted {
		if v.issued {
			s.Stats.Repairs++
			s.emit(vi)
		}
		return
	}
	if s.active == 0 && s.next < now {
		s.next, s.frac = now, 0 // an idle pacer banks no credit
	}
	if !v.active {
		s.armRefresh(now, v)
	}
	s.setActive(v, true)
	if !v.queued {
		v.queued = true
		s.rings[class].push(vi)
	}
}

// SetEgressQueue reports the bytes in the port's egress queue (with the
// credit window: also those arrived and still held by the reassembly).
// Grants stop while it is above StopAbove (with the window: while it and
// the credit in flight are at the window); call Poll after it falls.
func (s *Scheduler) SetEgressQueue(bytes int) {
	s.egressQ = bytes
	if s.cfg.MaxInFlight > 0 {
		s.egDepart(bytes)
	}
}

// Stopped reports whether the egress queue holds grants back: with the
// credit window, the queue plus the credit in flight at the window;
// without it, the queue above StopAbove.
func (s *Scheduler) Stopped() bool {
	if s.cfg.MaxInFlight > 0 {
		return s.WindowFull()
	}
	return s.cfg.StopAbove > 0 && s.egressQ > s.cfg.StopAbove
}

// emit puts the VOQ's grant total in Out (replacing its entry there).
func (s *Scheduler) emit(vi int32) {
	v := &s.voqs[vi]
	if v.out > 0 {
		s.Out[v.out-1].Total = v.granted
		return
	}
	s.Out = append(s.Out, SchedGrant{Key: v.key, Total: v.granted, v: vi})
	v.out = int32(len(s.Out))
	s.Stats.GrantMsgs++
}

// ResetOut empties Out once the caller has sent the grants.
func (s *Scheduler) ResetOut() {
	for _, g := range s.Out {
		s.voqs[g.v].out = 0
	}
	s.Out = s.Out[:0]
}

// Poll issues the credit due by now (grant totals go to Out), runs the
// refresh timer and returns the next deadline. The refresh re-sends the
// totals of VOQs with a grant since their reset that still want more (a
// lost grant of a VOQ held back by the egress threshold or FCI pacing
// would otherwise wait for the next credit). A VOQ granted all it asked
// for is not refreshed: its source repeats the request while a grant is
// missing, and a request not above the granted total is answered at once
// (refreshing every completed grant doubled the grants on the bundle and
// woke the source for each copy). With no VOQ active Poll returns
// math.MaxInt64: the timer starts again with the next Poll (the caller
// polls after every Request).
func (s *Scheduler) Poll(now int64) int64 {
	s.held = false
	if s.active == 0 {
		s.idle = true
		return math.MaxInt64
	}
	if !s.started {
		s.started = true
		s.refreshAt = now + s.cfg.Refresh
		if s.next < now {
			s.next, s.frac = now, 0
		}
	}
	if now >= s.refreshAt {
		s.refresh(now)
	}
	if s.inflight > 0 && now >= s.expireAt {
		s.expireFly(now)
	}
	if s.inflight > 0 && now >= s.lateAt {
		s.scanLate(now)
	}
	if s.Stopped() {
		s.Stats.Stopped++
		if s.cfg.MaxInFlight > 0 {
			s.Stats.WindowFull++
			s.held = true
		}
		s.idle = true
		return s.stopDue()
	}
	if s.idle && s.next < now { // no credit banked while idle or stopped
		s.next, s.frac = now, 0
	}
	s.idle = false
	if s.next < now-s.burst {
		s.next, s.frac = now-s.burst, 0
	}
	for s.next <= now {
		vi, wait := s.pick(now)
		if vi < 0 { // only throttled sources, or VOQs at their share, want credit
			s.idle = true
			if s.held {
				wait = min(wait, s.stopDue())
			}
			return min(s.refreshAt, wait, s.lateDue())
		}
		b := s.grantSize(&s.voqs[vi])
		if !s.windowRoom(b) {
			s.Stats.WindowFull++
			s.held = true
			s.idle = true
			return s.stopDue()
		}
		s.owePassed(vi, b)
		s.grant(now, vi)
		if s.active == 0 {
			return math.MaxInt64
		}
	}
	return min(s.refreshAt, s.next, s.lateDue())
}

// lateDue is Poll's deadline for the next scan for late VOQs: while credit
// is in flight and the loop is measured.
func (s *Scheduler) lateDue() int64 {
	if s.inflight > 0 && s.srtt > 0 {
		return s.lateAt
	}
	return math.MaxInt64
}

// scanLate marks late the VOQs with credit in flight and nothing back
// for the loop's timeout, gives the pacer back their credit's time, re-sends
// their grant totals and sets the next scan: the timeout on, at least an
// eighth of a credit's time at the credit rate. A VOQ marked at its turn
// (pick) alone would leave the port idle a round of turns: the credit of a
// source kept from running just after its grant is missed at once, while
// its next turn comes only after every other VOQ's. The total goes again
// because the grant itself may have been lost: its credit then holds the
// window until the source's repeat, which backs off to RefreshMax while
// its VOQ stays behind its grant (with a tenth of the grants lost, an
// incast's port idled 3-6 ms at a time with every source backlogged); a
// source that was only kept from running takes the copy as a repeat.
func (s *Scheduler) scanLate(now int64) {
	late := s.lateAfter()
	if late == math.MaxInt64 {
		s.lateAt = 0 // not measured yet: scan at the first Poll after it is
		return
	}
	for i := range s.voqs {
		if v := &s.voqs[i]; v.fly > 0 && !v.late && now-v.flyAt > late {
			v.late = true
			s.Stats.Late++
			s.refund(now, v.fly)
			s.emit(int32(i))
		}
	}
	s.lateAt = now + max(late, int64(uint64(s.cfg.CreditSize)*8e9/s.den)/8)
}

// stopDue is Poll's deadline while grants are held back: the refresh, and
// the expiry and lateness scans while credit is in flight (arrivals and
// the queue's fall call Poll meanwhile).
func (s *Scheduler) stopDue() int64 {
	if s.inflight > 0 {
		return min(s.refreshAt, s.expireAt, s.lateDue())
	}
	return s.refreshAt
}

// armRefresh starts the refresh of v's total: Refresh from now.
func (s *Scheduler) armRefresh(now int64, v *schedVOQ) {
	v.refAt, v.refs = now+s.cfg.Refresh, 0
	if s.started {
		s.refreshAt = min(s.refreshAt, v.refAt)
	}
}

// pick takes the next VOQ to serve: in the highest class with a VOQ whose
// source is not held back by its FCI pacing nor, with the credit window,
// by its share of it or its lateness, the one whose grants so far end
// earliest in virtual time (start-time fair queueing over the bytes
// granted: a VOQ's tag advances by each grant, and one that wanted nothing
// restarts a quarter credit behind the last grant's start at most, banking
// no more, see startTag). Turns
// taken in ring order gave a VOQ a credit or all it asked for, whichever
// was less: VOQs of less than a credit each got what they held, as a
// FIFO would, and the scheduler never evened out sources that offered
// unequal rates near the port's. A VOQ with a share
// of the window in flight (the window over the VOQs that want credit, at
// least a credit) waits for its cells, and the others get the credit
// meanwhile. A late VOQ (credit in flight and nothing back from it for
// the loop's timeout, lateAfter: its source, or the fabric on its way, is
// kept from running) passes its turns to any other VOQ that may take
// them. A source kept from running would otherwise
// take its turns until the window was all its own, idling the port while
// the other sources had backlog, and, with credits large against the
// port's rate (64 KiB at 100 Mbit/s: 5 ms each), even up to its share:
// each turn it took idled the port a credit's time, and the credit
// arrived after its stall on top of its turns there. With CatchUp the
// turns it passed are owed to it, and a VOQ owed turns and no longer late
// is served first in its class. With the credit window, a VOQ whose
// grants run ahead of a VOQ that waits with its window in the port's
// queue waits too (aheadOfWaiting). Otherwise pick returns -1 and the
// earliest time a held-back source may be served. The late VOQs passed
// over (whose tags were not after the one served) are left in passed.
// The rings hold the VOQs that may want credit; pick drops the others.
func (s *Scheduler) pick(now int64) (vi int32, wait int64) {
	wait = math.MaxInt64
	share := uint64(math.MaxUint64)
	late := int64(math.MaxInt64)
	if s.cfg.MaxInFlight > 0 {
		share = uint64(max(s.window()/max(s.active, 1), s.cfg.CreditSize))
		late = s.lateAfter()
	}
	s.passed = s.passed[:0]
	// Late VOQs pass their turns to the others (first pass); with no other
	// taker they are served (second pass): the cells of a VOQ lost in
	// the fabric must not keep it from credit until they expire.
	for pass := 0; pass < 2 && (pass == 0 || len(s.passed) > 0); pass++ {
		for c := Classes - 1; c >= 0; c-- {
			r := &s.rings[c]
			if pass == 0 && s.owing > 0 {
				if vi := s.owedIn(r, now, share, late); vi >= 0 {
					return vi, 0
				}
			}
			best, mark := int32(-1), len(s.passed)
			for n := r.size; n > 0; n-- {
				vi := r.pop()
				v := &s.voqs[vi]
				if !v.active {
					v.queued = false
					continue
				}
				r.push(vi)
				src := &s.srcs[v.src]
				if s.throttled(src, now) && src.next > now {
					wait = min(wait, src.next)
					continue
				}
				if pass == 0 && v.fly > 0 && now-v.flyAt > late {
					if !v.late {
						v.late = true
						s.Stats.Late++
						s.refund(now, v.fly)
					}
					if len(s.passed) < cap(s.passed) {
						s.passed = append(s.passed, vi)
					}
					continue
				}
				if v.fly >= share {
					if pass == 0 {
						s.Stats.ShareFull++
					}
					s.held = true
					continue
				}
				if best < 0 || s.startTag(v) < s.startTag(&s.voqs[best]) {
					best = vi
				}
			}
			if best < 0 {
				continue
			}
			// Ties go round: the ring turns past the VOQ served.
			for v := r.pop(); ; v = r.pop() {
				r.push(v)
				if v == best {
					break
				}
			}
			if pass == 1 {
				s.passed = s.passed[:0] // late itself: it took the turn no other could
				return best, 0
			}
			if s.egIdle > 0 && s.aheadOfWaiting(best) {
				s.Stats.WaitedFor++
				s.held = true
				return -1, min(wait, s.waitDue(now))
			}
			// The late VOQs of this class passed the turn only if theirs
			// came first.
			keep := s.passed[:mark]
			for _, p := range s.passed[mark:] {
				if s.startTag(&s.voqs[p]) <= s.startTag(&s.voqs[best]) {
					keep = append(keep, p)
				}
			}
			s.passed = keep
			s.Stats.LateFull += uint64(len(s.passed))
			return best, 0
		}
	}
	return -1, wait
}

// startTag is where v's next grant starts in virtual time: where its
// grants so far end, but no more than a quarter credit behind the last
// grant's start. A VOQ that waited with its window in the port's queue
// (aheadOfWaiting) asks again behind the others by up to that: restarted
// at the last grant's start, it lost what they were granted meanwhile,
// each time, and the port's shares followed the windows again.
func (s *Scheduler) startTag(v *schedVOQ) uint64 {
	return max(v.tag, s.vnow-min(s.vnow, uint64(s.minGrant())))
}

// aheadOfWaiting reports whether VOQ vi's grants so far end more than a
// quarter credit ahead of those of a VOQ of its class that wants no credit
// now and holds at least a quarter credit in the port's queue (a source
// whose window is on its way: it asks again as its bytes leave the
// port), while that queue holds more than the loop's worth and a quarter
// credit (below it the port is about to idle: the grant goes). The bytes
// granted are the bytes out of the port: a grant to a VOQ that wants now,
// ahead of one whose window is in the queue, is a share of the port taken
// from it. Without this the port was shared by the bytes the sources had
// in its queue: two TCP flows whose windows no loss cuts (bbr) kept
// whatever split they reached (0.535/0.465 in a 5 s run on fabric3).
func (s *Scheduler) aheadOfWaiting(vi int32) bool {
	x := uint64(s.minGrant())
	if s.cfg.MaxInFlight == 0 || s.srtt == 0 || s.egressQ < s.loop+int(x) {
		return false
	}
	v := &s.voqs[vi]
	start := s.startTag(v)
	for i, seen := 0, 0; i < len(s.voqs) && seen < s.egIdle; i++ {
		u := &s.voqs[i]
		if u.active || u.eg == 0 {
			continue
		}
		seen++ // the VOQs in the queue that want nothing: egIdle of them
		if u.key.Class == v.key.Class && u.eg >= x && start > s.startTag(u)+x {
			return true
		}
	}
	return false
}

// waitDue is when a grant held by aheadOfWaiting is due at the latest:
// when the port's queue, draining at the port's rate, falls to the loop's
// worth (the caller's reports of the queue, and the waited-for VOQ's
// request, usually come first). The hold needs a quarter credit more than
// that queued, so the deadline is never now: a queue reported exactly at
// the hold's bound made Poll return now, and a worker sleeping until its
// next deadline spun on it.
func (s *Scheduler) waitDue(now int64) int64 {
	return now + max(int64(float64(s.egressQ-s.loop)*8e9/s.cfg.Rate), 1)
}

// owedIn returns the VOQ of ring r owed the most turns that may be served
// now (active, not held back by FCI, below its share, not late), or -1.
func (s *Scheduler) owedIn(r *credRing, now int64, share uint64, late int64) int32 {
	best := int32(-1)
	for i := range r.size {
		vi := r.b[(r.head+i)%len(r.b)]
		v := &s.voqs[vi]
		if v.owed == 0 || !v.active || v.fly >= share || v.late || v.fly > 0 && now-v.flyAt > late {
			continue
		}
		if src := &s.srcs[v.src]; s.throttled(src, now) && src.next > now {
			continue
		}
		if best < 0 || v.owed > s.voqs[best].owed {
			best = vi
		}
	}
	return best
}

// owePassed owes each late VOQ the last pick passed over the turn it gave
// to vi, the b bytes granted now (or what it still asks for if less),
// within CatchUp.
func (s *Scheduler) owePassed(vi int32, b uint64) {
	if s.owedMax == 0 {
		return
	}
	for _, p := range s.passed {
		if v := &s.voqs[p]; p != vi {
			s.setOwed(v, min(v.owed+min(b, v.req-v.granted), s.owedMax))
		}
	}
}

// setOwed sets what v is owed, keeping the count of VOQs owed.
func (s *Scheduler) setOwed(v *schedVOQ, b uint64) {
	switch {
	case v.owed == 0 && b > 0:
		s.owing++
	case v.owed > 0 && b == 0:
		s.owing--
	}
	v.owed = b
}

// refund gives the pacer back the time of b bytes of credit (within the
// burst a late Poll may catch up on): credit in flight to a late VOQ, which
// will not arrive while the port needs it. Its time goes to the others'
// grants, and the window still bounds what may arrive together.
func (s *Scheduler) refund(now int64, b uint64) {
	s.next = max(s.next-int64(b*8e9/s.den), now-s.burst)
}

// lateAfter is how long a VOQ with credit in flight may go without an
// arrival before its turns pass to the others: the loop's timeout, the
// smoothed round trip plus four times its variation (as TCP's). Before
// the loop is measured, never.
func (s *Scheduler) lateAfter() int64 {
	if s.srtt == 0 {
		return math.MaxInt64
	}
	return s.srtt + 4*s.rttvar
}

// grant gives VOQ vi one credit (grantSize) at the pacer's slot time,
// advances the pacer by the bytes granted and v's tag by those not owed
// to it (CatchUp: the turns it passed late were not counted).
func (s *Scheduler) grant(now int64, vi int32) {
	v := &s.voqs[vi]
	b := s.grantSize(v)
	start := s.startTag(v)
	s.vnow = max(s.vnow, start)
	v.tag = start + b - min(v.owed, b)
	if s.cfg.MaxInFlight > 0 {
		// The first byte this grant lets the source send (beyond what
		// it had and its lead) measures the loop when it arrives.
		if first := v.granted + s.cfg.Lead; v.sampEnd == 0 && v.granted+b > first && v.arrived <= first && first+s.cfg.Ahead < v.req {
			v.sampAt, v.sampEnd = now, first+1
		}
		if v.fly == 0 {
			v.flyAt = now
		}
	}
	v.granted += b
	v.issued = true
	s.setWant(v)
	if s.cfg.MaxInFlight > 0 {
		if s.inflight == 0 {
			s.expireAt = now + s.expire/4
			s.lateAt = 0 // not measured yet: scan at the first Poll after it is
			if l := s.lateAfter(); l != math.MaxInt64 {
				s.lateAt = now + l
			}
		}
		s.setFly(v)
	}
	s.Stats.Credits++
	s.Stats.GrantedBytes += b
	slot := s.next
	num := b * 8e9
	s.next += int64(num / s.den)
	s.frac += num % s.den
	if s.frac >= s.den {
		s.next++
		s.frac -= s.den
	}
	src := &s.srcs[v.src]
	if f := s.fraction(src, now); f < 1 {
		src.next = max(src.next, slot) + int64(float64(num)/(float64(s.den)*f))
	}
	s.emit(vi)
	// The grant carries the total: the next refresh is a backoff after it.
	v.refAt = now + backoff(s.cfg.Refresh, s.cfg.RefreshMax, v.refs)
	s.refreshAt = min(s.refreshAt, v.refAt)
	if v.owed > 0 {
		s.Stats.CaughtUp += b
		s.setOwed(v, v.owed-min(v.owed, b))
	}
	if v.granted >= v.req { // its entry stays in the ring, dropped by pick
		s.setActive(v, false)
	}
}

// refresh re-sends the totals of the active VOQs whose refresh is due and
// sets the timer to the next one due.
func (s *Scheduler) refresh(now int64) {
	s.refreshAt = math.MaxInt64
	for i := range s.voqs {
		v := &s.voqs[i]
		if !v.issued || !v.active {
			continue
		}
		if now >= v.refAt {
			if v.out == 0 {
				s.Stats.Refreshed++
			}
			s.emit(int32(i))
			v.refs++
			v.refAt = now + backoff(s.cfg.Refresh, s.cfg.RefreshMax, v.refs)
		}
		s.refreshAt = min(s.refreshAt, v.refAt)
	}
}

// fraction returns the source's credit rate fraction at now (recovered
// additively since the last decrease, at most 1).
func (s *Scheduler) fraction(src *schedSrc, now int64) float64 {
	if src.frac >= 1 {
		return 1
	}
	f := src.frac + s.cfg.FCIRecover*float64(now-src.fracAt)*1e-9
	if f >= 1 {
		src.frac = 1
		return 1
	}
	return f
}

func (s *Scheduler) throttled(src *schedSrc, now int64) bool { return s.fraction(src, now) < 1 }

// FCI reports a cell that arrived from src with its congestion indication
// set: the source's credit rate fraction, taken as at most its fair share
// among the sources with demand, is multiplied by FCIDecrease (at most once
// per FCIHold, never below FCIMin).
func (s *Scheduler) FCI(now int64, src EdgeID) {
	s.Stats.FCIs++
	si, ok := s.sidx[src]
	if !ok {
		return
	}
	sr := &s.srcs[si]
	if sr.fciSeen && now-sr.lastFCI < s.cfg.FCIHold {
		return
	}
	f := s.fraction(sr, now)
	if f >= 1 {
		sr.next = now
	}
	if share := 1 / float64(max(1, s.activeSrc)); f > share {
		f = share
	}
	sr.frac = max(s.cfg.FCIMin, f*s.cfg.FCIDecrease)
	sr.fracAt, sr.lastFCI, sr.fciSeen = now, now, true
	s.Stats.FCIDecreases++
}

// SourceRate returns the fraction of the port's credit rate src may get at
// now (1 when FCI does not hold it back).
func (s *Scheduler) SourceRate(now int64, src EdgeID) float64 {
	si, ok := s.sidx[src]
	if !ok {
		return 1
	}
	return s.fraction(&s.srcs[si], now)
}

// Totals returns the requested and granted totals of the VOQ of (src,
// class); ok is false if it is unknown.
func (s *Scheduler) Totals(src EdgeID, class Class) (requested, granted uint64, ok bool) {
	vi, ok := s.index[schedKey(src, class)]
	if !ok {
		return 0, 0, false
	}
	return s.voqs[vi].req, s.voqs[vi].granted, true
}

// ResetSource restarts every total of src's VOQs from 0 (granted from
// PreCredit) and forgets its FCI state: the source restarted.
func (s *Scheduler) ResetSource(src EdgeID) {
	si, ok := s.sidx[src]
	if !ok {
		return
	}
	s.Stats.Resets++
	for i := range s.voqs {
		if v := &s.voqs[i]; v.src == si {
			s.resetVOQ(v)
		}
	}
	s.srcs[si] = schedSrc{frac: 1}
}

// Reset restarts every VOQ's totals (this node restarted its session with
// every source) and forgets FCI state. The table keeps its entries.
func (s *Scheduler) Reset() {
	s.Stats.Resets++
	for i := range s.voqs {
		s.resetVOQ(&s.voqs[i])
	}
	for i := range s.srcs {
		s.srcs[i] = schedSrc{frac: 1}
	}
}

// resetVOQ leaves the VOQ in its ring (if queued): inactive entries are
// dropped lazily by pick.
func (s *Scheduler) resetVOQ(v *schedVOQ) {
	s.setActive(v, false)
	v.req, v.granted, v.issued = 0, s.cfg.PreCredit, false
	v.arrived, v.sampEnd, v.late = 0, 0, false
	s.setFly(v)
	s.setWant(v)
	if v.out > 0 {
		s.Out[v.out-1].Total = v.granted
	}
}
