package bed

import (
	"strconv"
	"strings"
	"testing"
)

// A sockperf ping-pong summary as sockperf 3.x prints it.
const sockperfOut = `sockperf: ====> avg-latency=15.547 (std-dev=14.450)
sockperf: ---> <MAX> observation = 2424.615
sockperf: ---> percentile 99.999 = 2424.615
sockperf: ---> percentile 99.000 =   21.785
sockperf: ---> percentile 90.000 =   16.365
sockperf: ---> percentile 50.000 =   14.912
sockperf: ---> <MIN> observation =   13.655`

func TestSockperfPercentiles(t *testing.T) {
	got := map[string]float64{}
	for _, m := range percentileRE.FindAllStringSubmatch(sockperfOut, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		got[m[1]] = v
	}
	if got["50.000"] != 14.912 || got["99.000"] != 21.785 || len(got) != 4 {
		t.Fatalf("parsed %v", got)
	}
}

func TestChooseCC(t *testing.T) {
	for _, tc := range []struct {
		want  string
		avail []string
		got   string
		err   string
	}{
		{"", []string{"reno", "bbr", "cubic"}, "cubic", ""},
		{"auto", []string{"reno", "cubic", "dctcp"}, "dctcp", ""},
		{"bbr", []string{"reno", "bbr", "cubic"}, "bbr", ""},
		{"dctcp", []string{"reno", "bbr", "cubic"}, "", "available: reno, bbr, cubic"},
	} {
		got, err := ChooseCC(tc.want, tc.avail)
		if got != tc.got || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ChooseCC(%q, %v) = %q, %v", tc.want, tc.avail, got, err)
		}
	}
}
