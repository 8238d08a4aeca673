package linkguardian_test

import (
	"encoding/binary"
	"testing"

	"github.com/linkfabric/linkfabric/link"
	"github.com/linkfabric/linkfabric/link/linksim"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
)

const benchFrame = 128

// benchSender drives a sender-only port: per op one host frame is protected
// and sent; every 32 frames a cumulative ACK (explicit ACK frame) from the
// peer releases them; every 1024 frames one frame is reported lost.
type benchSender struct {
	p    *linkguardian.Endpoint
	pool *linksim.Pool
	tmpl [benchFrame]byte
	ack  [seqhdr.MinFrameLen]byte
	loss [seqhdr.MinFrameLen]byte
}

func newBenchSender(tb testing.TB) *benchSender {
	pool := linksim.NewPool(4096, 2048, 256)
	sc := linkguardian.DefaultSenderConfig()
	sc.TxBuffer = 1024
	p := newEndpoint(tb, linkguardian.Config{Sender: &sc}, pool)
	b := &benchSender{p: p, pool: pool}
	binary.BigEndian.PutUint16(b.tmpl[12:], 0x0800)
	return b
}

func (b *benchSender) op(now int64, i int) {
	h, _ := b.pool.Alloc(benchFrame)
	copy(b.pool.Bytes(h, benchFrame), b.tmpl[:])
	if !b.p.Send(now, link.Frame{H: h, Len: benchFrame}) {
		panic("refused")
	}
	if i%1024 == 1000 {
		q := b.p.S.Next().Add(-5)
		hd := seqhdr.Header{Type: seqhdr.TypeLoss, Seq: q, Count: 1, Latest: q.Add(3)}
		b.rx(now, &hd, b.loss[:])
	}
	if i%32 == 31 {
		hd := seqhdr.Header{Type: seqhdr.TypeAck, HasAck: true, Ack: b.p.S.Next().Add(-1)}
		b.rx(now, &hd, b.ack[:])
		b.p.Poll(now, true)
	}
	for _, f := range b.p.Out.Free {
		b.pool.Free(f.H)
	}
	b.p.Out.Reset()
}

func (b *benchSender) rx(now int64, hd *seqhdr.Header, buf []byte) {
	var z [6]byte
	n, _ := seqhdr.PutControl(buf, &z, &z, hd)
	h, _ := b.pool.Alloc(n)
	copy(b.pool.Bytes(h, n), buf[:n])
	b.p.Receive(now, link.Frame{H: h, Len: n})
}

// benchReceiver drives a receiver-only LG port: per op one protected data
// frame arrives; every 1000th sequence number arrives late (a loss recovered
// 8 frames later), so the reorder path runs too.
type benchReceiver struct {
	p    *linkguardian.Endpoint
	pool *linksim.Pool
	tmpl [benchFrame + seqhdr.MaxOverhead]byte
	held link.Frame
	next seqhdr.Seq
}

func newBenchReceiver(tb testing.TB, mode linkguardian.Delivery) *benchReceiver {
	pool := linksim.NewPool(4096, 2048, 256)
	rc := linkguardian.DefaultReceiverConfig()
	rc.Delivery = mode
	rc.Window = 1024
	p := newEndpoint(tb, linkguardian.Config{Receiver: &rc}, pool)
	b := &benchReceiver{p: p, pool: pool}
	binary.BigEndian.PutUint16(b.tmpl[12:], 0x0800)
	buf := make([]byte, 2*len(b.tmpl))
	copy(buf[seqhdr.MaxOverhead:], b.tmpl[:benchFrame])
	h := seqhdr.Header{Type: seqhdr.TypeData}
	off, n, _ := seqhdr.Insert(buf, seqhdr.MaxOverhead, benchFrame, &h)
	copy(b.tmpl[:], buf[off:off+n])
	return b
}

func (b *benchReceiver) frame(q seqhdr.Seq, retx bool) link.Frame {
	h, _ := b.pool.Alloc(len(b.tmpl))
	buf := b.pool.Bytes(h, len(b.tmpl))
	copy(buf, b.tmpl[:])
	f := buf[seqhdr.MACLen+3]
	if q.Era() {
		f |= seqhdr.FlagEra
	}
	if retx {
		f |= seqhdr.FlagRetx
	}
	buf[seqhdr.MACLen+3] = f
	binary.BigEndian.PutUint16(buf[seqhdr.MACLen+4:], q.Num())
	return link.Frame{H: h, Len: len(b.tmpl)}
}

func (b *benchReceiver) op(now int64, i int) {
	q := b.next
	b.next = q.Next()
	switch {
	case i%1000 == 500:
		b.held = b.frame(q, true) // "lost"; its retransmission arrives later
	case i%1000 == 508:
		b.p.Receive(now, b.held)
		fallthrough
	default:
		b.p.Receive(now, b.frame(q, false))
	}
	if i%32 == 31 {
		b.p.Poll(now, true)
	}
	for _, f := range b.p.Out.Deliver {
		b.pool.Free(f.H)
	}
	for _, f := range b.p.Out.Free {
		b.pool.Free(f.H)
	}
	b.p.Out.Reset()
}

func BenchmarkSenderPerFrame(b *testing.B) {
	s := newBenchSender(b)
	for i := range 4096 { // warm up: output lists reach their steady capacity
		s.op(int64(i)*100, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.op(int64(i+4096)*100, i+4096)
	}
}

func BenchmarkReceiverPerFrameLG(b *testing.B)   { benchRecv(b, linkguardian.InOrder) }
func BenchmarkReceiverPerFrameLGNB(b *testing.B) { benchRecv(b, linkguardian.NonBlocking) }

func benchRecv(b *testing.B, mode linkguardian.Delivery) {
	r := newBenchReceiver(b, mode)
	for i := range 4096 {
		r.op(int64(i)*100, i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.op(int64(i+4096)*100, i+4096)
	}
}

// TestSteadyStateAllocs asserts the per-frame paths do not allocate.
func TestSteadyStateAllocs(t *testing.T) {
	s := newBenchSender(t)
	r := newBenchReceiver(t, linkguardian.InOrder)
	nb := newBenchReceiver(t, linkguardian.NonBlocking)
	i := 0
	for ; i < 4096; i++ {
		s.op(int64(i)*100, i)
		r.op(int64(i)*100, i)
		nb.op(int64(i)*100, i)
	}
	for name, fn := range map[string]func(int64, int){"sender": s.op, "receiver LG": r.op, "receiver LGNB": nb.op} {
		j := i
		if a := testing.AllocsPerRun(5000, func() { fn(int64(j)*100, j); j++ }); a != 0 {
			t.Errorf("%s: %v allocs per frame", name, a)
		}
	}
}
