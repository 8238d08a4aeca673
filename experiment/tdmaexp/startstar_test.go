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
	"github.com/linkfabric/linkfabric/tdma/host"
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

// TestSameStagger: a run in which a host took a schedule staggered unlike
// the FM's, or one it could not decode, is refused, naming the host.
func TestSameStagger(t *testing.T) {
	for _, c := range []struct {
		fm                 bool
		staggered, al, bad uint64
		want               string
	}{
		{true, 10, 0, 0, ""}, {false, 0, 10, 0, ""}, {true, 9, 1, 0, "h2: 1 schedules not staggered"},
		{false, 1, 9, 0, "h2: 1 schedules not aligned"}, {true, 10, 0, 2, "2 it could not decode"},
	} {
		r := TDMARun{Hosts: make([]host.Stats, 2)}
		r.FM.Stagger = c.fm
		r.Hosts[0].StaggeredSchedules, r.Hosts[0].AlignedSchedules = 10, 0
		if !c.fm {
			r.Hosts[0].StaggeredSchedules, r.Hosts[0].AlignedSchedules = 0, 10
		}
		r.Hosts[1].StaggeredSchedules, r.Hosts[1].AlignedSchedules, r.Hosts[1].BadSchedules = c.staggered, c.al, c.bad
		err := r.sameSchedules()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
}

// TestSameBudget: a run in which a host took schedules with slot budgets
// the FM did not set, took budgets it does not keep to, took none of the
// FM's budgeted rounds, or refused the FM's schedules (a build that does
// not know the budget flag), is refused, naming the host and the setting.
func TestSameBudget(t *testing.T) {
	for _, c := range []struct {
		fm     bool
		rounds uint64
		took   uint64
		keeps  bool
		bad    string
		want   string
	}{
		{true, 5, 10, true, "", ""}, {false, 0, 0, true, "", ""}, {true, 0, 0, false, "", ""},
		{false, 0, 2, true, "", "h2: took 2 schedules with slot budgets from an FM without them (tdma fm --budget=false)"},
		{true, 5, 10, false, "", "h2: took 10 schedules with slot budgets and does not keep to them"},
		{true, 5, 0, true, "", "h2: the FM published 5 rounds with slot budgets (tdma fm --budget), the host took none"},
		{true, 5, 0, true, "wire: schedule flags 0x03, unknown 0x02 (this host knows stagger 0x01)", "could not decode (of 40): wire: schedule flags 0x03, unknown 0x02"},
	} {
		r := TDMARun{Hosts: make([]host.Stats, 2)}
		r.FM.Stagger, r.FM.Budget, r.FM.BudgetRounds = true, c.fm, c.rounds
		for i := range r.Hosts {
			r.Hosts[i].StaggeredSchedules, r.Hosts[i].Schedules, r.Hosts[i].KeepsBudgets = 40, 40, true
			r.Hosts[i].BudgetSchedules = c.rounds * 2
		}
		r.Hosts[1].BudgetSchedules, r.Hosts[1].KeepsBudgets = c.took, c.keeps
		if c.bad != "" {
			r.Hosts[1].BadSchedules, r.Hosts[1].BadScheduleErr = 10, c.bad
		}
		err := r.sameSchedules()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c, err, c.want)
		}
	}
}
