package dataplane

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/pfc"
)

// Per-class PFC toward the host port (--pfc).
//
// The class queues (classq.go) already honour PAUSE/PFC frames received on
// the link port. With PFCConfig.Enabled they also push back on the host:
// a class whose queue reaches XOFF frames makes the dataplane send an
// 802.1Qbb frame out of the host port pausing that class for Pause
// (quanta at the host port's speed); while the class stays above XON the
// pause is sent again once half of it has run out, and when the class falls
// to XON or below a frame with quanta 0 resumes it. One frame carries every
// class that needs a pause, refresh or resume at that moment. The state
// machine (hostPFC) runs on the worker's clock from the pipeline's Poll: no
// timer, no allocation (the frame is built in a UMEM frame).
//
// In mode forward --pfc also puts host frames in the class queues (without
// it, forward passes every frame at once), which only the AF_XDP path has:
// the kernel's devmap redirect has no queue that could hold a paused class
// nor an occupancy to trigger XOFF, so --pfc rules the XDP fast path out
// (fastBlocked).

// PFCConfig configures per-class PFC toward the host port.
type PFCConfig struct {
	// Enabled sends PFC toward the host port as the class queues cross
	// XOFF and XON; in mode forward it also queues host frames per class,
	// gated by PAUSE/PFC frames from the link port.
	Enabled bool
	// XOFF is the frames of one class that send a pause (default half the
	// class queues' limit, DefaultPFCXOFF); XON the frames at or below which
	// a paused class is resumed (default XOFF/2; below XOFF).
	XOFF, XON int
	// Pause is how long each pause frame asks the host to stop (default:
	// the longest a frame carries, 65535 quanta, at the host port's speed:
	// its --port-rate, else LinkConfig.Speed, else 10 Gbit/s).
	Pause time.Duration

	hostSpeed uint64 // bit/s, for the quanta
	quanta    uint16
}

// DefaultPFCXOFF is PFCConfig.XOFF's default: half of what the class queues
// hold together, so one class at XOFF leaves the others as much again, and
// the frames the host sends before it stops wait in the rest.
const DefaultPFCXOFF = HostQueueLen / 2

// minPFCPause is the shortest PFCConfig.Pause: it is refreshed at half
// that by the worker's clock.
const minPFCPause = 20 * time.Microsecond

// PFCLinkSpeed is the link's speed for the quanta of PAUSE/PFC frames
// received on the link port (--link-speed, default 10 Gbit/s).
func (c *Config) PFCLinkSpeed() uint64 {
	if c.Link.Speed != 0 {
		return c.Link.Speed
	}
	return pfc.Speed10G
}

// classQueued reports whether the mode's host frames wait in class queues
// (Spec.ClassQueues, or any mode's with --pfc).
func (c *Config) classQueued() bool { return c.spec().ClassQueues || c.PFC.Enabled }

// pfcDefaults checks PFCConfig and fills its defaults; it runs after the
// port shapes' (the host port's rate is its speed).
func (c *Config) pfcDefaults() error {
	p := &c.PFC
	if !p.Enabled {
		if p.XOFF != 0 || p.XON != 0 || p.Pause != 0 {
			return fmt.Errorf("dataplane: --pfc-xoff, --pfc-xon and --pfc-pause need --pfc")
		}
		return nil
	}
	if why := c.spec().NoPFC; why != "" {
		return fmt.Errorf("dataplane: --pfc: %s", why)
	}
	if p.XOFF == 0 {
		p.XOFF = DefaultPFCXOFF
	}
	if p.XON == 0 {
		p.XON = p.XOFF / 2
	}
	if p.XOFF < 1 || p.XOFF > HostQueueLen {
		return fmt.Errorf("dataplane: --pfc-xoff %d: want 1 to %d frames (the class queues hold %d together; default %d)", p.XOFF, HostQueueLen, HostQueueLen, DefaultPFCXOFF)
	}
	if p.XON < 0 || p.XON >= p.XOFF {
		return fmt.Errorf("dataplane: --pfc-xon %d: want 0 to %d, below --pfc-xoff %d (default half of it)", p.XON, p.XOFF-1, p.XOFF)
	}
	p.hostSpeed = c.PFCLinkSpeed()
	if s, ok := c.Shape[c.HostPort]; ok && s.Rate > 0 {
		p.hostSpeed = s.Rate
	}
	longest := time.Duration(pfc.QuantaToNanos(pfc.MaxQuanta, p.hostSpeed))
	switch {
	case p.Pause == 0:
		p.Pause = longest
	case p.Pause < minPFCPause:
		return fmt.Errorf("dataplane: --pfc-pause %v: want at least %v (the pause is refreshed at half of it)", p.Pause, minPFCPause)
	case p.Pause > longest:
		return fmt.Errorf("dataplane: --pfc-pause %v: a PFC frame pauses at most %d quanta, %v at the host port's %d bit/s; give at most that (default: it)",
			p.Pause, pfc.MaxQuanta, longest, p.hostSpeed)
	}
	p.quanta = pfc.NanosToQuanta(int64(p.Pause), p.hostSpeed)
	return nil
}

// PFCCounters count per-class PFC of the class queues: frames received on
// the link port, and what the dataplane sent toward the host port.
type PFCCounters struct {
	// Rx counts PAUSE/PFC frames received on the link port that gated the
	// class queues; RxPause counts, per class, those that paused it
	// (quanta > 0).
	Rx      atomic.Uint64
	RxPause [pfc.NumClasses]atomic.Uint64
	// Tx counts, per class, PFC frames sent toward the host naming it;
	// Xoff and Xon the pauses that began (the class reached XOFF) and the
	// resumes (it fell to XON). Tx - Xoff - Xon are refreshes.
	Tx, Xoff, Xon [pfc.NumClasses]atomic.Uint64
	// HostPaused is the classes the host is told to pause now (bit c).
	HostPaused atomic.Uint32
	// NoFrame counts times a PFC frame found no free UMEM frame (it is
	// tried again at once).
	NoFrame atomic.Uint64
}

// PFCSnapshot is per-class PFC as /stats.json shows it (arrays by class).
type PFCSnapshot struct {
	Enabled   bool   `json:"enabled"`
	XOFF      int    `json:"xoff_frames,omitempty"`
	XON       int    `json:"xon_frames,omitempty"`
	Quanta    uint16 `json:"pause_quanta,omitempty"`
	PauseNs   int64  `json:"pause_ns,omitempty"`
	HostSpeed uint64 `json:"host_speed_bps,omitempty"`

	Rx         uint64                 `json:"pfc_rx"`
	RxPause    [pfc.NumClasses]uint64 `json:"pfc_rx_pause"`
	Tx         [pfc.NumClasses]uint64 `json:"pfc_tx"`
	Xoff       [pfc.NumClasses]uint64 `json:"pfc_xoff"`
	Xon        [pfc.NumClasses]uint64 `json:"pfc_xon"`
	HostPaused uint8                  `json:"host_paused_classes"`
	NoFrame    uint64                 `json:"pfc_no_frame"`
}

func (c *PFCCounters) snapshot(cfg *PFCConfig) *PFCSnapshot {
	s := &PFCSnapshot{Enabled: cfg.Enabled, Rx: c.Rx.Load(), HostPaused: uint8(c.HostPaused.Load()), NoFrame: c.NoFrame.Load()}
	if cfg.Enabled {
		s.XOFF, s.XON, s.Quanta, s.HostSpeed = cfg.XOFF, cfg.XON, cfg.quanta, cfg.hostSpeed
		s.PauseNs = pfc.QuantaToNanos(cfg.quanta, cfg.hostSpeed)
	}
	for i := range pfc.NumClasses {
		s.RxPause[i], s.Tx[i], s.Xoff[i], s.Xon[i] = c.RxPause[i].Load(), c.Tx[i].Load(), c.Xoff[i].Load(), c.Xon[i].Load()
	}
	return s
}

// hostPFC is the XOFF/XON state machine of the class queues toward the
// host port. decide says what to send for the classes' occupancy at now,
// sent records that it went out (a frame that could not be built changes
// nothing), next is when decide must run again even if no queue changes.
type hostPFC struct {
	xoff, xon int
	quanta    uint16
	refresh   int64 // a pause is sent again this long after the last: half of what it lasts
	paused    uint8 // the classes the host was told to pause
	again     [pfc.NumClasses]int64
	frame     pfc.Frame // what decide chose
	st        *PFCCounters
}

func newHostPFC(c *PFCConfig, src [6]byte, st *PFCCounters) *hostPFC {
	h := &hostPFC{xoff: c.XOFF, xon: c.XON, quanta: c.quanta, st: st,
		refresh: pfc.QuantaToNanos(c.quanta, c.hostSpeed) / 2}
	h.frame = pfc.NewPFC(src, 0, [pfc.NumClasses]uint16{})
	return h
}

// decide fills h.frame with what the host must be told at now, for occ
// frames queued per class: a pause for each running class at XOFF or more
// and each paused class above XON whose refresh is due, a resume (quanta
// 0) for each paused class at XON or below. It reports whether there is
// anything to send.
func (h *hostPFC) decide(now int64, occ *[pfc.NumClasses]int) bool {
	f := &h.frame
	f.ClassEnable, f.Quanta = 0, [pfc.NumClasses]uint16{}
	for c := range pfc.NumClasses {
		bit := uint8(1) << c
		switch paused := h.paused&bit != 0; {
		case !paused && occ[c] >= h.xoff, paused && occ[c] > h.xon && now >= h.again[c]:
			f.ClassEnable |= bit
			f.Quanta[c] = h.quanta
		case paused && occ[c] <= h.xon:
			f.ClassEnable |= bit
		}
	}
	return f.ClassEnable != 0
}

// sent records that h.frame left at now.
func (h *hostPFC) sent(now int64) {
	f := &h.frame
	for c := range pfc.NumClasses {
		bit := uint8(1) << c
		if f.ClassEnable&bit == 0 {
			continue
		}
		h.st.Tx[c].Add(1)
		switch {
		case f.Quanta[c] == 0:
			h.paused &^= bit
			h.st.Xon[c].Add(1)
		case h.paused&bit == 0:
			h.paused |= bit
			h.st.Xoff[c].Add(1)
			fallthrough
		default:
			h.again[c] = now + h.refresh
		}
	}
	h.st.HostPaused.Store(uint32(h.paused))
}

// next is when the first paused class's pause is due again (math.MaxInt64:
// none is paused).
func (h *hostPFC) next() int64 {
	n := int64(math.MaxInt64)
	for c := range pfc.NumClasses {
		if h.paused&(1<<c) != 0 {
			n = min(n, h.again[c])
		}
	}
	return n
}
