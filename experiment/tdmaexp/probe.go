package tdmaexp

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
	"github.com/linkfabric/linkfabric/tdma/rawio"
	"golang.org/x/sys/unix"
)

// The §3.2 micro-benchmarks of the TDMA paper (`linkfabric tdma probe
// timers|spread|react`) share this file: sample summaries, the machine
// record and the plots.

// Quantiles summarise a sample in µs (nearest rank, report.Percentile).
type Quantiles struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p99_9_us"`
	Max  float64 `json:"max_us"`
}

// quantilesOf sorts d in place and summarises it.
func quantilesOf(d []time.Duration) Quantiles {
	q := report.Quantiles(d, 50, 99, 99.9, 100)
	if q == nil {
		return Quantiles{}
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return Quantiles{N: len(d), P50: us(q[0]), P99: us(q[1]), P999: us(q[2]), Max: us(q[3])}
}

// latenessQuantiles summarises a clock.Lateness histogram (1 µs buckets).
func latenessQuantiles(l *clock.Lateness) Quantiles {
	return Quantiles{N: int(l.N()), P50: l.Quantile(0.5), P99: l.Quantile(0.99), P999: l.Quantile(0.999), Max: l.Quantile(1)}
}

// ProbeMachine is what every probe records about the machine it ran on.
type ProbeMachine struct {
	CPUBefore float64 `json:"cpu_busy_before_pct"` // over the second before the start
	Forced    bool    `json:"forced"`              // started on a saturated machine (--force)
	CPUBusy   float64 `json:"cpu_busy_pct"`        // over the probe
	LoadAvg   float64 `json:"load_avg"`            // 1-minute, at the end
	cpu0      CPUSample
}

// probeStart fills e's defaults, refuses a saturated machine unless force
// (CheckCPU) and starts the CPU record.
func probeStart(e *bed.Env, force bool) (ProbeMachine, error) {
	if err := e.Defaults(); err != nil {
		return ProbeMachine{}, err
	}
	busy, err := CheckCPU(force)
	if err != nil {
		return ProbeMachine{}, err
	}
	m := ProbeMachine{CPUBefore: busy, Forced: force && busy > SaturatedLimit}
	m.cpu0, _ = ReadCPU()
	return m, nil
}

// probeStar starts a probe (probeStart) and brings up its star s, saying
// so in e's progress as what, with note after.
func probeStar(e *bed.Env, force bool, what, note string, s TDMAStar) (ProbeMachine, *netns.Testbed, error) {
	m, err := probeStart(e, force)
	if err != nil {
		return m, nil, err
	}
	e.Printf("%s: star of %d hosts at %s (MTU %d)%s", what, s.Hosts, s.Rate, s.MTU, note)
	tb, err := upStar(e, s)
	return m, tb, err
}

// finish records the CPU use since probeStart and the load average.
func (m *ProbeMachine) finish() {
	c, _ := ReadCPU()
	m.CPUBusy, m.LoadAvg = BusyPct(m.cpu0, c), bed.LoadAvg()
}

// text writes the machine's record under a report.
func (m *ProbeMachine) text(b *strings.Builder) {
	fmt.Fprintf(b, "CPU %.0f%% busy during the probe (%.0f%% before), load average %.1f\n", m.CPUBusy, m.CPUBefore, m.LoadAvg)
	if m.Forced {
		fmt.Fprintln(b, "forced: the machine was saturated at the start; figures are indicative")
	}
}

// recvEach drains p until stop: it waits in poll (20 ms at most, so stop
// is seen), receives in batches into buffers of bufLen bytes allocated
// once, and calls each for every frame with its kernel receive time (0:
// none). Frames the kernel truncated are skipped.
func recvEach(p *rawio.Port, bufLen int, stop *atomic.Bool, each func(b []byte, ts int64)) {
	var bufs [rawio.MaxBatch][]byte
	back := make([]byte, len(bufs)*bufLen)
	var lens [rawio.MaxBatch]int
	var ts [rawio.MaxBatch]int64
	for i := range bufs {
		bufs[i] = back[i*bufLen : (i+1)*bufLen]
	}
	fds := []unix.PollFd{{Fd: int32(p.Fd()), Events: unix.POLLIN}}
	for !stop.Load() {
		unix.Poll(fds, 20)
		for {
			k, err := p.Recv(bufs[:], lens[:], ts[:])
			if err != nil || k == 0 {
				break
			}
			for j := 0; j < k; j++ {
				if lens[j] > 0 {
					each(bufs[j][:lens[j]], ts[j])
				}
			}
		}
	}
}

// plotProbeCDF draws each series as a CDF from its median up (x: µs, log
// scale; y: 50 %, 90 %, 99 %, 99.9 %… equally spaced), like fct's tails.
func plotProbeCDF(path, title, xlabel string, names []string, samples [][]time.Duration) error {
	var flows []fct.Flow
	for i, n := range names {
		for _, d := range samples[i] {
			flows = append(flows, fct.Flow{Arm: n, FCT: d})
		}
	}
	return fct.PlotTailCDF(flows, 0, path, fct.PlotOptions{Title: title, XLabel: xlabel, TailFrom: 0.5, Arms: names})
}

// wireNs is how long a frame of frameLen bytes (without FCS) takes at
// rate bit/s, with the preamble, FCS and gap (24 bytes).
func wireNs(frameLen int, rate uint64) int64 {
	return int64(float64(frameLen+24) * 8e9 / float64(rate))
}

// recommendGuard is the guard a measured spread asks for (design §3.8):
// its p99.9 across hosts, plus one frame of frameLen bytes at rate (the
// frame still crossing the switch port when the next sender opens),
// rounded up to 10 µs. The host's timer error is the gate's --margin.
func recommendGuard(spreadP999us float64, frameLen int, rate uint64) float64 {
	g := spreadP999us + float64(wireNs(frameLen, rate))/1e3
	return math.Ceil(g/10) * 10
}

// lockProbeThread locks the calling goroutine to its OS thread and makes
// it SCHED_FIFO at prio if prio > 0. The caller never unlocks: the thread
// ends with the goroutine, so no pool thread keeps the real-time policy.
// It returns the scheduler used ("CFS" or "FIFO <prio>") and, when prio
// was refused, why (the thread stays under CFS).
func lockProbeThread(prio int) (sched string, refused error) {
	runtime.LockOSThread()
	if prio <= 0 {
		return "CFS", nil
	}
	if err := clock.SetRT(prio); err != nil {
		return "CFS", err
	}
	return "FIFO " + strconv.Itoa(prio), nil
}

// pinThread binds the calling (locked) OS thread to cpu, if the machine
// has it; it returns the CPU, or -1 if it did not pin.
func pinThread(cpu int) int {
	if cpu < 0 || cpu >= runtime.NumCPU() {
		return -1
	}
	var set unix.CPUSet
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		return -1
	}
	return cpu
}

// pollUntil waits until fd is readable or deadline (clock ns): ppoll for
// all but the last clock.DefaultSpin, then a spin that polls fd, as the
// FM's sleeper does with a socket to watch. It does not allocate.
func pollUntil(fds []unix.PollFd, deadline int64) {
	spin := int64(clock.DefaultSpin)
	now := clock.Now()
	if d := deadline - now - spin; d > 0 {
		ts := unix.NsecToTimespec(d)
		fds[0].Revents = 0
		if n, _ := unix.Ppoll(fds, &ts, nil); n > 0 {
			return
		}
	}
	for clock.Now() < deadline {
		fds[0].Revents = 0
		if n, _ := unix.Poll(fds, 0); n > 0 {
			return
		}
	}
}
