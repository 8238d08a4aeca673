package bed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestSteps: runs outermost, then arms, then variants, numbered from 1 of
// the total; the first error, or ctx's end, stops them.
func TestSteps(t *testing.T) {
	var got []string
	err := Steps(context.Background(), 2, []string{"a", "b"}, CleanThenLossy, func(s Step[bool]) error {
		got = append(got, fmt.Sprintf("%d/%d %d %s %v", s.N, s.Total, s.Run, s.Arm, s.Variant))
		return nil
	})
	want := []string{"1/8 1 a false", "2/8 1 a true", "3/8 1 b false", "4/8 1 b true",
		"5/8 2 a false", "6/8 2 a true", "7/8 2 b false", "8/8 2 b true"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("steps %v (%v), want %v", got, err, want)
	}
	boom := errors.New("boom")
	n := 0
	if err := Steps(context.Background(), 3, []string{"a"}, []string{""}, func(s Step[string]) error {
		n++
		if s.Run == 2 {
			return boom
		}
		return nil
	}); err != boom || n != 2 {
		t.Fatalf("error: %v after %d steps, want boom after 2", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	if err := Steps(ctx, 3, []string{"a", "b"}, []string{""}, func(s Step[string]) error {
		n++
		cancel()
		return nil
	}); err != context.Canceled || n != 1 {
		t.Fatalf("cancelled: %v after %d steps, want context.Canceled after 1", err, n)
	}
}

func TestSortedNames(t *testing.T) {
	if got := SortedNames(map[string]int{"sw2": 2, "h1": 0, "sw1": 1}); !slices.Equal(got, []string{"h1", "sw1", "sw2"}) {
		t.Fatalf("SortedNames: %v", got)
	}
	if got := SortedNames(map[string]bool(nil)); len(got) != 0 {
		t.Fatalf("SortedNames(nil): %v", got)
	}
}
