package dataplane

// One worker per queue (workers.go): unit checks of the configuration and
// of each worker's view of the ports, then a pair testbed whose every veth
// has two queues, two workers per switch, and UDP flows spread over both
// queues (h1's kernel hashes each flow to a TX queue; on veth a frame sent
// on queue i arrives on the peer's queue i, so each flow stays on one
// lane end to end).

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/bpf"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/linkfabric/linkfabric/xdp"
	"golang.org/x/sys/unix"
)

// TestWorkersConfig: --workers defaults to 1, takes 1 to 16, and with more
// than one refuses the modes, the fast path and the features that need one
// worker, each error naming the flags.
func TestWorkersConfig(t *testing.T) {
	c := Config{Mode: modeLG}
	if err := c.checkWorkers(); err != nil || c.Workers != 1 {
		t.Errorf("default: workers %d, %v; want 1", c.Workers, err)
	}
	for _, n := range []int{2, 16} {
		for _, m := range []Mode{ModeForward, modeLG, modeLGNB, modeMonitor} {
			c := Config{Mode: m, Workers: n, FastPath: FastPathAuto}
			if err := c.checkWorkers(); err != nil {
				t.Errorf("--workers %d mode %s: %v", n, m, err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"negative", Config{Mode: ModeForward, Workers: -1}, []string{"--workers -1", "1 to 16"}},
		{"too many", Config{Mode: ModeForward, Workers: 17}, []string{"--workers 17"}},
		{"cells", Config{Mode: modeCells, Workers: 2}, []string{"--workers 2", "mode cells"}},
		{"fec", Config{Mode: modeFEC, Workers: 2}, []string{"--workers 2", "mode fec"}},
		{"fast path", Config{Mode: modeLG, Workers: 2, FastPath: FastPathXDP}, []string{"--workers 2", "--fastpath xdp", "single-worker"}},
		{"pfc", Config{Mode: ModeForward, Workers: 2, PFC: PFCConfig{Enabled: true}}, []string{"--workers 2", "--pfc"}},
		{"rate", Config{Mode: ModeForward, Workers: 2, Shape: map[string]PortShape{"link0": {Rate: 1e9}}}, []string{"--workers 2", "--port-rate"}},
	} {
		err := tc.cfg.checkWorkers()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", tc.name, err, w)
			}
		}
	}
	// A port with too few queues: the error names the interface, what it
	// has and the fixes.
	c = Config{Workers: 2, Netns: "lfsw1"}
	p := &Port{Name: "link0", Role: RoleLink, queues: 2, txQueues: 1}
	err := c.checkPortQueues(p)
	if err == nil {
		t.Fatal("a port with one TX queue was accepted for 2 workers")
	}
	for _, w := range []string{"link0", "namespace lfsw1", "2 RX and 1 TX", "ethtool -L link0 combined 2", "queues: 2"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if err := c.checkPortQueues(&Port{Name: "host0", queues: 4, txQueues: 2}); err != nil {
		t.Errorf("4 RX and 2 TX queues for 2 workers: %v", err)
	}
}

// TestWorkerPorts: worker i's view of a port holds the sockets of queues
// i, i+N, ... (queue i first, the one it transmits on), one lane and its
// own link state; with one worker the view is the ports themselves. The
// UMEM of each worker is sized for the most sockets any worker has.
func TestWorkerPorts(t *testing.T) {
	socks := func(n int) []*xdp.Socket {
		s := make([]*xdp.Socket, n)
		for i := range s {
			s[i] = new(xdp.Socket)
		}
		return s
	}
	host := &Port{Name: "host0", socks: socks(3), queues: 3, txQueues: 3, lanes: 3, downSince: 7}
	link := &Port{Name: "link0", socks: socks(2), queues: 2, txQueues: 2, lanes: 2}
	d := &Dataplane{all: []*Port{host, link}, cfg: Config{Workers: 2}}
	if got := [2]int{d.workerSockets(0), d.workerSockets(1)}; got != [2]int{3, 2} {
		t.Errorf("sockets per worker %v; want [3 2] (host0 queues 0,2 and link0 queue 0; host0 queue 1 and link0 queue 1)", got)
	}
	for i, want := range [][2][]int{{{0, 2}, {0}}, {{1}, {1}}} {
		ps := d.workerPorts(i)
		for j, p := range ps {
			orig := d.all[j]
			if p == orig {
				t.Fatalf("worker %d: %s is the dataplane's port, not a copy", i, p.Name)
			}
			if len(p.socks) != len(want[j]) || p.queues != len(want[j]) || p.lanes != 1 || p.downSince != 0 {
				t.Errorf("worker %d %s: %d sockets, queues %d, lanes %d, down since %d; want queues %v, 1 lane, up", i, p.Name, len(p.socks), p.queues, p.lanes, p.downSince, want[j])
				continue
			}
			for k, q := range want[j] {
				if p.socks[k] != orig.socks[q] {
					t.Errorf("worker %d %s: socket %d is not queue %d's", i, p.Name, k, q)
				}
			}
		}
	}
	d.cfg.Workers = 1
	if ps := d.workerPorts(0); ps[0] != host || ps[1] != link {
		t.Error("one worker: the view is not the dataplane's own ports")
	}
}

// UpWorkersBed brings up the pair testbed with two queues on every veth
// (prefix lfq6) and starts mode with two workers on both switches; imp (if
// not nil) impairs sw1→sw2 at sw2's link port.
func UpWorkersBed(t *testing.T, mode Mode, imp *bpf.ImpairConfig, mechs ...func(*Config)) (*netns.Testbed, *Dataplane, *Dataplane) {
	t.Helper()
	tb, sw1, sw2, _ := UpWorkersSwitches(t, mode, imp, mechs...)
	return tb, sw1.D, sw2.D
}

// UpWorkersSwitches is upWorkersBed returning the running switches and the
// configuration they run (to restart one); mechs set the mode's mechanism
// configuration.
func UpWorkersSwitches(t *testing.T, mode Mode, imp *bpf.ImpairConfig, mechs ...func(*Config)) (*netns.Testbed, *RunningSwitch, *RunningSwitch, Config) {
	t.Helper()
	netns.RequireRoot(t)
	tb := netns.TestUp(t, "lfq6", "pair", netns.Options{Forwarding: netns.ForwardingNone, Queues: 2})
	cfg := Config{Mode: mode, Workers: workersUnderTest, FastPath: FastPathAuto}
	for _, m := range mechs {
		m(&cfg)
	}
	rs1, rs2 := StartBoth(t, tb.NS("sw1"), cfg, tb.NS("sw2"), cfg)
	sw1, sw2 := rs1.D, rs2.D
	if imp != nil {
		if err := sw2.Link().Program().SetImpair(*imp); err != nil {
			t.Fatalf("impairment on sw2 link0: %v", err)
		}
	}
	for i, d := range []*Dataplane{sw1, sw2} {
		if d.Workers() != workersUnderTest || len(d.umems) != workersUnderTest || (len(d.umems) == 2 && d.umems[0] == d.umems[1]) {
			t.Fatalf("sw%d: %d workers, %d UMEMs; want %d distinct", i+1, d.Workers(), len(d.umems), workersUnderTest)
		}
		for _, f := range d.FastPath() {
			if f.Path != FastPathAFXDP {
				t.Errorf("sw%d: fast path %s→%s on %s with 2 workers; want afxdp", i+1, f.From, f.To, f.Path)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, tb.NS("h1"), "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through 2 workers: %v", err)
	}
	return tb, rs1, rs2, cfg
}

// FlowRun is what numbered UDP flows h1→h2 delivered.
type FlowRun struct {
	flows, perFlow int
	Got            [][]uint32 // per flow, in arrival order
}

// UdpFlows sends flows UDP flows h1→h2 (ports 5600+i, each from its own
// socket, so its own source port and flow hash), perFlow datagrams of size
// bytes each, numbered, round robin at about rate datagrams/s in all, and
// returns what h2 received per flow (until 1 s passes without a datagram).
func UdpFlows(t *testing.T, tb *netns.Testbed, flows, perFlow, size int, rate float64) *FlowRun {
	t.Helper()
	r := &FlowRun{flows: flows, perFlow: perFlow, Got: make([][]uint32, flows)}
	// A socket per flow in namespace host, to 10.0.0.2 port 5600 + flow.
	conns := func(host string, open func(to *net.UDPAddr) (*net.UDPConn, error)) []*net.UDPConn {
		cs := make([]*net.UDPConn, flows)
		if err := netns.Do(tb.NS(host), func() error {
			for i := range cs {
				c, err := open(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 5600 + i})
				if err != nil {
					return err
				}
				cs[i] = c
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	rx := conns("h2", func(to *net.UDPAddr) (*net.UDPConn, error) {
		c, err := net.ListenUDP("udp4", to)
		if err == nil {
			c.SetReadBuffer(4 << 20)
		}
		return c, err
	})
	tx := conns("h1", func(to *net.UDPAddr) (*net.UDPConn, error) {
		c, err := net.DialUDP("udp4", nil, to)
		if err == nil {
			c.SetWriteBuffer(4 << 20)
		}
		return c, err
	})
	defer func() {
		for i := range rx {
			rx[i].Close()
			tx[i].Close()
		}
	}()
	var wg sync.WaitGroup
	for i, c := range rx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 2048)
			for {
				c.SetReadDeadline(time.Now().Add(time.Second))
				n, err := c.Read(buf)
				if err != nil {
					return
				}
				if n >= 4 {
					r.Got[i] = append(r.Got[i], binary.BigEndian.Uint32(buf))
				}
			}
		}()
	}
	msg := make([]byte, size)
	gap := time.Duration(float64(flows) / rate * float64(time.Second))
	next := time.Now()
	for seq := range perFlow {
		binary.BigEndian.PutUint32(msg, uint32(seq))
		for i, c := range tx {
			for {
				_, err := c.Write(msg)
				if err == nil {
					break
				}
				if !isNoBufs(err) {
					t.Fatalf("flow %d datagram %d: %v", i, seq, err)
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		next = next.Add(gap)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
	}
	wg.Wait()
	return r
}

// isNoBufs: the sending host's queue was full for a moment (retried).
func isNoBufs(err error) bool {
	return strings.Contains(err.Error(), unix.ENOBUFS.Error())
}

// Check reports, per flow, datagrams missing, duplicated and out of order.
func (r *FlowRun) Check() (missing, dups, ooo int, detail []string) {
	for i, got := range r.Got {
		seen := make([]bool, r.perFlow)
		var m, d, o int
		last := -1
		for _, s := range got {
			if int(s) >= r.perFlow {
				continue
			}
			if seen[s] {
				d++
				continue
			}
			seen[s] = true
			if int(s) < last {
				o++
			}
			last = max(last, int(s))
		}
		first, last := -1, -1 // missing
		for s, ok := range seen {
			if !ok {
				m++
				if first < 0 {
					first = s
				}
				last = s
			}
		}
		missing, dups, ooo = missing+m, dups+d, ooo+o
		if m+d+o > 0 {
			l := fmt.Sprintf("flow %d: %d missing, %d duplicated, %d out of order", i, m, d, o)
			if m > 0 {
				l += fmt.Sprintf(" (missing %d to %d of %d)", first, last, r.perFlow)
			}
			detail = append(detail, l)
		}
	}
	return
}

// Assert logs what the run delivered (what: which run) and fails the test
// for each flow that had a datagram duplicated or out of order or, unless
// lossOK, one missing.
func (r *FlowRun) Assert(t *testing.T, what string, lossOK bool) {
	t.Helper()
	missing, dups, ooo, detail := r.Check()
	t.Logf("%s: %d missing, %d duplicated, %d out of order", what, missing, dups, ooo)
	if lossOK && dups == 0 && ooo == 0 {
		return
	}
	for _, l := range detail {
		t.Error(l)
	}
}

// CheckBothWorkers fails unless every worker of d carried the flows' frames
// (in from port from, out to port to: at least a tenth of them each), and
// the workers' shares add up to the ports' totals.
func CheckBothWorkers(t *testing.T, name string, d *Dataplane, from, to int) {
	t.Helper()
	s := d.Stats()
	if len(s.Workers) != 2 {
		t.Fatalf("%s: %d workers in the statistics; want 2", name, len(s.Workers))
	}
	least := uint64(WorkerFlows * WorkerPerFlow / 10)
	for _, w := range s.Workers {
		in, out := w.Ports[from].RX.Frames, w.Ports[to].TX.Frames
		if in < least || out < least {
			t.Errorf("%s: worker %d received %d on %s and sent %d on %s; want at least %d each: the flows did not spread over both queues, or a worker is idle",
				name, w.Worker, in, w.Ports[from].Name, out, w.Ports[to].Name, least)
		}
	}
	for p, port := range s.Ports {
		var rx, tx uint64
		for _, w := range s.Workers {
			wp := w.Ports[p]
			rx += wp.RX.Frames
			tx += wp.TX.Frames
			t.Logf("%s worker %d %s: rx %d tx %d (loops %d)", name, w.Worker, wp.Name, wp.RX.Frames, wp.TX.Frames, w.Loops)
		}
		if rx != port.RX.Frames || tx != port.TX.Frames {
			t.Errorf("%s %s: workers' shares rx %d tx %d; port totals rx %d tx %d", name, port.Name, rx, tx, port.RX.Frames, port.TX.Frames)
		}
	}
}

const (
	WorkerFlows   = 16
	WorkerPerFlow = 2000
	WorkerSize    = 400
	WorkerRate    = 20000 // datagrams/s in all
)

// workersUnderTest is how many workers upWorkersSwitches starts (a test
// may compare with one on the same testbed).
var workersUnderTest = 2

// TestWorkersPortDownCountedOnce: two workers' views of one port find it
// down and up again at different times: one down event, down from the
// first finding to the last worker's up, Down until then.
func TestWorkersPortDownCountedOnce(t *testing.T) {
	d := &Dataplane{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	epoch := time.Now()
	var c PortCounters
	w0 := &Worker{d: d, epoch: epoch}
	w1 := &Worker{d: d, epoch: epoch}
	p0, p1 := &Port{Name: "link0"}, &Port{Name: "link0"}
	w0.portDown(p0, &c, unix.ENETDOWN)
	time.Sleep(2 * time.Millisecond)
	w1.portDown(p1, &c, unix.ENETDOWN)
	w1.portDown(p1, &c, unix.ENETDOWN) // still down: nothing new
	if c.DownEvents.Load() != 1 || !c.Down.Load() {
		t.Fatalf("after two workers found it down: %d events, down %v; want 1, true", c.DownEvents.Load(), c.Down.Load())
	}
	w0.portUp(p0, &c)
	if !c.Down.Load() || c.DownNs.Load() != 0 {
		t.Errorf("one of two workers up again: down %v, %v counted; want still down, nothing counted", c.Down.Load(), time.Duration(c.DownNs.Load()))
	}
	w1.portUp(p1, &c)
	if c.Down.Load() || c.DownNs.Load() < int64(2*time.Millisecond) || c.DownEvents.Load() != 1 {
		t.Errorf("both up again: down %v for %v, %d events; want up, at least 2ms, 1 event", c.Down.Load(), time.Duration(c.DownNs.Load()), c.DownEvents.Load())
	}
}
