package fecpipe

import (
	"cmp"
	"fmt"
	"math"
	"time"

	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec"
	"github.com/linkfabric/linkfabric/link/linkpipe"
)

// ModeFEC is RAIL's coding below the hosts (package fec): XOR parity after
// every n data frames, or replication, in both directions of the link.
const ModeFEC dataplane.Mode = "fec"

// Config configures mode fec. Zero fields take the defaults.
//
// How each end's sender protects what it sends:
//   - Fixed: n = N and Copies transmissions per frame, whatever the loss
//     (N 0 with Copies k is pure replication ×k);
//   - Loss > 0: the link policy (fec.LinkTable for Target) decides once
//     for that loss rate, and the decision stays;
//   - otherwise (the default): the policy decides from the loss the peer's
//     receiver measures on this direction and reports in its session
//     frames; until a report with enough frames comes, n is what the
//     policy chooses for ten times the target.
//
// The policy runs on the measured loss in every case and its decision is
// logged and shown; it is applied only in the last case. Of its choices,
// lg and exclude can only be reported in mode fec: the sender keeps what
// it has (run --mode lg for lg; exclusion needs a bundle).
type Config struct {
	Fixed  bool
	N      int
	Copies int // Fixed: transmissions per frame (default 1); otherwise copies when the policy replicates (default: its table's, 3)
	Loss   float64
	// Target is the residual loss the hosts may see (default 1e-3, RAIL's
	// for TCP).
	Target float64
	// Wait is the receiver's bounded in-order wait behind a hole (default
	// 2 ms, defaultFECWait); Flush how long a group stays open (default
	// 1 ms). Wait must exceed Flush plus the link's delay for
	// every single loss to be recovered in order.
	Wait, Flush time.Duration
	// Immediate delivers frames as they arrive or are recovered, out of
	// order, instead of in sequence order with Wait.
	Immediate bool
	// Window is the loss monitor's moving window (default 2 s); the
	// measured rate counts once the window holds MinFrames transmissions
	// (default 10^4).
	Window    time.Duration
	MinFrames uint64
	// Table is the link policy (default fec.DefaultLinkTable(Target)
	// with Dwell one Window).
	Table *fec.LinkTable
}

// defaultFECWait and defaultFECFlush are Config.Wait's and Flush's
// defaults. Measured with UDP through fec(4) at loss 1e-2 on the shared
// 2-core machine (load average 17): the time from a hole's detection to its
// recovery was 8-45 µs on average and at most 0.4-2.9 ms (the worker
// waiting for a CPU); the core's 400 µs gave up on holes their parity was
// about to fill. With the core's 200 µs flush, UDP at 100 Mbit/s (9k
// frames/s) closed 64 % of the groups early, at about 7 frames where the
// policy chose 14-19: wire overhead 1.15× the host bytes instead of 1.08×.
// A group open 1 ms fills at 14 frames from 14k frames/s.
const (
	defaultFECWait  = 2 * time.Millisecond
	defaultFECFlush = time.Millisecond
)

// fecWindow is the receiver's window (sequence numbers held): UMEM frames it
// may hold at once.
const fecWindow = 1024

// ConfigOf is c's configuration of mode fec and of the fec layer under
// the cells (Mech "fec").
func ConfigOf(c *dataplane.Config) *Config { return dataplane.Mech[Config](c, "fec") }

func (c *Config) defaults() error {
	if c.Target == 0 {
		c.Target = 1e-3
	}
	c.Window = cmp.Or(c.Window, 2*time.Second)
	c.MinFrames = cmp.Or(c.MinFrames, 10_000)
	c.Wait = cmp.Or(c.Wait, defaultFECWait)
	c.Flush = cmp.Or(c.Flush, defaultFECFlush)
	switch {
	case !(c.Target > 0 && c.Target < 3e-2):
		return fmt.Errorf("dataplane: --fec-target %g: want a residual loss rate in (0, 0.03), e.g. 1e-3 (RAIL's for TCP)", c.Target)
	case c.Loss < 0 || c.Loss >= 1:
		return fmt.Errorf("dataplane: --fec-loss %g: want the link's loss rate in (0, 1)", c.Loss)
	case c.Fixed && c.Loss > 0:
		return fmt.Errorf("dataplane: --fec-n fixes n, --fec-loss %g has the policy choose it: give one of them", c.Loss)
	case c.Fixed && (c.N < 0 || c.N > fec.MaxN):
		return fmt.Errorf("dataplane: --fec-n %d: want 0 (no parity) to %d data frames per parity frame", c.N, fec.MaxN)
	case c.Copies < 0 || c.Copies > fec.MaxCopies:
		return fmt.Errorf("dataplane: --fec-copies %d: want 1 to %d transmissions per frame", c.Copies, fec.MaxCopies)
	case c.Fixed && c.N == 0 && c.Copies < 2:
		return fmt.Errorf("dataplane: --fec-n 0 --fec-copies %d protects nothing: give --fec-n N (parity), --fec-copies 2 or more (replication), or --fec-target T (chosen from the measured loss)", c.Copies)
	case c.Wait < 0 || c.Flush <= 0:
		return fmt.Errorf("dataplane: --fec-wait %v --fec-flush %v: want a wait ≥ 0 and a flush > 0", c.Wait, c.Flush)
	case c.Window < 100*time.Millisecond:
		return fmt.Errorf("dataplane: --fec-window %v: want at least 100ms (the loss monitor needs %d frames in it)", c.Window, c.MinFrames)
	}
	if c.Wait > 0 && c.Wait <= c.Flush {
		return fmt.Errorf("dataplane: --fec-wait %v must exceed --fec-flush %v (a group's parity comes up to --fec-flush after its first frame): raise --fec-wait or lower --fec-flush", c.Wait, c.Flush)
	}
	if c.Table == nil {
		t := fec.DefaultLinkTable(c.Target)
		t.Dwell = int64(c.Window) // weaker protection once a whole window has measured the link under the current one
		c.Table = &t
	}
	if c.Copies > 0 && !c.Fixed {
		for i := range c.Table.Rows {
			if c.Table.Rows[i].Action == fec.ActReplicate {
				c.Table.Rows[i].Copies = c.Copies
			}
		}
	}
	if err := c.Table.Validate(); err != nil {
		return err
	}
	if c.Fixed && c.Copies == 0 {
		c.Copies = 1
	}
	if c.Loss > 0 {
		if ch := c.Table.Decide(c.Loss, math.NaN(), fec.LinkState{}).Choice; !applicable(ch) {
			return fmt.Errorf("dataplane: --fec-loss %g: the link policy chooses %v for that loss, which mode fec cannot do; use --mode lg, or fix the protection with --fec-n N --fec-copies K", c.Loss, ch)
		}
	}
	return nil
}

// applicable reports whether mode fec can apply a policy's choice.
func applicable(c fec.LinkChoice) bool {
	return c.Action == fec.ActNone || c.Action == fec.ActFEC || c.Action == fec.ActReplicate
}

// codingLimit is the loss rate from which the link policy no longer
// codes (it chooses lg or exclude for independent loss): RAIL's 10 % with
// the default table. Under the cells a link is faulty from there.
func (c *Config) codingLimit() float64 {
	lim := 0.0
	for _, r := range c.Table.Rows {
		if !applicable(fec.LinkChoice{Action: r.Action}) {
			break
		}
		lim = r.Below
	}
	return min(lim, 1)
}

// initial is the protection a sender starts with: fixed, chosen for the
// given loss, or for ten times the target until the peer's report.
func (c *Config) initial() fec.LinkState {
	switch {
	case c.Fixed:
		st := fec.LinkState{Choice: fec.LinkChoice{Action: fec.ActFEC, N: c.N, Copies: c.Copies}}
		if c.N == 0 {
			st.Choice.Action = fec.ActReplicate
		}
		return st
	case c.Loss > 0:
		return c.Table.Decide(c.Loss, math.NaN(), fec.LinkState{})
	}
	return c.Table.Decide(10*c.Target, math.NaN(), fec.LinkState{})
}

// nCopies is what a sender runs for choice c.
func nCopies(c fec.LinkChoice) (n, copies int) {
	switch c.Action {
	case fec.ActFEC:
		return c.N, max(c.Copies, 1)
	case fec.ActReplicate:
		return 0, c.Copies
	}
	return 0, 1
}

// Overhead is how many bytes a host frame's largest link frame exceeds
// it by in mode fec: a parity frame's header (fec.MaxOverhead) and the
// integrity trailer. A link port needs an MTU this much above the host port's.
func Overhead(c *dataplane.Config) int { return fec.MaxOverhead + c.Link.Integrity.Overhead() }

func init() {
	dataplane.Register(ModeFEC, dataplane.Spec{Hosts: [2]int{1, 1}, Links: [2]int{1, 1}, Wire: true, ClassQueues: true,
		Configure: configureFEC,
		Frames: func(*dataplane.Config) (uint64, string, error) {
			return fecWindow + dataplane.HostQueueLen + 1,
				fmt.Sprintf(", the FEC receiver's window (%d), the host queue (%d) and a parity frame", fecWindow, dataplane.HostQueueLen), nil
		},
		CheckMTU: checkFECMTU,
		New: func(d *dataplane.Dataplane, _ *dataplane.Config) (dataplane.Instance, error) {
			return &fecInstance{stats: &Stats{}, link: d.Link().Name}, nil
		}})
}

// configureFEC fills mode fec's defaults and those of its link session.
func configureFEC(c *dataplane.Config) error {
	if p := linkpipe.SessionConfigOf(c).Protect; p != "" && p != "both" {
		return fmt.Errorf("dataplane: --lg-protect %s: mode fec protects both directions of the link; leave --lg-protect out", p)
	}
	if err := linkpipe.SessionDefaults(c); err != nil {
		return err
	}
	return ConfigOf(c).defaults()
}

// checkFECMTU checks that the link port carries a parity frame of full
// host frames.
func checkFECMTU(c *dataplane.Config, hostMTU, linkMTU int, ip, where string) error {
	if over := Overhead(c); linkMTU < hostMTU+over {
		return fmt.Errorf("dataplane: link port %s (%s) has MTU %d, below host port %s's MTU %d + %d bytes in mode fec: a parity frame is %d bytes longer than the longest frame of its group (the link EtherType and parity header), plus %d of integrity trailer (--integrity %s), so full-size frames could not be protected; fix: %s link set dev %s mtu %d (and the same on the other switch's link port), or lower the hosts' MTU",
			c.LinkPort, where, linkMTU, c.HostPort, hostMTU, over, fec.MaxOverhead, c.Link.Integrity.Overhead(), c.Link.Integrity, ip, c.LinkPort, hostMTU+over)
	}
	return nil
}

// fecInstance is mode fec on a dataplane.
type fecInstance struct {
	stats *Stats
	link  string // the link port's name
}

func (in *fecInstance) Pipeline(w *dataplane.Worker) (dataplane.Pipeline, error) {
	return newFECPipeline(w)
}

func (in *fecInstance) Integrity(int) *dataplane.IntegrityStats { return &in.stats.Integrity }

// Stats are "fec": the snapshot, the link session's, and the integrity
// and PFC counts.
func (in *fecInstance) Stats() map[string]any {
	s := in.stats
	return map[string]any{"fec": fecDoc{Snapshot: s.Snapshot(), Session: s.Session.Snapshot(), Corrupt: s.Integrity.Corrupt.Load(),
		NoRoom: s.Integrity.NoRoom.Load(), PFCRx: s.PFCRx.Load()}}
}

func (in *fecInstance) Close() {}

// Stats are mode fec's statistics (nil in every other mode).
func StatsOf(d *dataplane.Dataplane) *Stats {
	if in, ok := d.Instance().(*fecInstance); ok {
		return in.stats
	}
	return nil
}
