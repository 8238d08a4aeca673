package gate

import (
	"testing"

	"github.com/linkfabric/linkfabric/tdma/wire"
)

// TestClassify: a frame inside its slot is no collision; each way of
// leaving it is named by its cause, with its lateness.
func TestClassify(t *testing.T) {
	const send = int64(1_000_000_000)
	// A slot of 5 ms with a 300 µs guard ending 2 ms after the release on
	// the FM's timeline; the sender's estimate agrees; the frame leaves
	// its line 100 µs after release; the lease runs 10 ms more.
	base := wire.WinTrailer{Due: 2_300_000, Close: 1_950_000, FMEnd: 2_000_000, Line: 100_000, Lease: 10_000_000, SlotUs: 5000, GuardUs: 300, Entry: wire.WinUnknown}
	cases := []struct {
		name   string
		edit   func(*wire.WinTrailer)
		rx     int64 // after send
		cause  Cause
		lateUs float64
		coll   bool
	}{
		{"in slot", nil, 300_000, 0, 0, false},
		{"at the guard's end", nil, 2_300_000, 0, 0, false},
		{"kernel queue", nil, 2_400_000, KernelQueue, 100, true},
		{"entered the switch late", func(w *wire.WinTrailer) { w.Entry = 2_350_000 }, 2_400_000, KernelQueue, 100, true},
		{"switch queue", func(w *wire.WinTrailer) { w.Entry = 200_000 }, 2_400_000, SwitchQueue, 100, true},
		{"held by the host, entered just in time", func(w *wire.WinTrailer) { w.Entry = 2_250_000 }, 2_400_000, KernelQueue, 100, true},
		{"grant late", func(w *wire.WinTrailer) { w.Due, w.Close, w.Line = 2_600_000, 2_250_000, 2_200_000 }, 2_500_000, GrantLate, 200, true},
		{"grant late, entered the switch late", func(w *wire.WinTrailer) {
			w.Due, w.Close, w.Line, w.Entry = 2_800_000, 2_450_000, 2_400_000, 2_410_000
		}, 2_500_000, GrantLate, 200, true},
		{"grant a little late, then held by the host", func(w *wire.WinTrailer) {
			w.Due, w.Close, w.Line, w.Entry = 2_420_000, 2_070_000, 2_070_000, 3_000_000
		}, 3_100_000, KernelQueue, 800, true},
		{"closed late", func(w *wire.WinTrailer) { w.Line = 1_960_000 }, 2_400_000, ClosedLate, 100, true},
		{"released after the close", func(w *wire.WinTrailer) { w.Due, w.Close, w.FMEnd, w.Line = 300_000, -50_000, 0, -60_000 }, 400_000, ClosedLate, 100, true},
		{"released long after its planned departure", func(w *wire.WinTrailer) { w.Due, w.Close, w.FMEnd, w.Line = 320_000, 10_000, 20_000, -2_000_000 }, 400_000, ClosedLate, 80, true},
		{"queued after a late release", func(w *wire.WinTrailer) { w.Due, w.Close, w.FMEnd, w.Line = 320_000, 10_000, 20_000, -100_000 }, 400_000, KernelQueue, 80, true},
		{"after lease", func(w *wire.WinTrailer) { w.Lease = -5 }, 2_350_000, AfterLease, 50, true},
		{"opened early", func(w *wire.WinTrailer) { w.FMEnd = 4_800_000 }, 300_000, OpenedEarly, 100, true},
		{"paper window, late", func(w *wire.WinTrailer) {
			w.FMEnd, w.Close, w.Lease = wire.WinUnknown, wire.WinUnknown, wire.WinUnknown
		}, 2_310_000, KernelQueue, 10, true},
		{"paper window, past the intended close", func(w *wire.WinTrailer) {
			w.FMEnd, w.Close, w.Lease, w.Line = wire.WinUnknown, wire.WinUnknown, wire.WinUnknown, 2_100_000
		}, 2_310_000, ClosedLate, 10, true},
	}
	for _, c := range cases {
		w := base
		if c.edit != nil {
			c.edit(&w)
		}
		cause, late, coll := Classify(send, send+c.rx, &w)
		if coll != c.coll || coll && (cause != c.cause || late != c.lateUs) {
			t.Errorf("%s: got %v %s %.0f µs, want %v %s %.0f µs", c.name, coll, cause, late, c.coll, c.cause, c.lateUs)
		}
	}
}

// TestEnteredOutside: entry times at and around a slot's bounds.
func TestEnteredOutside(t *testing.T) {
	const send = int64(1_000_000_000)
	w := wire.WinTrailer{Due: 2_300_000, FMEnd: 2_000_000, SlotUs: 5000, GuardUs: 300}
	for _, c := range []struct {
		entry int32
		want  bool
	}{
		{wire.WinUnknown, false}, {2_300_000, false}, {2_300_001, true}, {-2_700_000, false}, {-2_700_001, true}, {100, false},
	} {
		w.Entry = c.entry
		if got := EnteredOutside(send, &w); got != c.want {
			t.Errorf("entry %d: outside %v, want %v", c.entry, got, c.want)
		}
	}
	w.FMEnd, w.Entry = wire.WinUnknown, 2_300_001
	if !EnteredOutside(send, &w) {
		t.Error("entry past the sender's due: not outside")
	}
}

// TestStopped: the cause and lateness of frames the exit gate stopped.
func TestStopped(t *testing.T) {
	const send = int64(1_000_000_000)
	// The slot of TestClassify: ending 2 ms after the release on the FM's
	// timeline and the sender's estimate, the frame planned to leave its
	// line 100 µs after its release.
	base := wire.WinTrailer{Due: 2_300_000, Close: 1_950_000, FMEnd: 2_000_000, Line: 100_000, Lease: 10_000_000, SlotUs: 5000, GuardUs: 300}
	for _, c := range []struct {
		name   string
		edit   func(*wire.WinTrailer)
		flags  uint8
		cause  Cause
		lateUs float64
	}{
		{"held by the host", func(w *wire.WinTrailer) { w.Entry = 2_200_000 }, 0, KernelQueue, 200},
		// the arrival gate stopped it at its receiver 29 ms after the
		// release: past the FM's slot end plus the guard by 26.7 ms
		{"held by the switch", func(w *wire.WinTrailer) { w.Entry = 29_000_000 }, wire.DataHeld | wire.DataReturned, SwitchQueue, 26_700},
		{"held by the switch, on the sender's estimate", func(w *wire.WinTrailer) { w.FMEnd, w.Entry = wire.WinUnknown, 2_500_000 }, wire.DataHeld, SwitchQueue, 200},
		{"grant late", func(w *wire.WinTrailer) { w.Due, w.Close, w.Line, w.Entry = 2_600_000, 2_250_000, 2_200_000, 2_210_000 }, 0, GrantLate, 210},
		{
			"grant a little late, then held by the host", func(w *wire.WinTrailer) { w.Due, w.Close, w.Line, w.Entry = 2_400_000, 2_050_000, 2_050_000, 2_500_000 }, 0, KernelQueue, 500,
		},
		{"after lease", func(w *wire.WinTrailer) { w.Lease, w.Entry = -5, 2_200_000 }, 0, AfterLease, 200},
		{"released after the close", func(w *wire.WinTrailer) { w.Close, w.Line, w.Entry = -50_000, -40_000, 100_000 }, 0, ClosedLate, 0},
		{"released long after its planned departure", func(w *wire.WinTrailer) {
			w.Due, w.Close, w.FMEnd, w.Line, w.Entry = 320_000, 10_000, 20_000, -2_000_000, 200_000
		}, 0, ClosedLate, 180},
		{"the sender's estimate ends first", func(w *wire.WinTrailer) { w.Due, w.Entry = 2_100_000, 1_900_000 }, 0, KernelQueue, 100},
		{"before the slot's start plus the guard", func(w *wire.WinTrailer) { w.FMEnd, w.Due, w.Close, w.Entry = 4_800_000, 5_100_000, 4_750_000, 50_000 }, 0, OpenedEarly, 50},
	} {
		w := base
		c.edit(&w)
		if cause, late := Stopped(send, &w, c.flags); cause != c.cause || late != c.lateUs {
			t.Errorf("%s: got %s %.0f µs, want %s %.0f µs", c.name, cause, late, c.cause, c.lateUs)
		}
	}
}

// TestMeetings: two senders' frames meet when the later entered the switch
// before the earlier left it; the meeting is laid on the one outside its
// slot, the earlier first.
func TestMeetings(t *testing.T) {
	var m Meetings
	steps := []struct {
		src         int
		entry, rx   int64
		c           Cause
		met         bool
		on          Cause
		description string
	}{
		{0, 100, 200, NumCauses, false, NumCauses, "the first frame"},
		{0, 150, 300, NumCauses, false, NumCauses, "the same sender, queued behind its own frame"},
		{1, 400, 500, NumCauses, false, NumCauses, "another sender, after the first left"},
		{0, 450, 600, SwitchQueue, true, SwitchQueue, "entered before the other left, itself late"},
		{1, 550, 700, NumCauses, true, SwitchQueue, "the next sender's frame meets the late one"},
		{0, 650, 800, NumCauses, true, NumCauses, "both inside their slots"},
		{1, 900, 1000, OpenedEarly, false, NumCauses, "early, but the other had left"},
		{0, 0, 1100, KernelQueue, false, NumCauses, "no entry stamp: unknown"},
		{1, 1050, 1200, OpenedEarly, true, KernelQueue, "early, meeting a late one: the earlier's cause"},
	}
	for _, s := range steps {
		on, met := m.Next(s.src, s.entry, s.rx, s.c)
		if met != s.met || on != s.on {
			t.Errorf("%s: met %v on %s, want %v on %s", s.description, met, on, s.met, s.on)
		}
	}
	if m.InSlot != 1 {
		t.Errorf("%d meetings inside the slots, want 1", m.InSlot)
	}
}

// TestTransit counts frames over each threshold (a frame at a threshold is
// not over it) and keeps the longest, merged across receivers.
func TestTransit(t *testing.T) {
	var a, b Transit
	for _, us := range []int64{10, 150, 151, 300, 999} {
		a.Add(us * 1000)
	}
	b.Add(4_000_001)
	b.Add(1_000_000)
	a.Merge(&b)
	if want := (Transit{Frames: 7, Over: [4]uint64{5, 3, 1, 1}, MaxUs: 4000.001}); a != want {
		t.Fatalf("got %+v, want %+v", a, want)
	}
}
