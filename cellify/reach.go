package cellify

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Tier is a node's place in the fabric: TierEdge (0) for an edge, k ≥ 1
// for a fabric node of tier k (1 next to the edges).
type Tier uint8

// TierEdge is the tier of an edge node.
const TierEdge Tier = 0

// ReachConfig configures a node's reachability. Times are nanoseconds.
type ReachConfig struct {
	Self     EdgeID
	Tier     Tier
	Links    int   // link ports, 1..64
	MaxEdges int   // edge ids covered by the bitmaps, 1..65536 (0: 256)
	Interval int64 // REACH period, also the window a REACH is expected in
	// Th: a link leaves after Th intervals in a row without a REACH and
	// returns after ThUp (0: Th) good intervals in a row.
	Th   int
	ThUp int
	// LossFaulty: a link whose measured loss rate (SetLoss) is above it is
	// faulty: excluded at once and advertised FAULTY to the peer, until the
	// rate is at or below LossClear.
	LossFaulty float64
	LossClear  float64
	// Classes: loss classes (off in the zero value). A link's class comes
	// from SetLoss and its peer's REACH; RoutesIn gives a class's routes.
	Classes LossClasses
}

// DefaultReachConfig returns defaults for a node.
func DefaultReachConfig(self EdgeID, tier Tier, links int) ReachConfig {
	return ReachConfig{
		Self: self, Tier: tier, Links: links,
		MaxEdges:   256,
		Interval:   100_000,
		Th:         3,
		LossFaulty: 1e-3,
		LossClear:  1e-4,
	}
}

// SetClasses sets loss classes lc and, if they are on, the exclusion
// threshold to the loosest class's bound (LossFaulty; LossClear a tenth).
func (c *ReachConfig) SetClasses(lc LossClasses) {
	c.Classes = lc
	if lc.On() {
		c.LossFaulty, c.LossClear = lc.Exclude(), lc.Exclude()/10
	}
}

func (c *ReachConfig) check() error {
	if c.Links < 1 || c.Links > 64 || c.MaxEdges < 0 || c.MaxEdges > 1<<16 {
		return errors.New("cellify: ReachConfig.Links must be in [1, 64], MaxEdges in [0, 65536]")
	}
	if c.Interval < 1 || c.Th < 1 || c.Th > 1<<16 || c.ThUp < 0 || c.ThUp > 1<<16 {
		return errors.New("cellify: ReachConfig.Interval must be > 0, Th in [1, 65536] and ThUp in [0, 65536]")
	}
	if c.Self == 0 || (c.Tier == TierEdge && int(c.Self) >= c.MaxEdges) {
		return errors.New("cellify: ReachConfig.Self must be nonzero and, for an edge, below MaxEdges")
	}
	if !(c.LossClear >= 0 && c.LossClear <= c.LossFaulty) {
		return errors.New("cellify: ReachConfig.LossClear must be in [0, LossFaulty]")
	}
	if err := c.Classes.check(); err != nil {
		return err
	}
	if c.Classes.On() && c.LossFaulty < c.Classes.Exclude() {
		return errors.New("cellify: ReachConfig.LossFaulty is below the loosest loss class's bound: its links would be excluded (SetClasses sets it)")
	}
	return nil
}

// PeerReach is a received REACH: the sender, its tier, its FAULTY flag
// (it finds the link faulty), the link's loss class as it measures it (0:
// not measured) and the edges reachable through it: edge e if byte e/8 of
// Bitmap has bit 1<<(e%8). With Classes, Bitmap holds MaxLossClasses
// bitmaps of (MaxEdges+7)/8 bytes, one per loss class (Reach's layout).
// Edge 0 (invalid) is ignored.
type PeerReach struct {
	From    EdgeID
	Tier    Tier
	Faulty  bool
	Class   LossClass
	Classes bool
	Seq     uint32 // the sender's REACH counter on this link
	Bitmap  []byte
}

// ExcludeReason says why a link left the usable set.
type ExcludeReason uint8

const (
	ExcludeNone       ExcludeReason = iota
	ExcludeMiss                     // Th intervals without a REACH
	ExcludeDown                     // the interface went down
	ExcludePeerFaulty               // the peer's REACH carried FAULTY
	ExcludeLoss                     // the measured loss rate crossed LossFaulty
	ExcludePeerChange               // a different node answers on the link
)

var excludeNames = [...]string{"none", "miss", "down", "peer-faulty", "loss", "peer-change"}

func (r ExcludeReason) String() string {
	if int(r) < len(excludeNames) {
		return excludeNames[r]
	}
	return "ExcludeReason(?)"
}

// maxReachGap is the largest jump of a peer's REACH counter counted as
// REACHes lost: 2 s of 5 ms intervals.
const maxReachGap = 400

// LinkReach is the reachability state of one link port.
type LinkReach struct {
	Up         bool // the interface is up
	Usable     bool
	PeerKnown  bool // a REACH was received since start
	Peer       EdgeID
	PeerTier   Tier
	PeerFaulty bool // the peer's last REACH carried FAULTY
	LossFaulty bool // the measured loss rate is above LossFaulty
	// Class is the loss class from this end's measurement, PeerClass the
	// peer's (0: not measured); the link serves the worse of the two
	// (EffClass).
	Class     LossClass
	PeerClass LossClass
	Misses    int // intervals in a row without a REACH
	Good      int // good intervals in a row

	ReachRx uint64 // REACH messages received
	// ReachLost: REACHes missing from the peer's counter (gaps of up to
	// maxReachGap; a larger jump or a step back, e.g. a restarted peer,
	// counts nothing): with ReachRx, the loss of a link without data.
	ReachLost    uint64
	FaultyRx     uint64 // ... with FAULTY
	MissTotal    uint64 // intervals without a REACH
	Exclusions   uint64
	Returns      uint64
	LastRx       int64 // time of the last REACH
	LastExcluded int64
	LastReturned int64
	// LastReason: why the link last left the usable set; a lasting cause
	// (down, the peer's FAULTY, measured loss, another peer) found while
	// it is out replaces it, so an excluded link names what keeps it out.
	LastReason ExcludeReason
}

// ReachStats counts node-level events.
type ReachStats struct {
	BadLink   uint64 // calls naming a link out of range (ignored)
	RxDown    uint64 // REACH received on a link whose interface is down (ignored)
	Rebuilds  uint64 // table recomputations
	LateTicks uint64 // Polls more than an interval late (the windows re-anchored)
}

type reachLink struct {
	LinkReach
	edges []uint64 // per loss class k (1..n), words (k-1)*words ...
	seq   uint32   // the peer's last REACH counter
	seqOK bool
	rx    bool // a REACH arrived in the current interval
	good  bool // ... and none of them carried FAULTY
	bad   bool // ... one carried FAULTY
	// better: the class every loss measured since betterSince allowed, a
	// better one than Class (0: none); the link moves up to it after
	// LossClasses.Hold.
	better      LossClass
	betterSince int64
}

// Reachability is a node's view of its links (Stardust §3.2, App. E): the
// REACH messages received and the interface state decide, with hysteresis,
// whether a link is usable; the table maps each destination edge to the
// usable links whose peer reaches it; Advert says what to send on a link.
// Poll runs the interval timer; links to send a REACH on accumulate in Due
// (bit l: link l) until the caller clears it.
type Reachability struct {
	cfg      ReachConfig
	words    int
	links    []reachLink
	usable   uint64
	classes  int      // loss classes (1 when off)
	table    []uint64 // per loss class, per edge: mask of usable links reaching it in the class
	adv      []uint64 // Advert's scratch, per class
	started  bool
	evaluate bool // a full window has passed since start
	nextTick int64

	Due   uint64
	Stats ReachStats
}

// NewReachability returns a node's reachability: every interface up, no
// link usable until ThUp good intervals have passed.
func NewReachability(cfg ReachConfig) (*Reachability, error) {
	if cfg.MaxEdges == 0 {
		cfg.MaxEdges = 256
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &Reachability{cfg: cfg, words: (cfg.MaxEdges + 63) / 64, classes: int(cfg.Classes.N())}
	r.links = make([]reachLink, cfg.Links)
	per := r.classes * r.words
	back := make([]uint64, cfg.Links*per)
	for i := range r.links {
		r.links[i].Up = true
		r.links[i].edges = back[i*per : (i+1)*per : (i+1)*per]
	}
	r.table = make([]uint64, r.classes*cfg.MaxEdges)
	r.adv = make([]uint64, per)
	return r, nil
}

// Config returns the configuration in use.
func (r *Reachability) Config() ReachConfig { return r.cfg }

// BitmapLen returns the bytes of one advertised bitmap: (MaxEdges+7)/8.
func (r *Reachability) BitmapLen() int { return (r.cfg.MaxEdges + 7) / 8 }

// AdvertLen returns the bytes Advert fills: one bitmap, or MaxLossClasses
// of them with loss classes.
func (r *Reachability) AdvertLen() int {
	return reachBitmaps(r.cfg.Classes.On()) * r.BitmapLen()
}

// Usable returns the mask of usable links.
func (r *Reachability) Usable() uint64 { return r.usable }

// Routes returns the mask of usable links through which dst is reachable
// in the loosest loss class (at a fabric node, only the links to a lower
// tier if any of them reach it).
func (r *Reachability) Routes(dst EdgeID) uint64 {
	return r.RoutesIn(LossClass(r.classes), dst)
}

// RoutesIn returns the mask of usable links of loss class k or better
// through which dst is reachable over links of class k or better only.
func (r *Reachability) RoutesIn(k LossClass, dst EdgeID) uint64 {
	if int(dst) >= r.cfg.MaxEdges || k < 1 || int(k) > r.classes {
		return 0
	}
	return r.table[(int(k)-1)*r.cfg.MaxEdges+int(dst)]
}

// RoutesFor returns the routes to dst of traffic class tc: RoutesIn its
// loss class.
func (r *Reachability) RoutesFor(tc Class, dst EdgeID) uint64 {
	return r.RoutesIn(r.cfg.Classes.For(tc), dst)
}

// EffClass returns the loss class link l serves: the worse of its two
// ends' measurements, the loosest class while either is unmeasured; 1
// with loss classes off.
func (r *Reachability) EffClass(l int) LossClass {
	if l < 0 || l >= len(r.links) {
		return 0
	}
	return r.effClass(&r.links[l])
}

func (r *Reachability) effClass(k *reachLink) LossClass {
	n := LossClass(r.classes)
	if !r.cfg.Classes.On() || k.Class == 0 || k.PeerClass == 0 {
		return n
	}
	return min(max(k.Class, k.PeerClass), n)
}

// Link returns link l's state (the zero value if l is out of range).
func (r *Reachability) Link(l int) LinkReach {
	if l < 0 || l >= len(r.links) {
		return LinkReach{}
	}
	return r.links[l].LinkReach
}

// Exclusions is Link(l).Exclusions without copying the link's state (a
// worker reads it at every iteration).
func (r *Reachability) Exclusions(l int) uint64 {
	if l < 0 || l >= len(r.links) {
		return 0
	}
	return r.links[l].Exclusions
}

func (r *Reachability) link(l int) *reachLink {
	if l < 0 || l >= len(r.links) {
		r.Stats.BadLink++
		return nil
	}
	return &r.links[l]
}

// Receive records a REACH received on link l. The bitmap is copied; bits
// of edge 0 and beyond MaxEdges are ignored.
func (r *Reachability) Receive(now int64, l int, m *PeerReach) {
	k := r.link(l)
	if k == nil {
		return
	}
	if !k.Up {
		r.Stats.RxDown++
		return
	}
	if k.PeerKnown && k.Peer != m.From {
		r.exclude(now, l, ExcludePeerChange)
		k.Good = 0
		k.seqOK = false
	}
	if d := m.Seq - k.seq; k.seqOK && d >= 1 && d <= maxReachGap {
		k.ReachLost += uint64(d - 1)
	}
	k.seq, k.seqOK = m.Seq, true
	k.Peer, k.PeerTier, k.PeerKnown = m.From, m.Tier, true
	k.ReachRx++
	k.LastRx = now
	k.rx = true
	k.PeerFaulty = m.Faulty
	changed := false
	if m.Class != k.PeerClass && m.Class <= MaxLossClasses {
		k.PeerClass = m.Class
		changed = true
	}
	if m.Faulty {
		k.FaultyRx++
		k.Good, k.good, k.bad = 0, false, true
		r.exclude(now, l, ExcludePeerFaulty)
	} else {
		k.good = !k.bad
	}
	for c := range r.classes {
		b := classBitmap(m.Bitmap, m.Classes, r.BitmapLen(), r.wireClass(LossClass(c+1)))
		for w, e := range k.edges[c*r.words : (c+1)*r.words] {
			v := reachWord(b, w)
			if w == 0 {
				v &^= 1 // edge 0 is invalid
			}
			if w == r.words-1 && r.cfg.MaxEdges%64 != 0 {
				v &= 1<<(r.cfg.MaxEdges%64) - 1
			}
			if e != v {
				k.edges[c*r.words+w] = v
				changed = true
			}
		}
	}
	if changed && k.Usable {
		r.rebuild()
	}
}

// SetUp reports link l's interface state: down excludes the link at once;
// after up it returns after ThUp good intervals.
func (r *Reachability) SetUp(now int64, l int, up bool) {
	k := r.link(l)
	if k == nil || k.Up == up {
		return
	}
	k.Up = up
	k.Misses, k.Good, k.rx, k.good, k.bad = 0, 0, false, false, false
	if !up {
		r.exclude(now, l, ExcludeDown)
	}
}

// wireClass is the REACH bitmap (1..MaxLossClasses) that carries local
// loss class c: c itself, the loosest bitmap for the loosest class (which
// is every class with loss classes off).
func (r *Reachability) wireClass(c LossClass) LossClass {
	if int(c) == r.classes {
		return MaxLossClasses
	}
	return c
}

// SetLoss reports link l's measured loss rate: above LossFaulty the link
// is excluded at once and advertised FAULTY; at or below LossClear it is no
// longer faulty and returns after ThUp good intervals. With loss classes
// it also sets the link's class (LossClasses.Classify).
func (r *Reachability) SetLoss(now int64, l int, loss float64) {
	k := r.link(l)
	if k == nil {
		return
	}
	if r.cfg.Classes.On() {
		r.classify(now, k, loss)
	}
	switch {
	case loss > r.cfg.LossFaulty && !k.LossFaulty:
		k.LossFaulty, k.Good = true, 0
		r.exclude(now, l, ExcludeLoss)
	case loss <= r.cfg.LossClear && k.LossFaulty:
		k.LossFaulty, k.Good = false, 0
	}
}

// classify sets link k's class from a measured loss: a worse class at
// once, a better one (LossClasses.Classify's hysteresis) only once every
// loss measured for LossClasses.Hold has allowed it, and then the worst of
// those. A link not yet measured starts in the loosest class.
func (r *Reachability) classify(now int64, k *reachLink, loss float64) {
	cur := k.Class
	if cur == 0 {
		cur = LossClass(r.classes)
	}
	c := r.cfg.Classes.Classify(cur, loss)
	switch {
	case c >= cur:
		k.better = 0
	case k.better == 0 || now < k.betterSince:
		k.better, k.betterSince, c = c, now, cur
	default:
		k.better, c = max(k.better, c), cur
	}
	if k.better != 0 && now-k.betterSince >= r.cfg.Classes.hold() {
		c, k.better = k.better, 0
	}
	if c != k.Class {
		k.Class = c
		if k.Usable {
			r.rebuild()
		}
	}
}

// Poll runs the interval timer and returns the next deadline. At each
// interval it closes the window of every up link (a miss without a REACH,
// a good interval with a non-faulty one while neither end finds the link
// faulty), excludes and returns links, and adds the up links to Due.
func (r *Reachability) Poll(now int64) int64 {
	if !r.started {
		r.started, r.nextTick = true, now
	}
	if now < r.nextTick {
		return r.nextTick
	}
	if r.evaluate {
		for l := range r.links {
			r.close(now, l)
		}
	}
	r.evaluate = true
	for l := range r.links {
		if r.links[l].Up {
			r.Due |= 1 << l
		}
	}
	r.nextTick += r.cfg.Interval
	if r.nextTick <= now {
		r.Stats.LateTicks++
		r.nextTick = now + r.cfg.Interval
	}
	return r.nextTick
}

// thUp is the good intervals in a row that make a link usable.
func (r *Reachability) thUp() int {
	if r.cfg.ThUp > 0 {
		return r.cfg.ThUp
	}
	return r.cfg.Th
}

func (r *Reachability) close(now int64, l int) {
	k := &r.links[l]
	rx, good := k.rx, k.good
	k.rx, k.good, k.bad = false, false, false
	if !k.Up {
		return
	}
	if rx {
		k.Misses = 0
	} else {
		k.Misses++
		k.MissTotal++
	}
	if good && !k.PeerFaulty && !k.LossFaulty {
		k.Good++
	} else {
		k.Good = 0
	}
	switch {
	case k.Usable && k.Misses >= r.cfg.Th:
		r.exclude(now, l, ExcludeMiss)
	case !k.Usable && k.Good >= r.thUp():
		k.Usable = true
		r.usable |= 1 << l
		k.Returns++
		k.LastReturned = now
		r.rebuild()
	}
}

func (r *Reachability) exclude(now int64, l int, why ExcludeReason) {
	k := &r.links[l]
	if !k.Usable {
		if why != ExcludeMiss {
			k.LastReason = why
		}
		return
	}
	k.Usable = false
	r.usable &^= 1 << l
	k.Exclusions++
	k.LastExcluded, k.LastReason = now, why
	r.rebuild()
}

// rebuild recomputes the table from the usable links' peer bitmaps. A
// fabric node goes down when it can: an edge reachable through a usable
// link to a lower tier is routed through those links only (else a leaf
// could send a cell for an edge below it up to a spine, which the spine
// may send back down to it).
//
// With loss classes, class c's table holds only the links of class c or
// better, each with the edges its peer reaches in class c.
func (r *Reachability) rebuild() {
	r.Stats.Rebuilds++
	clear(r.table)
	var down uint64
	for m := r.usable; m != 0; m &= m - 1 {
		l := bits.TrailingZeros64(m)
		k := &r.links[l]
		if k.PeerKnown && k.PeerTier < r.cfg.Tier {
			down |= 1 << l
		}
		for c := int(r.effClass(k)) - 1; c < r.classes; c++ {
			t := r.table[c*r.cfg.MaxEdges : (c+1)*r.cfg.MaxEdges]
			for w, v := range k.edges[c*r.words : (c+1)*r.words] {
				for ; v != 0; v &= v - 1 {
					t[w*64+bits.TrailingZeros64(v)] |= 1 << l
				}
			}
		}
	}
	for c := range r.classes {
		t := r.table[c*r.cfg.MaxEdges : (c+1)*r.cfg.MaxEdges]
		if r.cfg.Tier == TierEdge {
			t[r.cfg.Self] = 0
		} else if down != 0 && down != r.usable {
			for e, m := range t {
				if m&down != 0 {
					t[e] = m & down
				}
			}
		}
	}
}

// Advert fills dst (AdvertLen bytes; a shorter dst gets what fits) with
// the edges this node advertises on link l, in PeerReach's bit order (one
// bitmap per loss class with loss classes), and returns the FAULTY flag
// and the link's loss class as this end measures it, to send. An edge
// advertises itself. A fabric node advertises the edges reachable through
// its other usable links (split horizon: not what it learned on l, nor
// l's peer itself); toward a peer of its own or a higher tier only those
// learned from lower tiers (valley-free: no loops between tiers); in
// class c, only through links of class c or better.
func (r *Reachability) Advert(l int, dst []byte) (faulty bool, class LossClass) {
	adv := r.adv
	clear(adv)
	k := r.link(l)
	if k == nil {
		clear(dst)
		return false, 0
	}
	for c := range r.classes {
		a := adv[c*r.words : (c+1)*r.words]
		if r.cfg.Tier == TierEdge {
			a[r.cfg.Self/64] |= 1 << (r.cfg.Self % 64)
			continue
		}
		down := k.PeerKnown && k.PeerTier < r.cfg.Tier
		for m := r.usable &^ (1 << l); m != 0; m &= m - 1 {
			j := &r.links[bits.TrailingZeros64(m)]
			if !down && j.PeerTier >= r.cfg.Tier || int(r.effClass(j)) > c+1 {
				continue
			}
			for w, v := range j.edges[c*r.words : (c+1)*r.words] {
				a[w] |= v
			}
		}
		if k.PeerKnown && int(k.Peer) < r.cfg.MaxEdges {
			a[k.Peer/64] &^= 1 << (k.Peer % 64)
		}
	}
	nb := r.BitmapLen()
	for wc := range reachBitmaps(r.cfg.Classes.On()) {
		c := min(wc, r.classes-1) // a wire class beyond the local ones: the loosest
		if !r.cfg.Classes.On() {
			c = 0
		}
		a := adv[c*r.words : (c+1)*r.words]
		d := dst[min(wc*nb, len(dst)):min((wc+1)*nb, len(dst))]
		for i := range d {
			d[i] = byte(a[i/8] >> (8 * (i % 8)))
		}
	}
	if r.cfg.Classes.On() {
		class = k.Class
	}
	return k.LossFaulty, class
}

// reachWord returns bits 64w..64w+63 of a byte bitmap (missing bytes are 0).
func reachWord(b []byte, w int) uint64 {
	if len(b) >= 8*w+8 {
		return binary.LittleEndian.Uint64(b[8*w:])
	}
	var v uint64
	for i := 8 * w; i < len(b); i++ {
		v |= uint64(b[i]) << (8 * (i - 8*w))
	}
	return v
}
