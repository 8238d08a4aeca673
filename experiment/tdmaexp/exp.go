package tdmaexp

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/gate"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// What the TDMA experiments (shuffle, ctlloss, rpc, rr) share.

// TDMACounters are a TDMA run's safety and overhead counters, summed over
// the hosts.
type TDMACounters struct {
	Collisions uint64 `json:"collisions"`
	// Found: the collisions by cause, the first ones of each receiver in
	// full, and the meetings of two frames both inside their slots.
	gate.Found
	// Stopped are the frames the exit gate returned, by cause (the
	// collisions it prevented, gate.Stopped), StoppedBy their count per
	// sender, StopSample the first ones of each sender in full.
	Stopped    gate.Causes      `json:"stopped_causes"`
	StoppedBy  []uint64         `json:"stopped_by_host,omitempty"`
	StopSample []gate.Collision `json:"stopped_sample,omitempty"`
	// Gate: the gate's counters (nil without one); Returned, Resent: the
	// agents' frames it returned and they sent again; RetLost: returned
	// frames an agent could not hold.
	Gate     *bpf.TDMAGateCounters `json:"gate,omitempty"`
	Returned uint64                `json:"returned,omitempty"`
	Resent   uint64                `json:"resent,omitempty"`
	RetLost  uint64                `json:"returned_lost,omitempty"`
	// Entered: data frames received with the exit gate's stamp;
	// EnteredOutside: of them, those that entered the switch outside
	// their slot (gate.EnteredOutside).
	Entered        uint64  `json:"entered,omitempty"`
	EnteredOutside uint64  `json:"entered_outside"`
	LostFrames     uint64  `json:"lost_frames"`
	SockDrops      uint64  `json:"recv_socket_drops"` // at the agents' data sockets
	CtlLost        uint64  `json:"control_lost"`      // grants dropped on purpose or missed
	LeaseExpiries  uint64  `json:"lease_expiries"`
	FreeRunOpens   uint64  `json:"freerun_opens"`
	OverrunBytes   uint64  `json:"overrun_bytes"`
	CtlOverheadPct float64 `json:"control_overhead_pct,omitempty"` // grant bytes per host ÷ the line rate
	FMLateP99us    float64 `json:"fm_late_p99_us,omitempty"`
	FMRT           bool    `json:"fm_rt,omitempty"`
	HostRT         bool    `json:"host_rt,omitempty"`
	// Fill: how the agents used their windows, summed over hosts (raw
	// mode; no last windows: each agent's statistics hold its own).
	Fill host.WindowFill `json:"window_fill"`
}

// counters sums r's hosts' counters; the control overhead is the FM's
// grant bytes per host over the run ÷ the line rate.
func (r *TDMARun) counters(c TDMAStar) TDMACounters {
	var t TDMACounters
	for _, h := range r.Hosts {
		t.Collisions += h.Collisions
		t.Found.Merge(&h.Found)
		t.Stopped.Merge(&h.Stopped)
		if n := h.Stopped.Total(); n > 0 {
			for len(t.StoppedBy) <= h.Host {
				t.StoppedBy = append(t.StoppedBy, 0)
			}
			t.StoppedBy[h.Host] += n
		}
		t.StopSample = append(t.StopSample, h.StopSample...)
		t.Returned += h.Returned
		t.Entered += h.Entered
		t.EnteredOutside += h.EnteredOutside
		t.Resent += h.Resent
		t.RetLost += h.RetFull
		t.CtlLost += h.CtlDrop + h.G.CtlLost
		t.LeaseExpiries += h.G.LeaseExpiries
		t.FreeRunOpens += h.G.FreeRunOpens
		t.HostRT = t.HostRT || h.RT
		t.LostFrames += h.RecvLost
		t.SockDrops += h.SockDrops
		t.OverrunBytes += h.G.OverrunBytes
		t.Fill.Add(&h.Fill)
	}
	t.FMLateP99us, t.FMRT = r.FM.LateP99us, r.FM.RT
	t.Gate = r.Gate
	if r.FM.Duration > 0 {
		t.CtlOverheadPct = 100 * float64(r.FM.CtlBytes) * 8 / r.FM.Duration / float64(c.Hosts) / float64(c.Rate)
	}
	return t
}

// ArmMeasures are what every TDMA experiment records around an arm: the
// switch ports' queues, the drops outside them (StarDrops), and the CPUs.
type ArmMeasures struct {
	Switch       SwitchStats `json:"switch"`
	HostDrops    uint64      `json:"host_tbf_drops"` // drops at the hosts' egress TBFs
	VethDrops    uint64      `json:"veth_drops"`     // veth on transmit (a full input backlog), hosts and switch ports
	VethRxDrops  uint64      `json:"veth_rx_drops"`  // veth on receive, hosts and switch ports
	PortRxDrops  uint64      `json:"port_rx_drops"`  // of them, at the switch's ends
	BacklogDrops uint64      `json:"backlog_drops_machine"`
	CPUBusyPct   float64     `json:"cpu_busy_pct"`
	StealPct     float64     `json:"cpu_steal_pct"` // of it, taken by the hypervisor
	LoadAvg      float64     `json:"load_avg"`
}

// onStar brings up a fresh star for one arm, with the softirq threads
// under SCHED_FIFO c.SoftirqRT, runs fn on it while sampling the switch,
// the star's drops and the CPUs into m, and tears it down.
func onStar(e *bed.Env, c TDMAStar, m *ArmMeasures, fn func(tb *netns.Testbed) error) error {
	tb, err := upStar(e, c)
	if err != nil {
		return err
	}
	defer tb.Down()
	restore, err := softirqRT(c.SoftirqRT)
	if err != nil {
		return err
	}
	defer restore()
	stop := make(chan struct{})
	sw, err := sampleSwitch(tb.NS("sw"), c.Hosts, stop)
	if err != nil {
		return err
	}
	drops0 := readStarDrops(tb, c.Hosts)
	cpu0, _ := ReadCPU()
	err = fn(tb)
	close(stop)
	m.Switch = sw()
	d := readStarDrops(tb, c.Hosts).Sub(drops0)
	m.HostDrops, m.VethDrops, m.VethRxDrops, m.PortRxDrops, m.BacklogDrops = d.HostTBF, d.Veth, d.VethRx+d.PortRx, d.PortRx, d.Backlog
	cpu1, _ := ReadCPU()
	m.CPUBusyPct, m.StealPct, m.LoadAvg = BusyPct(cpu0, cpu1), StealPct(cpu0, cpu1), bed.LoadAvg()
	return err
}

// Precheck is how busy the machine was before an experiment started.
type Precheck struct {
	Forced bool    `json:"forced"` // it was saturated and --force ran anyway
	CPUPre float64 `json:"cpu_busy_before_pct"`
}

// precheck fills in the Env's defaults and measures the CPUs for a second:
// it fails on a saturated machine unless force.
func precheck(e *bed.Env, force bool) (Precheck, error) {
	if err := e.Defaults(); err != nil {
		return Precheck{}, err
	}
	busy, err := CheckCPU(force)
	return Precheck{Forced: force && busy > SaturatedLimit, CPUPre: busy}, err
}

// print says when the figures were measured on a saturated machine.
func (p Precheck) print(w io.Writer) {
	if p.Forced {
		fmt.Fprintf(w, "\nforced: the CPUs were %.0f%% busy before the start; figures are indicative\n", p.CPUPre)
	}
}

// progressRate is the rate (bytes/s) of a received-bytes progress series
// between from and to (clock ns), interpolated between its points; 0 if
// the series does not cover the interval.
func progressRate(pts []host.Point, from, to int64) float64 {
	if to <= from || len(pts) < 2 || pts[0].T > from || pts[len(pts)-1].T < to {
		return 0
	}
	at := func(t int64) float64 {
		k, _ := slices.BinarySearchFunc(pts, t, func(p host.Point, t int64) int { return int(p.T - t) })
		if k == 0 {
			return float64(pts[0].Bytes)
		}
		if k >= len(pts) {
			return float64(pts[len(pts)-1].Bytes)
		}
		a, b := pts[k-1], pts[k]
		return float64(a.Bytes) + float64(b.Bytes-a.Bytes)*float64(t-a.T)/float64(b.T-a.T)
	}
	return (at(to) - at(from)) / (float64(to-from) / 1e9)
}

// LatQuantiles summarises latency samples (µs).
type LatQuantiles struct {
	N     int     `json:"n"`
	P50us float64 `json:"p50_us"`
	P95us float64 `json:"p95_us"`
	P99us float64 `json:"p99_us"`
	Maxus float64 `json:"max_us"`
}

// latQuantilesOf returns v's nearest-rank quantiles; v is sorted in place.
func latQuantilesOf(v []float64) LatQuantiles {
	q := report.Quantiles(v, 50, 95, 99, 100)
	if q == nil {
		return LatQuantiles{}
	}
	return LatQuantiles{N: len(v), P50us: q[0], P95us: q[1], P99us: q[2], Maxus: q[3]}
}

// Check is one of an experiment's targets: Value against Limit.
type Check struct {
	Name   string  `json:"name"`
	Target string  `json:"target"` // how Value is compared with Limit, in words
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"`
}

// atMost, atLeast and above build Checks; a NaN or infinite value is missed.
func atMost(name, target string, v, limit float64) Check {
	return Check{Name: name, Target: target, Value: v, Limit: limit, Met: !math.IsNaN(v) && !math.IsInf(v, 0) && v <= limit}
}

func atLeast(name, target string, v, limit float64) Check {
	return Check{Name: name, Target: target, Value: v, Limit: limit, Met: !math.IsNaN(v) && !math.IsInf(v, 0) && v >= limit}
}

func above(name, target string, v, limit float64) Check {
	return Check{Name: name, Target: target, Value: v, Limit: limit, Met: !math.IsNaN(v) && !math.IsInf(v, 0) && v > limit}
}

// printChecks prints one line per check: met or MISSED.
func printChecks(w io.Writer, cs []Check) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nchecks (medians over the runs):")
	for _, c := range cs {
		verdict := "met"
		if !c.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "  %-6s %s: %.3f (%s %.3f)", verdict, c.Name, c.Value, c.Target, c.Limit)
		if c.Note != "" {
			fmt.Fprintf(w, " — %s", c.Note)
		}
		fmt.Fprintln(w)
	}
}

// agentDuration is the --duration flag of an agent.
func agentDuration(d time.Duration) []string { return []string{"--duration", d.String()} }

// causeRun is one run's collisions and the exit gate's stopped frames by
// cause, with its label.
type causeRun struct {
	label string
	c     *TDMACounters
}

// runCauses is a run's causeRun.
func runCauses(label string, c *TDMACounters) causeRun { return causeRun{label: label, c: c} }

// printCauses prints the collision-cause table: per run and cause the
// collided frames, bytes and lateness (mean and largest, µs), then, for
// the runs with collisions, the worst few of their samples (host, slot,
// lateness and where the time went); and the same for the frames the exit
// gate stopped (the collisions it prevented), with their count per sender.
func printCauses(w io.Writer, runs []causeRun) {
	for _, r := range runs {
		if g := r.c; g.Gate != nil {
			fmt.Fprintf(w, "%s: exit gate passed %d data frames, returned %d (%d released after their close or lease); arrival gate held %d that reached their receiver late (sent back %d, dropped %d); sent again %d, lost %d; frames that entered the switch outside their slot: %d of %d\n",
				r.label, g.Gate.Passed, g.Gate.Returned, g.Gate.AfterClose, g.Gate.Held, g.Gate.SentBack, g.Gate.SendBackDropped, g.Resent, g.RetLost, g.EnteredOutside, g.Entered)
		}
	}
	printCauseTable(w, runs, "collisions by cause (late: after the slot's end + guard on the FM's timeline; early: released before its start + guard; met: meetings with another sender's frame in the switch laid on the cause)",
		"worst sampled collisions (src → dst, round/slot: µs late; grant shift = the sender's slot end − the FM's; line = release → modelled departure; transit = departure → arrival)",
		func(c *TDMACounters) (*gate.Causes, []gate.Collision) { return &c.Causes, c.CollSample })
	for _, r := range runs {
		if n := r.c.MetInSlot; n > 0 {
			fmt.Fprintf(w, "  %s: %d meetings of two frames both inside their slots\n", r.label, n)
		}
	}
	for _, r := range runs {
		if t := r.c.Transit; t.Frames > 0 {
			o, at := t.Over, gate.TransitOver
			fmt.Fprintf(w, "%s: through the switch (the gate's stamp → the receiver's): %d frames, > %d µs %d, > %d µs %d, > %d µs %d, > %d µs %d, the longest %.0f µs\n",
				r.label, t.Frames, at[0], o[0], at[1], o[1], at[2], o[2], at[3], o[3], t.MaxUs)
		}
	}
	var gated bool
	for _, r := range runs {
		gated = gated || r.c.Gate != nil || r.c.Stopped.Total() > 0
	}
	if !gated {
		return
	}
	printCauseTable(w, runs, "frames the gates stopped, by cause (collisions they prevented; late: where the exit gate stopped the frame, past its slot's end, or where the arrival gate did, past its end + guard; early: before its start + guard)",
		"worst sampled stopped frames (src → dst, round/slot: µs late; grant shift = the sender's slot end − the FM's; line = release → modelled departure; transit = departure → the gate)",
		func(c *TDMACounters) (*gate.Causes, []gate.Collision) { return &c.Stopped, c.StopSample })
	for _, r := range runs {
		if len(r.c.StoppedBy) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s stopped by sender:", r.label)
		for h, n := range r.c.StoppedBy {
			fmt.Fprintf(w, " h%d %d", h+1, n)
		}
		fmt.Fprintln(w)
	}
}

// printCauseTable prints one cause table (title) over runs and its worst
// samples (sampleTitle); of picks the causes and samples from a run.
func printCauseTable(w io.Writer, runs []causeRun, title, sampleTitle string, of func(*TDMACounters) (*gate.Causes, []gate.Collision)) {
	var any bool
	for _, r := range runs {
		c, _ := of(r.c)
		any = any || c.Total() > 0
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	if !any {
		fmt.Fprintln(w, "  none in any run")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "run")
	for c := gate.Cause(0); c < gate.NumCauses; c++ {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw, "\t(frames, mean/max µs late)")
	for _, r := range runs {
		causes, _ := of(r.c)
		fmt.Fprint(tw, r.label)
		for _, s := range causes {
			if s.Frames == 0 {
				fmt.Fprint(tw, "\t0")
				continue
			}
			fmt.Fprintf(tw, "\t%d (%.0f/%.0f)", s.Frames, s.SumLateUs/float64(s.Frames), s.MaxLateUs)
			if s.Met > 0 {
				fmt.Fprintf(tw, " met %d", s.Met)
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprintf(w, "%s:\n", sampleTitle)
	for _, r := range runs {
		_, sample := of(r.c)
		s := slices.Clone(sample)
		slices.SortFunc(s, func(a, b gate.Collision) int { return cmp.Compare(b.LateUs, a.LateUs) })
		for _, c := range s[:min(len(s), 3)] {
			fr := ""
			if c.FreeRun {
				fr = ", free-run"
			}
			fmt.Fprintf(w, "  %s: h%d → h%d, %d/%d: %s %.0f µs late; grant shift %.0f µs, line %.0f µs, transit %.0f µs%s\n",
				r.label, c.Src+1, c.Dst+1, c.Round, c.Slot, c.Cause, c.LateUs, c.GrantShiftUs, c.LineUs, c.TransitUs, fr)
		}
	}
}
