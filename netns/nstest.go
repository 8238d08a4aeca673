package netns

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var prefixSeq atomic.Uint32

// TestOwners holds a file per test testbed prefix naming the process that
// made it. Cleanup cannot run in a test binary killed by go test's -timeout
// or by SIGKILL; the next TestPrefix of any test process removes the
// testbeds whose process is gone (sweepOrphans).
const TestOwners = "/run/linkfabric/test-owners"

var sweepOnce sync.Once

// sweepOrphans takes down every test testbed whose process no longer runs.
func sweepOrphans() {
	ents, _ := os.ReadDir(TestOwners)
	for _, e := range ents {
		mark := filepath.Join(TestOwners, e.Name())
		b, err := os.ReadFile(mark)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		if Down(e.Name()) == nil {
			os.Remove(mark)
		}
	}
}

// TestPrefix returns a short prefix unique to this test process and call,
// base followed by the pid and a counter in base 36 (e.g. "lfn" -> "lfn1x3a"),
// and registers Down(prefix) in tb.Cleanup, so the testbed is removed even if
// the test fails; if the test process is killed before its cleanups run, the
// next test process that asks for a prefix removes it (TestOwners). Use it
// for every testbed a test makes:
//
//	p := netns.TestPrefix(t, "lfn")
//	tb, err := netns.Up(topo, netns.Options{Prefix: p})
func TestPrefix(tb testing.TB, base string) string {
	tb.Helper()
	if base == "" {
		base = "lfn"
	}
	sweepOnce.Do(sweepOrphans)
	p := base + strconv.FormatInt(int64(os.Getpid()), 36) + "x" + strconv.FormatInt(int64(prefixSeq.Add(1)), 36)
	mark := filepath.Join(TestOwners, p)
	if os.MkdirAll(TestOwners, 0o755) == nil {
		os.WriteFile(mark, []byte(strconv.Itoa(os.Getpid())), 0o644) // not root: no testbed either
	}
	tb.Cleanup(func() {
		if err := Down(p); err != nil {
			tb.Errorf("netns: cleanup of testbed %s: %v", p, err)
			return
		}
		os.Remove(mark)
	})
	return p
}

// RequireRoot skips the test unless it runs as root, and with -short (the
// unit pass of make test, under -race: integration tests run in the full pass).
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test (root, namespaces): skipped with -short")
	}
	if os.Geteuid() != 0 {
		tb.Skip("needs root (network namespaces); CI runs as root")
	}
}

// MustPreset is Preset(name) for a test, which it fails on error.
func MustPreset(tb testing.TB, name string) *Topology {
	tb.Helper()
	topo, err := Preset(name)
	if err != nil {
		tb.Fatalf("netns: preset %q: %v", name, err)
	}
	return topo
}

// TestUp is the usual start of an integration test: it skips unless root,
// makes a unique prefix from base with cleanup, and brings topology preset
// up with opts (opts.Prefix is overwritten). It fails the test on error.
func TestUp(tb testing.TB, base, preset string, opts Options) *Testbed {
	tb.Helper()
	RequireRoot(tb)
	return TestUpTopology(tb, base, MustPreset(tb, preset), opts)
}

// TestUpTopology is TestUp for a topology of the test's own (a preset
// changed, or parsed from the test's YAML).
func TestUpTopology(tb testing.TB, base string, topo *Topology, opts Options) *Testbed {
	tb.Helper()
	RequireRoot(tb)
	opts.Prefix = TestPrefix(tb, base)
	start := time.Now()
	t, err := Up(topo, opts)
	if err != nil {
		tb.Fatalf("netns.Up(%s, prefix %s): %v", topo.Name, opts.Prefix, err)
	}
	tb.Logf("testbed %s (%s, forwarding %s) up in %v", opts.Prefix, topo.Name, t.Forwarding, time.Since(start).Round(time.Millisecond))
	return t
}
