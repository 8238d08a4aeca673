package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// printConfig runs `run ARGS --print-config` in-process and returns what it
// printed.
func printConfig(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := execute(append(append([]string{"run"}, args...), "--print-config")...)
	return out.String(), err
}

// The example node files parse, and --print-config round-trips: what it
// prints, loaded as a node file, prints the same again.
func TestNodeFilesRoundTrip(t *testing.T) {
	for _, name := range []string{"node-a.yaml", "node-b.yaml"} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join("..", "..", "deploy", name)
			first, err := printConfig(t, "--config", file)
			if err != nil {
				t.Fatalf("run --config %s --print-config: %v", file, err)
			}
			for _, want := range []string{"\nmode: lg\n", "\nlink-port: enp1s0f1\n", "\nhost-port: enp1s0f0\n", "\nlink-speed: 25G\n"} {
				if !strings.Contains(first, want) {
					t.Errorf("--print-config of %s lacks %q:\n%s", name, strings.TrimSpace(want), first)
				}
			}
			again := filepath.Join(t.TempDir(), "printed.yaml")
			if err := os.WriteFile(again, []byte(first), 0o644); err != nil {
				t.Fatal(err)
			}
			second, err := printConfig(t, "--config", again)
			if err != nil {
				t.Fatalf("the printed configuration does not load: %v\n%s", err, first)
			}
			if second != first {
				t.Errorf("print → load → print differs:\nfirst:\n%s\nsecond:\n%s", first, second)
			}
		})
	}
}

// Every flag of run is a key of the printed configuration, except those
// that act on the command and the former names.
func TestPrintConfigHasEveryFlag(t *testing.T) {
	out, err := printConfig(t)
	if err != nil {
		t.Fatal(err)
	}
	cmd := runCmd()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	want := 1 // log-level, the root's
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Deprecated == "" && f.Name != "config" && f.Name != "print-config" && f.Name != "help-all" {
			want++
			if !strings.Contains(out, "\n"+f.Name+": ") {
				t.Errorf("--print-config lacks %s", f.Name)
			}
		}
	})
	if n != want {
		t.Errorf("--print-config prints %d keys, want %d:\n%s", n, want, out)
	}
}

// Flags on the command line win over the node file; a key the file sets
// is taken.
func TestNodeFileFlagsWin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "n.yaml")
	os.WriteFile(file, []byte("mode: lg\nworkers: 2\nhost-port: [h0, h1]\nmetrics: \"\"\nlg-copies: 3\n"), 0o644)
	// --copies is lg-copies' former name: given, it wins over the file too.
	out, err := printConfig(t, "--config", file, "--mode", "monitor", "--copies", "5")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nmode: monitor\n", "\nworkers: 2\n", "\nhost-port: h0,h1\n", "\nmetrics: \"\"\n", "\nlg-copies: 5\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
}

// A node file's mistakes are usage errors naming the file's line and the
// key, with the fix.
func TestNodeFileErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"mode: lg\nfoo: 1\n", `line 2: unknown key "foo"`},
		{"mode: lg\n\nworkers: two\n", `line 3: workers: invalid argument "two"`},
		{"busy-poll: maybe\n", `line 1: busy-poll: invalid argument "maybe"`},
		{"mode: lg\ncopies: 2\n", `line 2: "copies" is the former name of "lg-copies": write lg-copies: instead`},
		{"mode: lg\nmode: lgnb\n", `line 2: key "mode" given twice (first on line 1)`},
		{"mode:\n", `line 1: mode: no value`},
		{"mode:\n  n: 4\n", `line 2: mode: want a value`},
		{"config: other.yaml\n", `line 1: "config" is not a setting of the node`},
		{"- mode\n", `line 1: want a map of settings`},
		{"mode: [lg\n", `yaml:`},
	} {
		file := filepath.Join(t.TempDir(), "n.yaml")
		os.WriteFile(file, []byte(c.file), 0o644)
		_, err := printConfig(t, "--config", file)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
			t.Errorf("node file %q: error %v, want one naming %s and %q", c.file, err, file, c.want)
		}
		if exitCode(err) != exitUsage {
			t.Errorf("node file %q: exit status %d, want %d", c.file, exitCode(err), exitUsage)
		}
	}
}
