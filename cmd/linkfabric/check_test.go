package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/linkfabric/linkfabric/internal/preflight"
)

// checkJSON runs `check ARGS --json` in-process and returns its report and
// error.
func checkJSON(t *testing.T, args ...string) (preflight.Report, error) {
	t.Helper()
	out, err := execute(append(append([]string{"check"}, args...), "--json")...)
	var r preflight.Report
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &r); jerr != nil {
			t.Fatalf("check %s: the report is not JSON: %v\n%s", strings.Join(args, " "), jerr, out.String())
		}
	}
	return r, err
}

// portsOf is each port of r's checks with its role.
func portsOf(r preflight.Report) map[string]string {
	m := map[string]string{}
	for _, c := range r.Checks {
		if c.Port != "" {
			m[c.Port] = c.Role
		}
	}
	return m
}

// check --config reads the node file as run does: its ports, mode and
// namespace, with check's own flags winning; a key run would refuse is
// refused with its line.
func TestCheckConfig(t *testing.T) {
	nodeA := filepath.Join("..", "..", "deploy", "node-a.yaml")
	t.Run("node-file", func(t *testing.T) {
		r, err := checkJSON(t, "--config", nodeA)
		if !errors.Is(err, errCheckFailed) { // the example's NICs are not on this machine
			t.Errorf("check --config %s: %v, want %v", nodeA, err, errCheckFailed)
		}
		if got := portsOf(r); got["enp1s0f0"] != "host" || got["enp1s0f1"] != "link" || len(got) != 2 {
			t.Errorf("check --config %s checked ports %v, want the file's host-port enp1s0f0 and link-port enp1s0f1", nodeA, got)
		}
		if r.Mode != "lg" {
			t.Errorf("check --config %s: mode %q, want the file's lg", nodeA, r.Mode)
		}
	})
	t.Run("flags-win", func(t *testing.T) {
		r, _ := checkJSON(t, "--config", nodeA, "--link-port", "lfnone1", "--mode", "monitor")
		if got := portsOf(r); got["enp1s0f0"] != "host" || got["lfnone1"] != "link" || len(got) != 2 {
			t.Errorf("check --config --link-port lfnone1 checked ports %v, want enp1s0f0 (file) and lfnone1 (flag)", got)
		}
		if r.Mode != "monitor" {
			t.Errorf("check --config --mode monitor: mode %q", r.Mode)
		}
	})
	t.Run("netns", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "n.yaml")
		os.WriteFile(file, []byte("netns: lfnone-ns\nhost-port: h0\nlink-port: l0\n"), 0o644)
		_, err := checkJSON(t, "--config", file)
		if err == nil || !strings.Contains(err.Error(), "lfnone-ns") {
			t.Errorf("check with a node file's netns: %v, want an error entering namespace lfnone-ns", err)
		}
	})
	t.Run("unknown-key", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(file, []byte("mode: lg\nlink-prot: l0\n"), 0o644)
		_, err := checkJSON(t, "--config", file)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), `"link-prot"`) {
			t.Errorf("check --config with an unknown key: %v, want a usage error naming line 2 and the key", err)
		}
	})
	t.Run("missing-file", func(t *testing.T) {
		_, err := checkJSON(t, "--config", filepath.Join(t.TempDir(), "none.yaml"))
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("check --config of a missing file: %v, want a usage error", err)
		}
	})
}
