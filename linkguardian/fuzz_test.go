package linkguardian_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/linkfabric/linkfabric/internal/fuzzops"
	"github.com/linkfabric/linkfabric/link/seqhdr"
	"github.com/linkfabric/linkfabric/linkguardian"
	"github.com/linkfabric/linkfabric/linkguardian/lgsim"
)

// portFuzzer drives a two-port simulated link from a fuzz input: host
// traffic, scripted losses, time passing, and frames injected into either
// port's Receive: link frames (data, ACK, loss notification, dummy) whose
// sequence, ACK and count fields are arbitrary or near the ports' windows,
// and arbitrary bytes.
type portFuzzer struct {
	s *lgsim.Sim
	fuzzops.Ops
	rules  []*lgsim.Rule
	budget int64 // virtual time the operations may still run
}

// fuzzLinkConfig chooses the link from one byte: the receivers' mode, one
// or both directions protected, the TX buffer (and window) size and N.
func fuzzLinkConfig(c byte) lgsim.Config {
	mode := linkguardian.Delivery(c % 3)
	cfg := oneWay(mode, 1+int(c>>2&1))
	if c>>3&1 != 0 {
		cfg = bothWays(mode, 1+int(c>>2&1))
	}
	win := []int{4, 8, 16, 64}[c>>4&3]
	for _, p := range []*linkguardian.Config{&cfg.A, &cfg.B} {
		if p.Sender != nil {
			p.Sender.TxBuffer = win
		}
		if p.Receiver != nil {
			p.Receiver.Window = win << (c >> 6 & 1) // the window may exceed the TX buffer
		}
	}
	cfg.PollInterval = 500
	cfg.FrameLen = 128 // injected data frames are never this long: counted corrupt, not delivered ids
	cfg.PoolFrames = 1024
	return cfg
}

// ref picks a sequence number near a window edge of port p, or an arbitrary one.
func (z *portFuzzer) ref(p, peer *linkguardian.Endpoint) seqhdr.Seq {
	switch k := z.U8() % 7; {
	case k < 2 && p.S != nil: // the send window's base or its next
		return p.S.Next().Add(-int(1-k) * p.S.Outstanding())
	case k == 2 && p.R != nil:
		return p.R.AckNo()
	case k == 3 && p.R != nil:
		return p.R.Latest()
	case k == 4 && peer.S != nil:
		return peer.S.Next()
	case k == 5:
		return seqhdr.MakeSeq(z.U16(), z.U8()&1 != 0)
	}
	return 0
}

// linkFrame builds a well-formed link frame with fields near p's windows.
func (z *portFuzzer) linkFrame(p, peer *linkguardian.Endpoint) []byte {
	h := seqhdr.Header{Type: seqhdr.Type(1 + z.U8()%4)}
	flags := z.U8()
	h.Seq = z.ref(p, peer).Add(int(int8(z.U8())))
	h.HasAck = flags&4 != 0
	if h.HasAck {
		h.Ack = z.ref(p, peer).Add(int(int8(z.U8())))
	}
	switch h.Type {
	case seqhdr.TypeData:
		h.EtherType = 0x0800
		h.Retx = flags&1 != 0
		if flags&2 != 0 {
			h.Unseq, h.Retx, h.Seq, h.HasAck = true, false, 0, true
		}
	case seqhdr.TypeAck:
		h.Seq, h.HasAck = 0, true
	case seqhdr.TypeLoss:
		if c := z.U8(); c < 200 {
			h.Count = 1 + uint16(c%32)
		} else {
			h.Count = max(z.U16(), 1)
		}
		h.Latest = h.Seq.Add(int(h.Count) - 1)
	}
	b := make([]byte, seqhdr.MinFrameLen+int(flags>>3))
	if _, err := seqhdr.PutControl(b, &[6]byte{2}, &[6]byte{2, 1}, &h); err != nil {
		panic(err) // the fields above are always valid
	}
	return b
}

// rawFrame returns up to 255 bytes of input, with the link EtherType if asked.
func (z *portFuzzer) rawFrame() []byte {
	flags, n := z.U8(), int(z.U8())
	b := make([]byte, n)
	for i := range b {
		b[i] = z.U8()
	}
	if flags&1 != 0 && n >= 14 {
		binary.BigEndian.PutUint16(b[12:], seqhdr.EtherType)
	}
	return b
}

// run advances the link by d, at most 10 ms in all (fuzzing speed).
func (z *portFuzzer) run(d int64) {
	d = min(d, z.budget)
	z.budget -= d
	z.s.Run(d)
}

func (z *portFuzzer) step() {
	op := z.U8()
	side := lgsim.Side(op >> 7)
	p, peer := z.s.Port(side), z.s.Port(1-side)
	switch op & 7 {
	case 0:
		if op>>3&3 == 3 && p.R != nil { // a policy switches the receiver's mode
			p.R.SetDelivery(z.s.Now(), linkguardian.Delivery(z.U8()%3))
			return
		}
		z.s.Send(side, 1+int(z.U8()%32), int64(z.U8()%4)*100)
	case 1:
		z.run(int64(z.U8()) * 100)
	case 2:
		z.run(int64(z.U8()) * 5 * us)
	case 3: // lose the next frames leaving side
		r := lgsim.DropIf(1+int(z.U8()%8), func(*lgsim.Info) bool { return true })
		z.rules = append(z.rules, r)
		z.s.AddRule(side, r)
	case 4: // lose the next frames of one type leaving side
		r := lgsim.DropType(seqhdr.Type(1+z.U8()%4), 1+int(z.U8()%4))
		z.rules = append(z.rules, r)
		z.s.AddRule(side, r)
	case 5, 6:
		z.s.Inject(side, z.linkFrame(p, peer))
	case 7:
		z.s.Inject(side, z.rawFrame())
	}
}

// checkPortFuzz runs one fuzz input: the operations, then a loss-free link
// until it is quiet, traffic to let the ends resynchronise, and fresh
// traffic that must arrive complete and in order. No frame may leak or be
// freed twice.
func checkPortFuzz(t *testing.T, in []byte) {
	if len(in) == 0 {
		return
	}
	cfg := fuzzLinkConfig(in[0])
	s, err := lgsim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	z := &portFuzzer{s: s, Ops: fuzzops.Ops{B: in[1:]}, budget: 10_000 * us}
	for ops := 0; z.More() && ops < 200; ops++ {
		z.step()
	}
	for _, r := range z.rules {
		r.Count = 0 // the link is loss-free from now on
	}
	const limit = 50_000 * us
	sides := []lgsim.Side{lgsim.A, lgsim.B}
	quiet := func(what string) {
		t.Helper()
		if !s.RunUntilQuiet(limit) {
			for _, side := range sides {
				p := s.Port(side)
				t.Logf("%v: quiet %v", side, p.Quiet())
				if p.S != nil {
					t.Logf("%v: sender next %d outstanding %d %+v", side, p.S.Next(), p.S.Outstanding(), p.S.Stats)
				}
				if p.R != nil {
					t.Logf("%v: receiver ackNo %d latest %d missing %d %+v", side, p.R.AckNo(), p.R.Latest(), p.R.Missing(), p.R.Stats)
				}
			}
			t.Fatalf("%s: the link is not quiet after %d µs without loss", what, limit/us)
		}
		for _, side := range sides {
			if errs := s.Pool(side).Errors(); len(errs) > 0 {
				t.Fatalf("%s: %v: frame ownership errors: %v", what, side, errs[:min(len(errs), 5)])
			}
			if n := s.Pool(side).InUse(); n != 0 {
				t.Fatalf("%s: %v: %d frames leaked", what, side, n)
			}
		}
	}
	quiet("after the fuzz input")
	n := 2*64 + 8
	for _, side := range sides {
		s.Send(side, n, 0)
	}
	quiet("resynchronising")
	var before [2]int
	for _, side := range sides {
		before[side] = len(s.Delivered(side))
		s.Send(side, n, 0)
	}
	quiet("fresh traffic")
	for _, side := range sides {
		got := s.Delivered(side)[before[side]:]
		sent := int(s.Sent(1 - side))
		if want := seqIDs(sent-n, n); !slices.Equal(got, want) {
			t.Fatalf("fresh traffic to %v: got %d frames %v, want %v", side, len(got), head(got), head(want))
		}
	}
}

func FuzzEndpointReceive(f *testing.F) {
	// Seeds: every link shape with plain traffic, a lost frame, lost ACKs,
	// and one injected frame of each type.
	for c := range 128 {
		f.Add([]byte{byte(c), 0, 20, 0x80, 20, 1, 50, 2, 100})
	}
	f.Add([]byte{0x10, 0, 30, 0, 3, 1, 1, 1, 1, 2, 200})
	f.Add([]byte{0x18, 0x84, 2, 5, 0, 31, 0, 2, 200})
	// Mode switches while frames are lost: lg → monitor → lgnb → lg.
	f.Add([]byte{0x08, 0, 30, 0, 3, 1, 0x98, 2, 0, 30, 0, 1, 40, 0x98, 1, 0, 30, 0, 0x98, 0, 2, 200})
	for typ := range byte(4) {
		for ref := range byte(6) {
			f.Add([]byte{0x19, 0, 10, 0, 1, 10, 0x05, typ, 0x04, ref, 0x7f, 1, 0, 250, 2, 200})
			f.Add([]byte{0x28, 0, 10, 0, 1, 10, 0x85, typ, 0x04, ref, 0x80, 1, 1, 210, 0xff, 0xff, 2, 200})
		}
	}
	f.Fuzz(checkPortFuzz)
}
