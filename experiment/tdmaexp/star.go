package tdmaexp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/experiment/report"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/tdma/fm"
	"github.com/linkfabric/linkfabric/tdma/host"
)

// TDMAStar configures a TDMA star testbed and its agents.
type TDMAStar struct {
	Hosts  int           `json:"hosts"`
	Rate   netns.BitRate `json:"rate_bps"`
	Burst  netns.ByteSize
	Limit  netns.ByteSize `json:"switch_buffer"`
	Slot   time.Duration  `json:"slot_ns"`
	Guard  time.Duration  `json:"guard_ns"`
	Mode   string         `json:"mode"`
	RT     int            `json:"rt"`      // the FM's SCHED_FIFO priority (0: none)
	HostRT int            `json:"host_rt"` // the agents' (0: none)
	// OpenRT is the agents' --open-rt: 0 keeps the agent's default,
	// negative turns it off.
	OpenRT int           `json:"open_rt,omitempty"`
	Sched  string        `json:"scheduler"`
	Margin time.Duration `json:"margin_ns"`
	// Spin is the agents' --spin before a window opens: 0 keeps the
	// agent's default, negative turns it off.
	Spin time.Duration `json:"spin_ns,omitempty"`
	// Aligned turns the staggered windows off (tdma fm --stagger=false,
	// which every host follows): every host's window of a slot opens at
	// once.
	Aligned bool `json:"aligned,omitempty"`
	MTU     int  `json:"mtu,omitempty"` // the hosts' MTU; 0: 1500
	// GateShare is the part of the guard a raw agent's frame may still
	// leave its host in after its slot's end (the exit gate, bpf.TDMAGate,
	// on the switch end of every host's veth); 0: DefaultGateShare.
	GateShare float64 `json:"gate_share,omitempty"`
	// PortBurst is the switch ports' TBF burst (0: Burst).
	PortBurst netns.ByteSize `json:"port_burst,omitempty"`
	// SoftirqRT is the SCHED_FIFO priority the kernel's softirq threads
	// run at during an arm (softirqRT; 0: left as they are).
	SoftirqRT int `json:"softirq_rt,omitempty"`
	// FMArgs are more tdma fm flags (tdma oscillate's --capacity-*).
	FMArgs []string `json:"fm_args,omitempty"`
}

// DefaultGateShare is the exit gate's default share of the guard: half for
// the host's side, half for the switch's.
const DefaultGateShare = 0.5

// attachGate loads the exit gate onto tb's hosts: where each host's frames
// leave its line and enter the switch.
func attachGate(tb *netns.Testbed, c TDMAStar) (*bpf.TDMAGate, error) {
	share := c.GateShare
	if share == 0 {
		share = DefaultGateShare
	}
	g, err := bpf.LoadTDMAGate(share)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= c.Hosts; i++ {
		err := netns.Do(tb.NS("sw"), func() error { return g.AttachExit(i-1, "p"+strconv.Itoa(i)) })
		if err == nil {
			err = netns.Do(tb.NS("h"+strconv.Itoa(i)), func() error { return g.AttachHost("eth0") })
		}
		if err != nil {
			g.Close()
			return nil, err
		}
	}
	return g, nil
}

// SwitchStats are the switch ports' queues sampled every millisecond.
type SwitchStats struct {
	Samples        int     `json:"samples"`
	Drops          uint64  `json:"drops"`
	PeakBacklogB   uint32  `json:"peak_backlog_bytes"`
	P99BacklogPkts float64 `json:"p99_backlog_frames"`
}

// sampleSwitch samples the switch ports' root qdiscs every millisecond
// until stop is closed.
func sampleSwitch(ns string, n int, stop <-chan struct{}) (func() SwitchStats, error) {
	devs := make([]string, n)
	for i := range devs {
		devs[i] = "p" + strconv.Itoa(i+1)
	}
	r, err := netns.NewQdiscReader(ns, devs)
	if err != nil {
		return nil, err
	}
	st := make([]netns.QdiscStat, n)
	if err := r.Read(st); err != nil {
		r.Close()
		return nil, err
	}
	base := make([]uint32, n)
	for i, s := range st {
		base[i] = s.Drops
	}
	var out SwitchStats
	var pk []float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.Close()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				r.Read(st)
				for i, s := range st {
					out.Drops += uint64(s.Drops - base[i])
				}
				if len(pk) > 0 {
					slices.Sort(pk)
					out.P99BacklogPkts = report.PercentileAbove(pk, 99)
				}
				out.Samples = len(pk)
				return
			case <-t.C:
			}
			if r.Read(st) != nil {
				continue
			}
			for _, s := range st {
				out.PeakBacklogB = max(out.PeakBacklogB, s.BacklogBytes)
				pk = append(pk, float64(s.BacklogPkts))
			}
		}
	}()
	return func() SwitchStats { <-done; return out }, nil
}

// StarDrops says where frames were dropped on the star outside the switch
// ports' queues: at the hosts' egress TBFs, by veth on transmit (the
// peer's per-CPU input backlog was full), from hosts and switch ports,
// and by the machine's input backlogs in all (softnet_stat; any
// namespace).
type StarDrops struct {
	HostTBF uint64 `json:"host_tbf_drops"`
	Veth    uint64 `json:"veth_drops"`
	VethRx  uint64 `json:"veth_rx_drops"`        // on receive at the hosts' ends
	PortRx  uint64 `json:"switch_port_rx_drops"` // on receive at the switch's ends
	Backlog uint64 `json:"backlog_drops_machine"`
}

// readStarDrops reads the star's drop counters (cumulative).
func readStarDrops(tb *netns.Testbed, hosts int) StarDrops {
	var d StarDrops
	st := make([]netns.QdiscStat, 1)
	ports := make([]string, hosts)
	for i := 1; i <= hosts; i++ {
		h := tb.NS("h" + strconv.Itoa(i))
		if r, err := netns.NewQdiscReader(h, []string{"eth0"}); err == nil {
			if r.Read(st) == nil {
				d.HostTBF += uint64(st[0].Drops)
			}
			r.Close()
		}
		if n, err := netns.LinkTxDrops(h, "eth0"); err == nil {
			d.Veth += n
		}
		if n, err := netns.LinkRxDrops(h, "eth0"); err == nil {
			d.VethRx += n
		}
		ports[i-1] = "p" + strconv.Itoa(i)
	}
	if n, err := netns.LinkTxDrops(tb.NS("sw"), ports...); err == nil {
		d.Veth += n
	}
	if n, err := netns.LinkRxDrops(tb.NS("sw"), ports...); err == nil {
		d.PortRx += n
	}
	d.Backlog, _ = netns.SoftnetDrops()
	return d
}

// Sub returns d − o.
func (d StarDrops) Sub(o StarDrops) StarDrops {
	return StarDrops{HostTBF: d.HostTBF - o.HostTBF, Veth: d.Veth - o.Veth, VethRx: d.VethRx - o.VethRx, PortRx: d.PortRx - o.PortRx, Backlog: d.Backlog - o.Backlog}
}

// upStar brings up the shaped star, the switch ports' TBFs with burst
// c.PortBurst.
func upStar(e *bed.Env, c TDMAStar) (*netns.Testbed, error) {
	t, err := netns.Star(c.Hosts, netns.StarOptions{Shape: &netns.Shape{Rate: c.Rate, Burst: c.Burst, Limit: c.Limit}})
	if err != nil {
		return nil, err
	}
	tb, err := netns.Up(t, netns.Options{Prefix: e.Prefix, MTU: c.MTU})
	if err != nil || c.PortBurst == 0 || c.PortBurst == c.Burst {
		return tb, err
	}
	for i := 1; i <= c.Hosts; i++ {
		if err := netns.SetTBF(tb.NS("sw"), "p"+strconv.Itoa(i), netns.Shape{Rate: c.Rate, Burst: c.PortBurst, Limit: c.Limit}); err != nil {
			return nil, errors.Join(err, tb.Down())
		}
	}
	return tb, nil
}

// agentProc is a `linkfabric tdma fm|host` process writing JSON to a file.
type agentProc struct {
	cmd  *exec.Cmd
	out  string
	log  *os.File
	done chan error
}

func startAgent(e *bed.Env, dir, name string, args ...string) (*agentProc, error) {
	out := filepath.Join(dir, name+".json")
	lf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(e.Self, append(args, "--json", out)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdout, cmd.Stderr = io.Discard, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &agentProc{cmd: cmd, out: out, log: lf, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); lf.Close() }()
	return p, nil
}

func (p *agentProc) stop() {
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
	}
}

func (p *agentProc) result(v any) error {
	b, err := os.ReadFile(p.out)
	if err != nil {
		lb, _ := os.ReadFile(p.log.Name())
		return fmt.Errorf("%s: no statistics (%w); its log:\n%s", p.out, err, bed.LastLines(lb, 10))
	}
	return json.Unmarshal(b, v)
}

// readyWait bounds how long startStar waits for an agent to come up.
const readyWait = 30 * time.Second

// startStar starts the n host agents, waits until every one has said it
// is ready (its sockets open, its peers' MACs resolved), and only then the
// FM: the FM's first round, which waits a short while for every host's
// first demand, then finds them all, and every host starts in it. Started
// first, the FM began its rounds with the hosts whose agents came up
// first, and on a busy machine the others started up to a second later:
// their flows finished that much later, and frames sent to a host whose
// agent was not up yet were lost. The processes started are returned
// also with an error, for the caller to stop.
func startStar(ctx context.Context, e *bed.Env, dir string, n int, fmArgs []string, hostArgs func(i int) []string) (*agentProc, []*agentProc, error) {
	var hp []*agentProc
	for i := 0; i < n; i++ {
		p, err := startAgent(e, dir, "h"+strconv.Itoa(i+1), hostArgs(i)...)
		if err != nil {
			return nil, hp, err
		}
		hp = append(hp, p)
	}
	deadline := time.Now().Add(readyWait)
	for _, p := range hp {
		if err := p.waitReady(ctx, deadline); err != nil {
			return nil, hp, err
		}
	}
	fmp, err := startAgent(e, dir, "fm", fmArgs...)
	return fmp, hp, err
}

// waitReady waits until the agent's log has its "ready" line; an agent
// that exits first, or the deadline, is an error.
func (p *agentProc) waitReady(ctx context.Context, deadline time.Time) error {
	for {
		b, _ := os.ReadFile(p.log.Name())
		if bytes.Contains(b, []byte(" ready\n")) {
			return nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			b, _ := os.ReadFile(p.log.Name())
			return fmt.Errorf("%s exited before it was ready (%v); its log:\n%s", p.log.Name(), err, bed.LastLines(b, 10))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not ready after %v; its log:\n%s", p.log.Name(), readyWait, bed.LastLines(b, 10))
		}
	}
}

// TDMARun is one run of the FM and host agents.
type TDMARun struct {
	FM    fm.Stats     `json:"fm"`
	Hosts []host.Stats `json:"hosts"`
	// Gate: the exit gate's counters.
	Gate *bpf.TDMAGateCounters `json:"gate,omitempty"`
}

// runTDMA starts the FM and the agents on tb, waits for the agents to exit
// (or timeout), stops the FM and collects their statistics. hostArgs
// gives each agent's extra flags.
func runTDMA(ctx context.Context, e *bed.Env, tb *netns.Testbed, c TDMAStar, dir string, timeout time.Duration, hostArgs func(i int) []string) (*TDMARun, error) {
	return runTDMAWith(ctx, e, tb, c, dir, timeout, hostArgs, nil)
}

// fmHook runs while the agents do, with the testbed and the FM's process
// (to signal it); its context ends when the agents have exited or timed
// out. It must leave the FM running (SIGCONT after a SIGSTOP) before it
// returns.
type fmHook func(ctx context.Context, tb *netns.Testbed, fm *os.Process)

// runTDMAWith is runTDMA; during, if set, runs once every agent has
// started, and the FM is stopped only after it has returned.
func runTDMAWith(ctx context.Context, e *bed.Env, tb *netns.Testbed, c TDMAStar, dir string, timeout time.Duration, hostArgs func(i int) []string, during fmHook) (*TDMARun, error) {
	gt, err := attachGate(tb, c)
	if err != nil {
		return nil, err
	}
	defer gt.Close()
	hosts := "10.0.0.1-" + strconv.Itoa(c.Hosts)
	rate := strconv.FormatUint(uint64(c.Rate), 10)
	common := []string{"--hosts", hosts, "--mode", c.Mode, "--rate", rate}
	fargs := append([]string{"tdma", "fm", "--netns", tb.NS("fm"), "--slot", c.Slot.String(), "--guard", c.Guard.String(),
		"--scheduler", c.Sched, "--rt", strconv.Itoa(c.RT), "--stagger=" + strconv.FormatBool(!c.Aligned)}, common...)
	fargs = append(fargs, c.FMArgs...)
	hargs := func(i int) []string {
		args := append([]string{"tdma", "host", "--netns", tb.NS("h" + strconv.Itoa(i+1)), "--index", strconv.Itoa(i),
			"--rt", strconv.Itoa(c.HostRT), "--margin", c.Margin.String()}, common...)
		if c.Spin != 0 {
			args = append(args, "--spin", max(c.Spin, 0).String())
		}
		if c.OpenRT != 0 {
			args = append(args, "--open-rt", strconv.Itoa(max(c.OpenRT, 0)))
		}
		return append(args, hostArgs(i)...)
	}
	fmp, hp, err := startStar(ctx, e, dir, c.Hosts, fargs, hargs)
	if fmp != nil {
		defer fmp.stop()
	}
	defer func() {
		for _, p := range hp {
			p.stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range hp {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case err := <-p.done:
				p.done <- err
			case <-tctx.Done():
				p.stop()
			}
		}()
	}
	hookDone := make(chan struct{})
	if during != nil {
		go func() { defer close(hookDone); during(tctx, tb, fmp.cmd.Process) }()
	} else {
		close(hookDone)
	}
	wg.Wait()
	cancel()
	<-hookDone
	fmp.stop()
	r := &TDMARun{Hosts: make([]host.Stats, c.Hosts)}
	gc, err := gt.Counters()
	if err != nil {
		return nil, err
	}
	r.Gate = &gc
	if err := fmp.result(&r.FM); err != nil {
		return nil, err
	}
	for i, p := range hp {
		if err := p.result(&r.Hosts[i]); err != nil {
			return nil, err
		}
	}
	if err := r.sameSchedules(); err != nil {
		return nil, err
	}
	return r, ctx.Err()
}

// sameSchedules checks that every host took only schedules that staggered
// the windows as the FM did (tdma fm --stagger), and decoded them all;
// and that every host kept to the slot budgets the FM's schedules carried
// (tdma fm --budget) and took none without them.
func (r *TDMARun) sameSchedules() error {
	for i, h := range r.Hosts {
		other, want := h.AlignedSchedules, "staggered"
		if !r.FM.Stagger {
			other, want = h.StaggeredSchedules, "aligned"
		}
		if other > 0 || h.BadSchedules > 0 {
			why := ""
			if h.BadScheduleErr != "" {
				why = ": " + h.BadScheduleErr
			}
			return fmt.Errorf("h%d: %d schedules not %s as the FM's, %d it could not decode (of %d)%s", i+1, other, want, h.BadSchedules, h.Schedules, why)
		}
		switch {
		case h.BudgetSchedules > 0 && !r.FM.Budget:
			return fmt.Errorf("h%d: took %d schedules with slot budgets from an FM without them (tdma fm --budget=false)", i+1, h.BudgetSchedules)
		case h.BudgetSchedules > 0 && !h.KeepsBudgets:
			return fmt.Errorf("h%d: took %d schedules with slot budgets and does not keep to them (not a raw sender): tdma fm --budget=false", i+1, h.BudgetSchedules)
		case r.FM.BudgetRounds > 0 && h.BudgetSchedules == 0 && h.Schedules > 0:
			return fmt.Errorf("h%d: the FM published %d rounds with slot budgets (tdma fm --budget), the host took none of them (of %d schedules)", i+1, r.FM.BudgetRounds, h.Schedules)
		}
	}
	return nil
}
