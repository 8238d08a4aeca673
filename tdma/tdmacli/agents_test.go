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
