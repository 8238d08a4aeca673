package bpf

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
)

// LinkGuardian's catch-up queue (lf_lg_rx's queue mode and lf_lg_drain in
// c/port.c). While Go holds the receive point, the kernel passes every data
// frame to the AF_XDP socket; Go gives the point back only once it has
// taken in all of them, which under a steady stream faster than Go (the
// AF_XDP path on veth copies each frame twice more than the kernel's) does
// not happen until the stream pauses. With the queue, Go asks for queue
// mode instead (LGReq in Point, not owned): the kernel starts it at the
// next data frame q it judges, which it keeps, stripped as delivered, in
// slot q of lg_rx_queue; from then on the kernel owns the point with
// LGQueue set, its serial the queue's tail. Go finishes the frames before q
// (all it was given), then delivers the queue in the kernel by running the
// port program with BPF_PROG_TEST_RUN and live frames (Drain: each run
// redirects slot QHead to the host port), and swaps the point to the usual
// fast path once the queue is empty. A frame the queue cannot take (out of
// order, a full queue) gives the point to Go with LGQueue kept: Go drains to
// the tail before it delivers anything itself.

// Bits of Point for the catch-up queue.
const (
	// LGQueue: queue mode; the point's serial is the queue's tail.
	LGQueue = 1 << 61
	// LGReq: Go (not owning the point) asks the kernel to start queue mode.
	LGReq = 1 << 60
)

// LGRxQueueCounters are the catch-up queue's counters.
type LGRxQueueCounters struct {
	Queued       uint64 // frames the kernel queued
	Starts       uint64 // times queue mode started
	Full         uint64 // hand-overs to Go because the queue was full
	Drained      uint64 // frames the drain delivered
	DrainedBytes uint64 // their bytes
	DrainIdle    uint64 // drain runs with nothing to deliver
	DrainErr     uint64 // drain runs that could not deliver (the frame stays queued)
}

// lgRxQueueSpec sizes the catch-up queue as opts ask.
func lgRxQueueSpec(spec *ebpf.CollectionSpec, opts PortOptions) error {
	n := opts.LGRxQueueSlots
	if n == 0 {
		return nil
	}
	if n < 2 || n > 1<<15 || n&(n-1) != 0 {
		return fmt.Errorf("LGRxQueueSlots %d: want a power of two in [2, 32768]", n)
	}
	spec.Maps["lg_rx_queue"].MaxEntries = uint32(n)
	return nil
}

// SetLGRxQueue turns the catch-up queue on or off: on, the kernel starts
// queue mode when Go asks (LGReq) and a run of the program that does not
// come from this port's interface is a drain run. Turn it off only while
// Point has neither LGReq nor LGQueue.
func (p *PortProgram) SetLGRxQueue(on bool) error {
	s, err := p.LGRx()
	if err != nil {
		return err
	}
	var mask uint64
	ifindex := uint32(0)
	if on {
		slots := p.objs.LgRxQueue.MaxEntries()
		if slots < 2 {
			return fmt.Errorf("catch-up queue of %s: the program was loaded without one (PortOptions.LGRxQueueSlots)", p.ifname)
		}
		mask, ifindex = uint64(slots-1), uint32(p.ifindex)
	}
	atomic.StoreUint64(&s.v.Qmask, mask)
	return p.changeConf("switch LinkGuardian's catch-up queue", func(c *portPortConf) { c.Ifindex = ifindex })
}

// QHead is the serial the drain delivers next (valid while Point has LGQueue).
func (s *LGRx) QHead() uint64 { return atomic.LoadUint64(&s.v.Qhead) & LGSeqMask }

// QAck is the ACK the send fast path piggybacks while Point has LGQueue:
// LGAckValid | a serial, written by Go; 0: Point's serial − 1.
func (s *LGRx) QAck() *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&s.v.Qack)) }

// QToGo is how many frames of the link port's RX queue 0 the program had
// handed to the AF_XDP socket when queue mode last started (to_go).
func (s *LGRx) QToGo() uint64 { return atomic.LoadUint64(&s.v.Qtogo) }

// SetQHead moves the drain's next serial (frames before it are not
// delivered); only while no drain runs.
func (s *LGRx) SetQHead(q uint64) { atomic.StoreUint64(&s.v.Qhead, q&LGSeqMask) }

// QStart is the serial queue mode last started at.
func (s *LGRx) QStart() uint64 { return atomic.LoadUint64(&s.v.Qstart) & LGSeqMask }

// QueueCounters reads the catch-up queue's counters.
func (s *LGRx) QueueCounters() LGRxQueueCounters {
	return LGRxQueueCounters{
		Queued:       atomic.LoadUint64(&s.v.Queued),
		Starts:       atomic.LoadUint64(&s.v.Qstarts),
		Full:         atomic.LoadUint64(&s.v.Qfull),
		Drained:      atomic.LoadUint64(&s.v.Drained),
		DrainedBytes: atomic.LoadUint64(&s.v.DrainedBytes),
		DrainIdle:    atomic.LoadUint64(&s.v.DrainIdle),
		DrainErr:     atomic.LoadUint64(&s.v.DrainErr),
	}
}

// testXDPLiveFrames is BPF_F_TEST_XDP_LIVE_FRAMES: the run's frames are
// real, redirected and flushed before the syscall returns.
const testXDPLiveFrames = 1 << 1

// LGDrainer delivers a link port's catch-up queue (see SetLGRxQueue). One
// goroutine at a time may use it.
type LGDrainer struct {
	prog *ebpf.Program
	rx   *LGRx
	opts ebpf.RunOptions
}

// Drainer returns the port's drainer; the queue must be on.
func (p *PortProgram) Drainer() (*LGDrainer, error) {
	s, err := p.LGRx()
	if err != nil {
		return nil, err
	}
	return &LGDrainer{prog: p.objs.LfPort, rx: s, opts: ebpf.RunOptions{
		Data: make([]byte, LGTxSlotSize-2), Flags: testXDPLiveFrames}}, nil
}

// Drain runs the drain up to n times (one frame each) and returns how many
// frames it delivered. The frames are on the host port's queue when it
// returns.
func (d *LGDrainer) Drain(n int) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	before := atomic.LoadUint64(&d.rx.v.Drained)
	d.opts.Repeat = uint32(n)
	if _, err := d.prog.Run(&d.opts); err != nil {
		return 0, fmt.Errorf("drain the catch-up queue: %w", err)
	}
	return int(atomic.LoadUint64(&d.rx.v.Drained) - before), nil
}
