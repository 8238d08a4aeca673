package tdmaexp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
)

// TDMAOscConfig sizes `linkfabric tdma oscillate` (the paper's §6.4): one
// TCP flow from h1 to h2 while h2's switch port, the flow's bottleneck,
// alternates every Period between the line rate and Low times it.
type TDMAOscConfig struct {
	Star     TDMAStar      `json:"star"`
	Period   time.Duration `json:"period_ns"`
	Low      float64       `json:"low"`
	Duration time.Duration `json:"duration_ns"`
	Arms     []string      `json:"arms"`
	Runs     int           `json:"runs"`
	Force    bool          `json:"force"`
	Dir      string        `json:"-"`
}

// OscArms are the arms of tdma oscillate.
var OscArms = []string{"tcp", "tdma"}

// oscFifths: the port is read this many times a phase.
const oscFifths = 5

// oscBurst is the oscillating port's TBF burst: two full frames.
const oscBurst = 2 * 1514

// oscGSOMax is the TDMA arm's gates' --gso-max: a sixth of a window. A
// gate releases a GSO packet whole or not at all: at the agents' default
// (16 KiB; TCP made some 13 KiB at 100 Mbit/s) a 2 ms slot's window of 21
// KiB carried 14.6 KiB on average.
func oscGSOMax(c TDMAStar) int {
	w := float64(c.Rate) / 8 * (c.Slot - c.Guard).Seconds()
	return max(int(w/6), 1500)
}

// oscActive is the TDMA arm's gates' --nfq-active: the flow keeps every
// slot the capacity gives it (TCP beneath a fixed schedule, as in the
// paper), not a round planned for the window it has at the gate.
const oscActive = 100 * time.Millisecond

// OscRun is one arm's run.
type OscRun struct {
	Arm         string  `json:"arm"`
	Run         int     `json:"run"`
	Bps         float64 `json:"goodput_bps"`
	Retransmits int     `json:"tcp_retransmits"` // iperf3's
	RetransSegs uint64  `json:"h1_retrans_segs"` // h1's Tcp RetransSegs
	// OverCapacity is the goodput over the port's mean capacity (the line
	// rate × (1 + Low) ÷ 2).
	OverCapacity float64 `json:"goodput_over_capacity"`
	// Phases measured: whole phases from a second after the flow began to
	// its end. HighUse and LowUse: the bytes h2's port sent in them over
	// what its rate let it send; by fifth of a phase in HighFifths and
	// LowFifths (the first fifth right after the change).
	Phases     int                `json:"phases"`
	HighUse    float64            `json:"high_use"`
	LowUse     float64            `json:"low_use"`
	HighFifths [oscFifths]float64 `json:"high_use_fifths"`
	LowFifths  [oscFifths]float64 `json:"low_use_fifths"`
	// PortDrops: h2's port dropped in the phases measured.
	PortDrops uint64 `json:"port_drops"`
	// ChangeLate: how late the rate changes were (µs after the boundary).
	ChangeLateP50us float64 `json:"change_late_p50_us"`
	ChangeLateMaxus float64 `json:"change_late_max_us"`
	// TDMA arm: windows into h2 the FM withheld (its capacity had not
	// drained the ones before) and the NFQUEUE gates' drops.
	Withheld     uint64 `json:"fm_withheld,omitempty"`
	QueueDropped uint64 `json:"nfq_queue_dropped,omitempty"`
	UserDropped  uint64 `json:"nfq_user_dropped,omitempty"`
	ArmMeasures
	TDMA *TDMACounters `json:"tdma,omitempty"`
}

// OscArmSumm is an arm's medians over its runs (drops: the most).
type OscArmSumm struct {
	Runs         int                `json:"runs"`
	Bps          float64            `json:"goodput_bps"`
	OverCapacity float64            `json:"goodput_over_capacity"`
	HighUse      float64            `json:"high_use"`
	LowUse       float64            `json:"low_use"`
	HighFifths   [oscFifths]float64 `json:"high_use_fifths"`
	LowFifths    [oscFifths]float64 `json:"low_use_fifths"`
	Retransmits  float64            `json:"tcp_retransmits"`
	PortDrops    uint64             `json:"port_drops_max"`
	Collisions   uint64             `json:"collisions_max"`
}

// TDMAOscResult is the experiment's outcome.
type TDMAOscResult struct {
	Config  TDMAOscConfig         `json:"config"`
	Runs    []OscRun              `json:"runs"`
	Arms    map[string]OscArmSumm `json:"arms"`
	Checks  []Check               `json:"checks"`
	Seconds float64               `json:"seconds"`
	Precheck
}

// TDMAOsc runs the arms Runs times, taking turns (the order reversed every
// other run).
func TDMAOsc(ctx context.Context, e *bed.Env, cfg TDMAOscConfig) (*TDMAOscResult, error) {
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	res := &TDMAOscResult{Config: cfg, Precheck: pre}
	for run := 1; run <= cfg.Runs; run++ {
		arms := slices.Clone(cfg.Arms)
		if run%2 == 0 {
			slices.Reverse(arms)
		}
		for _, arm := range arms {
			e.Printf("tdma oscillate: run %d/%d, arm %s: TCP h1 → h2 for %v, h2's port %v and %.2g× it every %v (load average %.1f)",
				run, cfg.Runs, arm, cfg.Duration, cfg.Star.Rate, cfg.Low, cfg.Period, bed.LoadAvg())
			r, err := oscOnce(ctx, e, cfg, arm, run)
			if err != nil {
				return res, fmt.Errorf("run %d, arm %s: %w", run, arm, err)
			}
			e.Printf("  %.1f Mbit/s = %.2f× the mean capacity; port use high %.2f, low %.2f (high by fifth %s); port drops %d, retransmissions %d; rate changes late p50 %.0f µs, max %.0f",
				r.Bps/1e6, r.OverCapacity, r.HighUse, r.LowUse, fifths(r.HighFifths), r.PortDrops, r.Retransmits, r.ChangeLateP50us, r.ChangeLateMaxus)
			res.Runs = append(res.Runs, r)
		}
	}
	res.Arms, res.Checks = summarizeOsc(cfg.Arms, res.Runs)
	res.Seconds = time.Since(t0).Seconds()
	return res, ctx.Err()
}

func fifths(v [oscFifths]float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f", x)
	}
	return s
}

// summarizeOsc takes each arm's medians and checks the paper's claim:
// TDMA beneath TCP tracks the capacity better than TCP alone (its goodput
// over the capacity at least TCP's), dropping nothing at the port and
// colliding nowhere.
func summarizeOsc(arms []string, runs []OscRun) (map[string]OscArmSumm, []Check) {
	out := map[string]OscArmSumm{}
	for _, arm := range arms {
		var s OscArmSumm
		var bps, oc, hu, lu, retx []float64
		var hf, lf [oscFifths][]float64
		for _, r := range runs {
			if r.Arm != arm {
				continue
			}
			s.Runs++
			bps, oc, hu, lu = append(bps, r.Bps), append(oc, r.OverCapacity), append(hu, r.HighUse), append(lu, r.LowUse)
			retx = append(retx, float64(r.Retransmits))
			for i := range hf {
				hf[i], lf[i] = append(hf[i], r.HighFifths[i]), append(lf[i], r.LowFifths[i])
			}
			s.PortDrops = max(s.PortDrops, r.PortDrops)
			if r.TDMA != nil {
				s.Collisions = max(s.Collisions, r.TDMA.Collisions)
			}
		}
		if s.Runs == 0 {
			continue
		}
		s.Bps, s.OverCapacity, s.HighUse, s.LowUse, s.Retransmits = report.Median(bps), report.Median(oc), report.Median(hu), report.Median(lu), report.Median(retx)
		for i := range hf {
			s.HighFifths[i], s.LowFifths[i] = report.Median(hf[i]), report.Median(lf[i])
		}
		out[arm] = s
	}
	var cs []Check
	td, okd := out["tdma"]
	tc, okc := out["tcp"]
	if okd && okc {
		cs = append(cs, atLeast("TDMA's goodput over the capacity, against TCP's", fmt.Sprintf("≥ TCP's %.3f", tc.OverCapacity), td.OverCapacity, tc.OverCapacity))
	}
	if okd {
		cs = append(cs, atMost("TDMA: drops at h2's port, most in a run", "0", float64(td.PortDrops), 0),
			atMost("TDMA: collisions, most in a run", "0", float64(td.Collisions), 0))
	}
	return out, cs
}

// oscOnce runs one arm on a fresh star.
func oscOnce(ctx context.Context, e *bed.Env, cfg TDMAOscConfig, arm string, run int) (OscRun, error) {
	c := cfg.Star
	out := OscRun{Arm: arm, Run: run}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("run%d-%s", run, arm))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	// h2's port passes oscBurst beyond its rate, not the star's port
	// burst: a bucket full at a change to the low rate would let through
	// up to half a low phase's bytes at once (32 KiB at 10 Mbit/s: 26 ms).
	shape := netns.Shape{Rate: c.Rate, Burst: oscBurst, Limit: c.Limit}
	err := onStar(e, c, &out.ArmMeasures, func(tb *netns.Testbed) error {
		h1, h2 := tb.NS("h1"), tb.NS("h2")
		start := clock.Now() + int64(20*time.Millisecond)
		stop := make(chan struct{})
		trace, err := oscillate(tb.NS("sw"), "p2", shape, cfg.Low, int64(cfg.Period), start, c.RT, stop)
		if err != nil {
			return err
		}
		// Every way out stops the oscillation (and puts the rate back).
		stopTrace := sync.OnceValue(func() oscTrace { close(stop); return trace() })
		defer stopTrace()
		pairs := [][4]string{{h1, h2, netns.StarAddr(2), "5302"}}
		var flow iperfFlows
		if arm == "tcp" {
			flow = runIperf(ctx, pairs, cfg.Duration)
		} else {
			if err := netns.Sysctl(h1, "net.ipv4.tcp_early_retrans", "0"); err != nil {
				return err
			}
			c.FMArgs = []string{"--capacity-host", "2", "--capacity-period", cfg.Period.String(),
				"--capacity-low", strconv.FormatFloat(cfg.Low, 'g', -1, 64), "--capacity-start", strconv.FormatInt(start, 10),
				"--capacity-burst", strconv.FormatInt(int64(c.Burst), 10), "--capacity-buffer", strconv.FormatInt(int64(c.Limit), 10)}
			r, f, err := gatedIperf(ctx, e, tb, c, dir, pairs, cfg.Duration, "--nfq-active", oscActive.String(), "--gso-max", strconv.Itoa(oscGSOMax(c)))
			if err != nil {
				return err
			}
			flow = f
			ct := r.counters(c)
			out.TDMA = &ct
			out.Withheld = r.FM.Withheld
			out.QueueDropped, out.UserDropped = r.nfqDrops()
		}
		tr := stopTrace()
		if flow.err != nil {
			return flow.err
		}
		out.Bps, out.Retransmits, out.RetransSegs = flow.bps, flow.retx, flow.retxSegs
		out.OverCapacity = flow.bps / (float64(c.Rate) * (1 + cfg.Low) / 2)
		tr.measure(&out, float64(c.Rate), cfg.Low, flow.from+int64(time.Second), flow.to)
		return tr.err
	})
	return out, err
}

// oscTrace is the oscillating port read at every fifth of a phase: at
// T[i] = start + i·period/5 (the time read), its sent bytes and drops;
// every fifth reading (a phase's first) comes right before its rate
// change, Late[k] how late phase k's change was.
type oscTrace struct {
	Start, Period int64
	T             []int64
	Sent          []uint64
	Drops         []uint32
	Late          []int64
	err           error
}

// oscillate changes dev's root TBF in namespace ns between s.Rate (high
// phases: the first from start) and low × it every period, on a locked OS
// thread (under SCHED_FIFO rt, as the FM's clock thread, if rt > 0),
// reading the port at every fifth of a phase, until stop is closed; then
// it puts the rate back to s.Rate. The function returned waits for it and
// returns what it read.
func oscillate(ns, dev string, s netns.Shape, low float64, period, start int64, rt int, stop <-chan struct{}) (func() oscTrace, error) {
	tr, err := netns.NewTBFRate(ns, dev, s)
	if err != nil {
		return nil, err
	}
	qr, err := netns.NewQdiscReader(ns, []string{dev})
	if err != nil {
		tr.Close()
		return nil, err
	}
	lowRate := netns.BitRate(float64(s.Rate) * low)
	res := oscTrace{Start: start, Period: period}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread, SCHED_FIFO perhaps, ends with the
		// goroutine instead of going back to the runtime's pool.
		runtime.LockOSThread()
		defer qr.Close()
		defer tr.Close()
		if rt > 0 {
			if err := clock.SetRT(rt); err != nil {
				res.err = err
				return
			}
		}
		st := make([]netns.QdiscStat, 1)
		var sl clock.Sleeper
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				if err := tr.Set(s.Rate); err != nil && res.err == nil {
					res.err = err
				}
				return
			default:
			}
			at := start + i*period/oscFifths
			now := sl.SleepUntil(at)
			if err := qr.Read(st); err != nil {
				res.err = err
				return
			}
			res.T, res.Sent, res.Drops = append(res.T, now), append(res.Sent, st[0].SentBytes), append(res.Drops, st[0].Drops)
			if i%oscFifths != 0 {
				continue
			}
			rate := s.Rate
			if (i/oscFifths)%2 == 1 {
				rate = lowRate
			}
			if err := tr.Set(rate); err != nil {
				res.err = err
				return
			}
			res.Late = append(res.Late, clock.Now()-at)
		}
	}()
	return func() oscTrace { <-done; return res }, nil
}

// measure fills r's port use, drops and change lateness from the phases
// that lie whole in [from, to].
func (t oscTrace) measure(r *OscRun, rate, low float64, from, to int64) {
	var sent, could [2]float64
	var fs, fc [2][oscFifths]float64
	for i := 0; i+oscFifths < len(t.T); i += oscFifths {
		if t.T[i] < from || t.T[i+oscFifths] > to {
			continue
		}
		r.Phases++
		ph := (i / oscFifths) % 2 // 0 high, 1 low
		rt := rate
		if ph == 1 {
			rt *= low
		}
		for j := 0; j < oscFifths; j++ {
			b := float64(t.Sent[i+j+1] - t.Sent[i+j])
			c := rt / 8 * float64(t.T[i+j+1]-t.T[i+j]) / 1e9
			sent[ph], could[ph] = sent[ph]+b, could[ph]+c
			fs[ph][j], fc[ph][j] = fs[ph][j]+b, fc[ph][j]+c
		}
		r.PortDrops += uint64(t.Drops[i+oscFifths] - t.Drops[i])
	}
	use := func(s, c float64) float64 {
		if c == 0 {
			return 0
		}
		return s / c
	}
	r.HighUse, r.LowUse = use(sent[0], could[0]), use(sent[1], could[1])
	for j := range oscFifths {
		r.HighFifths[j], r.LowFifths[j] = use(fs[0][j], fc[0][j]), use(fs[1][j], fc[1][j])
	}
	late := make([]float64, len(t.Late))
	for i, l := range t.Late {
		late[i] = float64(l) / 1e3
	}
	slices.Sort(late)
	if len(late) > 0 {
		r.ChangeLateP50us, r.ChangeLateMaxus = report.Percentile(late, 50), late[len(late)-1]
	}
}

// WriteTDMAOsc writes oscillate.json and runs.csv into dir.
func WriteTDMAOsc(dir string, r *TDMAOscResult) ([]string, error) {
	jp := filepath.Join(dir, "oscillate.json")
	if err := report.WriteJSON(jp, r); err != nil {
		return nil, err
	}
	var rows [][]string
	for _, x := range r.Runs {
		rows = append(rows, []string{strconv.Itoa(x.Run), x.Arm, fmt.Sprintf("%.0f", x.Bps), fmt.Sprintf("%.4f", x.OverCapacity),
			fmt.Sprintf("%.4f", x.HighUse), fmt.Sprintf("%.4f", x.LowUse), strconv.FormatUint(x.PortDrops, 10), strconv.Itoa(x.Retransmits),
			strconv.Itoa(x.Phases), fmt.Sprintf("%.1f", x.LoadAvg)})
	}
	cp := filepath.Join(dir, "runs.csv")
	if err := report.WriteCSV(cp, []string{"run", "arm", "goodput_bps", "goodput_over_capacity", "high_use", "low_use", "port_drops", "tcp_retransmits", "phases", "load_avg"}, rows); err != nil {
		return nil, err
	}
	return []string{jp, cp}, nil
}

// Text renders the summary.
func (r *TDMAOscResult) Text() string { return report.Sprint(r.write) }

func (r *TDMAOscResult) write(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\nh2's port %v and %.2g× it, every %v; medians of %d runs per arm (drops and collisions: the most in a run)\n",
		c.Star.Rate, c.Low, c.Period, c.Runs)
	fmt.Fprintf(w, "%-5s %10s %9s %9s %8s %-26s %-26s %7s %6s %5s\n", "arm", "Mbit/s", "÷ capac.", "high use", "low use", "high use by fifth", "low use by fifth", "drops", "retx", "coll.")
	for _, arm := range c.Arms {
		s, ok := r.Arms[arm]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-5s %10.1f %9.3f %9.3f %8.3f %-26s %-26s %7d %6.0f %5d\n", arm, s.Bps/1e6, s.OverCapacity, s.HighUse, s.LowUse,
			fifths(s.HighFifths), fifths(s.LowFifths), s.PortDrops, s.Retransmits, s.Collisions)
	}
	printChecks(w, r.Checks)
	r.Precheck.print(w)
}

func (r *TDMAOscResult) measured() bool { return r != nil && len(r.Runs) > 0 }
