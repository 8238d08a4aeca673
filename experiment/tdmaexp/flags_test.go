package tdmaexp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/linkfabric/linkfabric/experiment/bed"
	"github.com/linkfabric/linkfabric/netns"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func TestParseOffsets(t *testing.T) {
	open := 4650 * time.Microsecond
	auto, err := parseOffsets("auto", open)
	if err != nil || len(auto) != 9 || auto[0] != 0 || auto[8] >= open || auto[8] < open*3/4 {
		t.Errorf("auto: %v, %v: want 9 offsets from 0 to about 80 %% of %v", auto, err, open)
	}
	got, err := parseOffsets("0, 1ms,2500us", open)
	if err != nil || len(got) != 3 || got[1] != time.Millisecond || got[2] != 2500*time.Microsecond {
		t.Errorf("list: %v, %v", got, err)
	}
	for _, bad := range []string{"5ms", "-1ms", "x", "1ms,,2ms"} {
		if _, err := parseOffsets(bad, open); err == nil || !strings.Contains(err.Error(), "--offsets") {
			t.Errorf("%q: err %v, want an --offsets error", bad, err)
		}
	}
	if _, err := parseOffsets("auto", 0); err == nil {
		t.Error("a slot with no open part was accepted")
	}
}

func TestStarFlagsArms(t *testing.T) {
	s := tdmaStarFlags{arms: "tdma, tcp", armsOK: "tdma, tcp", armsAll: []string{"tdma", "tcp"}}
	if a, err := s.armList(); err != nil || len(a) != 2 || a[1] != "tcp" {
		t.Errorf("%v, %v", a, err)
	}
	s.arms = "tdma,udp"
	if _, err := s.armList(); err == nil || !strings.Contains(err.Error(), "udp") {
		t.Errorf("udp accepted: %v", err)
	}
	s.arms = " , "
	if a, err := s.armList(); err == nil {
		t.Errorf("no arm accepted: %v", a)
	}
}

type fakeStarResult struct {
	runs int
	Runs int `json:"runs"` // what its JSON says
}

func (r *fakeStarResult) Text() string   { return "" }
func (r *fakeStarResult) measured() bool { return r != nil && r.runs > 0 }

// TestRunStar: a result that measured something is written even when the
// experiment failed, and the experiment's error comes before the writing's;
// a result that measured nothing (or none) is not written.
func TestRunStar(t *testing.T) {
	expErr, writeErr := errors.New("experiment"), errors.New("write")
	for _, c := range []struct {
		name      string
		r         *fakeStarResult
		err, werr error
		wrote     bool
		want      error
	}{
		{"measured", &fakeStarResult{runs: 1}, nil, nil, true, nil},
		{"write failed", &fakeStarResult{runs: 1}, nil, writeErr, true, writeErr},
		{"failed after a run", &fakeStarResult{runs: 1}, expErr, writeErr, true, expErr},
		{"nothing measured", &fakeStarResult{}, expErr, nil, false, expErr},
		{"no result", nil, expErr, nil, false, expErr},
	} {
		wrote := false
		exp := func(context.Context, *bed.Env, int) (*fakeStarResult, error) { return c.r, c.err }
		write := func(string, *fakeStarResult) ([]string, error) { wrote = true; return nil, c.werr }
		r, err := runStar(&cobra.Command{}, "x", t.TempDir(), 0, exp, write)
		if r != c.r || err != c.want || wrote != c.wrote {
			t.Errorf("%s: result %v, err %v, wrote %v; want err %v, wrote %v", c.name, r, err, wrote, c.want, c.wrote)
		}
	}
}

// TestStarFlagsPreRun: the star, --runs and --arms are parsed before the
// command runs; a bad one stops it there. An experiment without arms that
// sweeps the slots and the gate modes itself (slots, ctlloss) has no
// --arms, --slot, --guard or --mode and takes its own --runs default.
func TestStarFlagsPreRun(t *testing.T) {
	shuffle := tdmaStarDefaults{hosts: 4, limitName: "limit", arms: ShuffleArms, armsValue: "tdma,tcp", prefix: "x", out: t.TempDir()}
	sweeps := tdmaStarDefaults{hosts: 4, sweepsSlots: true, sweepsModes: true, runs: 1, prefix: "x", out: t.TempDir()}
	type parsed struct {
		hosts, runs int
		slot        time.Duration
		mode        string
		arms        []string
	}
	for _, c := range []struct {
		d    tdmaStarDefaults
		args []string
		want string // "" runs and parses p
		p    parsed
	}{
		{shuffle, []string{"--arms", "tcp", "--hosts", "3"}, "", parsed{3, 3, 5 * time.Millisecond, "lease", []string{"tcp"}}},
		{shuffle, []string{"--arms", "udp"}, "udp", parsed{}},
		{shuffle, []string{"--hosts", "9"}, "--hosts", parsed{}},
		{shuffle, []string{"--runs", "0"}, "--runs", parsed{}},
		{sweeps, nil, "", parsed{4, 1, 0, "", nil}},
		{sweeps, []string{"--runs", "0"}, "--runs", parsed{}},
		{sweeps, []string{"--arms", "tdma"}, "unknown flag: --arms", parsed{}},
		{sweeps, []string{"--slot", "1ms"}, "unknown flag: --slot", parsed{}},
		{sweeps, []string{"--mode", "lease"}, "unknown flag: --mode", parsed{}},
	} {
		var sf tdmaStarFlags
		ran := false
		cmd := &cobra.Command{Use: "x", Args: cobra.NoArgs, SilenceUsage: true, SilenceErrors: true, RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
		sf.register(cmd, c.d)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		got := parsed{sf.parsed.Hosts, sf.runs, sf.parsed.Slot, sf.parsed.Mode, sf.parsedArms}
		switch {
		case c.want == "" && (err != nil || !ran || !reflect.DeepEqual(got, c.p)):
			t.Errorf("%v: err %v, ran %v, parsed %+v, want %+v", c.args, err, ran, got, c.p)
		case c.want != "" && (err == nil || ran || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: err %v, ran %v; want an error about %s", c.args, err, ran, c.want)
		}
	}
}

// TestRunStarJSON: with --json a measured result is printed as JSON on
// stdout instead of its text.
func TestRunStarJSON(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().Bool("json", false, "")
	cmd.Flags().Set("json", "true")
	exp := func(context.Context, *bed.Env, int) (*fakeStarResult, error) {
		return &fakeStarResult{runs: 2, Runs: 2}, nil
	}
	write := func(string, *fakeStarResult) ([]string, error) { return nil, nil }
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = wr
	_, err = runStar(cmd, "x", t.TempDir(), 0, exp, write)
	os.Stdout = stdout
	wr.Close()
	out, _ := io.ReadAll(rd)
	var doc map[string]any
	if err != nil || json.Unmarshal(out, &doc) != nil || doc["runs"] != 2.0 {
		t.Errorf("runStar --json: err %v, stdout %q; want the result as JSON", err, out)
	}
}

func TestPortBurst(t *testing.T) {
	for _, c := range []struct {
		args []string
		want netns.ByteSize
	}{
		{nil, 32 << 10},
		{[]string{"--burst", "20K"}, 40 << 10},
		{[]string{"--port-burst", "16K"}, 16 << 10},
	} {
		var s starFlags
		f := pflag.NewFlagSet("x", pflag.ContinueOnError)
		s.bind(f, "lease")
		if err := f.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		star, err := s.star()
		if err != nil || star.PortBurst != c.want {
			t.Errorf("%v: port burst %v, %v; want %v", c.args, star.PortBurst, err, c.want)
		}
	}
	var s starFlags
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.bind(f, "lease")
	if err := f.Parse([]string{"--port-burst", "lots"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.star(); err == nil || !strings.Contains(err.Error(), "port-burst") {
		t.Errorf("--port-burst lots: %v, want its error", err)
	}
}
