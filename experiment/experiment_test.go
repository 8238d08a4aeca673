package experiment

import (
	"strconv"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

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

func TestRatio(t *testing.T) {
	if ratio(3, 0) != 0 || ratio(3, 2) != 1.5 {
		t.Fatal("ratio")
	}
}
