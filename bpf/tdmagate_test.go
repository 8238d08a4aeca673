package bpf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/wire"
	"github.com/vishvananda/netlink"
)

const xdpTx = 3

// tdmaFrame builds a raw TDMA data frame released at send with trailer t
// and payload bytes of payload.
func tdmaFrame(send int64, t wire.WinTrailer, payload int) []byte {
	f := make([]byte, 14+wire.DataHdrLen+wire.WinTrailerLen+payload)
	copy(f, []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], wire.DataEtherType)
	h := wire.DataHdr{Src: 0, Dst: 1, Seq: 7, SendTS: send}
	h.Encode(f[14:])
	t.Encode(f[14+wire.DataHdrLen:])
	return f
}

// randomTrailer draws a window around a release at send: deadlines from
// well before to well after now, unknown fields, lapsed leases.
func randomTrailer(r *rand.Rand) wire.WinTrailer {
	d := func() int32 { return int32(r.IntN(4_000_000) - 2_000_000) }
	t := wire.WinTrailer{Due: d(), Close: d(), FMEnd: d(), Line: d(), Lease: d(), SlotUs: 5000, GuardUs: uint16(r.IntN(1000))}
	for _, f := range []*int32{&t.Due, &t.Close, &t.Lease} {
		if r.IntN(8) == 0 {
			*f = wire.WinUnknown
		}
	}
	if r.IntN(2) == 0 { // mostly a live lease and an open window
		t.Lease, t.Close = int32(r.IntN(20_000_000)), int32(r.IntN(5_000_000))
	}
	if r.IntN(4) == 0 { // a slot that starts up to 2 ms after the release
		t.FMEnd = int32(5_000_000 + r.IntN(2_000_000))
	}
	return t
}

// TestTDMAGateModel runs the exit gate (BPF_PROG_TEST_RUN) on random
// TDMA data frames and on other frames, and holds every verdict and the
// counters to gate.Verdict; a frame whose deadline falls within the
// run (the program reads the clock in between) is judged either way.
// Frames are returned for leaving late, for leaving early and for their
// close or lease.
// Every data frame, passed or returned, comes out with the time the gate
// judged it in its trailer's entry field, marked returned if it was (a
// mark on a frame from the host is cleared), and nothing else changed.
func TestTDMAGateModel(t *testing.T) {
	needRoot(t)
	const share = 500
	g, err := LoadTDMAGate(share / 1000.0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := rand.New(rand.NewPCG(1, 2))
	var want TDMAGateCounters
	earlies := uint64(0)
	other := testFrame(100)
	short := tdmaFrame(clock.Now(), wire.WinTrailer{}, 0)[:14+wire.DataHdrLen+wire.WinTrailerLen-1]
	for i := range 3000 {
		var f []byte
		switch i % 10 {
		case 0:
			f = other
		case 1:
			f = short
		default:
			f = tdmaFrame(clock.Now()+int64(r.IntN(2_000_000)-1_000_000), randomTrailer(r), r.IntN(1400))
			if i%3 == 0 { // a host's frame marked as a gate's: the mark goes
				f[14+7] |= wire.DataReturned
			}
		}
		for _, p := range []struct {
			prog     *ebpf.Program
			pass, rt uint32
		}{{g.objs.LfTdmaExit, xdpPass, xdpTx}} {
			out := make([]byte, len(f)+256)
			t0 := clock.Now()
			ret, err := p.prog.Run(&ebpf.RunOptions{Data: f, DataOut: out})
			t1 := clock.Now()
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			data, back0, close0 := gate.Verdict(f, t0, share)
			_, back1, _ := gate.Verdict(f, t1, share)
			if ret != p.pass && ret != p.rt {
				t.Fatalf("frame %d: return code %d", i, ret)
			}
			if back0 == back1 && (ret == p.rt) != back0 {
				t.Fatalf("%s, frame %d %x at %d: returned %v, the model says %v", p.prog, i, f[:14+wire.DataHdrLen+wire.WinTrailerLen], t0, ret == p.rt, back0)
			}
			switch {
			case !data:
				want.Other++
			default:
				if ret == p.rt {
					if early(f, t1) {
						earlies++
					}
					want.Returned++
					want.ReturnedBytes += uint64(len(f))
					if close0 {
						want.AfterClose++
					}
				} else {
					want.Passed++
				}
				// passed or returned, the frame carries when the gate judged it
				h, _, tr, in, e := judged(f, out)
				switch {
				case tr != in:
					t.Fatalf("frame %d: trailer %+v changed to %+v", i, in, tr)
				case (h.Flags&wire.DataReturned != 0) != (ret == p.rt) || h.Flags&wire.DataHeld != 0:
					t.Fatalf("frame %d: returned %v with flags %#x: the returned mark is the gate's alone", i, ret == p.rt, h.Flags)
				case e < t0-h.SendTS || e > t1-h.SendTS:
					t.Fatalf("frame %d: entry stamped %d ns after its release, the run was %d..%d", i, e, t0-h.SendTS, t1-h.SendTS)
				}
			}
		}
	}
	got, err := g.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if want.Returned == 0 || want.Passed == 0 || want.AfterClose == 0 || earlies == 0 || want.Returned == want.AfterClose+earlies {
		t.Fatalf("the frames did not exercise every verdict: %+v, %d returned early", want, earlies)
	}
}

// judged decodes data frame f as a gate took it and out as it came out:
// their data headers, their trailers with out's entry field set back to
// f's, and that field (ns from the release: when the gate judged it).
func judged(f, out []byte) (h, hin wire.DataHdr, tr, in wire.WinTrailer, entry int64) {
	wire.DecodeDataHdr(out[14:], &h)
	wire.DecodeDataHdr(f[14:], &hin)
	wire.DecodeWinTrailer(out[14+wire.DataHdrLen:], &tr)
	wire.DecodeWinTrailer(f[14+wire.DataHdrLen:], &in)
	entry = int64(tr.Entry)
	tr.Entry = in.Entry
	return h, hin, tr, in, entry
}

// early tells whether data frame f, leaving at now, is before its slot's
// start plus the guard on the FM's timeline (and not after its close or
// lease, which the gate checks first).
func early(f []byte, now int64) bool {
	var h wire.DataHdr
	var t wire.WinTrailer
	wire.DecodeDataHdr(f[14:], &h)
	wire.DecodeWinTrailer(f[14+wire.DataHdrLen:], &t)
	if t.FMEnd == wire.WinUnknown || t.Close == wire.WinUnknown || t.Due == wire.WinUnknown || t.Close < 0 || t.Lease != wire.WinUnknown && t.Lease < 0 {
		return false
	}
	return now < h.SendTS+int64(t.FMEnd)-int64(t.SlotUs)*1000+int64(t.GuardUs)*1000
}

// TestTDMAArrivalModel runs the arrival gate (BPF_PROG_TEST_RUN) on random
// TDMA data frames, some of them marked returned by a gate, and on other
// frames, and holds every verdict and the counters to gate.Arrival: a
// frame that reaches its receiver past its slot's end plus the guard goes
// back (redirected to the veth's peer) marked held, stamped with when it
// was stopped; every other frame passes unchanged.
func TestTDMAArrivalModel(t *testing.T) {
	needRoot(t)
	g, err := LoadTDMAGate(0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	margin := uint32(ArrivalMargin)
	r := rand.New(rand.NewPCG(3, 4))
	var want TDMAGateCounters
	other := testFrame(100)
	for i := range 3000 {
		f := other
		if i%10 != 0 {
			f = tdmaFrame(clock.Now()-int64(r.IntN(4_000_000)), randomTrailer(r), r.IntN(1400))
			if i%7 == 0 {
				f[14+7] |= wire.DataReturned
			}
		}
		out := make([]byte, len(f)+256)
		t0 := clock.Now()
		ret, err := g.objs.LfTdmaArrive.Run(&ebpf.RunOptions{Data: f, DataOut: out})
		t1 := clock.Now()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		data, held0 := gate.Arrival(f, t0, margin)
		_, held1 := gate.Arrival(f, t1, margin)
		if ret != tcNext && ret != tcRedirect {
			t.Fatalf("frame %d: return code %d", i, ret)
		}
		held := ret == tcRedirect
		if held0 == held1 && held != held0 {
			t.Fatalf("frame %d %x at %d: held %v, the model says %v", i, f[:14+wire.DataHdrLen+wire.WinTrailerLen], t0, held, held0)
		}
		if !held {
			if !bytes.Equal(out[:len(f)], f) {
				t.Fatalf("frame %d passed changed", i)
			}
			if data {
				want.Arrived++
			}
			continue
		}
		want.Held++
		want.HeldBytes += uint64(len(f))
		h, hin, tr, in, e := judged(f, out)
		hin.Flags |= wire.DataReturned | wire.DataHeld
		switch {
		case tr != in || h != hin:
			t.Fatalf("frame %d held: %+v %+v changed to %+v %+v", i, hin, in, h, tr)
		case e < t0-h.SendTS || e > t1-h.SendTS:
			t.Fatalf("frame %d: stopped %d ns after its release, the run was %d..%d", i, e, t0-h.SendTS, t1-h.SendTS)
		}
	}
	got, err := g.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("counters %+v, want %+v", got, want)
	}
	if want.Held == 0 || want.Arrived == 0 {
		t.Fatalf("the frames did not exercise both verdicts: %+v", want)
	}
}

// skbCtx is the start of struct __sk_buff, the context of a TC
// program's test run, up to the fields a test sets.
type skbCtx struct {
	Len, PktType, Mark, QueueMapping, Protocol, VlanPresent, VlanTCI, VlanProto, Priority, IngressIfindex, Ifindex uint32
}

// TC verdicts as the test runs return them.
const (
	tcNext     = ^uint32(0) // TCX_NEXT (-1)
	tcDrop     = 2
	tcRedirect = 7
)

// TestTDMAGateSendBack: a frame held at its receiver comes back into the
// switch at the receiver's port, and the program on that port's TC
// ingress redirects it to its sender's end; a held frame from any other
// port (a host marking its own frames held to get past the exit gate), or
// whose sender or receiver has no port, is dropped; a frame not held goes
// on.
func TestTDMAGateSendBack(t *testing.T) {
	n := newVethNet(t, 0) // lfba: host 0's port, lfbb: host 1's
	g, err := LoadTDMAGate(0.5)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for h, l := range []netlink.Link{n.a, n.b} {
		if err := g.objs.TdmaGatePorts.Put(uint32(h), uint32(l.Attrs().Index)); err != nil {
			t.Fatal(err)
		}
	}
	frame := func(src, dst uint16, flags uint8) []byte {
		f := tdmaFrame(clock.Now(), wire.WinTrailer{Due: 1, Close: 1, FMEnd: 1, Line: 1, Lease: 1, SlotUs: 5000, GuardUs: 300}, 100)
		binary.BigEndian.PutUint16(f[14+2:], src)
		binary.BigEndian.PutUint16(f[14+4:], dst)
		f[14+7] |= flags
		return f
	}
	held := func(src, dst uint16) []byte { return frame(src, dst, wire.DataReturned|wire.DataHeld) }
	var want TDMAGateCounters
	for _, c := range []struct {
		name    string
		f       []byte
		ingress netlink.Link
		ret     uint32
	}{
		{"from its receiver's port", held(0, 1), n.b, tcRedirect},
		{"the other way", held(1, 0), n.a, tcRedirect},
		{"from its sender's port", held(0, 1), n.a, tcDrop},
		{"from a port of neither", held(1, 0), n.b, tcDrop},
		{"its sender has no port", held(5, 1), n.b, tcDrop},
		{"its receiver has no port", held(0, 7), n.b, tcDrop},
		{"not held", frame(0, 1, wire.DataReturned), n.b, tcNext},
		{"not a TDMA data frame", testFrame(100), n.b, tcNext},
	} {
		out := make([]byte, len(c.f)+256)
		ret, err := g.objs.LfTdmaBack.Run(&ebpf.RunOptions{Data: c.f, DataOut: out,
			Context: skbCtx{IngressIfindex: uint32(c.ingress.Attrs().Index), Ifindex: uint32(c.ingress.Attrs().Index)}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch c.ret {
		case tcRedirect:
			want.SentBack++
		case tcDrop:
			want.SendBackDropped++
		}
		if ret != c.ret {
			t.Errorf("%s: verdict %d, want %d", c.name, ret, c.ret)
		}
	}
	if got, err := g.Counters(); err != nil || got != want {
		t.Fatalf("counters %+v (%v), want %+v", got, err, want)
	}
}
