package tdmacli

import (
	"fmt"
	"time"

	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/fmcore"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/spf13/pflag"
)

// capacityFlags are tdma fm's --capacity-*: one host whose receive
// capacity oscillates (fmcore.Capacity).
type capacityFlags struct {
	host   int
	period time.Duration
	low    float64
	start  int64
	burst  string
	buffer string
}

func (c *capacityFlags) register(f *pflag.FlagSet) {
	f.IntVar(&c.host, "capacity-host", 0, "host number (1..N) whose receive capacity oscillates (0: none)")
	f.DurationVar(&c.period, "capacity-period", 50*time.Millisecond, "how long each phase of --capacity-host's capacity lasts (high first)")
	f.Float64Var(&c.low, "capacity-low", 0.1, "--capacity-host's capacity in its low phases, a fraction of the line rate")
	f.Int64Var(&c.start, "capacity-start", 0, "when the first high phase starts, CLOCK_MONOTONIC ns (0: when the FM starts)")
	f.StringVar(&c.burst, "capacity-burst", "16K", "how far ahead of the line rate a window's first bytes may reach --capacity-host's port (the hosts' TBF burst)")
	f.StringVar(&c.buffer, "capacity-buffer", "0", "--capacity-host's port buffer: a slot whose window, in a low phase, would leave more in it is refused (0: not checked)")
}

// capacities returns the capacities the flags give for n hosts at line
// rate rate with slot length slot in mode m (none without
// --capacity-host).
func (c *capacityFlags) capacities(n int, rate netns.BitRate, slot time.Duration, m gate.Discipline) ([]fmcore.Capacity, error) {
	burst, err := netns.ParseByteSize(c.burst)
	if err != nil {
		return nil, fmt.Errorf("--capacity-burst: %w", err)
	}
	buffer, err := netns.ParseByteSize(c.buffer)
	if err != nil {
		return nil, fmt.Errorf("--capacity-buffer: %w", err)
	}
	switch {
	case c.host == 0:
		return nil, nil
	case c.host < 1 || c.host > n:
		return nil, fmt.Errorf("--capacity-host %d: want a host number 1..%d (or 0: none)", c.host, n)
	case c.period < slot:
		return nil, fmt.Errorf("--capacity-period %v: want at least a slot (--slot %v)", c.period, slot)
	case !(c.low > 0 && c.low < 1):
		return nil, fmt.Errorf("--capacity-low %g: want a fraction of the line rate, more than 0 and less than 1", c.low)
	case m == gate.FreeRun:
		return nil, fmt.Errorf("--capacity-host needs --mode lease or paper: in freerun the hosts open their schedules' windows without a grant")
	}
	start := c.start
	if start == 0 {
		start = clock.Now()
	}
	return []fmcore.Capacity{{Host: c.host - 1, Start: start, Period: int64(c.period), Low: c.low, Burst: rate.Time(burst), Buffer: rate.Time(buffer)}}, nil
}
