package fct

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// IperfConfig configures RunIperf.
type IperfConfig struct {
	Arm string
	// ServerNS runs `iperf -s` (receiver, h2); ClientNS runs `iperf -c` and
	// the capture (sender, h1). Names for `ip netns exec`.
	ServerNS, ClientNS string
	ServerIP           string // e.g. "10.0.0.2"
	Port               int    // default 5001
	Dev                string // capture interface in ClientNS, default "eth0"

	Sizes        []int64 // passed to iperf -n as plain byte counts
	FlowsPerSize int
	// CongestionControl is passed as iperf -Z (client and server); "" = default.
	CongestionControl string
	Nagle             bool          // default false: iperf -N (TCP_NODELAY)
	Timeout           time.Duration // per iperf client run, default 10s
	// PcapPath keeps the capture there; "" = a temporary file removed
	// after parsing.
	PcapPath string
	Snaplen  int // default 128
	// Iperf and Tcpdump are the binaries, default "iperf" (2.x) and "tcpdump".
	Iperf, Tcpdump string
	Progress       func(done, total int)
}

// IperfResult is the outcome of RunIperf.
type IperfResult struct {
	Flows []Flow `json:"flows"`
	// Conns are all TCP connections found in the capture.
	Conns    []PcapFlow `json:"conns"`
	PcapPath string     `json:"pcap_path,omitempty"`
	// CaptureDropped is tcpdump's "packets dropped by kernel" (-1 unknown);
	// if > 0 some flows may be misjudged.
	CaptureDropped int `json:"capture_dropped"`
}

// RunIperf measures FCT with iperf 2: `iperf -s` runs in ServerNS, and for
// each flow `iperf -c ServerIP -n SIZE` runs in ClientNS, one after the
// other, while `tcpdump -i Dev -s 128 -U --immediate-mode -w PCAP tcp port
// PORT` captures in
// ClientNS (the sender's interface). The capture is parsed with ParsePcap
// and each iperf run is matched to the connection whose SYN falls within
// that run's lifetime.
//
// FCT = (first server ACK covering the last payload byte) - (first SYN),
// both capture timestamps on the sender's interface (see PcapFlow). Note
// that iperf 2's -n counts iperf's own test header: for -n SIZE the client
// writes a ~60 B header (iperf 2.1) and then SIZE-60 B, i.e. SIZE bytes of
// TCP payload in total but in two application writes, so even a 143 B flow
// becomes two segments; the iperf process's own delay between connect()
// and its first write is included, and the server's reply is ignored.
// Failed flows: iperf exits non-zero or times out, no matching
// connection, data never fully ACKed, or payload != SIZE.
func RunIperf(ctx context.Context, cfg IperfConfig) (*IperfResult, error) {
	if cfg.Port == 0 {
		cfg.Port = 5001
	}
	if cfg.Dev == "" {
		cfg.Dev = "eth0"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Snaplen <= 0 {
		cfg.Snaplen = 128
	}
	if cfg.Iperf == "" {
		cfg.Iperf = "iperf"
	}
	if cfg.Tcpdump == "" {
		cfg.Tcpdump = "tcpdump"
	}
	if cfg.ServerIP == "" || len(cfg.Sizes) == 0 || cfg.FlowsPerSize <= 0 {
		return nil, errors.New("fct: iperf needs ServerIP, Sizes and FlowsPerSize")
	}
	for _, bin := range []string{cfg.Iperf, cfg.Tcpdump, "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("fct: %s not found: %w", bin, err)
		}
	}
	res := &IperfResult{CaptureDropped: -1}
	pcapPath := cfg.PcapPath
	if pcapPath == "" {
		dir, err := os.MkdirTemp("", "fct-iperf")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		pcapPath = filepath.Join(dir, "sender.pcap")
	} else {
		res.PcapPath = pcapPath
	}
	port := strconv.Itoa(cfg.Port)

	// Server.
	sargs := []string{cfg.Iperf, "-s", "-p", port}
	if cfg.CongestionControl != "" {
		sargs = append(sargs, "-Z", cfg.CongestionControl)
	}
	srv := nsCommand(context.Background(), cfg.ServerNS, sargs...)
	srvOut := &tailBuffer{}
	srv.Stdout, srv.Stderr = srvOut, srvOut
	if err := startGroup(srv); err != nil {
		return nil, fmt.Errorf("fct: start iperf server: %w", err)
	}
	defer stopGroup(srv, syscall.SIGKILL)
	if err := waitListening(ctx, cfg.ServerNS, cfg.Port, 5*time.Second); err != nil {
		return nil, fmt.Errorf("fct: iperf server not listening on port %d: %w (output: %s)", cfg.Port, err, srvOut)
	}

	// Capture on the sender's interface.
	dump := nsCommand(context.Background(), cfg.ClientNS, cfg.Tcpdump, "-i", cfg.Dev, "-w", pcapPath,
		"-s", strconv.Itoa(cfg.Snaplen), "-U", "--immediate-mode", "-n", "-B", "8192", "tcp", "port", port)
	dumpErr, err := dump.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := startGroup(dump); err != nil {
		return nil, fmt.Errorf("fct: start tcpdump: %w", err)
	}
	dumpStopped := false
	defer func() {
		if !dumpStopped {
			stopGroup(dump, syscall.SIGKILL)
		}
	}()
	dumpLines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(dumpErr)
		for sc.Scan() {
			dumpLines <- sc.Text()
		}
		close(dumpLines)
	}()
	var dumpLog []string
	ready := time.NewTimer(10 * time.Second)
	defer ready.Stop()
wait:
	for {
		select {
		case l, ok := <-dumpLines:
			if !ok {
				return nil, fmt.Errorf("fct: tcpdump exited: %s", strings.Join(dumpLog, "; "))
			}
			dumpLog = append(dumpLog, l)
			if strings.Contains(l, "listening on") {
				break wait
			}
		case <-ready.C:
			return nil, fmt.Errorf("fct: tcpdump not ready after 10s: %s", strings.Join(dumpLog, "; "))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	// Flows, strictly one after the other.
	type run struct {
		size       int64
		begin, end time.Time
		err        error
	}
	var runs []run
	total := cfg.FlowsPerSize * len(cfg.Sizes)
	var ctxErr error
outer:
	for _, size := range cfg.Sizes {
		for i := 0; i < cfg.FlowsPerSize; i++ {
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
				break outer
			}
			args := []string{cfg.Iperf, "-c", cfg.ServerIP, "-p", port, "-n", strconv.FormatInt(size, 10)}
			if cfg.CongestionControl != "" {
				args = append(args, "-Z", cfg.CongestionControl)
			}
			if !cfg.Nagle {
				args = append(args, "-N")
			}
			fctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			cmd := nsCommand(fctx, cfg.ClientNS, args...)
			cmd.WaitDelay = time.Second
			out := &tailBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			r := run{size: size, begin: time.Now()}
			err := cmd.Run()
			r.end = time.Now()
			if err == nil && strings.Contains(out.String(), "failed") {
				err = errors.New("iperf reported failure")
			}
			if err != nil {
				if fctx.Err() == context.DeadlineExceeded {
					err = fmt.Errorf("iperf client timed out after %v", cfg.Timeout)
				}
				r.err = fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
			}
			cancel()
			if ctx.Err() != nil {
				ctxErr = ctx.Err()
				break outer
			}
			runs = append(runs, r)
			if cfg.Progress != nil {
				cfg.Progress(len(runs), total)
			}
		}
	}

	// Let the last ACKs land, then stop the capture cleanly (SIGINT makes
	// tcpdump flush and print its statistics). --immediate-mode matters:
	// without it libpcap's TPACKET_V3 ring hands packets over in blocks and
	// the packets of a block not yet retired are lost at exit.
	time.Sleep(100 * time.Millisecond)
	stopGroup(dump, syscall.SIGINT)
	dumpStopped = true
	for l := range dumpLines {
		dumpLog = append(dumpLog, l)
	}
	dropRE := regexp.MustCompile(`(\d+) packets? dropped by kernel`)
	for _, l := range dumpLog {
		if m := dropRE.FindStringSubmatch(l); m != nil {
			res.CaptureDropped, _ = strconv.Atoi(m[1])
		}
	}

	conns, err := ParsePcapFile(pcapPath)
	if err != nil {
		return res, fmt.Errorf("fct: parse capture: %w", err)
	}
	res.Conns = conns
	used := make([]bool, len(conns))
	const slack = 2 * time.Millisecond
	for i, r := range runs {
		f := Flow{Arm: cfg.Arm, Tool: "iperf", ID: i, Size: r.size, Start: r.begin}
		ci := -1
		for j, c := range conns {
			if !used[j] && !c.SYN.Before(r.begin.Add(-slack)) && !c.SYN.After(r.end.Add(slack)) {
				ci = j
				break
			}
		}
		switch {
		case ci >= 0:
			used[ci] = true
			c := conns[ci]
			f.Start = c.SYN
			f.Retrans = uint32(c.Retrans + c.SynRetrans + c.FinRetrans)
			f.Retransmitted = f.Retrans > 0
			switch {
			case r.err != nil:
				f.Failed, f.Err = true, r.err.Error()
			case !c.Complete:
				f.Failed, f.Err = true, "data not fully acknowledged in capture"
			case c.Bytes != r.size:
				f.Failed, f.Err = true, fmt.Sprintf("captured %d payload bytes, want %d", c.Bytes, r.size)
			default:
				f.FCT = c.FCT
			}
		case r.err != nil:
			f.Failed, f.Err = true, r.err.Error()
		default:
			f.Failed, f.Err = true, "no connection found in capture"
		}
		res.Flows = append(res.Flows, f)
	}
	if ctxErr != nil {
		return res, ctxErr
	}
	return res, nil
}

// startGroup starts cmd in its own process group so that stopGroup reaches
// it and anything it spawns.
func startGroup(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	return cmd.Start()
}

// stopGroup signals cmd's process group and reaps it, escalating to SIGKILL
// after 3 s.
func stopGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	pid := cmd.Process.Pid
	syscall.Kill(-pid, sig)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}

// waitListening polls /proc/thread-self/net/tcp inside ns for a listening
// socket on port.
func waitListening(ctx context.Context, ns string, port int, timeout time.Duration) error {
	want := fmt.Sprintf(":%04X ", port)
	deadline := time.Now().Add(timeout)
	for {
		found := false
		err := inNS(ns, func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				b, err := os.ReadFile(f)
				if err != nil {
					continue
				}
				for _, l := range strings.Split(string(b), "\n") {
					fs := strings.Fields(l)
					if len(fs) > 3 && strings.HasSuffix(fs[1]+" ", want) && fs[3] == "0A" {
						found = true
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if found {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("timeout")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tailBuffer)(nil)
