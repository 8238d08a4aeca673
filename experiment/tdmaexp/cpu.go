package tdmaexp

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
)

// CPUSample is a reading of /proc/stat's first line (all CPUs, jiffies):
// Steal is the time the hypervisor ran something else while a vCPU had
// work (counted in Busy too). On a virtual machine it stalls every thread
// of the vCPU it takes, the switch's softirqs among them, however their
// priorities are set.
type CPUSample struct{ Busy, Total, Steal uint64 }

// ReadCPU reads /proc/stat.
func ReadCPU() (CPUSample, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUSample{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPU(line)
}

// parseCPU reads /proc/stat's first line.
func parseCPU(line string) (CPUSample, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return CPUSample{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var s CPUSample
	for i, v := range f[1:min(len(f), 9)] { // user … steal; guest time is in user's already
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return CPUSample{}, fmt.Errorf("/proc/stat: %q: %w", v, err)
		}
		s.Total += n
		if i != 3 && i != 4 { // idle, iowait
			s.Busy += n
		}
		if i == 7 {
			s.Steal = n
		}
	}
	return s, nil
}

// BusyPct is the share of CPU time busy between a and b, in %.
func BusyPct(a, b CPUSample) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return 100 * float64(b.Busy-a.Busy) / float64(b.Total-a.Total)
}

// StealPct is the share of CPU time the hypervisor took between a and b,
// in %.
func StealPct(a, b CPUSample) float64 {
	if b.Total <= a.Total {
		return 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Total-a.Total)
}

// SaturatedLimit: experiments refuse to start when the CPUs were busier
// than this (%) over a second, unless forced.
const SaturatedLimit = 85.0

// CheckCPU measures the machine for a second; it fails if the CPUs were
// more than SaturatedLimit % busy, unless force. It returns the busy share.
func CheckCPU(force bool) (float64, error) {
	a, err := ReadCPU()
	if err != nil {
		return 0, err
	}
	time.Sleep(time.Second)
	b, err := ReadCPU()
	if err != nil {
		return 0, err
	}
	busy := BusyPct(a, b)
	if busy > SaturatedLimit && !force {
		return busy, fmt.Errorf("the machine is saturated: CPUs %.0f%% busy over the last second (limit %.0f%%, load average %.1f): timing figures would measure the other load; wait, or pass --force to run anyway (and say so with the figures)", busy, SaturatedLimit, bed.LoadAvg())
	}
	return busy, nil
}
