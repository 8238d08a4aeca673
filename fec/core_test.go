package fec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
)

const (
	tBuf  = 2048
	tHead = 256
)

// pair is a sender and a receiver joined by a hand-driven wire.
type pair struct {
	t      *testing.T
	a, b   *linksim.Pool
	s      *Sender
	r      *Receiver
	wire   []link.Frame // sent, not yet handed over (in the receiver's pool)
	got    [][]byte
	sentID int
}

func newPair(t *testing.T, sc SenderConfig, rc ReceiverConfig) *pair {
	t.Helper()
	return newPairPools(t, 512, 4096, sc, rc)
}

// newPairPools is newPair with na buffers in the sender's pool, nb in the
// receiver's.
func newPairPools(t *testing.T, na, nb int, sc SenderConfig, rc ReceiverConfig) *pair {
	t.Helper()
	p := &pair{t: t, a: linksim.NewPool(na, tBuf, tHead), b: linksim.NewPool(nb, tBuf, tHead)}
	sc.BufLen = tBuf - tHead
	var err error
	if p.s, err = NewSender(sc, p.a); err != nil {
		t.Fatal(err)
	}
	if p.r, err = NewReceiver(rc, p.b); err != nil {
		t.Fatal(err)
	}
	return p
}

// hostFrame returns frame id of length n: MACs, EtherType and payload vary with id.
func hostFrame(id, n int) []byte {
	b := make([]byte, max(n, MinFrame))[:n]
	if n < MinFrame {
		return b
	}
	b[5], b[11] = byte(id), byte(id>>8)
	binary.BigEndian.PutUint16(b[12:], uint16(0x0800+id%5))
	for k := 14; k < n; k++ {
		b[k] = byte(id*13 + k)
	}
	return b
}

// send offers host frame id of length n at now and moves the sender's output
// to the wire.
func (p *pair) send(now int64, n int) {
	h, ok := p.a.Alloc(n)
	if !ok {
		p.t.Fatal("sender pool exhausted")
	}
	copy(p.a.Bytes(h, n), hostFrame(p.sentID, n))
	p.sentID++
	p.s.Send(now, link.Frame{H: h, Len: n})
	p.flushSender()
}

func (p *pair) flushSender() {
	for _, f := range p.s.Out.Send {
		h, _ := p.b.Alloc(f.Len)
		copy(p.b.Bytes(h, f.Len), p.a.Bytes(f.H, f.Len))
		p.wire = append(p.wire, link.Frame{H: h, Len: f.Len})
	}
	for _, f := range p.s.Out.Free {
		p.a.Free(f.H)
	}
	p.s.Out.Reset()
}

// deliver hands the wire to the receiver at now, dropping the frames whose
// index in the wire is in drop.
func (p *pair) deliver(now int64, drop ...int) {
	for i, f := range p.wire {
		if contains(drop, i) {
			p.b.Free(f.H)
			continue
		}
		p.r.Receive(now, f)
	}
	p.wire = p.wire[:0]
	p.collect()
}

func (p *pair) collect() {
	for _, f := range p.r.Out.Deliver {
		p.got = append(p.got, bytes.Clone(p.b.Bytes(f.H, f.Len)))
	}
	for _, f := range p.r.Out.Free {
		p.b.Free(f.H)
	}
	p.r.Out.Reset()
}

func (p *pair) poll(now int64) int64 {
	d := p.r.Poll(now)
	p.collect()
	return d
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// ids returns the ids of the delivered frames, checking their bytes.
func (p *pair) ids(lens map[int]int) []int {
	var out []int
	for _, b := range p.got {
		id := int(b[5]) | int(b[11])<<8
		if !bytes.Equal(b, hostFrame(id, lens[id])) {
			p.t.Fatalf("delivered frame %d (%d bytes) differs from the frame sent", id, len(b))
		}
		out = append(out, id)
	}
	return out
}

func (p *pair) quiet() {
	p.t.Helper()
	p.r.Reset(0, p.r.high)
	p.collect()
	if n := p.a.InUse() + p.b.InUse(); n != 0 {
		p.t.Errorf("%d frames still held", n)
	}
	if e := append(p.a.Errors(), p.b.Errors()...); len(e) > 0 {
		p.t.Errorf("ownership errors: %v", e)
	}
}

// A group with its second frame lost: in order, the frames behind the hole
// wait for the parity, and the recovered frame is the one sent, MACs,
// EtherType and length included.
func TestRecoverInOrder(t *testing.T) {
	p := newPair(t, SenderConfig{N: 4}, ReceiverConfig{Wait: 1000})
	lens := map[int]int{0: 100, 1: 1514, 2: 60, 3: 700}
	for i := range 4 {
		p.send(0, lens[i])
	}
	if len(p.wire) != 5 {
		t.Fatalf("wire has %d frames, want 4 data + 1 parity", len(p.wire))
	}
	if pl := p.wire[4].Len; pl != ParityOffset+1514 {
		t.Errorf("parity frame %d bytes, want ParityOffset + the longest frame = %d", pl, ParityOffset+1514)
	}
	par := p.wire[4]
	p.r.Receive(0, p.wire[0])
	p.b.Free(p.wire[1].H) // lost
	p.r.Receive(0, p.wire[2])
	p.r.Receive(0, p.wire[3])
	p.wire = p.wire[:0]
	p.collect()
	if got := p.ids(lens); len(got) != 1 || got[0] != 0 {
		t.Fatalf("before the parity, delivered %v, want [0] (2 and 3 wait behind the hole)", got)
	}
	p.r.Receive(10, par)
	p.collect()
	if got := p.ids(lens); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("delivered %v, want [0 1 2 3]", got)
	}
	if p.r.Stats.Recovered != 1 || p.r.Stats.RecoverMax != 10 {
		t.Errorf("stats %+v", p.r.Stats)
	}
	p.quiet()
}

// The bounded wait: a hole holds later frames for exactly Wait (the deadline
// Poll returns), then they go; the frame recovered afterwards is delivered
// late rather than dropped.
func TestBoundedWait(t *testing.T) {
	const wait = 5000
	p := newPair(t, SenderConfig{N: 4, Flush: 1e6}, ReceiverConfig{Wait: wait, Hold: 10 * wait})
	lens := map[int]int{0: 80, 1: 80, 2: 80, 3: 80}
	for range 3 {
		p.send(0, 80)
	}
	p.deliver(100, 1) // frame 1 lost, no parity yet (the group is open)
	if d := p.poll(100); d != 100+wait {
		t.Fatalf("deadline %d, want detection + Wait = %d", d, 100+wait)
	}
	p.poll(100 + wait - 1)
	if got := p.ids(lens); !slices.Equal(got, []int{0}) {
		t.Fatalf("before Wait, delivered %v, want [0]", got)
	}
	p.poll(100 + wait)
	if got := p.ids(lens); !slices.Equal(got, []int{0, 2}) {
		t.Fatalf("at Wait, delivered %v, want [0 2]", got)
	}
	p.send(6000, 80) // closes the group: frame 3 and the parity
	p.deliver(6000)
	if got := p.ids(lens); !slices.Equal(got, []int{0, 2, 3, 1}) {
		t.Fatalf("delivered %v, want [0 2 3 1] (1 late, when the parity follows 3)", got)
	}
	if s := p.r.Stats; s.Skipped != 1 || s.Late != 1 || s.Lost != 0 {
		t.Errorf("skipped %d late %d lost %d, want 1 1 0", s.Skipped, s.Late, s.Lost)
	}
	p.quiet()

	// With Hold = Wait the group is released at Wait: the late parity is stale.
	p = newPair(t, SenderConfig{N: 4, Flush: 1e6}, ReceiverConfig{Wait: wait, Hold: wait})
	for range 3 {
		p.send(0, 80)
	}
	p.deliver(100, 1)
	p.poll(100 + wait)
	p.send(6000, 80)
	p.deliver(6000)
	if got := p.ids(lens); !slices.Equal(got, []int{0, 2, 3}) {
		t.Fatalf("Hold = Wait: delivered %v, want [0 2 3]", got)
	}
	if s := p.r.Stats; s.Lost != 1 || s.ParityStale != 1 {
		t.Errorf("Hold = Wait: lost %d stale parity %d, want 1 1", s.Lost, s.ParityStale)
	}
	p.quiet()
}

// Immediate delivery: frames go out as they arrive, the recovered one when
// its parity does; frames stay held (and are released) only for recovery.
func TestImmediate(t *testing.T) {
	p := newPair(t, SenderConfig{N: 3}, ReceiverConfig{Immediate: true, Wait: 1000})
	lens := map[int]int{0: 64, 1: 64, 2: 64}
	for range 3 {
		p.send(0, 64)
	}
	p.r.Receive(0, p.wire[1])
	p.r.Receive(0, p.wire[2])
	p.collect()
	if got := p.ids(lens); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("delivered %v, want [1 2] at once", got)
	}
	if p.r.Held() != 2 {
		t.Fatalf("held %d, want 2 (kept for the group's recovery)", p.r.Held())
	}
	p.r.Receive(1, p.wire[3])
	p.b.Free(p.wire[0].H)
	p.wire = p.wire[:0]
	p.collect()
	if got := p.ids(lens); !slices.Equal(got, []int{1, 2, 0}) {
		t.Fatalf("delivered %v, want [1 2 0]", got)
	}
	p.quiet()
}

// Replication: each frame goes Copies times; the receiver delivers one.
func TestReplicationDedup(t *testing.T) {
	p := newPair(t, SenderConfig{Copies: 3}, ReceiverConfig{Wait: 1000})
	lens := map[int]int{0: 90, 1: 90}
	p.send(0, 90)
	p.send(0, 90)
	if len(p.wire) != 6 {
		t.Fatalf("wire %d frames, want 6", len(p.wire))
	}
	p.deliver(0, 0, 1, 5) // frame 0: two of three copies lost; frame 1: one
	if got := p.ids(lens); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("delivered %v, want [0 1]", got)
	}
	if p.r.Stats.Dup != 1 || p.r.Stats.Frames != 3 {
		t.Errorf("dup %d frames %d, want 1 3", p.r.Stats.Dup, p.r.Stats.Frames)
	}
	p.quiet()
}

// Flush closes a group that stays open too long, and SetN closes it too.
func TestFlushAndSetN(t *testing.T) {
	p := newPair(t, SenderConfig{N: 8, Flush: 500}, ReceiverConfig{})
	p.send(100, 70)
	p.send(200, 70)
	if d := p.s.Poll(300); d != 600 {
		t.Fatalf("flush deadline %d, want 600", d)
	}
	if d := p.s.Poll(600); d != math.MaxInt64 || p.s.Stats.Parity != 1 || p.s.Stats.Partial != 1 {
		t.Fatalf("after flush: deadline %d, stats %+v", d, p.s.Stats)
	}
	p.flushSender()
	pr, err := ParseParity(p.b.Bytes(p.wire[2].H, p.wire[2].Len))
	if err != nil || pr.Count != 2 || pr.First != 0 {
		t.Fatalf("partial parity %+v %v", pr, err)
	}
	p.send(700, 70)
	if err := p.s.SetN(2); err != nil {
		t.Fatal(err)
	}
	p.flushSender()
	if p.s.Stats.Parity != 2 {
		t.Fatalf("SetN did not close the open group")
	}
	p.send(800, 70)
	p.send(800, 70)
	if p.s.Stats.Parity != 3 {
		t.Fatalf("group of the new N did not close")
	}
	p.deliver(900)
	p.quiet()
}

// Frames the sender cannot protect are dropped and counted.
func TestSenderRefuses(t *testing.T) {
	p := newPair(t, SenderConfig{N: 2, MaxFrame: 1000}, ReceiverConfig{})
	p.send(0, 1001)
	p.send(0, 13)
	h, _ := p.a.Alloc(60)
	copy(p.a.Bytes(h, 60), hostFrame(9, 60))
	binary.BigEndian.PutUint16(p.a.Bytes(h+12, 2), seqhdr.EtherType)
	p.s.Send(0, link.Frame{H: h, Len: 60})
	p.flushSender()
	if p.s.Stats.TooLong != 1 || p.s.Stats.Bad != 2 || len(p.wire) != 0 {
		t.Fatalf("stats %+v, wire %d", p.s.Stats, len(p.wire))
	}
	p.quiet()
}

func TestConfigErrors(t *testing.T) {
	m := linksim.NewPool(1, tBuf, tHead)
	for _, c := range []SenderConfig{{N: -1}, {N: 256, BufLen: 4096}, {Copies: 9}, {N: 4, BufLen: 100}, {MaxFrame: 10}} {
		if _, err := NewSender(c, m); !errors.Is(err, ErrConfig) {
			t.Errorf("NewSender(%+v) = %v, want ErrConfig", c, err)
		}
	}
	for _, c := range []ReceiverConfig{{Window: 100}, {Window: 256}, {Wait: -1}, {Window: 1 << 20}, {Wait: 10, Hold: 5}} {
		if _, err := NewReceiver(c, m); !errors.Is(err, ErrConfig) {
			t.Errorf("NewReceiver(%+v) = %v, want ErrConfig", c, err)
		}
	}
}

func TestParityHeader(t *testing.T) {
	b := make([]byte, ParityOffset+20)
	in := Parity{First: seqhdr.MakeSeq(65535, true), Count: 255, LenXor: 0xbeef}
	if err := PutParityHeader(b, &[6]byte{1}, &[6]byte{2}, &in); err != nil {
		t.Fatal(err)
	}
	out, err := ParseParity(b)
	in.PayloadLen = 20
	if err != nil || out != in {
		t.Fatalf("round trip %+v %v, want %+v", out, err, in)
	}
	bad := func(mod func([]byte)) []byte { c := bytes.Clone(b); mod(c); return c }
	for name, f := range map[string][]byte{
		"short":    b[:ParityOffset-1],
		"payload":  b[:ParityOffset+MinFrame-1],
		"count 0":  bad(func(c []byte) { c[18] = 0 }),
		"flags":    bad(func(c []byte) { c[15] |= 0x40 }),
		"reserved": bad(func(c []byte) { c[19] = 1 }),
		"type":     bad(func(c []byte) { c[14] = byte(seqhdr.TypeData) }),
		"version":  bad(func(c []byte) { c[14] |= 0x10 }),
		"ether":    bad(func(c []byte) { c[12] = 0x08 }),
	} {
		if _, err := ParseParity(f); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if PutParityHeader(b, &[6]byte{}, &[6]byte{}, &Parity{Count: 0}) == nil {
		t.Error("count 0 encoded")
	}
}

// A data frame numbered far from the window (forged, or misnumbered) moves
// nothing, so the real sender is not stranded behind the window; jumpAfter
// frames in a row from a new place (a sender that got far ahead during an
// outage) move the window there.
func TestDistantFramesJumpOnlyTogether(t *testing.T) {
	p := newPair(t, SenderConfig{N: 4}, ReceiverConfig{})
	lens := map[int]int{}
	from := func(s *Sender, k int) {
		old := p.s
		p.s = s
		for range k {
			lens[p.sentID] = 100
			p.send(0, 100)
		}
		p.s = old
		p.deliver(0)
	}
	other := func(at seqhdr.Seq) *Sender {
		s, err := NewSender(SenderConfig{N: 4, BufLen: tBuf - tHead, InitSeq: at}, p.a)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	from(p.s, 8)
	from(other(seqhdr.Half/2), 1)     // forged, far ahead
	from(other(seqhdr.Space-5000), 1) // forged, far behind
	from(p.s, 8)
	if got := p.ids(lens); len(got) != 16 || p.r.Stats.Jumps != 0 {
		t.Fatalf("after two forged frames: delivered %v (want the real sender's 16), %d jumps", got, p.r.Stats.Jumps)
	}
	p.got = nil
	from(other(seqhdr.Half/3), jumpAfter+4) // the sender, far ahead after an outage
	if got := p.ids(lens); len(got) != 5 || got[0] != 18+jumpAfter-1 || p.r.Stats.Jumps != 1 {
		t.Fatalf("after %d frames from a new place: delivered %v (want the last 5, from id %d), %d jumps", jumpAfter+4, got, 18+jumpAfter-1, p.r.Stats.Jumps)
	}
}

// TestSteadyStateNoAlloc: once the pools and lists exist, a group of N
// frames through the sender, one lost, rebuilt from the parity and
// delivered in order, allocates nothing (the parity buffer comes from
// link.Memory.Alloc through the interface).
func TestSteadyStateNoAlloc(t *testing.T) {
	const n, size = 4, 700
	p := newPair(t, SenderConfig{N: n}, ReceiverConfig{Wait: 1000})
	frame := hostFrame(1, size)
	var now int64
	group := func() {
		for range n {
			h, ok := p.a.Alloc(size)
			if !ok {
				t.Fatal("sender pool exhausted")
			}
			copy(p.a.Bytes(h, size), frame)
			p.s.Send(now, link.Frame{H: h, Len: size})
		}
		for i, f := range p.s.Out.Send {
			if i == 1 {
				continue // lost
			}
			h, ok := p.b.Alloc(f.Len)
			if !ok {
				t.Fatal("receiver pool exhausted")
			}
			copy(p.b.Bytes(h, f.Len), p.a.Bytes(f.H, f.Len))
			p.r.Receive(now, link.Frame{H: h, Len: f.Len})
		}
		for _, f := range p.s.Out.Free {
			p.a.Free(f.H)
		}
		p.s.Out.Reset()
		for _, f := range p.r.Out.Free {
			p.b.Free(f.H)
		}
		p.r.Out.Reset()
		now += 100
	}
	for range 50 {
		group()
	}
	if a := testing.AllocsPerRun(100, group); a != 0 {
		t.Errorf("%v allocations per group of %d frames; want 0", a, n)
	}
	if want := uint64(151 * n); p.r.Stats.Delivered != want || p.r.Stats.Recovered != 151 {
		t.Fatalf("delivered %d (want %d), recovered %d (want 151): %+v", p.r.Stats.Delivered, want, p.r.Stats.Recovered, p.r.Stats)
	}
	if p.a.InUse() != 0 || len(p.a.Errors())+len(p.b.Errors()) != 0 {
		t.Fatalf("sender buffers in use %d, ownership errors %d and %d", p.a.InUse(), len(p.a.Errors()), len(p.b.Errors()))
	}
}
