package dataplane

import (
	"strings"
	"testing"
)

// TestConfigNice: a nice value outside Linux's range is refused with the
// range named; 0 (leave it alone) and the ends of the range are accepted.
func TestConfigNice(t *testing.T) {
	for _, n := range []int{-21, 20} {
		c := Config{HostPort: "host0", LinkPort: "link0", Nice: n}
		if err := c.defaults(); err == nil || !strings.Contains(err.Error(), "[-20, 19]") {
			t.Errorf("nice %d: err %v; want one naming the range [-20, 19]", n, err)
		}
	}
	for _, n := range []int{-20, 0, 19} {
		c := Config{HostPort: "host0", LinkPort: "link0", Nice: n}
		if err := c.defaults(); err != nil {
			t.Errorf("nice %d: %v", n, err)
		}
	}
}
