package wire

import (
	"errors"
	"math"
	"testing"

	"github.com/linkfabric/linkfabric/pfc"
)

var (
	fmMAC   = [6]byte{0x02, 0, 0, 0, 0, 0x64}
	hostMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
)

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
	b := make([]byte, 512)
	n, err := s.Encode(b)
	if err != nil || n != s.Len() {
		t.Fatalf("encode %d %v", n, err)
	}
	var back Schedule
	if err := DecodeSchedule(b[:n], &back); err != nil {
		t.Fatal(err)
	}
	if back != s {
		t.Fatalf("round trip differs")
	}
	if d := back.Dst(1); d != 0 {
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

func TestReportRoundTrip(t *testing.T) {
	r := Report{Host: 1, Round: 9, Seq: 10, N: 3, Counters: Counters{CtlRx: 1, CtlLost: 2, GrantsLate: 3, OverrunBytes: 4, FreeRunOpens: 5, LeaseExpiries: 6}}
	r.Queued[0], r.Queued[2] = 1<<40, 7
	r.RxFree[1] = 65536
	b := make([]byte, 2048)
	n, err := r.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := DecodeReport(b[:n], &back); err != nil || back != r {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, r)
	}
	if err := DecodeReport(b[:n-1], &back); !errors.Is(err, ErrShort) {
		t.Fatalf("truncated: %v", err)
	}
}

func TestDataHdrRoundTrip(t *testing.T) {
	h := DataHdr{Src: 1, Dst: 3, Class: 2, Flags: 1, Round: 1 << 20, Slot: 7, Seq: 1 << 33, Offset: 1 << 35, SendTS: 1234567}
	b := make([]byte, DataHdrLen)
	if _, err := h.Encode(b); err != nil {
		t.Fatal(err)
	}
	var back DataHdr
	if err := DecodeDataHdr(b, &back); err != nil || back != h {
		t.Fatalf("%v %+v", err, back)
	}
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
	b := make([]byte, WinTrailerLen)
	if _, err := w.Encode(b); err != nil {
		t.Fatal(err)
	}
	var back WinTrailer
	if err := DecodeWinTrailer(b, &back); err != nil || back != w {
		t.Fatalf("%v %+v", err, back)
	}
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
