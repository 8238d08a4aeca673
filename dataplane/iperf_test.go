package dataplane

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/fct"
	"github.com/linkfabric/linkfabric/netns"
)

// RequireIperf3 skips the test as netns.RequireRoot does, and fails it when
// iperf3 is not installed.
func RequireIperf3(t *testing.T) {
	t.Helper()
	netns.RequireRoot(t)
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Fatalf("iperf3 missing (scripts/deps.sh installs it): %v", err)
	}
}

// StartIperfServer starts "iperf3 -s -1 -p port" (one test, then exit) in
// namespace ns; it is killed and waited for when the test ends.
func StartIperfServer(t *testing.T, ctx context.Context, ns string, port int) {
	t.Helper()
	srv := netns.Command(ctx, ns, "iperf3", "-s", "-1", "-p", strconv.Itoa(port))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
}

// RunIperfClient runs "iperf3 -c 10.0.0.2 -p port --connect-timeout 3000
// args..." in namespace ns, again while the server does not listen yet
// (Connection refused, for up to 3 s), and returns its output.
func RunIperfClient(ctx context.Context, ns string, port int, args ...string) ([]byte, error) {
	return runIperfClient(ctx, ns, "10.0.0.2", port, false, args)
}

// runIperfClient is RunIperfClient against addr; with jsonOnly, the output
// is iperf3's standard output alone (-J writes its report and errors there).
func runIperfClient(ctx context.Context, ns, addr string, port int, jsonOnly bool, args []string) ([]byte, error) {
	argv := append([]string{"-c", addr, "-p", strconv.Itoa(port), "--connect-timeout", "3000"}, args...)
	var out []byte
	var err error
	for range 30 {
		if c := netns.Command(ctx, ns, "iperf3", argv...); jsonOnly {
			out, err = c.Output()
		} else {
			out, err = c.CombinedOutput()
		}
		if !strings.Contains(string(out), "Connection refused") { // iperf3 -J may exit 0 with it
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, err
}

// IperfJSON runs the iperf3 client in namespace client against the server
// at addr as RunIperfClient does, with -J, and returns its report; an error
// of the run, or a report that does not decode or names an error, fails
// the test.
func IperfJSON(t *testing.T, ctx context.Context, client, addr string, port int, args ...string) fct.IperfReport {
	t.Helper()
	out, err := runIperfClient(ctx, client, addr, port, true, append(args, "-J"))
	var r fct.IperfReport
	if err == nil {
		r, err = fct.ParseIperfReport(out)
	}
	if err != nil {
		t.Fatalf("iperf3 %s %s→%s: %v\n%s", strings.Join(args, " "), client, addr, err, LastLines(string(out), 20))
	}
	return r
}

// UDPRun is one iperf3 UDP run: server port, rate, seconds, and Reverse
// for h2→h1.
type UDPRun struct {
	Port    int
	Rate    string
	Secs    int
	Reverse bool
}

// IperfUDP runs iperf3 UDP from h1 to h2 (10.0.0.2; the other way with
// Reverse), datagrams of 1400 bytes, 2 MB socket buffers, and returns
// datagrams sent, lost and out of order as the receiver counted them.
func IperfUDP(t *testing.T, h1, h2 string, o UDPRun) (packets, lost, ooo uint64) {
	t.Helper()
	RequireIperf3(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(o.Secs+30)*time.Second)
	defer cancel()
	if err := netns.WaitPing(ctx, h1, "10.0.0.2"); err != nil {
		t.Fatalf("ping h1→h2: %v", err)
	}
	StartIperfServer(t, ctx, h2, o.Port)
	args := []string{"-u", "-b", o.Rate, "-l", "1400", "-w", "2M", "-t", strconv.Itoa(o.Secs)}
	if o.Reverse {
		args = append(args, "-R")
	}
	r := IperfJSON(t, ctx, h1, "10.0.0.2", o.Port, args...)
	if r.End.Sum.Packets == 0 {
		t.Fatalf("iperf3 %s h1→h2 sent no datagrams", strings.Join(args, " "))
	}
	if r.End.Sum.LostPackets < 0 || r.OutOfOrder() < 0 {
		t.Fatalf("iperf3 %s h1→h2: %d lost, %d out of order: a count below zero", strings.Join(args, " "), r.End.Sum.LostPackets, r.OutOfOrder())
	}
	return uint64(r.End.Sum.Packets), uint64(r.End.Sum.LostPackets), uint64(r.OutOfOrder())
}
