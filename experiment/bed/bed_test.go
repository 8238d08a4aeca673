package bed

import "testing"

// A forward kept in the workers wants no host GRO: its offloads are those of
// no mode; any other run's are its mode's.
func TestOffloadMode(t *testing.T) {
	for _, c := range []struct {
		mode string
		args []string
		want string
	}{
		{"forward", nil, "forward"},
		{"forward", []string{"--fastpath", "afxdp"}, ""},
		{"forward", []string{"--fastpath=afxdp"}, ""},
		{"forward", []string{"--fastpath", "auto"}, "forward"},
		{"forward", []string{"--fastpath"}, "forward"},
		{"cells", []string{"--cells-size", "256"}, "cells"},
	} {
		if got := OffloadMode(c.mode, c.args); got != c.want {
			t.Errorf("OffloadMode(%q, %q) = %q, want %q", c.mode, c.args, got, c.want)
		}
	}
}
