package netns

import (
	"encoding/json"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseBitRate(t *testing.T) {
	for in, want := range map[string]BitRate{"500M": 500e6, "1G": 1e9, "2.5Gbit": 2.5e9, "100k": 1e5, "10gbps": 10e9, "0": 0, "1234": 1234} {
		if got, err := ParseBitRate(in); err != nil || got != want {
			t.Errorf("ParseBitRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "-1G", "1X", "G"} {
		if _, err := ParseBitRate(in); err == nil {
			t.Errorf("ParseBitRate(%q) accepted", in)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]ByteSize{"256K": 256 << 10, "256KB": 256 << 10, "256KiB": 256 << 10, "1MiB": 1 << 20, "4096": 4096, "1.5M": 3 << 19} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "big", "-1K", "KB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}

// TestUnitsRoundTrip: what a topology writes (JSON state, YAML) reads back
// the same, and YAML numbers without a unit are taken as they are.
func TestUnitsRoundTrip(t *testing.T) {
	for _, r := range []BitRate{500e6, 1e9, 1234, 1500} {
		b, _ := json.Marshal(r)
		var got BitRate
		if err := json.Unmarshal(b, &got); err != nil || got != r {
			t.Errorf("rate %d → %s → %d, %v", r, b, got, err)
		}
		if want := strconv.FormatUint(uint64(r), 10); string(b) != want {
			t.Errorf("rate %d is %s in JSON; want %s (bit/s, a number)", r, b, want)
		}
	}
	// State written before rates were numbers in JSON still reads.
	for in, want := range map[string]BitRate{`"500M"`: 500e6, `"2.5G"`: 2.5e9, `200e6`: 200e6, `null`: 0} {
		var got BitRate
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("json %s → %d, %v; want %d", in, got, err, want)
		}
	}
	var bad BitRate
	if err := json.Unmarshal([]byte(`"fast"`), &bad); err == nil {
		t.Error(`json "fast" read as a rate`)
	}
	for _, s := range []ByteSize{256 << 10, 1 << 20, 1500} {
		b, _ := json.Marshal(s)
		var got ByteSize
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("size %d → %s → %d, %v", s, b, got, err)
		}
	}
	var v struct {
		Rate   BitRate  `yaml:"rate"`
		Buffer ByteSize `yaml:"buffer"`
	}
	if err := yaml.Unmarshal([]byte("{rate: 1000000, buffer: 64KB}"), &v); err != nil || v.Rate != 1e6 || v.Buffer != 64<<10 {
		t.Errorf("yaml: %+v, %v", v, err)
	}
}

func TestBitRateTime(t *testing.T) {
	for _, c := range []struct {
		r    BitRate
		b    ByteSize
		want int64
	}{{100e6, 12500, 1e6}, {100e6, 16 << 10, 1310720}, {1e9, 1500, 12000}} {
		if got := c.r.Time(c.b); got != c.want {
			t.Errorf("%v at %v: %d ns, want %d", c.b, c.r, got, c.want)
		}
	}
}
