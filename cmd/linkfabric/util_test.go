package main

import "testing"

func TestParseBitRate(t *testing.T) {
	for in, want := range map[string]uint64{"10G": 10e9, "25Gbit": 25e9, "100g": 100e9, "1000M": 1e9, "2.5G": 2.5e9} {
		got, err := parseBitRate(in)
		if err != nil || got != want {
			t.Errorf("parseBitRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1G", "0"} {
		if _, err := parseBitRate(in); err == nil {
			t.Errorf("parseBitRate(%q) accepted", in)
		}
	}
}
