package dataplane

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/linkfabric/linkfabric/xdp"
)

// Port rate and egress buffer.
//
// veth has no speed, and AF_XDP transmit bypasses the qdiscs, so a port
// whose PortShape has a Rate gets a shaper in front of its TX rings: a token
// bucket at the line rate and a bounded FIFO per lane with tail drop, as a
// switch's egress port has. The worker queues what the pipeline sends on the
// port, and each loop places on the TX rings what the bucket allows
// (priority lane first; a backlogged data lane a batch at a time, see
// shapeBatch); its next deadline includes when the bucket covers the next
// queued frame (or batch). No timer, no allocation per frame. A port without
// a Rate has no shaper: frames go to the TX ring as before.

// PortShape limits what one port transmits.
type PortShape struct {
	// Rate is the line rate in bit/s; each frame costs its length plus
	// WireOverhead bytes, as on Ethernet. 0: unlimited.
	Rate uint64 `json:"rate_bps"`
	// Buffer is the egress queue in bytes: a frame that does not fit is
	// dropped (tail drop) and counted. Default DefaultPortBuffer. The queue
	// also holds at most --ring-size frames.
	Buffer int `json:"buffer_bytes"`
	// Burst is the token bucket's depth in bytes: the most that leaves at
	// line speed after an idle time. Default: 500 µs at Rate, at least
	// MinPortBurst and one UMEM frame (with WireOverhead).
	Burst int `json:"burst_bytes"`
}

// WireOverhead is what a frame costs on the wire beyond its bytes: preamble
// and start delimiter (8), FCS (4) and inter-frame gap (12).
const WireOverhead = 24

// Defaults of PortShape.
const (
	DefaultPortBuffer = 256 << 10
	MinPortBurst      = 16 << 10
	maxPortBurst      = 64 << 20 // keeps the bucket's arithmetic in int64
)

// shapeBatch is the most time a backlogged port's frames wait to leave
// together (ns): while the data lane holds this much of the port's rate
// (and no more than half the bucket), it places nothing until the bucket
// covers all of it. Placed one or two frames at a time as the bucket
// allowed, a port kept busy at its rate cost its worker a wakeup and a
// kick (a copy-mode sendto) every few frames: on fabric3's 1 Gbit/s host
// port under one TCP flow, 4.4 frames a kick. The bucket holds twice the
// batch, so the wait loses the port no time (the rate is kept), and a
// queue shorter than a batch (an idle port's first frames, a ping) leaves
// as before. A port slower than two full-sized frames per shapeBatch
// never waits.
const shapeBatch = 200_000

// maxLateCatchUp is the most lateness of its worker a port catches up on.
const maxLateCatchUp = 10_000_000

// tokenByte is one byte in the bucket's units: the bucket gains Rate units
// per nanosecond, so a byte (8 bits) is 8e9 units and rates are exact.
const tokenByte = 8_000_000_000

// shaper is a port's token bucket and egress queues (one FIFO per lane
// that the worker kicks). It is used by the worker's goroutine only; its
// counters are published to EgressCounters by publish.
type shaper struct {
	rate      int64 // bit/s = units per ns
	depth     int64 // bucket depth, units
	late      int64 // maxLateCatchUp at rate, units
	batch     int64 // units: a data lane holding this much waits for it whole (0: never)
	tokens    int64
	last      int64 // when the bucket was last filled (worker clock)
	maxBytes  int
	maxFrames int
	lanes     []descRing
	frames    int // queued, all lanes
	bytes     int

	peakFrames, peakBytes int
	dropped, droppedBytes uint64
	lateNs                int64
	idleNs                int64 // nothing queued, the bucket full

	c                             *EgressCounters
	publishedDrops                uint64
	lastPeakFrames, lastPeakBytes int
}

// newShaper makes a shaper for lanes lanes at shape s (defaults filled in),
// holding at most maxFrames frames. The bucket starts full at now.
func newShaper(s PortShape, lanes, maxFrames int, now int64, c *EgressCounters) *shaper {
	size := 1
	for size < maxFrames {
		size <<= 1
	}
	sh := &shaper{
		rate:      int64(s.Rate),
		depth:     int64(s.Burst) * tokenByte,
		late:      min(int64(s.Rate), maxPortBurst*tokenByte/maxLateCatchUp) * maxLateCatchUp,
		last:      now,
		maxBytes:  s.Buffer,
		maxFrames: maxFrames,
		lanes:     make([]descRing, lanes),
		c:         c,
	}
	sh.tokens = sh.depth
	if b := min(sh.depth/2, sh.rate*shapeBatch); b >= 2*(1514+WireOverhead)*tokenByte {
		sh.batch = b
	}
	for i := range sh.lanes {
		sh.lanes[i] = descRing{buf: make([]xdp.Desc, size), mask: uint32(size - 1)}
	}
	return sh
}

// cost is what frame d takes from the bucket.
func cost(d xdp.Desc) int64 { return (int64(d.Len) + WireOverhead) * tokenByte }

// fill adds the tokens earned since the last fill, up to the depth (the
// time beyond, with nothing queued, is counted as the port's idle time);
// while frames waited, up to what they cost, at most maxLateCatchUp's worth
// more:
// a switch's port keeps sending its queue while its CPU is busy, and a
// worker kept from running (10-150 ms on a loaded 2-core machine) would
// otherwise idle its port for all that time less the depth (on the cells
// incast's 100 Mbit/s port, a fifth to a third of a run). The lateness
// beyond is counted as the port's time lost.
func (sh *shaper) fill(now int64) {
	dt := now - sh.last
	if dt <= 0 {
		return
	}
	sh.last = now
	target := sh.depth
	var queued int64
	if sh.frames > 0 {
		queued = int64(min(sh.bytes+sh.frames*WireOverhead, maxPortBurst)) * tokenByte
		target = max(sh.depth, min(queued, sh.depth+sh.late))
	}
	if sh.tokens >= target {
		if sh.frames == 0 {
			sh.idleNs += dt
		}
		return
	}
	if room := target - sh.tokens; dt >= (room+sh.rate-1)/sh.rate {
		sh.tokens = target
		switch {
		case queued > target:
			sh.lateNs += dt - (room+sh.rate-1)/sh.rate
		case sh.frames == 0:
			sh.idleNs += dt - (room+sh.rate-1)/sh.rate
		}
	} else {
		sh.tokens += dt * sh.rate
	}
}

// enqueue queues d on lane; false if the queue is full (tail drop, counted).
func (sh *shaper) enqueue(lane int, d xdp.Desc) bool {
	if lane >= len(sh.lanes) {
		lane = LaneData
	}
	if sh.frames >= sh.maxFrames || sh.bytes+int(d.Len) > sh.maxBytes {
		sh.dropped++
		sh.droppedBytes += uint64(d.Len)
		return false
	}
	sh.lanes[lane].push(d)
	sh.frames++
	sh.bytes += int(d.Len)
	if sh.frames > sh.peakFrames {
		sh.peakFrames = sh.frames
	}
	if sh.bytes > sh.peakBytes {
		sh.peakBytes = sh.bytes
	}
	return true
}

// dequeue appends to out the frames at the head of lane that the bucket
// covers, at most max of them, and returns out.
func (sh *shaper) dequeue(lane, max int, out []xdp.Desc) []xdp.Desc {
	q := &sh.lanes[lane]
	if sh.held(lane) {
		return out
	}
	for n := 0; n < max && !q.empty(); n++ {
		d := q.front()
		c := cost(d)
		if c > sh.tokens {
			break
		}
		sh.tokens -= c
		q.pop()
		sh.frames--
		sh.bytes -= int(d.Len)
		out = append(out, d)
	}
	return out
}

// held says whether lane's frames wait for a whole batch: the data lane
// (no other lane has frames) holds a batch's worth and the bucket does not
// cover it yet. A frame longer than a batch (a jumbo frame on a port whose
// bucket is small) waits for itself only. See shapeBatch.
func (sh *shaper) held(lane int) bool {
	if sh.batch == 0 || lane != LaneData || sh.tokens >= sh.batch || sh.lanes[lane].len() != sh.frames ||
		sh.frames == 0 || cost(sh.lanes[lane].front()) > sh.batch {
		return false
	}
	return int64(sh.bytes+sh.frames*WireOverhead)*tokenByte >= sh.batch
}

// queued is the number of frames waiting on lane.
func (sh *shaper) queued(lane int) int { return sh.lanes[lane].len() }

// room is how many more frames the queue takes (its byte limit may still
// drop some).
func (sh *shaper) room() int { return sh.maxFrames - sh.frames }

// next is when the bucket covers the first waiting frame (priority lane
// first; a held batch whole), math.MaxInt64 if nothing waits. It expects fill(now) done.
func (sh *shaper) next(now int64) int64 {
	if sh.frames == 0 {
		return math.MaxInt64
	}
	for i := len(sh.lanes) - 1; i >= 0; i-- {
		if q := &sh.lanes[i]; !q.empty() {
			need := cost(q.front()) - sh.tokens
			if sh.held(i) {
				need = sh.batch - sh.tokens
			}
			if need <= 0 {
				return now
			}
			return now + (need+sh.rate-1)/sh.rate
		}
	}
	return math.MaxInt64
}

// publish copies the counters to EgressCounters (atomics) if they changed.
func (sh *shaper) publish() {
	c := sh.c
	c.Queued.Store(uint64(sh.frames))
	c.LateNs.Store(uint64(sh.lateNs))
	c.IdleNs.Store(uint64(sh.idleNs))
	c.QueuedBytes.Store(uint64(sh.bytes))
	if sh.dropped != sh.publishedDrops {
		c.Dropped.Store(sh.dropped)
		c.DroppedBytes.Store(sh.droppedBytes)
		sh.publishedDrops = sh.dropped
	}
	if sh.peakFrames != sh.lastPeakFrames || sh.peakBytes != sh.lastPeakBytes {
		c.PeakFrames.Store(uint64(sh.peakFrames))
		c.PeakBytes.Store(uint64(sh.peakBytes))
		sh.lastPeakFrames, sh.lastPeakBytes = sh.peakFrames, sh.peakBytes
	}
}

// descRing is a FIFO of descriptors with a power-of-two capacity.
type descRing struct {
	buf        []xdp.Desc
	mask       uint32
	head, tail uint32
}

func (r *descRing) len() int        { return int(r.tail - r.head) }
func (r *descRing) empty() bool     { return r.head == r.tail }
func (r *descRing) front() xdp.Desc { return r.buf[r.head&r.mask] }
func (r *descRing) pop()            { r.head++ }
func (r *descRing) push(d xdp.Desc) { r.buf[r.tail&r.mask] = d; r.tail++ }

// maxPortRate bounds PortShape.Rate (1 Tbit/s).
const maxPortRate = 1_000_000_000_000

// shapeDefaults checks Shape against the ports and fills in its defaults
// (on a copy: the caller's map is left alone).
func (c *Config) shapeDefaults() error {
	if len(c.Shape) == 0 {
		return nil
	}
	names := c.portNames()
	c.Shape = maps.Clone(c.Shape)
	for name, s := range c.Shape {
		if !slices.Contains(names, name) {
			return fmt.Errorf("dataplane: --port-rate/--port-buffer name %s, which is not a port of this node (ports: %s)", name, strings.Join(names, ", "))
		}
		if s.Rate == 0 {
			if s.Buffer != 0 || s.Burst != 0 {
				return fmt.Errorf("dataplane: --port-buffer %s=%d: %s has no --port-rate; the buffer is the queue in front of a rate limit (without one the TX ring is the buffer)", name, s.Buffer, name)
			}
			delete(c.Shape, name)
			continue
		}
		if s.Rate > maxPortRate {
			return fmt.Errorf("dataplane: --port-rate %s=%d bit/s: want at most 1T", name, s.Rate)
		}
		if s.Buffer == 0 {
			s.Buffer = DefaultPortBuffer
		}
		if s.Buffer < int(c.FrameSize) {
			return fmt.Errorf("dataplane: --port-buffer %s=%d: want at least one UMEM frame (--frame-size %d bytes)", name, s.Buffer, c.FrameSize)
		}
		if s.Burst == 0 {
			// 500 µs at Rate, and a UMEM frame at least (jumbo frames).
			s.Burst = max(int(s.Rate/16000), MinPortBurst, int(c.FrameSize)+WireOverhead)
		}
		if s.Burst < int(c.FrameSize)+WireOverhead || s.Burst > maxPortBurst {
			return fmt.Errorf("dataplane: port %s: burst %d bytes: want %d (a frame of --frame-size %d) to %d", name, s.Burst, int(c.FrameSize)+WireOverhead, c.FrameSize, maxPortBurst)
		}
		c.Shape[name] = s
	}
	return nil
}

// shapedPorts is the number of ports with a rate limit.
func (c *Config) shapedPorts() int {
	n := 0
	for _, s := range c.Shape {
		if s.Rate > 0 {
			n++
		}
	}
	return n
}
