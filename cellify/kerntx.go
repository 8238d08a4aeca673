package cellify

import (
	"math"
	"sync/atomic"
)

// # The ingress edge in the kernel: host frames become cells without the worker
//
// An edge's host port can turn a host frame into a cell itself (lf_cell_tx
// in bpf/c/port.c; CellTxModel is its Go model, step for step): while the
// kernel owns the frame's VOQ it cuts the frame into a cell of its own, as
// the Packer would cut a record alone in its VOQ, and redirects it onto a
// link port that reaches the destination edge. Every other host frame
// reaches the Node through AF_XDP as before. What the two share
// (EdgeKernel):
//
//	per VOQ slot
//	  State  bit 63       KernelOwned: the kernel owns the VOQ
//	         bits 32..62  room: the credit left, in stream bytes
//	         bits 0..31   the next cell seq
//	  Base   bits 32..47 the record number of the cell whose seq is
//	         bits 0..31; written by Go only while Go owns the VOQ
//	  Key    the VOQ's (dst, port, class); written before the slot is named
//	per MAC (KernelDest, written by Go): edge, host port, until (the
//	  kernel's clock), per traffic class the VOQ slot + 1
//	the edge: self, hop budget, epoch, host port index, the cell payload
//	  bound; routes, held links, links' rate limits (as a fabric node's
//	  kernel path, bpf.CellFwd); ToGo, Consumed (as LinkGuardian's send
//	  fast path: the host frames of RX queue 0 passed to Go, and those Go
//	  took in)
//
// The kernel's rule for a host frame of RX queue 0 (CellTxModel.Offer):
// an eligible frame (linear, 15 bytes or more, its record within a cell's
// payload, unicast MACs, room in its buffer for the headers and the
// trailer) whose destination entry is live, for another edge, with a VOQ
// slot for its class, and whose source entry is live, this edge and this
// port: load State. Not owned: to Go. Owned: it needs ToGo == Consumed,
// room for the record (the frame + 3 bytes: length and source port), the
// VOQ within the kernel's rate bound (a cell every voqNs, bursts of
// voqTau: a busier VOQ is Go's, which packs it), a route (the class's loss
// class to the destination, less held links, round-robin), a redirect
// target and a token on the link; if any fails it gives the VOQ to Go by
// CAS(State, old, old &^ owned) and the frame goes to Go with it. Then it
// loads Base and CAS(State, old, {owned, room − record, seq + 1}) commits
// the cell: seq, record number Base's + (seq − Base's seq). Lost, it
// reloads: not owned, to Go; owned, it tries again (at most 4 times, then
// to Go, the VOQ left as it is).
//
// What Go does (Node, with SetKernelTx): before it queues a host frame in a
// VOQ, and before a session reset changes its credit, it claims the VOQ
// (claim: CAS until State is not owned) and folds what the kernel
// sent (fold: the cells and bytes since the last fold, from State alone,
// into the Packer's seq, record number and totals, the credit client's
// enqueued and sent, and the host port's and the node's counters). While
// the kernel owns a VOQ, every Poll folds, so requests and demand count
// the kernel's cells within a Poll. At the start of Poll it hands back
// (giveBack) each VOQ it claimed that holds nothing (no backlog), that no
// host frame joined through Go for the kernel's gap (SetKernelTx's voqNs),
// and whose cells are on the links' TX rings (none cut since the Poll
// before this one began: the worker flushes its output after each Poll),
// when the integrator says every frame passed to Go was taken in (Ready):
// Base, then State = {owned, min(Allowed, room max), the Packer's next
// seq}. A VOQ is created Go's.
//
// Why no seq is taken twice. The kernel takes seq s only by a CAS of a
// word with s, owned, to one with s + 1; Go cuts cells only while the VOQ
// is not owned, after folding everything before State's seq into the
// Packer (claim, then fold from the word it saw not owned, which the kernel
// no longer changes). Go writes State only while it owns it, with its
// Packer's next seq. A kernel CAS that loaded State before a claim and
// compares after a hand-back with the same word is right: the seq is the
// same, so Go cut nothing in between, the Base it loaded is one for that
// seq (Go writes Base before State, the kernel loads it after State and
// before its CAS; a record number is a function of the seq while the
// kernel owns: one record per cell), and room is what Go gave. A Base
// loaded after the commit could be a later one, for a seq past cells Go
// cut of several records each after claiming (TestCellTxRaceWithGo found
// record numbers off by 2 so).
//
// Why the stream keeps host order. A frame the kernel passes to Go
// because of its VOQ (steps 3-5) takes the VOQ with it (a decline) or finds
// it Go's already, so every later frame of the VOQ goes to Go until Go
// hands back, which it does only with nothing queued, once its cells are
// on the links' TX rings. A frame passed to Go before the VOQ was looked
// at (no live MAC entry, ineligible, another RX queue) is claimed by Go
// when it reads it;
// a later frame of the same queue that the kernel looks at in between is
// not sent: it counts in ToGo after that one, and ToGo == Consumed fails
// until Go has read (and so claimed for) every frame before it, which
// declines the VOQ. Frames of RX queues other than 0 are never the
// kernel's; a host keeps each flow on one queue, so within a flow the
// order holds (the VOQ's flows on other queues are not ordered against it
// by the host either). The cells are numbered in host order; spraying
// reorders them on the links as it does the worker's, and the egress
// edge's reassembly restores seq order.
//
// Why the room seldom runs out. The kernel's bytes reach the credit loop
// only when Go folds them, at a Poll, and a worker whose frames all go
// through the kernel wakes for little else; by then the room could be
// spent, and the next frame would decline the VOQ and wait for a grant in
// the worker. So Go hands a credit VOQ back with a low mark, half the
// client's Lead, and the cell that takes the room below it wakes the
// worker (a record on the host port's wake ring buffer, which the worker
// watches): the worker folds, and as the VOQ is then more than half the
// Lead beyond its grant the client asks at once (CreditClientConfig's
// LeadHold holds only bytes within half the Lead), with half the Lead
// still to send while the grant comes back. The wake is a hint: it moves
// no word, and a lost one leaves the worker to its other wakeups as
// before. On the bundle, 2000 back-to-back 143-byte TCP flows declined
// their VOQ for credit 156 times without it (each frame then waited for a
// grant in the worker, and 263 frames more went to the worker behind).
//
// Why nothing goes beyond credit. room is what Go allowed (the client's
// Allowed: granted + lead − sent) when it handed back, and the kernel
// lowers it by each record it sends while it owns the VOQ; a session
// reset changes Allowed only after a claim, and the next hand-back
// publishes the new one. A grant for a VOQ the kernel owns does not take
// it back (a claim would send the frames of the next Poll's worth through
// the worker): Go folds (so Allowed counts every cell up to the word it
// read, and k.room is that word's room, Allowed's at the fold), and adds
// what the grant raised Allowed over k.room to the word's room by a CAS
// from an owned word, and to k.room (raise). A kernel commit between the
// fold and the CAS has lowered the word's room already and stays
// subtracted; one that loaded the word before Go's CAS fails its own CAS
// and reloads. So the word's room is Allowed less what the kernel sent
// since the fold, which the next fold adds to sent. If the kernel gave the
// VOQ back meanwhile, the CAS finds it not owned and Go claims as before.
// So the kernel's bytes plus Go's never exceed granted + lead, as Go's
// alone would not.
//
// Why nothing stale goes after a restart. A new Node (SetKernelTx) first
// turns the kernel path off, stores every slot's State as Go's and drops
// every MAC entry, so the kernel sends nothing for a VOQ until the new
// node hands it back with its own seq, epoch and credit. A restarted
// dataplane loads fresh maps (every word zero: Go's).
//
// What the kernel does not do that the worker does: it learns no source
// MAC (Go writes a local source's entry with until at half the table's
// age, so a frame per half age reaches Go and refreshes it; a MAC seen
// behind another edge or port has its entry dropped at once), it sprays
// plain round-robin (the kernel path stays off with spray hash), and its
// cells reach the peer on the receive queue of the CPU that sent them.
type EdgeKernel interface {
	// Slots is the number of VOQ slots (VOQs past them stay Go's).
	Slots() int
	// State and Base are slot i's words.
	State(i int) *atomic.Uint64
	Base(i int) *atomic.Uint64
	// SetKey names slot i's VOQ (before any KernelDest names the slot).
	SetKey(i int, k VOQKey)
	// SetLow sets slot i's low mark (before the State that hands it
	// over): a cell that takes the room from low or more to below it
	// wakes the worker; 0: none.
	SetLow(i int, low uint32)
	// SetDest writes mac's entry, DeleteDest removes it (none is not
	// an error); ClearDests removes all. After an error the entry is
	// as it was: the node removes an entry it could not write, and
	// turns the path off if that fails too.
	SetDest(mac [6]byte, d KernelDest) error
	DeleteDest(mac [6]byte) error
	ClearDests() error
	// Clock is the kernel's clock now (bpf_ktime_get_ns).
	Clock() int64
	// Ready says whether Go has taken in every host frame passed to it
	// (ToGo == Consumed, as the integrator last stored it).
	Ready() bool
	// SetEdge configures the edge's constants and SetOn turns the path on
	// or off.
	SetEdge(c KernelEdge)
	SetOn(on bool)
}

// KernelEdge is the edge's part of the kernel path's configuration.
type KernelEdge struct {
	Self       EdgeID
	Hops       uint8
	Host       uint8 // the host port's index
	Epoch      uint16
	MaxPayload int // the cell payload bound
	// VOQNs and VOQTau bound the kernel's cells per VOQ (GCRA: a cell
	// every VOQNs ns, bursts of VOQTau ns; 0: no bound): a busier VOQ
	// goes to Go, which packs its records into fewer cells.
	VOQNs, VOQTau int64
}

// KernelDest is a MAC's entry: edge and host port, Until in the kernel's
// clock, and per traffic class the VOQ slot + 1 (0: none).
type KernelDest struct {
	Until int64
	Edge  EdgeID
	Port  uint8
	VOQ   [Classes]uint32
}

// Bits of a VOQ slot's State.
const (
	KernelOwned     = 1 << 63
	KernelRoomShift = 32
	KernelRoomMax   = 0x7FFFFFFF
	KernelSeqMask   = 0xFFFFFFFF
)

// KernelRecordOverhead is what a host frame's record adds to it: the
// record's length and the source port.
const KernelRecordOverhead = RecordHeaderLen + 1

// KernelWord is a State word.
func KernelWord(owned bool, room uint64, seq uint32) uint64 {
	w := min(room, KernelRoomMax)<<KernelRoomShift | uint64(seq)
	if owned {
		w |= KernelOwned
	}
	return w
}

// KernelBase is a Base word: record number recNo at seq.
func KernelBase(seq uint32, recNo uint16) uint64 { return uint64(recNo)<<32 | uint64(seq) }

// KernelStats counts the Node's side of the kernel path.
type KernelStats struct {
	Cells     uint64 // cells the kernel sent (folded)
	Bytes     uint64 // their records' bytes
	Claims    uint64 // VOQs Go took from the kernel (or found declined)
	HandBacks uint64 // VOQs Go gave the kernel
	Raises    uint64 // grants added to the room of a VOQ the kernel kept
	DestSets  uint64 // MAC entries written
	DestErrs  uint64 // ... that failed (the kernel path was turned off on a failed removal)
}

// kvoq is a VOQ's kernel side in the Node.
type kvoq struct {
	slot  int
	given bool   // Go handed it back and has not claimed it since
	seq   uint32 // State's seq at the last fold
	room  uint64 // State's room at the last fold
	back  bool   // in Node.kclaimed
	cutAt uint64 // Node.polls when Go last cut a cell of it
	rxAt  int64  // when a host frame last joined it through Go
}

// kdest is what Go last wrote for a MAC (Until in the node's clock).
type kdest struct {
	d   KernelDest
	exp int64
}

// SetKernelTx makes k the edge's ingress kernel path (host port host; the kernel
// sends a cell per VOQ at most every voqNs ns, bursts of voqTau ns, 0: no
// bound): every slot is Go's and no MAC entry is left from before (see
// "Why nothing stale goes after a restart"); then the path is configured
// and turned on. An edge with more than one host port or a fabric node
// refuses (false).
func (n *Node) SetKernelTx(k EdgeKernel, host int, voqNs, voqTau int64) bool {
	if !n.edge || len(n.hosts) != 1 || host != 0 || n.cfg.Spray == SprayHash {
		return false
	}
	k.SetOn(false)
	for i := range k.Slots() {
		k.State(i).Store(0)
	}
	if k.ClearDests() != nil {
		return false
	}
	k.SetEdge(KernelEdge{Self: n.cfg.Self, Hops: n.voqs.cfg.Hops, Host: uint8(host), Epoch: n.epoch, MaxPayload: n.cfg.CellPayload,
		VOQNs: voqNs, VOQTau: voqTau})
	n.kern = k
	n.khold = voqNs
	n.kdests = make(map[[6]byte]kdest)
	for i, q := range n.list {
		n.kernVOQ(q, i)
	}
	k.SetOn(true)
	return true
}

// KernelStats returns the kernel path's counters kept by the node.
func (n *Node) KernelStats() KernelStats { return n.kst }

// kernVOQ gives VOQ q, the i-th created, a kernel slot if it can have one.
func (n *Node) kernVOQ(q *nodeVOQ, i int) {
	if n.kern == nil || q.flood || i >= n.kern.Slots() {
		return
	}
	q.k = &kvoq{slot: i}
	n.kern.SetKey(i, q.v.Key)
	n.kernClaimed(q)
}

func (n *Node) kernClaimed(q *nodeVOQ) {
	if !q.k.back {
		q.k.back = true
		n.kclaimed = append(n.kclaimed, q)
	}
}

// raise adds to the room of q, which Go gave the kernel, what a grant
// added to the client's Allowed: folded first, then by CAS from an owned
// word, so the kernel's commits since the fold stay subtracted (see "Why
// nothing goes beyond credit"). False if the kernel gave q back meanwhile:
// it is Go's then, to claim.
func (n *Node) raise(q *nodeVOQ) bool {
	k := q.k
	n.fold(q)
	want := min(q.cc.Allowed(), KernelRoomMax)
	if want <= k.room {
		return true
	}
	d := want - k.room
	st := n.kern.State(k.slot)
	for {
		w := st.Load()
		if w&KernelOwned == 0 {
			return false
		}
		// The kernel only lowers the room from k.room: room + d stays
		// within want.
		if st.CompareAndSwap(w, w+d<<KernelRoomShift) {
			k.room += d
			n.kst.Raises++
			return true
		}
	}
}

// claim takes q from the kernel (if it has it) and folds what it sent.
func (n *Node) claim(q *nodeVOQ) {
	k := q.k
	if k == nil || !k.given {
		return
	}
	st := n.kern.State(k.slot)
	for {
		w := st.Load()
		if w&KernelOwned == 0 || st.CompareAndSwap(w, w&^KernelOwned) {
			break
		}
	}
	k.given = false
	n.kst.Claims++
	n.fold(q)
	n.kernClaimed(q)
}

// fold adds what the kernel sent from q since the last fold.
func (n *Node) fold(q *nodeVOQ) {
	k := q.k
	w := n.kern.State(k.slot).Load()
	seq, room := uint32(w), w>>KernelRoomShift&KernelRoomMax
	cells := uint64(seq - k.seq)
	if cells == 0 {
		return
	}
	bytes := k.room - room
	k.seq, k.room = seq, room
	q.v.advance(cells, bytes)
	hs := &n.hosts[0]
	hs.RxFrames += cells
	hs.RxBytes += bytes - cells*KernelRecordOverhead
	n.Stats.CellsCut += cells
	n.kst.Cells += cells
	n.kst.Bytes += bytes
	if c := q.cc; c != nil {
		c.Enqueue(int(bytes))
		c.OnSent(int(bytes))
		// Announced as the client announces bytes waiting: at once when
		// Quantum more came, else at most once per Gap (the kernel's
		// bytes never wait, so the client's own Gap rule, for bytes
		// announced and not yet sent, would announce them at every
		// Poll: 8 times the requests of the worker at 64-byte
		// saturation).
		due := n.now
		if c.enqueued-c.requested < c.cfg.Quantum {
			due = max(due, c.reqAt+c.cfg.Gap)
		}
		q.due = min(q.due, due)
		n.ccDue = min(n.ccDue, due)
	}
}

// giveBack hands q to the kernel: its low mark and Base, then its State.
func (n *Node) giveBack(q *nodeVOQ) {
	k := q.k
	room, low := uint64(KernelRoomMax), uint32(0)
	if q.cc != nil {
		room = min(q.cc.Allowed(), KernelRoomMax)
		low = uint32(min(q.cc.cfg.Lead/2, KernelRoomMax))
	}
	seq := q.v.NextSeq()
	n.kern.SetLow(k.slot, low)
	n.kern.Base(k.slot).Store(KernelBase(seq, q.v.recNo))
	k.seq, k.room, k.given = seq, room, true
	n.kern.State(k.slot).Store(KernelWord(true, room, seq))
	n.kst.HandBacks++
}

// kernPoll folds what the kernel sent and hands back the VOQs Go holds
// nothing for, that no host frame joined through Go for the kernel's gap
// (a VOQ busier than the kernel's bound stays Go's: handed back at once,
// the kernel would send its next frames one a cell and decline again),
// and whose cells have left: the worker puts the output on
// the TX rings after each call, so a cell cut after Poll p-1 began (in
// that Poll, or with the host frames after it) is on its ring only once
// Poll p has returned; the VOQ goes back at Poll p+1.
func (n *Node) kernPoll() {
	n.polls++
	if n.kern == nil {
		return
	}
	for _, q := range n.list {
		if q.k != nil && q.k.given {
			n.fold(q)
		}
	}
	n.kdue = math.MaxInt64
	if len(n.kclaimed) == 0 || !n.kern.Ready() {
		return
	}
	keep := n.kclaimed[:0]
	for _, q := range n.kclaimed {
		switch {
		case q.k.given:
			q.k.back = false
		case q.v.Backlog() > 0, q.k.cutAt+2 > n.polls:
			keep = append(keep, q)
		case n.now-q.k.rxAt < n.khold:
			keep = append(keep, q)
			n.kdue = min(n.kdue, q.k.rxAt+n.khold)
		default:
			n.giveBack(q)
			q.k.back = false
		}
	}
	clear(n.kclaimed[len(keep):])
	n.kclaimed = keep
}

// kernHost mirrors what hostRx decided for a host frame from port p to
// dst (d, VOQ q for class; q nil: none) from src into the kernel's MAC
// entries, where they differ or near their end.
func (n *Node) kernHost(p int, src, dst [6]byte, d Dest, class Class, q *nodeVOQ) {
	if n.kern == nil {
		return
	}
	// The source: this edge and port until half the table's age.
	if e, ok := n.kdests[src]; !ok || e.d.Edge != n.cfg.Self || int(e.d.Port) != p || e.exp-n.now < n.cfg.MACAge/4 {
		n.kernSet(src, KernelDest{Edge: n.cfg.Self, Port: uint8(p)}, n.now+n.cfg.MACAge/2)
	}
	if d.Flood || d.Edge == n.cfg.Self || q == nil || q.k == nil {
		return
	}
	seen, ok := n.macs.Seen(dst)
	if !ok {
		return
	}
	exp := seen + n.cfg.MACAge
	e, ok := n.kdests[dst]
	slot := uint32(q.k.slot + 1)
	if ok && e.d.Edge == d.Edge && e.d.Port == d.Port && e.d.VOQ[class] == slot && e.exp-n.now >= n.cfg.MACAge/4 {
		return
	}
	nd := KernelDest{Edge: d.Edge, Port: d.Port}
	if ok && e.d.Edge == d.Edge && e.d.Port == d.Port {
		nd.VOQ = e.d.VOQ
	}
	nd.VOQ[class] = slot
	n.kernSet(dst, nd, exp)
}

func (n *Node) kernSet(mac [6]byte, d KernelDest, exp int64) {
	d.Until = n.kern.Clock() + (exp - n.now)
	n.kst.DestSets++
	if n.kern.SetDest(mac, d) != nil {
		n.kst.DestErrs++
		n.kernDrop(mac)
		return
	}
	n.kdests[mac] = kdest{d: d, exp: exp}
}

// kernLearned drops mac's kernel entry when the table now has it behind
// another edge or port than the entry says.
func (n *Node) kernLearned(mac [6]byte, edge EdgeID, port uint8) {
	if n.kern == nil {
		return
	}
	e, ok := n.kdests[mac]
	if !ok || (e.d.Edge == edge && e.d.Port == port) {
		return
	}
	n.kernDrop(mac)
}

// kernDrop removes mac's entry; if it cannot, the entry may be wrong and
// no frame may follow it: the path goes off.
func (n *Node) kernDrop(mac [6]byte) {
	delete(n.kdests, mac)
	if n.kern.DeleteDest(mac) != nil {
		n.kst.DestErrs++
		n.kern.SetOn(false)
	}
}

// kernSession claims every VOQ toward dst (before their credit restarts).
func (n *Node) kernSession(dst EdgeID) {
	if n.kern == nil {
		return
	}
	for _, q := range n.list {
		if q.v.Key.Dst == dst {
			n.claim(q)
		}
	}
}

// KernelClose turns the kernel path off and takes every VOQ back, folding
// what it sent.
func (n *Node) KernelClose() {
	if n.kern == nil {
		return
	}
	n.kern.SetOn(false)
	for _, q := range n.list {
		n.claim(q)
	}
}
