// Package linksession is the link session: the HELLO/HELLO-ACK exchange in
// the link header's type space (seqhdr types 7 and 8) by which the two ends
// of a link agree before protected data flows, and agree again after either
// restarts.
//
// Like package lg it is pure logic on a virtual clock: no I/O, goroutines,
// Go timers or locks, and no allocation after New. Time is a monotonic
// nanosecond clock passed in on every call.
//
// # Protocol
//
// Each process start picks an epoch (random, nonzero, 64 bit). A HELLO
// carries the sender's epoch, the peer epoch it knows (Echo, 0 if none), the
// initial sequence number its LinkGuardian sender uses towards that peer, and
// its offer: receive window (credit, frames), lanes, MTU, link speed (the PFC
// quanta unit) and protect mode. A HELLO-ACK is the same message sent in
// reply to a HELLO.
//
//   - A message from an epoch other than the current peer's (the first peer,
//     or a peer that restarted) is adopted, by the rule below: the Link is
//     Reset with our initial sequence number and the peer's, and the agreed
//     parameters are recomputed (EvReset; EvPeerRestart and
//     Stats.PeerRestarts if a previous peer epoch was known). Our initial
//     sequence number is chosen at start (Config) for the first peer and is
//     Link.TxNext() for every later one, so every frame of ours still on the
//     wire from before the reset is behind the peer's new receive window and
//     dropped as a duplicate.
//   - Which new epoch is adopted. The current peer's own messages never
//     reset anything; only a new epoch can, and not every one:
//     (a) A new epoch from the current peer's source MAC is that peer
//     restarted: adopted at once, even while the old epoch seemed alive.
//     The epoch it replaced is remembered (the last ReplacedEpochs of
//     them): its process is gone, so a message of it that arrives later
//     (reordered, or long in flight) is Stats.Stale (and Stats.Replaced),
//     never adopted again.
//     (b) A new epoch from another source MAC (a second sender on the
//     segment; any MAC reaches the session when Config.PeerMAC is unset)
//     while the current peer is alive (Up, and heard within DeadAfter) is
//     Stats.Foreign: one stray HELLO must not reset both directions, twice
//     (once for it, once more for the real peer's next keepalive).
//     (c) Otherwise (no peer yet, or the current one is silent, taken for
//     dead, mismatched or the link is down) it is adopted: the link is not
//     held for a peer that may never come back. The epoch it replaces is
//     not remembered, as that peer's process may well be alive: heard
//     again, it is adopted back by the same rule.
//   - A message is only adopted if its Echo is 0 or our epoch: one echoing
//     another epoch was meant for an earlier incarnation of us (Stats.Stale).
//     A message carrying our own epoch is a loop (Stats.Looped). A known
//     epoch offering different parameters is Stats.Inconsistent. Undecodable
//     frames are Stats.Malformed; a frame from a source MAC other than a
//     unicast Config.PeerMAC is Stats.Foreign, as is (b) above. All of these
//     are ignored.
//   - On a cell link each end announces its node id (Config.Node). A peer
//     with the same id is refused, every time it speaks
//     (Stats.NodeCollisions, EvNodeCollision): the session never comes
//     Up, so the link carries nothing until one of them changes its id.
//   - Every accepted HELLO is answered with a HELLO-ACK. The session is Up once
//     the adopted peer echoes our epoch (in either message): the peer has
//     then reset its receiver to our initial sequence number.
//   - Until Up, a HELLO is sent at once and then on a backoff timer
//     (HelloInterval doubling up to MaxHelloInterval): a lost HELLO or
//     HELLO-ACK costs time, never a stall. A LinkGuardian frame from the peer
//     while not Up brings the next HELLO forward (a peer that restarted and did
//     not hear us recovers).
//   - While Up, a HELLO goes out every KeepaliveInterval and the peer answers
//     it. A peer heard from neither in session frames nor in LinkGuardian
//     frames for DeadAfter is taken for dead (Stats.PeerTimeouts): the
//     session leaves Up for HelloSent, so host frames wait and then follow
//     the policy instead of queueing behind a credit window nobody opens. The
//     agreement is kept: the same peer answering brings the session Up again
//     without a reset; a restarted one (a new epoch) resets as usual.
//
// # Agreement
//
// Each agreed field is the minimum of both offers. Two settings must fit,
// and Agreed.Conflict names those that do not:
//
//   - Protect modes (ConflictProtect): a direction is sequenced by its
//     sender exactly when its receiver sequences it (our Tx is the peer's
//     Rx and our Rx the peer's Tx), and both ends code (FEC) or both
//     retransmit.
//   - Integrity checks (ConflictIntegrity): both ends' link frames carry
//     the same check (Offer.Integrity, linkcrc). A peer that does not say
//     which it runs (seqhdr.Hello.Caps zero: a build from before) is not
//     checked.
//
// With a conflict the session stays in Mismatch (Stats.Mismatches), does not
// reset the link, accepts no LinkGuardian frame and keeps offering HELLOs
// at MaxHelloInterval until a peer with a fitting configuration (a new
// epoch) answers. Receive modes (lg, lgnb, monitor) are each receiver's own
// choice and only reported, and so is whether an end sends by the kernel's
// send fast path (Offer.FastSend): its frames on the wire are the ones the
// worker would have sent (linkguardian/fasttx.go, step 6), so the two ends
// interoperate either way.
//
// A FEC end also puts a report in its HELLOs and HELLO-ACKs (SetReport: the
// loss it measures on what it receives, its sender's n and copies); the
// peer's latest is PeerReport. It is not part of the agreement: keepalives
// carry it as it changes.
//
// # Worker loop
//
// Per iteration, with now read once:
//
//  1. For each frame from the link: if seqhdr.FrameType says IsSession,
//     ev := s.Receive(now, frame) and free the frame (on EvReset apply
//     Agreed(): SetCredit, lanes, MTU; log it). Else if it is a link frame
//     and !s.AcceptLink(now), drop it; if it is not one (no link header)
//     and !s.AcceptPlain(), drop it. Else port.Receive. (AcceptLink
//     is for received frames only: a condition that is not about a received
//     frame, such as handing the receive point to the kernel, asks
//     s.Accepts(), which does not count as hearing the peer.)
//     (On a new agreement Receive has called Link.Reset: the port's
//     Out.Free then holds every frame the port released; the iteration's
//     usual release step frees them.)
//  2. For the host frame at the head of the link queue: s.Admit(now,
//     queuedAt): Protect → port.Send; Wait → keep it; Pass → transmit it as
//     it is (unprotected); Drop → free it.
//  3. d := s.Poll(now); for n := s.Frame(buf); n > 0; n = s.Frame(buf) →
//     transmit buf[:n] on the priority lane. d is the session's next deadline.
package linksession

import (
	"errors"
	"math/rand/v2"

	"github.com/linkfabric/linkfabric/link/linkcrc"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// Link is the LinkGuardian state the session resets; *linkguardian.Endpoint implements it.
type Link interface {
	// TxNext is the sequence number the sender's next frame gets.
	TxNext() seqhdr.Seq
	// Reset restarts the sender at tx and the receiver at rx, releasing
	// every frame held.
	Reset(now int64, tx, rx seqhdr.Seq)
}

// State of a session.
type State uint8

// States.
const (
	// Down: the link is down (LinkDown); nothing is sent.
	Down State = iota
	// HelloSent: HELLOs go out on the backoff timer; the peer has not yet
	// echoed our epoch.
	HelloSent
	// Up: both ends agreed on this pair of epochs.
	Up
	// Mismatch: a setting of the peer does not fit ours (Agreed.Conflict).
	Mismatch
)

func (s State) String() string {
	return [...]string{"down", "hello-sent", "up", "mismatch"}[s&3]
}

// Protect is a protect mode: which directions are sequenced, and how this
// end's receiver delivers (linkguardian.Delivery: 0 lg, 1 lgnb, 2 monitor).
type Protect struct {
	Tx, Rx bool  // this end sequences what it sends / what it receives
	RxMode uint8 // 0 lg, 1 lgnb, 2 monitor
	// FEC: the sequenced frames are FEC's (parity, replication), not
	// LinkGuardian's; both ends must agree.
	FEC bool
}

// fits reports whether p (ours) and peer are compatible: a direction is
// sequenced by its sender exactly when its receiver expects it, and both
// ends run the same mechanism.
func (p Protect) fits(peer Protect) bool {
	return p.Tx == peer.Rx && p.Rx == peer.Tx && p.FEC == peer.FEC
}

func (p Protect) bits() uint8 {
	b := p.RxMode << 4
	if p.FEC {
		b |= seqhdr.ProtectFEC
	}
	if p.Tx {
		b |= seqhdr.ProtectTx
	}
	if p.Rx {
		b |= seqhdr.ProtectRx
	}
	return b
}

func protectOf(b uint8) Protect {
	return Protect{Tx: b&seqhdr.ProtectTx != 0, Rx: b&seqhdr.ProtectRx != 0, RxMode: b & seqhdr.ProtectModeMask >> 4, FEC: b&seqhdr.ProtectFEC != 0}
}

// Offer is what one end can do, and what it runs that the peer checks.
type Offer struct {
	Window  uint32 // frames this end can receive unprocessed (reorder window / RX ring)
	Lanes   uint8  // transmit lanes (queues)
	MTU     uint16 // largest host frame, bytes
	Speed   uint32 // link speed, Mbit/s (PFC quanta unit = 512 bit times)
	Protect Protect
	// Integrity is the check this end's link frames carry; both ends must
	// run the same (ConflictIntegrity).
	Integrity linkcrc.Integrity
	// FastSend: this end's host frames may go out by the kernel's send fast
	// path (reported only).
	FastSend bool
}

// Caps is what an end runs besides its protect mode, as its HELLOs say
// (seqhdr.Hello.Caps).
type Caps struct {
	// Known: the end said it (a build from before Caps does not).
	Known     bool
	Integrity linkcrc.Integrity
	FastSend  bool
}

func (o *Offer) caps() Caps { return Caps{Known: true, Integrity: o.Integrity, FastSend: o.FastSend} }

func (c Caps) bits() uint8 {
	b := uint8(seqhdr.CapsSet) | uint8(c.Integrity)&seqhdr.CapsIntegrityMask
	if c.FastSend {
		b |= seqhdr.CapsFastSend
	}
	return b
}

func capsOf(b uint8) Caps {
	if b&seqhdr.CapsSet == 0 {
		return Caps{}
	}
	return Caps{Known: true, Integrity: linkcrc.Integrity(b & seqhdr.CapsIntegrityMask), FastSend: b&seqhdr.CapsFastSend != 0}
}

// Conflict says which settings of the two ends do not fit (a bit set).
type Conflict uint8

// Conflicts.
const (
	ConflictProtect   Conflict = 1 << iota // protect modes (Protect.fits)
	ConflictIntegrity                      // integrity checks (Offer.Integrity)
)

// String names the settings that do not fit: "protect", "integrity",
// "protect, integrity" or "".
func (c Conflict) String() string {
	switch c {
	case 0:
		return ""
	case ConflictProtect:
		return "protect"
	case ConflictIntegrity:
		return "integrity"
	}
	return "protect, integrity"
}

// conflict returns what of the peer's offer h does not fit o.
func (o *Offer) conflict(h *seqhdr.Hello) Conflict {
	var c Conflict
	if !o.Protect.fits(protectOf(h.Protect)) {
		c |= ConflictProtect
	}
	if pc := capsOf(h.Caps); pc.Known && pc.Integrity != o.Integrity {
		c |= ConflictIntegrity
	}
	return c
}

// Agreed is the outcome of an agreement.
type Agreed struct {
	Window uint32 // min of both windows: the credit of either sender
	Lanes  uint8
	MTU    uint16
	Speed  uint32 // Mbit/s
	// Local and Peer are the two protect modes (compatible when agreed).
	Local, Peer Protect
	// LocalCaps and PeerCaps are what the two ends run besides (the same
	// integrity check when agreed, unless PeerCaps is not Known).
	LocalCaps, PeerCaps Caps
	// Conflict names the settings that do not fit (the session is then in
	// Mismatch, and Agreed reports no agreement).
	Conflict Conflict
	// TxSeq and RxSeq are where our sender and receiver were reset to.
	TxSeq, RxSeq seqhdr.Seq
	// Epoch and PeerEpoch identify the agreement.
	Epoch, PeerEpoch uint64
	// PeerNode is the peer's cell node id (Config.Node; 0: none).
	PeerNode uint16
}

// QuantumNanos is the duration of one PFC pause quantum (512 bit times) at
// the agreed speed.
func (a Agreed) QuantumNanos() float64 { return 512e3 / float64(a.Speed) }

// Verdict is what to do with a host frame waiting for the link.
type Verdict uint8

// Verdicts.
const (
	// Send: the session is up; hand the frame to the LinkGuardian port.
	Send Verdict = iota + 1
	// Wait: keep the frame queued and ask again later.
	Wait
	// Pass: transmit the frame as it is, unprotected.
	Pass
	// Drop: free the frame.
	Drop
)

// Policy says what happens to host frames while the session is not Up.
type Policy struct {
	// WaitUpTo: a frame waits up to this long (from when it was queued).
	WaitUpTo int64
	// HoldUpTo: while an agreement stands (the session was up with this
	// peer, and the link is down, the peer silent or the agreement being
	// confirmed again) a frame waits up to this long instead, if longer.
	// LinkGuardian keeps its own frames across the outage too, so an outage
	// shorter than this is a pause to the hosts, not a loss. A loss would
	// cost TCP far more than the wait: the receiver's duplicate ACK of a
	// retransmission echoes a timestamp from before the outage, the sender
	// takes its timeout for spurious and undoes it, and a tail of segments
	// lost in the outage then waits for a retransmission timer inflated by
	// the outage (4 of 52 directions stalled 4 s or more after a 2 s flap).
	HoldUpTo int64
	// PassUnprotected: after the wait the frame goes out unprotected; if
	// false it is dropped.
	PassUnprotected bool
}

// Config configures one end's session.
type Config struct {
	LocalMAC, PeerMAC [6]byte // of the session frames
	Offer             Offer
	// Epoch is this process's epoch; 0 picks a random one (the normal case).
	Epoch uint64
	// InitSeq is the initial sequence number offered to the first peer; 0
	// derives one at random (seqhdr.Space asks for 0 itself).
	InitSeq seqhdr.Seq
	// HelloInterval (default 1 ms) is the first HELLO retransmission
	// interval; it doubles up to MaxHelloInterval (default 64 ms).
	HelloInterval, MaxHelloInterval int64
	// KeepaliveInterval (default 100 ms) is how often an Up session sends
	// a HELLO; DeadAfter (default 5 × KeepaliveInterval) is how long a
	// silent peer keeps the session Up.
	KeepaliveInterval, DeadAfter int64
	Policy                       Policy
	// Node is this end's cell node id (mode cells), carried in every
	// HELLO; 0 for a link that is not a cell link. A peer announcing the
	// same nonzero id is refused (Stats.NodeCollisions, EvNodeCollision):
	// two neighbours with one id would take each other's cells and
	// credits for their own.
	Node uint16
}

// Stats counts what a session did.
type Stats struct {
	HellosTx, HelloAcksTx uint64
	HellosRx, HelloAcksRx uint64
	Malformed             uint64 // session frames that failed to decode
	Looped                uint64 // messages carrying our own epoch
	Stale                 uint64 // messages echoing an epoch of ours that is not the current one
	Inconsistent          uint64 // a known peer epoch offering different parameters
	PeerRestarts          uint64 // a new peer epoch after another one was known
	Resets                uint64 // Link.Reset calls
	Ups                   uint64 // transitions to Up
	Mismatches            uint64 // peer offers adopted whose settings do not fit (Agreed.Conflict)
	RxNotAgreed           uint64 // LinkGuardian frames dropped: no agreement with their sender (and AcceptPlain's)
	Downs                 uint64 // LinkDown calls
	Foreign               uint64 // session frames from a source MAC that is not Config.PeerMAC (when unicast), or a new epoch from another MAC than the live peer's
	Replaced              uint64 // of Stale: messages of a peer epoch replaced by its restart
	PeerTimeouts          uint64 // Up left because the peer was silent for DeadAfter
	NodeCollisions        uint64 // session frames refused: the peer has this end's Config.Node
}

// Event reports what Receive did (a bit set).
type Event uint8

// Events.
const (
	EvReset         Event = 1 << iota // the link was reset to a new agreement (Agreed changed)
	EvPeerRestart                     // the peer's epoch changed: it restarted
	EvUp                              // the session came up
	EvMismatch                        // a setting of the peer does not fit ours (Agreed.Conflict)
	EvNodeCollision                   // the peer has this end's node id: refused
)

// ReplacedEpochs is how many peer epochs replaced by a restart a session
// remembers (see "Which new epoch is adopted").
const ReplacedEpochs = 4

// Session is one end of a link session.
type Session struct {
	cfg      Config
	link     Link
	state    State
	epoch    uint64
	peer     uint64       // adopted peer epoch (0 none)
	peerMsg  seqhdr.Hello // the peer's offer as adopted
	peerSrc  [6]byte      // the source MAC it was adopted from
	adopted  bool         // a peer was adopted at least once
	init     seqhdr.Seq   // our initial sequence number towards peer (or the first peer)
	agreed   Agreed
	interval int64
	next     int64 // next HELLO (when not Up)
	lastTx   int64 // last HELLO sent
	heard    int64 // last frame from the adopted peer (session or LinkGuardian)
	helloDue bool
	ackDue   bool
	// replaced holds the last peer epochs replaced by a restart of that
	// peer (same source MAC), newest at replacedAt-1 (a ring).
	replaced   [ReplacedEpochs]uint64
	replacedAt int
	// report goes out in every HELLO and HELLO-ACK when set (SetReport);
	// peerReport is the adopted peer's latest (peerReportOK: one came).
	report, peerReport      seqhdr.Report
	hasReport, peerReportOK bool
	Stats                   Stats
}

// SetReport makes every later HELLO and HELLO-ACK carry r (mode fec: what
// this end measured and runs, for the peer's link policy); keepalives
// bring it to the peer every KeepaliveInterval.
func (s *Session) SetReport(r seqhdr.Report) { s.report, s.hasReport = r, true }

// PeerReport returns the adopted peer's latest report, if one came since
// it was adopted.
func (s *Session) PeerReport() (seqhdr.Report, bool) { return s.peerReport, s.peerReportOK }

const maxTime = int64(1<<63 - 1)

// New returns a session over link, in HelloSent: the first Poll sends a HELLO.
func New(cfg Config, link Link) (*Session, error) {
	if link == nil {
		return nil, errors.New("linksession: New needs the Link (the linkguardian.Endpoint) it resets")
	}
	o := cfg.Offer
	if o.Window == 0 || o.Lanes == 0 || o.MTU < 64 || o.Speed == 0 || o.Protect.RxMode > 2 || o.Integrity > linkcrc.Csum {
		return nil, errors.New("linksession: Config.Offer needs Window ≥ 1, Lanes ≥ 1, MTU ≥ 64, Speed ≥ 1 Mbit/s, RxMode 0 (lg), 1 (lgnb) or 2 (monitor) and Integrity crc32c, off or csum")
	}
	if cfg.HelloInterval <= 0 {
		cfg.HelloInterval = 1_000_000
	}
	if cfg.MaxHelloInterval < cfg.HelloInterval {
		cfg.MaxHelloInterval = max(64*1_000_000, cfg.HelloInterval)
	}
	if cfg.KeepaliveInterval <= 0 {
		cfg.KeepaliveInterval = 100_000_000
	}
	if cfg.DeadAfter <= cfg.KeepaliveInterval {
		cfg.DeadAfter = 5 * cfg.KeepaliveInterval
	}
	if cfg.Policy.WaitUpTo < 0 || cfg.Policy.HoldUpTo < 0 {
		return nil, errors.New("linksession: Config.Policy.WaitUpTo and HoldUpTo must not be negative")
	}
	s := &Session{cfg: cfg, link: link, state: HelloSent, epoch: cfg.Epoch, interval: cfg.HelloInterval}
	for s.epoch == 0 {
		s.epoch = rand.Uint64()
	}
	s.init = cfg.InitSeq & (seqhdr.Space - 1)
	if cfg.InitSeq == 0 {
		s.init = seqhdr.Seq(rand.Uint32()) & (seqhdr.Space - 1)
	}
	return s, nil
}

// DeadAfter is how long a silent peer keeps the session Up (ns).
func (s *Session) DeadAfter() int64 { return s.cfg.DeadAfter }

// State returns the session state.
func (s *Session) State() State { return s.state }

// Epoch returns this end's epoch.
func (s *Session) Epoch() uint64 { return s.epoch }

// Agreed returns the parameters of the current agreement and whether there
// is one (a peer adopted whose settings fit). Without one they are the
// adopted peer's offer and ours: Conflict says what does not fit. They stay valid
// while the session is re-confirmed after LinkDown/LinkUp.
func (s *Session) Agreed() (Agreed, bool) {
	return s.agreed, s.peer != 0 && s.agreed.Conflict == 0
}

// Receive handles a session frame (HELLO or HELLO-ACK, whole frame).
func (s *Session) Receive(now int64, frame []byte) Event {
	h, err := seqhdr.ParseHello(frame)
	if err != nil {
		s.Stats.Malformed++
		return 0
	}
	if p := &s.cfg.PeerMAC; p[0]&1 == 0 && *p != ([6]byte{}) && string(frame[6:12]) != string(p[:]) {
		s.Stats.Foreign++ // control is accepted only from the session's peer
		return 0
	}
	if h.Ack {
		s.Stats.HelloAcksRx++
	} else {
		s.Stats.HellosRx++
	}
	switch {
	case h.Epoch == s.epoch:
		s.Stats.Looped++
		return 0
	case h.Ack && h.Echo == 0:
		s.Stats.Malformed++ // a reply always echoes the HELLO it answers
		return 0
	case h.Echo != 0 && h.Echo != s.epoch:
		s.Stats.Stale++
		return 0
	case s.cfg.Node != 0 && h.Node == s.cfg.Node:
		s.Stats.NodeCollisions++
		return EvNodeCollision
	}
	var ev Event
	src := frame[6:12]
	if h.Epoch != s.peer {
		switch {
		case s.wasReplaced(h.Epoch):
			s.Stats.Stale++
			s.Stats.Replaced++
			return 0
		case s.peer != 0 && s.alive(now) && string(src) != string(s.peerSrc[:]):
			s.Stats.Foreign++
			return 0
		}
		ev = s.adopt(now, &h, src, false)
	} else if h.Window != s.peerMsg.Window || h.Lanes != s.peerMsg.Lanes || h.MTU != s.peerMsg.MTU ||
		h.Speed != s.peerMsg.Speed || h.Protect != s.peerMsg.Protect || h.InitSeq != s.peerMsg.InitSeq || h.Node != s.peerMsg.Node ||
		h.Caps != s.peerMsg.Caps {
		s.Stats.Inconsistent++
		if s.agreed.Conflict == 0 {
			return 0
		}
		// Nothing was reset for the offer that did not fit, and an
		// epoch's offer does not change: that one was a frame corrupted
		// into another configuration (the integrity check of a peer
		// that runs another one cannot tell). The later offer counts.
		ev = s.adopt(now, &h, src, true)
	}
	s.heard = now
	if h.HasReport {
		s.peerReport, s.peerReportOK = h.Report, true
	}
	if !h.Ack {
		s.ackDue = true
	}
	if h.Echo == s.epoch && s.state == HelloSent {
		s.state = Up
		s.Stats.Ups++
		ev |= EvUp
	}
	return ev
}

// wasReplaced reports whether epoch is one of the remembered peer epochs
// replaced by a restart.
func (s *Session) wasReplaced(epoch uint64) bool {
	for _, e := range s.replaced {
		if e == epoch {
			return true
		}
	}
	return false
}

// alive reports whether the current peer is Up and was heard within
// DeadAfter.
func (s *Session) alive(now int64) bool {
	return s.state == Up && now-s.heard < s.cfg.DeadAfter
}

// adopt takes h's epoch, from source MAC src, as the peer's and resets the
// link to the agreement; again: h is the current peer's, whose earlier offer
// did not fit.
func (s *Session) adopt(now int64, h *seqhdr.Hello, src []byte, again bool) Event {
	var ev Event
	if s.peer != 0 && !again {
		s.Stats.PeerRestarts++
		ev |= EvPeerRestart
		if string(src) == string(s.peerSrc[:]) {
			s.replaced[s.replacedAt] = s.peer
			s.replacedAt = (s.replacedAt + 1) % ReplacedEpochs
		}
	}
	copy(s.peerSrc[:], src)
	if s.adopted {
		s.init = s.link.TxNext()
	}
	s.adopted = true
	s.peer, s.peerMsg = h.Epoch, *h
	s.peerReportOK = false
	o := &s.cfg.Offer
	s.agreed = Agreed{
		Window: min(o.Window, h.Window), Lanes: min(o.Lanes, h.Lanes), MTU: min(o.MTU, h.MTU),
		Speed: min(o.Speed, h.Speed), Local: o.Protect, Peer: protectOf(h.Protect),
		LocalCaps: o.caps(), PeerCaps: capsOf(h.Caps), Conflict: o.conflict(h),
		TxSeq: s.init, RxSeq: h.InitSeq, Epoch: s.epoch, PeerEpoch: h.Epoch, PeerNode: h.Node,
	}
	if s.agreed.Conflict != 0 {
		s.Stats.Mismatches++
		if s.state != Down {
			s.state = Mismatch
		}
		s.interval = s.cfg.MaxHelloInterval
		return ev | EvMismatch
	}
	s.link.Reset(now, s.init, h.InitSeq)
	s.Stats.Resets++
	if s.state != Down {
		s.state = HelloSent
		s.interval = s.cfg.HelloInterval
		s.next = now // tell the peer our parameters and ask for its echo
	}
	return ev | EvReset
}

// AcceptLink is called for every LinkGuardian frame received from the link
// (before port.Receive), and only then: it reports whether the frame may be
// processed (Accepts), and takes the frame for a sign of life of the peer
// (the dead-peer timer starts again). While the session is not Up it also
// brings the next HELLO forward (at most one per HelloInterval). To ask
// whether frames may be processed without having received one, call
// Accepts.
func (s *Session) AcceptLink(now int64) bool {
	if s.state == HelloSent {
		s.next = min(s.next, max(now, s.lastTx+s.cfg.HelloInterval))
	}
	if !s.Accepts() {
		s.Stats.RxNotAgreed++
		return false
	}
	s.heard = now
	return true
}

// AcceptPlain is called for every frame received from the link without a
// link header (a direction this end does not protect, or host frames the
// peer passed unprotected): it reports whether the frame may be delivered.
// Not while the adopted peer runs another integrity check
// (ConflictIntegrity): the frame then carries a trailer this end does not
// remove, or lacks the one its check expects (counted in RxNotAgreed). It
// does not count as hearing the peer.
func (s *Session) AcceptPlain() bool {
	if s.peer != 0 && s.agreed.Conflict&ConflictIntegrity != 0 {
		s.Stats.RxNotAgreed++
		return false
	}
	return true
}

// Accepts reports whether LinkGuardian frames from the link may be
// processed: the port was reset to an agreement with a peer that fits.
// It is a query and changes nothing: asking it is not hearing the peer.
func (s *Session) Accepts() bool { return s.peer != 0 && s.agreed.Conflict == 0 }

// Admit decides for the host frame at the head of the link queue, queued at
// queuedAt.
func (s *Session) Admit(now, queuedAt int64) Verdict {
	switch {
	case s.state == Up:
		return Send
	case now-queuedAt < s.waitUpTo():
		return Wait
	case s.cfg.Policy.PassUnprotected:
		return Pass
	}
	return Drop
}

// waitUpTo is how long a host frame waits for the session to be Up: the
// policy's HoldUpTo while an agreement stands, else its WaitUpTo.
func (s *Session) waitUpTo() int64 {
	if _, ok := s.Agreed(); ok {
		return max(s.cfg.Policy.WaitUpTo, s.cfg.Policy.HoldUpTo)
	}
	return s.cfg.Policy.WaitUpTo
}

// WaitDeadline is when Admit stops answering Wait for a frame queued at
// queuedAt (a deadline for the worker's sleep while the session is not Up).
func (s *Session) WaitDeadline(queuedAt int64) int64 { return queuedAt + s.waitUpTo() }

// Poll runs the HELLO, keepalive and dead-peer timers and returns the
// session's next deadline.
func (s *Session) Poll(now int64) int64 {
	if s.state == Down {
		return maxTime
	}
	if s.state == Up {
		switch {
		case now-s.heard >= s.cfg.DeadAfter:
			s.state = HelloSent
			s.Stats.PeerTimeouts++
			s.interval = s.cfg.HelloInterval
			s.next = now
		case now-s.lastTx >= s.cfg.KeepaliveInterval:
			s.helloDue = true
		}
	}
	if s.state != Up && now >= s.next {
		s.helloDue = true
		s.next = now + s.interval
		s.interval = min(2*s.interval, s.cfg.MaxHelloInterval)
	}
	if s.helloDue || s.ackDue {
		return now
	}
	if s.state == Up {
		return min(s.lastTx+s.cfg.KeepaliveInterval, s.heard+s.cfg.DeadAfter)
	}
	return s.next
}

// Frame writes the next session frame due (HELLO-ACK first, then HELLO) into
// b (at least seqhdr.MinFrameLen bytes) and returns its length, or 0 when
// none is due. Call it after Poll until it returns 0.
func (s *Session) Frame(now int64, b []byte) int {
	h := seqhdr.Hello{Epoch: s.epoch, Echo: s.peer, InitSeq: s.init, Window: s.cfg.Offer.Window,
		Lanes: s.cfg.Offer.Lanes, Protect: s.cfg.Offer.Protect.bits(), MTU: s.cfg.Offer.MTU, Speed: s.cfg.Offer.Speed, Node: s.cfg.Node,
		HasReport: s.hasReport, Report: s.report, Caps: s.cfg.Offer.caps().bits()}
	switch {
	case s.state == Down:
		return 0
	case s.ackDue && s.peer != 0:
		h.Ack = true
		s.ackDue = false
		s.Stats.HelloAcksTx++
	case s.helloDue:
		s.helloDue = false
		s.lastTx = now
		s.Stats.HellosTx++
	default:
		return 0
	}
	n, err := seqhdr.PutHello(b, &s.cfg.PeerMAC, &s.cfg.LocalMAC, &h)
	if err != nil {
		return 0
	}
	return n
}

// LinkDown records that the link went down (ENETDOWN, carrier loss):
// nothing is sent until LinkUp.
func (s *Session) LinkDown(now int64) {
	if s.state != Down {
		s.state = Down
		s.Stats.Downs++
		s.helloDue, s.ackDue = false, false
	}
}

// LinkUp restarts the exchange after LinkDown: HELLOs go out at once. The
// agreement is kept unless the peer's epoch changed meanwhile.
func (s *Session) LinkUp(now int64) {
	if s.state != Down {
		return
	}
	s.state = HelloSent
	if s.peer != 0 && s.agreed.Conflict != 0 {
		s.state = Mismatch
	}
	s.interval = s.cfg.HelloInterval
	s.next = now
}
