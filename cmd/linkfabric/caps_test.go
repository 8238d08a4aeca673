package main_test

// run with its capabilities and nothing more: as user nobody, holding only
// the capabilities the unit grants (deploy/linkfabric@.service), it
// attaches to a veth pair, forwards, and stops cleanly; without any one of
// them it refuses at once, naming the missing one.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/netns"
)

// unitCaps are the capabilities of deploy/linkfabric@.service.
var unitCaps = []string{"net_admin", "net_raw", "bpf", "perfmon", "ipc_lock"}

// asNobody is the command line that runs bin with args as user nobody,
// holding caps only (inheritable, ambient and bounding set), in namespace ns.
func asNobody(ns string, caps []string, bin string, args ...string) []string {
	set := "-all"
	for _, c := range caps {
		set += ",+" + c
	}
	cmd := []string{"ip", "netns", "exec", ns, "setpriv", "--inh-caps=" + set, "--ambient-caps=" + set, "--bounding-set=" + set,
		"--reuid", "nobody", "--regid", "nogroup", "--clear-groups", bin}
	return append(cmd, args...)
}

func TestRunCapabilities(t *testing.T) {
	netns.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	bin := buildCLI(t)
	ns := netns.TestPrefix(t, "lfc") + "n"
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	// The testbed's cleanup removes the namespaces of a topology; this one
	// is made by hand, so it is removed by hand (with its veths).
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", ns, err, out)
		}
	})
	// Two veth pairs: run forwards between host0 and link0; their peers are the
	// kernel's ends (a pair forwarded to itself would loop).
	for _, c := range [][]string{
		{"link", "add", "name", "host0", "type", "veth", "peer", "name", "host0p"},
		{"link", "add", "name", "link0", "type", "veth", "peer", "name", "link0p"},
		{"link", "set", "host0", "up"}, {"link", "set", "host0p", "up"},
		{"link", "set", "link0", "up"}, {"link", "set", "link0p", "up"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", ns}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %s: %v: %s", ns, strings.Join(c, " "), err, out)
		}
	}
	args := []string{"run", "--host-port", "host0", "--link-port", "link0", "--mode", "forward", "--metrics", ""}

	t.Run("unit-caps", func(t *testing.T) {
		// systemd's notification socket, which user nobody may write to.
		dir := t.TempDir() // <MkdirTemp dir>/NNN, both mode 0700
		os.Chmod(dir, 0o777)
		os.Chmod(filepath.Dir(dir), 0o755)
		sock := filepath.Join(dir, "notify")
		ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		os.Chmod(sock, 0o777)
		argv := asNobody(ns, unitCaps, bin, args...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=400000")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		run := startLines(t, cmd, stderr, dataplaneReady)
		run.waitReady(t, fmt.Sprintf("run as nobody with %v", unitCaps), 60*time.Second, nil)
		if x := xdpOn(t, ns); x["host0"] == 0 || x["link0"] == 0 {
			t.Errorf("run is ready but XDP programs are %v", x)
		}
		// READY=1 first, then the watchdog pings of a live worker.
		buf := make([]byte, 4096)
		ln.SetReadDeadline(time.Now().Add(30 * time.Second))
		for _, want := range []string{"READY=1\nSTATUS=ports attached; no link session in this mode", "WATCHDOG=1"} {
			n, err := ln.Read(buf)
			if err != nil || string(buf[:n]) != want {
				t.Errorf("notification %q (%v), want %q", buf[:n], err, want)
			}
		}
		// The process is setpriv's exec of linkfabric: the same pid.
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-run.exited:
			if err != nil {
				t.Errorf("run after SIGINT: %v (want exit 0)\n%s", err, run.logText())
			}
		case <-ctx.Done():
			cmd.Process.Kill()
			t.Fatalf("run still running after SIGINT:\n%s", run.logText())
		}
		out := run.logText()
		for _, bad := range []string{"level=WARN", "level=ERROR"} {
			if strings.Contains(out, bad) {
				t.Errorf("run with the unit's capabilities logged a warning or an error:\n%s", out)
				break
			}
		}
		if !strings.Contains(out, "XDP programs detached") {
			t.Errorf("run did not report detaching its programs:\n%s", out)
		}
		if x := xdpOn(t, ns); len(x) > 0 {
			t.Errorf("XDP programs left on %v", x)
		}
	})

	t.Run("one-missing", func(t *testing.T) {
		for i, missing := range unitCaps {
			caps := append(append([]string{}, unitCaps[:i]...), unitCaps[i+1:]...)
			argv := asNobody(ns, caps, bin, args...)
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			ee, _ := err.(*exec.ExitError)
			if ee == nil || ee.ExitCode() != 1 {
				t.Errorf("run without %s: %v (want exit 1)\n%s", missing, err, out)
			}
			name := "CAP_" + strings.ToUpper(missing)
			if !strings.Contains(string(out), "needs "+name) || !strings.Contains(string(out), "AmbientCapabilities") {
				t.Errorf("run without %s: the error does not name it and the fix:\n%s", missing, out)
			}
			if x := xdpOn(t, ns); len(x) > 0 {
				t.Errorf("run without %s left XDP programs on %v", missing, x)
			}
		}
	})

	t.Run("netns-needs-sys-admin", func(t *testing.T) {
		argv := asNobody(ns, unitCaps, bin, "run", "--netns", ns, "--host-port", "host0", "--link-port", "link0", "--metrics", "")
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if ee, _ := err.(*exec.ExitError); ee == nil || ee.ExitCode() != 1 || !strings.Contains(string(out), "needs CAP_SYS_ADMIN") {
			t.Errorf("run --netns without CAP_SYS_ADMIN: %v (want exit 1 naming CAP_SYS_ADMIN)\n%s", err, out)
		}
	})
}
