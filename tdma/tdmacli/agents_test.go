package tdmacli

import "testing"

func TestParseHostList(t *testing.T) {
	h, err := parseHostList("10.0.0.1-4")
	if err != nil || len(h) != 4 || h[3].String() != "10.0.0.4" {
		t.Fatalf("range: %v %v", h, err)
	}
	h, err = parseHostList("10.0.0.7, 10.0.0.9")
	if err != nil || len(h) != 2 || h[1].String() != "10.0.0.9" {
		t.Fatalf("list: %v %v", h, err)
	}
	for _, bad := range []string{"10.0.0.1", "10.0.0.4-2", "x-3", "10.0.0.1,nope"} {
		if _, err := parseHostList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseAgentFlags(t *testing.T) {
	hs, m, r, err := parseAgentFlags("10.0.0.1-2", "freerun", "100M", "the hosts'")
	if err != nil || len(hs) != 2 || m.String() != "freerun" || r != 100e6 {
		t.Fatalf("%v %v %v %v", hs, m, r, err)
	}
	for _, c := range [][3]string{{"x", "lease", "100M"}, {"10.0.0.1-2", "nope", "100M"}, {"10.0.0.1-2", "lease", "0"}, {"10.0.0.1-2", "lease", "fast"}} {
		if _, _, _, err := parseAgentFlags(c[0], c[1], c[2], "the hosts'"); err == nil {
			t.Errorf("%q accepted", c)
		}
	}
}
