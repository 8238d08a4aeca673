package dataplane

import (
	"math"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/xdp"
)

// shaperRun offers frames of size bytes to a shaper at offered bit/s (of
// wire bytes) for dur ns of virtual time, waking when the next frame arrives
// or when next says the bucket covers a waiting one, as the worker does.
// It returns the wire bytes sent, and checks at every wake-up that next was
// exact: nothing could leave 1 ns earlier.
func shaperRun(t *testing.T, sh *shaper, size int, offered float64, dur int64) (wire int64) {
	t.Helper()
	gap := int64(float64((size+WireOverhead)*8) * 1e9 / offered)
	out := make([]xdp.Desc, 0, 4096)
	var now, arrive int64
	for now < dur {
		for arrive <= now {
			sh.enqueue(LaneData, xdp.Desc{Addr: uint64(arrive), Len: uint32(size)})
			arrive += gap
		}
		sh.fill(now)
		out = sh.dequeue(LaneData, math.MaxInt, out[:0])
		for _, d := range out {
			wire += int64(d.Len) + WireOverhead
		}
		next := sh.next(now)
		if next <= now {
			t.Fatalf("t=%d: next %d with %d frames waiting after a dequeue without limit", now, next, sh.frames)
		}
		if next != math.MaxInt64 {
			// 1 ns before next nothing may leave (the bucket does not
			// cover the head frame, or a batch is held); at next the
			// head frame may.
			c := *sh
			c.fill(next - 1)
			if cost(c.lanes[LaneData].front()) <= c.tokens && !c.held(LaneData) {
				t.Fatalf("t=%d: next %d is late: the frame could leave at %d", now, next, next-1)
			}
			c.fill(next)
			if cost(c.lanes[LaneData].front()) > c.tokens || c.held(LaneData) {
				t.Fatalf("t=%d: next %d is early: nothing may leave then", now, next)
			}
		}
		now = min(next, arrive)
	}
	return wire
}

func newTestShaper(rate uint64, buffer, burst, frames int) (*shaper, *EgressCounters) {
	c := &EgressCounters{}
	return newShaper(PortShape{Rate: rate, Buffer: buffer, Burst: burst}, 2, frames, 0, c), c
}

// TestShaperRate: offered twice its rate for 10 s, a shaper sends its rate
// within 1% (of wire bytes, frames plus WireOverhead), and every frame it
// did not send is queued or counted as dropped.
func TestShaperRate(t *testing.T) {
	for _, tc := range []struct {
		rate uint64
		size int
	}{{200e6, 1514}, {100e6, 64}, {500e6, 777}, {10e9, 9000}} {
		sh, c := newTestShaper(tc.rate, 256<<10, MinPortBurst, 2048)
		const dur = 10e9
		wire := shaperRun(t, sh, tc.size, 2*float64(tc.rate), dur)
		got := float64(wire*8) / (dur / 1e9)
		if math.Abs(got-float64(tc.rate)) > 0.01*float64(tc.rate) {
			t.Errorf("rate %d, frames of %d B: sent %.4g bit/s", tc.rate, tc.size, got)
		}
		sh.publish()
		if c.Dropped.Load() == 0 || c.PeakBytes.Load() == 0 {
			t.Errorf("rate %d: offered twice the rate, yet %d dropped, peak %d bytes", tc.rate, c.Dropped.Load(), c.PeakBytes.Load())
		}
		if c.DroppedBytes.Load() != c.Dropped.Load()*uint64(tc.size) {
			t.Errorf("rate %d: dropped %d frames and %d bytes of %d-byte frames", tc.rate, c.Dropped.Load(), c.DroppedBytes.Load(), tc.size)
		}
	}
}

// TestShaperBurst: after an idle time (nothing queued) a shaper sends at
// most its burst at once (and all of it, less one frame); the bucket never
// holds more, however long the idle time; and from then on it keeps to the
// rate.
func TestShaperBurst(t *testing.T) {
	const rate, burst, size = 100e6, 64 << 10, 1000
	var sh *shaper
	for _, idle := range []int64{1e9, 1e12, 1e15} { // up to 11 days: no overflow
		sh, _ = newTestShaper(rate, 8<<20, burst, 8192)
		sh.tokens = 0
		sh.fill(sh.last + idle)
		for sh.frames < 8000 {
			sh.enqueue(LaneData, xdp.Desc{Len: size})
		}
		out := sh.dequeue(LaneData, math.MaxInt, nil)
		w := len(out) * (size + WireOverhead)
		if w > burst || w <= burst-(size+WireOverhead) {
			t.Errorf("after %d ns idle: %d wire bytes at once; the burst is %d", idle, w, burst)
		}
	}
	// Over the next 100 ms: the rate, within one frame.
	start, sent := sh.last, 0
	for now := start; now <= start+100e6; now += 10e3 {
		sh.fill(now)
		sent += len(sh.dequeue(LaneData, math.MaxInt, nil)) * (size + WireOverhead)
	}
	if want := rate / 8 / 10; math.Abs(float64(sent)-want) > size+WireOverhead {
		t.Errorf("100 ms after the burst: %d wire bytes, want %.0f", sent, want)
	}
}

// TestShaperTailDrop: the queue keeps its byte and frame limits, drops and
// counts what exceeds them, serves the priority lane first, and its room
// and peak follow.
func TestShaperTailDrop(t *testing.T) {
	sh, c := newTestShaper(1e6, 10_000, MinPortBurst, 8)
	sh.tokens = 0
	for i := 0; i < 12; i++ {
		sh.enqueue(LaneData, xdp.Desc{Addr: uint64(i), Len: 1500}) // 6 fit the 10,000 bytes
	}
	if sh.frames != 6 || sh.bytes != 9000 || sh.room() != 2 {
		t.Errorf("byte limit: %d frames, %d bytes queued, room %d", sh.frames, sh.bytes, sh.room())
	}
	for i := 0; i < 4; i++ {
		sh.enqueue(LanePrio, xdp.Desc{Addr: 100 + uint64(i), Len: 100}) // 2 fit the 8 frames
	}
	sh.publish()
	if c.Dropped.Load() != 8 || c.DroppedBytes.Load() != 6*1500+2*100 || c.PeakFrames.Load() != 8 || c.PeakBytes.Load() != 9200 || c.Queued.Load() != 8 {
		t.Errorf("counters: dropped %d (%d B), peak %d frames %d B, queued %d",
			c.Dropped.Load(), c.DroppedBytes.Load(), c.PeakFrames.Load(), c.PeakBytes.Load(), c.Queued.Load())
	}
	// The priority lane's head is what next waits for.
	if n := sh.next(0); n != (100+WireOverhead)*8*1000 { // 124 bytes at 1 Mbit/s
		t.Errorf("next %d ns; want the time for the priority frame (124 B at 1 Mbit/s)", n)
	}
	sh.fill(1e9)
	out := sh.dequeue(LanePrio, math.MaxInt, nil)
	out = sh.dequeue(LaneData, 3, out)
	if len(out) != 5 || out[0].Addr != 100 || out[1].Addr != 101 || out[2].Addr != 0 || out[4].Addr != 2 {
		t.Errorf("dequeued %v; want the 2 priority frames, then 3 data frames in order", out)
	}
}

// TestShaperNoAlloc: queueing and placing frames allocates nothing.
func TestShaperNoAlloc(t *testing.T) {
	sh, _ := newTestShaper(1e9, 1<<20, MinPortBurst, 1024)
	out := make([]xdp.Desc, 0, 1024)
	now := int64(0)
	if n := testing.AllocsPerRun(100, func() {
		for i := 0; i < 64; i++ {
			sh.enqueue(i&1, xdp.Desc{Len: 1500})
		}
		now += 1e6
		sh.fill(now)
		out = sh.dequeue(LanePrio, 1024, out[:0])
		out = sh.dequeue(LaneData, 1024, out)
		sh.next(now)
		sh.publish()
	}); n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}

// TestShapeConfig: shapes are checked against the node's ports and filled
// in (buffer 256 KiB, burst 500 µs at the rate, at least 16 KiB) on a copy.
func TestShapeConfig(t *testing.T) {
	in := map[string]PortShape{"host0": {Rate: 1e9}, "link0": {Rate: 10e6, Buffer: 8192}}
	c := Config{HostPort: "host0", LinkPort: "link0", Shape: in}
	if err := c.defaults(); err != nil {
		t.Fatal(err)
	}
	if h := c.Shape["host0"]; h.Buffer != DefaultPortBuffer || h.Burst != 62500 {
		t.Errorf("host0 at 1G: %+v; want buffer %d, burst 62500 (500 µs)", h, DefaultPortBuffer)
	}
	if l := c.Shape["link0"]; l.Buffer != 8192 || l.Burst != MinPortBurst {
		t.Errorf("link0 at 10M: %+v; want buffer 8192, burst %d", l, MinPortBurst)
	}
	if in["host0"].Buffer != 0 {
		t.Error("defaults changed the caller's map")
	}
	for _, tc := range []struct {
		shape map[string]PortShape
		want  string
	}{
		{map[string]PortShape{"link9": {Rate: 1e9}}, "link9, which is not a port"},
		{map[string]PortShape{"link0": {Buffer: 1 << 20}}, "link0 has no --port-rate"},
		{map[string]PortShape{"link0": {Rate: 1e9, Buffer: 1000}}, "--port-buffer link0=1000"},
		{map[string]PortShape{"link0": {Rate: 2e12}}, "at most 1T"},
		{map[string]PortShape{"link0": {Rate: 1e9, Burst: 1500}}, "burst 1500"},
	} {
		c := Config{HostPort: "host0", LinkPort: "link0", Shape: tc.shape}
		if err := c.defaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error with %q", tc.shape, err, tc.want)
		}
	}
}

// TestShaperLateWorker: a port whose frames waited while its worker ran
// late sends, when the worker runs again, what the wire would have carried
// meanwhile (as a switch's port keeps sending while its CPU is busy), up to
// maxLateCatchUp of its rate beyond the burst; the rest of the lateness is
// counted as the port's time lost. An idle port gains nothing from it.
func TestShaperLateWorker(t *testing.T) {
	const rate, burst, size = 100e6, MinPortBurst, 1000
	wire := int64(size + WireOverhead)
	for _, late := range []int64{5e6, 1e9} {
		sh, c := newTestShaper(rate, 8<<20, burst, 8192)
		for i := 0; i < 8000; i++ {
			sh.enqueue(LaneData, xdp.Desc{Len: size})
		}
		sh.fill(0)
		sh.dequeue(LaneData, math.MaxInt, nil) // the first burst
		sh.fill(late)
		got := int64(len(sh.dequeue(LaneData, math.MaxInt, nil))) * wire
		// The bucket was empty after the first burst: the wire's worth of
		// the lateness, at most the burst and maxLateCatchUp's worth.
		want := min(late*rate/8e9, int64(burst)+maxLateCatchUp*rate/8e9)
		if got > want || got <= want-2*wire {
			t.Errorf("frames waited while the worker was %d ns late: %d wire bytes sent then, want %d", late, got, want)
		}
		sh.publish()
		lost := late - maxLateCatchUp - int64(burst)*8e9/rate
		if d := int64(c.LateNs.Load()) - max(lost, 0); d < -1e4 || d > 1e4 {
			t.Errorf("%d ns late: %d ns counted lost, want %d", late, c.LateNs.Load(), max(lost, 0))
		}
	}
	// Idle (nothing waited): the burst only, and no time lost.
	sh, c := newTestShaper(rate, 8<<20, burst, 8192)
	sh.fill(1e9)
	for i := 0; i < 8000; i++ {
		sh.enqueue(LaneData, xdp.Desc{Len: size})
	}
	if got := int64(len(sh.dequeue(LaneData, math.MaxInt, nil))) * wire; got > burst {
		t.Errorf("after an idle second: %d wire bytes at once, the burst is %d", got, burst)
	}
	sh.publish()
	if c.LateNs.Load() != 0 {
		t.Errorf("an idle port counted %d ns lost", c.LateNs.Load())
	}
}

// TestShaperIdle: a port counts as idle the time it had nothing to send
// beyond what refilled its bucket; a port whose queue never ran dry counts
// none, even with its worker late.
func TestShaperIdle(t *testing.T) {
	const rate, burst, size = 100e6, MinPortBurst, 1000
	wire := int64(size + WireOverhead)
	refill := int64(burst) * 8e9 / rate // an empty bucket's refill time, ns

	// Busy: a queue deeper than the run, the worker every 100 µs, once 5 ms late.
	sh, c := newTestShaper(rate, 8<<20, burst, 8192)
	for i := 0; i < 8000; i++ {
		sh.enqueue(LaneData, xdp.Desc{Len: size})
	}
	for now := int64(0); now <= 50e6; now += 100e3 {
		if now == 20e6 {
			now += 5e6
		}
		sh.fill(now)
		sh.dequeue(LaneData, math.MaxInt, nil)
	}
	sh.publish()
	if c.IdleNs.Load() != 0 {
		t.Errorf("a port with frames always waiting counted %d ns idle", c.IdleNs.Load())
	}

	// Starved: one frame each 1 ms (a tenth of the port's rate), the bucket
	// full from the start: every gap but each frame's refill is idle.
	sh, c = newTestShaper(rate, 8<<20, burst, 8192)
	const gap, n = 1e6, 100
	for i := int64(1); i <= n; i++ {
		sh.fill(i * gap)
		sh.enqueue(LaneData, xdp.Desc{Len: size})
		if len(sh.dequeue(LaneData, math.MaxInt, nil)) != 1 {
			t.Fatalf("frame %d waited in a full bucket", i)
		}
	}
	sh.fill((n + 1) * gap)
	sh.publish()
	refillFrame := wire * 8e9 / rate
	want := (n+1)*gap - n*refillFrame
	if got := int64(c.IdleNs.Load()); got < want-n || got > want+n {
		t.Errorf("a port sending a frame each %d ns: %d ns idle, want %d", int64(gap), got, want)
	}

	// Emptied: a burst's worth of frames sent at once, then nothing for a
	// second: idle from the bucket's refill on.
	sh, c = newTestShaper(rate, 8<<20, burst, 8192)
	sh.fill(0)
	for i := int64(0); i < int64(burst)/wire; i++ {
		sh.enqueue(LaneData, xdp.Desc{Len: size})
	}
	sent := int64(len(sh.dequeue(LaneData, math.MaxInt, nil))) * wire
	sh.fill(1e9)
	sh.publish()
	want = 1e9 - sent*8e9/rate
	if got := int64(c.IdleNs.Load()); got < want-1e3 || got > want+1e3 {
		t.Errorf("a second after a burst of %d bytes: %d ns idle, want %d (refill %d ns)", sent, got, want, refill)
	}
}

// TestShaperBatch: a backlogged port places its frames a batch at a time
// (shapeBatch of its rate), keeping its rate, so that its worker kicks the
// TX ring that many times fewer; a short queue (a ping on an idle port)
// leaves at once, and a frame on the priority lane is never held.
func TestShaperBatch(t *testing.T) {
	const rate, size = 1e9, 1514
	wire := int64(size + WireOverhead)
	sh, _ := newTestShaper(rate, 2<<20, 62500, 2048)
	if want := int64(rate * shapeBatch); sh.batch != want {
		t.Fatalf("batch %d units, want %d (shapeBatch at 1 Gbit/s)", sh.batch, want)
	}
	// Offered 1.5 times the rate for 1 s, the worker at each next.
	gap := wire * 8 * 1e9 * 2 / 3 / rate
	var now, arrive, sent int64
	kicks, small := 0, 0
	for now < 1e9 {
		for arrive <= now {
			sh.enqueue(LaneData, xdp.Desc{Len: size})
			arrive += gap
		}
		sh.fill(now)
		if out := sh.dequeue(LaneData, math.MaxInt, nil); len(out) > 0 {
			sent += int64(len(out)) * wire
			// From 10 ms on: the queue built up (before, the full
			// bucket let each frame go as it came).
			if now > 10e6 {
				kicks++
				if int64(len(out))*wire*tokenByte < sh.batch-wire*tokenByte {
					small++
				}
			}
		}
		now = min(sh.next(now), arrive)
	}
	if got := float64(sent*8) / 1; math.Abs(got-rate) > 0.01*rate {
		t.Errorf("backlogged for 1 s: %.4g bit/s, want the rate", got)
	}
	perBatch := rate * shapeBatch / tokenByte / wire * wire // whole frames' wire bytes
	if max := int(0.99*rate/8/perBatch) + 2; kicks > max {
		t.Errorf("backlogged for 990 ms: %d placements, want at most %d (a batch each)", kicks, max)
	}
	if small > 0 {
		t.Errorf("backlogged: %d placements of less than a batch", small)
	}
	// An idle port: one frame leaves at once, as does a priority frame
	// behind a held batch.
	sh, _ = newTestShaper(rate, 2<<20, 62500, 2048)
	sh.fill(1e9)
	sh.enqueue(LaneData, xdp.Desc{Len: 98})
	if n := len(sh.dequeue(LaneData, math.MaxInt, nil)); n != 1 {
		t.Errorf("a ping on an idle port: %d frames left, want 1", n)
	}
	sh.tokens = 0
	for i := 0; i < 40; i++ {
		sh.enqueue(LaneData, xdp.Desc{Len: size})
	}
	sh.fill(sh.last + 2*wire*8) // two frames' worth: a batch waits
	if !sh.held(LaneData) || len(sh.dequeue(LaneData, math.MaxInt, nil)) != 0 {
		t.Fatalf("40 frames queued, two frames' tokens: the batch is not held")
	}
	sh.enqueue(LanePrio, xdp.Desc{Len: 100})
	if sh.held(LaneData) {
		t.Errorf("held with a priority frame queued")
	}
	if n := len(sh.dequeue(LanePrio, math.MaxInt, nil)); n != 1 {
		t.Errorf("a priority frame behind a held batch: %d left, want 1", n)
	}
}
