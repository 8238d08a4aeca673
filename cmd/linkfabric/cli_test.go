package main_test

// The linkfabric command as a user runs it: the binary is built once, run
// with real arguments against throwaway testbeds (prefix base lfq), and
// judged by its exit status, by whether stderr names the problem and the
// fix, and by what it leaves behind (XDP programs, namespaces, records).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed/bedtest"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/vishvananda/netlink"
)

// result is one run of the binary.
type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("linkfabric %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// cli runs the built binary.
type cli struct {
	bin  string
	cred *syscall.Credential // run as this user (nil: as the test)
}

func (c cli) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Dir = "/"
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	err := cmd.Run()
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("linkfabric %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("linkfabric %s did not finish within 60 s", strings.Join(args, " "))
	}
	return r
}

// ok runs args and fails the test unless the command exits 0.
func (c cli) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := c.run(t, args...)
	if r.code != 0 {
		t.Fatalf("want exit 0: %v", r)
	}
	return r
}

// fails runs args and asserts exit status 1 and that stderr contains every
// one of want (case-insensitive).
func (c cli) fails(t *testing.T, args []string, want ...string) result {
	t.Helper()
	r := c.run(t, args...)
	if r.code != 1 {
		t.Errorf("want exit 1: %v", r)
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(w)) {
			t.Errorf("stderr does not mention %q: %v", w, r)
		}
	}
	return r
}

// rootCLI skips the test unless it runs as root (netns.RequireRoot) and
// builds the binary.
func rootCLI(t *testing.T) cli {
	t.Helper()
	netns.RequireRoot(t)
	return cli{bin: buildCLI(t)}
}

// cliOnBed is rootCLI and a pair testbed (base and opts as netns.TestUp
// takes them) with its switch ports left for linkfabric run.
func cliOnBed(t *testing.T, base string, opts netns.Options) (cli, *netns.Testbed) {
	t.Helper()
	c := rootCLI(t)
	opts.Forwarding = netns.ForwardingNone
	return c, netns.TestUp(t, base, "pair", opts)
}

// buildCLI returns the binary, built once for the package's tests
// (bedtest.Self; TestMain removes it) in a directory that other users can
// enter (for the non-root run).
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := bedtest.Self(t)
	// MkdirTemp made its directory mode 0700.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestMain(m *testing.M) { bedtest.Main(m) }

// xdpOn returns the XDP program IDs attached to each interface of ns.
func xdpOn(t *testing.T, ns string) map[string]uint32 {
	t.Helper()
	m := map[string]uint32{}
	if err := netns.Do(ns, func() error {
		ls, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, l := range ls {
			if x := l.Attrs().Xdp; x != nil && x.Attached {
				m[l.Attrs().Name] = x.ProgId
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("links of %s: %v", ns, err)
	}
	return m
}

// namespaces lists /run/netns.
func namespaces(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(netns.RunDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// leftovers asserts that nothing is attached in the testbed's namespaces
// except keep (ns → dev), and that no namespace appeared that a linkfabric
// command could have made: one of the testbed's prefix, or a default-prefix
// ("lf") testbed that was not there before.
func leftovers(t *testing.T, tb *netns.Testbed, before map[string]bool, keep map[string]string) {
	t.Helper()
	for _, short := range tb.Topology.Namespaces {
		ns := tb.NS(short)
		for dev, id := range xdpOn(t, ns) {
			if keep[ns] != dev {
				t.Errorf("%s in %s still carries XDP program %d", dev, ns, id)
			}
		}
	}
	own := map[string]bool{}
	for _, n := range tb.Topology.NamespaceNames(tb.Prefix) {
		own[n] = true
	}
	dflt := map[string]bool{}
	for _, n := range tb.Topology.NamespaceNames(netns.DefaultPrefix) {
		dflt[n] = true
	}
	for n := range namespaces(t) {
		if before[n] {
			continue
		}
		if (strings.HasPrefix(n, tb.Prefix) && !own[n]) || dflt[n] {
			t.Errorf("new namespace %s appeared", n)
		}
	}
}

// testbed brings up a fresh pair testbed for the dataplane (removed at cleanup).
func testbed(t *testing.T) (*netns.Testbed, map[string]bool) {
	t.Helper()
	tb := netns.TestUp(t, "lfq", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	return tb, namespaces(t)
}

// impairLink attaches a standalone impairer to link0 in ns (impair
// --netns ns --dev link0 args...), removed again when the test ends whatever
// happened, and returns its XDP program's ID.
func impairLink(t *testing.T, c cli, ns string, args ...string) uint32 {
	t.Helper()
	t.Cleanup(func() { c.run(t, "impair", "--netns", ns, "--dev", "link0", "--off") })
	c.ok(t, append([]string{"impair", "--netns", ns, "--dev", "link0"}, args...)...)
	id := xdpOn(t, ns)["link0"]
	if id == 0 {
		t.Fatalf("impair attached nothing to link0 in %s", ns)
	}
	return id
}

func TestCLI(t *testing.T) {
	c := cli{bin: buildCLI(t)}

	t.Run("help", func(t *testing.T) { testHelp(t, c) })
	t.Run("run-help", func(t *testing.T) { testRunHelp(t, c) })
	t.Run("run-former-names", func(t *testing.T) {
		// A former flag name sets what its new name sets, and says so.
		netns.RequireRoot(t)
		for _, name := range []string{"pre-credit", "cells-pre-credit"} {
			r := c.fails(t, []string{"run", "--host-port", "nohost0", "--link-port", "nolink0", "--mode", "cells", "--" + name, "-5"},
				"--cells-pre-credit -5: want bytes")
			if deprecated := strings.Contains(r.stderr, "use --cells-pre-credit"); deprecated != (name == "pre-credit") {
				t.Errorf("--%s: deprecation line %v, want %v: %v", name, deprecated, name == "pre-credit", r)
			}
		}
	})
	t.Run("not-root", func(t *testing.T) { testNotRoot(t, c) })

	t.Run("cells-sim", func(t *testing.T) { testCellsSim(t, c) })
	t.Run("tdma-sim", func(t *testing.T) { testTDMASim(t, c) })

	t.Run("run-netns-missing", func(t *testing.T) {
		netns.RequireRoot(t)
		p := netns.TestPrefix(t, "lfq")
		before := namespaces(t)
		c.fails(t, []string{"run", "--netns", p + "sw1", "--host-port", "host0", "--link-port", "link0"},
			p+"sw1", "does not exist", "linkfabric up --mode none")
		for n := range namespaces(t) {
			if !before[n] && strings.HasPrefix(n, p) {
				t.Errorf("run made namespace %s", n)
			}
		}
	})

	t.Run("run-interface-missing", func(t *testing.T) {
		tb, before := testbed(t)
		sw1 := tb.NS("sw1")
		r := c.fails(t, []string{"run", "--netns", sw1, "--host-port", "host0", "--link-port", "nosuch0"},
			"nosuch0", "no such")
		// Errors name the interface, the namespace and the fix (DESIGN.md).
		if !strings.Contains(r.stderr, sw1) {
			t.Errorf("stderr does not name the namespace %s in which nosuch0 was looked for: %q", sw1, r.stderr)
		}
		if !regexp.MustCompile(`ip (-n \S+ )?link|--link-port|--netns`).MatchString(r.stderr) {
			t.Errorf("stderr names no fix (how to list the interfaces of %s, or which flag to correct): %q", sw1, r.stderr)
		}
		leftovers(t, tb, before, nil)
	})

	t.Run("run-xdp-busy", func(t *testing.T) {
		tb, before := testbed(t)
		sw1 := tb.NS("sw1")
		id := impairLink(t, c, sw1, "--loss", "0.1")
		c.fails(t, []string{"run", "--netns", sw1, "--host-port", "host0", "--link-port", "link0"},
			"link0", "already has XDP program", fmt.Sprint(id), "impair --off")
		// run took its host0 program away again and left the impairer alone.
		leftovers(t, tb, before, map[string]string{sw1: "link0"})
		if got := xdpOn(t, sw1)["link0"]; got != id {
			t.Errorf("link0 carries program %d after the failed run; the impairer was %d", got, id)
		}
	})

	t.Run("run-mtu-too-large", func(t *testing.T) {
		tb, before := testbed(t)
		for _, sw := range []string{"sw1", "sw2"} {
			out, err := exec.Command("ip", "-n", tb.NS(sw), "link", "set", "dev", "link0", "mtu", "4000").CombinedOutput()
			if err != nil {
				t.Fatalf("mtu 4000 on %s link0: %v\n%s", sw, err, out)
			}
		}
		// Native XDP takes MTU 4000 (the programs have frags); an explicit
		// --frame-size that cannot hold the frames is refused with the fix.
		c.fails(t, []string{"run", "--netns", tb.NS("sw1"), "--host-port", "host0", "--link-port", "link0", "--frame-size", "4096"},
			"link0", "MTU 4000", "--frame-size 8192", "mtu 3826")
		leftovers(t, tb, before, nil)
	})

	t.Run("impair-off-twice", func(t *testing.T) {
		tb, before := testbed(t)
		sw2 := tb.NS("sw2")
		impairLink(t, c, sw2, "--loss", "0.1")
		r1 := c.ok(t, "impair", "--netns", sw2, "--dev", "link0", "--off")
		r2 := c.ok(t, "impair", "--netns", sw2, "--dev", "link0", "--off")
		if !strings.Contains(r1.stdout, "detached") || !strings.Contains(r2.stdout, "nothing to do") {
			t.Errorf("--off twice: first said %q, second %q", r1.stdout, r2.stdout)
		}
		leftovers(t, tb, before, nil)
	})

	t.Run("impair-stats-json", func(t *testing.T) {
		tb, before := testbed(t)
		sw2 := tb.NS("sw2")
		impairLink(t, c, sw2, "--loss", "0.1", "--seed", "5")
		r := c.ok(t, "impair", "--netns", sw2, "--dev", "link0", "--stats", "--json")
		var doc struct {
			Dev          string   `json:"dev"`
			Program      string   `json:"program"`
			ProgramID    uint32   `json:"program_id"`
			Enabled      bool     `json:"enabled"`
			Seen         *uint64  `json:"seen"`
			Dropped      *uint64  `json:"dropped"`
			ExpectedLoss *float64 `json:"expected_loss"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("--stats --json is not JSON: %v\n%s", err, r.stdout)
		}
		if doc.Dev != "link0" || !doc.Enabled || doc.ProgramID != xdpOn(t, sw2)["link0"] || doc.Seen == nil || doc.Dropped == nil ||
			doc.ExpectedLoss == nil || *doc.ExpectedLoss < 0.0999 || *doc.ExpectedLoss > 0.1001 {
			t.Errorf("--stats --json: %+v from\n%s", doc, r.stdout)
		}
		c.ok(t, "impair", "--netns", sw2, "--dev", "link0", "--off")
		// With nothing attached, --stats fails and says how to attach.
		c.fails(t, []string{"impair", "--netns", sw2, "--dev", "link0", "--stats", "--json"}, "link0", "no XDP program", "linkfabric impair")
		leftovers(t, tb, before, nil)
	})

	t.Run("testbed-up-former-name", func(t *testing.T) {
		// testbed up still builds a testbed and names the command that replaces it.
		netns.RequireRoot(t)
		p := netns.TestPrefix(t, "lfq")
		t.Cleanup(func() { c.run(t, "testbed", "down", "--prefix", p) })
		r := c.ok(t, "testbed", "up", "--prefix", p, "--forwarding", "none", "--json")
		if !strings.Contains(r.stderr, "linkfabric up --mode none") || !strings.Contains(r.stdout, `"prefix": "`+p+`"`) {
			t.Errorf("testbed up: want the testbed as JSON and a line naming 'linkfabric up --mode none': %v", r)
		}
	})

	t.Run("testbed-up-down-twice", func(t *testing.T) {
		netns.RequireRoot(t)
		p := netns.TestPrefix(t, "lfq")
		topo, err := netns.Preset("pair")
		if err != nil {
			t.Fatal(err)
		}
		names := topo.NamespaceNames(p)
		c.ok(t, "up", "--mode", "none", "--prefix", p)
		have := namespaces(t)
		for _, n := range names {
			if !have[n] {
				t.Errorf("up --mode none --prefix %s: namespace %s missing", p, n)
			}
		}
		c.ok(t, "testbed", "down", "--prefix", p)
		c.ok(t, "testbed", "down", "--prefix", p)
		have = namespaces(t)
		for n := range have {
			if strings.HasPrefix(n, p) {
				t.Errorf("namespace %s left after testbed down --prefix %s", n, p)
			}
		}
		if _, err := os.Stat(filepath.Join(netns.StateDir, p+".json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("testbed record of %s left after down: %v", p, err)
		}
	})

	t.Run("testbed-up-exists", func(t *testing.T) {
		netns.RequireRoot(t)
		p := netns.TestPrefix(t, "lfq")
		c.ok(t, "up", "--mode", "none", "--prefix", p)
		topo, _ := netns.Preset("pair")
		ino := func() map[string]uint64 {
			m := map[string]uint64{}
			for _, n := range topo.NamespaceNames(p) {
				var st syscall.Stat_t
				if err := syscall.Stat(filepath.Join(netns.RunDir, n), &st); err != nil {
					t.Errorf("%s: %v", n, err)
					continue
				}
				m[n] = st.Ino
			}
			return m
		}
		before := ino()
		c.fails(t, []string{"up", "--mode", "none", "--prefix", p}, p, "already")
		r := c.run(t, "up", "--mode", "none", "--prefix", p)
		// The fix must be a command that removes this testbed: plain
		// `linkfabric testbed down` removes the default prefix's ("lf").
		if !strings.Contains(r.stderr, "testbed down --prefix "+p) && !strings.Contains(r.stderr, "another prefix") {
			t.Errorf("stderr names no fix for prefix %s: %q", p, r.stderr)
		}
		if strings.Contains(r.stderr, `"linkfabric testbed down"`) || strings.Contains(r.stderr, "Down(") {
			t.Errorf("the fix offered is not a command that removes testbed %s (plain `linkfabric testbed down` removes prefix %q; Down() is the Go API): %q", p, netns.DefaultPrefix, r.stderr)
		}
		// The existing testbed is untouched: same namespaces (inodes), its
		// record, its interfaces.
		after := ino()
		for n, i := range before {
			if after[n] != i {
				t.Errorf("namespace %s was replaced or removed by the failed up (inode %d → %d)", n, i, after[n])
			}
		}
		if _, err := os.Stat(filepath.Join(netns.StateDir, p+".json")); err != nil {
			t.Errorf("record of the existing testbed: %v", err)
		}
		if err := netns.Do(p+"sw1", func() error {
			for _, dev := range []string{"host0", "link0"} {
				if _, err := netlink.LinkByName(dev); err != nil {
					return fmt.Errorf("%s: %w", dev, err)
				}
			}
			return nil
		}); err != nil {
			t.Errorf("existing testbed damaged: %v", err)
		}
		c.ok(t, "testbed", "down", "--prefix", p)
	})

	t.Run("run-lg-sigint", func(t *testing.T) { testRunSIGINT(t, c) })
	t.Run("run-fastpath-signals", func(t *testing.T) { testRunFastPathSignals(t, c) })
}

// testHelp: --help of every command (found by walking "Available Commands")
// exits 0 and shows an example.
func testHelp(t *testing.T, c cli) {
	var walk func(path []string)
	seen := 0
	walk = func(path []string) {
		r := c.run(t, append(append([]string{}, path...), "--help")...)
		seen++
		name := strings.Join(append([]string{"linkfabric"}, path...), " ")
		if r.code != 0 {
			t.Errorf("%s --help: exit %d\n%s", name, r.code, r.stderr)
			return
		}
		if !hasExample(r.stdout) {
			t.Errorf("%s --help shows no example (no Examples: section and no `linkfabric ...` command line)", name)
		}
		for _, sub := range subcommands(r.stdout) {
			walk(append(append([]string{}, path...), sub))
		}
	}
	walk(nil)
	if seen < 8 {
		t.Errorf("found only %d commands", seen)
	}
}

// testRunHelp: run --help fits one screen (60 lines) and names how many
// flags it leaves out; run --help-all lists every flag of the command.
func testRunHelp(t *testing.T, c cli) {
	short := c.ok(t, "run", "--help").stdout
	all := c.ok(t, "run", "--help-all").stdout
	if n := strings.Count(short, "\n"); n > 60 {
		t.Errorf("run --help is %d lines, want at most 60:\n%s", n, short)
	}
	flagRE := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`)
	flags := func(help string) map[string]bool {
		local, _, _ := strings.Cut(help, "Global Flags:")
		m := map[string]bool{}
		for _, f := range flagRE.FindAllStringSubmatch(local, -1) {
			m[f[1]] = true
		}
		return m
	}
	inShort, inAll := flags(short), flags(all)
	for _, want := range []string{"mode", "fec-n", "pfc-xoff", "session-hold", "zerocopy", "help-all"} {
		if !inAll[want] {
			t.Errorf("run --help-all does not list --%s", want)
		}
	}
	more := 0
	for f := range inAll {
		if !inShort[f] {
			more++
		}
	}
	if want := fmt.Sprintf("%d more flags: linkfabric run --help-all", more); !strings.Contains(short, want) {
		t.Errorf("run --help does not say %q:\n%s", want, short)
	}
}

// subcommands lists the "Available Commands" of a help text, without
// cobra's own help and completion.
func subcommands(help string) []string {
	var subs []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "Available Commands:":
			in = true
		case in && strings.TrimSpace(l) == "":
			in = false
		case in:
			if f := strings.Fields(l); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
				subs = append(subs, f[0])
			}
		}
	}
	return subs
}

// hasExample reports whether a help text has an Examples: section or, in its
// description (not the Usage: block), a command line starting "linkfabric ".
func hasExample(help string) bool {
	if strings.Contains(help, "\nExamples:\n") {
		return true
	}
	desc, _, _ := strings.Cut(help, "Usage:")
	return regexp.MustCompile(`(?m)^\s+(\$ )?linkfabric \S`).MatchString(desc)
}

// testNotRoot: as an unprivileged user (nobody) the privileged commands
// fail at once with the "needs root" message (run: the capabilities it
// lacks) and the fix.
func testNotRoot(t *testing.T, c cli) {
	if os.Geteuid() == 0 {
		c.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	// run checks capabilities, not the user: it names what is missing.
	c.fails(t, []string{"run", "--netns", "lfqnone", "--host-port", "host0", "--link-port", "link0"},
		"run needs CAP_NET_ADMIN", "CAP_SYS_ADMIN", "AmbientCapabilities")
	for _, args := range [][]string{
		{"impair", "--netns", "lfqnone", "--dev", "link0", "--loss", "0.1"},
		{"up", "--mode", "none", "--prefix", "lfqnone"},
		{"testbed", "down", "--prefix", "lfqnone"},
	} {
		c.fails(t, args, "needs root", "sudo")
	}
}

// testRunSIGINT: `run --mode lg` starts, attaches its programs, and on
// SIGINT exits 0 within 5 s with both programs detached.
func testRunSIGINT(t *testing.T, c cli) {
	tb, before := testbed(t)
	sw1 := tb.NS("sw1")
	log := runUntilSignal(t, c, sw1, os.Interrupt, "--mode", "lg")
	if !strings.Contains(log, "XDP programs detached") {
		t.Errorf("run did not report detaching its programs:\n%s", log)
	}
	out, err := exec.Command("ip", "-n", sw1, "link", "show", "dev", "host0").CombinedOutput()
	if err != nil || strings.Contains(string(out), "xdp") {
		t.Errorf("after run exited, ip -n %s link show dev host0: %v\n%s", sw1, err, out)
	}
	leftovers(t, tb, before, nil)
}

// testRunFastPathSignals: run --mode forward --fastpath xdp reports each
// direction's path (sw2 runs nothing, so sw1's link0 cannot take redirected
// frames and host0 → link0 waits on AF_XDP, saying why), and leaves no XDP
// program behind when SIGTERM, SIGHUP (a closed terminal: a clean stop,
// status 0) or even SIGKILL stops it.
func testRunFastPathSignals(t *testing.T, c cli) {
	tb := netns.TestUp(t, "lfw", "pair", netns.Options{Forwarding: netns.ForwardingNone})
	before := namespaces(t)
	sw1 := tb.NS("sw1")
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGKILL} {
		log := runUntilSignal(t, c, sw1, sig, "--mode", "forward", "--fastpath", "xdp")
		for _, want := range []string{`msg="fast path" from=link0 to=host0 path=xdp`,
			`msg="fast path" from=host0 to=link0 path=afxdp reason="link0 does not accept redirected frames`} {
			if !strings.Contains(log, want) {
				t.Errorf("%v: the log does not say %s:\n%s", sig, want, log)
			}
		}
		// A killed process's bpf_links are released just after it exits.
		for deadline := time.Now().Add(3 * time.Second); len(xdpOn(t, sw1)) > 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		leftovers(t, tb, before, nil)
	}
}

// runUntilSignal starts run on host0 and link0 of namespace ns with args,
// waits until it is ready with XDP programs on both ports, sends sig, and
// returns its log once it has exited (with status 0 unless sig is SIGKILL).
func runUntilSignal(t *testing.T, c cli, ns string, sig os.Signal, args ...string) string {
	t.Helper()
	return startRun(t, c, ns, args...).signal(t, sig)
}

// runningCLI is a `linkfabric run` started by startRun.
type runningCLI struct {
	*lineProc // its error output
	what      string
	cancel    context.CancelFunc
}

// startRun starts run on host0 and link0 of namespace ns with args and
// waits until it is ready with XDP programs on both ports.
func startRun(t *testing.T, c cli, ns string, args ...string) *runningCLI {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	r := &runningCLI{what: "run " + strings.Join(args, " "), cancel: cancel}
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"run", "--netns", ns, "--host-port", "host0", "--link-port", "link0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.lineProc = startLines(t, cmd, stderr, dataplaneReady)
	r.waitReady(t, r.what, 20*time.Second, nil)
	out, _ := exec.Command("ip", "-n", ns, "link", "show", "dev", "host0").CombinedOutput()
	if !strings.Contains(string(out), "xdp") {
		t.Errorf("%s is ready but host0 carries no XDP program:\n%s", r.what, out)
	}
	if x := xdpOn(t, ns); x["host0"] == 0 || x["link0"] == 0 {
		t.Errorf("%s is ready but XDP programs are %v", r.what, x)
	}
	return r
}

// dataplaneReady is whether a line of run's log says it is ready.
func dataplaneReady(line string) bool { return strings.Contains(line, "dataplane ready") }

// lineProc is a process of the test one of whose output pipes is read line
// by line into a log.
type lineProc struct {
	cmd    *exec.Cmd
	exited chan error    // the process's exit, once the pipe has ended
	ready  chan struct{} // closed at the first line that says it is ready
	mu     sync.Mutex
	log    strings.Builder
}

// startLines starts cmd and reads pipe, one of cmd's output pipes, into its
// log, closing ready at the first line isReady (nil: none) accepts.
// Whatever happens, the process does not outlive the test.
func startLines(t *testing.T, cmd *exec.Cmd, pipe io.Reader, isReady func(line string) bool) *lineProc {
	t.Helper()
	p := &lineProc{cmd: cmd, exited: make(chan error, 1), ready: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.exited
		}
	})
	go func() {
		sc := bufio.NewScanner(pipe)
		once := false
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !once && isReady != nil && isReady(sc.Text()) {
				once = true
				close(p.ready)
			}
		}
		io.Copy(io.Discard, pipe)
		p.exited <- cmd.Wait()
	}()
	return p
}

// logText is what the process has written to the pipe so far.
func (p *lineProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitReady fails the test (showing the log, and also if not nil) unless
// the process, what, says it is ready within the given time.
func (p *lineProc) waitReady(t *testing.T, what string, within time.Duration, also fmt.Stringer) {
	t.Helper()
	more := ""
	if also != nil {
		more = "\n" + also.String()
	}
	select {
	case <-p.ready:
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("%s exited before it was ready: %v\n%s%s", what, err, p.logText(), more)
	case <-time.After(within):
		t.Fatalf("%s not ready within %v:\n%s%s", what, within, p.logText(), more)
	}
}

// signal sends sig to the run and returns its log once it has exited (with
// status 0 unless sig is SIGKILL).
func (r *runningCLI) signal(t *testing.T, sig os.Signal) string {
	t.Helper()
	start := time.Now()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil && sig != syscall.SIGKILL {
			t.Errorf("%s after %v: %v (want exit 0)\n%s", r.what, sig, err, r.logText())
		}
		t.Logf("%s exited %v after %v", r.what, time.Since(start).Round(time.Millisecond), sig)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still running 5 s after %v", r.what, sig)
	}
	r.cancel()
	return r.logText()
}

// cells sim needs no root: it runs the simulated fabric's scenarios, prints
// their figures and writes a JSON report with a summary; an unknown
// scenario is named with the ones there are.
func testCellsSim(t *testing.T, c cli) {
	var rep struct {
		Seed      uint64 `json:"seed"`
		Scenarios []struct {
			Name string `json:"name"`
			Pass bool   `json:"pass"`
		} `json:"scenarios"`
		Summary map[string]any `json:"summary"`
	}
	simReport(t, c, []string{"cells", "sim", "--scenario", "reasm,linkdeath", "--seed", "3"},
		[]string{"reasm", "linkdeath", "discarded_records", "lg_lost", "2 of 2 scenarios within range"}, &rep)
	if rep.Seed != 3 || len(rep.Scenarios) != 2 || rep.Summary["pass"] != true || rep.Summary["lg_lost"] != nil ||
		rep.Summary["linkdeath_lg_lost"] != 0.0 || rep.Summary["reasm_timeouts"] != 1.0 {
		t.Errorf("report: seed %d, %d scenarios, summary %v", rep.Seed, len(rep.Scenarios), rep.Summary)
	}
	c.fails(t, []string{"cells", "sim", "--scenario", "nosuch"}, "nosuch", "packing", "scale")
}

// simReport runs a sim command (args) with --out in a directory it makes,
// checks that its output names every one of want, and decodes the JSON
// report it wrote into rep.
func simReport(t *testing.T, c cli, args, want []string, rep any) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out", "sim.json")
	r := c.ok(t, append(args, "--out", out)...)
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("%s output lacks %q:\n%s", strings.Join(args[:2], " "), w, r.stdout)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, rep); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
}

// tdma sim needs no root either: its scenarios' figures in a table and a
// JSON summary; paper mode shows overruns under loss, lease mode none.
func testTDMASim(t *testing.T, c cli) {
	var rep struct {
		Summary map[string]any `json:"summary"`
	}
	simReport(t, c, []string{"tdma", "sim", "--scenario", "shuffle,ctlloss"},
		[]string{"completion_over_ideal", "paper_p1_overrun_bytes", "2 of 2 scenarios within range"}, &rep)
	if rep.Summary["pass"] != true || rep.Summary["ctlloss_lease_p1_overrun_bytes"] != 0.0 {
		t.Errorf("summary %v", rep.Summary)
	}
	if v, _ := rep.Summary["ctlloss_paper_p1_overrun_bytes"].(float64); v <= 0 {
		t.Errorf("paper mode at 1 %% loss: overrun %v", rep.Summary["ctlloss_paper_p1_overrun_bytes"])
	}
	c.fails(t, []string{"tdma", "sim", "--scenario", "nosuch"}, "nosuch", "shuffle", "freeze")
}
