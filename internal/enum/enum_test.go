package enum

import "testing"

type small uint8

type signed int

func TestName(t *testing.T) {
	names := []string{1: "one", 3: "three"}
	for _, c := range []struct {
		got, want string
	}{
		{Name(small(1), "small", names), "one"},
		{Name(small(3), "small", names), "three"},
		{Name(small(0), "small", names), "small(0)"}, // a hole in the table
		{Name(small(2), "small", names), "small(2)"},
		{Name(small(200), "small", names), "small(200)"}, // beyond it
		{Name(signed(-1), "signed", names), "signed(-1)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
