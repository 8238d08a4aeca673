package lgpipe

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/link/linkpipe"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/metrics"
	"github.com/linkfabric/linkfabric/pfc"
)

const (
	// ModeLG is LinkGuardian: retransmission with in-order delivery.
	ModeLG dataplane.Mode = "lg"
	// ModeLGNB is LinkGuardianNB: retransmission, delivery as frames come.
	ModeLGNB dataplane.Mode = "lgnb"
	// ModeMonitor sequences frames and measures the link's loss from the
	// gaps, but retransmits nothing (sequenced, unprotected). With Auto the
	// policy can switch protection on.
	ModeMonitor dataplane.Mode = "monitor"
)

// initialRenotify is the re-notification interval before any retransmission
// delay has been measured.
const initialRenotify = int64(2 * time.Millisecond)

// minAckNoTimeout is the floor of the default ackNoTimeout. The paper sets
// the timeout just above the largest retransmission delay (µs in a switch).
// In software the delay has a long tail from process scheduling, and the
// delays of frames that arrive after their hole was skipped are never
// measured, so a timeout tuned to the observed maximum gives up on
// retransmissions already on their way. Measured on a two-core machine: 9-68
// ms in steady state; up to 372 ms in the first seconds of a flood (the
// receiving worker reads its link socket more slowly than frames arrive, so
// a retransmission waits behind up to a credit window of them, and with both
// workers and the traffic on two cores a notification waits that long for
// its answer), where a 100 ms floor gave up on 67-2,026 frames per run that
// were still on their way and 400 ms on none (stress at 10⁻² both ways,
// docs/results.md). Giving up late only delays in-order delivery in the rare
// case that the sender cannot answer at all (every retransmission round
// spent; a restarted sender is a new session, which resets the receiver
// without waiting); giving up early loses a frame. Re-notification stays
// fast (tuned to the measured delay).
const minAckNoTimeout = int64(400 * time.Millisecond)

// Config configures LinkGuardian on the link port (modes lg and lgnb). Zero
// fields take the defaults.
//
// The link session's settings, among them the directions this end
// protects (--lg-protect), are linkpipe.SessionConfig's.
type Config struct {
	// TargetLoss is the effective loss rate to reach (Equation 2); default 1e-8.
	TargetLoss float64
	// LinkLoss, if set, is the link's loss rate used for N; otherwise N comes
	// from the loss rate measured from loss notifications (moving window),
	// starting at Copies.
	LinkLoss float64
	// Copies forces N (retransmitted copies per lost frame); 0 derives it.
	Copies int
	// MaxCopies caps a measured N (default 4). The sender measures loss from
	// notifications, which also count frames its peer dropped for want of
	// CPU (RX ring full); without a cap, more copies can cause more such
	// drops and feed back.
	MaxCopies int
	// AckTimeout, if set, fixes ackNoTimeout; otherwise it follows the
	// measured maximum retransmission delay (Appendix B.1): renotify after
	// 1.5× it, give up after three such intervals, but not before 400 ms
	// (see minAckNoTimeout).
	AckTimeout time.Duration
	// PauseThreshold and ResumeThreshold are reorder-buffer bytes
	// (Algorithm 2). Unless either is given, they follow Appendix B.1 from
	// measurements: resume = t_flight_resume × drain rate, where
	// t_flight_resume (resume decided → traffic arrives again) is taken as
	// the p99 retransmission delay (the same path: a control frame to the
	// sender, a data frame back) and the drain rate as the peak rate of
	// frames delivered to the host port; pause = resume + 2 MTU. The resume
	// threshold stays between 64 KiB and the TX buffer's worth of full-size
	// frames less 2 MTU (the credit window bounds the reorder buffer, so a
	// higher threshold could never be reached). Until enough is measured it
	// is 256 KiB.
	PauseThreshold, ResumeThreshold int
	// MTU is the hosts' MTU (for the pause hysteresis, and announced in the
	// link session); default: the session's (linkpipe.SessionConfig.MTU).
	MTU int
	// TxBuffer (frames, power of two) bounds unacknowledged frames; the
	// reorder window is the same size. It acts as a credit limit (frames
	// the peer has not processed are not ACKed), so by default it is what
	// the peer's RX ring holds: the whole ring when the link has a priority
	// lane (the data lane then carries only credited data, dummies and
	// explicit ACKs), half of it when retransmitted copies and
	// notifications share the ring (defaultTxBuffer).
	TxBuffer int
	// PFCClass (0-7): a PAUSE/PFC frame received on the link port that
	// pauses this class also pauses LinkGuardian's whole sender, as a
	// peer's 802.1Qbb backpressure did before pause/resume became link-header
	// frames. Every class such a frame names is paused in the class queues
	// either way.
	PFCClass int

	// AckDelay is how long an ACK may wait for reverse data to carry it
	// before an explicit ACK goes. By default it follows the measured
	// retransmission delay (tunedAckDelay; half of DummyWaitMax until
	// measured), and an ACK goes at once when a quarter of the peer's
	// credit window is unacknowledged. DummyInterval is the least time the sender waits
	// after its last data frame before the first dummy (default 10 µs);
	// DummyWaitMax the most (default 500 µs): in between, the sender
	// waits as long as the ACK of its last frame takes (learned), so that
	// no dummy goes ahead of an ACK that is on its way.
	AckDelay, DummyInterval, DummyWaitMax time.Duration
	// DummyCopies is how many dummies each emission sends (default 1). Under
	// bursty loss one dummy can be lost with the tail frame it should
	// expose; send more (§5).
	DummyCopies int
	// Auto lets the receiver's loss monitor switch this end's receiving
	// direction between monitor, lg and lgnb by Policy (Appendix C, §5
	// "Automatic fallback"), starting from the configured mode.
	Auto bool
	// Policy is the protection policy used with Auto; zero means
	// linkguardian.DefaultPolicy.
	Policy linkguardian.Policy
	// MonitorWindow is the loss monitor's moving window; default 10s.
	MonitorWindow time.Duration

	// fixedCopies: N was given (Copies or LinkLoss), not measured.
	fixedCopies bool
	// fixedThresholds: a pause or resume threshold was given.
	fixedThresholds bool
	// credit is the sender's credit window (creditWindow), set with the TX
	// buffer once the link's queues are known.
	credit int
	// kernelTx says LinkGuardian's send fast path runs (prepareLG: the
	// configuration allows it); txWhy is why it cannot ("" if it can,
	// lgTxBlocked), txFix whether the user can change that on the link
	// port.
	kernelTx bool
	txWhy    string
	txFix    bool
}

// Resume thresholds: the initial one, and the least a measurement may set.
const (
	initialResume = 256 << 10
	minResume     = 64 << 10
)

// untunedThresholds sets the pause and resume thresholds the receiver starts
// with, until retransmission delays are measured (tune), once the credit
// window is known. With the kernel's send path (fastSend) that is the
// highest tune may set (resumeCeiling), so that before a flight time is
// measured the receiver pauses the sender only when the credit window could
// fill its reorder buffer; otherwise defaults' initialResume stays. A pause
// makes the sender's worker claim sending from the kernel, and under a
// saturating flow it seldom gets a moment to give it back: on the 2-core veth pair at loss 0, where few
// recoveries are ever measured, 256 KiB paused bulk TCP flows after a slow
// recovery of a veth ring overflow and left 3 runs of 8 at 2.5-3.3 Gbit/s
// with sending at the worker, against none of 8 with this (docs/results.md,
// "Figures behind LinkGuardian's defaults"). Thresholds given
// (fixedThresholds) are kept.
func (c *Config) untunedThresholds(fastSend bool) {
	if c.fixedThresholds || !fastSend {
		return
	}
	c.ResumeThreshold = resumeCeiling(c.frameLen(), c.credit)
	c.PauseThreshold = linkguardian.PauseThreshold(c.ResumeThreshold, c.frameLen())
}

// frameLen is the bytes a host frame of MTU takes on the wire (Ethernet
// header and FCS), what the thresholds are counted in.
func (c *Config) frameLen() int { return c.MTU + 18 }

// DefaultTxBuffer is the TX buffer (and reorder window) when none is given:
// the ring size with wholeRing (a link with a priority lane), else half of
// it (see TxBuffer). With the kernel's send path (lgTxWanted) the dataplane
// asks for the whole ring on any link, and a ring twice the usual size
// (defaultRingSize): once the kernel's window is full, sending goes to the
// worker, which under a saturating flow seldom gets a moment to hand it
// back. A larger window makes that rarer (bulk TCP at loss 0 with
// --integrity off: stuck in 2 of 15 runs with 2048 frames, 8 of 27 with
// 1024; with --integrity csum, the window ran out in 11 of 29 runs with a
// 2048-frame ring, in none of 23 with 4096: docs/results.md, "Figures
// behind LinkGuardian's defaults").
// The window is still at most 7/8 of the peer's RX ring (creditWindow), and
// the session agrees the smaller of the two ends' windows.
//
// Measured (goodput, iperf3 cubic at loss 1e-2 on this 2-core machine): the
// retransmission delay of a software link under TCP load has p50 ≈ 3 ms and
// p99 ≈ 7 ms, all of it waiting for a CPU; with 1024 frames (1.5 MB) the
// window was full for 3 s of 5 and lg kept 0.67–0.77× of its loss-free
// goodput; with 2048 frames 0.88–0.94×.
func DefaultTxBuffer(ringSize uint32, wholeRing bool) int {
	if wholeRing {
		return int(max(ringSize, 2))
	}
	return int(max(ringSize/2, 2))
}

// defaultRingSize is --ring-size when none is given: 2048, or 4096 with
// LinkGuardian's send fast path (fastSend), whose credit window is then
// 3584 frames (creditWindow) rather than 1792. On the 2-core veth pair a
// bulk TCP flow had 1792 frames (2.7 MB) unacknowledged now and then,
// which gave sending to the worker at about half the kernel's speed until
// the flow paused (defaultTxBuffer); Linux's default TCP send buffer
// (tcp_wmem, at most 4 MB with its overhead) keeps one flow below 3584
// frames in flight. The cost is memory: each socket's UMEM is 2 ×
// --ring-size frames (32 MB of 4096-byte frames).
func defaultRingSize(fastSend bool) uint32 {
	if fastSend {
		return 4096
	}
	return 2048
}

// CreditWindow is the most frames the sender leaves unacknowledged: the TX
// buffer, but never more than seven eighths of the peer's RX ring. The last
// eighth is for the frames that take no credit (dummies and explicit ACKs):
// with a window of the whole ring, a stalled peer's ring filled with data
// and those frames pushed data out (measured at loss 0: 408 data frames
// dropped as RX ring full in 5 s of iperf3).
func CreditWindow(txBuffer int, ringSize uint32) int {
	return max(min(txBuffer, int(ringSize-ringSize/8)), 1)
}

// dummyWaitMax is the sender's DummyWaitMax in force (ns).
func (c *Config) dummyWaitMax() int64 {
	if c.DummyWaitMax > 0 {
		return int64(c.DummyWaitMax)
	}
	return linkguardian.DefaultSenderConfig().DummyWaitMax
}

// ackEvery is the receiver's AckEvery for a peer sender's credit window of
// credit frames: a quarter of it, so that coalesced ACKs leave the sender
// three quarters of its window for the time they take to cross (0: the
// core's default, a quarter of the reorder window).
func ackEvery(credit int) int { return credit / 4 }

// ConfigOf is c's LinkGuardian configuration (Mech "lg"): modes lg,
// lgnb and monitor, the link session of mode fec and the layers under the
// cells.
func ConfigOf(c *dataplane.Config) *Config { return dataplane.Mech[Config](c, "lg") }

// Defaults fills LinkGuardian's defaults for mode, and its link
// session's. The hosts' frames are what lg sizes its pause hysteresis by
// and announces in the link session (the host ports' largest MTU; 0 if
// not found: 1500).
func Defaults(c *dataplane.Config, mode dataplane.Mode) error {
	if err := linkpipe.SessionDefaults(c); err != nil {
		return err
	}
	if lg := ConfigOf(c); lg.MTU == 0 {
		lg.MTU = linkpipe.SessionConfigOf(c).MTU
	}
	return ConfigOf(c).defaults(mode)
}

func (c *Config) defaults(mode dataplane.Mode) error {
	if c.TargetLoss == 0 {
		c.TargetLoss = 1e-8
	}
	if c.TargetLoss <= 0 || c.TargetLoss >= 1 || c.LinkLoss < 0 || c.LinkLoss >= 1 {
		return fmt.Errorf("dataplane: loss rates must be in (0, 1): target %g, link %g", c.TargetLoss, c.LinkLoss)
	}
	c.fixedCopies = c.Copies > 0 || c.LinkLoss > 0
	c.MaxCopies = cmp.Or(c.MaxCopies, 4)
	if c.Copies == 0 {
		c.Copies = 1
		if c.LinkLoss > 0 {
			c.Copies = linkguardian.Copies(c.TargetLoss, c.LinkLoss)
		}
	}
	c.MTU = cmp.Or(c.MTU, 1500)
	c.fixedThresholds = c.PauseThreshold > 0 || c.ResumeThreshold > 0
	c.ResumeThreshold = cmp.Or(c.ResumeThreshold, initialResume)
	if c.PauseThreshold == 0 {
		c.PauseThreshold = linkguardian.PauseThreshold(c.ResumeThreshold, c.frameLen())
	}
	if c.PauseThreshold <= c.ResumeThreshold {
		return fmt.Errorf("dataplane: pause threshold %d must exceed resume threshold %d (Algorithm 2; default pause = resume + 2 MTU)", c.PauseThreshold, c.ResumeThreshold)
	}
	if c.PFCClass < 0 || c.PFCClass >= pfc.NumClasses {
		return fmt.Errorf("dataplane: PFC class %d: want 0-7", c.PFCClass)
	}
	if c.Policy == (linkguardian.Policy{}) {
		c.Policy = linkguardian.DefaultPolicy()
		c.Policy.Target = c.TargetLoss
	}
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	c.MonitorWindow = cmp.Or(c.MonitorWindow, 10*time.Second)
	return nil
}

// core returns the LinkGuardian core's configuration for this end, whose
// control frames go from local to peer, protecting the directions protect
// says (linkpipe.SessionConfig.Protect).
func (c *Config) core(mode dataplane.Mode, protect string, local, peer [6]byte) linkguardian.Config {
	cfg := linkguardian.Config{LocalMAC: local, PeerMAC: peer}
	if protect != "rx" {
		s := linkguardian.DefaultSenderConfig()
		s.TxBuffer = c.TxBuffer
		s.Credit = c.credit
		s.Copies = c.Copies
		if c.DummyInterval > 0 {
			s.DummyInterval = int64(c.DummyInterval)
		}
		if c.DummyWaitMax > 0 {
			s.DummyWaitMax = int64(c.DummyWaitMax)
		}
		if c.DummyCopies > 0 {
			s.DummyCopies = c.DummyCopies
		}
		cfg.Sender = &s
	}
	if protect != "tx" {
		r := linkguardian.DefaultReceiverConfig()
		// The lg modes are named after their deliveries (checked by defaults).
		r.Delivery, _ = linkguardian.ParseDelivery(string(mode))
		r.Window = c.TxBuffer
		r.ResumeThreshold, r.PauseThreshold = c.ResumeThreshold, c.PauseThreshold
		r.AckDelay = tunedAckDelay(math.MaxInt64, c.dummyWaitMax()) // until measured (tune)
		if c.AckDelay > 0 {
			r.AckDelay = int64(c.AckDelay)
		}
		r.AckEvery = ackEvery(c.credit)
		if c.AckTimeout > 0 {
			r.AckNoTimeout = int64(c.AckTimeout)
			r.RenotifyInterval = min(r.RenotifyInterval, r.AckNoTimeout/2)
		} else {
			// Until retransmission delays are measured (tuneTimers), assume
			// a software link's: up to a couple of milliseconds.
			r.RenotifyInterval = initialRenotify
			r.AckNoTimeout = max(3*initialRenotify, minAckNoTimeout)
		}
		cfg.Receiver = &r
	}
	return cfg
}

// autoMode is the receiver mode the policy chooses after received frames
// and lost ones in the monitor's window, from mode cur.
//
// Switching protection off for a low rate needs evidence: a window with no
// loss in 10^4 frames cannot tell a link at 1e-8 (which the policy
// protects) from a perfect one. So protection stays on until the window
// excludes a rate of ProtectOn: an upper bound of the rate, (lost+3)/frames
// (the "rule of three": with no loss in n frames, the 95% bound is 3/n), must
// be below ProtectOn, that is more than 3/ProtectOn frames (3·10^8 by
// default) for a loss-free window. Switching on, to lgnb, and off for a
// rate too high to help need no such wait.
func autoMode(pol linkguardian.Policy, received, lost uint64, cur linkguardian.Delivery) linkguardian.Delivery {
	frames := received + lost
	if frames == 0 {
		return cur
	}
	rate := float64(lost) / float64(frames)
	want := pol.Decide(rate, linkguardian.Decision{Delivery: cur, Copies: 1}).Delivery
	if cur != linkguardian.Monitor && want == linkguardian.Monitor && rate < pol.ProtectOff {
		if upper := float64(lost+3) / float64(frames); upper >= pol.ProtectOn {
			return cur // not enough frames to conclude "no loss worth protecting"
		}
	}
	return want
}

func init() {
	for _, m := range []dataplane.Mode{ModeLG, ModeLGNB, ModeMonitor} {
		dataplane.Register(m, dataplane.Spec{Hosts: [2]int{1, 1}, Links: [2]int{1, 1}, Wire: true, Workers: true, ClassQueues: true,
			KernelPath:  true,
			Prepare:     prepareLG,
			FastBlocked: lgFastBlocked,
			PortOptions: lgPortOptions,
			Configure:   func(c *dataplane.Config) error { return Defaults(c, c.Mode) },
			CheckSizes:  checkLGSizes,
			Frames:      lgUmemFrames,
			CheckMTU:    checkLGMTU,
			New:         newLGInstance})
	}
}

// checkLGSizes is LinkGuardian's CheckSizes.
func checkLGSizes(c *dataplane.Config) error {
	// lg leaves 2 × batch of the link TX ring for control frames and
	// retransmitted copies; new data gets the rest, so a ring of 2 × batch
	// or less sends nothing at all, and one below 4 × batch mostly idles.
	if int(c.RingSize) < 4*c.Batch {
		return fmt.Errorf("dataplane: --ring-size %d must be at least 4 × --batch %d in mode %s (2 × --batch of the link TX ring stay free for control frames and copies, data needs the rest): raise --ring-size to %d or lower --batch to %d",
			c.RingSize, c.Batch, c.Mode, pow2AtLeast(4*c.Batch), c.RingSize/4)
	}
	if b := ConfigOf(c).TxBuffer; b != 0 && (b < 2 || b&(b-1) != 0 || b > 16384) {
		return fmt.Errorf("dataplane: --lg-tx-buffer %d: want a power of two from 2 to 16384 (default: --ring-size, or half of it without a priority lane)", b)
	}
	return nil
}

// lgUmemFrames is LinkGuardian's share of the UMEM: its TX buffer, reorder
// window and host queue.
func lgUmemFrames(c *dataplane.Config) (uint64, string, error) {
	txBuffer := ConfigOf(c).TxBuffer
	if txBuffer == 0 {
		txBuffer = DefaultTxBuffer(c.RingSize, true)
	}
	if txBuffer > int(c.RingSize) {
		return 0, "", fmt.Errorf("dataplane: --lg-tx-buffer %d exceeds --ring-size %d: the sender never has more than 7/8 of the peer's RX ring unacknowledged, so the rest of the TX buffer is never used; use --lg-tx-buffer %d or less, or raise --ring-size", txBuffer, c.RingSize, c.RingSize)
	}
	return 2*uint64(txBuffer) + dataplane.HostQueueLen,
		fmt.Sprintf(", the TX buffer and reorder window (2 × --lg-tx-buffer %d) and the host queue (%d)", txBuffer, dataplane.HostQueueLen), nil
}

// checkLGMTU checks that the link port carries a full host frame plus
// LinkOverhead.
func checkLGMTU(c *dataplane.Config, hostMTU, linkMTU int, ip, where string) error {
	if over := c.LinkOverhead(); linkMTU < hostMTU+over {
		return fmt.Errorf("dataplane: link port %s (%s) has MTU %d, below host port %s's MTU %d + %d bytes of link header and integrity trailer (--integrity %s): full-size frames would not fit on the link in mode %s; fix: %s link set dev %s mtu %d (and the same on the other switch's link port), or lower the hosts' MTU",
			c.LinkPort, where, linkMTU, c.HostPort, hostMTU, over, c.Link.Integrity, c.Mode, ip, c.LinkPort, hostMTU+over)
	}
	return nil
}

// lgInstance is LinkGuardian on a dataplane: each lane's statistics (one
// per worker; lanes[0] is Stats).
type lgInstance struct {
	lanes   []*Stats
	*lgFast // the kernel path (KernelPath, lgfast.go)
}

// newLGInstance sizes the TX buffer and credit now that the link port's
// lanes are known.
func newLGInstance(d *dataplane.Dataplane, cfg *dataplane.Config) (dataplane.Instance, error) {
	if ConfigOf(cfg).TxBuffer == 0 {
		// A priority lane, or the kernel's send path: the whole ring.
		lanes := d.Link().Lanes()
		if cfg.Workers > 1 {
			lanes = 1 // one queue per worker, no priority lane
		}
		ConfigOf(cfg).TxBuffer = DefaultTxBuffer(cfg.RingSize, lanes > 1 || TxWanted(cfg))
	}
	ConfigOf(cfg).credit = CreditWindow(ConfigOf(cfg).TxBuffer, cfg.RingSize)
	ConfigOf(cfg).untunedThresholds(TxWanted(cfg))
	in := &lgInstance{lgFast: &lgFast{d: d, integrity: cfg.Link.Integrity, txBlocked: ConfigOf(cfg).txWhy, txFix: ConfigOf(cfg).txFix}}
	for range cfg.Workers {
		in.lanes = append(in.lanes, &Stats{})
	}
	return in, nil
}

func (in *lgInstance) Pipeline(w *dataplane.Worker) (dataplane.Pipeline, error) {
	return newLGPipeline(w, in.lanes[w.Index()], in.lgFast)
}

func (in *lgInstance) Integrity(worker int) *dataplane.IntegrityStats {
	return &in.lanes[worker].Integrity
}

// Stats are "linkguardian" (lane 0's; with several workers its "core" is
// the lanes' counters summed, LaneTotals) and, with several workers,
// "linkguardian_lanes": each lane's whole document.
func (in *lgInstance) Stats() map[string]any {
	lg := lgDoc(in.lanes[0])
	doc := map[string]any{"linkguardian": lg}
	if len(in.lanes) > 1 {
		lg["core"], lg["lanes"] = laneTotals(in.lanes), len(in.lanes)
		var docs []any
		for _, s := range in.lanes {
			docs = append(docs, lgDoc(s))
		}
		doc["linkguardian_lanes"] = docs
	}
	return doc
}

func (in *lgInstance) Close() {}

// StatsOf are d's LinkGuardian statistics, lane 0's with several
// workers (nil in modes other than lg, lgnb and monitor).
func StatsOf(d *dataplane.Dataplane) *Stats {
	if in, ok := d.Instance().(*lgInstance); ok {
		return in.lanes[0]
	}
	return nil
}

// LaneStatsOf are each lane's LinkGuardian statistics on d, lane i
// worker i's (nil in modes other than lg, lgnb and monitor; one entry with
// one worker, StatsOf).
func LaneStatsOf(d *dataplane.Dataplane) []*Stats {
	if in, ok := d.Instance().(*lgInstance); ok {
		return in.lanes
	}
	return nil
}

// LaneTotalsOf is d's LinkGuardian core counters summed over every lane
// (Core of each of LaneStatsOf): the sender's, receiver's and port's
// counters and the per-class and priority-lane frames are added up (a
// peak is the sum of the lanes' peaks, an upper bound of the link's);
// timers, thresholds, N, buffer sizes and the lane flags are lane 0's.
// With one worker it is StatsOf(d).Core().
func LaneTotalsOf(d *dataplane.Dataplane) Core { return laneTotals(LaneStatsOf(d)) }

// laneTotals is LaneTotalsOf of lanes.
func laneTotals(lanes []*Stats) Core {
	if len(lanes) == 0 {
		return Core{}
	}
	sum := lanes[0].Core()
	for _, s := range lanes[1:] {
		c := s.Core()
		addCounters(&sum.Port, &c.Port)
		if sum.Sender != nil && c.Sender != nil {
			addCounters(sum.Sender, c.Sender)
		}
		if sum.Receiver != nil && c.Receiver != nil {
			addCounters(sum.Receiver, c.Receiver)
		}
		sum.PriorityFrames += c.PriorityFrames
		sum.HeldByCreditNs += c.HeldByCreditNs
		sum.HeldByPauseNs += c.HeldByPauseNs
		for i := range sum.ClassFrames {
			sum.ClassFrames[i] += c.ClassFrames[i]
		}
		sum.PausedClasses |= c.PausedClasses
	}
	return sum
}

// addCounters adds every uint64 field of *src to *dst (structs of
// counters of one type: linkguardian's SenderStats, ReceiverStats,
// PortStats).
func addCounters[T any](dst, src *T) {
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := range dv.NumField() {
		if f := dv.Field(i); f.Kind() == reflect.Uint64 && f.CanSet() {
			f.SetUint(f.Uint() + sv.Field(i).Uint())
		}
	}
}

// lgDoc is a lane's LinkGuardian document in /stats.json.
func lgDoc(s *Stats) map[string]any {
	var snap metrics.Snapshot
	hist := func(h *metrics.Histogram, scale float64) metrics.HistogramSummary {
		h.SnapshotInto(&snap)
		return metrics.Summarize(&snap, scale)
	}
	core, ktx := s.Core(), s.KernelTx()
	var peakTx, peakReorder uint64
	if core.Sender != nil {
		peakTx = core.Sender.TxBufPeakFrames
	}
	if core.Receiver != nil {
		peakReorder = core.Receiver.ReorderPeakBytes
	}
	return map[string]any{
		"core":                   core,
		"retx_delay_us":          hist(&s.RetxDelay, 1e-3),
		"retx_delay_first_us":    hist(&s.RetxDelayFirst, 1e-3),
		"tx_buffer_frames":       hist(&s.TxBuf, 1),
		"reorder_buffer_bytes":   hist(&s.Reorder, 1),
		"peak_tx_buffer_frames":  peakTx,
		"peak_reorder_bytes":     peakReorder,
		"link_tx_ring_full":      s.LinkTxRingFull.Load(),
		"host_tx_ring_full":      s.HostTxRingFull.Load(),
		"pfc_rx":                 s.PFCRx.Load(),
		"pause_tx":               s.PauseTx.Load(),
		"host_gate_waits":        s.HostGateWaits.Load(),
		"host_gate_held":         s.HostGateHeld.Load(),
		"kernel_send_declined":   ktx.Declined,
		"kernel_declined_window": ktx.DeclinedWindow,
		"kernel_declined_unread": ktx.DeclinedUnread,
		"kernel_send_widened":    ktx.Widened,
		"kernel_wake_moves":      ktx.WakeMoves,
		"measured_loss_rate":     s.LossRate(),
		"copies":                 s.Copies.Load(),
		"rx_loss_rate":           s.RxLossRate(),
		"rx_mode":                linkguardian.Delivery(s.RxMode.Load()).String(),
		"mode_changes":           s.ModeChanges.Load(),
		"corrupt_frames":         s.Integrity.Corrupt.Load(),
		"integrity_no_room":      s.Integrity.NoRoom.Load(),
		"integrity_other_check":  s.Integrity.OtherCheck.Load(),
		"session":                s.Session.Snapshot(),
	}
}

// pow2AtLeast is the least power of two ≥ n.
func pow2AtLeast(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// sessionConfig is what lg's link session takes of cfg: its
// linkpipe.SessionConfig, announcing LinkGuardian's MTU.
func sessionConfig(cfg *dataplane.Config) linkpipe.SessionConfig {
	s := *linkpipe.SessionConfigOf(cfg)
	s.MTU = ConfigOf(cfg).MTU
	return s
}
