package dataplane

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

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
	argv := append([]string{"-c", "10.0.0.2", "-p", strconv.Itoa(port), "--connect-timeout", "3000"}, args...)
	var out []byte
	var err error
	for range 30 {
		out, err = netns.Command(ctx, ns, "iperf3", argv...).CombinedOutput()
		if !strings.Contains(string(out), "Connection refused") { // iperf3 -J may exit 0 with it
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, err
}
