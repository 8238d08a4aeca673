package wire

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/pfc"
)

var (
	fmMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x64}
	hostMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
)

// codec is a message type's pointer: it encodes itself.
type codec[T any] interface {
	*T
	Encode(b []byte) (int, error)
}

// roundTrip encodes v into a buffer of size bytes, decodes that back and
// fails unless it is v; it returns the encoding.
func roundTrip[T comparable, P codec[T]](t testing.TB, v T, size int, decode func([]byte, *T) error) []byte {
	t.Helper()
	b := make([]byte, size)
	n, err := P(&v).Encode(b)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	var back T
	if err := decode(b[:n], &back); err != nil || back != v {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, v)
	}
	return b[:n]
}

// fuzzCodec fuzzes decode from seed's encoding (size bytes at most) and
// the further seeds: it never panics, and what it accepts encodes again to
// a message that decodes to the same value and, if exact says so of the
// input, to the same bytes as the input's.
func fuzzCodec[T comparable, P codec[T]](f *testing.F, seed T, size int, decode func([]byte, *T) error, exact func(in []byte) bool, seeds ...[]byte) {
	b := make([]byte, size)
	n, _ := P(&seed).Encode(b)
	f.Add(b[:n])
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var v T
		if decode(in, &v) != nil {
			return
		}
		out := make([]byte, size)
		n, err := P(&v).Encode(out)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", v, err)
		}
		if exact(in) && !bytes.Equal(out[:n], in[:n]) {
			t.Fatalf("re-encoded differs:\n in %x\nout %x", in[:n], out[:n])
		}
		var again T
		if err := decode(out[:n], &again); err != nil || again != v {
			t.Fatalf("second decode: %v\n%+v\n%+v", err, again, v)
		}
	})
}

// always and never are fuzzCodec's exact for codecs that re-encode every
// input they accept to the same bytes, or not.
func always([]byte) bool { return true }
func never([]byte) bool  { return false }

func sampleTrailer() Trailer {
	return Trailer{Flags: FlagFreeRunOK, Slot: 2, Round: 0xBEEF, Seq: 123456, OpenNs: 4_700_000, GuardUs: 300, FMTime: 987654321012}
}

func TestGrantRoundTripAndPlainPFC(t *testing.T) {
	var g Grant
	LeaseGrant(&g, hostMAC, fmMAC, 3, 5_000_000, 100_000_000, sampleTrailer())
	b := make([]byte, pfc.FrameLen)
	if n, err := g.Encode(b); err != nil || n != pfc.FrameLen {
		t.Fatalf("encode: %d %v", n, err)
	}
	var back Grant
	if err := DecodeGrant(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != g {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, g)
	}
	if c := back.GrantClass(); c != 3 {
		t.Fatalf("grant class %d, want 3", c)
	}
	// A standard decoder sees a valid PFC frame: class 3 resumed, others paused.
	var f pfc.Frame
	if err := pfc.Decode(b, &f); err != nil || f.Opcode != pfc.OpPFC || f.ClassEnable != 0xFF || f.Quanta[3] != 0 || f.Quanta[0] == 0 {
		t.Fatalf("pfc.Decode: %v %+v", err, f)
	}
	// Unknown magic means plain PFC.
	b[TrailerOff] ^= 0xFF
	if err := DecodeGrant(b, &back); err != nil || back.HasTrailer {
		t.Fatalf("unknown magic: err %v, trailer %v", err, back.HasTrailer)
	}
	// Known magic, future version: an error, never misread.
	b[TrailerOff] ^= 0xFF
	b[TrailerOff+2] = 2 << 4
	if err := DecodeGrant(b, &back); !errors.Is(err, ErrVersion) {
		t.Fatalf("version 2: %v", err)
	}
}

func TestGrantClassPatterns(t *testing.T) {
	var g Grant
	PauseAll(&g, hostMAC, fmMAC, Trailer{})
	if c := g.GrantClass(); c != -1 {
		t.Errorf("pause-all class %d", c)
	}
	Unpause(&g, hostMAC, fmMAC, 5, Trailer{})
	if c := g.GrantClass(); c != -1 || g.PFC.ClassEnable != 1<<5 {
		t.Errorf("unpause: class %d enable %#x", c, g.PFC.ClassEnable)
	}
	g.PFC = pfc.NewPFC(fmMAC, 0xFF, [8]uint16{1, 0, 1, 0, 1, 1, 1, 1})
	if c := g.GrantClass(); c != -1 {
		t.Errorf("two open classes: %d", c)
	}
}

func sampleSchedule() Schedule {
	s := Schedule{Host: 2, Round: 77, SlotLen: 5_000_000, Guard: 300_000, LeaseSlots: 3, NHosts: 4, NSlots: 3}
	for i := range s.ClassMap {
		s.ClassMap[i] = -1
	}
	for i := range s.Slot {
		s.Slot[i] = -1
	}
	s.ClassMap[3], s.ClassMap[0], s.ClassMap[1] = 0, 1, 2
	s.Slot[0], s.Slot[1], s.Slot[2] = 0, 1, 2
	return s
}

func TestScheduleRoundTrip(t *testing.T) {
	s := sampleSchedule()
	b := roundTrip(t, s, 512, DecodeSchedule)
	n := len(b)
	if n != s.Len() {
		t.Fatalf("encoded %d bytes, Len %d", n, s.Len())
	}
	var back Schedule
	if d := s.Dst(1); d != 0 {
		t.Fatalf("Dst(1) = %d", d)
	}
	if err := DecodeSchedule(b[:n-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
	s.Slot[1] = 9
	if _, err := s.Encode(b); !errors.Is(err, ErrRange) {
		t.Fatalf("class 9 encoded: %v", err)
	}
}

// TestScheduleStaggerAndVersions: the FM's stagger survives the round
// trip; a version 1 schedule (before the flags byte) decodes as aligned
// windows, one of a later version or with a flag this decoder does not
// know is refused rather than misread.
func TestScheduleStaggerAndVersions(t *testing.T) {
	s := sampleSchedule()
	s.Flags = ScheduleStagger
	b := roundTrip(t, s, 512, DecodeSchedule)
	if b[2] != ScheduleVersion || !s.Staggered() {
		t.Fatalf("version %d, staggered %v", b[2], s.Staggered())
	}
	var back Schedule
	b[scheduleHdrLen-1] |= 0x80
	if err := DecodeSchedule(b, &back); !errors.Is(err, ErrRange) {
		t.Fatalf("unknown flag: %v", err)
	}
	b[2] = ScheduleVersion + 1
	if err := DecodeSchedule(b, &back); !errors.Is(err, ErrVersion) {
		t.Fatalf("version %d: %v", b[2], err)
	}
	v1 := scheduleV1(sampleSchedule())
	if err := DecodeSchedule(v1, &back); err != nil || back != sampleSchedule() || back.Staggered() {
		t.Fatalf("version 1: %v, staggered %v\n got %+v\nwant %+v", err, back.Staggered(), back, sampleSchedule())
	}
	if err := DecodeSchedule(v1[:len(v1)-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated version 1: %v", err)
	}
}

// budgetSchedule is sampleSchedule staggered and with slot budgets: slot
// 0's window may carry 50000 bytes, slot 2's has no bound.
func budgetSchedule() Schedule {
	s := sampleSchedule()
	s.Flags = ScheduleStagger | ScheduleBudget
	s.Budget[0], s.Budget[1] = 50_000, 0x01020304
	return s
}

// TestScheduleBudget: a schedule's slot budgets survive the round trip,
// 4 bytes a slot after the slots; a budget without the flag or beyond the
// slots does not encode; a schedule decoded over a budgeted one has none;
// a flag this decoder does not know is refused with the flags it knows
// named (what an FM and a host of different builds see).
func TestScheduleBudget(t *testing.T) {
	s := budgetSchedule()
	b := roundTrip(t, s, MaxScheduleLen, DecodeSchedule)
	if want := scheduleHdrLen + 4 + 3 + 4*3; len(b) != want || s.Len() != want || !s.Budgeted() {
		t.Fatalf("encoded %d bytes, Len %d, want %d; budgeted %v", len(b), s.Len(), want, s.Budgeted())
	}
	if got := b[len(b)-12 : len(b)-4]; !bytes.Equal(got, []byte{0, 0, 0xc3, 0x50, 1, 2, 3, 4}) {
		t.Fatalf("budgets encoded as %x", got)
	}
	var back Schedule
	if err := DecodeSchedule(b[:len(b)-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
	if err := DecodeSchedule(roundTrip(t, sampleSchedule(), MaxScheduleLen, DecodeSchedule), &back); err != nil || back.Budget != [MaxSlots]uint32{} {
		t.Fatalf("a schedule without budgets decoded over one with them: %v, budgets %v", err, back.Budget[:4])
	}
	nf := budgetSchedule()
	nf.Flags = ScheduleStagger
	if _, err := nf.Encode(make([]byte, MaxScheduleLen)); !errors.Is(err, ErrRange) {
		t.Fatalf("budget without the flag: %v", err)
	}
	beyond := budgetSchedule()
	beyond.Budget[3] = 1
	if _, err := beyond.Encode(make([]byte, MaxScheduleLen)); !errors.Is(err, ErrRange) {
		t.Fatalf("budget beyond the slots: %v", err)
	}
	b[scheduleHdrLen-1] |= 0x04
	err := DecodeSchedule(b, &back)
	if !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "unknown 0x04") || !strings.Contains(err.Error(), "stagger 0x01, budget 0x02") {
		t.Fatalf("unknown flag: %v", err)
	}
	full := Schedule{NHosts: MaxHosts, NSlots: MaxSlots, Flags: ScheduleBudget}
	if n, err := full.Encode(make([]byte, MaxScheduleLen)); err != nil || n != MaxScheduleLen {
		t.Fatalf("the longest schedule: %d bytes, %v; MaxScheduleLen %d", n, err, MaxScheduleLen)
	}
}

// scheduleV1 is s (no flags) as a version 1 FM encoded it: the header
// without the flags byte.
func scheduleV1(s Schedule) []byte {
	b := make([]byte, 512)
	n, _ := s.Encode(b)
	b[2] = 1
	return append(b[:scheduleHdrLen-1:scheduleHdrLen-1], b[scheduleHdrLen:n]...)
}

func TestReportRoundTrip(t *testing.T) {
	r := Report{Host: 1, Round: 9, Seq: 10, N: 3, Counters: Counters{CtlRx: 1, CtlLost: 2, GrantsLate: 3, OverrunBytes: 4, FreeRunOpens: 5, LeaseExpiries: 6}}
	r.Queued[0], r.Queued[2] = 1<<40, 7
	r.RxFree[1] = 65536
	b := roundTrip(t, r, 2048, DecodeReport)
	var back Report
	if err := DecodeReport(b[:len(b)-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestDataHdrRoundTrip(t *testing.T) {
	h := DataHdr{Src: 1, Dst: 3, Class: 2, Flags: 1, Round: 1 << 20, Slot: 7, Seq: 1 << 33, Offset: 1 << 35, SendTS: 1234567}
	b := roundTrip(t, h, DataHdrLen, DecodeDataHdr)
	var back DataHdr
	b[0] = 0
	if err := DecodeDataHdr(b, &back); !errors.Is(err, ErrMagic) {
		t.Fatalf("bad magic: %v", err)
	}
}

func TestCodecsDoNotAllocate(t *testing.T) {
	var g Grant
	LeaseGrant(&g, hostMAC, fmMAC, 1, 1e6, 1e8, sampleTrailer())
	s := sampleSchedule()
	r := Report{N: 4}
	h := DataHdr{Src: 1}
	gb, sb, rb, hb := make([]byte, 60), make([]byte, 300), make([]byte, 300), make([]byte, DataHdrLen)
	var g2 Grant
	var s2 Schedule
	var r2 Report
	var h2 DataHdr
	if a := testing.AllocsPerRun(100, func() {
		g.Encode(gb)
		DecodeGrant(gb, &g2)
		n, _ := s.Encode(sb)
		DecodeSchedule(sb[:n], &s2)
		m, _ := r.Encode(rb)
		DecodeReport(rb[:m], &r2)
		h.Encode(hb)
		DecodeDataHdr(hb, &h2)
	}); a != 0 {
		t.Fatalf("%v allocations per encode+decode", a)
	}
}

func TestWinTrailerRoundTrip(t *testing.T) {
	w := WinTrailer{Due: 350_000, Close: -10, FMEnd: WinUnknown, Line: 120_000, Lease: math.MaxInt32, SlotUs: 5000, GuardUs: 300}
	b := roundTrip(t, w, WinTrailerLen, DecodeWinTrailer)
	var back WinTrailer
	if err := DecodeWinTrailer(b[:WinTrailerLen-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("short trailer: %v", err)
	}
	for _, c := range []struct {
		t, base int64
		want    int32
	}{
		{0, 5, WinUnknown}, {math.MaxInt64, 5, WinUnknown}, {15, 5, 10}, {5, 15, -10},
		{1 << 40, 1, math.MaxInt32}, {1, 1 << 40, math.MinInt32 + 1},
	} {
		if got := WinDelta(c.t, c.base); got != c.want {
			t.Errorf("WinDelta(%d, %d) = %d, want %d", c.t, c.base, got, c.want)
		}
	}
}
