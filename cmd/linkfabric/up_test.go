package main_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/cellify"
	"github.com/linkfabric/linkfabric/netns"
)

// TestUp: `up --preset pair --mode forward` brings the testbed up with a
// dataplane on each switch, h1 pings h2 through them, and SIGTERM stops
// everything and leaves no namespace or record behind. A topology the mode
// cannot run is refused before anything is built, naming what works.
func TestUp(t *testing.T) {
	c := rootCLI(t)
	p := netns.TestPrefix(t, "lfn")

	c.fails(t, []string{"up", "--preset", "fabric3", "--prefix", p}, "--mode forward", "fabric3", "takes one --link-port", "--preset pair")
	if n := prefixed(t, p); len(n) != 0 {
		t.Fatalf("a refused up made namespaces %v", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	u := startUp(t, ctx, c, "--preset", "pair", "--mode", "forward", "--prefix", p)
	for _, want := range []string{"ip netns exec " + p + "h1 ping", "linkfabric stats --netns " + p + "sw2", "run --node sw1 --prefix " + p} {
		if !strings.Contains(u.logText(), want) {
			t.Errorf("up does not print %q:\n%s", want, u.logText())
		}
	}
	if x := xdpOn(t, p+"sw1"); x["host0"] == 0 || x["link0"] == 0 {
		t.Errorf("sw1's ports carry XDP programs %v; the dataplane should own both", x)
	}
	if err := netns.WaitPing(ctx, p+"h1", "10.0.0.2"); err != nil {
		t.Fatalf("h1 → h2 through up's dataplanes: %v", err)
	}
	u.stop(t)
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

// upProc is a running `linkfabric up`.
type upProc struct {
	*lineProc // its output
	stderr    *strings.Builder
}

// startUp runs `linkfabric up args...` and waits until it says the testbed
// is up.
func startUp(t *testing.T, ctx context.Context, c cli, args ...string) *upProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"up"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	u := &upProc{stderr: &strings.Builder{}}
	cmd.Stderr = u.stderr
	u.lineProc = startLines(t, cmd, stdout, func(line string) bool { return strings.HasPrefix(line, "Ctrl-C") })
	u.waitReady(t, "up", 60*time.Second, u.stderr)
	return u
}

// stop sends SIGTERM and waits for a clean exit.
func (u *upProc) stop(t *testing.T) {
	t.Helper()
	if err := u.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-u.exited:
		if err != nil {
			t.Errorf("up after SIGTERM: %v (want exit 0)\n%s", err, u.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("up still running 30 s after SIGTERM:\n%s", u.stderr.String())
	}
}

// TestUpCells: `up --mode cells` runs a dataplane on every switch of the
// bundle (two edges) and of fabric3 (three edges, e3 with two host ports,
// and two fabric nodes), each with its own node id; the hosts reach each
// other through the cells, and stats shows each node's cells counters.
func TestUpCells(t *testing.T) {
	c := rootCLI(t)
	p := netns.TestPrefix(t, "lfc")
	c.fails(t, []string{"up", "--preset", "fabric3", "--mode", "lg", "--prefix", p}, "--mode lg cannot run topology fabric3", "modes that run topology fabric3: cells")
	// Cells flags a run refuses, naming the flag and what works.
	tb := netns.TestUp(t, "lfc", "bundle", netns.Options{Forwarding: netns.ForwardingNone})
	run := []string{"run", "--netns", tb.NS("sw1"), "--host-port", "host0", "--link-port", "link0,link1", "--mode", "cells", "--metrics", ""}
	const mostCell = 1526 + 14 - cellify.CellPayloadOffset // link MTU + Ethernet header - cell headers
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cells-size", "1600"}, []string{"--cells-size 1600", "link MTU 1526", fmt.Sprintf("at most %d", mostCell-4)}}, // CRC32C trailer
		{[]string{"--cells-size", "1600", "--integrity", "off"}, []string{"--cells-size 1600", fmt.Sprintf("at most %d", mostCell)}},
		{[]string{"--cells-size", "10"}, []string{"--cells-size 10", "below the cell header"}},
		{[]string{"--cells-link-mode", "xor"}, []string{`--cells-link-mode "xor"`, "none, lg, lgnb, monitor or fec"}},
		{[]string{"--cells-loss-classes", "default"}, []string{"--cells-loss-classes", "--cells-link-mode monitor"}},
		{[]string{"--cells-spray", "ecmp"}, []string{"--cells-spray", "perm, p2c or hash"}},
		{[]string{"--cells-node-id", "5000"}, []string{"--cells-node-id 5000", "1..1023"}},
	} {
		c.fails(t, append(append([]string{}, run...), tc.args...), tc.want...)
	}
	if x := xdpOn(t, tb.NS("sw1")); x["host0"] != 0 || x["link0"] != 0 {
		t.Errorf("a refused run left XDP programs on sw1: %v", x)
	}
	for _, tc := range []struct {
		preset string
		pings  []string // addresses h1 pings
		edge   string   // h1's edge
		fabric []string // the fabric nodes, if any
		ids    map[string]uint64
	}{
		{"bundle", []string{"10.0.0.2"}, "sw1", nil, map[string]uint64{"sw1": 1, "sw2": 2}},
		{"fabric3", []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}, "e1", []string{"f1", "f2"}, map[string]uint64{"e1": 1, "e3": 3, "f1": 4, "f2": 5}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			p := netns.TestPrefix(t, "lfc")
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			u := startUp(t, ctx, c, "--preset", tc.preset, "--mode", "cells", "--prefix", p)
			for _, a := range tc.pings {
				if err := netns.WaitPing(ctx, p+"h1", a); err != nil {
					t.Fatalf("h1 → %s through up's cell dataplanes: %v\n%s", a, err, u.stderr.String())
				}
			}
			for node, id := range tc.ids {
				doc := statsDoc(t, c, p+node)
				if got := num(doc, "cells", "node_id"); got != id {
					t.Errorf("%s: node id %d; want %d", node, got, id)
				}
				if num(doc, "cells", "usable_links") == 0 {
					t.Errorf("%s: no usable link: %v", node, doc["cells"])
				}
			}
			// Which fabric node a ping's few cells cross is the edges'
			// spraying's choice: the fabric as a whole must have forwarded
			// them, each node in the role of one.
			var forwarded uint64
			for _, node := range tc.fabric {
				doc := statsDoc(t, c, p+node)
				if role, _ := doc["cells"].(map[string]any)["role"].(string); role != "fabric" {
					t.Errorf("%s: role %q; want fabric", node, role)
				}
				n := num(doc, "cells", "node", "Forwarded")
				t.Logf("%s forwarded %d cells", node, n)
				forwarded += n
			}
			if len(tc.fabric) != 0 && forwarded == 0 {
				t.Errorf("%v forwarded no cell of h1's pings", tc.fabric)
			}
			r := c.ok(t, "stats", "--netns", p+tc.edge)
			for _, want := range []string{"cells:", "links:", "tx_cells:", "reasm_delivered:"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("linkfabric stats does not print %q:\n%s", want, r.stdout)
				}
			}
			u.stop(t)
			if n := prefixed(t, p); len(n) != 0 {
				t.Errorf("namespaces left after SIGTERM: %v", n)
			}
		})
	}
}
