// Package bed is the testbed every experiment shares: it starts the dataplane
// processes (`linkfabric run`), brings testbeds up, runs traffic tools
// (iperf3, sockperf, the frame generator, paced UDP flows) in the hosts'
// namespaces, and reads the dataplanes' statistics.
package bed

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// ReadyMessage is what `linkfabric run` logs once it forwards.
const ReadyMessage = "dataplane ready"

// Env is what an experiment runs with.
type Env struct {
	Self   string // the linkfabric executable (started as the dataplane)
	Prefix string // testbed prefix
	Log    *slog.Logger
	// Progress receives human progress lines (stderr by default).
	Progress io.Writer
	// LinkQueues, if > 0, is the pair testbed's link queue count instead
	// of the preset's (netns.Options.LinkQueues).
	LinkQueues int
}

// Defaults fills what is unset: the running executable, prefix "lfx", the
// default logger and stderr for progress.
func (e *Env) Defaults() error {
	if e.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		e.Self = self
	}
	e.Prefix = cmp.Or(e.Prefix, "lfx")
	if e.Log == nil {
		e.Log = slog.Default()
	}
	if e.Progress == nil {
		e.Progress = os.Stderr
	}
	return nil
}

// Printf writes a progress line.
func (e *Env) Printf(format string, args ...any) {
	fmt.Fprintf(e.Progress, format+"\n", args...)
}

// NS is the full name of testbed namespace short ("h1").
func (e *Env) NS(short string) string { return e.Prefix + short }

// ReachH2 waits up to d for h1 to ping h2 (H2Addr) across the testbed.
func (e *Env) ReachH2(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return netns.WaitPing(ctx, e.NS("h1"), H2Addr)
}

// Dataplanes are `linkfabric run` processes, one per switch.
type Dataplanes struct {
	env   *Env
	procs []*proc
}

type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	tail []string // last lines of its log, for error messages
	err  error    // how it exited (valid once done is closed)
}

func (p *proc) addLine(l string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, l)
	if len(p.tail) > 20 {
		p.tail = p.tail[1:]
	}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// StartDataplanes starts `linkfabric run` on host0/link0 of sw1 and sw2 with
// the given extra arguments and waits until both forward.
func (e *Env) StartDataplanes(ctx context.Context, mode string, extra ...string) (*Dataplanes, error) {
	var runs []NodeRun
	for _, sw := range []string{"sw1", "sw2"} {
		runs = append(runs, NodeRun{Name: sw, Args: append([]string{"run", "--netns", e.NS(sw), "--host-port", "host0", "--link-port", "link0", "--mode", mode}, extra...)})
	}
	return e.StartNodes(ctx, runs)
}

// NodeRun is one dataplane process: the switch it runs on (a short
// namespace name, for messages and Kill/Restart) and the arguments of the
// linkfabric executable ("run", ...).
type NodeRun struct {
	Name string
	Args []string
}

// StartNodes starts one dataplane process per run, all at once (each
// spends its start loading and verifying a program per port: on two
// cores, the processes overlap), and waits until every one forwards; if
// one fails, the others are stopped. A process is given readyWait to be
// ready for each one starting beside it.
func (e *Env) StartNodes(ctx context.Context, runs []NodeRun) (*Dataplanes, error) {
	if err := e.Defaults(); err != nil {
		return nil, err
	}
	procs, errs := make([]*proc, len(runs)), make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() { procs[i], errs[i] = e.startProc(r.Name, r.Args, time.Duration(len(runs))*readyWait) })
	}
	wg.Wait()
	d := &Dataplanes{env: e}
	for _, p := range procs {
		if p != nil {
			d.procs = append(d.procs, p)
		}
	}
	if err := errors.Join(errs...); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// readyWait is how long one dataplane process may take to be ready.
const readyWait = 15 * time.Second

func (e *Env) startProc(name string, args []string, wait time.Duration) (*proc, error) {
	cmd := exec.Command(e.Self, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", e.Self, strings.Join(args, " "), err)
	}
	p := &proc{name: name, args: args, cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			l := sc.Text()
			p.addLine(l)
			e.Log.Debug("dataplane", "sw", name, "line", l)
			if strings.Contains(l, ReadyMessage) {
				once.Do(func() { close(ready) })
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	select {
	case <-ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("dataplane on %s exited before it was ready:\n%s", name, p.log())
	case <-time.After(wait):
		p.stop()
		return nil, fmt.Errorf("dataplane on %s not ready after %v:\n%s", name, wait, p.log())
	}
}

func (p *proc) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("dataplane on %s did not stop on SIGINT; killed", p.name)
	}
	return nil
}

// Stop stops every dataplane (SIGINT, then SIGKILL after 5 s).
func (d *Dataplanes) Stop() error {
	var errs []error
	for _, p := range d.procs {
		errs = append(errs, p.stop())
	}
	d.procs = nil
	return errors.Join(errs...)
}

func (d *Dataplanes) find(sw string) (int, error) {
	for i, p := range d.procs {
		if p.name == sw {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no dataplane on %s", sw)
}

// Kill ends the dataplane on sw with SIGKILL, as a crash would: none of its
// cleanup runs (its XDP programs may stay attached).
func (d *Dataplanes) Kill(sw string) error {
	i, err := d.find(sw)
	if err != nil {
		return err
	}
	p := d.procs[i]
	p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("dataplane on %s did not exit 5 s after SIGKILL", sw)
	}
}

// Signal sends sig to the dataplane on sw (SIGSTOP and SIGCONT model a
// process that is not scheduled: a stalled switch).
func (d *Dataplanes) Signal(sw string, sig os.Signal) error {
	i, err := d.find(sw)
	if err != nil {
		return err
	}
	if err := d.procs[i].cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("dataplane on %s: %v: %w", sw, sig, err)
	}
	return nil
}

// Restart starts the dataplane on sw again with the same arguments (after
// Kill, or after it exited) and waits until it is ready.
func (d *Dataplanes) Restart(sw string) error {
	i, err := d.find(sw)
	if err != nil {
		return err
	}
	old := d.procs[i]
	if err := old.stop(); err != nil {
		return err
	}
	p, err := d.env.startProc(sw, old.args, readyWait)
	if err != nil {
		return err
	}
	d.procs[i] = p
	return nil
}

// Alive reports an error if a dataplane exited.
func (d *Dataplanes) Alive() error {
	for _, p := range d.procs {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}

// Exited reports an error, with how the dataplane on sw ended and the end
// of its log, if it is no longer running.
func (d *Dataplanes) Exited(sw string) error {
	i, err := d.find(sw)
	if err != nil {
		return err
	}
	return d.procs[i].exited()
}

func (p *proc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("dataplane on %s exited (%v):\n%s", p.name, p.err, p.log())
	default:
		return nil
	}
}

// Up brings up the pair testbed with forwarding fw, removing a stale testbed
// of the same prefix first.
func (e *Env) Up(fw string, mtu int) (*netns.Testbed, error) {
	return UpPair(e, netns.Options{Forwarding: fw, MTU: mtu})
}

// UpPair brings up the pair testbed with o (its Prefix is e's), removing a
// stale testbed of the same prefix first.
func UpPair(e *Env, o netns.Options) (*netns.Testbed, error) {
	if err := netns.Down(e.Prefix); err != nil {
		return nil, err
	}
	topo, err := netns.Preset("pair")
	if err != nil {
		return nil, err
	}
	o.Prefix = e.Prefix
	o.LinkQueues = cmp.Or(o.LinkQueues, e.LinkQueues)
	return netns.Up(topo, o)
}

// CPUTime returns the CPU time each dataplane has used so far (user +
// system of all its threads, from /proc/PID/stat), by switch.
func (d *Dataplanes) CPUTime() (map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	for _, p := range d.procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
		if err != nil {
			return nil, fmt.Errorf("CPU time of the dataplane on %s: %w", p.name, err)
		}
		t, err := ParseProcStatCPU(string(b))
		if err != nil {
			return nil, fmt.Errorf("CPU time of the dataplane on %s: %w", p.name, err)
		}
		m[p.name] = t
	}
	return m, nil
}

// SchedTotals is what the scheduler counted of threads
// (/proc/PID/task/TID/schedstat): time on a CPU, time runnable but waiting
// for one, and how many times they were put on a CPU (a worker that
// sleeps and wakes runs once a wakeup, and once more after each
// preemption).
type SchedTotals struct {
	Run, Wait time.Duration
	Runs      uint64
}

// Sub returns a − b, each field at least 0 (a thread that exited between
// the two readings leaves the sum).
func (a SchedTotals) Sub(b SchedTotals) SchedTotals {
	return SchedTotals{Run: max(a.Run-b.Run, 0), Wait: max(a.Wait-b.Wait, 0), Runs: a.Runs - min(b.Runs, a.Runs)}
}

// Add returns a + b.
func (a SchedTotals) Add(b SchedTotals) SchedTotals {
	return SchedTotals{Run: a.Run + b.Run, Wait: a.Wait + b.Wait, Runs: a.Runs + b.Runs}
}

// Sched sums the scheduler's counts over every thread of every dataplane.
func (d *Dataplanes) Sched() (SchedTotals, error) {
	var t SchedTotals
	for _, p := range d.procs {
		dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return t, fmt.Errorf("threads of the dataplane on %s: %w", p.name, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(dir + "/" + task.Name() + "/schedstat")
			if err != nil {
				continue // the thread exited
			}
			s, err := ParseSchedstat(string(b))
			if err != nil {
				return t, fmt.Errorf("the dataplane on %s: %w", p.name, err)
			}
			t = t.Add(s)
		}
	}
	return t, nil
}

// ParseSchedstat reads a schedstat line: ns on a CPU, ns waiting for one,
// times run.
func ParseSchedstat(line string) (SchedTotals, error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return SchedTotals{}, fmt.Errorf("malformed schedstat: %.40q", line)
	}
	var v [3]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return SchedTotals{}, fmt.Errorf("malformed schedstat: %q", f[i])
		}
		v[i] = n
	}
	return SchedTotals{Run: time.Duration(v[0]), Wait: time.Duration(v[1]), Runs: v[2]}, nil
}

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ, 100 on Linux).
const userHZ = 100

// ParseProcStatCPU returns utime + stime of a /proc/PID/stat line.
func ParseProcStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/PID/stat: %.40q", stat)
	}
	f := strings.Fields(stat[i+1:]) // from field 3 (state) on
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed /proc/PID/stat: %d fields after the name", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] { // fields 14 and 15: utime, stime
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/PID/stat: %q", s)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// Prepare readies e (Defaults) and an experiment's configuration (its
// Normalize) before a run.
func Prepare(e *Env, cfg interface{ Normalize() error }) error {
	if err := e.Defaults(); err != nil {
		return err
	}
	return cfg.Normalize()
}

// PrepareCC is Prepare for an experiment that runs TCP, then resolves the
// congestion control *cc names once Normalize has filled it in.
func PrepareCC(e *Env, cfg interface{ Normalize() error }, cc *string) (string, error) {
	if err := Prepare(e, cfg); err != nil {
		return "", err
	}
	return ResolveCC(*cc)
}
