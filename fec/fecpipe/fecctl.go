package fecpipe

import (
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksession"
	"github.com/linkfabric/linkfabric/link/lossmon"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

// fecCtl is RAIL's coding on one link as both mode fec (fecpipe.go) and
// --cells-link-mode fec under the cells (cellfec.go) run it: the fec Sender and
// Receiver, the receiver's loss monitors, the reports exchanged in the
// link session, and the link policy that picks the sender's n (or
// replication) from the loss the peer reports.
//
// Loss and policy. The Receiver's counters feed a loss monitor (observe,
// every fecObserve): per transmission (copies corrected for,
// fec.PerTransmission) and loss runs. This end reports the rate, mean
// run and its own sender's n and copies in its session frames
// (seqhdr.Report); the peer's report is the loss of this end's outgoing
// direction, from which the link policy (fec.LinkTable) decides; the
// decision is logged when it changes and, unless n was fixed or given a
// loss, applied to the Sender.
type fecCtl struct {
	cfg *Config
	snd *fec.Sender
	rcv *fec.Receiver

	auto  bool   // the policy's decisions are applied
	basis string // Snapshot.Basis
	// What decide logs: where, and what cannot be applied here.
	log     *slog.Logger
	dev     string
	cannot  string
	changes *atomic.Uint64

	// The receiver's loss monitors: per transmission, and loss runs (a run
	// is a "received" sample, its missing numbers "lost" ones, so the
	// window's totals give the mean run). last is the Receiver's counters
	// at the last observation; peerCopies the peer sender's copies, from
	// its report.
	mon, runs  *lossmon.Monitor
	last       fec.ReceiverStats
	peerCopies int

	peer    seqhdr.Report // the peer's last report
	peerOK  bool
	policy  fec.LinkState
	decided bool
	note    string
	rxLoss  float64
	rxBurst float64
	rxOK    bool
}

// ObserveInterval is how often the monitors are fed and the statistics published.
const ObserveInterval = int64(20 * time.Millisecond)

// init sets up the coding for c: sc and rc are the Sender's and Receiver's
// configurations but for N and Copies, which the protection in force
// gives. cannot ends the note logged for a choice the caller cannot apply
// (lg, exclude).
func (k *fecCtl) init(c *Config, sc fec.SenderConfig, rc fec.ReceiverConfig, mem link.Memory, log *slog.Logger, dev, cannot string, changes *atomic.Uint64) error {
	*k = fecCtl{cfg: c, auto: !c.Fixed && c.Loss == 0, log: log, dev: dev, cannot: cannot, changes: changes,
		peerCopies: 1, rxLoss: math.NaN(), rxBurst: math.NaN()}
	switch {
	case c.Fixed:
		k.basis = "fixed"
	case c.Loss > 0:
		k.basis = "given loss"
	default:
		k.basis = "measured loss"
	}
	start := c.initial()
	sc.N, sc.Copies = nCopies(start.Choice)
	var err error
	if k.snd, err = fec.NewSender(sc, mem); err != nil {
		return err
	}
	if k.rcv, err = fec.NewReceiver(rc, mem); err != nil {
		return err
	}
	if k.mon, err = lossmon.New(lossmon.Config{Window: int64(c.Window), MinSamples: c.MinFrames}); err != nil {
		return err
	}
	if k.runs, err = lossmon.New(lossmon.Config{Window: int64(c.Window)}); err != nil {
		return err
	}
	if c.Loss > 0 {
		k.policy, k.decided = start, true // the decision for the given rate
	}
	return nil
}

// TxNext and Reset are the Sender and Receiver as the link session resets
// them (linksession.Link).
func (k *fecCtl) TxNext() seqhdr.Seq { return k.snd.Next() }

func (k *fecCtl) Reset(now int64, tx, rx seqhdr.Seq) {
	k.snd.Reset(tx)
	k.rcv.Reset(now, rx)
}

// observe feeds the Receiver's new counts to the monitors, puts the measured
// rate in this end's report, and runs the policy on the peer's report.
func (k *fecCtl) observe(now int64, sess *linksession.Session) {
	r := &k.rcv.Stats
	rx, lost := fec.PerTransmission(k.peerCopies, r.Span-k.last.Span, r.Frames-k.last.Frames)
	k.mon.Observe(now, rx, lost)
	k.runs.Observe(now, r.Holes-k.last.Holes, r.Gaps-k.last.Gaps)
	k.last = *r
	k.rxLoss, k.rxOK = k.mon.Rate(now)
	runs, missing := k.runs.Totals(now)
	k.rxBurst = fec.MeanBurst(missing, runs)
	rep := seqhdr.Report{RxLoss: seqhdr.RxLossUnknown, TxN: uint8(k.snd.N()), TxCopies: uint8(k.snd.Copies())}
	if k.rxOK {
		rep.RxLoss = uint32(min(k.rxLoss, 1) * 1e9)
	}
	if k.rxBurst > 0 {
		rep.RxBurst = uint16(min(k.rxBurst*256, math.MaxUint16))
	}
	sess.SetReport(rep)

	peer, ok := sess.PeerReport()
	if !ok || (k.peerOK && peer == k.peer) {
		return
	}
	k.peer, k.peerOK = peer, true
	k.peerCopies = max(int(peer.TxCopies), 1)
	if peer.RxLoss != seqhdr.RxLossUnknown {
		burst := math.NaN()
		if peer.RxBurst > 0 {
			burst = float64(peer.RxBurst) / 256
		}
		k.decide(now, float64(peer.RxLoss)/1e9, burst)
	}
}

// decide runs the link policy on the outgoing direction's measured loss,
// logs a change and applies it when the policy is in charge.
func (k *fecCtl) decide(now int64, rate, burst float64) {
	prev := k.policy
	k.policy = k.cfg.Table.DecideAt(now, rate, burst, prev)
	ch := k.policy.Choice
	changed := !k.decided || ch != prev.Choice
	k.decided = true
	k.note = ""
	switch {
	case !k.auto:
		k.note = "not applied: the protection was fixed (--fec-n) or chosen for --fec-loss"
	case !applicable(ch):
		k.note = fmt.Sprintf("not applied: fec cannot do %v; the sender keeps %v (%s)", ch, k.inForce(), k.cannot)
	default:
		n, c := nCopies(ch)
		if n != k.snd.N() {
			k.snd.SetN(n) // n ≤ fec.MaxN and the buffer was checked at NewSender
		}
		if c != k.snd.Copies() {
			k.snd.SetCopies(c)
		}
	}
	if changed {
		k.changes.Add(1)
		k.log.Info("fec: link policy", "dev", k.dev, "from", prev.Choice.String(), "to", ch.String(),
			"tx_loss_rate", rate, "mean_burst", burst, "target", k.cfg.Target, "in_force", k.inForce(), "note", k.note)
	}
}

// inForce is the Sender's protection as a policy choice would name it.
func (k *fecCtl) inForce() fec.LinkChoice {
	n, c := k.snd.N(), k.snd.Copies()
	switch {
	case n > 0:
		return fec.LinkChoice{Action: fec.ActFEC, N: n}
	case c > 1:
		return fec.LinkChoice{Action: fec.ActReplicate, Copies: c}
	}
	return fec.LinkChoice{Action: fec.ActNone}
}

// snapshot fills the coding's part of v.
func (k *fecCtl) snapshot(v *Snapshot) {
	v.Sender, v.Receiver = k.snd.Stats, k.rcv.Stats
	v.N, v.Copies, v.Basis = k.snd.N(), k.snd.Copies(), k.basis
	v.WaitNs = k.rcv.Wait()
	if k.cfg.Immediate {
		v.WaitNs = 0
	}
	v.RxLoss, v.RxMeasured = finite(k.rxLoss), k.rxOK
	v.RxBurst = finite(k.rxBurst)
	v.TxMeasured = k.peerOK && k.peer.RxLoss != seqhdr.RxLossUnknown
	v.TxLoss, v.TxBurst = 0, 0
	if v.TxMeasured {
		v.TxLoss, v.TxBurst = float64(k.peer.RxLoss)/1e9, float64(k.peer.RxBurst)/256
	}
	v.Policy = Policy{Target: k.cfg.Target, State: k.policy, Note: k.note, Changes: k.changes.Load()}
	if k.decided {
		v.Policy.Decision = k.policy.Choice.String()
		v.Policy.Applied = k.auto && applicable(k.policy.Choice)
	}
}

// finite is v, or 0 for NaN.
func finite(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
