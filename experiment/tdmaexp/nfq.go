package tdmaexp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/clock"
)

// TDMANFQConfig sizes `linkfabric tdma nfqueue`: unmodified kernel TCP
// (iperf3), one flow from h1 to every other host, each held in h1's
// NFQUEUE gate and released only in h1's windows to its destination: with
// the rotor, a duty of 1/(N−1) per flow.
type TDMANFQConfig struct {
	Star     TDMAStar      `json:"star"`
	Duration time.Duration `json:"duration_ns"`
	Runs     int           `json:"runs"`
	// TLP keeps TCP's tail-loss probe (net.ipv4.tcp_early_retrans) on h1.
	// Off by default: a gate that holds segments for several slots
	// outlasts its 2·srtt timer, and its probes count as retransmissions
	// although nothing was lost.
	TLP   bool   `json:"tlp"`
	Force bool   `json:"force"`
	Dir   string `json:"-"`
}

// NFQRun is one run.
type NFQRun struct {
	Run          int     `json:"run"`
	Bps          float64 `json:"goodput_bps"`     // all flows, bit/s
	Retransmits  int     `json:"tcp_retransmits"` // iperf3's count on h1, all flows
	RetransSegs  uint64  `json:"h1_retrans_segs"` // h1's Tcp RetransSegs
	QueueDropped uint64  `json:"nfq_queue_dropped"`
	UserDropped  uint64  `json:"nfq_user_dropped"`
	Released     uint64  `json:"nfq_released"`
	HeldMax      uint64  `json:"nfq_held_max"`
	Windows      uint64  `json:"h1_windows"`
	DutyPct      float64 `json:"duty_pct"` // h1's windows × (slot − guard) ÷ flows ÷ the flows' duration
	ArmMeasures
	TDMACounters
}

// TDMANFQResult is the experiment's outcome.
type TDMANFQResult struct {
	Config  TDMANFQConfig `json:"config"`
	Runs    []NFQRun      `json:"runs"`
	Summary struct {
		Bps          float64 `json:"goodput_bps_median"`
		Retransmits  float64 `json:"tcp_retransmits_median"`
		QueueDropped uint64  `json:"nfq_queue_dropped_max"`
		UserDropped  uint64  `json:"nfq_user_dropped_max"`
		DutyPct      float64 `json:"duty_pct_median"`
		Overhead     float64 `json:"control_overhead_pct_median"`
		Met          bool    `json:"met"` // 0 retransmissions and 0 queue drops in every run
	} `json:"summary"`
	Precheck
}

// TDMANFQ runs the gated TCP flow Runs times.
func TDMANFQ(ctx context.Context, e *bed.Env, cfg TDMANFQConfig) (*TDMANFQResult, error) {
	pre, err := precheck(e, cfg.Force)
	if err != nil {
		return nil, err
	}
	res := &TDMANFQResult{Config: cfg, Precheck: pre}
	var bps, retx, duty, ovh []float64
	res.Summary.Met = true
	for run := 1; run <= cfg.Runs; run++ {
		e.Printf("tdma nfqueue: run %d/%d, iperf3 TCP from h1 to each of h2..h%d through the gate for %v (load average %.1f)", run, cfg.Runs, cfg.Star.Hosts, cfg.Duration, bed.LoadAvg())
		r, err := nfqOnce(ctx, e, cfg, run)
		if err != nil {
			return res, fmt.Errorf("run %d: %w", run, err)
		}
		e.Printf("  %.1f Mbit/s over all flows, duty %.1f %% per flow, retransmissions %d (RetransSegs %d), queue dropped %d, user dropped %d, released %d, held at most %d",
			r.Bps/1e6, r.DutyPct, r.Retransmits, r.RetransSegs, r.QueueDropped, r.UserDropped, r.Released, r.HeldMax)
		res.Runs = append(res.Runs, r)
		bps, retx = append(bps, r.Bps), append(retx, float64(r.Retransmits))
		duty, ovh = append(duty, r.DutyPct), append(ovh, r.CtlOverheadPct)
		res.Summary.QueueDropped = max(res.Summary.QueueDropped, r.QueueDropped)
		res.Summary.UserDropped = max(res.Summary.UserDropped, r.UserDropped)
		res.Summary.Met = res.Summary.Met && r.met()
	}
	res.Summary.Bps, res.Summary.Retransmits = report.Median(bps), report.Median(retx)
	res.Summary.DutyPct, res.Summary.Overhead = report.Median(duty), report.Median(ovh)
	return res, nil
}

// met: the run had no TCP retransmission (by iperf3 or by h1's counter)
// and the gates dropped nothing.
func (r NFQRun) met() bool {
	return r.Retransmits == 0 && r.RetransSegs == 0 && r.QueueDropped == 0 && r.UserDropped == 0
}

func nfqOnce(ctx context.Context, e *bed.Env, cfg TDMANFQConfig, run int) (NFQRun, error) {
	c := cfg.Star
	out := NFQRun{Run: run}
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("run%d", run))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	err := onStar(e, c, &out.ArmMeasures, func(tb *netns.Testbed) error {
		h1 := tb.NS("h1")
		if !cfg.TLP {
			if err := netns.Sysctl(h1, "net.ipv4.tcp_early_retrans", "0"); err != nil {
				return err
			}
		}
		var pairs [][4]string
		for j := 2; j <= c.Hosts; j++ {
			pairs = append(pairs, [4]string{h1, tb.NS("h" + strconv.Itoa(j)), netns.StarAddr(j), strconv.Itoa(5300 + j)})
		}
		r, f, err := gatedIperf(ctx, e, tb, c, dir, pairs, cfg.Duration)
		if err != nil {
			return err
		}
		out.Bps, out.Retransmits, out.RetransSegs = f.bps, f.retx, f.retxSegs
		out.TDMACounters = r.counters(c)
		out.QueueDropped, out.UserDropped = r.nfqDrops()
		h := r.Hosts[0]
		out.Released, out.HeldMax = h.NFQReleased, uint64(h.NFQHeldMax)
		for _, w := range h.ClassWindows {
			out.Windows += w
		}
		out.DutyPct = 100 * float64(out.Windows) * (c.Slot - c.Guard).Seconds() / float64(c.Hosts-1) / cfg.Duration.Seconds()
		return nil
	})
	return out, err
}

// iperfFlows is what iperf3's flows carried (bit/s and iperf3's
// retransmissions, summed), the TCP segments their sender retransmitted
// meanwhile (its Tcp RetransSegs) and when they ran (clock ns).
type iperfFlows struct {
	bps      float64
	retx     int
	retxSegs uint64
	from, to int64
	err      error
}

// runIperf runs iperf3 over pairs (bed.RunIperfPairs), all from one
// client namespace, for d.
func runIperf(ctx context.Context, pairs [][4]string, d time.Duration) iperfFlows {
	var f iperfFlows
	src := pairs[0][0]
	r0, _ := netns.SNMP(src, "Tcp", "RetransSegs")
	f.from = clock.Now()
	rs, err := bed.RunIperfPairs(ctx, pairs, d, nil, nil)
	f.to = clock.Now()
	r1, _ := netns.SNMP(src, "Tcp", "RetransSegs")
	f.retxSegs, f.err = r1-r0, err
	for _, r := range rs {
		f.bps += r.Bps
		f.retx += r.Retransmits
	}
	return f
}

// gatedIperf runs the star's agents as NFQUEUE gates (with more agent
// flags, gate) and iperf3 over pairs for d through them. The agents run
// for the flows plus a second for the FM's first rounds and a second of
// tail; iperf3 starts a second after them. Its error is the agents' or
// else the flows'.
func gatedIperf(ctx context.Context, e *bed.Env, tb *netns.Testbed, c TDMAStar, dir string, pairs [][4]string, d time.Duration, gate ...string) (*TDMARun, iperfFlows, error) {
	agentsFor := d + 2*time.Second
	fch := make(chan iperfFlows, 1)
	go func() {
		select {
		case <-time.After(time.Second):
			fch <- runIperf(ctx, pairs, d)
		case <-ctx.Done():
			fch <- iperfFlows{err: ctx.Err()}
		}
	}()
	// An nfqueue gate releases what the kernel queued into its windows and
	// keeps to no slot budget: the FM sets none.
	c.FMArgs = append(append([]string(nil), c.FMArgs...), "--budget=false")
	r, err := runTDMA(ctx, e, tb, c, dir, agentsFor+10*time.Second, func(int) []string {
		return append([]string{"--gate", "nfqueue", "--workload", "none", "--duration", agentsFor.String()}, gate...)
	})
	f := <-fch
	if err == nil {
		err = f.err
	}
	return r, f, err
}

// nfqDrops sums the hosts' NFQUEUE drops: the queue was full (queue),
// the netlink socket overflowed (user).
func (r *TDMARun) nfqDrops() (queue, user uint64) {
	for _, h := range r.Hosts {
		queue += h.NFQQueueDropped
		user += h.NFQUserDropped
	}
	return queue, user
}

// WriteTDMANFQ writes nfqueue.json and runs.csv into dir.
func WriteTDMANFQ(dir string, r *TDMANFQResult) ([]string, error) {
	jp := filepath.Join(dir, "nfqueue.json")
	if err := report.WriteJSON(jp, r); err != nil {
		return nil, err
	}
	var rows [][]string
	for _, x := range r.Runs {
		rows = append(rows, []string{strconv.Itoa(x.Run), fmt.Sprintf("%.0f", x.Bps), strconv.Itoa(x.Retransmits), strconv.FormatUint(x.RetransSegs, 10),
			strconv.FormatUint(x.QueueDropped, 10), strconv.FormatUint(x.UserDropped, 10), fmt.Sprintf("%.2f", x.DutyPct)})
	}
	cp := filepath.Join(dir, "runs.csv")
	if err := report.WriteCSV(cp, []string{"run", "goodput_bps", "tcp_retransmits", "h1_retrans_segs", "nfq_queue_dropped", "nfq_user_dropped", "duty_pct"}, rows); err != nil {
		return nil, err
	}
	return []string{jp, cp}, nil
}

// Text renders the summary.
func (r *TDMANFQResult) Text() string { return report.Sprint(r.write) }

func (r *TDMANFQResult) write(w io.Writer) {
	s := r.Summary
	fmt.Fprintf(w, "\nmedians of %d runs: goodput %.1f Mbit/s over all flows, each flow's gate open %.1f %% of the time (port rate %v), TCP retransmissions %.0f, NFQUEUE drops %d (queue) and %d (user) at most, control overhead %.3f %%\n",
		len(r.Runs), s.Bps/1e6, s.DutyPct, r.Config.Star.Rate, s.Retransmits, s.QueueDropped, s.UserDropped, s.Overhead)
	verdict := "met"
	if !s.Met {
		verdict = "missed"
	}
	fmt.Fprintf(w, "check (every run: 0 TCP retransmissions, 0 queue and user drops): %s\n", verdict)
	r.Precheck.print(w)
}

func (r *TDMANFQResult) measured() bool { return r != nil && len(r.Runs) > 0 }
