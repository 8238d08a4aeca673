package host

import (
	"reflect"
	"testing"
)

// TestWindowFill: a window opened late, with a gap in its releases and
// room left at its close while data waited, then a destination's last
// window: each share goes where it belongs, and the last windows are kept.
func TestWindowFill(t *testing.T) {
	f := WindowFill{Last: make([][lastWins]WinUse, 3)}
	var st fillState
	left := map[int]bool{1: true, 2: false}
	has := func(j int) bool { return left[j] }
	key := func(r uint32, s int) uint64 { return uint64(r)<<8 | uint64(s) }
	// window (1, 0) to h1: open 1000..5000, first release 100 late, the
	// line idle 200 between batches, 300 left at the close
	f.batch(&st, key(1, 0), 1, 1000, 5000, 1100, 2000, 600, has)
	f.batch(&st, key(1, 0), 1, 1000, 5000, 2200, 4700, 900, has)
	// window (1, 1) to h2: on time, its last byte out 3000 before the close, h2 done
	f.batch(&st, key(1, 1), 2, 6000, 10000, 6000, 7000, 100, has)
	f.finish(&st, has)
	want := WindowFill{Windows: 2, Drained: 1, OpenNs: 8000, LateNs: 100, IdleNs: 200, TailNs: 300, DrainedNs: 3000}
	got := f
	got.Last = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fill %+v, want %+v", got, want)
	}
	var sum WindowFill
	sum.Add(&f)
	sum.Add(&f)
	if sum.OpenNs != 16000 || sum.Windows != 4 || sum.Pct(sum.TailNs) != 100*300.0/8000 || sum.Last != nil {
		t.Fatalf("sum of two %+v", sum)
	}
	if w := f.Last[1][lastWins-1]; w.Round != 1 || w.Slot != 0 || w.Bytes != 1500 || w.First != 1100 || w.End != 4700 {
		t.Fatalf("h1's last window %+v", w)
	}
	if w := f.Last[2][lastWins-1]; w.Slot != 1 || w.Bytes != 100 {
		t.Fatalf("h2's last window %+v", w)
	}
	if f.Last[0][lastWins-1].First != 0 {
		t.Fatal("a window kept for a destination never sent to")
	}
}
