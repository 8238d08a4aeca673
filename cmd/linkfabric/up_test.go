package main_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// TestUp: `up --preset pair --mode forward` brings the testbed up with a
// dataplane on each switch, h1 pings h2 through them, and SIGTERM stops
// everything and leaves no namespace or record behind. A topology the mode
// cannot run is refused before anything is built, naming what works.
func TestUp(t *testing.T) {
	netns.RequireRoot(t)
	c := cli{bin: buildCLI(t)}
	p := netns.TestPrefix(t, "lfn")

	c.fails(t, []string{"up", "--preset", "fabric3", "--prefix", p}, "--mode forward", "fabric3", "takes one --link-port", "--preset pair")
	if n := prefixed(t, p); len(n) != 0 {
		t.Fatalf("a refused up made namespaces %v", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, "up", "--preset", "pair", "--mode", "forward", "--prefix", p)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	ready := make(chan struct{})
	var out strings.Builder
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "Ctrl-C") {
				close(ready)
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("up exited before it was ready: %v\n%s\n%s", err, out.String(), stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("up not ready within 60 s:\n%s\n%s", out.String(), stderr.String())
	}
	for _, want := range []string{"ip netns exec " + p + "h1 ping", "linkfabric stats --netns " + p + "sw2", "run --node sw1 --prefix " + p} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("up does not print %q:\n%s", want, out.String())
		}
	}
	if x := xdpOn(t, p+"sw1"); x["host0"] == 0 || x["link0"] == 0 {
		t.Errorf("sw1's ports carry XDP programs %v; the dataplane should own both", x)
	}
	if err := netns.WaitPing(ctx, p+"h1", "10.0.0.2"); err != nil {
		t.Fatalf("h1 → h2 through up's dataplanes: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("up after SIGTERM: %v (want exit 0)\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("up still running 20 s after SIGTERM:\n%s", stderr.String())
	}
	if n := prefixed(t, p); len(n) != 0 {
		t.Errorf("namespaces left after SIGTERM: %v", n)
	}
	if _, err := os.Stat(filepath.Join(netns.StateDir, p+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("testbed record left after SIGTERM: %v", err)
	}
}

// prefixed lists the namespaces whose names begin with p.
func prefixed(t *testing.T, p string) []string {
	t.Helper()
	var out []string
	for n := range namespaces(t) {
		if strings.HasPrefix(n, p) {
			out = append(out, n)
		}
	}
	return out
}
