package tdmaexp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
)

// TestStartStarHostsReadyBeforeFM: the FM starts only once every host
// agent has said it is ready, however slowly the agents come up (the
// first one here takes longest), so that every host has its share of the
// first round. The agents are a script that notes what it does in order.
func TestStartStarHostsReadyBeforeFM(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace")
	self := filepath.Join(dir, "agent.sh")
	script := `#!/bin/sh
# $1 $2 = tdma fm|host; $3 = the host's index
if [ "$2" = fm ]; then echo fm >> ` + trace + `; echo "tdma fm ready" >&2; exec sleep 30; fi
sleep 0.$((3 - $3))
echo "ready $3" >> ` + trace + `
echo "tdma host ready" >&2
exec sleep 30
`
	if err := os.WriteFile(self, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &bed.Env{Self: self}
	fmp, hp, err := startStar(context.Background(), e, dir, 3, []string{"tdma", "fm"}, func(i int) []string {
		return []string{"tdma", "host", strconv.Itoa(i)}
	})
	t.Cleanup(func() {
		for _, p := range append(hp, fmp) {
			if p != nil {
				p.stop()
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmp == nil || len(hp) != 3 {
		t.Fatalf("started fm %v, %d hosts", fmp, len(hp))
	}
	var lines []string
	for wait := time.Now().Add(10 * time.Second); time.Now().Before(wait); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(trace)
		if lines = strings.Fields(strings.ReplaceAll(string(b), "ready ", "ready")); len(lines) == 4 {
			break
		}
	}
	if len(lines) != 4 || lines[3] != "fm" {
		t.Errorf("order of starts %q: want every host ready, then the fm", lines)
	}
}
