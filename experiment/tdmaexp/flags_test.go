package tdmaexp

import (
	"strings"
	"testing"
	"time"
)

func TestParseOffsets(t *testing.T) {
	open := 4650 * time.Microsecond
	auto, err := parseOffsets("auto", open)
	if err != nil || len(auto) != 9 || auto[0] != 0 || auto[8] >= open || auto[8] < open*3/4 {
		t.Errorf("auto: %v, %v: want 9 offsets from 0 to about 80 %% of %v", auto, err, open)
	}
	got, err := parseOffsets("0, 1ms,2500us", open)
	if err != nil || len(got) != 3 || got[1] != time.Millisecond || got[2] != 2500*time.Microsecond {
		t.Errorf("list: %v, %v", got, err)
	}
	for _, bad := range []string{"5ms", "-1ms", "x", "1ms,,2ms"} {
		if _, err := parseOffsets(bad, open); err == nil || !strings.Contains(err.Error(), "--offsets") {
			t.Errorf("%q: err %v, want an --offsets error", bad, err)
		}
	}
	if _, err := parseOffsets("auto", 0); err == nil {
		t.Error("a slot with no open part was accepted")
	}
}

func TestStarFlagsArms(t *testing.T) {
	s := tdmaStarFlags{arms: "tdma, tcp", armsOK: "tdma, tcp", armsAll: []string{"tdma", "tcp"}}
	if a, err := s.armList(); err != nil || len(a) != 2 || a[1] != "tcp" {
		t.Errorf("%v, %v", a, err)
	}
	s.arms = "tdma,udp"
	if _, err := s.armList(); err == nil || !strings.Contains(err.Error(), "udp") {
		t.Errorf("udp accepted: %v", err)
	}
	s.arms = " , "
	if a, err := s.armList(); err == nil {
		t.Errorf("no arm accepted: %v", a)
	}
}
