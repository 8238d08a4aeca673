package fecpipe_test

import (
	"strings"
	"testing"

	_ "github.com/linkfabric/linkfabric/cellify/cellspipe" // --cells-link-mode
	"github.com/linkfabric/linkfabric/dataplane"
	"github.com/linkfabric/linkfabric/fec/fecpipe"
	"github.com/spf13/pflag"
)

// TestFECFlags: the --fec-* flags are mode fec's and the fec layer's under
// the cells; elsewhere they are refused, naming them. --fec-n fixes n and
// excludes --fec-target.
func TestFECFlags(t *testing.T) {
	for _, tc := range []struct {
		mode  dataplane.Mode
		args  []string
		err   string // "" for none
		fixed bool
	}{
		{"forward", nil, "", false},
		{"forward", []string{"--fec-n", "4"}, "--fec-n: only mode fec", false},
		{"cells", []string{"--fec-wait", "3ms"}, "--fec-wait: only mode fec", false},
		{"cells", []string{"--cells-link-mode", "fec", "--fec-n", "4"}, "", true},
		{"fec", []string{"--fec-target", "1e-4"}, "", false},
		{"fec", []string{"--fec-n", "4"}, "", true},
		{"fec", []string{"--fec-n", "4", "--fec-target", "1e-4"}, "--fec-n fixes n", true},
	} {
		var cfg dataplane.Config
		f := pflag.NewFlagSet("run", pflag.ContinueOnError)
		dataplane.DeclareFlags(f, &cfg)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		cfg.Mode = tc.mode
		err := dataplane.CheckFlags(f, &cfg)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("--mode %s %v: %v; want %q", tc.mode, tc.args, err, tc.err)
		}
		if fixed := fecpipe.ConfigOf(&cfg).Fixed; fixed != tc.fixed {
			t.Errorf("--mode %s %v: Fixed %v; want %v", tc.mode, tc.args, fixed, tc.fixed)
		}
	}
}
