package linkpipe

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/internal/ptr"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
	"github.com/spf13/pflag"
)

// The link session of a pipeline with one link port (lg, fec; package
// linksession): before sequenced frames flow, and again after either end
// restarts, the two ends exchange HELLO/HELLO-ACK on the priority lane,
// agree on the smaller of their windows (the sender's credit), lanes, MTU
// and link speed, check that their --lg-protect settings fit together, and
// reset LinkGuardian's sequence state to the initial sequence numbers both
// announced. A frame from before a restart is then behind the receiver's
// window and dropped: nothing stale is delivered.
//
// Until the session is up, host frames wait in the class queues for up to
// SessionConfig.SessionWait, or SessionConfig.SessionHold while an agreement stands
// (the link port down, the peer silent, or a restarted peer's new epoch
// not yet agreed; see linksession.Policy.HoldUpTo for why an outage must
// be a pause and not a loss). After that they are dropped (counted), or
// passed unprotected with SessionConfig.SessionPass. When dropped, the newest
// SessionConfig.SessionKeep frames of each class stay, if they arrived in the
// second half of the outage (keptSince) and for as long as the session has
// been down less than SessionConfig.SessionHold: after a link flap they are the
// hosts' latest retransmissions, which restart TCP at once.

// maxDeadline is "no deadline".
const maxDeadline = math.MaxInt64

// DefaultSessionWait is how long host frames wait for the link session.
const DefaultSessionWait = 200 * time.Millisecond

// DefaultSessionKeep and defaultSessionHold: the newest frames kept per
// class while the session is down, and for how long.
const (
	DefaultSessionKeep = 16
	DefaultSessionHold = 5 * time.Second
)

// keptSince is the oldest arrival time a kept frame may have at now, the
// session not up since down: the second half of the outage. A host backing
// off exponentially sent a retransmission in that half, or sends its next
// one within its base timeout of the link coming back; an older frame adds
// nothing but a stale delay. And the delay is harmful: TCP takes the age of
// a delivered frame that acknowledges or SACKs new data as a round-trip
// sample (an ACK held through a 2 s flap gave a 6.6 s RTO, and the next
// loss stalled the connection for that long).
func keptSince(down, now int64) int64 { return down + (now-down)/2 }

// SessionStats is the link session as /stats.json shows it.
type SessionStats struct {
	mu sync.Mutex
	v  SessionSnapshot
}

// SessionSnapshot is a copy of the session's state and counters.
type SessionSnapshot struct {
	State string `json:"state"`
	// Mismatch names the settings of the peer that do not fit this end's
	// (state mismatch): "--integrity csum here, crc32c at the peer".
	Mismatch  string             `json:"mismatch,omitempty"`
	Epoch     uint64             `json:"epoch"`
	PeerEpoch uint64             `json:"peer_epoch,omitempty"`
	Agreed    *SessionAgreed     `json:"agreed,omitempty"`
	Counters  linksession.Stats  `json:"counters"`
	Held      SessionHeldCounter `json:"host_frames"`
}

// SessionAgreed are the parameters in force.
type SessionAgreed struct {
	Window   uint32 `json:"window_frames"`
	Lanes    uint8  `json:"lanes"`
	MTU      uint16 `json:"mtu"`
	SpeedBps uint64 `json:"speed_bps"` // the hello carries Mbit/s
	TxSeq    uint32 `json:"tx_initial_seq"`
	RxSeq    uint32 `json:"rx_initial_seq"`
	// Integrity is the check both ends' link frames carry; FastSend and
	// PeerFastSend say which end sends by the kernel's send fast path
	// (they need not agree).
	Integrity    string `json:"integrity"`
	FastSend     bool   `json:"fast_send"`
	PeerFastSend bool   `json:"peer_fast_send"`
}

// SessionHeldCounter counts host frames that met a session that was not up.
type SessionHeldCounter struct {
	Dropped uint64 `json:"dropped_waiting"`
	Passed  uint64 `json:"passed_unprotected"`
}

// Snapshot returns a copy.
func (s *SessionStats) Snapshot() SessionSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.v
	v.Agreed = ptr.Copy(v.Agreed)
	return v
}

// LinkSess is the link session of a pipeline with one link port (lg, fec):
// the session itself, the lanes it agreed, and what happened to the host
// frames that met it not up. A pipeline embeds it and calls sessionRx,
// SessionPoll and admitHost from its Receive and Poll.
type LinkSess struct {
	portSession
	queue *dataplane.ClassQueues
	stats *SessionStats
	// peers names the modes whose peer fits this end, for warnings.
	peers                  string
	blockedSince, warnedAt int64
	notUpSince             int64 // when the session was first found not up
	// restartAt is when the peer last restarted; turnsSaid: two peers
	// taking turns was logged.
	restartAt               int64
	turnsSaid               bool
	sessDropped, sessPassed uint64
	conf                    SessionConfig
}

// SessionConfig is the link session's configuration on a link port (Mech
// "session"), shared by the modes that run one there (lg, lgnb, monitor,
// fec): the directions this end protects, the hosts' MTU it announces, and
// how host frames wait for it. Zero fields take the defaults
// (SessionDefaults).
type SessionConfig struct {
	// Protect says which directions of the link this end protects: "both"
	// (default), "tx" (frames this end sends), "rx" (frames it receives).
	// Both ends of a link must agree (tx here, rx there). Mode fec
	// protects both.
	Protect string
	// MTU is the hosts' MTU, announced in the session; default: the host
	// ports' largest, else 1500.
	MTU int
	// SessionWait is how long host frames wait for the link session to come
	// up (default 200 ms); after that they are dropped (counted), or with
	// SessionPass sent unprotected.
	SessionWait time.Duration
	SessionPass bool
	// SessionHold (default 5 s) is how long host frames wait instead while
	// an agreement stands: the link port down, the peer silent, or a
	// restarted peer not yet agreed. An outage shorter than this is a
	// pause to the hosts, not a loss.
	//
	// SessionKeep is how many of the newest frames of each class stay
	// queued when the others are dropped (default 16; negative keeps
	// none), if they arrived in the second half of the wait, for up to
	// SessionHold of the session not being up. A TCP sender backs its
	// retransmissions off while the session is down: the latest one kept
	// crosses as soon as it is up, rather than the next one seconds later.
	SessionKeep int
	SessionHold time.Duration
}

// SessionConfigOf is c's link session configuration (Mech "session").
func SessionConfigOf(c *dataplane.Config) *SessionConfig {
	return dataplane.Mech[SessionConfig](c, "session")
}

// SessionDefaults checks c's link session configuration and fills its
// defaults.
func SessionDefaults(c *dataplane.Config) error {
	s := SessionConfigOf(c)
	if s.Protect == "" {
		s.Protect = "both"
	}
	if s.Protect != "both" && s.Protect != "tx" && s.Protect != "rx" {
		return fmt.Errorf("dataplane: --lg-protect %q: want both, tx or rx", s.Protect)
	}
	if s.MTU == 0 {
		s.MTU = dataplane.PortsMaxMTU(c.HostPorts)
	}
	s.MTU = cmp.Or(s.MTU, 1500)
	s.SessionWait = cmp.Or(s.SessionWait, DefaultSessionWait)
	s.SessionKeep = cmp.Or(s.SessionKeep, DefaultSessionKeep)
	s.SessionHold = cmp.Or(s.SessionHold, DefaultSessionHold)
	return nil
}

func init() {
	dataplane.RegisterFlags("session", dataplane.Flags{Declare: declareSessionFlags})
}

// declareSessionFlags declares the link session's flags (--session-*)
// into f, filling c's SessionConfig. (--lg-protect is LinkGuardian's.)
func declareSessionFlags(f *pflag.FlagSet, c *dataplane.Config) {
	s := SessionConfigOf(c)
	f.DurationVar(&s.SessionWait, "session-wait", 0, "lg/lgnb/monitor: how long host frames wait for a link session never agreed (default 200ms); then dropped, or sent with --session-pass")
	f.BoolVar(&s.SessionPass, "session-pass", false, "lg/lgnb/monitor: send host frames unprotected when the link session is not up after --session-wait (default: drop them)")
	f.IntVar(&s.SessionKeep, "session-keep", 0, "lg/lgnb/monitor: when waiting host frames are dropped, keep the newest N of each class (default 16; -1: none)")
	f.DurationVar(&s.SessionHold, "session-hold", 0, "lg/lgnb/monitor: how long host frames wait while an agreed session is down (port down, peer restarting) (default 5s)")
}

// StartSession starts the link session of w's link port over link, offering
// window frames and prot (fastSend: the kernel's send fast path runs); host
// frames wait in queue while it is not up; c is the session's configuration.
func (s *LinkSess) StartSession(w *dataplane.Worker, c SessionConfig, link linksession.Link, window int, prot linksession.Protect, fastSend bool, queue *dataplane.ClassQueues, stats *SessionStats, peers string) error {
	lc := &w.Config().Link
	o := offer(lc, window, w.Port(dataplane.PortLink).Lanes(), c.MTU, prot) // the worker's lanes: 1 with several (workers.go)
	o.FastSend = fastSend
	*s = LinkSess{queue: queue, stats: stats, peers: peers, conf: c}
	if err := s.startPort(w, dataplane.PortLink, dataplane.LanePrio, linksession.Config{
		LocalMAC: w.Node().LinkMAC(),
		PeerMAC:  lc.PeerMAC,
		Offer:    o,
		Policy:   linksession.Policy{WaitUpTo: int64(c.SessionWait), HoldUpTo: int64(c.SessionHold), PassUnprotected: c.SessionPass},
	}, link); err != nil {
		return err
	}
	s.PublishSession()
	return nil
}

// SessionRx hands a session frame to the session, applies what it decided
// that every pipeline shares (lanes, logs, the peer's MAC) and returns the
// session's events.
func (s *LinkSess) SessionRx(now int64, b []byte) linksession.Event {
	replaced := s.Sess.Stats.Replaced
	ev := s.Sess.Receive(now, b)
	cfg := s.w.Config()
	log := cfg.Logger
	// An epoch replaced by a restart of the peer still speaking a second
	// later is no restart: two sessions with different epochs share the
	// peer's MAC. Most likely the other end runs several workers (one
	// session per queue) and this one fewer, or the reverse.
	if s.Sess.Stats.Replaced != replaced && now-s.restartAt >= int64(time.Second) {
		s.sayTurns()
	}
	if ev == 0 {
		return 0
	}
	a, _ := s.Sess.Agreed()
	if ev&linksession.EvPeerRestart != 0 {
		log.Warn("link session: the peer restarted; link state reset, nothing from before is delivered",
			"dev", cfg.LinkPort, "peer_epoch", a.PeerEpoch)
		// A peer that "restarts" again within a second is two peers
		// taking turns (as above).
		if s.restartAt != 0 && now-s.restartAt < int64(time.Second) {
			s.sayTurns()
		}
		s.restartAt = now
	}
	if ev&linksession.EvReset != 0 {
		s.agreedLanes(a)
	}
	if ev&linksession.EvMismatch != 0 {
		SayMismatch(log, cfg.LinkPort, a)
	}
	if ev&linksession.EvUp != 0 {
		// From now on link control is accepted only from this peer
		// (session offers excepted: a replaced peer can still agree).
		var peer [6]byte
		copy(peer[:], b[6:12])
		if err := s.w.Node().Link().Program().SetPeerMAC(peer); err != nil {
			log.Warn("link session: cannot restrict link control to the peer", "dev", cfg.LinkPort, "err", err)
		}
		log.Info("link session up", "dev", cfg.LinkPort, "peer", net.HardwareAddr(peer[:]).String(), "epoch", a.Epoch, "peer_epoch", a.PeerEpoch,
			"window", a.Window, "lanes", a.Lanes, "mtu", a.MTU, "speed_bps", uint64(a.Speed)*1e6,
			"tx_seq", uint32(a.TxSeq), "rx_seq", uint32(a.RxSeq))
		if a.PeerCaps.Known && a.PeerCaps.FastSend != a.LocalCaps.FastSend {
			// The frames on the wire are the same either way
			// (linkguardian/fasttx.go, step 6): only said.
			log.Info("link session: one end sends by the kernel's send fast path, the other by its worker; they interoperate",
				"dev", cfg.LinkPort, "fast_send", a.LocalCaps.FastSend, "peer_fast_send", a.PeerCaps.FastSend)
		}
		if a.MTU < uint16(min(s.conf.MTU, 1<<16-1)) {
			log.Warn("link session: the peer's host MTU is smaller than this end's; larger frames are dropped at its host port",
				"dev", cfg.LinkPort, "peer_mtu", a.MTU)
		}
	}
	s.PublishSession()
	return ev
}

// LinkRx is a pipeline with one link port as ReceiveLink hands it its
// link's frames.
type LinkRx interface {
	// OnPFC takes a PAUSE/PFC frame; OnSession the events of a session
	// frame the session took (SessionRx); OnCore a frame for the
	// mechanism's core, which owns it from then on.
	OnPFC(now int64, b []byte)
	OnSession(now int64, ev linksession.Event)
	OnCore(now int64, f link.Frame)
}

// ReceiveLink hands a batch from the link port to rx: MAC control frames,
// session frames (through SessionRx), and the frames the session accepts
// for the core; it drops the others (no agreement with their sender yet,
// whose numbering means nothing here, or plain frames from a peer with
// another --integrity: counted by the session) and releases every frame
// but the core's.
func (s *LinkSess) ReceiveLink(now int64, descs []xdp.Desc, tx *dataplane.Tx, rx LinkRx) {
	for _, d := range descs {
		b := s.w.Bytes(d.Addr, int(d.Len))
		if t, ok := seqhdr.FrameType(b); pfc.IsMACControl(b) {
			rx.OnPFC(now, b)
		} else if ok && t.IsSession() {
			rx.OnSession(now, s.SessionRx(now, b))
		} else if ok && s.Sess.AcceptLink(now) || !ok && s.Sess.AcceptPlain() {
			rx.OnCore(now, link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)})
			continue
		}
		tx.Release(d.Addr)
	}
}

// MismatchText names, flag by flag, the settings of the peer that do not
// fit this end's (a.Conflict): "--integrity csum here, crc32c at the peer".
func MismatchText(a linksession.Agreed) string {
	var parts []string
	if a.Conflict&linksession.ConflictProtect != 0 {
		parts = append(parts, protectFlags(a.Local)+" here, "+protectFlags(a.Peer)+" at the peer")
	}
	if a.Conflict&linksession.ConflictIntegrity != 0 {
		parts = append(parts, integrityConflict(a))
	}
	return strings.Join(parts, "; ")
}

// protectFlags is what an end's protect mode says of its --mode and
// --lg-protect (the mode of an end that does not sequence what it receives
// is not said: lg, lgnb and monitor send alike).
func protectFlags(p linksession.Protect) string {
	if p.FEC {
		return "--mode fec"
	}
	mode := "lg|lgnb|monitor"
	if p.Rx {
		mode = [...]string{"lg", "lgnb", "monitor", "lg|lgnb|monitor"}[min(p.RxMode, 3)]
	}
	prot := "none"
	switch {
	case p.Tx && p.Rx:
		prot = "both"
	case p.Tx:
		prot = "tx"
	case p.Rx:
		prot = "rx"
	}
	return "--mode " + mode + " --lg-protect " + prot
}

// integrityConflict names the two ends' integrity checks.
func integrityConflict(a linksession.Agreed) string {
	return fmt.Sprintf("--integrity %v here, %v at the peer", a.LocalCaps.Integrity, a.PeerCaps.Integrity)
}

// SayMismatch logs what of the peer's settings does not fit this end's, a
// line per setting, naming the flags at both ends.
func SayMismatch(log *slog.Logger, dev string, a linksession.Agreed) {
	if a.Conflict&linksession.ConflictProtect != 0 {
		log.Error("link session: "+protectFlags(a.Local)+" here, "+protectFlags(a.Peer)+" at the peer: they do not fit (both ends must run fec, or both lg/lgnb/monitor; a direction must be sequenced by its sender exactly when its receiver expects it: tx here goes with rx there); nothing is sequenced until they do",
			"dev", dev)
	}
	if a.Conflict&linksession.ConflictIntegrity != 0 {
		log.Error("link session: "+integrityConflict(a)+"; nothing is delivered until both ends run the same --integrity", "dev", dev)
	}
}

// sayTurns logs, once, that two sessions with different epochs answer on
// this link.
func (s *LinkSess) sayTurns() {
	if s.turnsSaid {
		return
	}
	s.turnsSaid = true
	cfg := s.w.Config()
	cfg.Logger.Error("link session: two sessions with different epochs answer on this link; do both ends run the same --workers? (with several, each queue runs its own session); nothing is delivered until they agree",
		"dev", cfg.LinkPort, "local_workers", cfg.Workers)
}

// sayOneLane logs, once per link port, that its session agreed on one lane
// although the port has a priority lane: the peer's link port has a single
// TX queue (or a single queue), so link control goes ahead of data within
// the data lane at both ends. (A port with one lane itself says so at
// start: Dataplane.logPorts.)
func sayOneLane(log *slog.Logger, dev string, local, agreed int, said *bool) {
	if *said || local < 2 || agreed >= 2 {
		return
	}
	*said = true
	log.Info("link session agreed on one lane: the peer's link port has a single TX queue; no priority lane on this link, link control is placed ahead of data within the data lane",
		"dev", dev, "local_lanes", local)
}

// SessionPoll runs the session's timers, sends its frames on the priority
// lane, follows the link port's state (down: the session waits; up: it
// agrees again) and returns its next deadline.
func (s *LinkSess) SessionPoll(now int64, tx *dataplane.Tx) int64 {
	s.followPort(now)
	timeouts := s.Sess.Stats.PeerTimeouts
	next := s.Sess.Poll(now)
	if s.Sess.Stats.PeerTimeouts != timeouts {
		s.w.Log().Warn("link session: the peer has been silent too long and is taken for dead; host frames wait for it (--session-wait), then follow --session-pass",
			"dev", s.w.Config().LinkPort, "silent_for", time.Duration(s.Sess.DeadAfter()).String())
		s.PublishSession()
	}
	for next <= now {
		a, ok := tx.Alloc()
		if !ok {
			return now + int64(dataplane.MinTimerSleep)
		}
		n := s.Sess.Frame(now, s.w.Bytes(a, seqhdr.MinFrameLen))
		if n == 0 {
			tx.Release(a)
			break
		}
		tx.Send(dataplane.PortLink, s.CtrlLane(), a, n)
		tx.Release(a)
		next = s.Sess.Poll(now)
	}
	return next
}

// AdmitHost applies the session's policy to the host frames queued while
// it is not up, and reports whether they may go to the LinkGuardian port.
// Frames waiting longer than the policy allows are dropped or sent as they
// are (unprotected); the wait is measured from when the session was first
// found not up with frames queued.
func (s *LinkSess) AdmitHost(now int64, tx *dataplane.Tx) (ok bool, next int64) {
	if s.Sess.State() == linksession.Up {
		s.blockedSince, s.notUpSince = 0, 0
		return true, maxDeadline
	}
	if s.notUpSince == 0 {
		s.notUpSince = now
	}
	if s.queue.Empty() {
		s.blockedSince = 0
		return false, maxDeadline
	}
	if s.blockedSince == 0 {
		s.blockedSince = now
	}
	switch s.Sess.Admit(now, s.blockedSince) {
	case linksession.Send:
		return true, maxDeadline
	case linksession.Wait:
		return false, s.Sess.WaitDeadline(s.blockedSince)
	case linksession.Pass:
		for {
			class, ok := s.queue.Head(now)
			if !ok || tx.Space(dataplane.PortLink, dataplane.LaneData) <= 0 {
				break
			}
			f := s.queue.Front(class)
			s.queue.Pop(class)
			tx.Send(dataplane.PortLink, dataplane.LaneData, uint64(f.H), f.Len)
			tx.Release(uint64(f.H))
			s.sessPassed++
		}
	default: // Drop
		keep := s.conf.SessionKeep
		if now-s.notUpSince >= int64(s.conf.SessionHold) {
			keep = 0
		}
		s.sessDropped += uint64(s.queue.DropOldest(max(keep, 0), keptSince(s.notUpSince, now), tx.Release))
		if now-s.warnedAt > int64(time.Second) {
			s.warnedAt = now
			why := "is the other end running linkfabric " + s.peers + "?"
			if a, _ := s.Sess.Agreed(); s.Sess.State() == linksession.Mismatch {
				why = "the peer's settings do not fit: " + MismatchText(a)
			}
			s.w.Log().Warn("link session not up: host frames dropped; "+why,
				"dev", s.w.Config().LinkPort, "state", s.Sess.State().String(), "waited", time.Duration(now-s.blockedSince).String(), "dropped", s.sessDropped)
		}
	}
	s.blockedSince = 0
	return false, maxDeadline
}

// PublishSession copies the session's state for /stats.json.
func (l *LinkSess) PublishSession() {
	s := l.Sess
	v := SessionSnapshot{State: s.State().String(), Epoch: s.Epoch(), Counters: s.Stats,
		Held: SessionHeldCounter{Dropped: l.sessDropped, Passed: l.sessPassed}}
	if a, ok := s.Agreed(); ok {
		v.PeerEpoch = a.PeerEpoch
		v.Agreed = &SessionAgreed{Window: a.Window, Lanes: a.Lanes, MTU: a.MTU, SpeedBps: uint64(a.Speed) * 1e6,
			TxSeq: uint32(a.TxSeq), RxSeq: uint32(a.RxSeq), Integrity: a.LocalCaps.Integrity.String(),
			FastSend: a.LocalCaps.FastSend, PeerFastSend: a.PeerCaps.FastSend}
	} else if a.Conflict != 0 {
		v.PeerEpoch = a.PeerEpoch
		v.Mismatch = MismatchText(a)
	}
	st := l.stats
	st.mu.Lock()
	st.v = v
	st.mu.Unlock()
}
