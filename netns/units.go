package netns

import (
	"fmt"
	"strconv"
	"strings"
)

// BitRate is a rate in bit/s. It is written with an optional decimal unit
// (k, M, G, T: powers of 1000) and an optional "bit" or "bps": "500M",
// "1G", "2.5Gbit", "100000".
type BitRate uint64

// ByteSize is a size in bytes. It is written with an optional binary unit
// (K, M, G: powers of 1024, also spelt KB, KiB, ...): "256K", "256KB",
// "1MiB", "4096".
type ByteSize int

// ParseBitRate parses a BitRate; zero is allowed ("0": unlimited).
func ParseBitRate(s string) (BitRate, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit"), "bps")
	mult := 1.0
	if n := len(t); n > 0 {
		if m, ok := map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12}[t[n-1]]; ok {
			mult, t = m, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1e13 {
		return 0, fmt.Errorf("rate %q: want bit/s like 500M, 1G, 2.5Gbit or 0 (unlimited)", s)
	}
	return BitRate(v*mult + 0.5), nil
}

// ParseByteSize parses a ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b"), "i")
	mult := 1.0
	if n := len(t); n > 0 {
		if m, ok := map[byte]float64{'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}[t[n-1]]; ok {
			mult, t = m, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<40 {
		return 0, fmt.Errorf("size %q: want bytes like 256K, 256KB, 1MiB or 4096 (K = 1024)", s)
	}
	return ByteSize(v*mult + 0.5), nil
}

// Time is how long b takes at rate r, in ns.
func (r BitRate) Time(b ByteSize) int64 { return int64(float64(b) * 8e9 / float64(r)) }

func (r BitRate) String() string {
	for _, u := range []struct {
		div uint64
		s   string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if uint64(r) >= u.div && uint64(r)%u.div == 0 {
			return strconv.FormatUint(uint64(r)/u.div, 10) + u.s
		}
	}
	return strconv.FormatUint(uint64(r), 10)
}

func (b ByteSize) String() string {
	for _, u := range []struct {
		div int
		s   string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if int(b) >= u.div && int(b)%u.div == 0 {
			return strconv.Itoa(int(b)/u.div) + u.s
		}
	}
	return strconv.Itoa(int(b))
}

// MarshalText writes the rate with its unit ("500M"): YAML and text.
func (r BitRate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// MarshalJSON writes the rate as a number of bit/s, as every rate in the
// machine output is written.
func (r BitRate) MarshalJSON() ([]byte, error) { return strconv.AppendUint(nil, uint64(r), 10), nil }

// UnmarshalJSON takes a number of bit/s or a string ParseBitRate takes.
func (r *BitRate) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		s, err := strconv.Unquote(string(b))
		if err != nil {
			return fmt.Errorf("rate %s: %w", b, err)
		}
		return r.UnmarshalText([]byte(s))
	}
	return r.UnmarshalText(b)
}

// UnmarshalText parses a rate (see ParseBitRate).
func (r *BitRate) UnmarshalText(b []byte) error {
	v, err := ParseBitRate(string(b))
	*r = v
	return err
}

// MarshalText writes the size with its unit ("256KiB").
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses a size (see ParseByteSize).
func (b *ByteSize) UnmarshalText(t []byte) error {
	v, err := ParseByteSize(string(t))
	*b = v
	return err
}
