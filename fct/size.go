package fct

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a flow size in bytes. Accepted forms: "143", "143B",
// decimal suffixes K/KB, M/MB, G/GB (powers of 1000) and binary suffixes
// KiB, MiB, GiB (powers of 1024). Suffixes are case-insensitive; a fraction
// is allowed when the result is a whole number of bytes ("1.5KB" = 1500).
// So "2MB" = 2,000,000 B and "2MiB" = 2,097,152 B. The paper's 2 MB flows are
// written "2MB" (decimal) here.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("fct: empty size")
	}
	lower := strings.ToLower(t)
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9},
		{"b", 1},
	} {
		if strings.HasSuffix(lower, suf.s) {
			mult = suf.m
			lower = strings.TrimSpace(strings.TrimSuffix(lower, suf.s))
			break
		}
	}
	if lower == "" {
		return 0, fmt.Errorf("fct: bad size %q", s)
	}
	if n, err := strconv.ParseInt(lower, 10, 64); err == nil {
		if n < 0 || (n > 0 && n > math.MaxInt64/mult) {
			return 0, fmt.Errorf("fct: bad size %q", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(lower, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("fct: bad size %q", s)
	}
	v := f * float64(mult)
	if v != math.Trunc(v) || v > math.MaxInt64/2 {
		return 0, fmt.Errorf("fct: size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// ParseSizes parses a comma-separated list of sizes, e.g. "143,24387,2MB".
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		n, err := ParseSize(part)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fct: no sizes in %q", s)
	}
	return out, nil
}

// FormatSize renders a size compactly for labels: "143B", "24387B", "2MB",
// "2MiB". Exact multiples of 10^6/10^3 and 2^20/2^10 get a suffix.
func FormatSize(n int64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dMB", n/1e6)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1e4 && n%1e3 == 0:
		return fmt.Sprintf("%dKB", n/1e3)
	case n >= 1<<14 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// Mix is how many flows of each size a run sends: Flows[i] of Sizes[i], or
// Flows[0] of every size.
type Mix struct {
	Sizes []int64
	Flows []int
}

// Check refuses a flow count per size that does not match the sizes.
func (m Mix) Check() error {
	if len(m.Flows) != 1 && len(m.Flows) != len(m.Sizes) {
		return fmt.Errorf("%d flow counts for %d sizes: give one count for all sizes or one per size", len(m.Flows), len(m.Sizes))
	}
	return nil
}

// For is the flow count of size index i.
func (m Mix) For(i int) int {
	if len(m.Flows) == 1 {
		return m.Flows[0]
	}
	return m.Flows[i]
}

// String says "count×size" for each size, joined by " + ".
func (m Mix) String() string {
	var counts []string
	for i, s := range m.Sizes {
		counts = append(counts, fmt.Sprintf("%d×%s", m.For(i), FormatSize(s)))
	}
	return strings.Join(counts, " + ")
}
