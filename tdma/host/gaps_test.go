package host

import "testing"

// TestSendGapsKeepsLongest: the kept gaps are the four longest, longest
// first, whatever the order they come in.
func TestSendGapsKeepsLongest(t *testing.T) {
	var s SendGaps
	for i, l := range []int64{5, 1, 9, 3, 7, 2, 8, 9} {
		s.Add(SendGap{From: int64(100 * i), To: int64(100*i) + l, Heard: int64(i)})
	}
	want := []int64{9, 9, 8, 7}
	for i, g := range s {
		if g.Len() != want[i] {
			t.Fatalf("gap %d: length %d, want %d (all: %+v)", i, g.Len(), want[i], s)
		}
	}
	if s[0].Heard != 2 || s[1].Heard != 7 {
		t.Errorf("equal gaps: the first seen must stay first: %+v", s)
	}
	s.Add(SendGap{From: 10, To: 5}) // negative: ignored
	if s[3].Len() != 7 {
		t.Errorf("a negative gap displaced one: %+v", s)
	}
}
