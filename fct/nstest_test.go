package fct

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

var nsSeq atomic.Int32

func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (root, namespaces): skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip)")
	}
}

func run(t *testing.T, argv ...string) {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// testPair creates two namespaces joined by a veth pair (eth0 in each),
// 10.99.0.1/24 in the first (client, h1) and 10.99.0.2/24 in the second
// (server, h2). They are deleted in t.Cleanup.
func testPair(t *testing.T) (h1, h2 string) {
	t.Helper()
	requireRoot(t)
	p := fmt.Sprintf("lff%d%c", os.Getpid(), 'a'+rune(nsSeq.Add(1)-1))
	h1, h2 = p+"a", p+"b"
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", h1).Run()
		exec.Command("ip", "netns", "del", h2).Run()
	})
	run(t, "ip", "netns", "add", h1)
	run(t, "ip", "netns", "add", h2)
	run(t, "ip", "link", "add", "lffva", "netns", h1, "type", "veth", "peer", "name", "lffvb", "netns", h2)
	for i, ns := range []string{h1, h2} {
		v := []string{"lffva", "lffvb"}[i]
		run(t, "ip", "-n", ns, "link", "set", v, "name", "eth0")
		run(t, "ip", "-n", ns, "addr", "add", fmt.Sprintf("10.99.0.%d/24", i+1), "dev", "eth0")
		run(t, "ip", "-n", ns, "link", "set", "eth0", "up")
		run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	}
	return h1, h2
}
