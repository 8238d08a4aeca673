package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/experiment/report"
)

// execute runs linkfabric ARGS in-process and returns what it printed on
// its output (its error output is kept out of the test's) and its error.
func execute(args ...string) (*bytes.Buffer, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(new(bytes.Buffer))
	root.SetArgs(args)
	return &out, root.Execute()
}

// The exit statuses: usage errors 2, a missed target 3, any other 1.
func TestExitCodes(t *testing.T) {
	run := func(args ...string) error {
		_, err := execute(args...)
		return err
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"version"}, exitOK},
		{[]string{"--version"}, exitOK},
		{[]string{"run", "--print-config"}, exitOK},
		{[]string{"run", "--no-such-flag"}, exitUsage},
		{[]string{"run", "--workers", "two", "--print-config"}, exitUsage},
		{[]string{"no-such-command"}, exitUsage},
		{[]string{"version", "extra"}, exitUsage},
		{[]string{"run", "--config", "/nonexistent/node.yaml"}, exitUsage},
	} {
		if got := exitCode(run(c.args...)); got != c.want {
			t.Errorf("linkfabric %s: exit status %d, want %d", strings.Join(c.args, " "), got, c.want)
		}
	}
	if got := exitCode(fmt.Errorf("fec fct: %w", report.Missed("check missed for lg (see the table)"))); got != exitMissed {
		t.Errorf("a missed target: exit status %d, want %d", got, exitMissed)
	}
	if got := exitCode(errors.New("port link0: no such device")); got != exitError {
		t.Errorf("a failure: exit status %d, want %d", got, exitError)
	}
}
