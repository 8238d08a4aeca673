package main_test

// Two hosts, one protected link, as docs/real-hosts.md sets it up: each end
// configured only through its node file (deploy/node-a.yaml and node-b.yaml
// with the testbed's ports), started as the unit's ExecStart starts it, as a
// user that is not root holding only the unit's capabilities, inside its
// switch's namespace (ip netns exec, so that no --netns and no
// CAP_SYS_ADMIN are needed). UDP from h1 to h2 crosses the link at 1e-2
// loss and arrives whole and in order; both ends stop on SIGTERM with exit 0
// and leave no XDP program behind.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
)

// unitSetting is the value of key in deploy/linkfabric@.service (its one
// line "key=value").
func unitSetting(t *testing.T, unit, key string) string {
	t.Helper()
	var found []string
	for _, l := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(l, key+"="); ok {
			found = append(found, strings.TrimSpace(v))
		}
	}
	if len(found) != 1 {
		t.Fatalf("deploy/linkfabric@.service: %d lines %s=, want one", len(found), key)
	}
	return found[0]
}

// unitStart is the unit's ExecStart for node file file with the binary bin
// in place of the installed one; it fails the test unless ExecStart is
// "<binary> run --config /etc/linkfabric/%i.yaml".
func unitStart(t *testing.T, unit, bin, file string) []string {
	t.Helper()
	exec := strings.Fields(unitSetting(t, unit, "ExecStart"))
	if len(exec) != 4 || filepath.Base(exec[0]) != "linkfabric" || exec[1] != "run" || exec[2] != "--config" || exec[3] != "/etc/linkfabric/%i.yaml" {
		t.Fatalf("the unit's ExecStart is %q: this test starts `linkfabric run --config /etc/linkfabric/%%i.yaml`", exec)
	}
	return []string{bin, exec[1], exec[2], file}
}

// unitCapabilities are the unit's AmbientCapabilities as setpriv names
// them (net_admin, ...), checked against its CapabilityBoundingSet.
func unitCapabilities(t *testing.T, unit string) []string {
	t.Helper()
	amb, bnd := unitSetting(t, unit, "AmbientCapabilities"), unitSetting(t, unit, "CapabilityBoundingSet")
	if amb != bnd {
		t.Fatalf("the unit's AmbientCapabilities %q and CapabilityBoundingSet %q differ", amb, bnd)
	}
	var caps []string
	for _, c := range strings.Fields(amb) {
		caps = append(caps, strings.ToLower(strings.TrimPrefix(c, "CAP_")))
	}
	return caps
}

// nodeFile is the example node file deploy/NAME with the testbed's ports
// and the peer's link-port MAC in place of the example's, written to dir.
func nodeFile(t *testing.T, dir, name, peerMAC string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{"\nhost-port: enp1s0f0 ", "\nhost-port: host0 "},
		{"\nlink-port: enp1s0f1 ", "\nlink-port: link0 "},
	} {
		if strings.Count(s, r[0]) != 1 {
			t.Fatalf("deploy/%s has no line %q to give the testbed's port", name, strings.TrimSpace(r[0]))
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	re := regexp.MustCompile(`(?m)^peer-mac: .*$`)
	if len(re.FindAllString(s, -1)) != 1 {
		t.Fatalf("deploy/%s has no peer-mac line", name)
	}
	s = re.ReplaceAllString(s, fmt.Sprintf("peer-mac: %q", peerMAC))
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// macIn is the MAC address of dev in namespace ns.
func macIn(t *testing.T, ns, dev string) string {
	t.Helper()
	var mac string
	if err := netns.Do(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err == nil {
			mac = ifc.HardwareAddr.String()
		}
		return err
	}); err != nil {
		t.Fatalf("%s in %s: %v", dev, ns, err)
	}
	return mac
}

// metricsIn is the Prometheus text the endpoint addr of namespace ns serves.
func metricsIn(ns, addr string) (string, error) {
	var conn net.Conn
	if err := netns.Do(ns, func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		conn = c
		return err
	}); err != nil {
		return "", err
	}
	tr := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// metricSum is the sum of every sample of metric name in Prometheus text m
// and how many there are.
func metricSum(m, name string) (sum float64, n int) {
	for _, l := range strings.Split(m, "\n") {
		if !strings.HasPrefix(l, name+"{") && !strings.HasPrefix(l, name+" ") {
			continue
		}
		f := strings.Fields(l)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
			n++
		}
	}
	return sum, n
}

// node is one end started as the unit starts it.
type node struct {
	*lineProc // its error output
	name      string
	notify    *net.UnixConn
}

// startNode starts argv (asNobody's command line) with a notification
// socket of its own in dir, as systemd gives a Type=notify service.
func startNode(t *testing.T, name, dir string, argv []string) *node {
	t.Helper()
	sock := filepath.Join(dir, name+".notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(sock, 0o777)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	return &node{lineProc: startLines(t, cmd, stderr, nil), name: name, notify: ln}
}

// waitSessionUp reads n's notifications until its status says the link
// session is up; it fails the test if n exits or deadline passes first.
func (n *node) waitSessionUp(t *testing.T, deadline time.Time) {
	t.Helper()
	buf := make([]byte, 4096)
	var got []string
	for {
		select {
		case e := <-n.exited:
			n.exited <- e
			t.Fatalf("%s exited before its link session was up: %v\nnotifications %q\n%s", n.name, e, got, n.logText())
		default:
		}
		// Short reads, so that an exit is seen at once.
		d := time.Now().Add(200 * time.Millisecond)
		if d.After(deadline) {
			d = deadline
		}
		n.notify.SetReadDeadline(d)
		k, err := n.notify.Read(buf)
		if ne, ok := err.(net.Error); ok && ne.Timeout() && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: no link session (%v); notifications %q\n%s", n.name, err, got, n.logText())
		}
		msg := string(buf[:k])
		got = append(got, msg)
		if strings.Contains(msg, "STATUS=ports attached; link session up") {
			return
		}
	}
}

// stop sends SIGTERM and fails the test unless n exits 0 within a minute.
func (n *node) stop(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("%s: %v", n.name, err)
	}
	select {
	case err := <-n.exited:
		n.exited <- err
		if err != nil {
			t.Errorf("%s after SIGTERM: %v (want exit 0)\n%s", n.name, err, n.logText())
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s still running a minute after SIGTERM:\n%s", n.name, n.logText())
	}
	if !strings.Contains(n.logText(), "XDP programs detached") {
		t.Errorf("%s did not report detaching its programs:\n%s", n.name, n.logText())
	}
}

// udpSocketDrops is namespace ns's Udp RcvbufErrors: datagrams its own
// receiving sockets dropped (full buffer), not the link's losses.
func udpSocketDrops(t *testing.T, ns string) uint64 {
	t.Helper()
	m, err := netns.SNMPAll(ns)
	if err != nil {
		t.Fatalf("/proc/net/snmp of %s: %v", ns, err)
	}
	return m["UdpRcvbufErrors"]
}

func TestRealHostsNodeFiles(t *testing.T) {
	netns.RequireRoot(t)
	for _, tool := range []string{"setpriv", "iperf3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	ub, err := os.ReadFile(filepath.Join("..", "..", "deploy", "linkfabric@.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(ub)
	caps := unitCapabilities(t, unit)
	c, tb := cliOnBed(t, "lfr", netns.Options{})
	h1, sw1, sw2, h2 := tb.NS("h1"), tb.NS("sw1"), tb.NS("sw2"), tb.NS("h2")

	// The node files, readable by the unprivileged user.
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		os.Chmod(d, 0o755)
	}
	files := map[string]string{
		sw1: nodeFile(t, dir, "node-a.yaml", macIn(t, sw2, "link0")),
		sw2: nodeFile(t, dir, "node-b.yaml", macIn(t, sw1, "link0")),
	}
	// The preflight on each, from its node file alone.
	for _, ns := range []string{sw1, sw2} {
		out, err := exec.Command("ip", "netns", "exec", ns, c.bin, "check", "--config", files[ns]).CombinedOutput()
		if err != nil {
			t.Fatalf("check --config %s in %s: %v\n%s", filepath.Base(files[ns]), ns, err, out)
		}
	}

	ends := map[string]*node{}
	for _, ns := range []string{sw1, sw2} {
		argv := asNobody(ns, caps, c.bin, unitStart(t, unit, c.bin, files[ns])[1:]...)
		ends[ns] = startNode(t, filepath.Base(files[ns]), dir, argv)
	}
	deadline := time.Now().Add(60 * time.Second)
	for _, ns := range []string{sw1, sw2} {
		ends[ns].waitSessionUp(t, deadline)
		m, err := metricsIn(ns, "127.0.0.1:9477")
		if err != nil {
			t.Fatalf("metrics of %s: %v", ends[ns].name, err)
		}
		if up, k := metricSum(m, "linkfabric_link_session_up"); k != 1 || up != 1 {
			t.Fatalf("%s: linkfabric_link_session_up sums to %v over %d samples, want 1 of 1:\n%s", ends[ns].name, up, k, m)
		}
	}

	impairLink(t, c, sw2, "--loss", "1e-2", "--seed", "3")
	drops0 := udpSocketDrops(t, h2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2 through the link: %v", err)
	}
	srv := netns.Command(ctx, h2, "iperf3", "-s", "-1", "-p", "5331")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	var out []byte
	for range 30 { // until the server listens
		out, err = netns.Command(ctx, h1, "iperf3", "-c", "10.0.0.2", "-p", "5331", "--connect-timeout", "3000",
			"-u", "-b", "50M", "-l", "1400", "-w", "2M", "-t", "5", "-J").Output()
		if !strings.Contains(string(out), "Connection refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var rep fct.IperfReport
	if err == nil {
		rep, err = fct.ParseIperfReport(out)
	}
	if err != nil || rep.End.Sum.Packets == 0 || rep.End.Sum.LostPackets < 0 || rep.OutOfOrder() < 0 {
		t.Fatalf("iperf3 UDP h1→h2: %v, %d datagrams, %d lost, %d out of order\n%s", err, rep.End.Sum.Packets, rep.End.Sum.LostPackets, rep.OutOfOrder(), out)
	}
	ooo := rep.OutOfOrder()
	socketDrops := udpSocketDrops(t, h2) - drops0
	dropped := impairDropped(t, c, sw2)
	t.Logf("iperf3 UDP 50M 5 s h1→h2 at 1e-2 loss: %d datagrams, %d lost, %d out of order; the impairer dropped %d frames; h2's receiving socket dropped %d (Udp RcvbufErrors)",
		rep.End.Sum.Packets, rep.End.Sum.LostPackets, ooo, dropped, socketDrops)
	if dropped == 0 {
		t.Errorf("the impairer on sw2's link0 dropped nothing: the link was not lossy")
	}
	if lost := uint64(rep.End.Sum.LostPackets); lost > socketDrops {
		t.Errorf("%d of %d datagrams lost on the link (iperf3 counted %d lost, h2's own socket dropped %d)", lost-socketDrops, rep.End.Sum.Packets, lost, socketDrops)
	}
	if ooo != 0 {
		t.Errorf("%d datagrams out of order", ooo)
	}
	if m, err := metricsIn(sw2, "127.0.0.1:9477"); err != nil {
		t.Errorf("metrics of node-b after the run: %v", err)
	} else if up, _ := metricSum(m, "linkfabric_link_session_up"); up != 1 {
		t.Errorf("node-b's link session is not up after the run:\n%s", m)
	}

	for _, ns := range []string{sw1, sw2} {
		ends[ns].stop(t)
		if x := xdpOn(t, ns); len(x) > 0 {
			t.Errorf("%s left XDP programs on %v", ends[ns].name, x)
		}
	}
}

// impairDropped is the frames the impairer on sw2's link0 dropped.
func impairDropped(t *testing.T, c cli, ns string) uint64 {
	t.Helper()
	r := c.ok(t, "impair", "--netns", ns, "--dev", "link0", "--stats", "--json")
	var doc struct {
		Dropped *uint64 `json:"dropped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Dropped == nil {
		t.Fatalf("impair --stats --json: %v\n%s", err, r.stdout)
	}
	return *doc.Dropped
}
