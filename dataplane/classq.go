package dataplane

import (
	"encoding/binary"
	"math"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/pfc"
	"github.com/linkfabric/linkfabric/xdp"
)

// ClassQueues hold host frames waiting for a link port: one FIFO per
// 802.1p traffic class, gated by the port's PFC state, served in strict
// priority (class 7 first). Together they hold at most limit frames: a
// class paused for long cannot take every UMEM frame.
type ClassQueues struct {
	q     [pfc.NumClasses]frameRing
	n     int
	limit int
	// Gate is the pause state of each class, from PAUSE/PFC frames
	// received on the link port.
	Gate pfc.State
	// Frames counts frames queued per class.
	Frames [pfc.NumClasses]uint64
	// pfcOut sends PFC toward the host port as the classes cross XOFF and
	// XON (hostpfc.go; nil without --pfc); st counts PFC both ways.
	pfcOut *hostPFC
	st     *PFCCounters
}

func newClassQueues(limit int) ClassQueues {
	var c ClassQueues
	c.limit = limit
	size := 1
	for size < limit {
		size <<= 1
	}
	for i := range c.q {
		c.q[i] = frameRing{buf: make([]link.Frame, size), at: make([]int64, size)}
	}
	return c
}

// HostQueueLen is how many host frames may wait for the link.
const HostQueueLen = 1024

// NewClassQueues are the class queues of d's host frames, HostQueueLen
// together, with d's PFC toward the host port.
func NewClassQueues(d *Dataplane) ClassQueues {
	c := newClassQueues(HostQueueLen)
	c.st = &d.stats.PFC
	if d.cfg.PFC.Enabled {
		c.pfcOut = newHostPFC(&d.cfg.PFC, d.all[PortHost].mac, c.st)
	}
	return c
}

// ApplyPFC applies b, received on the link port at now (a link of speed
// bit/s), to the gate if it is a PAUSE or PFC frame, decoded into f.
func (c *ClassQueues) ApplyPFC(now int64, b []byte, speed uint64, f *pfc.Frame) bool {
	if pfc.Decode(b, f) != nil || c.Gate.Apply(f, now, speed) != nil {
		return false
	}
	if c.st != nil {
		c.st.Rx.Add(1)
		for class := range pfc.NumClasses {
			pauses := f.ClassEnable&(1<<class) != 0 && f.Quanta[class] != 0
			if f.Opcode == pfc.OpPause {
				pauses = f.Quanta[0] != 0 // every class
			}
			if pauses {
				c.st.RxPause[class].Add(1)
			}
		}
	}
	return true
}

// Signal sends a PFC frame out of the host port when a class crossed
// XOFF or XON or a pause is due again (hostpfc.go), and returns when it
// must run next (math.MaxInt64 without --pfc).
func (c *ClassQueues) Signal(now int64, tx *Tx) int64 {
	h := c.pfcOut
	if h == nil {
		return math.MaxInt64
	}
	var occ [pfc.NumClasses]int
	for class := range c.q {
		occ[class] = c.q[class].len()
	}
	if h.decide(now, &occ) {
		a, ok := tx.Alloc()
		if !ok {
			c.st.NoFrame.Add(1)
			return now
		}
		n, _ := h.frame.Encode(tx.w.Bytes(a, pfc.FrameLen))
		tx.Send(PortHost, LaneData, a, n)
		tx.Release(a)
		h.sent(now)
	}
	return h.next()
}

// room is how many more frames the queues take.
func (c *ClassQueues) room() int { return c.limit - c.n }

// PortRoom is a Pipeline's Room for a pipeline whose host frames wait here:
// the queues' free space on the host port, no bound on the link port.
func (c *ClassQueues) PortRoom(port int) int {
	if port == PortHost {
		return c.room()
	}
	return math.MaxInt
}

// Push queues host frames received (into w's UMEM) at now, by traffic
// class.
func (c *ClassQueues) Push(w *Worker, now int64, descs []xdp.Desc) {
	for _, d := range descs {
		class := Classify(w.Bytes(d.Addr, min(int(d.Len), 18)))
		c.push(class, link.Frame{H: link.Handle(d.Addr), Len: int(d.Len)}, now)
	}
}

// Empty reports whether no frame waits.
func (c *ClassQueues) Empty() bool { return c.n == 0 }

// Len is how many frames wait in the queues.
func (c *ClassQueues) Len() int { return c.n }

// push queues f, received at now, in class (0..7).
func (c *ClassQueues) push(class int, f link.Frame, now int64) {
	c.q[class&7].push(f, now)
	c.Frames[class&7]++
	c.n++
}

// Head returns the class whose frame goes next at now: the highest class
// that holds a frame and is not paused; false if there is none.
func (c *ClassQueues) Head(now int64) (int, bool) {
	if c.n == 0 {
		return 0, false
	}
	paused := c.Gate.PausedMask(now)
	for class := pfc.NumClasses - 1; class >= 0; class-- {
		if paused&(1<<class) == 0 && !c.q[class].empty() {
			return class, true
		}
	}
	return 0, false
}

// Front is the oldest frame of class.
func (c *ClassQueues) Front(class int) link.Frame { return c.q[class].front() }

// Pop drops the oldest frame of class (after Front).
func (c *ClassQueues) Pop(class int) {
	c.q[class].pop()
	c.n--
}

// DropOldest drops all but the newest keep frames of each class, paused
// or not, and of those any received before since, handing each dropped
// frame to release; it returns how many it dropped.
func (c *ClassQueues) DropOldest(keep int, since int64, release func(uint64)) int {
	n := 0
	for class := range c.q {
		q := &c.q[class]
		for !q.empty() && (int(q.tail-q.head) > keep || q.frontAt() < since) {
			release(uint64(q.front().H))
			c.Pop(class)
			n++
		}
	}
	return n
}

// frameRing is a fixed FIFO of frames and when each arrived (size a power
// of two).
type frameRing struct {
	buf        []link.Frame
	at         []int64
	head, tail uint32 // tail-head = length
}

func (q *frameRing) push(f link.Frame, now int64) {
	i := q.tail & uint32(len(q.buf)-1)
	q.buf[i], q.at[i] = f, now
	q.tail++
}
func (q *frameRing) front() link.Frame { return q.buf[q.head&uint32(len(q.buf)-1)] }
func (q *frameRing) frontAt() int64    { return q.at[q.head&uint32(len(q.buf)-1)] }
func (q *frameRing) pop()              { q.head++ }
func (q *frameRing) empty() bool       { return q.head == q.tail }
func (q *frameRing) len() int          { return int(q.tail - q.head) }

// Classify returns a frame's 802.1p traffic class: the PCP of its outer
// VLAN tag (0x8100 or 0x88A8); else, for IPv4 and IPv6, the top three bits
// of the DSCP (the class selector, as switches map it by default); else 0.
func Classify(b []byte) int {
	if len(b) < 14 {
		return 0
	}
	et := binary.BigEndian.Uint16(b[12:])
	switch et {
	case 0x8100, 0x88A8:
		if len(b) < 16 {
			return 0
		}
		return int(b[14] >> 5)
	case 0x0800:
		if len(b) < 16 {
			return 0
		}
		return int(b[15] >> 5) // TOS byte: DSCP<<2 | ECN
	case 0x86DD:
		if len(b) < 16 {
			return 0
		}
		// Version (4 bits), traffic class (8), flow label (20).
		tc := byte(binary.BigEndian.Uint16(b[14:]) >> 4)
		return int(tc >> 5)
	}
	return 0
}
